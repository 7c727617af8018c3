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

# PID 1 of memagg's tiny guest: loads the virtio drivers, turns on swap on
# the first virtio disk if there is one, then runs the workload.
#
# Workload: a hot set of N MiB, a tmpfs file re-read in a loop so every one of
# its pages is accessed continuously. Its driver (memagg/demo/guest.py) sets
# N by writing a line "hot N" to the second serial port (ttyS1); the guest
# answers on the console (ttyS0) with "MEMAGG PHASE <seq> hot=<N>" once the
# set is in place. Every two seconds it prints "MEMAGG HEARTBEAT <n>" and its
# memory counters so the driver can tell it is alive. Kernel command line
# "memagg.noballoon" leaves the balloon driver out (a guest memagg must leave
# alone).
#
# Remote swap: disks whose serial starts with "memagg-swap-" (memagg's
# hot-plugged remote-swap disks) are turned into swap by memagg's guest rule
# script, /bin/memagg-swap-enable (etc/memagg/guest/), run as soon as such a
# disk appears under /sys/block (polled: busybox has no udev). The console
# says "MEMAGG SWAPDISK <dev> serial=<serial> on" (or "failed: <why>").
# Data whose loss would show: "fill N" writes N MiB of random data to a
# tmpfs file that the reader then re-reads with the hot set (so under memory
# pressure it goes out to swap and back in, again and again); "fill N cold"
# writes it for the reader to leave alone (idle memory: it goes out to swap
# once and stays there). The guest answers "MEMAGG FILLED <seq> mb=<N>
# sum=<sum>", the sum taken as the data is written (read back, it would
# come in from swap). "check" answers "MEMAGG CHECK <seq> mb=<N> sum=<sum>"
# of the same file read again, or "MEMAGG CHECK-FAILED <seq> <why>"; the
# reader waits while a check reads the data. Both are /bin/blob (blob.c:
# dd from /dev/urandom and md5sum took most of the emulated vCPU). "rule"
# runs the guest rule's script over every disk again and answers "MEMAGG
# RULE rc=<status> <log>". "hold N H" starts a process with N MiB of random
# data in anonymous memory whose last H MiB it reads again and again (its
# hot set; the rest is idle), and answers "MEMAGG HELD <seq> mb=<N>
# sum=<sum>" once the data is written (or "MEMAGG HOLD-FAILED <seq> ...").
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
# A plain swap disk of the harness (not one of memagg's: the disk watcher
# below enables those with memagg's own script).
if [ -b /dev/vda ] && ! grep -qs '^memagg-swap-' /sys/block/vda/serial; then
    mkswap /dev/vda >/dev/null && swapon /dev/vda && say "SWAP on"
fi

mount -t tmpfs -o size=90% hot /hot
: >/hot/data
# The random data: may outgrow the guest's RAM (its pages go to swap).
mkdir -p /data
mount -t tmpfs -o size=1g data /data

# memagg's remote-swap disks, as udev would run the guest rule: each disk
# once per serial (a disk that failed is not retried in a loop; one
# unplugged and plugged again under the same name is).
diskwatch() {
    done_keys=" "
    while :; do
        for attr in /sys/block/vd*/serial; do
            [ -r "$attr" ] || continue
            serial=$(cat "$attr" 2>/dev/null)
            case "$serial" in memagg-swap-*) ;; *) continue ;; esac
            dir=${attr%/serial}
            dev=${dir##*/}
            key="$dev=$serial"
            case "$done_keys" in *" $key "*) continue ;; esac
            done_keys="$done_keys$key "
            if out=$(memagg-swap-enable "/dev/$dev" 2>&1); then
                say "SWAPDISK $dev serial=$serial on"
            else
                say "SWAPDISK $dev serial=$serial failed: $(echo $out)"
            fi
        done
        # Forget disks that are gone.
        kept=" "
        for key in $done_keys; do
            [ -e "/sys/block/${key%%=*}" ] && kept="$kept$key "
        done
        done_keys=$kept
        usleep 500000
    done
}

# "dev:size_kb:used_kb:priority,..." of the active swap areas.
swaps() {
    awk 'NR > 1 { sub("^/dev/", "", $1)
        printf "%s%s:%s:%s:%s", sep, $1, $3, $4, $5; sep = "," }' /proc/swaps
}

