"""memagg's tiny test guest: a Debian cloud kernel and a busybox initramfs
whose init (init.sh) runs a workload with a hot set the test sets."""
