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
 * The TCP transport's donor side (sd_tcp_server_start): a thread per
 * consumer connection reads every complete frame it has, serves each from
 * the store and sends all the replies together before it waits for more.
 *
 * Bounded before trusted: connections are capped in all and per source
 * address (conn_limits.h), so threads are at most the cap plus the acceptor;
 * a connection has a header's worth of buffer until one of its frames
 * passes authentication (frame_auth.h: its header tag, made with a key
 * derived from the grant's); no frame gets payload memory before its
 * header passed it, nor is its payload used before its payload tag passed;
 * deadlines close a connection idle before trust and a frame that does not
 * arrive whole; refusals are reported rate-limited.
 *
 * The fabric transport's donor (fabric_donor.c) runs this same port as its
 * handshake: a KEY frame, authenticated like any other, is answered by its
 * key service with the grant's memory keys, encrypted (sd_fauth_pad) and
 * then tagged.  A port without a key service answers KEY with -EOPNOTSUPP.
 */
#define _GNU_SOURCE         /* accept4 */
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

#include <openssl/crypto.h>

#include "donor.h"
#include "frame.h"
#include "frame_auth.h"
#include "conn_limits.h"
#include "store.h"
#include "tcp_internal.h"
#include "transport.h"
#include "util.h"

/* Refusals are reported at most this often per peer (conn_limits.h); the
 * acceptor wakes at least this often to report what waits. */
#define REPORT_INTERVAL_US (10 * 1000000ULL)
#define ACCEPT_TICK_MS 1000
#define DISCARD_CHUNK 16384

struct conn {
    struct conn *next;
    struct tcp_server *srv;
    int fd;
    uint32_t addr;              /* the peer's IPv4 address, network order */
    char name[64];
    pthread_t thread;
    int finished;               /* atomic: the thread is done */
    /* Frame authentication, the thread's alone. */
    int hello_done;
    struct sd_fauth_conn fa;
    struct sd_fauth_cache rx_keys, tx_keys;
    uint64_t rx_seq, tx_seq;    /* the last frame's each way */
    /* The frame being read: its header passed, and with these keys. */
    int head_checked;
    uint8_t ikm[SD_KEY_LEN];
    struct sd_fauth_key rx_key, tx_key;
};

struct tcp_server {
    struct sd_server base;
    struct sd_store *store;
    struct sd_limits *limits;
    struct sd_key_service keys;     /* fill NULL: none */
    int fd;
    pthread_t acceptor;
    pthread_mutex_t lock;       /* conns, stopping */
    struct conn *conns;
    int stopping;
    unsigned threads;           /* atomic: connection threads running */
    uint64_t buffered;          /* atomic: bytes of their buffers */
};

/* A buffer that grows to hold what one frame needs; its bytes are counted
 * in the server's buffered. */
struct buf {
    uint8_t *data;
    size_t len, cap;
};

static int buf_reserve(struct tcp_server *srv, struct buf *b, size_t need)
{
    uint8_t *d;

    if (b->cap - b->len >= need) {
        return 0;
    }
    d = realloc(b->data, b->len + need);
    if (!d) {
        return -ENOMEM;
    }
    __atomic_fetch_add(&srv->buffered, b->len + need - b->cap,
                       __ATOMIC_RELAXED);
    b->data = d;
    b->cap = b->len + need;
    return 0;
}

static void buf_free(struct tcp_server *srv, struct buf *b)
{
    __atomic_fetch_sub(&srv->buffered, b->cap, __ATOMIC_RELAXED);
    free(b->data);
}

static int flush_out(struct conn *c, struct buf *out)
{
    struct iovec iov = { out->data, out->len };
    int rc = out->len ? sd_tcp_send_all(c->fd, &iov, 1) : 0;

    out->len = 0;
    return rc;
}

/* Wait for fd to be readable until deadline (sd_now_us): 1 when it is, 0
 * at the deadline, or -errno. */
static int wait_readable(int fd, uint64_t deadline)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    for (;;) {
        uint64_t now = sd_now_us();
        int rc;

        if (now >= deadline) {
            return 0;
        }
        rc = poll(&pfd, 1, (int)((deadline - now + 999) / 1000));
        if (rc > 0) {
            return 1;
        }
        if (rc < 0 && errno != EINTR) {
            return -errno;
        }
    }
}

