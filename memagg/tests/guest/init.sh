#!/bin/sh
# PID 1 of memagg's test guest: loads the virtio drivers, turns on swap on
# the first virtio disk if there is one, then runs the workload.
#
# Workload: a hot set of N MiB, a tmpfs file re-read in a loop so every one of
# its pages is accessed continuously. The test sets N by writing a line
# "hot N" to the second serial port (ttyS1); the guest answers on the console
# (ttyS0) with "MEMAGG PHASE <seq> hot=<N>" once the set is in place. Every
# two seconds it prints "MEMAGG HEARTBEAT <n>" and its memory counters so the
# test can tell it is alive. Kernel command line "memagg.noballoon" leaves
# the balloon driver out (a guest memagg must leave alone).
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev

say() { echo "MEMAGG $*" >/dev/console; }

for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev \
        virtio_pci virtio_balloon virtio_blk; do
    if [ "$m" = virtio_balloon ] && grep -q memagg.noballoon /proc/cmdline; then
        say "NOBALLOON"
        continue
    fi
    insmod /lib/modules/$m.ko || say "INSMOD-FAILED $m"
done

# A virtio disk (device id 2) gets its node once virtio_blk has probed it.
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ] \
        && grep -qs 0x0002 /sys/bus/virtio/devices/*/device; do
    usleep 100000
    i=$((i + 1))
done
if [ -b /dev/vda ]; then
    mkswap /dev/vda >/dev/null && swapon /dev/vda && say "SWAP on"
fi

mount -t tmpfs -o size=90% hot /hot
: >/hot/data

heartbeat() {
    n=0
    while :; do
        n=$((n + 1))
        set -- $(awk '/^MemTotal:|^MemFree:|^SwapTotal:|^SwapFree:/ {print $2}' /proc/meminfo)
        say "HEARTBEAT $n passes=$(cat /run-passes 2>/dev/null) total_kb=$1 free_kb=$2 swap_used_kb=$(($3 - $4))"
        sleep 2
    done
}

# Reads the whole hot set over and over: each pass touches every page. dd,
# not cat: busybox cat sendfile()s to /dev/null, which never reads the data.
reader() {
    passes=0
    while :; do
        # No hot set: idle rather than spin.
        [ -s /hot/data ] || { sleep 1; continue; }
        dd if=/hot/data of=/dev/null bs=1M 2>/dev/null
        passes=$((passes + 1))
        echo $passes >/run-passes
    done
}

heartbeat &
reader &
# Open the command port before saying READY: bytes that reach a closed
# serial port are dropped.
exec 3</dev/ttyS1
stty raw -echo <&3
say "READY"
seq=0
while :; do
    while read -r cmd arg <&3; do
        case "$cmd" in
        hot)
            seq=$((seq + 1))
            # Rewriting the file both sizes it and touches all of it.
            dd if=/dev/zero of=/hot/data bs=1M count="$arg" 2>/dev/null \
                || say "HOT-FAILED $arg"
            say "PHASE $seq hot=$arg"
            ;;
        "") ;;
        *) say "UNKNOWN $cmd" ;;
        esac
    done
done
