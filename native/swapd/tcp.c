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
 * The TCP transport.
 *
 * Consumer side (sd_tcp_transport): one connection per donor carries the
 * I/O of every grant.  submit() puts its ios in the in-flight table under
 * fresh request ids and sends their frames in one sendmsg; one receive
 * thread reads replies in large batches, matches them to ios by id and
 * completes each buffer of them in one completion batch (batch.h).  An io
 * that waits longer than IO_TIMEOUT_US fails with -ETIMEDOUT; a lost
 * connection fails every io in flight with -ECONNRESET.
 *
 * Frames are authenticated (frame_auth.h): a connection starts with a
 * HELLO exchange; requests are numbered and signed under the send lock,
 * in the order they go out; a reply out of sequence, or whose tags do not
 * verify with its io's grant key, fails that io with -EBADMSG and closes
 * the connection.  A reply the donor could not sign (-EACCES for a grant
 * it does not hold) is taken only as that failure.
 *
 * The fabric transport (fabric.c) asks for a grant's memory keys over this
 * same connection: an io of op SD_FRAME_OP_KEY, whose reply payload is
 * decrypted here (sd_fauth_pad) once its tag has verified.
 *
 * Donor side: tcp_donor.c.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#include "batch.h"
#include "donor.h"
#include "endpoint.h"
#include "frame.h"
#include "frame_auth.h"
#include "store.h"
#include "tcp_internal.h"
#include "transport.h"
#include "util.h"

#define IO_TIMEOUT_US (5 * 1000000ULL)
#define CONNECT_TIMEOUT_MS 5000
#define TICK_US 250000          /* how often the receiver looks for timeouts */
/* Sealed pages the receiver opens before it sends the NBD replies it
 * holds: opening one costs about a microsecond, and a buffer full of
 * replies opened before any was sent held the first back for all of them
 * (0.84x the IOPS of clear pages at queue depth 32 and 1.17x the p99;
 * 0.89x and 0.91x with 4; 2 and 8 did no better). */
#define SEALED_PAGES_PER_BATCH 4
#define SLOTS_MIN 64
#define SLOTS_MAX (1U << 20)
#define NO_SLOT UINT32_MAX

/* ---- shared ---- */

int sd_tcp_send_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)n };
        ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL);

        if (sent < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN ? -ETIMEDOUT : -errno;
        }
        while (n > 0 && (size_t)sent >= iov->iov_len) {
            sent -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + sent;
            iov->iov_len -= (size_t)sent;
        }
    }
    return 0;
}

void sd_tcp_sockopt(int fd, int level, int name, int value)
{
    /* Tuning only: the connection works without it. */
    if (setsockopt(fd, level, name, &value, sizeof(value)) < 0) {
        sd_log(LOG_DEBUG, "setsockopt(%d, %d): %s", level, name,
               strerror(errno));
    }
}

void sd_tcp_timeout(int fd, int name, uint64_t us)
{
    struct timeval tv = {
        .tv_sec = (time_t)(us / 1000000),
        .tv_usec = (suseconds_t)(us % 1000000),
    };

    if (setsockopt(fd, SOL_SOCKET, name, &tv, sizeof(tv)) < 0) {
        sd_log(LOG_DEBUG, "setsockopt(timeout): %s", strerror(errno));
    }
}

int sd_tcp_socket(const char *host, uint16_t port, int passive,
                  struct addrinfo **res, char *err, size_t errlen)
{
    int fd, rc;

    rc = sd_endpoint_resolve(host, port, passive, res, err, errlen);
    if (rc < 0) {
        return rc;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rc = -errno;
        freeaddrinfo(*res);
        snprintf(err, errlen, "socket: %s", strerror(-rc));
        return rc;
    }
    return fd;
}

void sd_server_stop(struct sd_server *server)
{
    if (server) {
        server->stop(server);
    }
}

uint16_t sd_server_port(const struct sd_server *server)
{
    return server->port;
}

