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
 * The donor port's connection caps and its rate-limited reports of what
 * it refused (see conn_limits.h).
 *
 * Peers live in a fixed array scanned linearly under one mutex: it holds
 * at most SD_LIMITS_MAX_CONNS + SPARE entries and is touched once per
 * connection and once per refused frame, never per accepted frame.  An
 * entry is reused once its peer holds no connection, has nothing left to
 * report and its interval has passed, so a peer gets at most one report
 * per interval however it comes and goes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "conn_limits.h"
#include "swapd.h"

/* Entries beyond the total cap, for peers that hold no connection but are
 * refused (at the cap, or for their frames). */
#define SPARE 64

struct entry {
    uint32_t addr;              /* network order */
    int used;
    unsigned conns;
    uint64_t pending[SD_REFUSED_KINDS];
    uint64_t next_report;       /* no report before this time */
};

struct sd_limits {
    pthread_mutex_t lock;
    struct sd_limits_conf conf;
    uint64_t interval_us;
    sd_limits_report_fn *report;
    void *ctx;
    unsigned conns;
    uint64_t refused[SD_REFUSED_KINDS];
    size_t n;                   /* entries, the last one "other peers" */
    struct entry entries[];
};

static void log_report(void *ctx, const char *peer,
                       const uint64_t counts[SD_REFUSED_KINDS])
{
    static const char *const what[SD_REFUSED_KINDS] = {
        "connections over the caps",
        "frames of an unknown grant or with a wrong key",
        "malformed frames",
        "connections closed at a deadline (idle, or a frame cut short)",
        "frames that failed authentication (altered or replayed)",
    };
    char line[512] = "";
    size_t len = 0;
    int i;

    (void)ctx;
    for (i = 0; i < SD_REFUSED_KINDS; i++) {
        if (counts[i] && len < sizeof(line)) {
            len += (size_t)snprintf(line + len, sizeof(line) - len,
                                    "%s%llu %s", len ? ", " : "",
                                    (unsigned long long)counts[i], what[i]);
        }
    }
    sd_log(LOG_WARNING, "donor port: refused from %s since its last report: "
           "%s", peer, line);
}

int sd_limits_conf_check(const struct sd_limits_conf *c, char *err,
                         size_t errlen)
{
    if (c->max_conns < 1 || c->max_conns > SD_LIMITS_MAX_CONNS) {
        snprintf(err, errlen, "--max-connections: must be 1 to %u, not %u",
                 SD_LIMITS_MAX_CONNS, c->max_conns);
        return -EINVAL;
    }
    if (c->max_conns_per_peer < 1 || c->max_conns_per_peer > c->max_conns) {
        snprintf(err, errlen, "--max-connections-per-peer: must be 1 to "
                 "--max-connections (%u), not %u", c->max_conns,
                 c->max_conns_per_peer);
        return -EINVAL;
    }
    if (c->idle_timeout_s < 1 || c->idle_timeout_s > SD_LIMITS_MAX_IDLE_S) {
        snprintf(err, errlen, "--idle-timeout: must be 1 to %u seconds, not "
                 "%u", SD_LIMITS_MAX_IDLE_S, c->idle_timeout_s);
        return -EINVAL;
    }
    if (c->read_timeout_s < 1 || c->read_timeout_s > SD_LIMITS_MAX_READ_S) {
        snprintf(err, errlen, "--read-timeout: must be 1 to %u seconds, not "
                 "%u", SD_LIMITS_MAX_READ_S, c->read_timeout_s);
        return -EINVAL;
    }
    return 0;
}

int sd_limits_new(const struct sd_limits_conf *conf, uint64_t interval_us,
                  sd_limits_report_fn *report, void *ctx,
                  struct sd_limits **out)
{
    char err[128];
    struct sd_limits *l;
    size_t n;

    if (sd_limits_conf_check(conf, err, sizeof(err)) < 0) {
        return -EINVAL;
    }
    n = conf->max_conns + SPARE + 1;
    l = calloc(1, sizeof(*l) + n * sizeof(l->entries[0]));
    if (!l) {
        return -ENOMEM;
    }
    pthread_mutex_init(&l->lock, NULL);
    l->conf = *conf;
    l->interval_us = interval_us;
    l->report = report ? report : log_report;
    l->ctx = ctx;
    l->n = n;
    l->entries[n - 1].used = 1;         /* "other peers" */
    *out = l;
    return 0;
}

