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
 * Frame authentication of the TCP transport against a real donor server
 * and a real consumer (frame_auth.h): no key bytes in anything either
 * side sends; a replayed request, one out of sequence, one replayed from
 * another connection, an altered header and an altered payload are
 * refused and counted by the donor; a reply altered in flight, replayed
 * or out of sequence fails its io with -EBADMSG on the consumer, which
 * closes the connection.  Also the cost of a 4 KiB frame's MACs.
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include "check.h"
#include "frame.h"
#include "frame_auth.h"
#include "key_bytes.h"
#include "raw_peer.h"
#include "store.h"
#include "tcp_internal.h"
#include "transport.h"
#include "util.h"

#define SLAB (1024 * 1024ULL)

static const struct sd_transport *T = &sd_tcp_transport;
static uint8_t grant[SD_UUID_LEN], key[SD_KEY_LEN];

/* A signed WRITE of data to slab 0 at offset, on r, into msg: its
 * length (header and payload). */
static size_t write_frame(struct raw *r, uint64_t offset, const uint8_t *data,
                          size_t len, uint8_t *msg)
{
    struct sd_frame f = { .op = SD_OP_WRITE, .len = (uint32_t)len,
                          .offset = offset, .id = r->tx_seq + 100 };

    memcpy(f.grant, grant, SD_UUID_LEN);
    raw_sign(r, &f, key, SD_FAUTH_C2D, data, len, msg);
    memcpy(msg + SD_FRAME_HDR_LEN, data, len);
    return SD_FRAME_HDR_LEN + len;
}

/* The next reply on r: its header parsed and verified (with payload len
 * bytes into payload), 0 when it verified, -EBADMSG when not, 1 when none
 * came or it did not parse. */
static int read_reply(struct raw *r, struct sd_frame *f, uint8_t *payload,
                      size_t len, uint8_t *raw_out)
{
    uint8_t hdr[SD_FRAME_HDR_LEN];
    struct sd_fauth_key k;
    const char *why;

    sd_tcp_timeout(r->fd, SO_RCVTIMEO, 5000000);
    if (recv(r->fd, hdr, sizeof(hdr), MSG_WAITALL) != sizeof(hdr) ||
        sd_frame_parse(hdr, sizeof(hdr), f, &why) != 0) {
        return 1;
    }
    if (raw_out) {
        memcpy(raw_out, hdr, sizeof(hdr));
    }
    if (sd_frame_payload_len(f) &&
        (sd_frame_payload_len(f) != len ||
         recv(r->fd, payload, len, MSG_WAITALL) != (ssize_t)len)) {
        return 1;
    }
    if (f->seq != r->rx_seq + 1) {
        return -EBADMSG;
    }
    r->rx_seq = f->seq;
    CHECK(!has_key_bytes(hdr, sizeof(hdr), key));
    if (f->op == SD_FRAME_OP_ERROR ||
        sd_fauth_derive(&r->fa, key, grant, SD_FAUTH_D2C, &k) < 0 ||
        sd_fauth_verify(&k, f->seq, hdr) < 0) {
        return -EBADMSG;
    }
    return sd_frame_payload_len(f) ?
           sd_fauth_verify_payload(&k, f->seq, payload, len, NULL, 0,
                                   f->ptag) : 0;
}

/* The status of the ERROR reply the donor closes with, or 1. */
static int closing_error(struct raw *r)
{
    struct sd_frame f;
    uint8_t hdr[SD_FRAME_HDR_LEN];
    const char *why;
    int status;

    sd_tcp_timeout(r->fd, SO_RCVTIMEO, 5000000);
    if (recv(r->fd, hdr, sizeof(hdr), MSG_WAITALL) != sizeof(hdr) ||
        sd_frame_parse(hdr, sizeof(hdr), &f, &why) != 0 ||
        f.op != SD_FRAME_OP_ERROR) {
        return 1;
    }
    status = f.status;
    return ends_within(r->fd, 5000) ? status : 1;
}