/* ---- consumer side ---- */

struct inflight {
    struct sd_io *io;           /* NULL: free */
    uint64_t deadline;          /* sd_now_us() after which it times out */
    uint32_t gen;               /* the upper half of the request id */
    uint32_t next_free;
    int sending;                /* its frame is being written: the buffer
                                 * is in use, it cannot be failed yet */
};

struct sd_peer {
    int fd;
    char name[300];             /* host:port, for logs */
    pthread_t rx;
    pthread_mutex_t send_lock;  /* one frame at a time on the socket */
    pthread_mutex_t lock;       /* the table and alive */
    struct inflight *slots;
    uint32_t nslots;
    uint32_t free_head;
    int alive;
    int free_on_exit;           /* close() was called by the receiver */
    struct sd_fauth_conn fa;    /* set before the receiver starts */
    struct sd_fauth_cache tx_keys;      /* send_lock */
    uint64_t tx_seq;                    /* send_lock */
    struct sd_fauth_cache rx_keys;      /* the receiver's */
    uint64_t rx_seq;                    /* the receiver's */
};

static void peer_free(struct sd_peer *p)
{
    close(p->fd);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->send_lock);
    sd_fauth_cache_free(&p->tx_keys);
    sd_fauth_cache_free(&p->rx_keys);
    free(p->slots);
    free(p);
}

static uint64_t request_id(uint32_t gen, uint32_t slot)
{
    return (uint64_t)gen << 32 | slot;
}

/* A free slot, growing the table when needed (peer->lock held). */
static uint32_t slot_get(struct sd_peer *p)
{
    uint32_t i, s;

    if (p->free_head == NO_SLOT) {
        uint32_t n = p->nslots * 2;
        struct inflight *t;

        if (n > SLOTS_MAX || !(t = realloc(p->slots, n * sizeof(*t)))) {
            return NO_SLOT;
        }
        memset(t + p->nslots, 0, (n - p->nslots) * sizeof(*t));
        for (i = p->nslots; i < n; i++) {
            t[i].next_free = i + 1 < n ? i + 1 : NO_SLOT;
        }
        p->free_head = p->nslots;
        p->slots = t;
        p->nslots = n;
    }
    s = p->free_head;
    p->free_head = p->slots[s].next_free;
    return s;
}

/* Take the io out of slot s (peer->lock held); a later reply with its id
 * no longer matches. */
static struct sd_io *slot_put(struct sd_peer *p, uint32_t s)
{
    struct sd_io *io = p->slots[s].io;

    p->slots[s].io = NULL;
    p->slots[s].sending = 0;
    p->slots[s].gen++;
    p->slots[s].next_free = p->free_head;
    p->free_head = s;
    return io;
}

/* Mark the connection lost and wake the receiver, which fails the rest. */
static void peer_fail(struct sd_peer *p, const char *why)
{
    int was;

    pthread_mutex_lock(&p->lock);
    was = p->alive;
    p->alive = 0;
    pthread_mutex_unlock(&p->lock);
    if (was && why) {
        sd_log(LOG_WARNING, "donor %s: connection lost: %s", p->name, why);
    }
    shutdown(p->fd, SHUT_RDWR);
}

/* Complete, one at a time, every io that is not being sent and whose
 * deadline is before now (all of them when now is UINT64_MAX). */
static void expire(struct sd_peer *p, uint64_t now, int status)
{
    uint32_t s;

    pthread_mutex_lock(&p->lock);
    for (s = 0; s < p->nslots; s++) {
        struct inflight *f = &p->slots[s];

        if (f->io && !f->sending && f->deadline <= now) {
            struct sd_io *io = slot_put(p, s);

            pthread_mutex_unlock(&p->lock);
            io->done(io, status);
            pthread_mutex_lock(&p->lock);
        }
    }
    pthread_mutex_unlock(&p->lock);
}

/* Read exactly len bytes straight from the socket (the part of a payload
 * that was not in the receive buffer). */
