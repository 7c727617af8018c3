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
 * An export's table: its grant, size, slabs (each on a donor or local)
 * and durability copy, as EXPORT_CREATE gives it, EXPORT_DESCRIBE shows it
 * and an export's .conf keeps it; its parser and its format.
 */
#ifndef MEMAGG_SWAPD_EXPORT_SPEC_H
#define MEMAGG_SWAPD_EXPORT_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "swapd.h"

#define SD_ENDPOINT_MAX 128
#define SD_MAX_SLABS (1U << 20)

struct sd_export_slab {
    char endpoint[SD_ENDPOINT_MAX];     /* "" when the donor has none */
    uint64_t addr;
    uint32_t rkey;                      /* the table's format keeps it;
                                         * memory keys come only over the
                                         * fabric transport's handshake */
    int local;                          /* served by the local copy only */
    int stale;                          /* the local copy missed writes to
                                         * it (its device failed or
                                         * filled): only its donor has all
                                         * of its data */
};

/* An export's table: what EXPORT_CREATE takes and EXPORT_DESCRIBE gives. */
struct sd_export_spec {
    uint8_t grant[SD_UUID_LEN];
    uint8_t key[SD_KEY_LEN];
    uint64_t size;
    uint64_t slab_size;
    char local[4096];                   /* the durability copy's path */
    uint32_t nslabs;                    /* size / slab_size */
    struct sd_export_slab *slabs;       /* nslabs entries */
    int adopt;                          /* the local copy is being rebuilt */
    int rebuild_started;                /* adopt: EXPORT_REBUILD asked for
                                         * the rebuild */
    uint32_t rebuilt;                   /* adopt: slabs rebuilt so far */
    int seal;                           /* pages sealed on the donors */
    int has_page_key;                   /* page_key is set */
    uint8_t page_key[SD_KEY_LEN];       /* seal: the pages' AES-256 key */
};

/* From the arguments of EXPORT_CREATE: grant, key, size, slab_size, local,
 * slabs=<i>[-<j>]@<endpoint>@<addr>@<rkey>,... (i-j: slabs i to j on one
 * donor, slab k at addr + (k - i) * slab_size), the optional
 * local_slabs=<i,...> (slabs served from the local copy) and adopt=0|1.
 * Slabs not listed are local; an adopted export must have every slab on
 * a donor and none in local_slabs.  rebuilt=<n> (slabs) and
 * rebuild_started=0|1 are what an adopted export's .conf adds;
 * EXPORT_CREATE takes neither, and with rebuilt= local_slabs may name the
 * slabs that degraded since the adoption.  Without rebuild_started=, the
 * rebuild has started when rebuilt= is given (a .conf written before
 * EXPORT_REBUILD existed, when it always ran) and waits otherwise (a new
 * adoption).  seal=0|1 asks for sealed pages; page_key=<64 hex> (a
 * sealed export's .conf only) is its key.  stale_slabs=<i,...> names the
 * slabs whose local copy missed writes (what the .conf and
 * EXPORT_DESCRIBE say; each has a donor).  -EINVAL with err naming the
 * field and the fix. */
int sd_export_spec_parse(const struct sd_args *args,
                         struct sd_export_spec *spec,
                         char *err, size_t errlen);
/* The table as EXPORT_CREATE arguments (malloc'd, one line without its
 * newline; seal=1 when sealed; no adopt, rebuilt, rebuild_started or
 * page_key): runs of slabs on one donor at consecutive addresses become
 * i-j ranges.  NULL when out of memory. */
char *sd_export_spec_format(const struct sd_export_spec *spec);
void sd_export_spec_free(struct sd_export_spec *spec);

/* Which slab and where in it: offset / slab_size, offset % slab_size. */
static inline uint32_t sd_slab_of(uint64_t offset, uint64_t slab_size)
{
    return (uint32_t)(offset / slab_size);
}

#endif
