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
 * Bulk reads of /proc/PID/pagemap: the pages are sorted, so close
 * neighbours are fetched by one pread.  Only close ones: the kernel walks
 * every page table entry of the stretch read (about 40 ns each here) on top
 * of a fixed cost of about 0.7 us per read, so bridging a gap of more than
 * PM_GAP entries costs more than a second read.
 */
#include <errno.h>
#include <unistd.h>

#include "ms.h"

/* Entries read in one go at most: 4 KiB of pagemap. */
#define PM_CHUNK 512
#define PM_GAP 16

int ms_pagemap_read(int fd, const uint64_t *vpages, unsigned int n,
                    struct ms_pagemap_entry *out)
{
    uint64_t buf[PM_CHUNK];
    unsigned int i = 0;

    while (i < n) {
        uint64_t first = vpages[i];
        unsigned int j = i, k;
        ssize_t got;
        size_t want;

        while (j + 1 < n && vpages[j + 1] >= vpages[j] &&
               vpages[j + 1] - vpages[j] <= PM_GAP &&
               vpages[j + 1] - first < PM_CHUNK) {
            j++;
        }
        want = (size_t)(vpages[j] - first + 1) * sizeof(uint64_t);
        got = pread(fd, buf, want, (off_t)(first * sizeof(uint64_t)));
        if (got < 0) {
            return -errno;
        }
        for (k = i; k <= j; k++) {
            size_t idx = (size_t)(vpages[k] - first);
            uint64_t raw = 0;

            /* Past the end of the address space reads short: not present. */
            if ((idx + 1) * sizeof(uint64_t) <= (size_t)got) {
                raw = buf[idx];
            }
            ms_pagemap_decode(raw, &out[k]);
        }
        i = j + 1;
    }
    return 0;
}