/* Read some of len bytes by deadline (0: none, the recv blocks by itself,
 * without a poll first: a system call less per batch on a busy
 * connection): how many, or -ETIMEDOUT, or -ECONNRESET at the end of the
 * stream, or -errno. */
static ssize_t recv_by(int fd, void *dst, size_t len, uint64_t deadline)
{
    for (;;) {
        int rc = deadline ? wait_readable(fd, deadline) : 1;
        ssize_t n;

        if (rc <= 0) {
            return rc == 0 ? -ETIMEDOUT : rc;
        }
        n = recv(fd, dst, len, 0);
        if (n > 0) {
            return n;
        }
        if (n == 0) {
            return -ECONNRESET;
        }
        if (errno != EINTR && errno != EAGAIN) {
            return -errno;
        }
    }
}

/* Read and drop len bytes by deadline.  A refused WRITE's payload is
 * drained through this fixed sink rather than the connection closed: one
 * connection carries every grant of a consumer, and a late write to a
 * grant just freed must fail alone, not reset the others' I/O.  It costs
 * no memory, and the frame's read deadline bounds its time. */
static int discard(int fd, uint64_t len, uint64_t deadline)
{
    char sink[DISCARD_CHUNK];

    while (len) {
        ssize_t n = recv_by(fd, sink, len < sizeof(sink) ? len : sizeof(sink),
                            deadline);

        if (n < 0) {
            return (int)n;
        }
        len -= (uint64_t)n;
    }
    return 0;
}

/* Append a reply to f without payload, with status: unsigned, as the
 * grant is not here to sign with. */
static int reply_status(struct conn *c, const struct sd_frame *f, int status,
                        struct buf *out)
{
    struct sd_frame r = {
        .op = f->op, .flags = SD_FRAME_REPLY | (f->flags & SD_FRAME_SEALED),
        .id = f->id, .slab = f->slab, .len = f->len, .offset = f->offset,
        .status = status, .seq = ++c->tx_seq,
    };

    memcpy(r.grant, f->grant, SD_UUID_LEN);
    if (buf_reserve(c->srv, out, SD_FRAME_HDR_LEN) < 0) {
        return -ENOMEM;
    }
    sd_frame_encode(&r, out->data + out->len);
    out->len += SD_FRAME_HDR_LEN;
    return 0;
}

/* Serve the request f whose payload (if any) is at payload; its reply goes
 * to out.  -errno only when the connection cannot go on. */
static int serve_frame(struct conn *c, const struct sd_frame *f,
                       uint8_t *payload, struct buf *out)
{
    struct sd_frame r = {
        .op = f->op, .flags = SD_FRAME_REPLY | (f->flags & SD_FRAME_SEALED),
        .id = f->id, .slab = f->slab, .len = f->len, .offset = f->offset,
    };
    int sealed = f->flags & SD_FRAME_SEALED;
    size_t reply_len = SD_FRAME_HDR_LEN;
    uint8_t *data, *hdr;
    uint32_t plen;
    int rc;

    memcpy(r.grant, f->grant, SD_UUID_LEN);
    if (f->op != SD_OP_WRITE) {
        /* The payload a successful read or key reply has. */
        r.status = 0;
        reply_len += sd_frame_payload_len(&r);
    }
    /* Keep the batch of replies small enough to send soon. */
    if (out->len && out->len + reply_len > SD_TCP_RX_BUF_LEN) {
        rc = flush_out(c, out);
        if (rc < 0) {
            return rc;
        }
    }
    if (buf_reserve(c->srv, out, reply_len) < 0) {
        return -ENOMEM;
    }
    hdr = out->data + out->len;
    data = hdr + SD_FRAME_HDR_LEN;
    if (f->op == SD_OP_READ) {
        r.status = sd_store_access(c->srv->store, SD_OP_READ, f->grant,
                                   c->ikm, f->slab, f->offset, data,
                                   f->len, sealed ? data + f->len : NULL);
    } else if (f->op == SD_FRAME_OP_KEY) {
        r.status = c->srv->keys.fill ?
                   c->srv->keys.fill(c->srv->keys.ctx, f->grant, c->ikm,
                                     data) : -EOPNOTSUPP;
    } else {
        r.status = sd_store_access(c->srv->store, SD_OP_WRITE, f->grant,
                                   c->ikm, f->slab, f->offset, payload,
                                   f->len,
                                   sealed ? payload + f->len : NULL);
    }
    r.seq = ++c->tx_seq;
    plen = sd_frame_payload_len(&r);
    /* The memory keys are encrypted, and the tag made over that. */
    if (plen && f->op == SD_FRAME_OP_KEY &&
        sd_fauth_pad(&c->fa, c->ikm, f->grant, SD_FAUTH_D2C, r.seq, data,
                     plen) < 0) {
        return -EIO;
    }
    if (plen && sd_fauth_payload_tag(&c->tx_key, r.seq, data, f->len,
                                     sealed ? data + f->len : NULL,
                                     plen - f->len, r.ptag) < 0) {
        return -EIO;
    }
    sd_frame_encode(&r, hdr);
    if (sd_fauth_sign(&c->tx_key, r.seq, hdr) < 0) {
        return -EIO;
    }
    out->len += SD_FRAME_HDR_LEN + plen;
    return 0;
}

