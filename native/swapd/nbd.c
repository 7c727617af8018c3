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
 * NBD server: fixed newstyle handshake and the transmission phase with
 * simple replies.  One reader thread per connection reads requests in
 * large buffers and hands each burst to the backend at once; replies leave
 * in completion order, those completed in one batch (batch.h) in one
 * sendmsg.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "batch.h"
#include "nbd.h"
#include "util.h"

/* A connection's requests in flight are bounded in count and bytes: the
 * reader stops reading until completions make room. */
#define MAX_INFLIGHT 128U
#define MAX_INFLIGHT_BYTES (64ULL << 20)
#define RX_BUF_LEN (256U * 1024)        /* the reader's buffer */
/* A client that does not finish its handshake in this time is dropped. */
#define HANDSHAKE_TIMEOUT_S 30

#define TRANSMISSION_FLAGS (NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | \
                            NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_TRIM | \
                            NBD_FLAG_CAN_MULTI_CONN)

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

int sd_nbd_parse_request(const uint8_t *buf, struct sd_nbd_request *req)
{
    if (get32(buf) != NBD_REQUEST_MAGIC) {
        return -EPROTO;
    }
    req->flags = get16(buf + 4);
    req->type = get16(buf + 6);
    req->handle = get64(buf + 8);
    req->offset = get64(buf + 16);
    req->len = get32(buf + 24);
    return 0;
}

void sd_nbd_check_request(const struct sd_nbd_request *req, uint64_t size,
                          struct sd_nbd_verdict *v)
{
    int extent = 1;     /* the command addresses offset/len */

    memset(v, 0, sizeof(*v));
    switch (req->type) {
    case NBD_CMD_DISC:
        v->close = 1;
        return;
    case NBD_CMD_FLUSH:
        extent = 0;
        break;
    case NBD_CMD_WRITE:
        if (req->len > SD_NBD_MAX_LEN) {
            /* Its payload is too large to read and drop: the stream
             * cannot be kept in step cheaply. */
            v->error = NBD_EINVAL;
            v->close = 1;
            return;
        }
        break;
    case NBD_CMD_READ:
        if (req->len > SD_NBD_MAX_LEN) {
            v->error = NBD_EINVAL;
            return;
        }
        break;
    case NBD_CMD_TRIM:
        break;
    default:
        v->error = NBD_EINVAL;
        return;
    }
    if (extent && (req->offset > size || req->len > size - req->offset)) {
        v->error = NBD_EINVAL;
    }
    if (v->error && req->type == NBD_CMD_WRITE) {
        v->drain = req->len;
    }
}

int sd_nbd_parse_option(const uint8_t *buf, uint32_t *opt, uint32_t *len)
{
    if (get64(buf) != NBD_IHAVEOPT) {
        return -EPROTO;
    }
    *opt = get32(buf + 8);
    *len = get32(buf + 12);
    return 0;
}

int sd_nbd_parse_info(const uint8_t *data, uint32_t len,
                      struct sd_nbd_info_request *out)
{
    uint32_t name_len, i, n;

    memset(out, 0, sizeof(*out));
    if (len < 4) {
        return -EINVAL;
    }
    name_len = get32(data);
    if (name_len > len - 4 || len - 4 - name_len < 2) {
        return -EINVAL;
    }
    out->name = (const char *)data + 4;
    out->name_len = name_len;
    n = get16(data + 4 + name_len);
    if ((uint64_t)n * 2 != len - 6 - name_len) {
        return -EINVAL;
    }
    for (i = 0; i < n; i++) {
        if (get16(data + 6 + name_len + 2 * i) == NBD_INFO_BLOCK_SIZE) {
            out->want_block_size = 1;
        }
    }
    return 0;
}

/* ---- connections ---- */

struct request;

struct conn {
    int fd;
    struct sd_nbd_backend be;
    struct sd_nbd_server *server;       /* NULL for sd_nbd_serve_fd */
    pthread_mutex_t lock;               /* inflight accounting */
    pthread_cond_t room;
    unsigned inflight;                  /* requests not yet replied to */
    uint64_t inflight_bytes;
    unsigned holds;                     /* batches that will send replies */
    pthread_mutex_t wlock;              /* the socket's sending side */
    int broken;                         /* a send failed */
    struct request *replies[MAX_INFLIGHT];  /* done, not yet sent (wlock) */
    unsigned nreplies;
    /* The reader's: bytes [rx_pos, rx_len) of rx are read, not parsed;
     * the requests in batch are not yet handed to the backend. */
    uint8_t *rx;
    size_t rx_pos, rx_len;
    struct sd_nbd_io *batch[MAX_INFLIGHT];
    unsigned nbatch;
    struct conn *next;
};

