/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may
 * not use this file except in compliance with the License. You may obtain
 * a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations
 * under the License.
 */

/*
 * Transparent huge pages under the sampled pages.  A huge page mapped by
 * one PMD has one accessed bit: an access anywhere in its 2 MiB makes every
 * sampled 4 KiB page inside it look accessed, so a guest whose RAM uses
 * THP (QEMU's default) reads as if its hot set were rounded up to whole
 * huge pages.  Split, the huge page is mapped by 512 PTEs, one accessed bit
 * each.
 *
 * The split: process_madvise(MADV_COLD) over one 4 KiB page of the huge
 * page.  Asked to deactivate only part of a huge page it maps alone, the
 * kernel splits it first, then clears the young bit of that 4 KiB page and
 * moves it to the inactive list (the window clears that bit anyway).  No
 * debugfs, no ptrace; it needs CAP_SYS_NICE over the process.  A huge page
 * the kernel cannot split (shared, pinned) stays whole and is reported.
 * Since Linux 6.12 a split maps the 4 KiB parts that hold only zeros to the
 * shared zero page: those samples hold no memory and are counted idle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ms.h"

#ifndef MADV_COLD
#define MADV_COLD 20
#endif

/* iovecs per process_madvise() call: the kernel takes at most UIO_MAXIOV. */
#define THP_BATCH 1024

int ms_kpageflags_read(int fd, const uint64_t *pfns, unsigned int n,
                       uint64_t *flags)
{
    unsigned int i;

    for (i = 0; i < n; i++) {
        ssize_t got = pread(fd, &flags[i], sizeof(flags[i]),
                            (off_t)(pfns[i] * sizeof(uint64_t)));

        if (got < 0) {
            return -errno;
        }
        /* Past the end of memory reads short: no flags. */
        if (got != sizeof(flags[i])) {
            flags[i] = 0;
        }
    }
    return 0;
}

int ms_pidfd_open(pid_t pid)
{
    long fd = syscall(SYS_pidfd_open, pid, 0);

    return fd < 0 ? -errno : (int)fd;
}

/*
 * process_madvise(advice) over runs of pages of the process: run i is
 * npages[i] pages from page number vpages[i] (one page each without
 * npages).  The huge page split above and host-side reclaim's page-out
 * (MADV_PAGEOUT) share it.
 */
int ms_madvise_pages(int pidfd, const uint64_t *vpages,
                     const uint64_t *npages, unsigned int n, int advice)
{
    struct iovec iov[THP_BATCH];
    unsigned int i = 0, k;

    while (i < n) {
        uint64_t want = 0;
        long got;

        for (k = 0; k < THP_BATCH && i + k < n; k++) {
            iov[k].iov_base = (void *)(uintptr_t)(vpages[i + k] *
                                                  MS_PAGE_SIZE);
            iov[k].iov_len = (npages ? npages[i + k] : 1) * MS_PAGE_SIZE;
            want += iov[k].iov_len;
        }
        got = syscall(SYS_process_madvise, pidfd, iov, (size_t)k, advice,
                      0U);
        if (got < 0) {
            return -errno;
        }
        /* Short: stopped at a page no longer mapped. */
        if ((uint64_t)got != want) {
            return -ENOMEM;
        }
        i += k;
    }
    return 0;
}

int ms_thp_split(int pidfd, const uint64_t *vpages, unsigned int n)
{
    return ms_madvise_pages(pidfd, vpages, NULL, n, MADV_COLD);
}
