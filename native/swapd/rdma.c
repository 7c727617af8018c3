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
 * The RDMA transport: rdma_cm for connections, libibverbs for the data.
 *
 * Consumer side (sd_rdma_transport): one RC queue pair per donor.  An io
 * is a one-sided RDMA READ or WRITE of the donor's memory at the slab's
 * remote_addr + offset with the grant's rkey; the donor's CPU is not
 * involved, and the NIC refuses an rkey that is wrong or whose grant was
 * freed (-EACCES).  Data goes through a registered staging area (one slot
 * per work request); an io larger than a slot has its own buffer
 * registered for its lifetime.  One event thread per peer completes ios
 * from the completion queue and watches the connection.
 *
 * Donor side (sd_rdma_server_start): listens with rdma_cm, gives each
 * consumer a queue pair in one protection domain, and registers each
 * grant's region there through the store's hook (one memory region and
 * rkey per grant).  It posts no work: consumers read and write on their
 * own.
 *
 * Every entry point first checks that a device exists, so on hosts
 * without one each fails with -ENODEV and the reason.
 */
#define _GNU_SOURCE             /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "batch.h"
#include "donor.h"
#include "endpoint.h"
#include "store.h"
#include "transport.h"

#define RESOLVE_TIMEOUT_MS 2000
#define CONNECT_TIMEOUT_MS 5000
#define POLL_MS 100             /* how often event threads look at stop */
#define CLOSE_WAIT_MS 2000
#define STAGE_SLOTS 64          /* work requests in flight per peer */
#define STAGE_LEN (128 * 1024)  /* bytes per staging slot */
#define RD_ATOMIC 16            /* RDMA READs in flight per queue pair */
#define WC_BATCH 16
#define NO_OP UINT32_MAX

static int rdma_probe(char *why, size_t len)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);

    /* Without the rdma sysfs class the list is NULL (ENOSYS): also none. */
    if (list) {
        ibv_free_device_list(list);
    }
    if (!list || n == 0) {
        snprintf(why, len, "no RDMA device (ibv_get_device_list found none)");
        return -ENODEV;
    }
    snprintf(why, len, "%d RDMA device%s", n, n == 1 ? "" : "s");
    return 0;
}

/* Wait up to timeout_ms for the next event on ec; it must be `want`.
 * 0, or -errno with err filled (REJECTED: -ECONNREFUSED). */
static int expect_event(struct rdma_event_channel *ec,
                        enum rdma_cm_event_type want, int timeout_ms,
                        char *err, size_t errlen)
{
    struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };
    struct rdma_cm_event *ev;
    enum rdma_cm_event_type got;
    int status;

    if (poll(&pfd, 1, timeout_ms) <= 0) {
        snprintf(err, errlen, "no %s within %d ms", rdma_event_str(want),
                 timeout_ms);
        return -ETIMEDOUT;
    }
    if (rdma_get_cm_event(ec, &ev) < 0) {
        snprintf(err, errlen, "rdma_get_cm_event: %s", strerror(errno));
        return -errno;
    }
    got = ev->event;
    status = ev->status;
    rdma_ack_cm_event(ev);
    if (got == want) {
        return 0;
    }
    snprintf(err, errlen, "%s (status %d) instead of %s",
             rdma_event_str(got), status, rdma_event_str(want));
    if (got == RDMA_CM_EVENT_REJECTED) {
        return -ECONNREFUSED;
    }
    return got == RDMA_CM_EVENT_ADDR_ERROR ||
           got == RDMA_CM_EVENT_ROUTE_ERROR ||
           got == RDMA_CM_EVENT_UNREACHABLE ? -EHOSTUNREACH : -EIO;
}

static uint8_t rd_atomic(struct ibv_context *verbs)
{
    struct ibv_device_attr attr;
    int n = RD_ATOMIC;

    if (ibv_query_device(verbs, &attr) == 0) {
        n = attr.max_qp_rd_atom < n ? attr.max_qp_rd_atom : n;
        n = attr.max_qp_init_rd_atom < n ? attr.max_qp_init_rd_atom : n;
    }
    return (uint8_t)n;
}

/* ---- consumer side ---- */

struct wr_slot {
    struct sd_io *io;           /* NULL: free */
    struct ibv_mr *own_mr;      /* the io's buffer, when larger than a slot */
    uint32_t next_free;
};