struct request {
    struct sd_nbd_io io;
    uint64_t handle;
    uint64_t bytes;                     /* counted in inflight_bytes */
    struct conn *conn;
    uint8_t reply[16];                  /* the simple reply's header */
    uint32_t error;
};

struct sd_nbd_server {
    int fd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct sd_nbd_backend be;
    int stop_pipe[2];
    pthread_t accept_thread;
    pthread_mutex_t lock;
    pthread_cond_t gone;
    struct conn *conns;
    unsigned nconns;
};

/* send() never raises SIGPIPE: a client that left is an error here. */
static int send_iov(int fd, struct iovec *iov, int n)
{
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)n };

    while (n > 0) {
        ssize_t done = sendmsg(fd, &msg, MSG_NOSIGNAL);

        if (done < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        while (n > 0 && (size_t)done >= msg.msg_iov->iov_len) {
            done -= (ssize_t)msg.msg_iov->iov_len;
            msg.msg_iov++;
            n--;
        }
        if (n > 0) {
            msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + done;
            msg.msg_iov->iov_len -= (size_t)done;
        }
        msg.msg_iovlen = (size_t)n;
    }
    return 0;
}

static int send_buf(int fd, const void *buf, size_t len)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    return send_iov(fd, &iov, 1);
}

/* Read and drop len bytes. */
static int drain(int fd, uint64_t len)
{
    uint8_t scratch[4096];

    while (len) {
        size_t n = len < sizeof(scratch) ? (size_t)len : sizeof(scratch);
        int ret = sd_read_full(fd, scratch, n);

        if (ret) {
            return ret;
        }
        len -= n;
    }
    return 0;
}

static int send_opt_reply(int fd, uint32_t opt, uint32_t type,
                          const void *data, uint32_t len)
{
    uint8_t hdr[20];
    struct iovec iov[2] = {
        { .iov_base = hdr, .iov_len = sizeof(hdr) },
        { .iov_base = (void *)data, .iov_len = len },
    };

    put64(hdr, NBD_REP_MAGIC);
    put32(hdr + 8, opt);
    put32(hdr + 12, type);
    put32(hdr + 16, len);
    return send_iov(fd, iov, len ? 2 : 1);
}

static int send_opt_error(int fd, uint32_t opt, uint32_t type,
                          const char *msg)
{
    return send_opt_reply(fd, opt, type, msg, (uint32_t)strlen(msg));
}

static int name_matches(const struct conn *c, const char *name,
                        uint32_t len)
{
    /* The socket serves one export: the empty (default) name is it too. */
    return len == 0 ||
           (len == strlen(c->be.name) && memcmp(name, c->be.name, len) == 0);
}

static int send_info(int fd, const struct conn *c, uint32_t opt,
                     int block_size)
{
    uint8_t info[14];
    int ret;

    put16(info, NBD_INFO_EXPORT);
    put64(info + 2, c->be.size);
    put16(info + 10, TRANSMISSION_FLAGS);
    ret = send_opt_reply(fd, opt, NBD_REP_INFO, info, 12);
    if (ret == 0 && (block_size || c->be.min_block > 1)) {
        put16(info, NBD_INFO_BLOCK_SIZE);
        put32(info + 2, c->be.min_block > 1 ? c->be.min_block : 1);
        put32(info + 6, SD_PAGE_SIZE);
        put32(info + 10, SD_NBD_MAX_LEN);
        ret = send_opt_reply(fd, opt, NBD_REP_INFO, info, 14);
    }
    return ret ? ret : send_opt_reply(fd, opt, NBD_REP_ACK, NULL, 0);
}

/* The handshake: 1 when the client enters transmission, 0 when it leaves
 * or breaks the protocol. */
