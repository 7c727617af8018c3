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
 * The fabric transport's consumer side (sd_fabric_transport, scheme
 * "rdma"): libfabric, one RDM endpoint per donor.
 *
 * Connecting opens a TCP connection to the donor's port (tcp.c: the HELLO
 * exchange, authenticated frames) and the endpoint.  The first io of a
 * grant sends a KEY frame over that connection -- signed with a key derived
 * from the grant's secret, so the donor answers only a holder of it -- and
 * waits, with the grant's other ios, for the reply: the grant's regions,
 * their memory keys and the donor endpoint's address (fabric_key.h), which
 * tcp.c decrypts once its tag verifies.  No memory key crosses the network
 * in clear, and none comes from anywhere else.
 *
 * An io is then one-sided: a read or write of its bytes at the slab's
 * place in the grant's region and, for a sealed export, of its pages'
 * seals in the seals region (a segment of its own, see below); it
 * completes when both have, a write once the donor has placed it
 * (FI_DELIVERY_COMPLETE).
 * Data goes through a registered staging area (FI_MR_LOCAL providers need
 * registered buffers; one registration at connect beats one per io): an io
 * takes one slot per CHUNK bytes, slots going to queued ios as they free,
 * so any length up to SD_FRAME_MAX_LEN passes through STAGE_SLOTS slots.
 * Segments (a slot's data, its seals) waiting to be posted go out together,
 * up to the provider's iov limits in one operation (fi_readmsg and
 * fi_writemsg with several remote iovs): on tcp every operation is a
 * message of its own, with a send on this side and a wakeup and a send or
 * receive on the donor, and its 1.17 ignores FI_MORE.  Only segments of
 * one grant share an operation, so a refused key fails no other grant's
 * io with its error.
 *
 * One thread per peer reads the completion queue (which is also what
 * progresses tcp and shm) and completes ios, and each TICK_US fails ios
 * older than IO_TIMEOUT_US and looks at the TCP connection.  Any failed
 * operation ends the peer, as a failed one leaves the endpoint unusable on
 * most providers (tcp;ofi_rxm drops the connection on a refused key, a
 * verbs queue pair goes to error): that io fails with its error (-EACCES
 * for a refused key, -EIO or -ECONNRESET as the provider says), the rest
 * with -ECONNRESET (-ETIMEDOUT after a timeout), and peer.c connects
 * again, asking for keys anew.  The TCP connection's end (the donor
 * stopped) ends the peer the same way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <syslog.h>
#include <unistd.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "batch.h"
#include "fabric_internal.h"
#include "fabric_key.h"
#include "frame.h"
#include "seal.h"
#include "transport.h"
#include "util.h"

#define STAGE_SLOTS 64          /* chunks in flight per peer */
#define CHUNK (128 * 1024)      /* bytes of data per slot */
#define CHUNK_SEALS (CHUNK / SD_PAGE_SIZE * SD_SEAL_LEN)
#define SLOT_LEN (CHUNK + CHUNK_SEALS)
#define IO_TIMEOUT_US (5 * 1000000ULL)
#define TICK_US 100000
#define POLL_US 20              /* a polled provider's, while busy */
#define CQ_BATCH 16
#define DRAIN_READS 8           /* CQ reads per round of completions */
#define NO_SLOT UINT32_MAX
#define MAX_SEGS 4              /* segments per operation: tcp's iov limit */
#define SEGS (2 * STAGE_SLOTS)  /* a data and a seals segment per slot */
#define SEG(slot, seals) ((uint16_t)((slot) << 1 | (seals)))

struct fio {
    struct fio *next;           /* in the queue, a waiting or a done list */
    struct sd_io *io;
    uint64_t raddr, key;        /* RMA address of the io's first byte */
    uint64_t rseals, seals_key; /* and of its first page's seal */
    uint64_t deadline;
    uint32_t issued;            /* bytes given to slots */
    uint32_t chunks;            /* slots of it not complete */
    int status;                 /* the first error of its operations */
    int failed;                 /* completed early: its slots are orphans */
};