static int rx_full(struct sd_peer *p, void *buf, size_t len)
{
    char *c = buf;

    while (len) {
        ssize_t n = recv(p->fd, c, len, 0);

        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return -errno;
        }
        if (n == 0) {
            return -ECONNRESET;
        }
        c += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Fill dst[0..len) from the buffered *data (*avail bytes), then from the
 * socket; 0 or -errno. */
static int take(struct sd_peer *p, void *dst, size_t len, const uint8_t **data,
                size_t *avail)
{
    size_t have = len < *avail ? len : *avail;

    memcpy(dst, *data, have);
    *data += have;
    *avail -= have;
    return rx_full(p, (char *)dst + have, len - have);
}

static int tag_is_zero(const uint8_t tag[SD_FRAME_TAG_LEN])
{
    uint8_t acc = 0;
    int i;

    for (i = 0; i < SD_FRAME_TAG_LEN; i++) {
        acc |= tag[i];
    }
    return acc == 0;
}

/* Check the header hdr of reply f to io: 0 when it verifies with io's
 * grant key (*k is then the reply's key), 1 when it is a refusal the donor
 * could not sign (taken as that failure only), -EBADMSG (or -EIO) when it
 * fails. */
static int check_reply(struct sd_peer *p, const struct sd_frame *f,
                       const uint8_t *hdr, const struct sd_io *io,
                       struct sd_fauth_key *k)
{
    const struct sd_fauth_key *found;
    int rc;

    if (f->status == -EACCES && tag_is_zero(f->htag)) {
        return 1;
    }
    if (memcmp(f->grant, io->grant, SD_UUID_LEN) != 0) {
        return -EBADMSG;
    }
    found = sd_fauth_key_of(&p->rx_keys, &p->fa, io->grant, io->key,
                            SD_FAUTH_D2C, k);
    rc = found ? sd_fauth_verify(found, f->seq, hdr) : -EIO;
    if (rc == 0) {
        *k = *found;
        sd_fauth_cache_put(&p->rx_keys, io->grant, io->key, found);
    }
    return rc;
}

static void auth_failed(struct sd_peer *p, const char *what)
{
    sd_log(LOG_WARNING, "donor %s: %s failed authentication (altered or "
           "replayed on the wire, or not from the grant's donor): closing "
           "the connection", p->name, what);
}

/* Handle one reply whose header hdr is parsed into f and whose payload
 * starts at data (avail bytes of it buffered).  Returns how many buffered
 * bytes it used, or -errno when the connection cannot go on. */
static long handle_reply(struct sd_peer *p, const struct sd_frame *f,
                         const uint8_t *hdr, const uint8_t *data,
                         size_t avail)
{
    struct sd_fauth_key k;
    int auth;
    uint32_t s = (uint32_t)f->id, payload = sd_frame_payload_len(f);
    size_t have = payload < avail ? payload : avail;
    struct sd_io *io = NULL;
    int status = f->status, err = 0;

    /* An ERROR names no request (the donor closes the connection after
     * it, which fails them all). */
    pthread_mutex_lock(&p->lock);
    if (f->op != SD_FRAME_OP_ERROR && s < p->nslots && p->slots[s].io &&
        p->slots[s].gen == (uint32_t)(f->id >> 32)) {
        io = slot_put(p, s);
    }
    pthread_mutex_unlock(&p->lock);

    if (f->op == SD_FRAME_OP_ERROR) {
        sd_log(LOG_WARNING, "donor %s refused a frame: %s", p->name,
               strerror(-status));
    }
    if (!io) {
        /* Its io timed out: drop the payload. */
        char sink[4096];
        size_t rest = payload - have;

        while (rest && err == 0) {
            size_t n = rest < sizeof(sink) ? rest : sizeof(sink);

            err = rx_full(p, sink, n);
            rest -= n;
        }
        return err < 0 ? err : (long)have;
    }
    auth = check_reply(p, f, hdr, io, &k);
    if (auth < 0) {
        auth_failed(p, "a reply's header");
        io->done(io, -EBADMSG);
        return -EBADMSG;
    }
    if (f->op != io->op || f->len != io->len ||
        !(f->flags & SD_FRAME_SEALED) != !io->seals ||
        (auth == 1 && payload)) {
        io->done(io, -EPROTO);
        return -EPROTO;
    }
    if (payload) {
        err = take(p, io->buf, io->len, &data, &avail);
        if (err == 0 && io->seals) {
            err = take(p, io->seals, payload - io->len, &data, &avail);
        }
        if (err < 0) {
            io->done(io, -ECONNRESET);
            return err;
        }
        err = sd_fauth_verify_payload(&k, f->seq, io->buf, io->len,
                                      io->seals, payload - io->len, f->ptag);
        if (err < 0) {
            auth_failed(p, "a reply's payload");
            io->done(io, -EBADMSG);
            return -EBADMSG;
        }
        if (io->op == SD_FRAME_OP_KEY &&
            sd_fauth_pad(&p->fa, io->key, io->grant, SD_FAUTH_D2C, f->seq,
                         io->buf, io->len) < 0) {
            status = -EIO;
        }
    }
    io->done(io, status);
    return (long)have;
}

static void *peer_receiver(void *arg)
{
    struct sd_peer *p = arg;
    uint8_t *buf = malloc(SD_TCP_RX_BUF_LEN);
    size_t have = 0;
    uint64_t next_tick = sd_now_us() + TICK_US;
    const char *why = "out of memory";

    while (buf) {
        size_t pos = 0;
        ssize_t n;
        uint64_t now;
        size_t sealed = 0;      /* bytes of sealed pages in this batch */
        int rc = 0;

        sd_batch_open();
        while (have - pos >= SD_FRAME_HDR_LEN) {
            struct sd_frame f;
            long used;

            if (sealed >= SEALED_PAGES_PER_BATCH * SD_PAGE_SIZE) {
                /* The replies of the pages opened so far go now. */
                sd_batch_close();
                sd_batch_open();
                sealed = 0;
            }

            rc = sd_frame_parse(buf + pos, have - pos, &f, &why);

            if (rc == 0 && !(f.flags & SD_FRAME_REPLY)) {
                rc = -EPROTO;
                why = "a request where a reply was due";
            }
            if (rc == 0 && f.seq != p->rx_seq + 1) {
                rc = -EBADMSG;
                why = "a reply replayed or out of sequence";
                auth_failed(p, "a reply's sequence number");
            }
            if (rc < 0) {
                break;
            }
            p->rx_seq = f.seq;
            pos += SD_FRAME_HDR_LEN;
            used = handle_reply(p, &f, buf + pos - SD_FRAME_HDR_LEN,
                                buf + pos, have - pos);
            if (used < 0) {
                rc = (int)used;
                why = strerror(-rc);
                break;
            }
            pos += (size_t)used;
            if ((f.flags & SD_FRAME_SEALED) && sd_frame_payload_len(&f)) {
                sealed += f.len;        /* a READ's pages, opened */
            }
        }
        sd_batch_close();
        if (rc < 0) {
            goto dead;
        }
        memmove(buf, buf + pos, have - pos);
        have -= pos;

        now = sd_now_us();
        if (now >= next_tick) {
            expire(p, now, -ETIMEDOUT);
            next_tick = now + TICK_US;
        }
        /* SO_RCVTIMEO wakes this up each tick to look for timeouts. */
        n = recv(p->fd, buf + have, SD_TCP_RX_BUF_LEN - have, 0);
        if (n > 0) {
            have += (size_t)n;
        } else if (n == 0) {
            why = "closed by the donor";
            break;
        } else if (errno != EAGAIN && errno != EINTR) {
            why = strerror(errno);
            break;
        }
    }
dead:
    free(buf);
    peer_fail(p, why);
    expire(p, UINT64_MAX, -ECONNRESET);
    if (p->free_on_exit) {
        peer_free(p);
    }
    return NULL;
}

static int tcp_probe(char *why, size_t len)
{
    snprintf(why, len, "ok");
    return 0;
}

/* A connect() that gives up after CONNECT_TIMEOUT_MS. */
static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len)
{
    struct pollfd pfd = { .fd = fd, .events = POLLOUT };
    int flags = fcntl(fd, F_GETFL), soerr = 0, rc;
    socklen_t sl = sizeof(soerr);

    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    rc = connect(fd, sa, len);
    if (rc < 0 && errno != EINPROGRESS) {
        return -errno;
    }
    if (rc < 0) {
        rc = poll(&pfd, 1, CONNECT_TIMEOUT_MS);
        if (rc == 0) {
            return -ETIMEDOUT;
        }
        if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
            return -errno;
        }
        if (soerr) {
            return -soerr;
        }
    }
    fcntl(fd, F_SETFL, flags);
    return 0;
}