static int handshake(struct conn *c)
{
    uint8_t greet[18], hdr[SD_NBD_OPT_HEADER_SIZE], cflags[4];
    uint8_t data[SD_NBD_MAX_OPT_LEN];
    int fd = c->fd, no_zeroes;
    uint32_t flags;

    put64(greet, NBD_MAGIC);
    put64(greet + 8, NBD_IHAVEOPT);
    put16(greet + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
    if (send_buf(fd, greet, sizeof(greet)) || sd_read_full(fd, cflags, 4)) {
        return 0;
    }
    flags = get32(cflags);
    if (flags & ~(uint32_t)(NBD_FLAG_C_FIXED_NEWSTYLE |
                            NBD_FLAG_C_NO_ZEROES)) {
        sd_log(LOG_DEBUG, "nbd %s: unknown client flags %#x", c->be.name,
               flags);
        return 0;
    }
    no_zeroes = !!(flags & NBD_FLAG_C_NO_ZEROES);

    for (;;) {
        struct sd_nbd_info_request info;
        uint32_t opt, len;
        int ret;

        if (sd_read_full(fd, hdr, sizeof(hdr)) ||
            sd_nbd_parse_option(hdr, &opt, &len)) {
            return 0;
        }
        if (len > SD_NBD_MAX_OPT_LEN) {
            if (opt == NBD_OPT_EXPORT_NAME || len > (1U << 20) ||
                drain(fd, len)) {
                return 0;
            }
            if (send_opt_error(fd, opt, NBD_REP_ERR_TOO_BIG,
                               "option data too large")) {
                return 0;
            }
            continue;
        }
        if (sd_read_full(fd, data, len)) {
            return 0;
        }
        switch (opt) {
        case NBD_OPT_EXPORT_NAME: {
            uint8_t reply[10 + 124] = { 0 };

            if (!name_matches(c, (const char *)data, len)) {
                return 0;       /* this option has no error reply */
            }
            put64(reply, c->be.size);
            put16(reply + 8, TRANSMISSION_FLAGS);
            return send_buf(fd, reply, no_zeroes ? 10 : sizeof(reply)) == 0;
        }
        case NBD_OPT_ABORT:
            send_opt_reply(fd, opt, NBD_REP_ACK, NULL, 0);
            return 0;
        case NBD_OPT_LIST: {
            uint8_t entry[4 + SD_NBD_MAX_NAME];
            uint32_t n = (uint32_t)strlen(c->be.name);

            if (len) {
                ret = send_opt_error(fd, opt, NBD_REP_ERR_INVALID,
                                     "LIST takes no data");
                break;
            }
            put32(entry, n);
            memcpy(entry + 4, c->be.name, n);
            ret = send_opt_reply(fd, opt, NBD_REP_SERVER, entry, 4 + n);
            if (ret == 0) {
                ret = send_opt_reply(fd, opt, NBD_REP_ACK, NULL, 0);
            }
            break;
        }
        case NBD_OPT_INFO:
        case NBD_OPT_GO:
            if (sd_nbd_parse_info(data, len, &info)) {
                ret = send_opt_error(fd, opt, NBD_REP_ERR_INVALID,
                                     "malformed INFO/GO data");
            } else if (!name_matches(c, info.name, info.name_len)) {
                ret = send_opt_error(fd, opt, NBD_REP_ERR_UNKNOWN,
                                     "no such export on this socket");
            } else {
                ret = send_info(fd, c, opt, info.want_block_size);
                if (ret == 0 && opt == NBD_OPT_GO) {
                    return 1;
                }
            }
            break;
        default:
            ret = send_opt_error(fd, opt, NBD_REP_ERR_UNSUP,
                                 "option not supported");
            break;
        }
        if (ret) {
            return 0;
        }
    }
}

/* A simple reply's 16-byte header. */
static void encode_reply(uint8_t *hdr, uint32_t error, uint64_t handle)
{
    put32(hdr, NBD_SIMPLE_REPLY_MAGIC);
    put32(hdr + 4, error);
    put64(hdr + 8, handle);
}

/* Send iov[0..n) unless the client is gone (c->wlock held); a failed
 * send marks it gone and makes the reader stop too. */
static void send_locked(struct conn *c, struct iovec *iov, int n)
{
    if (n && !c->broken && send_iov(c->fd, iov, n)) {
        c->broken = 1;
        shutdown(c->fd, SHUT_RDWR);
    }
}

/* The reply of a request refused before it reached the backend. */
static void send_error_reply(struct conn *c, uint64_t handle, uint32_t error)
{
    uint8_t hdr[16];
    struct iovec iov = { .iov_base = hdr, .iov_len = sizeof(hdr) };

    encode_reply(hdr, error, handle);
    pthread_mutex_lock(&c->wlock);
    send_locked(c, &iov, 1);
    pthread_mutex_unlock(&c->wlock);
}

/* Send every reply waiting in c->replies in one sendmsg, then free their
 * requests; release_hold: a batch's deferred call (see request_done). */
static void send_replies(struct conn *c, int release_hold)
{
    struct iovec iov[2 * MAX_INFLIGHT];
    struct request *sent[MAX_INFLIGHT];
    uint64_t bytes = 0;
    unsigned i, n;
    int k = 0;

    pthread_mutex_lock(&c->wlock);
    n = c->nreplies;
    c->nreplies = 0;
    for (i = 0; i < n; i++) {
        struct request *r = c->replies[i];

        sent[i] = r;
        iov[k++] = (struct iovec){ r->reply, sizeof(r->reply) };
        if (r->error == 0 && r->io.type == NBD_CMD_READ && r->io.len) {
            iov[k++] = (struct iovec){ r->io.buf, r->io.len };
        }
    }
    send_locked(c, iov, k);
    pthread_mutex_unlock(&c->wlock);
    for (i = 0; i < n; i++) {
        bytes += sent[i]->bytes;
        free(sent[i]->io.buf);
        free(sent[i]);
    }
    pthread_mutex_lock(&c->lock);
    c->inflight -= n;
    c->inflight_bytes -= bytes;
    c->holds -= release_hold ? 1 : 0;
    pthread_cond_broadcast(&c->room);
    pthread_mutex_unlock(&c->lock);
}

static void send_replies_deferred(void *arg)
{
    send_replies(arg, 1);
}

static void request_done(struct sd_nbd_io *io, uint32_t error)
{
    struct request *r = io->priv;
    struct conn *c = r->conn;
    enum sd_batch_defer_result how;

    encode_reply(r->reply, error, r->handle);
    r->error = error;
    pthread_mutex_lock(&c->wlock);
    c->replies[c->nreplies++] = r;
    how = sd_batch_defer(send_replies_deferred, c);
    if (how == SD_BATCH_DEFERRED) {
        /* Another thread may send this reply first and bring inflight
         * to 0: the hold keeps c alive until the deferred call ran. */
        pthread_mutex_lock(&c->lock);
        c->holds++;
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&c->wlock);
    if (how == SD_BATCH_RUN_NOW) {
        send_replies(c, 0);
    }
}

/* Hand the requests read so far to the backend, their synchronous
 * completions sent together. */
static void submit_batch(struct conn *c)
{
    if (c->nbatch) {
        sd_batch_open();
        c->be.submit(c->be.ctx, c->batch, c->nbatch);
        c->nbatch = 0;
        sd_batch_close();
    }
}

/* Make need (<= RX_BUF_LEN) unparsed bytes available in c->rx; 0, or -1
 * at the end of the stream.  Before it may block, the reader hands what
 * it has to the backend. */
static int rx_need(struct conn *c, size_t need)
{
    if (c->rx_len - c->rx_pos >= need) {
        return 0;
    }
    memmove(c->rx, c->rx + c->rx_pos, c->rx_len - c->rx_pos);
    c->rx_len -= c->rx_pos;
    c->rx_pos = 0;
    submit_batch(c);
    while (c->rx_len < need) {
        ssize_t n = recv(c->fd, c->rx + c->rx_len, RX_BUF_LEN - c->rx_len, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        c->rx_len += (size_t)n;
    }
    return 0;
}

/* The next len bytes of the stream into dst, or dropped when dst is NULL;
 * 0, or -1 at the end of the stream.  What is not buffered is read
 * straight from the socket. */
static int rx_take(struct conn *c, void *dst, uint64_t len)
{
    size_t have = c->rx_len - c->rx_pos;

    if (have > len) {
        have = (size_t)len;
    }
    if (dst) {
        memcpy(dst, c->rx + c->rx_pos, have);
        dst = (char *)dst + have;
    }
    c->rx_pos += have;
    len -= have;
    if (len == 0) {
        return 0;
    }
    submit_batch(c);
    return (dst ? sd_read_full(c->fd, dst, (size_t)len) : drain(c->fd, len))
           ? -1 : 0;
}

/* Whether one more request of bytes would pass the in-flight bounds
 * (c->lock held). */
static int no_room(const struct conn *c, uint64_t bytes)
{
    return c->inflight >= MAX_INFLIGHT ||
           (c->inflight && c->inflight_bytes + bytes > MAX_INFLIGHT_BYTES);
}

/* Read requests and submit them until the client leaves (NBD_CMD_DISC,
 * end of stream, a short request or a broken one). */
static void transmission(struct conn *c)
{
    uint8_t raw[SD_NBD_REQUEST_SIZE];

    for (;;) {
        struct sd_nbd_request req;
        struct sd_nbd_verdict v;
        struct request *r;
        uint64_t bytes;

        if (rx_need(c, sizeof(raw))) {
            return;     /* end of stream or a short request */
        }
        rx_take(c, raw, sizeof(raw));
        if (sd_nbd_parse_request(raw, &req)) {
            sd_log(LOG_WARNING, "nbd %s: bad request magic; closing the "
                   "connection", c->be.name);
            return;
        }
        sd_nbd_check_request(&req, c->be.size, &v);
        if (v.drain && rx_take(c, NULL, v.drain)) {
            return;
        }
        if (v.error) {
            sd_log(LOG_DEBUG, "nbd %s: refused command %u offset %llu "
                   "length %u: error %u", c->be.name, req.type,
                   (unsigned long long)req.offset, req.len, v.error);
            send_error_reply(c, req.handle, v.error);
        }
        if (v.close) {
            return;
        }
        if (v.error) {
            continue;
        }

        bytes = req.type == NBD_CMD_READ || req.type == NBD_CMD_WRITE ?
                req.len : 0;
        pthread_mutex_lock(&c->lock);
        if (no_room(c, bytes)) {
            /* Only what the backend holds can make room. */
            pthread_mutex_unlock(&c->lock);
            submit_batch(c);
            pthread_mutex_lock(&c->lock);
        }
        while (no_room(c, bytes)) {
            pthread_cond_wait(&c->room, &c->lock);
        }
        pthread_mutex_unlock(&c->lock);

        r = calloc(1, sizeof(*r));
        if (r && bytes && posix_memalign(&r->io.buf, SD_PAGE_SIZE, bytes)) {
            r->io.buf = NULL;
        }
        if (!r || (bytes && !r->io.buf)) {
            free(r);
            if (req.type == NBD_CMD_WRITE && rx_take(c, NULL, req.len)) {
                return;
            }
            send_error_reply(c, req.handle, NBD_ENOMEM);
            continue;
        }
        if (req.type == NBD_CMD_WRITE && rx_take(c, r->io.buf, req.len)) {
            free(r->io.buf);
            free(r);
            return;
        }
        r->handle = req.handle;
        r->bytes = bytes;
        r->conn = c;
        r->io.type = req.type;
        r->io.flags = req.flags;
        r->io.offset = req.offset;
        r->io.len = req.len;
        r->io.done = request_done;
        r->io.priv = r;
        pthread_mutex_lock(&c->lock);
        c->inflight++;
        c->inflight_bytes += bytes;
        pthread_mutex_unlock(&c->lock);
        c->batch[c->nbatch++] = &r->io;
        if (c->nbatch == MAX_INFLIGHT) {
            submit_batch(c);
        }
    }
}

static void set_timeout(int fd, int seconds)
{
    struct timeval tv = { .tv_sec = seconds };

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void serve(struct conn *c)
{
    set_timeout(c->fd, HANDSHAKE_TIMEOUT_S);
    if (handshake(c)) {
        set_timeout(c->fd, 0);
        if (c->be.clients) {
            c->be.clients(c->be.ctx, 1);
        }
        c->rx = malloc(RX_BUF_LEN);
        if (c->rx) {
            transmission(c);
            /* A request read before the client left is still served. */
            submit_batch(c);
            free(c->rx);
        }
        /* The backend still holds requests: their replies need c. */
        pthread_mutex_lock(&c->lock);
        while (c->inflight || c->holds) {
            pthread_cond_wait(&c->room, &c->lock);
        }
        pthread_mutex_unlock(&c->lock);
        if (c->be.clients) {
            c->be.clients(c->be.ctx, -1);
        }
    }
    close(c->fd);
}

static void conn_init(struct conn *c, int fd, const struct sd_nbd_backend *be)
{
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->be = *be;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->room, NULL);
    pthread_mutex_init(&c->wlock, NULL);
}

static void conn_destroy(struct conn *c)
{
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->room);
    pthread_mutex_destroy(&c->wlock);
}

void sd_nbd_serve_fd(int fd, const struct sd_nbd_backend *be)
{
    struct conn c;

    conn_init(&c, fd, be);
    serve(&c);
    conn_destroy(&c);
}

/* ---- the listening server ---- */

static void *conn_thread(void *arg)
{
    struct conn *c = arg, **pp;
    struct sd_nbd_server *s = c->server;

    serve(c);
    /* The backend may have used OpenSSL here (a donor connection's nonce
     * draws from this thread's random generator): freed now, not by the
     * thread's exit after the server's stop has counted it gone. */
    OPENSSL_thread_stop();
    pthread_mutex_lock(&s->lock);
    for (pp = &s->conns; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    conn_destroy(c);
    free(c);
    s->nconns--;
    pthread_cond_broadcast(&s->gone);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void *accept_thread(void *arg)
{
    struct sd_nbd_server *s = arg;
    struct pollfd pfd[2] = {
        { .fd = s->fd, .events = POLLIN },
        { .fd = s->stop_pipe[0], .events = POLLIN },
    };

    for (;;) {
        pthread_attr_t attr;
        struct conn *c;
        pthread_t tid;
        int fd;

        if (poll(pfd, 2, -1) < 0 && errno != EINTR) {
            sd_log(LOG_ERR, "nbd %s: poll: %s", s->be.name, strerror(errno));
            return NULL;
        }
        if (pfd[1].revents) {
            return NULL;
        }
        if (!(pfd[0].revents & POLLIN)) {
            continue;
        }
        fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;   /* the client left before we took it */
        }
        c = malloc(sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        conn_init(c, fd, &s->be);
        c->server = s;
        pthread_mutex_lock(&s->lock);
        c->next = s->conns;
        s->conns = c;
        s->nconns++;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&tid, &attr, conn_thread, c)) {
            s->conns = c->next;
            s->nconns--;
            close(fd);
            conn_destroy(c);
            free(c);
        }
        pthread_attr_destroy(&attr);
        pthread_mutex_unlock(&s->lock);
    }
}

int sd_nbd_server_start(const char *path, const struct sd_nbd_backend *be,
                        uid_t uid, gid_t gid, struct sd_nbd_server **out,
                        char *err, size_t errlen)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    struct sd_nbd_server *s;
    int ret;

    if (strlen(path) >= sizeof(addr.sun_path)) {
        snprintf(err, errlen, "socket path %s is longer than %zu bytes",
                 path, sizeof(addr.sun_path) - 1);
        return -ENAMETOOLONG;
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    strcpy(addr.sun_path, path);
    strcpy(s->path, path);
    s->be = *be;
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->gone, NULL);
    s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        ret = -errno;
        snprintf(err, errlen, "socket: %s", strerror(errno));
        goto fail;
    }
    unlink(path);       /* a socket left by an earlier run */
    if (bind(s->fd, (struct sockaddr *)&addr, sizeof(addr)) ||
        chmod(path, 0660) ||
        ((uid != (uid_t)-1 || gid != (gid_t)-1) && chown(path, uid, gid)) ||
        listen(s->fd, 16)) {
        ret = -errno;
        snprintf(err, errlen, "cannot listen on %s: %s", s->path,
                 strerror(errno));
        unlink(path);
        goto fail;
    }
    if (pipe2(s->stop_pipe, O_CLOEXEC)) {
        ret = -errno;
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        unlink(path);
        goto fail;
    }
    ret = -pthread_create(&s->accept_thread, NULL, accept_thread, s);
    if (ret) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(-ret));
        unlink(path);
        goto fail;
    }
    *out = s;
    return 0;

fail:
    if (s->fd >= 0) {
        close(s->fd);
    }
    if (s->stop_pipe[0] >= 0) {
        close(s->stop_pipe[0]);
        close(s->stop_pipe[1]);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->gone);
    free(s);
    return ret;
}

void sd_nbd_server_stop(struct sd_nbd_server *s)
{
    struct conn *c;

    if (!s) {
        return;
    }
    if (write(s->stop_pipe[1], "x", 1) < 0) {
        sd_log(LOG_ERR, "nbd %s: cannot stop the accept thread: %s",
               s->be.name, strerror(errno));
    }
    pthread_join(s->accept_thread, NULL);
    close(s->fd);
    unlink(s->path);
    pthread_mutex_lock(&s->lock);
    for (c = s->conns; c; c = c->next) {
        shutdown(c->fd, SHUT_RDWR);     /* the reader sees end of stream */
    }
    while (s->nconns) {
        pthread_cond_wait(&s->gone, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->gone);
    free(s);
}
