/*
 * Bulk reads of /proc/PID/pagemap: the pages are sorted, so neighbours that
 * share a stretch of the file are fetched by one pread.
 */
#include <errno.h>
#include <unistd.h>

#include "ms.h"

/* Entries read in one go: 4 KiB of pagemap, one kernel page walk. */
#define PM_CHUNK 512

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
