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

/* The ghost ring: a fixed ring of events that overwrites its oldest when
 * full (counted in dropped), drained as text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ghost.h"

int sd_ghost_init(struct sd_ghost *g, uint32_t cap)
{
    memset(g, 0, sizeof(*g));
    /* calloc of this size maps fresh pages: memory is spent only as
     * events arrive. */
    g->ring = calloc(cap, sizeof(uint64_t));
    g->cap = cap;
    return g->ring ? 0 : -ENOMEM;
}

void sd_ghost_destroy(struct sd_ghost *g)
{
    free(g->ring);
    g->ring = NULL;
}

void sd_ghost_add(struct sd_ghost *g, char op, uint64_t page)
{
    g->ring[g->head % g->cap] = page << 1 | (op == 'i');
    g->head++;
    if (g->head - g->tail > g->cap) {
        g->tail++;              /* the oldest is overwritten */
        g->dropped++;
    }
}

long sd_ghost_drain(struct sd_ghost *g, size_t max, char **text)
{
    size_t n = g->head - g->tail, used = 0, i;
    char *buf;

    if (n > max) {
        n = max;
    }
    buf = malloc(n * 23 + 1);   /* op, up to 20 digits, comma */
    if (!buf) {
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        uint64_t e = g->ring[(g->tail + i) % g->cap];

        used += (size_t)sprintf(buf + used, "%s%c%llu", i ? "," : "",
                                (e & 1) ? 'i' : 'o',
                                (unsigned long long)(e >> 1));
    }
    buf[used] = '\0';
    g->tail += n;
    *text = buf;
    return (long)n;
}