/* The HELLO exchange on a new connection: 0 with *fa, or -errno with the
 * reason in err.  The socket's receive timeout bounds the wait. */
static int hello(int fd, struct sd_fauth_conn *fa, char *err, size_t errlen)
{
    uint8_t msg[SD_FRAME_HDR_LEN], macs;
    struct iovec iov = { msg, sizeof(msg) };
    const char *why;
    ssize_t n;
    int rc;

    if (sd_fauth_nonce(fa->nonce_c) < 0) {
        snprintf(err, errlen, "no random bytes for the HELLO");
        return -EIO;
    }
    sd_hello_encode(0, sd_fauth_macs(), fa->nonce_c, msg);
    rc = sd_tcp_send_all(fd, &iov, 1);
    if (rc < 0) {
        snprintf(err, errlen, "HELLO: %s", strerror(-rc));
        return rc;
    }
    do {
        n = recv(fd, msg, sizeof(msg), MSG_WAITALL);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(msg)) {
        rc = n < 0 ? (errno == EAGAIN ? -ETIMEDOUT : -errno) : -ECONNRESET;
        snprintf(err, errlen, "HELLO: no answer: %s", strerror(-rc));
        return rc;
    }
    rc = sd_hello_parse(msg, sizeof(msg), 1, &macs, fa->nonce_d, &why);
    if (rc == 0 && macs != sd_fauth_choose(macs)) {
        rc = -EPROTO;
        why = "a MAC not offered";
    }
    if (rc < 0) {
        snprintf(err, errlen, "HELLO: the donor's answer: %s (a swapd of "
                 "another frame version?)", why);
        return rc;
    }
    fa->mac = macs;
    return 0;
}

