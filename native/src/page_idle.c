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
 * Idle page tracking: one bit per PFN in /sys/kernel/mm/page_idle/bitmap,
 * read and written in 8-byte words.  Writing a set bit marks the page idle;
 * the kernel clears it when the page is accessed.  PFNs come sorted, so
 * words of neighbouring pages are read and written together.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ms.h"

#define WORDS_PER_IO 64

/* Walk the sorted pfns in runs of consecutive bitmap words. */
static int idle_io(int fd, const uint64_t *pfns, unsigned int n, int write,
                   unsigned char *accessed)
{
    uint64_t words[WORDS_PER_IO];
    unsigned int i = 0;

    while (i < n) {
        uint64_t first = pfns[i] / 64;
        unsigned int j = i, k;
        size_t nwords;
        ssize_t done;

        while (j + 1 < n && pfns[j + 1] / 64 >= first &&
               pfns[j + 1] / 64 - first < WORDS_PER_IO) {
            j++;
        }
        nwords = (size_t)(pfns[j] / 64 - first + 1);
        memset(words, 0, sizeof(words));
        if (write) {
            for (k = i; k <= j; k++) {
                words[pfns[k] / 64 - first] |= 1ULL << (pfns[k] % 64);
            }
            done = pwrite(fd, words, nwords * 8, (off_t)(first * 8));
        } else {
            done = pread(fd, words, nwords * 8, (off_t)(first * 8));
        }
        if (done < 0) {
            return -errno;
        }
        if ((size_t)done != nwords * 8) {
            return -EIO;
        }
        for (k = i; !write && k <= j; k++) {
            accessed[k] = !(words[pfns[k] / 64 - first] &
                            (1ULL << (pfns[k] % 64)));
        }
        i = j + 1;
    }
    return 0;
}

int ms_idle_mark(int fd, const uint64_t *pfns, unsigned int n)
{
    return idle_io(fd, pfns, n, 1, NULL);
}

/* accessed[k]: whether pfns[k] lost its idle flag since ms_idle_mark(). */
int ms_idle_read_accessed(int fd, const uint64_t *pfns, unsigned int n,
                          unsigned char *accessed)
{
    return idle_io(fd, pfns, n, 0, accessed);
}