/* Tell the consumer why its frame was refused before hanging up (unsigned:
 * the frame may name no grant here); counted as kind. */
static void send_error(struct conn *c, struct buf *out, int status,
                       enum sd_refusal kind)
{
    struct sd_frame r = {
        .op = SD_FRAME_OP_ERROR, .flags = SD_FRAME_REPLY, .status = status,
        .seq = ++c->tx_seq,
    };

    sd_limits_refuse(c->srv->limits, c->addr, kind, sd_now_us());
    if (buf_reserve(c->srv, out, SD_FRAME_HDR_LEN) == 0) {
        sd_frame_encode(&r, out->data + out->len);
        out->len += SD_FRAME_HDR_LEN;
    }
    flush_out(c, out);
}

/* Answer the consumer's HELLO at in (a header's worth): 0, or -errno with
 * the connection to close (the consumer told why). */
static int hello(struct conn *c, const uint8_t *in, struct buf *out)
{
    const char *why;
    uint8_t macs;
    int rc = sd_hello_parse(in, SD_FRAME_HDR_LEN, 0, &macs, c->fa.nonce_c,
                            &why);

    if (rc == 0 && !(c->fa.mac = sd_fauth_choose(macs))) {
        rc = -EPROTO;
        why = "no MAC in common";
    }
    if (rc == 0 && sd_fauth_nonce(c->fa.nonce_d) < 0) {
        rc = -EIO;
        why = "no random bytes";
    }
    if (rc < 0) {
        sd_log(LOG_DEBUG, "consumer %s: bad HELLO (%s): closing", c->name,
               why);
        send_error(c, out, rc, SD_REFUSED_FRAME);
        return rc;
    }
    if (buf_reserve(c->srv, out, SD_FRAME_HDR_LEN) < 0) {
        return -ENOMEM;
    }
    sd_hello_encode(1, c->fa.mac, c->fa.nonce_d, out->data + out->len);
    out->len += SD_FRAME_HDR_LEN;
    c->hello_done = 1;
    return flush_out(c, out);
}

/* Refuse a frame out of sequence or whose payload tag fails (rc:
 * -EBADMSG, or -EIO when OpenSSL could not tell): counted, and the
 * connection closes, as what follows in the stream cannot be trusted. */
static void refuse_auth(struct conn *c, struct buf *out, int rc,
                        const char *why)
{
    sd_log(LOG_DEBUG, "consumer %s: frame refused (%s): closing", c->name,
           why);
    send_error(c, out, rc == -EIO ? -EIO : -EBADMSG, SD_REFUSED_AUTH);
}

/* Authenticate the header of frame f at hdr, of a grant here whose key is
 * c->ikm: 0 with c's keys for the frame set, or -errno. */
