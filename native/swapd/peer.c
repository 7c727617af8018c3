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

/* Peers: one connection per donor endpoint, shared by every export with a
 * slab there, made on first use and made again when it dies. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "export_internal.h"
#include "transport.h"
#include "util.h"

int sd_peer_get(struct sd_exports *xs, const char *endpoint,
                struct peer **out, char *err, size_t errlen)
{
    struct peer *p;
    int ret;

    for (p = xs->peers; p; p = p->next) {
        if (strcmp(p->endpoint, endpoint) == 0) {
            *out = p;
            return 0;
        }
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        return sd_fail(err, errlen, -ENOMEM, "slabs: out of memory");
    }
    ret = sd_endpoint_parse(endpoint, &p->t, p->host, sizeof(p->host),
                            &p->port);
    if (ret) {
        free(p);
        return sd_fail(err, errlen, -EINVAL, "slabs: endpoint '%s' must be "
                       "tcp://host:port or rdma://host:port (%s)", endpoint,
                       strerror(-ret));
    }
    snprintf(p->endpoint, sizeof(p->endpoint), "%s", endpoint);
    pthread_rwlock_init(&p->rw, NULL);
    p->next = xs->peers;
    xs->peers = p;
    *out = p;
    return 0;
}

int sd_peer_submit(struct peer *p, struct sd_io **ios, size_t n,
                   size_t *queued)
{
    char err[SD_ERRLEN] = "";
    uint64_t now;
    int ret;

    pthread_rwlock_rdlock(&p->rw);
    if (p->conn && p->t->alive(p->conn)) {
        ret = p->t->submit(p->conn, ios, n, queued);
        pthread_rwlock_unlock(&p->rw);
        return ret;
    }
    pthread_rwlock_unlock(&p->rw);

    pthread_rwlock_wrlock(&p->rw);
    if (p->conn && !p->t->alive(p->conn)) {
        sd_log(LOG_WARNING, "donor %s: connection lost", p->endpoint);
        p->t->close(p->conn);
        p->conn = NULL;
    }
    now = sd_now_us();
    if (!p->conn && now - p->last_attempt_us >= RECONNECT_INTERVAL_US) {
        p->last_attempt_us = now;
        ret = p->t->connect(p->host, p->port, &p->conn, err, sizeof(err));
        if (ret) {
            p->conn = NULL;
            sd_log(LOG_WARNING, "donor %s: cannot connect: %s", p->endpoint,
                   err[0] ? err : strerror(-ret));
        } else {
            sd_log(LOG_INFO, "donor %s: connected", p->endpoint);
        }
    }
    *queued = 0;
    ret = p->conn ? p->t->submit(p->conn, ios, n, queued) : -ECONNREFUSED;
    pthread_rwlock_unlock(&p->rw);
    return ret;
}

/* The completion of a batch sd_peer_submit_wait waits for. */
struct batch_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t pending;
    int status;                 /* the first error */
};

static void batch_done(struct sd_io *io, int status)
{
    struct batch_wait *w = io->priv;

    pthread_mutex_lock(&w->lock);
    if (status && !w->status) {
        w->status = status;
    }
    if (--w->pending == 0) {
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
}

int sd_peer_submit_wait(struct peer *p, struct sd_io **ios, size_t n)
{
    struct batch_wait w = { .pending = n };
    size_t queued = 0, i;
    int ret;

    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    for (i = 0; i < n; i++) {
        ios[i]->done = batch_done;
        ios[i]->priv = &w;
    }
    ret = sd_peer_submit(p, ios, n, &queued);
    pthread_mutex_lock(&w.lock);
    w.pending -= n - queued;                /* never to be done() */
    if (queued < n && !w.status) {
        w.status = ret ? ret : -EIO;
    }
    while (w.pending) {
        pthread_cond_wait(&w.cond, &w.lock);
    }
    ret = w.status;
    pthread_mutex_unlock(&w.lock);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    return ret;
}

void sd_peers_free(struct sd_exports *xs)
{
    struct peer *p;

    while ((p = xs->peers)) {
        xs->peers = p->next;
        if (p->conn) {
            p->t->close(p->conn);
        }
        pthread_rwlock_destroy(&p->rw);
        free(p);
    }
}