static int tcp_connect(const char *host, uint16_t port, struct sd_peer **out,
                       char *err, size_t errlen)
{
    struct sd_fauth_conn fa;
    struct addrinfo *res;
    struct sd_peer *p;
    int fd, rc;
    uint32_t i;

    fd = sd_tcp_socket(host, port, 0, &res, err, errlen);
    if (fd < 0) {
        return fd;
    }
    rc = connect_timeout(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc < 0) {
        snprintf(err, errlen, "connect to %s:%u: %s", host, port,
                 strerror(-rc));
        close(fd);
        return rc;
    }
    /* Small frames must not wait for Nagle; the receive timeout is the
     * receiver's tick; a send that blocks this long means a dead donor. */
    sd_tcp_sockopt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
    sd_tcp_sockopt(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
    sd_tcp_timeout(fd, SO_RCVTIMEO, CONNECT_TIMEOUT_MS * 1000ULL);
    sd_tcp_timeout(fd, SO_SNDTIMEO, CONNECT_TIMEOUT_MS * 1000ULL);
    rc = hello(fd, &fa, err, errlen);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    sd_tcp_timeout(fd, SO_RCVTIMEO, TICK_US);
    sd_tcp_timeout(fd, SO_SNDTIMEO, IO_TIMEOUT_US);

    p = calloc(1, sizeof(*p));
    if (!p || !(p->slots = calloc(SLOTS_MIN, sizeof(*p->slots)))) {
        free(p);
        close(fd);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (i = 0; i < SLOTS_MIN; i++) {
        p->slots[i].next_free = i + 1 < SLOTS_MIN ? i + 1 : NO_SLOT;
    }
    p->nslots = SLOTS_MIN;
    p->fd = fd;
    p->fa = fa;
    p->alive = 1;
    snprintf(p->name, sizeof(p->name), "%s:%u", host, port);
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->send_lock, NULL);
    rc = pthread_create(&p->rx, NULL, peer_receiver, p);
    if (rc != 0) {
        snprintf(err, errlen, "pthread_create: %s", strerror(rc));
        pthread_mutex_destroy(&p->lock);
        pthread_mutex_destroy(&p->send_lock);
        free(p->slots);
        free(p);
        close(fd);
        return -rc;
    }
    *out = p;
    return 0;
}

/* Encode f, io's request, into hdr with its tags (p->send_lock held): 0 or
 * -EIO. */
static int sign_request(struct sd_peer *p, const struct sd_io *io,
                        struct sd_frame *f, uint8_t hdr[SD_FRAME_HDR_LEN])
{
    struct sd_fauth_key tmp;
    const struct sd_fauth_key *k;

    k = sd_fauth_key_of(&p->tx_keys, &p->fa, io->grant, io->key,
                        SD_FAUTH_C2D, &tmp);
    if (!k) {
        return -EIO;
    }
    sd_fauth_cache_put(&p->tx_keys, io->grant, io->key, k);
    if (f->op == SD_OP_WRITE && f->len &&
        sd_fauth_payload_tag(k, f->seq, io->buf, io->len, io->seals,
                             sd_frame_payload_len(f) - f->len, f->ptag) < 0) {
        return -EIO;
    }
    sd_frame_encode(f, hdr);
    return sd_fauth_sign(k, f->seq, hdr);
}

/* Frames of one submit() go out in sendmsg calls of up to this many. */
#define SEND_BATCH 64

/* Queue ios[0..n) (n <= SEND_BATCH) and send their frames in one
 * sendmsg; *queued: how many were (the first ones). */
static int submit_some(struct sd_peer *p, struct sd_io **ios, size_t n,
                       size_t *queued)
{
    uint8_t hdr[SEND_BATCH][SD_FRAME_HDR_LEN];
    struct iovec iov[3 * SEND_BATCH];
    uint32_t slot[SEND_BATCH], gen[SEND_BATCH];
    uint64_t deadline;
    size_t i, k = 0;
    int rc = 0, sent = 0, niov = 0;

    for (i = 0; i < n; i++) {
        const struct sd_io *io = ios[i];

        if ((io->op != SD_OP_READ && io->op != SD_OP_WRITE &&
             io->op != SD_FRAME_OP_KEY) ||
            (io->op == SD_FRAME_OP_KEY &&
             (io->len != SD_FRAME_KEY_LEN || io->seals || io->offset ||
              io->slab)) ||
            io->len > SD_FRAME_MAX_LEN || io->offset > UINT64_MAX - io->len ||
            (io->seals && (io->offset % SD_PAGE_SIZE ||
                           io->len % SD_PAGE_SIZE))) {
            rc = -EINVAL;
            n = i;
            break;
        }
    }
    deadline = sd_now_us() + IO_TIMEOUT_US;     /* one for the burst */
    pthread_mutex_lock(&p->lock);
    if (!p->alive) {
        rc = -ECONNRESET;
        n = 0;
    }
    for (k = 0; k < n; k++) {
        slot[k] = slot_get(p);
        if (slot[k] == NO_SLOT) {
            rc = -EAGAIN;
            break;
        }
        p->slots[slot[k]].io = ios[k];
        p->slots[slot[k]].sending = 1;
        p->slots[slot[k]].deadline = deadline;
        gen[k] = p->slots[slot[k]].gen;
    }
    pthread_mutex_unlock(&p->lock);
    *queued = k;
    if (k == 0) {
        return rc;
    }

    /* Numbered and signed in the order they go out. */
    pthread_mutex_lock(&p->send_lock);
    for (i = 0; i < k && sent == 0; i++) {
        const struct sd_io *io = ios[i];
        struct sd_frame f = { .op = (uint8_t)io->op };

        f.id = request_id(gen[i], slot[i]);
        memcpy(f.grant, io->grant, SD_UUID_LEN);
        f.seq = ++p->tx_seq;
        f.slab = io->slab;
        f.len = io->len;
        f.offset = io->offset;
        f.flags = io->seals ? SD_FRAME_SEALED : 0;
        sent = sign_request(p, io, &f, hdr[i]);
        iov[niov++] = (struct iovec){ hdr[i], SD_FRAME_HDR_LEN };
        if (io->op == SD_OP_WRITE && io->len) {
            iov[niov++] = (struct iovec){ io->buf, io->len };
            if (io->seals) {
                iov[niov++] = (struct iovec){
                    io->seals, io->len / SD_PAGE_SIZE * SD_SEAL_LEN };
            }
        }
    }
    if (sent == 0) {
        sent = sd_tcp_send_all(p->fd, iov, niov);
    }
    pthread_mutex_unlock(&p->send_lock);

    if (sent < 0) {
        /* Part of a frame may be out: the stream is unusable. */
        peer_fail(p, strerror(-sent));
    }
    for (i = 0; i < k; i++) {
        struct sd_io *io = ios[i];
        int fail = 0;

        pthread_mutex_lock(&p->lock);
        /* Unless its reply already completed it, the io is ours again. */
        if (p->slots[slot[i]].io == io && p->slots[slot[i]].gen == gen[i]) {
            p->slots[slot[i]].sending = 0;
            if (!p->alive) {
                /* The receiver's sweep skipped it while it was sent. */
                slot_put(p, slot[i]);
                fail = 1;
            }
        }
        pthread_mutex_unlock(&p->lock);
        if (fail) {
            /* A send that waited IO_TIMEOUT_US says so; any other loss
             * of the connection is -ECONNRESET, as for the ios in
             * flight. */
            io->done(io, sent == -ETIMEDOUT ? sent : -ECONNRESET);
        }
    }
    return rc;
}

static int tcp_submit(struct sd_peer *p, struct sd_io **ios, size_t n,
                      size_t *queued)
{
    int rc = 0;

    *queued = 0;
    while (*queued < n && rc == 0) {
        size_t m = n - *queued < SEND_BATCH ? n - *queued : SEND_BATCH, k;

        rc = submit_some(p, ios + *queued, m, &k);
        *queued += k;
    }
    return rc;
}

static int tcp_alive(struct sd_peer *p)
{
    int alive;

    pthread_mutex_lock(&p->lock);
    alive = p->alive;
    pthread_mutex_unlock(&p->lock);
    return alive;
}

static void tcp_close(struct sd_peer *p)
{
    if (!p) {
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->alive = 0;
    pthread_mutex_unlock(&p->lock);
    shutdown(p->fd, SHUT_RDWR);
    if (pthread_equal(pthread_self(), p->rx)) {
        /* Called from a done() callback: the receiver frees the peer as
         * it leaves, after failing what is still in flight. */
        pthread_detach(p->rx);
        p->free_on_exit = 1;
        return;
    }
    pthread_join(p->rx, NULL);
    peer_free(p);
}

const struct sd_transport sd_tcp_transport = {
    .scheme = "tcp",
    .probe = tcp_probe,
    .connect = tcp_connect,
    .submit = tcp_submit,
    .alive = tcp_alive,
    .close = tcp_close,
};