static int check_header(struct conn *c, const struct sd_frame *f,
                        const uint8_t *hdr)
{
    struct sd_fauth_key tmp;
    const struct sd_fauth_key *k;
    int rc;

    k = sd_fauth_key_of(&c->rx_keys, &c->fa, f->grant, c->ikm, SD_FAUTH_C2D,
                        &tmp);
    rc = k ? sd_fauth_verify(k, f->seq, hdr) : -EIO;
    if (rc < 0) {
        return rc;
    }
    c->rx_key = *k;
    sd_fauth_cache_put(&c->rx_keys, f->grant, c->ikm, k);
    k = sd_fauth_key_of(&c->tx_keys, &c->fa, f->grant, c->ikm, SD_FAUTH_D2C,
                        &tmp);
    if (!k) {
        return -EIO;
    }
    c->tx_key = *k;
    sd_fauth_cache_put(&c->tx_keys, f->grant, c->ikm, k);
    return 0;
}

/* One connection's frames, after its HELLO.  Until one of its frames
 * passes authentication (trusted), it is read one header at a time into a
 * header's worth of buffer; after, into a receive buffer that batches
 * frames.  Either way a frame's header is checked (its sequence number,
 * then its grant, then its header tag) before room is made for its payload
 * or the payload read, and the payload tag before the payload is used.  A
 * frame of a grant not here, or whose header tag fails, gets an (unsigned)
 * -EACCES reply, its payload drained (discard); one out of sequence (a
 * replay) or whose payload tag fails closes the connection.
 * Deadlines: once a frame's first byte came, the rest of it within
 * read_timeout; before trust, something within idle_timeout. */
