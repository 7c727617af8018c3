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

/* Internal to the fabric transport: what its consumer side (fabric.c) and
 * its donor side (fabric_donor.c) share, in fabric_info.c. */
#ifndef MEMAGG_SWAPD_FABRIC_INTERNAL_H
#define MEMAGG_SWAPD_FABRIC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#define SD_FABRIC_API FI_VERSION(1, 17)

/* The transport's probe: 0 with the chosen provider's name in why, or
 * -ENODEV and why none fits. */
int sd_fabric_probe(char *why, size_t len);

/* fi_getinfo for the chosen provider (transport.h, sd_fabric_select), on
 * the interface of host where the provider's addresses are socket
 * addresses (source: host is this side's, as for a donor; else the
 * peer's), else its first: 0 with *out (for fi_freeinfo), or -errno with
 * err. */
int sd_fabric_getinfo(const char *host, int source, struct fi_info **out,
                      char *err, size_t errlen);

/* An RDM endpoint of info (from sd_fabric_getinfo) and what it needs: its
 * fabric, domain, address vector (av_count entries; 0: the provider's
 * default), and a completion queue of cq_size entries (sd_fabric_cq_open)
 * bound for both directions. */
struct sd_fabric_ep {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    int cqfd;
    struct fid_ep *ep;
};

/* Open and enable e's endpoint, e->info set: 0, or -errno with err naming
 * the call that failed.  sd_fabric_ep_close frees what was opened. */
int sd_fabric_ep_open(struct sd_fabric_ep *e, size_t av_count,
                      size_t cq_size, char *err, size_t errlen);

/* Close what e holds, the endpoint first, and free e->info. */
void sd_fabric_ep_close(struct sd_fabric_ep *e);

/* A completion queue of contexts: with a wait fd where the provider has
 * them (*fd, owned by the queue), else one to poll (*fd -1). */
int sd_fabric_cq_open(struct fid_domain *domain, size_t size,
                      struct fid_cq **cq, int *fd);

/* Wait until cq may have something to read or wake (>= 0) is readable,
 * at most timeout_us: on cq's fd when it has one, else (the provider is
 * polled) at most poll_us.  cq NULL: wake only.  The caller then reads
 * cq, which is also what makes a provider of manual progress progress.
 * 1 when wake is readable (so that callers read it only then), else 0. */
int sd_fabric_wait(struct fid_fabric *fabric, struct fid_cq *cq, int cqfd,
                   int wake, uint64_t timeout_us, uint64_t poll_us);

/* A libfabric error (positive, as fi_cq_err_entry.err, or negative) as
 * swapd's -errno: a key or access refused -EACCES, a lost connection
 * -ECONNRESET, a timeout -ETIMEDOUT, the rest -EIO. */
int sd_fabric_errno(int err);

#endif
