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
 * Internal to the donor side (store.c, tcp.c, tcp_donor.c, fabric_donor.c).
 *
 * The servers of both transports: sd_server_stop and sd_server_port work
 * on either through this common head.
 */
#ifndef MEMAGG_SWAPD_DONOR_H
#define MEMAGG_SWAPD_DONOR_H

#include <stddef.h>
#include <stdint.h>

#include "swapd.h"

struct sd_store;

struct sd_server {
    void (*stop)(struct sd_server *server);    /* stop, join, free */
    uint16_t port;
};

/*
 * How the fabric donor (fabric_donor.c) registers each grant's memory with
 * its domain without store.c calling libfabric itself.
 *
 * While a hook is set, every grant's two regions -- its slabs' data and
 * their seals -- are registered through it (those of the grants that exist
 * when it is set, and each new one's).  A region is deregistered before it
 * is unmapped, so a consumer's late access to a freed grant is refused by
 * the provider, never served from memory that has gone elsewhere.
 */
struct sd_store_mr_hook {
    /* Register [addr, addr + len) for remote reads and writes: 0 with
     * *handle and its *key, or -errno. */
    int (*reg)(void *ctx, void *addr, size_t len, uint64_t *key,
               void **handle);
    void (*dereg)(void *ctx, void *handle);
    void *ctx;
};

/* Set (hook != NULL) or clear the hook.  Setting registers the regions of
 * the grants already there (-errno, and no hook, if one fails); clearing
 * deregisters them all.  Only one hook at a time: -EBUSY. */
int sd_store_set_mr_hook(struct sd_store *store,
                         const struct sd_store_mr_hook *hook);

/* A grant's registered regions, as the fabric donor hands them out. */
struct sd_store_region {
    uint64_t base, len, key;            /* the slabs, in allocation order */
    uint64_t seals, seals_len, seals_key;   /* their seals, same order */
};

/* grant's regions when its key is key: 0 with *out, or -EACCES (an
 * unknown grant or another key, counted as a refusal) or -ENOENT (every
 * slab freed, or no hook: nothing registered). */
int sd_store_region(struct sd_store *store, const uint8_t grant[SD_UUID_LEN],
                    const uint8_t key[SD_KEY_LEN],
                    struct sd_store_region *out);

#endif
