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
 * The bounds of the donor port before a peer is trusted: how many
 * connections it holds in all and per source address, the deadlines of a
 * connection (sd_limits_conf), and the accounting behind them.
 *
 * What is refused (a connection over a cap, a frame of an unknown grant, a
 * malformed frame, a connection closed at a deadline, a frame that failed
 * authentication) is
 * counted per source address and reported at most once per interval per
 * address, with the counts since its last report: a flood costs a few
 * lines, never one per frame.  Peers are kept in a fixed table (as many
 * as the total cap, and some): when it is full, the rest are counted
 * together as "other peers".
 */
#ifndef MEMAGG_SWAPD_CONN_LIMITS_H
#define MEMAGG_SWAPD_CONN_LIMITS_H

#include <stddef.h>
#include <stdint.h>

struct sd_limits_conf {
    unsigned max_conns;             /* connections in all */
    unsigned max_conns_per_peer;    /* from one source address */
    unsigned idle_timeout_s;        /* a connection that never had a frame
                                     * accepted and sends nothing: closed */
    unsigned read_timeout_s;        /* for the rest of a frame once its
                                     * first byte came */
};

/* The defaults, and the bounds sd_limits_conf_check enforces (also those
 * of the [swapd] options that set them). */
#define SD_LIMITS_DEFAULT { 256, 32, 300, 10 }
#define SD_LIMITS_MAX_CONNS 4096U
#define SD_LIMITS_MAX_IDLE_S 86400U
#define SD_LIMITS_MAX_READ_S 3600U

/* 0, or -EINVAL with err naming the option (as its command-line flag) and
 * its bounds. */
int sd_limits_conf_check(const struct sd_limits_conf *conf, char *err,
                         size_t errlen);

enum sd_refusal {
    SD_REFUSED_CONN,        /* a connection over a cap, closed at accept */
    SD_REFUSED_KEY,         /* a frame of an unknown grant or a wrong key */
    SD_REFUSED_FRAME,       /* a malformed frame (its connection closed) */
    SD_REFUSED_DEADLINE,    /* a connection idle or a frame cut short */
    SD_REFUSED_AUTH,        /* a frame that failed authentication: wrong
                             * tag (altered, or made with another key), or
                             * replayed or out of sequence (its connection
                             * closed) */
    SD_REFUSED_KINDS,
};

/* Where reports go: peer is a dotted address or "other peers"; counts
 * are what was refused since the last report of that peer. */
typedef void sd_limits_report_fn(void *ctx, const char *peer,
                                 const uint64_t counts[SD_REFUSED_KINDS]);

struct sd_limits;

/* Accounting for conf (checked), reporting through report (NULL: sd_log,
 * a WARNING line) at most every interval_us per peer. */
int sd_limits_new(const struct sd_limits_conf *conf, uint64_t interval_us,
                  sd_limits_report_fn *report, void *ctx,
                  struct sd_limits **out);
void sd_limits_free(struct sd_limits *limits);
const struct sd_limits_conf *sd_limits_conf(const struct sd_limits *limits);

/* A connection from addr (IPv4, network order) at now_us: 0 and it holds
 * a slot until sd_limits_close, or -EMFILE (the total cap) or -EUSERS
 * (addr's cap), counted as refused. */
int sd_limits_open(struct sd_limits *limits, uint32_t addr, uint64_t now_us);
void sd_limits_close(struct sd_limits *limits, uint32_t addr);

/* Count a refusal of kind from addr, and report addr's counts when its
 * interval has passed since its last report. */
void sd_limits_refuse(struct sd_limits *limits, uint32_t addr,
                      enum sd_refusal kind, uint64_t now_us);

/* Report every peer whose counts wait and whose interval has passed (so
 * that a peer gone quiet still gets its last report). */
void sd_limits_flush(struct sd_limits *limits, uint64_t now_us);

struct sd_limits_stats {
    unsigned conns;                         /* held now */
    uint64_t refused[SD_REFUSED_KINDS];     /* since the start */
};
void sd_limits_stats(struct sd_limits *limits, struct sd_limits_stats *out);

#endif
