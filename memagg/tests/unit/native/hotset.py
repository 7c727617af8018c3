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

"""Child process with a known hot set.

    hotset.py TOTAL_MIB HOT_MIB [PASSES_FILE] [--scatter SEED] [--thp] [--pin]

Maps TOTAL MiB, touches all of it once with every page left on the LRU
lists (touch_settled()), prints the mapping's address, then writes one
byte per page of the hot set forever, counting its passes over the hot set
in the 8-byte file PASSES (optional) so a test can wait for whole passes.

The hot set is the first HOT MiB, or with --scatter a random choice (seeded)
of 64 KiB chunks adding up to HOT MiB spread over the whole mapping: a
contiguous hot set lines up with a stratified sampler's strata and so hides
its statistical error; a scattered one does not.

With --thp the mapping asks for transparent huge pages (MADV_HUGEPAGE, as
QEMU does for guest RAM) before it is touched, and MADV_NOHUGEPAGE after:
the huge pages stay, but khugepaged no longer collapses the ones a test
splits (it would within seconds, moving the pages a sampler watches).

With --pin the whole mapping is pinned (registered as an io_uring buffer)
before the address is printed, so that the host cannot move its pages:
compaction, which kcompactd runs on its own when other processes leave the
host's memory fragmented, skips a page someone else holds a reference to.
A test that counts accessed pages exactly uses it; a moved page is a page
the sampler watched at its old PFN, idle whatever the child does there.

Each pass begins with a flush of the process's TLB (flush_tlb()), as a
workload that makes system calls or leaves its CPU to another address
space gets. The kernel clears accessed bits without flushing TLBs (x86's
ptep_clear_flush_young(), and KVM's for guest pages): a page whose
translation stays in the CPU's TLB from the start of a window to its end
is used without the accessed bit being set again, and reads idle however
hot. A loop over a hot set that fits the TLB, as this one without the
flush, keeps some translations there for seconds: on 2026-12-04, 4 to 11
of 384 hot samples read idle in 6 to 10 of every 20 to 30 windows, the
same pages for several windows in a row; with the flush, none in 120.

On SIGUSR1 it gives the second half of the mapping back (MADV_DONTNEED)
before its next pass, as a host taking pages away (a balloon, swap).
"""
import argparse
import ctypes
import errno
import mmap
import os
import random
import signal
import struct

PAGE = 4096
CHUNK = 16 * PAGE
# Far more pages than a CPU's batch of new pages holds (31 since Linux 5.19,
# 15 before).
SETTLE_PAGES = 1024
# More pages than x86 flushes one at a time (33): a flush of them all.
FLUSH_PAGES = 64
# The io_uring system calls have the same numbers on every architecture.
SYS_IO_URING_SETUP = 425
SYS_IO_URING_REGISTER = 427
IORING_REGISTER_BUFFERS = 0
IO_URING_PARAMS_SIZE = 120


class _Iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]


def pin(mem, total):
    """Pin every page of mem for as long as this process lives: the ring
    holding the registration is never closed.  Pinning (FOLL_LONGTERM)
    first migrates any page a pin may not hold, so it comes before the
    mapping's PFNs are read."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(IO_URING_PARAMS_SIZE)
    fd = libc.syscall(SYS_IO_URING_SETUP, 1, params)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, 'io_uring_setup: %s' % errno.errorcode[err])
    iov = _Iovec(ctypes.addressof(ctypes.c_char.from_buffer(mem)), total)
    if libc.syscall(SYS_IO_URING_REGISTER, fd, IORING_REGISTER_BUFFERS,
                    ctypes.byref(iov), 1) < 0:
        err = ctypes.get_errno()
        raise OSError(err, 'io_uring_register: %s' % errno.errorcode[err])


def flush_tlb(flusher):
    """Flush this process's TLB entries on its CPU: unmapping more pages
    than the kernel flushes one by one (tlb_single_page_flush_ceiling, 33)
    flushes the whole address space."""
    flusher[0::PAGE] = b'\x01' * FLUSH_PAGES
    flusher.madvise(mmap.MADV_DONTNEED)


def hot_ranges(total, hot, scatter_seed):
    """[(start, end)] byte ranges of the hot set."""
    if scatter_seed is None:
        return [(0, hot)]
    chunks = random.Random(scatter_seed).sample(range(total // CHUNK),
                                                hot // CHUNK)
    return [(c * CHUNK, (c + 1) * CHUNK) for c in sorted(chunks)]


def touch_settled(mem, total, pinned=False):
    """Fault every page of mem in (and pin them), and leave none of them
    off the LRU.

    A page just faulted waits in its CPU's batch before the kernel puts it
    on an LRU list, for as long as that CPU faults no other pages (seconds
    were seen here).  page_idle and DAMON's paddr ops skip a page off the
    LRU: they neither clear its accessed bit at the start of a window nor
    read it at the end, so such a sample reads idle however hot it is, or
    accessed from its first touch however cold (one run in three of a
    2,000-page sample failed so).  Faulting from one CPU, then faulting
    many more pages elsewhere from that CPU, pushes the mapping's last
    pages through the batch (and the pages a pin migrated, which join it
    as new ones).
    """
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        mem[0:total:PAGE] = b'\x01' * (total // PAGE)
        if pinned:
            pin(mem, total)
        scratch = mmap.mmap(-1, SETTLE_PAGES * PAGE)
        scratch[0::PAGE] = b'\x01' * SETTLE_PAGES
        scratch.close()
    finally:
        os.sched_setaffinity(0, cpus)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('total_mib', type=int)
    parser.add_argument('hot_mib', type=int)
    parser.add_argument('passes', nargs='?')
    parser.add_argument('--scatter', type=int, metavar='SEED')
    parser.add_argument('--thp', action='store_true')
    parser.add_argument('--pin', action='store_true')
    args = parser.parse_args()
    total = args.total_mib << 20
    hot = args.hot_mib << 20
    mem = mmap.mmap(-1, total, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if args.thp:
        mem.madvise(mmap.MADV_HUGEPAGE)
    touch_settled(mem, total, pinned=args.pin)
    if args.thp:
        mem.madvise(mmap.MADV_NOHUGEPAGE)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    print(addr, flush=True)
    ranges = hot_ranges(total, hot, args.scatter)
    passes = None
    if args.passes:
        with open(args.passes, 'r+b') as f:
            passes = mmap.mmap(f.fileno(), 8)
    drop = []
    signal.signal(signal.SIGUSR1, lambda signum, frame: drop.append(1))
    count = 0
    flusher = mmap.mmap(-1, FLUSH_PAGES * PAGE)
    while True:
        flush_tlb(flusher)
        if drop:
            mem.madvise(mmap.MADV_DONTNEED, total // 2, total - total // 2)
            drop.clear()
        for start, end in ranges:
            mem[start:end:PAGE] = b'\x02' * ((end - start) // PAGE)
        if passes is not None:
            count += 1
            passes[0:8] = struct.pack('Q', count)


if __name__ == '__main__':
    main()