static void test_donor_refuses(struct sd_store *store, uint8_t mac)
{
    struct sd_server *srv;
    char err[SD_ERRLEN];
    uint8_t page[4096], back[4096], msg[SD_FRAME_HDR_LEN + 4096];
    uint8_t first[SD_FRAME_HDR_LEN + 4096], reply[SD_FRAME_HDR_LEN];
    struct sd_frame f;
    struct raw r, r2;
    size_t n, first_len;
    uint64_t auth;
    uint16_t port;

    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, NULL, &srv, err,
                              sizeof(err)) == 0);
    port = sd_server_port(srv);
    memset(page, 0x5c, sizeof(page));

    /* A signed WRITE and READ: served, replies verify, no key bytes. */
    CHECK(raw_hello(&r, raw_connect(port, 2), mac) == 0);
    CHECK(r.fa.mac == mac);
    first_len = write_frame(&r, 0, page, sizeof(page), first);
    CHECK(!has_key_bytes(first, first_len, key));
    CHECK(send(r.fd, first, first_len, MSG_NOSIGNAL) == (ssize_t)first_len);
    CHECK(read_reply(&r, &f, NULL, 0, reply) == 0 && f.status == 0);
    f = (struct sd_frame){ .op = SD_OP_READ, .len = sizeof(back) };
    memcpy(f.grant, grant, SD_UUID_LEN);
    raw_sign(&r, &f, key, SD_FAUTH_C2D, NULL, 0, msg);
    CHECK(send(r.fd, msg, SD_FRAME_HDR_LEN, MSG_NOSIGNAL) ==
          SD_FRAME_HDR_LEN);
    CHECK(read_reply(&r, &f, back, sizeof(back), NULL) == 0);
    CHECK(f.status == 0 && memcmp(back, page, sizeof(page)) == 0);
    CHECK(!has_key_bytes(back, sizeof(back), key));

    /* The first frame again (a replay): refused, counted, closed. */
    auth = stats_of(srv).refused[SD_REFUSED_AUTH];
    CHECK(send(r.fd, first, first_len, MSG_NOSIGNAL) == (ssize_t)first_len);
    CHECK(closing_error(&r) == -EBADMSG);
    CHECK(stats_of(srv).refused[SD_REFUSED_AUTH] == auth + 1);
    close(r.fd);

    /* The same frame on another connection, where it is next in
     * sequence: its tag is of the other connection's key. */
    CHECK(raw_hello(&r2, raw_connect(port, 2), mac) == 0);
    CHECK(send(r2.fd, first, first_len, MSG_NOSIGNAL) == (ssize_t)first_len);
    r2.tx_seq++;
    CHECK(read_reply(&r2, &f, NULL, 0, NULL) == -EBADMSG);
    CHECK(f.status == -EACCES);         /* unsigned: refused alone */
    CHECK(stats_of(srv).refused[SD_REFUSED_AUTH] == auth + 2);

    /* An altered header (another offset): refused alone, counted, not
     * written; the connection serves on. */
    memset(page, 0x6d, sizeof(page));
    n = write_frame(&r2, 4096, page, sizeof(page), msg);
    msg[48] ^= 0x10;
    CHECK(send(r2.fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n);
    CHECK(read_reply(&r2, &f, NULL, 0, NULL) == -EBADMSG &&
          f.status == -EACCES);
    CHECK(stats_of(srv).refused[SD_REFUSED_AUTH] == auth + 3);
    CHECK(sd_store_access(store, SD_OP_READ, grant, key, 0, 4096 + 4096, back,
                          sizeof(back), NULL) == 0);
    CHECK(back[0] != 0x6d);

    /* An altered payload: refused, counted, closed, not written. */
    n = write_frame(&r2, 8192, page, sizeof(page), msg);
    msg[SD_FRAME_HDR_LEN + 10] ^= 1;
    CHECK(send(r2.fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n);
    CHECK(closing_error(&r2) == -EBADMSG);
    CHECK(stats_of(srv).refused[SD_REFUSED_AUTH] == auth + 4);
    CHECK(sd_store_access(store, SD_OP_READ, grant, key, 0, 8192, back,
                          sizeof(back), NULL) == 0);
    CHECK(back[0] != 0x6d);
    close(r2.fd);

    /* A frame that skips a sequence number. */
    CHECK(raw_hello(&r, raw_connect(port, 2), mac) == 0);
    r.tx_seq++;
    n = write_frame(&r, 0, page, sizeof(page), msg);
    CHECK(send(r.fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n);
    CHECK(closing_error(&r) == -EBADMSG);
    CHECK(stats_of(srv).refused[SD_REFUSED_AUTH] == auth + 5);
    close(r.fd);

    /* A HELLO with no MAC in common. */
    CHECK(raw_hello(&r, raw_connect(port, 2), 0x80) == -1);
    close(r.fd);
    sd_server_stop(srv);
}

/* ---- the consumer, against a fake donor that signs its own replies ---- */

struct tio {
    struct sd_io io;
    pthread_mutex_t m;
    pthread_cond_t c;
    int status, calls;
};

static void tio_done(struct sd_io *io, int status)
{
    struct tio *t = (struct tio *)io;

    pthread_mutex_lock(&t->m);
    t->status = status;
    t->calls++;
    pthread_cond_signal(&t->c);
    pthread_mutex_unlock(&t->m);
}

static void tio_read(struct tio *t, void *buf, uint32_t len)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_init(&t->m, NULL);
    pthread_cond_init(&t->c, NULL);
    t->io.op = SD_OP_READ;
    memcpy(t->io.grant, grant, SD_UUID_LEN);
    memcpy(t->io.key, key, SD_KEY_LEN);
    t->io.buf = buf;
    t->io.len = len;
    t->io.done = tio_done;
}

/* Wait up to 10 s for t's completion: its status, or 1000. */
static int tio_wait(struct tio *t)
{
    struct timespec ts;
    int status;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    pthread_mutex_lock(&t->m);
    while (!t->calls &&
           pthread_cond_timedwait(&t->c, &t->m, &ts) == 0) {
        continue;
    }
    status = t->calls == 1 ? t->status : 1000;
    pthread_mutex_unlock(&t->m);
    return status;
}

/* The fake donor reads the consumer's next request and checks it. */
static int take_request(struct raw *d, struct sd_frame *f)
{
    uint8_t hdr[SD_FRAME_HDR_LEN];
    struct sd_fauth_key k;
    const char *why;

    if (recv(d->fd, hdr, sizeof(hdr), MSG_WAITALL) != sizeof(hdr) ||
        sd_frame_parse(hdr, sizeof(hdr), f, &why) != 0 ||
        f->seq != ++d->rx_seq || has_key_bytes(hdr, sizeof(hdr), key) ||
        sd_fauth_derive(&d->fa, key, grant, SD_FAUTH_C2D, &k) < 0) {
        return -1;
    }
    return sd_fauth_verify(&k, f->seq, hdr);
}

/* Its signed reply with payload data[0..len), into msg: the length. */
static size_t make_reply(struct raw *d, const struct sd_frame *req,
                         const uint8_t *data, size_t len, uint8_t *msg)
{
    struct sd_frame f = { .op = req->op, .flags = SD_FRAME_REPLY,
                          .id = req->id, .len = req->len };

    memcpy(f.grant, grant, SD_UUID_LEN);
    raw_sign(d, &f, key, SD_FAUTH_D2C, data, len, msg);
    memcpy(msg + SD_FRAME_HDR_LEN, data, len);
    return SD_FRAME_HDR_LEN + len;
}

enum tamper { NONE, PAYLOAD, HEADER, REPLAY };

/* One READ through a consumer connection to a fake donor whose reply is
 * tampered with as said: the io's status; *alive: the connection's
 * state after. */
static int read_through(enum tamper how, int *alive)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t sl = sizeof(sa);
    struct fake_donor d;
    struct sd_peer *p;
    struct sd_frame req;
    struct tio t;
    char err[SD_ERRLEN];
    uint8_t data[4096], buf[4096], msg[SD_FRAME_HDR_LEN + 4096];
    uint8_t old[SD_FRAME_HDR_LEN + 4096];
    struct sd_io *ios[1];
    size_t n, old_n = 0;
    size_t queued;
    int lfd = socket(AF_INET, SOCK_STREAM, 0), status, fd;

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
          listen(lfd, 1) == 0 &&
          getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
    fake_donor_start(&d, lfd);
    CHECK(T->connect("127.0.0.1", ntohs(sa.sin_port), &p, err,
                     sizeof(err)) == 0);
    fd = fake_donor_join(&d);
    CHECK(d.ok);
    memset(data, 0x42, sizeof(data));

    if (how == REPLAY) {
        /* A first read answered right, whose reply comes again. */
        tio_read(&t, buf, sizeof(buf));
        ios[0] = &t.io;
        CHECK(T->submit(p, ios, 1, &queued) == 0);
        CHECK(take_request(&d.r, &req) == 0);
        old_n = make_reply(&d.r, &req, data, sizeof(data), old);
        CHECK(send(fd, old, old_n, MSG_NOSIGNAL) == (ssize_t)old_n);
        CHECK(tio_wait(&t) == 0);
    }
    tio_read(&t, buf, sizeof(buf));
    ios[0] = &t.io;
    CHECK(T->submit(p, ios, 1, &queued) == 0);
    CHECK(take_request(&d.r, &req) == 0);
    n = make_reply(&d.r, &req, data, sizeof(data), msg);
    if (how == PAYLOAD) {
        msg[SD_FRAME_HDR_LEN + 100] ^= 1;
    } else if (how == HEADER) {
        msg[48] ^= 1;           /* the offset */
    } else if (how == REPLAY) {
        /* The old reply, its id made this request's (so only its tag
         * and sequence number can tell). */
        memcpy(msg, old, old_n);
        memcpy(msg + 8, &req.id, 8);
    }
    CHECK(send(fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n);
    status = tio_wait(&t);
    if (status == 0) {
        CHECK(memcmp(buf, data, sizeof(data)) == 0);
    }
    usleep(50000);
    *alive = T->alive(p);
    T->close(p);
    close(fd);
    close(lfd);
    return status;
}

static void test_consumer_detects(void)
{
    int alive;

    CHECK(read_through(NONE, &alive) == 0 && alive == 1);
    CHECK(read_through(PAYLOAD, &alive) == -EBADMSG && alive == 0);
    CHECK(read_through(HEADER, &alive) == -EBADMSG && alive == 0);
    /* Out of sequence: the connection ends, failing what is in flight. */
    CHECK(read_through(REPLAY, &alive) == -ECONNRESET && alive == 0);
}

/* What the MACs of a 4 KiB frame cost (header and payload tags), signed
 * and verified, printed for the record. */
static void bench(uint8_t mac, const char *name)
{
    struct sd_fauth_conn conn = { .mac = mac };
    struct sd_fauth_key k;
    struct sd_frame f = { .op = SD_OP_WRITE, .len = 4096 };
    uint8_t page[4096] = { 1 }, hdr[SD_FRAME_HDR_LEN];
    enum { N = 20000 };
    uint64_t start, us;
    int i, bad = 0;

    CHECK(sd_fauth_derive(&conn, key, grant, SD_FAUTH_C2D, &k) == 0);
    start = sd_now_us();
    for (i = 0; i < N; i++) {
        f.seq = (uint64_t)i + 1;
        bad |= sd_fauth_payload_tag(&k, f.seq, page, sizeof(page), NULL, 0,
                                    f.ptag);
        sd_frame_encode(&f, hdr);
        bad |= sd_fauth_sign(&k, f.seq, hdr);
        bad |= sd_fauth_verify(&k, f.seq, hdr);
        bad |= sd_fauth_verify_payload(&k, f.seq, page, sizeof(page), NULL, 0,
                                       f.ptag);
    }
    us = sd_now_us() - start;
    CHECK(bad == 0);
    fprintf(stderr, "  %s: %.2f us per 4 KiB frame, signed and verified\n",
            name, (double)us / N);
}

int main(void)
{
    struct sd_store *store;
    uint32_t idx = 0;
    uint64_t addr;
    size_t done;
    int i;

    sd_log_level = LOG_CRIT;    /* the faults below are logged on purpose */
    for (i = 0; i < SD_UUID_LEN; i++) {
        grant[i] = (uint8_t)(i * 13 + 1);
    }
    for (i = 0; i < SD_KEY_LEN; i++) {
        key[i] = (uint8_t)(i * 29 + 5);
    }
    if (sd_store_new(8 * SLAB, &store) != 0 ||
        sd_store_alloc(store, grant, key, SLAB, &idx, 1, &addr, &done) != 0) {
        fprintf(stderr, "cannot make the store\n");
        return 2;
    }
    test_donor_refuses(store, SD_FAUTH_HMAC);
    if (sd_fauth_macs() & SD_FAUTH_AEGIS) {
        test_donor_refuses(store, SD_FAUTH_AEGIS);
        bench(SD_FAUTH_AEGIS, "AEGIS-256X2");
    }
    bench(SD_FAUTH_HMAC, "HMAC-SHA256");
    test_consumer_detects();
    sd_store_free(store);
    return check_summary();
}