heartbeat() {
    n=0
    while :; do
        n=$((n + 1))
        set -- $(awk '/^MemTotal:|^MemFree:|^SwapTotal:|^SwapFree:/ {print $2}' /proc/meminfo) \
            $(awk '/^pswpin |^pswpout / {print $2}' /proc/vmstat)
        say "HEARTBEAT $n passes=$(cat /run-passes 2>/dev/null) total_kb=$1 free_kb=$2 swap_used_kb=$(($3 - $4)) pswpin=$5 pswpout=$6 swaps=$(swaps)"
        sleep 2
    done
}

# Reads the whole hot set over and over: each pass touches every page. dd,
# not cat: busybox cat sendfile()s to /dev/null, which never reads the data.
# After each pass it rests as long as the pass took, at most 1 s: a guest
# then keeps at most half a host core busy, not all of it (TCG, on CI's two
# cores), and every page is still read at least once every 2 s plus a pass,
# within any sampling period of the tests (3 s and more).
reader() {
    passes=0
    while :; do
        # No hot set: idle rather than spin.
        files=/hot/data
        [ -e /data/cold ] || files="$files /data/blob"
        [ -s /hot/data ] || [ "$files" != /hot/data -a -s /data/blob ] \
            || { sleep 1; continue; }
        began=$(cut -d' ' -f1 /proc/uptime)
        for f in $files; do
            # A check reads the data meanwhile: one reader thrashing swap
            # is enough.
            while [ -e /reader-paused ]; do sleep 1; done
            [ -s $f ] && dd if=$f of=/dev/null bs=1M 2>/dev/null
        done
        passes=$((passes + 1))
        # Written aside and renamed: the heartbeat's cat never reads the
        # file between its truncation and its write (an empty count).
        echo $passes >/run-passes.new && mv /run-passes.new /run-passes
        usleep $(awk -v began="$began" '{ rest = ($1 - began) * 1000000
            printf "%d", rest < 1000000 ? rest : 1000000 }' /proc/uptime)
    done
}

heartbeat &
reader &
diskwatch &
# Open the command port before saying READY: bytes that reach a closed
# serial port are dropped.
exec 3</dev/ttyS1
stty raw -echo <&3
say "READY"
seq=0
while :; do
    while read -r cmd arg mode <&3; do
        case "$cmd" in
        hot)
            seq=$((seq + 1))
            # Rewriting the file both sizes it and touches all of it.
            # Random, not zeros: a host that splits a huge page maps its
            # 4 KiB parts holding only zeros to the shared zero page.
            dd if=/dev/urandom of=/hot/data bs=1M count="$arg" \
                iflag=fullblock 2>/dev/null || say "HOT-FAILED $arg"
            say "PHASE $seq hot=$arg"
            ;;
        fill)
            seq=$((seq + 1))
            # Written aside and renamed: the reader never sees a part.
            if [ "$mode" = cold ]; then : >/data/cold; else rm -f /data/cold; fi
            if out=$(blob write "$arg" /data/blob.new 2>&1) \
                    && mv /data/blob.new /data/blob; then
                say "FILLED $seq $out"
            else
                rm -f /data/blob.new
                say "FILL-FAILED $seq $arg $out"
            fi
            ;;
        check)
            seq=$((seq + 1))
            if [ -f /data/blob ]; then
                : >/reader-paused
                if out=$(blob sum /data/blob 2>&1); then
                    say "CHECK $seq $out"
                else
                    say "CHECK-FAILED $seq $out"
                fi
                rm -f /reader-paused
            else
                say "CHECK-FAILED $seq no data (fill first)"
            fi
            ;;
        hold)
            seq=$((seq + 1))
            # Anonymous memory: blob keeps running, its hot part read
            # again and again; its first line says the data is written.
            rm -f /run-held
            # One page per swap-in (no swap readahead): each is one 4 KiB
            # read of the swap disk, counted where it was served.
            echo 0 >/proc/sys/vm/page-cluster
            blob hold "$arg" "$mode" >/run-held 2>&1 &
            while [ -e /proc/$! ] && ! grep -q 'sum=' /run-held; do
                usleep 100000
            done
            if grep -q 'sum=' /run-held; then
                say "HELD $seq $(cat /run-held)"
            else
                say "HOLD-FAILED $seq $arg $(cat /run-held)"
            fi
            ;;
        rule)
            # The guest rule again, over every disk (as after an image
            # update): it must leave swap that is on as it is.
            out=$(memagg-swap-enable 2>&1)
            say "RULE rc=$? $(echo $out)"
            ;;
        "") ;;
        *) say "UNKNOWN $cmd" ;;
        esac
    done
done