struct sd_peer {
    char name[300];
    struct rdma_event_channel *ec;
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_comp_channel *cc;
    struct ibv_cq *cq;
    char *stage;                /* STAGE_SLOTS x STAGE_LEN, registered */
    struct ibv_mr *stage_mr;
    pthread_t thread;
    int free_on_exit;           /* close() was called on the event thread */

    pthread_mutex_t lock;       /* everything below */
    struct wr_slot slots[STAGE_SLOTS];
    uint32_t free_head;
    uint32_t busy;
    struct sd_io **queue;       /* ios waiting for a slot (a ring) */
    size_t qhead, qlen, qcap;
    int alive;
    int stopping;
};

/* Post io's work request in slot s (peer->lock held).  0 or -errno. */
static int post_io(struct sd_peer *p, uint32_t s, struct sd_io *io)
{
    struct wr_slot *w = &p->slots[s];
    struct ibv_sge sge = { .length = io->len };
    struct ibv_send_wr wr = {
        .wr_id = s,
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = io->op == SD_OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_SIGNALED,
    }, *bad;
    int rc;

    if (io->len <= STAGE_LEN) {
        char *stage = p->stage + (size_t)s * STAGE_LEN;

        if (io->op == SD_OP_WRITE) {
            memcpy(stage, io->buf, io->len);
        }
        sge.addr = (uintptr_t)stage;
        sge.lkey = p->stage_mr->lkey;
    } else {
        w->own_mr = ibv_reg_mr(p->pd, io->buf, io->len,
                               IBV_ACCESS_LOCAL_WRITE);
        if (!w->own_mr) {
            return -errno;
        }
        sge.addr = (uintptr_t)io->buf;
        sge.lkey = w->own_mr->lkey;
    }
    wr.wr.rdma.remote_addr = io->remote_addr + io->offset;
    wr.wr.rdma.rkey = io->rkey;
    rc = ibv_post_send(p->id->qp, &wr, &bad);
    if (rc != 0) {
        if (w->own_mr) {
            ibv_dereg_mr(w->own_mr);
            w->own_mr = NULL;
        }
        return -rc;
    }
    w->io = io;
    p->busy++;
    return 0;
}

static uint32_t slot_take(struct sd_peer *p)
{
    uint32_t s = p->free_head;

    if (s != NO_OP) {
        p->free_head = p->slots[s].next_free;
    }
    return s;
}

static void slot_give(struct sd_peer *p, uint32_t s)
{
    p->slots[s].io = NULL;
    p->slots[s].next_free = p->free_head;
    p->free_head = s;
}

static struct sd_io *queue_pop(struct sd_peer *p)
{
    struct sd_io *io;

    if (p->qlen == 0) {
        return NULL;
    }
    io = p->queue[p->qhead];
    p->qhead = (p->qhead + 1) % p->qcap;
    p->qlen--;
    return io;
}

static int queue_push(struct sd_peer *p, struct sd_io *io)
{
    if (p->qlen == p->qcap) {
        size_t cap = p->qcap ? 2 * p->qcap : 64, i;
        struct sd_io **q = malloc(cap * sizeof(*q));

        if (!q) {
            return -ENOMEM;
        }
        for (i = 0; i < p->qlen; i++) {
            q[i] = p->queue[(p->qhead + i) % p->qcap];
        }
        free(p->queue);
        p->queue = q;
        p->qcap = cap;
        p->qhead = 0;
    }
    p->queue[(p->qhead + p->qlen) % p->qcap] = io;
    p->qlen++;
    return 0;
}

