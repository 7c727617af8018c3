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
 * This host's donated slabs (the donor side): memory lent to other hosts'
 * VMs, by grant.  A grant's slabs on this donor live in one region (for
 * the fabric transport: one registered memory region and key per grant,
 * donor.h).  Every access names the
 * grant and carries its key; a wrong key, or the key of a grant already
 * freed, is refused with -EACCES and counted (a wrong key is logged once
 * per grant; the transport reports the rest per peer, rate-limited).
 *
 * Every slab keeps SD_SEAL_LEN bytes per page of opaque seals beside its
 * data (a sealed export's; see seal.h), allocated with it; the donor never
 * reads them.  capacity bounds the slabs' data (used): the seals (0.8 % of
 * it) come on top and are counted apart (seals).
 */
#ifndef MEMAGG_SWAPD_STORE_H
#define MEMAGG_SWAPD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "swapd.h"

struct sd_store;

/* A store that lends at most capacity bytes. */
int sd_store_new(uint64_t capacity, struct sd_store **out);
void sd_store_free(struct sd_store *store);

/* Allocate the slabs idx[0..n) of size slab_size for grant, keyed by key.
 * As many as capacity allows, in order: *done of them, with their
 * addresses in addrs[].  0 when at least
 * one was allocated; -ENOMEM when none; -EINVAL for a zero or
 * non-page-multiple slab_size.  A grant lent slabs here before gets
 * again those of them it freed (a slab promoted back after a demotion),
 * at the addresses they had, or new ones once it freed them all; else
 * -EEXIST (a slab it holds or never had here, another key or slab size). */
int sd_store_alloc(struct sd_store *store, const uint8_t grant[SD_UUID_LEN],
                   const uint8_t key[SD_KEY_LEN], uint64_t slab_size,
                   const uint32_t *idx, size_t n, uint64_t *addrs,
                   size_t *done);

/* Free the listed slabs of grant (n == 0: all of them, and forget the
 * grant and its key).  Their memory goes back to the host at once.
 * -ENOENT when the grant is unknown. */
int sd_store_release(struct sd_store *store,
                     const uint8_t grant[SD_UUID_LEN],
                     const uint32_t *idx, size_t n);

/* Copy grant's key into key: 0, or -EACCES (counted as a refusal) when
 * the grant is not here.  What the TCP transport derives a frame's MAC
 * key from (frame_auth.h), before it allocates or reads any payload. */
int sd_store_key(struct sd_store *store, const uint8_t grant[SD_UUID_LEN],
                 uint8_t key[SD_KEY_LEN]);

/* Count a refusal of grant for its key (logged once per grant), as
 * sd_store_access does for a wrong key: what the TCP transport reports
 * when a frame's tag, made with a key derived from the grant's, does not
 * verify.  Nothing when the grant is not here. */
void sd_store_wrong_key(struct sd_store *store,
                        const uint8_t grant[SD_UUID_LEN]);

/* Read (op SD_OP_READ, into buf) or write (from buf) len bytes at offset of
 * slab of grant, and with seals the pages' seals too (len / SD_PAGE_SIZE
 * * SD_SEAL_LEN bytes; NULL: the access carries none).  -EACCES: unknown
 * grant or wrong key; -ENOENT: slab not allocated or released; -ERANGE:
 * outside the slab; -EINVAL: seals with an offset or len that is not a
 * multiple of SD_PAGE_SIZE. */
int sd_store_access(struct sd_store *store, int op,
                    const uint8_t grant[SD_UUID_LEN],
                    const uint8_t key[SD_KEY_LEN], uint32_t slab,
                    uint64_t offset, void *buf, uint32_t len, void *seals);

struct sd_store_stats {
    uint64_t capacity;      /* bytes */
    uint64_t used;          /* bytes held by slabs (bounded by capacity) */
    uint64_t seals;         /* bytes held by their seals */
    uint32_t grants;
    uint32_t slabs;
    uint64_t refused;       /* accesses refused for their key */
};
void sd_store_stats(struct sd_store *store, struct sd_store_stats *out);

#endif
