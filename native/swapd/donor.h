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
 * Internal to the donor side (store.c, tcp.c, tcp_donor.c, rdma.c).
 *
 * The servers of both transports: sd_server_stop and sd_server_port work
 * on either through this common head.
 */
#ifndef MEMAGG_SWAPD_DONOR_H
#define MEMAGG_SWAPD_DONOR_H

#include <stddef.h>
#include <stdint.h>

struct sd_store;

struct sd_server {
    void (*stop)(struct sd_server *server);    /* stop, join, free */
    uint16_t port;
};

/*
 * How the RDMA server registers each grant's region with the NIC without
 * store.c calling verbs itself.
 *
 * While a hook is set, every grant's region is registered through it (the
 * ones that exist when it is set, and each new one), and sd_store_alloc
 * returns the registration's rkey.  A region is deregistered before it is
 * unmapped.
 */
struct sd_store_mr_hook {
    /* Register [addr, addr + len); 0 with *rkey and *handle, or -errno. */
    int (*reg)(void *ctx, void *addr, size_t len, uint32_t *rkey,
               void **handle);
    void (*dereg)(void *ctx, void *handle);
    void *ctx;
};

/* Set (hook != NULL) or clear the hook.  Setting registers the regions of
 * the grants already there (-errno, and no hook, if one fails); clearing
 * deregisters them all.  Only one hook at a time: -EBUSY. */
int sd_store_set_mr_hook(struct sd_store *store,
                         const struct sd_store_mr_hook *hook);

#endif