struct fgrant {
    struct fgrant *next;
    struct sd_peer *peer;
    uint8_t uuid[SD_UUID_LEN];
    uint8_t secret[SD_KEY_LEN];
    int ready;                  /* k holds the donor's answer */
    struct sd_fkey k;
    struct fio *waiting;        /* until then */
    struct sd_io kio;           /* the KEY request */
    uint8_t kbuf[SD_FRAME_KEY_LEN];
};

struct slot {
    struct fio *f;              /* NULL while free or orphaned */
    int busy;
    uint32_t off, len;          /* its chunk of f's io */
    int left;                   /* segments not complete, posted or not */
    uint32_t next_free;
};

/* An operation in flight: its context and the segments it carries. */
struct fop {
    struct fi_context2 ctx;
    uint32_t next_free;
    unsigned nsegs;
    uint16_t segs[MAX_SEGS];    /* SEG(slot, seals) */
};

struct sd_peer {
    char name[300];             /* host:port, for logs */
    struct sd_peer *hs;         /* the TCP handshake (tcp.c) */
    struct sd_fabric_ep f;      /* fabric, domain, endpoint, queue */
    char *stage;                /* STAGE_SLOTS x SLOT_LEN, registered */
    struct fid_mr *stage_mr;
    void *desc;
    size_t max_segs;            /* segments per operation, <= MAX_SEGS */
    int wake;                   /* eventfd: submit() to an idle thread */
    pthread_t thread;
    int free_on_exit;           /* close() was called on the thread */

    pthread_mutex_t lock;       /* everything below */
    struct slot slots[STAGE_SLOTS];
    uint32_t free_head;
    unsigned busy;              /* slots in use (orphans too) */
    struct fop ops[SEGS];       /* one per segment: never all in use */
    uint32_t free_op;
    uint16_t pend[SEGS];        /* a ring of segments to post */
    unsigned pend_head, pend_count;
    struct fio *qhead, **qtail; /* ios with bytes not in a slot yet */
    struct fgrant *grants;
    fi_addr_t donor;
    uint8_t donor_addr[SD_FKEY_ADDR_MAX];
    size_t donor_addr_len;      /* 0 until the first KEY reply */
    int alive;
    int dead_status;            /* what the rest fail with once !alive */
    int failed_all;             /* fail_all has run since */
    int idle;                   /* the thread waits for submit() */
    int stopping;
};

/* Wake the peer's thread from sd_fabric_wait(). */
static void wake_thread(struct sd_peer *p)
{
    uint64_t one = 1;

    if (write(p->wake, &one, sizeof(one)) < 0) {
        sd_log(LOG_DEBUG, "donor %s: cannot wake its thread", p->name);
    }
}

/* ---- slots and queue (peer->lock held) ---- */

static char *stage_of(struct sd_peer *p, const struct slot *s)
{
    return p->stage + (size_t)(s - p->slots) * SLOT_LEN;
}

static void slot_free(struct sd_peer *p, struct slot *s)
{
    s->busy = 0;
    s->f = NULL;
    s->next_free = p->free_head;
    p->free_head = (uint32_t)(s - p->slots);
    p->busy--;
}

/* The peer fails from now on: the thread fails what is in flight. */
static void kill_peer(struct sd_peer *p, int status, const char *why)
{
    if (p->alive) {
        p->alive = 0;
        p->dead_status = status;
        sd_log(LOG_WARNING, "donor %s: %s: the connection is made again",
               p->name, why);
    }
}

/* Segment seg's staging buffer and remote place. */
static void segment(struct sd_peer *p, uint16_t seg, struct iovec *iov,
                    struct fi_rma_iov *rma)
{
    const struct slot *s = &p->slots[seg >> 1];
    const struct fio *f = s->f;
    char *stage = stage_of(p, s);

    if (seg & 1) {
        iov->iov_base = stage + CHUNK;
        iov->iov_len = s->len / SD_PAGE_SIZE * SD_SEAL_LEN;
        rma->addr = f->rseals + s->off / SD_PAGE_SIZE * SD_SEAL_LEN;
        rma->key = f->seals_key;
    } else {
        iov->iov_base = stage;
        iov->iov_len = s->len;
        rma->addr = f->raddr + s->off;
        rma->key = f->key;
    }
    rma->len = iov->iov_len;
}

