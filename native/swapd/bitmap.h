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
 * Page bitmaps, one bit per SD_PAGE_SIZE page: the pages of an export that
 * count as written, that its rebuild must leave alone, or that failed to
 * open.  Safe for concurrent use: I/O threads set and test bits while the
 * rebuild does.
 */
#ifndef MEMAGG_SWAPD_BITMAP_H
#define MEMAGG_SWAPD_BITMAP_H

#include <stdint.h>

struct sd_bitmap {
    uint64_t pages;
    uint64_t *words;
};
int sd_bitmap_init(struct sd_bitmap *b, uint64_t pages);
void sd_bitmap_destroy(struct sd_bitmap *b);
/* Set or clear pages [first, first + n); how many changed. */
uint64_t sd_bitmap_set(struct sd_bitmap *b, uint64_t first, uint64_t n);
uint64_t sd_bitmap_clear(struct sd_bitmap *b, uint64_t first, uint64_t n);
int sd_bitmap_test(const struct sd_bitmap *b, uint64_t page);
/* 1 when any of pages [first, first + n) is set. */
int sd_bitmap_any(const struct sd_bitmap *b, uint64_t first, uint64_t n);
/* How many pages are set, of all or of [first, first + n). */
uint64_t sd_bitmap_count(const struct sd_bitmap *b);
uint64_t sd_bitmap_count_range(const struct sd_bitmap *b, uint64_t first,
                               uint64_t n);
/* Set the pages of fd's data extents (SEEK_DATA/SEEK_HOLE) below
 * pages * SD_PAGE_SIZE; 0 or -errno. */
int sd_bitmap_load_extents(struct sd_bitmap *b, int fd);

#endif
