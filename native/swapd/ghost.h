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
 * The ghost stream of an export: its swap-outs and swap-ins by page, in a
 * ring that memagg-compute drains (GHOST) for its working-set estimators.
 */
#ifndef MEMAGG_SWAPD_GHOST_H
#define MEMAGG_SWAPD_GHOST_H

#include <stddef.h>
#include <stdint.h>

/* The ghost stream: 'o' (write of a page) and 'i' (read of a page
 * written before), by page index, oldest first. */
struct sd_ghost {
    uint64_t *ring;             /* page << 1 | (1 for 'i') */
    uint64_t head, tail;        /* events ever added, ever taken */
    uint64_t dropped;
    uint32_t cap;
};
int sd_ghost_init(struct sd_ghost *g, uint32_t cap);
void sd_ghost_destroy(struct sd_ghost *g);
void sd_ghost_add(struct sd_ghost *g, char op, uint64_t page);
/* Append up to max events as "o12,i40,..." to a malloc'd *text; returns the
 * number taken, or -ENOMEM. */
long sd_ghost_drain(struct sd_ghost *g, size_t max, char **text);

#endif