/* Post the first segments waiting, as many as one operation takes: 0,
 * -FI_EAGAIN (try again later), or -errno (the peer is dead). */
static int post_op(struct sd_peer *p)
{
    struct iovec iov[MAX_SEGS];
    struct fi_rma_iov rma[MAX_SEGS];
    void *desc[MAX_SEGS];
    const struct fio *first = p->slots[p->pend[p->pend_head] >> 1].f;
    struct fop *op;
    struct fi_msg_rma msg;
    unsigned n;
    ssize_t rc;

    op = &p->ops[p->free_op];
    for (n = 0; n < p->max_segs && n < p->pend_count; n++) {
        uint16_t seg = p->pend[(p->pend_head + n) % SEGS];
        const struct fio *f = p->slots[seg >> 1].f;

        if (f->io->op != first->io->op || f->key != first->key) {
            break;
        }
        segment(p, seg, &iov[n], &rma[n]);
        desc[n] = p->desc;
        op->segs[n] = seg;
    }
    op->nsegs = n;
    msg = (struct fi_msg_rma){
        .msg_iov = iov, .desc = desc, .iov_count = n, .addr = p->donor,
        .rma_iov = rma, .rma_iov_count = n, .context = &op->ctx,
    };
    /* A write completes once its data is in the donor's memory, not once
     * sent (tcp's default): a connection lost after a completion must not
     * leave the donor with an older page than the consumer believes. */
    rc = first->io->op == SD_OP_READ ?
        fi_readmsg(p->f.ep, &msg, FI_COMPLETION) :
        fi_writemsg(p->f.ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
    if (rc == -FI_EAGAIN) {
        return -FI_EAGAIN;
    }
    if (rc < 0) {
        char why[SD_ERRLEN];

        snprintf(why, sizeof(why), "cannot post: %s", fi_strerror((int)-rc));
        kill_peer(p, -ECONNRESET, why);
        return sd_fabric_errno((int)rc);
    }
    p->free_op = op->next_free;
    p->pend_head = (p->pend_head + n) % SEGS;
    p->pend_count -= n;
    return 0;
}

static void pend_push(struct sd_peer *p, uint16_t seg)
{
    p->pend[(p->pend_head + p->pend_count++) % SEGS] = seg;
}

/* Give queued ios slots while there are, then post what waits, in order,
 * until the provider has no room (a post it had none for is tried again:
 * rxm says -FI_EAGAIN while it connects too). */
static void pump(struct sd_peer *p)
{
    while (p->alive && p->qhead && p->free_head != NO_SLOT) {
        struct fio *f = p->qhead;
        struct sd_io *io = f->io;
        uint32_t idx = p->free_head;
        struct slot *s = &p->slots[idx];
        char *stage = stage_of(p, s);
        uint32_t len = io->len - f->issued;

        p->free_head = s->next_free;
        p->busy++;
        len = len < CHUNK ? len : CHUNK;
        *s = (struct slot){
            .f = f, .busy = 1, .off = f->issued, .len = len,
            .left = io->seals ? 2 : 1,
        };
        if (io->op == SD_OP_WRITE) {
            memcpy(stage, (char *)io->buf + s->off, len);
            if (io->seals) {
                memcpy(stage + CHUNK,
                       io->seals + s->off / SD_PAGE_SIZE * SD_SEAL_LEN,
                       len / SD_PAGE_SIZE * SD_SEAL_LEN);
            }
        }
        f->issued += len;
        f->chunks++;
        if (f->issued == io->len) {
            p->qhead = f->next;
            if (!p->qhead) {
                p->qtail = &p->qhead;
            }
        }
        pend_push(p, SEG(idx, 0));
        if (io->seals) {
            pend_push(p, SEG(idx, 1));
        }
    }
    while (p->alive && p->pend_count && post_op(p) == 0) {
    }
}

static void queue_push(struct sd_peer *p, struct fio *f)
{
    f->next = NULL;
    *p->qtail = f;
    p->qtail = &f->next;
}

/* Where io's bytes are in the grant's regions: 0, or -ERANGE when they
 * are not all in them. */
static int fio_target(struct fio *f, const struct sd_fkey *k)
{
    const struct sd_io *io = f->io;
    uint64_t rel;

    if (io->remote_addr < k->base || io->remote_addr - k->base > k->len) {
        return -ERANGE;
    }
    rel = io->remote_addr - k->base;
    if (io->offset > k->len - rel || io->len > k->len - rel - io->offset) {
        return -ERANGE;
    }
    rel += io->offset;
    f->raddr = k->target + rel;
    f->key = k->key;
    f->rseals = k->seals_target + rel / SD_PAGE_SIZE * SD_SEAL_LEN;
    f->seals_key = k->seals_key;
    return 0;
}

/* Complete the ios of list, each with its own error or status. */
static void complete_list(struct fio *list, int status)
{
    sd_batch_open();
    while (list) {
        struct fio *f = list;

        list = f->next;
        f->io->done(f->io, f->status ? f->status : status);
        free(f);
    }
    sd_batch_close();
}

/* Fail every io not complete yet (the peer is dead or closing); their
 * operations still posted keep their slots, as orphans, until they
 * complete or the endpoint closes. */
static void fail_all(struct sd_peer *p, int status)
{
    struct fio *list = NULL, *f;
    struct fgrant *g;
    unsigned i;

    pthread_mutex_lock(&p->lock);
    p->failed_all = 1;
    while ((f = p->qhead) != NULL) {
        p->qhead = f->next;
        f->failed = 1;
        f->next = list;
        list = f;
    }
    p->qtail = &p->qhead;
    for (g = p->grants; g; g = g->next) {
        while ((f = g->waiting) != NULL) {
            g->waiting = f->next;
            f->next = list;
            list = f;
        }
    }
    /* Segments never posted will not complete. */
    for (; p->pend_count; p->pend_count--) {
        p->slots[p->pend[p->pend_head] >> 1].left--;
        p->pend_head = (p->pend_head + 1) % SEGS;
    }
    for (i = 0; i < STAGE_SLOTS; i++) {
        struct slot *s = &p->slots[i];

        if (!s->busy || !s->f) {
            continue;
        }
        if (!s->f->failed) {
            s->f->failed = 1;
            s->f->next = list;
            list = s->f;
        }
        s->f = NULL;
        if (s->left == 0) {
            slot_free(p, s);
        }
    }
    pthread_mutex_unlock(&p->lock);
    complete_list(list, status);
}

/* ---- completions ---- */

/* The operation of a context, or NULL when it is none of ours (a
 * provider's error without one). */
static struct fop *op_of(struct sd_peer *p, void *ctx)
{
    uintptr_t c = (uintptr_t)ctx, base = (uintptr_t)p->ops;

    if (c < base || c >= base + sizeof(p->ops)) {
        return NULL;
    }
    return &p->ops[(c - base) / sizeof(struct fop)];
}

/* One segment of slot s finished with status (0 or -errno): a chunk whose
 * segments are all done gives its data to its io, and an io whose chunks
 * all are goes to *done. */
static void seg_done(struct sd_peer *p, struct slot *s, int status,
                     struct fio **done)
{
    struct fio *f = s->f;

    s->left--;
    if (status && f && !f->status) {
        f->status = status;
    }
    if (s->left > 0) {
        return;
    }
    if (f) {
        struct sd_io *io = f->io;

        if (io->op == SD_OP_READ && !f->status) {
            const char *stage = stage_of(p, s);

            memcpy((char *)io->buf + s->off, stage, s->len);
            if (io->seals) {
                memcpy(io->seals + s->off / SD_PAGE_SIZE * SD_SEAL_LEN,
                       stage + CHUNK, s->len / SD_PAGE_SIZE * SD_SEAL_LEN);
            }
        }
        if (--f->chunks == 0 && f->issued == io->len) {
            f->next = *done;
            *done = f;
        }
    }
    slot_free(p, s);
}

/* Operation op finished with status: each of its segments did. */
static void op_done(struct sd_peer *p, struct fop *op, int status,
                    struct fio **done)
{
    unsigned i;

    for (i = 0; i < op->nsegs; i++) {
        seg_done(p, &p->slots[op->segs[i] >> 1], status, done);
    }
    op->next_free = p->free_op;
    p->free_op = (uint32_t)(op - p->ops);
}

/* Read what the completion queue has, ios it completes going to *done:
 * 1 when it had something. */
static int read_cq(struct sd_peer *p, struct fio **done)
{
    struct fi_cq_entry e[CQ_BATCH];
    struct fi_cq_err_entry err = { 0 };
    ssize_t n = fi_cq_read(p->f.cq, e, CQ_BATCH), i;

    if (n == -FI_EAVAIL && fi_cq_readerr(p->f.cq, &err, 0) != 1) {
        n = -FI_EAGAIN;
    }
    if (n <= 0 && n != -FI_EAVAIL) {
        return 0;
    }
    pthread_mutex_lock(&p->lock);
    for (i = 0; i < n; i++) {
        struct fop *op = op_of(p, e[i].op_context);

        if (op) {
            op_done(p, op, 0, done);
        }
    }
    if (n == -FI_EAVAIL) {
        struct fop *op = op_of(p, err.op_context);
        const struct fio *f = op ? p->slots[op->segs[0] >> 1].f : NULL;
        char why[SD_ERRLEN];

        snprintf(why, sizeof(why), "%s refused by the provider: %s",
                 f && f->io->op == SD_OP_WRITE ? "a write" :
                 f ? "a read" : "an operation", fi_strerror(err.err));
        kill_peer(p, -ECONNRESET, why);
        if (op) {
            op_done(p, op, sd_fabric_errno(err.err), done);
        }
    }
    pump(p);
    pthread_mutex_unlock(&p->lock);
    return 1;
}

/* Each tick: ios past their deadline, and the TCP connection. */
static void tick(struct sd_peer *p, uint64_t now)
{
    int hs_alive = sd_tcp_transport.alive(p->hs);
    struct fio *f;
    unsigned i;

    pthread_mutex_lock(&p->lock);
    if (!hs_alive) {
        kill_peer(p, -ECONNRESET, "handshake connection lost");
    }
    for (f = p->qhead; f && p->alive; f = f->next) {
        if (f->deadline <= now) {
            kill_peer(p, -ETIMEDOUT, "an io timed out");
        }
    }
    for (i = 0; i < STAGE_SLOTS && p->alive; i++) {
        if (p->slots[i].f && p->slots[i].f->deadline <= now) {
            kill_peer(p, -ETIMEDOUT, "an io timed out");
        }
    }
    pthread_mutex_unlock(&p->lock);
}

static void peer_destroy(struct sd_peer *p);

static void *peer_thread(void *arg)
{
    struct sd_peer *p = arg;
    uint64_t next_tick = sd_now_us() + TICK_US, drain;

    for (;;) {
        struct fio *done = NULL;
        int busy, stalled, dead, status, had, reads = 0;
        uint64_t now;

        /* The queue read until empty (or DRAIN_READS times), then its ios
         * completed together: one batch of done() calls, so one reply to
         * an NBD client for several ios, not one per read. */
        while (reads < DRAIN_READS && read_cq(p, &done)) {
            reads++;
        }
        complete_list(done, 0);
        had = reads == DRAIN_READS;
        now = sd_now_us();

        pthread_mutex_lock(&p->lock);
        if (p->stopping) {
            pthread_mutex_unlock(&p->lock);
            break;
        }
        /* A post the provider had no room for (or no connection yet:
         * rxm says -FI_EAGAIN while it connects) is tried again. */
        if (p->pend_count) {
            pump(p);
        }
        dead = !p->alive && !p->failed_all;
        status = p->dead_status;
        /* A dead peer's orphans need no hurry: close() ends them. */
        busy = p->alive && (p->busy || p->qhead);
        stalled = p->pend_count > 0;
        p->idle = !busy && !had && !dead;
        pthread_mutex_unlock(&p->lock);
        if (dead) {
            fail_all(p, status);
        }
        if (now >= next_tick) {
            tick(p, now);
            next_tick = now + TICK_US;
        }
        if (had || dead) {
            continue;
        }
        /* Busy: wait for completions (a stalled post, for progress);
         * idle: for submit(). */
        if (sd_fabric_wait(p->f.fabric, busy ? p->f.cq : NULL,
                           stalled ? -1 : p->f.cqfd, p->wake, TICK_US,
                           POLL_US) &&
            read(p->wake, &drain, sizeof(drain)) < 0) {
            drain = 0;          /* nothing to drain */
        }
    }
    if (p->free_on_exit) {
        peer_destroy(p);
    }
    return NULL;
}

/* ---- the KEY handshake ---- */

/* Insert the donor's address (the first reply's; later ones must name the
 * same endpoint) (peer->lock held): 0 or -errno. */
static int donor_address(struct sd_peer *p, const struct sd_fkey *k)
{
    int n;

    if (p->donor_addr_len) {
        return k->addr_len == p->donor_addr_len &&
               memcmp(k->addr, p->donor_addr, k->addr_len) == 0 ? 0 : -EPROTO;
    }
    /* FI_ADDR_STR names too go in as the bytes fi_getname gave. */
    n = fi_av_insert(p->f.av, k->addr, 1, &p->donor, 0, NULL);
    if (n != 1) {
        sd_log(LOG_WARNING, "donor %s: fi_av_insert of its address: %s",
               p->name, n < 0 ? fi_strerror(-n) : "refused");
        return -EHOSTUNREACH;
    }
    memcpy(p->donor_addr, k->addr, k->addr_len);
    p->donor_addr_len = k->addr_len;
    return 0;
}

/* The donor answered a grant's KEY request (on tcp.c's receiver, or in
 * its submit): its ios go, or fail as it said. */
static void key_done(struct sd_io *kio, int status)
{
    struct fgrant *g = kio->priv, **link;
    struct sd_peer *p = g->peer;
    struct fio *fail = NULL, *f;
    struct sd_fkey k;
    const char *why;
    int drop = 1, wake = 0;

    if (status == 0 && sd_fkey_parse(g->kbuf, sizeof(g->kbuf), &k, &why)) {
        sd_log(LOG_WARNING, "donor %s: a malformed KEY reply (%s)", p->name,
               why);
        status = -EPROTO;
    }
    if (status == 0 && strcmp(k.prov, p->f.info->fabric_attr->prov_name)) {
        sd_log(LOG_WARNING, "donor %s uses provider %s, this host %s "
               "(memagg-swapd's --fabric-provider)", p->name, k.prov,
               p->f.info->fabric_attr->prov_name);
        status = -EPROTONOSUPPORT;
    }
    pthread_mutex_lock(&p->lock);
    if (status == 0 && !p->alive) {
        status = p->dead_status;
    }
    if (status == 0) {
        status = donor_address(p, &k);
    }
    if (status == 0) {
        g->ready = 1;
        g->k = k;
        drop = 0;
        while ((f = g->waiting) != NULL) {
            g->waiting = f->next;
            f->status = fio_target(f, &g->k);
            if (f->status) {
                f->next = fail;
                fail = f;
            } else {
                queue_push(p, f);
            }
        }
        pump(p);
        /* An idle thread waits for submit() only: the ios just posted
         * would wait for its next tick to progress and complete. */
        wake = p->idle;
    } else {
        /* Forgotten: a later io of the grant asks again. */
        for (link = &p->grants; *link != g; link = &(*link)->next) {
        }
        *link = g->next;
        fail = g->waiting;
    }
    pthread_mutex_unlock(&p->lock);
    if (wake) {
        wake_thread(p);
    }
    if (drop) {
        free(g);
    }
    complete_list(fail, status);
}

/* ---- the transport ---- */

static void peer_destroy(struct sd_peer *p)
{
    if (p->stage_mr) {
        fi_close(&p->stage_mr->fid);
    }
    sd_fabric_ep_close(&p->f);
    while (p->grants) {
        struct fgrant *g = p->grants;

        p->grants = g->next;
        free(g);
    }
    if (p->wake >= 0) {
        close(p->wake);
    }
    free(p->stage);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Fabric, domain, endpoint (sd_fabric_ep_open) and staging area toward
 * host: 0, or -errno with err. */
static int peer_open(struct sd_peer *p, const char *host, char *err,
                     size_t errlen)
{
    size_t stage_len = (size_t)STAGE_SLOTS * SLOT_LEN;
    int rc = sd_fabric_getinfo(host, 0, &p->f.info, err, errlen);

    if (rc == 0) {
        rc = sd_fabric_ep_open(&p->f, 1, 2 * STAGE_SLOTS, err, errlen);
    }
    if (rc < 0) {
        return rc;
    }
    p->stage = aligned_alloc(SD_PAGE_SIZE, stage_len);
    rc = p->stage ? fi_mr_reg(p->f.domain, p->stage, stage_len,
                              FI_READ | FI_WRITE, 0, 0, 0, &p->stage_mr,
                              NULL) : -FI_ENOMEM;
    if (rc < 0) {
        snprintf(err, errlen, "staging area (%s): %s",
                 p->f.info->fabric_attr->prov_name, fi_strerror(-rc));
        return sd_fabric_errno(rc);
    }
    p->desc = fi_mr_desc(p->stage_mr);
    p->max_segs = MAX_SEGS;
    if (p->f.info->tx_attr->iov_limit < p->max_segs) {
        p->max_segs = p->f.info->tx_attr->iov_limit;
    }
    if (p->f.info->tx_attr->rma_iov_limit < p->max_segs) {
        p->max_segs = p->f.info->tx_attr->rma_iov_limit;
    }
    if (p->max_segs == 0) {
        p->max_segs = 1;
    }
    return 0;
}

static int fabric_connect(const char *host, uint16_t port,
                          struct sd_peer **out, char *err, size_t errlen)
{
    struct sd_peer *p = calloc(1, sizeof(*p));
    uint32_t i;
    int rc;

    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    snprintf(p->name, sizeof(p->name), "%s:%u", host, port);
    p->f.cqfd = -1;
    p->qtail = &p->qhead;
    for (i = 0; i < STAGE_SLOTS; i++) {
        p->slots[i].next_free = i + 1 < STAGE_SLOTS ? i + 1 : NO_SLOT;
    }
    for (i = 0; i < SEGS; i++) {
        p->ops[i].next_free = i + 1 < SEGS ? i + 1 : NO_SLOT;
    }
    p->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    rc = p->wake < 0 ? -errno : peer_open(p, host, err, errlen);
    if (p->wake < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(-rc));
    }
    if (rc == 0) {
        rc = sd_tcp_transport.connect(host, port, &p->hs, err, errlen);
    }
    if (rc == 0) {
        p->alive = 1;
        rc = -pthread_create(&p->thread, NULL, peer_thread, p);
        if (rc < 0) {
            snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
            sd_tcp_transport.close(p->hs);
        }
    }
    if (rc < 0) {
        peer_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* The grant of io on p (peer->lock held), made and *ask set when new. */
static struct fgrant *grant_of(struct sd_peer *p, const struct sd_io *io,
                               struct fgrant **ask)
{
    struct fgrant *g;

    for (g = p->grants; g; g = g->next) {
        if (memcmp(g->uuid, io->grant, SD_UUID_LEN) == 0 &&
            sd_key_equal(g->secret, io->key)) {
            return g;
        }
    }
    g = calloc(1, sizeof(*g));
    if (!g) {
        return NULL;
    }
    g->peer = p;
    memcpy(g->uuid, io->grant, SD_UUID_LEN);
    memcpy(g->secret, io->key, SD_KEY_LEN);
    g->kio = (struct sd_io){
        .op = SD_FRAME_OP_KEY, .len = SD_FRAME_KEY_LEN, .buf = g->kbuf,
        .done = key_done, .priv = g,
    };
    memcpy(g->kio.grant, io->grant, SD_UUID_LEN);
    memcpy(g->kio.key, io->key, SD_KEY_LEN);
    g->next = p->grants;
    p->grants = g;
    *ask = g;
    return g;
}

/* Queue io (posted by fabric_submit's pump, or once its grant's keys
 * come): 0, or -errno when it was not taken. */
static int submit_one(struct sd_peer *p, struct sd_io *io, uint64_t now)
{
    struct fgrant *g, *ask = NULL;
    struct fio *f;
    size_t queued;
    int rc = 0, outside = 0;

    if ((io->op != SD_OP_READ && io->op != SD_OP_WRITE) || io->len == 0 ||
        io->len > SD_FRAME_MAX_LEN || io->offset > UINT64_MAX - io->len ||
        (io->seals && (io->offset % SD_PAGE_SIZE ||
                       io->len % SD_PAGE_SIZE))) {
        return -EINVAL;
    }
    f = calloc(1, sizeof(*f));
    if (!f) {
        return -ENOMEM;
    }
    f->io = io;
    f->deadline = now + IO_TIMEOUT_US;
    pthread_mutex_lock(&p->lock);
    if (!p->alive) {
        rc = -ECONNRESET;
    } else if (!(g = grant_of(p, io, &ask))) {
        rc = -ENOMEM;
    } else if (!g->ready) {
        f->next = g->waiting;
        g->waiting = f;
    } else if ((outside = fio_target(f, &g->k)) == 0) {
        queue_push(p, f);
    }
    pthread_mutex_unlock(&p->lock);
    /* Once queued, f is the thread's: it may be complete already. */
    if (rc < 0) {
        free(f);
        return rc;
    }
    if (outside) {
        /* Outside the grant's regions: failed, as a donor would. */
        f->status = outside;
        complete_list(f, 0);
    }
    if (ask) {
        rc = sd_tcp_transport.submit(p->hs, (struct sd_io *[]){ &ask->kio },
                                     1, &queued);
        if (rc < 0) {
            key_done(&ask->kio, rc);
        }
    }
    return 0;
}

/* Each io queued on its own (a grant's first waits for its keys), then
 * posted together: what a batch has in common shares operations. */
static int fabric_submit(struct sd_peer *p, struct sd_io **ios, size_t n,
                         size_t *queued)
{
    uint64_t now = sd_now_us();
    int rc = 0, wake;

    for (*queued = 0; *queued < n; (*queued)++) {
        rc = submit_one(p, ios[*queued], now);
        if (rc < 0) {
            break;
        }
    }
    pthread_mutex_lock(&p->lock);
    pump(p);
    wake = p->idle;
    pthread_mutex_unlock(&p->lock);
    if (wake) {
        wake_thread(p);
    }
    return rc;
}

static int fabric_alive(struct sd_peer *p)
{
    int alive;

    pthread_mutex_lock(&p->lock);
    alive = p->alive;
    pthread_mutex_unlock(&p->lock);
    return alive;
}

static void fabric_close(struct sd_peer *p)
{
    if (!p) {
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->alive = 0;
    p->stopping = 1;
    pthread_mutex_unlock(&p->lock);
    wake_thread(p);
    if (!pthread_equal(pthread_self(), p->thread)) {
        pthread_join(p->thread, NULL);
    }
    /* Its KEY requests complete now (-ECONNRESET), then the rest fail. */
    sd_tcp_transport.close(p->hs);
    fail_all(p, -ECONNRESET);
    if (pthread_equal(pthread_self(), p->thread)) {
        /* Called from a done() callback: the thread frees the peer as it
         * leaves. */
        pthread_detach(p->thread);
        p->free_on_exit = 1;
        return;
    }
    peer_destroy(p);
}

const struct sd_transport sd_fabric_transport = {
    .scheme = "rdma",
    .probe = sd_fabric_probe,
    .connect = fabric_connect,
    .submit = fabric_submit,
    .alive = fabric_alive,
    .close = fabric_close,
};
