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

/* Page bitmaps: atomic bit operations over 64-bit words, and the load of a
 * sparse file's data extents. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "bitmap.h"
#include "swapd.h"

int sd_bitmap_init(struct sd_bitmap *b, uint64_t pages)
{
    b->pages = pages;
    b->words = calloc((pages + 63) / 64 ? (pages + 63) / 64 : 1,
                      sizeof(uint64_t));
    return b->words ? 0 : -ENOMEM;
}

void sd_bitmap_destroy(struct sd_bitmap *b)
{
    free(b->words);
    b->words = NULL;
}

uint64_t sd_bitmap_set(struct sd_bitmap *b, uint64_t first, uint64_t n)
{
    uint64_t p, end = first + n < b->pages ? first + n : b->pages;
    uint64_t changed = 0;

    for (p = first; p < end; p++) {
        uint64_t bit = 1ULL << (p % 64), old;

        if (p % 64 == 0 && end - p >= 64) {
            /* A whole word: an adopted export sets every page at once. */
            old = __atomic_exchange_n(&b->words[p / 64], UINT64_MAX,
                                      __ATOMIC_RELAXED);
            changed += 64 - (uint64_t)__builtin_popcountll(old);
            p += 63;
            continue;
        }
        old = __atomic_fetch_or(&b->words[p / 64], bit, __ATOMIC_RELAXED);
        changed += !(old & bit);
    }
    return changed;
}

uint64_t sd_bitmap_clear(struct sd_bitmap *b, uint64_t first, uint64_t n)
{
    uint64_t p, changed = 0;

    for (p = first; p < first + n && p < b->pages; p++) {
        uint64_t bit = 1ULL << (p % 64);

        changed += !!(__atomic_fetch_and(&b->words[p / 64], ~bit,
                                         __ATOMIC_RELAXED) & bit);
    }
    return changed;
}

int sd_bitmap_test(const struct sd_bitmap *b, uint64_t page)
{
    if (page >= b->pages) {
        return 0;
    }
    return !!(__atomic_load_n(&b->words[page / 64], __ATOMIC_RELAXED) &
              (1ULL << (page % 64)));
}

int sd_bitmap_any(const struct sd_bitmap *b, uint64_t first, uint64_t n)
{
    uint64_t p = first, end = first + n;

    if (end > b->pages) {
        end = b->pages;
    }
    while (p < end) {
        uint64_t w = __atomic_load_n(&b->words[p / 64], __ATOMIC_RELAXED);

        if (p % 64 == 0 && end - p >= 64) {
            if (w) {
                return 1;
            }
            p += 64;
            continue;
        }
        if (w & (1ULL << (p % 64))) {
            return 1;
        }
        p++;
    }
    return 0;
}

uint64_t sd_bitmap_count(const struct sd_bitmap *b)
{
    uint64_t n = 0, w;

    for (w = 0; w < (b->pages + 63) / 64; w++) {
        n += (uint64_t)__builtin_popcountll(
            __atomic_load_n(&b->words[w], __ATOMIC_RELAXED));
    }
    return n;
}

uint64_t sd_bitmap_count_range(const struct sd_bitmap *b, uint64_t first,
                               uint64_t n)
{
    uint64_t p = first, end = first + n < b->pages ? first + n : b->pages;
    uint64_t count = 0;

    while (p < end) {
        uint64_t w = __atomic_load_n(&b->words[p / 64], __ATOMIC_RELAXED);

        if (p % 64 == 0 && end - p >= 64) {
            count += (uint64_t)__builtin_popcountll(w);
            p += 64;
            continue;
        }
        count += (w >> (p % 64)) & 1;
        p++;
    }
    return count;
}

int sd_bitmap_load_extents(struct sd_bitmap *b, int fd)
{
    off_t end = (off_t)(b->pages * SD_PAGE_SIZE), data = 0, hole;

    for (;;) {
        data = lseek(fd, data, SEEK_DATA);
        if (data < 0) {
            return errno == ENXIO ? 0 : -errno;     /* ENXIO: no more */
        }
        if (data >= end) {
            return 0;
        }
        hole = lseek(fd, data, SEEK_HOLE);
        if (hole < 0) {
            return -errno;
        }
        if (hole > end) {
            hole = end;
        }
        sd_bitmap_set(b, (uint64_t)data / SD_PAGE_SIZE,
                      ((uint64_t)hole + SD_PAGE_SIZE - 1) / SD_PAGE_SIZE -
                      (uint64_t)data / SD_PAGE_SIZE);
        data = hole;
    }
}
