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
 * The control socket: one text line per request and per reply (see the
 * issue 5 contract).  memagg-compute creates, describes, reclaims and drops
 * exports through it, and starts an adopted export's rebuild at a live
 * migration's finish (EXPORT_REBUILD), and hands a sealed export's page
 * key from a migration's source to its destination (EXPORT_KEY_WRAP,
 * EXPORT_KEY_INSTALL); the scheduler's prepare/free of donor slabs reach
 * the store through it.
 */
#ifndef MEMAGG_SWAPD_CONTROL_H
#define MEMAGG_SWAPD_CONTROL_H

#include <stddef.h>

#include "swapd.h"

struct sd_store;
struct sd_exports;

/* What the control socket serves: this host's donor store and exports,
 * and the words PING answers with. */
struct sd_server;

struct sd_control_ctx {
    struct sd_store *store;
    struct sd_exports *exports;
    const char *transport;          /* "tcp" or "rdma" */
    const char *rdma;               /* "available" or "unavailable:why":
                                     * the fabric transport (rdma://) */
    const char *fabric;             /* its provider, or "none" */
    const char *endpoint;           /* this donor's advertised endpoint */
    struct sd_server *tcp_server;   /* the TCP donor port (the fabric
                                     * transport's handshake), or NULL */
};

/* Handle one request line; the reply (with its newline) goes into a
 * malloc'd *reply.  Never fails but for memory (-ENOMEM). */
int sd_control_handle(const struct sd_control_ctx *ctx, char *line,
                      char **reply);

struct sd_control;

/* Serve the control protocol on the unix socket path (replacing a stale
 * one, mode 0600), one client at a time, in a thread of its own. */
int sd_control_start(const char *path, const struct sd_control_ctx *ctx,
                     struct sd_control **out, char *err, size_t errlen);
void sd_control_stop(struct sd_control *control);

#endif