static void *conn_thread(void *arg)
{
    struct conn *c = arg;
    struct tcp_server *srv = c->srv;
    const struct sd_limits_conf *lc = sd_limits_conf(srv->limits);
    uint64_t read_us = lc->read_timeout_s * 1000000ULL;
    uint64_t idle_us = lc->idle_timeout_s * 1000000ULL;
    uint64_t last_recv = sd_now_us(), frame_start = 0, deadline;
    struct buf in = { 0 }, out = { 0 };
    int trusted = 0, err = 0;

    if (buf_reserve(srv, &in, SD_FRAME_HDR_LEN) < 0) {
        goto done;
    }
    for (;;) {
        size_t pos = 0, need = SD_FRAME_HDR_LEN, room;
        ssize_t n;

        if (!c->hello_done && in.len >= SD_FRAME_HDR_LEN) {
            if (hello(c, in.data, &out) < 0) {
                goto done;
            }
            pos = SD_FRAME_HDR_LEN;
        }
        while (c->hello_done && in.len - pos >= SD_FRAME_HDR_LEN) {
            struct sd_frame f;
            const char *why;
            uint32_t payload;
            enum sd_refusal refusal;
            int rc;

            rc = sd_frame_parse(in.data + pos, in.len - pos, &f, &why);
            if (rc == 0 && (f.flags & SD_FRAME_REPLY)) {
                rc = -EPROTO;
                why = "a reply where a request was due";
            }
            if (rc < 0) {
                sd_log(LOG_DEBUG, "consumer %s: bad frame (%s): closing",
                       c->name, why);
                send_error(c, &out, rc, SD_REFUSED_FRAME);
                goto done;
            }
            payload = sd_frame_payload_len(&f);
            /* A frame whose header passed comes back here when its
             * payload was not all in; its checks are not made again. */
            if (c->head_checked) {
                goto checked;
            }
            if (f.seq != c->rx_seq + 1) {
                refuse_auth(c, &out, -EBADMSG, "replayed or out of sequence");
                goto done;
            }
            c->rx_seq = f.seq;
            /* A grant not here, or a header tag that does not verify
             * (altered, or made with another key: a consumer's stale key
             * looks the same): refused alone, as a connection carries
             * every grant of its consumer.  Its length is not trusted
             * for anything but what to drain, within the deadline. */
            refusal = SD_REFUSED_KINDS;
            if (sd_store_key(srv->store, f.grant, c->ikm) < 0) {
                refusal = SD_REFUSED_KEY;
            } else if ((rc = check_header(c, &f, in.data + pos)) < 0) {
                if (rc != -EBADMSG) {
                    send_error(c, &out, rc, SD_REFUSED_FRAME);
                    goto done;
                }
                refusal = SD_REFUSED_AUTH;
                sd_store_wrong_key(srv->store, f.grant);
            }
            if (refusal != SD_REFUSED_KINDS) {
                size_t have = in.len - pos - SD_FRAME_HDR_LEN;
                /* This frame's first byte came with the last recv unless
                 * it is the partial frame kept from before. */
                uint64_t start = pos ? last_recv : frame_start;

                if (have > payload) {
                    have = payload;
                }
                sd_limits_refuse(srv->limits, c->addr, refusal,
                                 sd_now_us());
                pos += SD_FRAME_HDR_LEN + have;
                /* The reply goes before the payload is drained: the
                 * consumer's io fails now, not at the deadline. */
                if (reply_status(c, &f, -EACCES, &out) < 0) {
                    goto done;
                }
                err = flush_out(c, &out);
                if (err == 0) {
                    err = discard(c->fd, payload - have, start + read_us);
                }
                if (err < 0) {
                    goto done;
                }
                continue;
            }
            c->head_checked = 1;
checked:
            if (!trusted) {
                trusted = 1;
                if (buf_reserve(srv, &in, SD_TCP_RX_BUF_LEN) < 0) {
                    goto done;
                }
            }
            need = SD_FRAME_HDR_LEN + payload;
            if (in.len - pos < need) {
                break;
            }
            c->head_checked = 0;
            if (payload) {
                uint8_t *data = in.data + pos + SD_FRAME_HDR_LEN;

                rc = sd_fauth_verify_payload(&c->rx_key, f.seq, data, f.len,
                                             f.flags & SD_FRAME_SEALED ?
                                             data + f.len : NULL,
                                             payload - f.len, f.ptag);
                if (rc < 0) {
                    refuse_auth(c, &out, rc, "payload tag");
                    goto done;
                }
            }
            if (serve_frame(c, &f, in.data + pos + SD_FRAME_HDR_LEN,
                            &out) < 0) {
                goto done;
            }
            pos += need;
            need = SD_FRAME_HDR_LEN;
        }
        /* Keep the partial frame: its bytes all came with the last recv
         * when a frame before it was complete. */
        memmove(in.data, in.data + pos, in.len - pos);
        in.len -= pos;
        if (in.len && pos) {
            frame_start = last_recv;
        }
        err = flush_out(c, &out);
        if (err < 0) {
            goto done;
        }
        /* Room for the rest of this frame (its header passed the check
         * when need goes past one header), and to batch a trusted
         * connection's next frames. */
        need -= in.len;
        if (trusted && need < SD_TCP_RX_BUF_LEN) {
            need = SD_TCP_RX_BUF_LEN;
        }
        if (buf_reserve(srv, &in, need) < 0) {
            goto done;
        }
        room = in.cap - in.len;
        deadline = in.len ? frame_start + read_us :
                   trusted ? 0 : last_recv + idle_us;
        n = recv_by(c->fd, in.data + in.len, room, deadline);
        if (n < 0) {
            err = (int)n;
            goto done;
        }
        if (in.len == 0) {
            frame_start = sd_now_us();
        }
        last_recv = sd_now_us();
        in.len += (size_t)n;
    }
done:
    if (err == -ETIMEDOUT) {
        sd_limits_refuse(srv->limits, c->addr, SD_REFUSED_DEADLINE,
                         sd_now_us());
    }
    buf_free(srv, &in);
    buf_free(srv, &out);
    sd_fauth_cache_free(&c->rx_keys);
    sd_fauth_cache_free(&c->tx_keys);
    OPENSSL_cleanse(c->ikm, SD_KEY_LEN);
    OPENSSL_cleanse(&c->rx_key, sizeof(c->rx_key));
    OPENSSL_cleanse(&c->tx_key, sizeof(c->tx_key));
    /* The consumer sees the end now; the descriptor is closed and the
     * connection's slot given back when the thread is reaped. */
    shutdown(c->fd, SHUT_RDWR);
    __atomic_fetch_sub(&srv->threads, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Join the threads of closed connections and give back their slots
 * (srv->lock held). */
static void reap(struct tcp_server *srv, int all)
{
    struct conn **link = &srv->conns;

    while (*link) {
        struct conn *c = *link;

        if (all || __atomic_load_n(&c->finished, __ATOMIC_ACQUIRE)) {
            *link = c->next;
            pthread_join(c->thread, NULL);
            close(c->fd);
            sd_limits_close(srv->limits, c->addr);
            free(c);
        } else {
            link = &c->next;
        }
    }
}

/* Start a connection's thread, or close it at once when it is over a cap
 * (counted and reported by the limits) or cannot have one: 0, or the
 * -errno of that (for the acceptor to report). */
static int admit(struct tcp_server *srv, int fd, const struct sockaddr_in *sa)
{
    char addr[INET_ADDRSTRLEN];
    struct conn *c;
    int rc;

    if (sd_limits_open(srv->limits, sa->sin_addr.s_addr, sd_now_us()) < 0) {
        close(fd);
        return 0;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        sd_limits_close(srv->limits, sa->sin_addr.s_addr);
        close(fd);
        return -ENOMEM;
    }
    sd_tcp_sockopt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
    sd_tcp_sockopt(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
    /* A consumer that does not read its replies holds its thread no longer
     * than a frame may take to arrive. */
    sd_tcp_timeout(fd, SO_SNDTIMEO,
                sd_limits_conf(srv->limits)->read_timeout_s * 1000000ULL);
    c->srv = srv;
    c->fd = fd;
    c->addr = sa->sin_addr.s_addr;
    inet_ntop(AF_INET, &sa->sin_addr, addr, sizeof(addr));
    snprintf(c->name, sizeof(c->name), "%s:%u", addr, ntohs(sa->sin_port));
    __atomic_fetch_add(&srv->threads, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&srv->lock);
    rc = pthread_create(&c->thread, NULL, conn_thread, c);
    if (rc != 0) {
        pthread_mutex_unlock(&srv->lock);
        __atomic_fetch_sub(&srv->threads, 1, __ATOMIC_RELAXED);
        sd_limits_close(srv->limits, c->addr);
        close(fd);
        free(c);
        return -rc;
    }
    c->next = srv->conns;
    srv->conns = c;
    pthread_mutex_unlock(&srv->lock);
    sd_log(LOG_DEBUG, "consumer %s connected", c->name);
    return 0;
}

static void *acceptor(void *arg)
{
    struct tcp_server *srv = arg;
    uint64_t next_warning = 0;

    for (;;) {
        struct pollfd pfd = { .fd = srv->fd, .events = POLLIN };
        struct sockaddr_in sa;
        socklen_t sl = sizeof(sa);
        int fd = -1, rc, failed = 0, ready = poll(&pfd, 1, ACCEPT_TICK_MS);
        uint64_t now;

        if (ready > 0) {
            fd = accept4(srv->fd, (struct sockaddr *)&sa, &sl,
                         SOCK_CLOEXEC);
            failed = fd < 0 ? errno : 0;
        }
        pthread_mutex_lock(&srv->lock);
        if (srv->stopping) {
            pthread_mutex_unlock(&srv->lock);
            if (fd >= 0) {
                close(fd);
            }
            return NULL;
        }
        reap(srv, 0);
        pthread_mutex_unlock(&srv->lock);
        now = sd_now_us();
        sd_limits_flush(srv->limits, now);
        rc = fd >= 0 ? admit(srv, fd, &sa) :
             failed != EINTR && failed != EAGAIN &&
             failed != ECONNABORTED ? -failed : 0;
        if (rc < 0) {
            /* Out of descriptors, memory or threads: do not spin, nor log
             * each try. */
            if (now >= next_warning) {
                sd_log(LOG_WARNING, "cannot take a consumer's connection: "
                       "%s", strerror(-rc));
                next_warning = now + REPORT_INTERVAL_US;
            }
            poll(NULL, 0, 100);
        }
    }
}

static void tcp_server_stop(struct sd_server *base)
{
    struct tcp_server *srv = (struct tcp_server *)base;
    struct conn *c;

    pthread_mutex_lock(&srv->lock);
    srv->stopping = 1;
    pthread_mutex_unlock(&srv->lock);
    /* Wakes poll() and accept() (it fails with EINVAL) and every recv(). */
    shutdown(srv->fd, SHUT_RDWR);
    pthread_join(srv->acceptor, NULL);
    close(srv->fd);
    pthread_mutex_lock(&srv->lock);
    for (c = srv->conns; c; c = c->next) {
        shutdown(c->fd, SHUT_RDWR);
    }
    reap(srv, 1);
    pthread_mutex_unlock(&srv->lock);
    pthread_mutex_destroy(&srv->lock);
    /* The counts not reported yet, whatever their interval. */
    sd_limits_flush(srv->limits, UINT64_MAX);
    sd_limits_free(srv->limits);
    /* No connection is left to ask the key service. */
    if (srv->keys.stop) {
        srv->keys.stop(srv->keys.ctx);
    }
    free(srv);
}

void sd_tcp_server_stats(struct sd_server *base,
                         struct sd_tcp_server_stats *out)
{
    struct tcp_server *srv = (struct tcp_server *)base;
    struct sd_limits_stats ls;

    sd_limits_stats(srv->limits, &ls);
    out->conns = ls.conns;
    memcpy(out->refused, ls.refused, sizeof(out->refused));
    out->threads = __atomic_load_n(&srv->threads, __ATOMIC_RELAXED);
    out->buffered = __atomic_load_n(&srv->buffered, __ATOMIC_RELAXED);
}

int sd_tcp_server_start(struct sd_store *store, const char *host,
                        uint16_t port, const struct sd_limits_conf *limits,
                        struct sd_server **out, char *err, size_t errlen)
{
    return sd_tcp_server_start_keys(store, host, port, limits, NULL, out,
                                    err, errlen);
}

int sd_tcp_server_start_keys(struct sd_store *store, const char *host,
                             uint16_t port,
                             const struct sd_limits_conf *limits,
                             const struct sd_key_service *keys,
                             struct sd_server **out, char *err,
                             size_t errlen)
{
    static const struct sd_limits_conf defaults = SD_LIMITS_DEFAULT;
    struct tcp_server *srv;
    struct addrinfo *res;
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int fd, rc;

    if (!limits) {
        limits = &defaults;
    }
    rc = sd_limits_conf_check(limits, err, errlen);
    if (rc < 0) {
        return rc;
    }
    fd = sd_tcp_socket(host, port, 1, &res, err, errlen);
    if (fd < 0) {
        return fd;
    }
    sd_tcp_sockopt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    /* Non-blocking: a connection reset between poll() and accept() must
     * not hold the acceptor. */
    if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
        listen(fd, 128) < 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        rc = -errno;
        freeaddrinfo(res);
        close(fd);
        snprintf(err, errlen, "listen on %s:%u: %s", host, port,
                 strerror(-rc));
        return rc;
    }
    freeaddrinfo(res);

    srv = calloc(1, sizeof(*srv));
    if (!srv) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    rc = sd_limits_new(limits, REPORT_INTERVAL_US, NULL, NULL,
                       &srv->limits);
    if (rc < 0) {
        free(srv);
        close(fd);
        snprintf(err, errlen, "limits: %s", strerror(-rc));
        return rc;
    }
    srv->base.stop = tcp_server_stop;
    srv->base.port = ntohs(sa.sin_port);
    srv->store = store;
    if (keys) {
        srv->keys = *keys;
    }
    srv->fd = fd;
    pthread_mutex_init(&srv->lock, NULL);
    rc = pthread_create(&srv->acceptor, NULL, acceptor, srv);
    if (rc != 0) {
        pthread_mutex_destroy(&srv->lock);
        sd_limits_free(srv->limits);
        free(srv);
        close(fd);
        snprintf(err, errlen, "pthread_create: %s", strerror(rc));
        return -rc;
    }
    sd_log(LOG_INFO, "donor %s on tcp://%s:%u (at most %u connections, "
           "%u per peer; deadlines: %u s idle before a frame is accepted, "
           "%u s for a frame)", keys ? "handshake port" : "service", host,
           srv->base.port, limits->max_conns,
           limits->max_conns_per_peer, limits->idle_timeout_s,
           limits->read_timeout_s);
    *out = &srv->base;
    return 0;
}
