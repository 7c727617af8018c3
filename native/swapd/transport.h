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
 * The transport interface: how a consumer's swapd reaches the slabs a donor
 * holds.  Two implementations share it: TCP (tcp.c, its donor side
 * tcp_donor.c: length-prefixed frames with request ids, one connection per
 * consumer/donor pair multiplexing every grant) and the fabric transport
 * (fabric.c, its donor side fabric_donor.c: libfabric, one-sided reads and
 * writes into the donor's registered memory of the grant, whose keys the
 * consumer gets over an authenticated TCP handshake; scheme "rdma").
 *
 * All calls are thread-safe.  An I/O is asynchronous: submit() queues it
 * (with others bound for the same donor) and returns; done() runs exactly
 * once, on any thread, with 0 or -errno (-EACCES: the donor refused the
 * key; -ENOENT: the slab is gone; -ECONNRESET/-EPIPE/-ETIMEDOUT: the
 * donor is unreachable).
 */
#ifndef MEMAGG_SWAPD_TRANSPORT_H
#define MEMAGG_SWAPD_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "conn_limits.h"
#include "swapd.h"

struct sd_io {
    int op;                         /* SD_OP_READ or SD_OP_WRITE (and
                                     * SD_FRAME_OP_KEY, the fabric
                                     * transport's, over TCP) */
    uint8_t grant[SD_UUID_LEN];
    uint8_t key[SD_KEY_LEN];        /* the grant's secret */
    uint32_t slab;                  /* slab index within the grant */
    uint64_t remote_addr;           /* the slab's address on the donor
                                     * (fabric) */
    uint64_t offset;                /* byte offset inside the slab */
    uint32_t len;                   /* bytes; offset + len <= slab size */
    void *buf;                      /* READ: filled; WRITE: sent */
    uint8_t *seals;                 /* a sealed export's page seals,
                                     * len / SD_PAGE_SIZE * SD_SEAL_LEN
                                     * bytes beside buf (offset and len
                                     * page multiples); NULL unless sealed */
    void (*done)(struct sd_io *io, int status);
    void *priv;                     /* the submitter's */
};

struct sd_peer;                     /* a connection to one donor */

struct sd_transport {
    const char *scheme;             /* "tcp" or "rdma", as in endpoints */
    /* 0 when usable here, else -errno and why (e.g. no RDMA device). */
    int (*probe)(char *why, size_t len);
    /* Connect to the donor at host:port; *out on success. */
    int (*connect)(const char *host, uint16_t port, struct sd_peer **out,
                   char *err, size_t errlen);
    /* Queue ios[0..n), sent together where the transport can; 0, or
     * -errno when only the first *queued were queued (done() is not
     * called for the rest). */
    int (*submit)(struct sd_peer *peer, struct sd_io **ios, size_t n,
                  size_t *queued);
    /* 1 while the connection is up. */
    int (*alive)(struct sd_peer *peer);
    /* Fail in-flight I/O with -ECONNRESET, then free the peer. */
    void (*close)(struct sd_peer *peer);
};

extern const struct sd_transport sd_tcp_transport;
extern const struct sd_transport sd_fabric_transport;

/*
 * The fabric transport's provider: name (memagg-swapd's --fabric-provider),
 * or NULL for the first of verbs, efa and tcp that fi_getinfo offers with
 * FI_RMA on FI_EP_RDM.  0 with the provider's full name (e.g.
 * "tcp;ofi_rxm") in prov and *hardware 1 for verbs or efa (an RDMA NIC);
 * else -ENODEV with why naming the providers fi_getinfo offered and why
 * none fits.  What probe(), connect() and sd_fabric_server_start use from
 * then on (before a choice, the default's).  Not to be called while fabric
 * peers or servers exist.
 */
int sd_fabric_select(const char *name, char *prov, size_t provlen,
                     int *hardware, char *why, size_t whylen);

/* The transport of an endpoint "scheme://host:port", its host and port;
 * -EINVAL when malformed, -EPROTONOSUPPORT for an unknown scheme. */
int sd_endpoint_parse(const char *endpoint, const struct sd_transport **t,
                      char *host, size_t hostlen, uint16_t *port);

struct sd_store;

/* The donor side of a transport: accept consumers on host:port and serve
 * their frames from store (every access checks the grant's key).  Runs
 * its own threads; sd_server_stop closes the socket and joins them.
 * TCP: within limits (NULL: SD_LIMITS_DEFAULT; -EINVAL with err when out
 * of their bounds), see conn_limits.h and tcp_donor.c. */
struct sd_server;
int sd_tcp_server_start(struct sd_store *store, const char *host,
                        uint16_t port, const struct sd_limits_conf *limits,
                        struct sd_server **out, char *err, size_t errlen);

/* What a TCP donor server holds now and has refused since it started. */
struct sd_tcp_server_stats {
    unsigned conns;                         /* connections held */
    unsigned threads;                       /* their threads running */
    uint64_t buffered;                      /* bytes of their buffers */
    uint64_t refused[SD_REFUSED_KINDS];     /* by kind (conn_limits.h) */
};
void sd_tcp_server_stats(struct sd_server *server,
                         struct sd_tcp_server_stats *out);
void sd_server_stop(struct sd_server *server);
/* The port actually bound (port 0 asks the kernel for one). */
uint16_t sd_server_port(const struct sd_server *server);

/* The fabric transport's donor side: the grants' memory registered with
 * the provider's domain, and the TCP donor port (within limits, as TCP's)
 * on host:port as its handshake, which hands each grant's memory keys to
 * consumers that prove the grant's secret.  sd_tcp_server_stats works on
 * it (the handshake port's). */
int sd_fabric_server_start(struct sd_store *store, const char *host,
                           uint16_t port, const struct sd_limits_conf *limits,
                           struct sd_server **out, char *err, size_t errlen);

#endif