/* Fail every queued io (the connection is gone). */
static void fail_queue(struct sd_peer *p)
{
    struct sd_io *io;

    pthread_mutex_lock(&p->lock);
    while ((io = queue_pop(p)) != NULL) {
        pthread_mutex_unlock(&p->lock);
        io->done(io, -ECONNRESET);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
}

static int wc_errno(const struct ibv_wc *wc)
{
    switch (wc->status) {
    case IBV_WC_SUCCESS:
        return 0;
    case IBV_WC_REM_ACCESS_ERR:
        return -EACCES;         /* wrong or revoked rkey, or out of region */
    case IBV_WC_WR_FLUSH_ERR:
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return -ECONNRESET;
    default:
        return -EIO;
    }
}

/* A work request finished: give its data to the io, reuse its slot for a
 * queued io, complete it. */
static void complete_wc(struct sd_peer *p, const struct ibv_wc *wc)
{
    uint32_t s = (uint32_t)wc->wr_id;
    struct wr_slot *w = &p->slots[s];
    struct sd_io *io = w->io, *next;
    int status = wc_errno(wc), rc = 0;

    /* Until the slot is given back only this thread touches it. */
    if (status == 0 && io->op == SD_OP_READ && !w->own_mr) {
        memcpy(io->buf, p->stage + (size_t)s * STAGE_LEN, io->len);
    }
    if (w->own_mr) {
        ibv_dereg_mr(w->own_mr);
        w->own_mr = NULL;
    }
    pthread_mutex_lock(&p->lock);
    p->busy--;
    slot_give(p, s);
    /* Any failed work request leaves an RC queue pair in the error
     * state: the rest flush, and the connection must be made again. */
    if (status != 0 && p->alive) {
        p->alive = 0;
        sd_log(LOG_WARNING, "donor %s: queue pair failed: %s", p->name,
               ibv_wc_status_str(wc->status));
    }
    next = p->alive ? queue_pop(p) : NULL;
    if (next) {
        uint32_t ns = slot_take(p);     /* the one just given back */

        rc = post_io(p, ns, next);
        if (rc < 0) {
            slot_give(p, ns);
        }
    }
    pthread_mutex_unlock(&p->lock);
    io->done(io, status);
    if (next && rc < 0) {
        next->done(next, rc);
    }
}

static void drain_cq(struct sd_peer *p)
{
    struct ibv_wc wc[WC_BATCH];
    int n, i;

    while ((n = ibv_poll_cq(p->cq, WC_BATCH, wc)) > 0) {
        sd_batch_open();
        for (i = 0; i < n; i++) {
            complete_wc(p, &wc[i]);
        }
        sd_batch_close();
    }
}

/* The connection's events: a disconnect makes the peer dead. */
static void peer_cm_event(struct sd_peer *p)
{
    struct rdma_cm_event *ev;
    enum rdma_cm_event_type type;

    if (rdma_get_cm_event(p->ec, &ev) < 0) {
        return;
    }
    type = ev->event;
    rdma_ack_cm_event(ev);
    if (type == RDMA_CM_EVENT_DISCONNECTED ||
        type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
        pthread_mutex_lock(&p->lock);
        p->alive = 0;
        pthread_mutex_unlock(&p->lock);
        sd_log(LOG_WARNING, "donor %s: %s", p->name, rdma_event_str(type));
        fail_queue(p);
    }
}

/* Free whatever of p was set up, in reverse order. */
static void peer_destroy(struct sd_peer *p)
{
    uint32_t s;

    if (p->id && p->id->qp) {
        rdma_destroy_qp(p->id);
    }
    /* No queue pair, no more DMA: what is left in flight fails now. */
    for (s = 0; s < STAGE_SLOTS; s++) {
        struct wr_slot *w = &p->slots[s];

        if (w->own_mr) {
            ibv_dereg_mr(w->own_mr);
        }
        if (w->io) {
            w->io->done(w->io, -ECONNRESET);
        }
    }
    if (p->stage_mr) {
        ibv_dereg_mr(p->stage_mr);
    }
    free(p->stage);
    if (p->cq) {
        ibv_destroy_cq(p->cq);
    }
    if (p->cc) {
        ibv_destroy_comp_channel(p->cc);
    }
    if (p->pd) {
        ibv_dealloc_pd(p->pd);
    }
    if (p->id) {
        rdma_destroy_id(p->id);
    }
    if (p->ec) {
        rdma_destroy_event_channel(p->ec);
    }
    free(p->queue);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Completions and connection events, until close(). */
static void *peer_events(void *arg)
{
    struct sd_peer *p = arg;
    struct pollfd pfd[2] = {
        { .fd = p->cc->fd, .events = POLLIN },
        { .fd = p->ec->fd, .events = POLLIN },
    };

    int waited = 0;

    for (;;) {
        int stopping, busy;

        pthread_mutex_lock(&p->lock);
        stopping = p->stopping;
        busy = p->busy;
        pthread_mutex_unlock(&p->lock);
        /* Closing: wait for the flushed work requests, but not forever
         * (what is left fails when the queue pair is destroyed). */
        if (stopping && (busy == 0 || waited++ * POLL_MS > CLOSE_WAIT_MS)) {
            break;
        }
        if (poll(pfd, 2, POLL_MS) <= 0) {
            continue;
        }
        if (pfd[0].revents & POLLIN) {
            struct ibv_cq *cq;
            void *ctx;

            if (ibv_get_cq_event(p->cc, &cq, &ctx) == 0) {
                ibv_ack_cq_events(cq, 1);
                /* Re-arm first so a completion racing the poll below
                 * still raises an event. */
                ibv_req_notify_cq(cq, 0);
                drain_cq(p);
            }
        }
        if (pfd[1].revents & POLLIN) {
            peer_cm_event(p);
        }
    }
    if (p->free_on_exit) {
        peer_destroy(p);
    }
    return NULL;
}

/* Queue pair, completion queue and staging area on the resolved id. */
static int peer_setup_verbs(struct sd_peer *p, char *err, size_t errlen)
{
    struct ibv_qp_init_attr qp = {
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 1,
        .cap = {
            .max_send_wr = STAGE_SLOTS,
            .max_recv_wr = 1,
            .max_send_sge = 1,
            .max_recv_sge = 1,
        },
    };
    size_t stage_len = (size_t)STAGE_SLOTS * STAGE_LEN;

    p->pd = ibv_alloc_pd(p->id->verbs);
    p->cc = p->pd ? ibv_create_comp_channel(p->id->verbs) : NULL;
    p->cq = p->cc ? ibv_create_cq(p->id->verbs, STAGE_SLOTS, p, p->cc, 0)
                  : NULL;
    if (!p->cq || ibv_req_notify_cq(p->cq, 0) != 0) {
        snprintf(err, errlen, "protection domain or completion queue: %s",
                 strerror(errno));
        return -ENOMEM;
    }
    qp.send_cq = qp.recv_cq = p->cq;
    if (rdma_create_qp(p->id, p->pd, &qp) < 0) {
        snprintf(err, errlen, "rdma_create_qp: %s", strerror(errno));
        return -errno;
    }
    p->stage = aligned_alloc(4096, stage_len);
    p->stage_mr = p->stage ? ibv_reg_mr(p->pd, p->stage, stage_len,
                                        IBV_ACCESS_LOCAL_WRITE) : NULL;
    if (!p->stage_mr) {
        snprintf(err, errlen, "staging area: %s", strerror(errno));
        return -ENOMEM;
    }
    /* The completion channel is polled, not blocked on. */
    fcntl(p->cc->fd, F_SETFL, fcntl(p->cc->fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

static int peer_connect(struct sd_peer *p, const char *host, uint16_t port,
                        char *err, size_t errlen)
{
    struct rdma_conn_param param = {
        .retry_count = 7,
        .rnr_retry_count = 7,
    };
    struct addrinfo *res;
    int rc;

    p->ec = rdma_create_event_channel();
    if (!p->ec || rdma_create_id(p->ec, &p->id, p, RDMA_PS_TCP) < 0) {
        snprintf(err, errlen, "rdma_cm: %s", strerror(errno));
        return -errno;
    }
    rc = sd_endpoint_resolve(host, port, 0, &res, err, errlen);
    if (rc < 0) {
        return rc;
    }
    rc = rdma_resolve_addr(p->id, NULL, res->ai_addr, RESOLVE_TIMEOUT_MS);
    freeaddrinfo(res);
    if (rc < 0) {
        snprintf(err, errlen, "rdma_resolve_addr: %s", strerror(errno));
        return -errno;
    }
    rc = expect_event(p->ec, RDMA_CM_EVENT_ADDR_RESOLVED,
                      RESOLVE_TIMEOUT_MS, err, errlen);
    if (rc == 0 && rdma_resolve_route(p->id, RESOLVE_TIMEOUT_MS) < 0) {
        snprintf(err, errlen, "rdma_resolve_route: %s", strerror(errno));
        rc = -errno;
    }
    if (rc == 0) {
        rc = expect_event(p->ec, RDMA_CM_EVENT_ROUTE_RESOLVED,
                          RESOLVE_TIMEOUT_MS, err, errlen);
    }
    if (rc == 0) {
        rc = peer_setup_verbs(p, err, errlen);
    }
    if (rc < 0) {
        return rc;
    }
    /* The consumer issues RDMA READs: it is the initiator. */
    param.initiator_depth = param.responder_resources =
        rd_atomic(p->id->verbs);
    if (rdma_connect(p->id, &param) < 0) {
        snprintf(err, errlen, "rdma_connect: %s", strerror(errno));
        return -errno;
    }
    return expect_event(p->ec, RDMA_CM_EVENT_ESTABLISHED,
                        CONNECT_TIMEOUT_MS, err, errlen);
}

static int rdma_connect_peer(const char *host, uint16_t port,
                             struct sd_peer **out, char *err, size_t errlen)
{
    struct sd_peer *p;
    uint32_t s;
    int rc;

    rc = rdma_probe(err, errlen);
    if (rc < 0) {
        return rc;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    snprintf(p->name, sizeof(p->name), "%s:%u", host, port);
    for (s = 0; s < STAGE_SLOTS; s++) {
        p->slots[s].next_free = s + 1 < STAGE_SLOTS ? s + 1 : NO_OP;
    }
    rc = peer_connect(p, host, port, err, errlen);
    if (rc == 0) {
        /* Events arrive on the channel from now on: make it pollable. */
        fcntl(p->ec->fd, F_SETFL, fcntl(p->ec->fd, F_GETFL) | O_NONBLOCK);
        p->alive = 1;
        rc = -pthread_create(&p->thread, NULL, peer_events, p);
        if (rc < 0) {
            snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
            rdma_disconnect(p->id);
        }
    }
    if (rc < 0) {
        peer_destroy(p);
        return rc;
    }
    *out = p;
    return 0;
}

static int rdma_submit_one(struct sd_peer *p, struct sd_io *io)
{
    uint32_t s;
    int rc;

    if ((io->op != SD_OP_READ && io->op != SD_OP_WRITE) ||
        io->offset > UINT64_MAX - io->len ||
        io->remote_addr > UINT64_MAX - io->offset - io->len) {
        return -EINVAL;
    }
    if (io->seals) {
        return -EOPNOTSUPP;     /* page seals over RDMA are not built */
    }
    pthread_mutex_lock(&p->lock);
    if (!p->alive) {
        rc = -ECONNRESET;
    } else if ((s = slot_take(p)) == NO_OP) {
        rc = queue_push(p, io);
    } else if ((rc = post_io(p, s, io)) < 0) {
        slot_give(p, s);
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* Each io is its own work request (posted as a slot frees). */
static int rdma_submit(struct sd_peer *p, struct sd_io **ios, size_t n,
                       size_t *queued)
{
    int rc = 0;

    for (*queued = 0; *queued < n; (*queued)++) {
        rc = rdma_submit_one(p, ios[*queued]);
        if (rc < 0) {
            break;
        }
    }
    return rc;
}

static int rdma_alive(struct sd_peer *p)
{
    int alive;

    pthread_mutex_lock(&p->lock);
    alive = p->alive;
    pthread_mutex_unlock(&p->lock);
    return alive;
}

static void rdma_close(struct sd_peer *p)
{
    if (!p) {
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->alive = 0;
    p->stopping = 1;
    pthread_mutex_unlock(&p->lock);
    fail_queue(p);
    /* Moves the queue pair to error: posted work requests complete as
     * flushed (-ECONNRESET) on the event thread, which then returns. */
    rdma_disconnect(p->id);
    if (pthread_equal(pthread_self(), p->thread)) {
        /* Called from a done() callback: the event thread frees the peer
         * as it leaves. */
        pthread_detach(p->thread);
        p->free_on_exit = 1;
        return;
    }
    pthread_join(p->thread, NULL);
    peer_destroy(p);
}

const struct sd_transport sd_rdma_transport = {
    .scheme = "rdma",
    .probe = rdma_probe,
    .connect = rdma_connect_peer,
    .submit = rdma_submit,
    .alive = rdma_alive,
    .close = rdma_close,
};

/* ---- donor side ---- */

struct rdma_conn {
    struct rdma_conn *next;
    struct rdma_cm_id *id;
};

struct rdma_server {
    struct sd_server base;
    struct sd_store *store;
    struct rdma_event_channel *ec;
    struct rdma_cm_id *listen_id;
    struct ibv_context *verbs;
    struct ibv_context **devices;   /* rdma_get_devices, when bound to any */
    struct ibv_pd *pd;
    struct ibv_cq *cq;              /* the consumers' queue pairs need one */
    int hooked;
    struct rdma_conn *conns;        /* only the event thread touches them */
    pthread_t thread;
    int thread_started;
    int stop_pipe[2];
};

static int server_reg(void *ctx, void *addr, size_t len, uint32_t *rkey,
                      void **handle)
{
    struct rdma_server *srv = ctx;
    struct ibv_mr *mr = ibv_reg_mr(srv->pd, addr, len,
                                   IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_READ |
                                   IBV_ACCESS_REMOTE_WRITE);

    if (!mr) {
        return errno ? -errno : -ENOMEM;
    }
    *rkey = mr->rkey;
    *handle = mr;
    return 0;
}

static void server_dereg(void *ctx, void *handle)
{
    (void)ctx;
    ibv_dereg_mr(handle);
}

/* A consumer asks to connect: a queue pair in our protection domain.
 * -1 when it was rejected (its id is destroyed once the event is
 * acknowledged). */
static int server_accept(struct rdma_server *srv, struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr qp = {
        .qp_type = IBV_QPT_RC,
        .send_cq = srv->cq,
        .recv_cq = srv->cq,
        .cap = { .max_send_wr = 1, .max_recv_wr = 1,
                 .max_send_sge = 1, .max_recv_sge = 1 },
    };
    struct rdma_conn_param param = { .rnr_retry_count = 7 };
    struct rdma_conn *c;

    /* Grants' rkeys live in our protection domain, on our device. */
    if (id->verbs != srv->verbs) {
        sd_log(LOG_WARNING, "rdma: consumer on another device: rejected");
        rdma_reject(id, NULL, 0);
        return -1;
    }
    c = calloc(1, sizeof(*c));
    if (!c || rdma_create_qp(id, srv->pd, &qp) < 0) {
        sd_log(LOG_WARNING, "rdma: no queue pair for a consumer: %s",
               strerror(errno));
        free(c);
        rdma_reject(id, NULL, 0);
        return -1;
    }
    /* The consumer's READs are served by this side's responder. */
    param.responder_resources = param.initiator_depth = rd_atomic(id->verbs);
    if (rdma_accept(id, &param) < 0) {
        sd_log(LOG_WARNING, "rdma_accept: %s", strerror(errno));
        rdma_destroy_qp(id);
        free(c);
        rdma_reject(id, NULL, 0);
        return -1;
    }
    c->id = id;
    c->next = srv->conns;
    srv->conns = c;
    return 0;
}

static void server_drop(struct rdma_server *srv, struct rdma_cm_id *id)
{
    struct rdma_conn **link = &srv->conns;

    while (*link && (*link)->id != id) {
        link = &(*link)->next;
    }
    if (*link) {
        struct rdma_conn *c = *link;

        *link = c->next;
        rdma_destroy_qp(id);
        rdma_destroy_id(id);
        free(c);
    }
}

static void *server_events(void *arg)
{
    struct rdma_server *srv = arg;
    struct pollfd pfd[2] = {
        { .fd = srv->ec->fd, .events = POLLIN },
        { .fd = srv->stop_pipe[0], .events = POLLIN },
    };

    for (;;) {
        struct rdma_cm_event *ev;
        struct rdma_cm_id *id;
        enum rdma_cm_event_type type;
        int rejected;

        if (poll(pfd, 2, -1) < 0 && errno != EINTR) {
            return NULL;
        }
        if (pfd[1].revents) {
            return NULL;
        }
        if (!(pfd[0].revents & POLLIN) ||
            rdma_get_cm_event(srv->ec, &ev) < 0) {
            continue;
        }
        type = ev->event;
        id = ev->id;
        rejected = type == RDMA_CM_EVENT_CONNECT_REQUEST &&
                   server_accept(srv, id) < 0;
        /* An id is destroyed only after its event is acknowledged. */
        rdma_ack_cm_event(ev);
        if (rejected) {
            rdma_destroy_id(id);
        } else if (type == RDMA_CM_EVENT_ESTABLISHED) {
            sd_log(LOG_DEBUG, "rdma: consumer connected");
        } else if (type == RDMA_CM_EVENT_DISCONNECTED) {
            rdma_disconnect(id);
            server_drop(srv, id);
        }
    }
}

static void rdma_server_stop(struct sd_server *base)
{
    struct rdma_server *srv = (struct rdma_server *)base;

    if (srv->thread_started) {
        if (write(srv->stop_pipe[1], "x", 1) < 0) {
            sd_log(LOG_WARNING, "rdma: cannot wake the event thread");
        }
        pthread_join(srv->thread, NULL);
    }
    while (srv->conns) {
        rdma_disconnect(srv->conns->id);
        server_drop(srv, srv->conns->id);
    }
    if (srv->hooked) {
        sd_store_set_mr_hook(srv->store, NULL);
    }
    if (srv->cq) {
        ibv_destroy_cq(srv->cq);
    }
    if (srv->pd) {
        ibv_dealloc_pd(srv->pd);
    }
    if (srv->listen_id) {
        rdma_destroy_id(srv->listen_id);
    }
    if (srv->devices) {
        rdma_free_devices(srv->devices);
    }
    if (srv->ec) {
        rdma_destroy_event_channel(srv->ec);
    }
    if (srv->stop_pipe[0] >= 0) {
        close(srv->stop_pipe[0]);
        close(srv->stop_pipe[1]);
    }
    free(srv);
}

/* Listen on host:port and pick the device whose domain holds the MRs. */
static int server_listen(struct rdma_server *srv, const char *host,
                         uint16_t port, char *err, size_t errlen)
{
    struct addrinfo *res;
    int rc, n = 0;

    srv->ec = rdma_create_event_channel();
    if (!srv->ec ||
        rdma_create_id(srv->ec, &srv->listen_id, srv, RDMA_PS_TCP) < 0) {
        snprintf(err, errlen, "rdma_cm: %s", strerror(errno));
        return -errno;
    }
    rc = sd_endpoint_resolve(host, port, 1, &res, err, errlen);
    if (rc < 0) {
        return rc;
    }
    rc = rdma_bind_addr(srv->listen_id, res->ai_addr);
    freeaddrinfo(res);
    if (rc < 0 || rdma_listen(srv->listen_id, 64) < 0) {
        snprintf(err, errlen, "listen on %s:%u: %s", host, port,
                 strerror(errno));
        return -errno;
    }
    srv->base.port = ntohs(rdma_get_src_port(srv->listen_id));
    /* Bound to one address, the id knows its device; bound to any, use
     * the first (consumers arriving on others are rejected). */
    srv->verbs = srv->listen_id->verbs;
    if (!srv->verbs) {
        srv->devices = rdma_get_devices(&n);
        if (!srv->devices || n == 0) {
            snprintf(err, errlen, "no RDMA device (rdma_get_devices found "
                     "none)");
            return -ENODEV;
        }
        srv->verbs = srv->devices[0];
    }
    return 0;
}

int sd_rdma_server_start(struct sd_store *store, const char *host,
                         uint16_t port, struct sd_server **out,
                         char *err, size_t errlen)
{
    struct rdma_server *srv;
    struct sd_store_mr_hook hook = { server_reg, server_dereg, NULL };
    int rc;

    rc = rdma_probe(err, errlen);
    if (rc < 0) {
        return rc;
    }
    srv = calloc(1, sizeof(*srv));
    if (!srv) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    srv->base.stop = rdma_server_stop;
    srv->store = store;
    srv->stop_pipe[0] = srv->stop_pipe[1] = -1;
    rc = server_listen(srv, host, port, err, errlen);
    if (rc == 0) {
        srv->pd = ibv_alloc_pd(srv->verbs);
        srv->cq = srv->pd ? ibv_create_cq(srv->verbs, 16, NULL, NULL, 0)
                          : NULL;
        if (!srv->cq) {
            snprintf(err, errlen, "protection domain or completion queue: "
                     "%s", strerror(errno));
            rc = -ENOMEM;
        }
    }
    if (rc == 0) {
        hook.ctx = srv;
        rc = sd_store_set_mr_hook(store, &hook);
        if (rc < 0) {
            snprintf(err, errlen, "registering the grants' memory: %s",
                     strerror(-rc));
        }
        srv->hooked = rc == 0;
    }
    if (rc == 0 && pipe2(srv->stop_pipe, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        rc = -errno;
    }
    if (rc == 0) {
        fcntl(srv->ec->fd, F_SETFL,
              fcntl(srv->ec->fd, F_GETFL) | O_NONBLOCK);
        rc = -pthread_create(&srv->thread, NULL, server_events, srv);
        srv->thread_started = rc == 0;
        if (rc < 0) {
            snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
        }
    }
    if (rc < 0) {
        rdma_server_stop(&srv->base);
        return rc;
    }
    sd_log(LOG_INFO, "donor service on rdma://%s:%u", host, srv->base.port);
    *out = &srv->base;
    return 0;
}
