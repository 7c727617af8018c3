#!/bin/sh
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

# Build memagg's tiny guest from Debian packages: the cloud kernel
# (linux-image-6.1.0-*-cloud-amd64) and a busybox-static initramfs whose
# /init is the workload (init.sh next to this script). The initramfs also
# holds memagg's guest rule script (etc/memagg/guest/memagg-swap-enable),
# which init runs for memagg's remote-swap disks, and a static /sbin/swapon
# with -p (swapon.c: busybox's has no priorities).
#
# Usage: build.sh [CACHE_DIR]   (default /var/cache/memagg-guest)
# Prints the directory holding vmlinuz and initrd.img. The kernel package is
# downloaded once per version; the initramfs is rebuilt only when one of its
# sources changed (the directory is keyed by the kernel package version and
# a hash of init.sh, swapon.c, the rule script and busybox).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ENABLE="$HERE/../../../etc/memagg/guest/memagg-swap-enable"
CACHE=${1:-/var/cache/memagg-guest}
MODULES="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev
virtio_pci virtio_balloon virtio_blk"

die() { echo "build.sh: ERROR: $*" >&2; exit 1; }

for tool in apt-cache apt-get dpkg cpio gzip sha256sum gcc; do
    command -v "$tool" >/dev/null || die "$tool missing (tools/setup.sh installs it)"
done
[ -x /bin/busybox ] || die "/bin/busybox missing: apt-get install busybox-static"
file_is_static() { ! ldd "$1" >/dev/null 2>&1; }
file_is_static /bin/busybox || die "/bin/busybox is not static: apt-get install busybox-static"
[ -r "$ENABLE" ] || die "$ENABLE missing (run from memagg's source tree)"

# Newest signed 6.1 cloud kernel the archive offers (pinned by the caller
# through MEMAGG_GUEST_KERNEL when needed).
PKG=${MEMAGG_GUEST_KERNEL:-$(apt-cache pkgnames linux-image-6.1.0- \
    | grep -E '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' | sort -V | tail -1)}
[ -n "$PKG" ] || die "no linux-image-6.1.0-*-cloud-amd64 in the apt lists (apt-get update?)"
VERSION=$(apt-cache show --no-all-versions "$PKG" | sed -n 's/^Version: //p' | head -1)
[ -n "$VERSION" ] || die "apt-cache knows no version of $PKG"
KVER=${PKG#linux-image-}

STAMP=$(cat "$HERE/init.sh" "$HERE/swapon.c" "$HERE/blob.c" "$ENABLE" /bin/busybox \
    | sha256sum | cut -c1-12)
OUT="$CACHE/$KVER-$VERSION-$STAMP"
if [ -s "$OUT/vmlinuz" ] && [ -s "$OUT/initrd.img" ]; then
    echo "$OUT"
    exit 0
fi

mkdir -p "$CACHE"
# One builder at a time (test workers and memagg-aio --demo share the
# cache).
exec 9>"$CACHE/.lock"
flock 9
if [ -s "$OUT/vmlinuz" ] && [ -s "$OUT/initrd.img" ]; then
    echo "$OUT"
    exit 0
fi

KERNEL_DIR="$CACHE/kernel-$KVER-$VERSION"
if [ ! -s "$KERNEL_DIR/.done" ]; then
    WORK=$(mktemp -d "$CACHE/.download.XXXXXX")
    (cd "$WORK" && apt-get download -q -o APT::Sandbox::User=root "$PKG=$VERSION" >&2) \
        || die "apt-get download $PKG=$VERSION failed"
    rm -rf "$KERNEL_DIR"
    dpkg -x "$WORK"/*.deb "$WORK/root"
    mkdir -p "$KERNEL_DIR/modules"
    cp "$WORK/root/boot/vmlinuz-$KVER" "$KERNEL_DIR/vmlinuz"
    for m in $MODULES; do
        ko=$(find "$WORK/root/lib/modules/$KVER" -name "$m.ko" | head -1)
        [ -n "$ko" ] || die "$m.ko not in $PKG"
        cp "$ko" "$KERNEL_DIR/modules/"
    done
    rm -rf "$WORK"
    echo "$PKG $VERSION" >"$KERNEL_DIR/.done"
fi

WORK=$(mktemp -d "$CACHE/.initrd.XXXXXX")
ROOT="$WORK/root"
mkdir -p "$ROOT/bin" "$ROOT/sbin" "$ROOT/dev" "$ROOT/proc" "$ROOT/sys" "$ROOT/hot" \
    "$ROOT/lib/modules"
cp /bin/busybox "$ROOT/bin/busybox"
for applet in $(/bin/busybox --list); do
    [ -e "$ROOT/bin/$applet" ] || ln -s busybox "$ROOT/bin/$applet"
done
# /sbin/swapon, where the rule script looks for util-linux's (busybox's
# shell runs its own applet for a bare "swapon").
gcc -std=gnu11 -Wall -Wextra -Werror -Os -static -o "$ROOT/sbin/swapon" \
    "$HERE/swapon.c" || die "cannot link swapon.c statically (libc6-dev?)"
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -static -o "$ROOT/bin/blob" \
    "$HERE/blob.c" || die "cannot link blob.c statically (libc6-dev?)"
cp "$ENABLE" "$ROOT/bin/memagg-swap-enable"
chmod 755 "$ROOT/bin/memagg-swap-enable"
cp "$KERNEL_DIR"/modules/*.ko "$ROOT/lib/modules/"
cp "$HERE/init.sh" "$ROOT/init"
chmod 755 "$ROOT/init"
(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initrd.img"
mkdir -p "$OUT"
cp "$KERNEL_DIR/vmlinuz" "$OUT/vmlinuz"
mv "$WORK/initrd.img" "$OUT/initrd.img"
chmod 644 "$OUT/vmlinuz" "$OUT/initrd.img"
rm -rf "$WORK"
echo "$OUT"