void sd_limits_free(struct sd_limits *l)
{
    if (l) {
        pthread_mutex_destroy(&l->lock);
        free(l);
    }
}

const struct sd_limits_conf *sd_limits_conf(const struct sd_limits *l)
{
    return &l->conf;
}

static int has_pending(const struct entry *e)
{
    int i;

    for (i = 0; i < SD_REFUSED_KINDS; i++) {
        if (e->pending[i]) {
            return 1;
        }
    }
    return 0;
}

/* addr's entry, made if need be; the "other peers" one when the table is
 * full (lock held). */
static struct entry *find(struct sd_limits *l, uint32_t addr, uint64_t now)
{
    struct entry *spare = NULL;
    size_t i;

    for (i = 0; i + 1 < l->n; i++) {
        struct entry *e = &l->entries[i];

        if (e->used && e->addr == addr) {
            return e;
        }
        if (!spare && (!e->used || (e->conns == 0 && !has_pending(e) &&
                                    now >= e->next_report))) {
            spare = e;
        }
    }
    if (!spare) {
        return &l->entries[l->n - 1];
    }
    memset(spare, 0, sizeof(*spare));
    spare->used = 1;
    spare->addr = addr;
    return spare;
}

/* Report e's counts if due (lock held: reports of one peer stay apart by
 * the interval even when two threads refuse it at once). */
static void report_due(struct sd_limits *l, struct entry *e, uint64_t now)
{
    char peer[INET_ADDRSTRLEN];
    struct in_addr in = { .s_addr = e->addr };

    if (!has_pending(e) || now < e->next_report) {
        return;
    }
    if (e == &l->entries[l->n - 1]) {
        snprintf(peer, sizeof(peer), "other peers");
    } else {
        inet_ntop(AF_INET, &in, peer, sizeof(peer));
    }
    l->report(l->ctx, peer, e->pending);
    memset(e->pending, 0, sizeof(e->pending));
    e->next_report = now + l->interval_us;
}

static void refuse_locked(struct sd_limits *l, struct entry *e,
                          enum sd_refusal kind, uint64_t now)
{
    e->pending[kind]++;
    l->refused[kind]++;
    report_due(l, e, now);
}

int sd_limits_open(struct sd_limits *l, uint32_t addr, uint64_t now)
{
    struct entry *e;
    int rc = 0;

    pthread_mutex_lock(&l->lock);
    e = find(l, addr, now);
    if (l->conns >= l->conf.max_conns) {
        rc = -EMFILE;
    } else if (e != &l->entries[l->n - 1] &&
               e->conns >= l->conf.max_conns_per_peer) {
        rc = -EUSERS;
    }
    /* "Other peers" are many addresses: only the total cap binds them,
     * and they are found again by address on close. */
    if (rc == 0) {
        e->conns++;
        l->conns++;
    } else {
        refuse_locked(l, e, SD_REFUSED_CONN, now);
    }
    pthread_mutex_unlock(&l->lock);
    return rc;
}

void sd_limits_close(struct sd_limits *l, uint32_t addr)
{
    struct entry *e = &l->entries[l->n - 1];
    size_t i;

    pthread_mutex_lock(&l->lock);
    for (i = 0; i + 1 < l->n; i++) {
        if (l->entries[i].used && l->entries[i].addr == addr &&
            l->entries[i].conns) {
            e = &l->entries[i];
            break;
        }
    }
    if (e->conns) {
        e->conns--;
        l->conns--;
    }
    pthread_mutex_unlock(&l->lock);
}

void sd_limits_refuse(struct sd_limits *l, uint32_t addr,
                      enum sd_refusal kind, uint64_t now)
{
    pthread_mutex_lock(&l->lock);
    refuse_locked(l, find(l, addr, now), kind, now);
    pthread_mutex_unlock(&l->lock);
}

void sd_limits_flush(struct sd_limits *l, uint64_t now)
{
    size_t i;

    pthread_mutex_lock(&l->lock);
    for (i = 0; i < l->n; i++) {
        if (l->entries[i].used) {
            report_due(l, &l->entries[i], now);
        }
    }
    pthread_mutex_unlock(&l->lock);
}

void sd_limits_stats(struct sd_limits *l, struct sd_limits_stats *out)
{
    pthread_mutex_lock(&l->lock);
    out->conns = l->conns;
    memcpy(out->refused, l->refused, sizeof(out->refused));
    pthread_mutex_unlock(&l->lock);
}
