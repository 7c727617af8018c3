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
 * Tests of the TCP transport against a real donor server on 127.0.0.1:
 * round trips, bursts of ios in one submit, many ios in flight from
 * several threads, the donor's refusals (-EACCES, -ENOENT, -ERANGE),
 * large ios, sealed ios (pages and their seals), a garbage frame, and
 * faults: a donor that never answers
 * (-ETIMEDOUT), a donor that goes away (-ECONNRESET, alive() 0), close()
 * with ios in flight and from a done() callback.  Also endpoint parsing.
 * Bounded before trusted: the donor's connection caps, its deadlines, no
 * payload memory before a header's authentication, and the rate-limited
 * reports of what it refused.
 * Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "check.h"
#include "io_waiter.h"
#include "frame.h"
#include "raw_peer.h"
#include "store.h"
#include "tcp_internal.h"
#include "transport.h"
#include "util.h"

#define SLAB (1024 * 1024ULL)
#define NSLABS 8

static const struct sd_transport *T = &sd_tcp_transport;

static void tio_prep(struct tio *t, struct waiter *w, int op,
                     const uint8_t *grant, const uint8_t *key, uint32_t slab,
                     uint64_t offset, void *buf, uint32_t len)
{
    memset(t, 0, sizeof(*t));
    t->io.op = op;
    memcpy(t->io.grant, grant, SD_UUID_LEN);
    memcpy(t->io.key, key, SD_KEY_LEN);
    t->io.slab = slab;
    t->io.offset = offset;
    t->io.buf = buf;
    t->io.len = len;
    t->io.done = tio_done;
    t->w = w;
    t->status = 1;
}

/* Submit one io; 0, or -errno when it was not queued. */
static int submit1(struct sd_peer *p, struct sd_io *io)
{
    size_t queued;

    return T->submit(p, &io, 1, &queued);
}

/* Count t as pending on its waiter and submit it; when it was not queued,
 * complete it here with fail_status.  0 when queued. */
static int submit_counted(struct sd_peer *p, struct tio *t, int fail_status)
{
    pthread_mutex_lock(&t->w->m);
    t->w->pending++;
    pthread_mutex_unlock(&t->w->m);
    if (submit1(p, &t->io) != 0) {
        tio_done(&t->io, fail_status);
        return -1;
    }
    return 0;
}

/* Submit and wait for one io; its status (or the submit error). */
static int run_io(struct sd_peer *p, int op, const uint8_t *grant,
                  const uint8_t *key, uint32_t slab, uint64_t offset,
                  void *buf, uint32_t len)
{
    struct waiter w;
    struct tio t;
    int rc;

    waiter_init(&w);
    tio_prep(&t, &w, op, grant, key, slab, offset, buf, len);
    w.pending = 1;
    rc = submit1(p, &t.io);
    if (rc < 0) {
        return rc;
    }
    if (!wait_pending(&w, 0, 10)) {
        return 1000;    /* never completed */
    }
    return t.calls == 1 ? t.status : 2000;
}

/* ---- a donor with one grant ---- */

static uint8_t grant[SD_UUID_LEN], key[SD_KEY_LEN], wrong[SD_KEY_LEN];

static struct sd_store *make_store(void)
{
    struct sd_store *s;
    uint32_t idx[NSLABS];
    uint64_t addrs[NSLABS];
    size_t done, i;

    for (i = 0; i < NSLABS; i++) {
        idx[i] = (uint32_t)i;
    }
    for (i = 0; i < SD_UUID_LEN; i++) {
        grant[i] = (uint8_t)(i * 17 + 3);
    }
    for (i = 0; i < SD_KEY_LEN; i++) {
        key[i] = (uint8_t)(i * 29 + 5);
    }
    memcpy(wrong, key, SD_KEY_LEN);
    wrong[0] ^= 0x40;
    if (sd_store_new(NSLABS * SLAB, &s) != 0 ||
        sd_store_alloc(s, grant, key, SLAB, idx, NSLABS, addrs, &done) != 0 || done != NSLABS) {
        fprintf(stderr, "cannot make the store\n");
        exit(2);
    }
    return s;
}

static void test_basic(struct sd_peer *p)
{
    char in[8192], out[8192];
    size_t i;

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (char)(i * 7);
    }
    CHECK(T->alive(p) == 1);
    CHECK(run_io(p, SD_OP_WRITE, grant, key, 3, 4096, in, sizeof(in)) == 0);
    memset(out, 0, sizeof(out));
    CHECK(run_io(p, SD_OP_READ, grant, key, 3, 4096, out, sizeof(out)) == 0);
    CHECK(memcmp(in, out, sizeof(in)) == 0);
    /* A zero-length io is a no-op that still completes. */
    CHECK(run_io(p, SD_OP_READ, grant, key, 3, 0, out, 0) == 0);

    /* The donor's refusals come back as the io's status. */
    memset(out, 0x5a, sizeof(out));
    CHECK(run_io(p, SD_OP_READ, grant, wrong, 3, 4096, out, 4096) == -EACCES);
    CHECK(out[0] == 0x5a);     /* nothing was read into it */
    CHECK(run_io(p, SD_OP_WRITE, grant, wrong, 3, 4096, out, 4096) ==
          -EACCES);
    CHECK(run_io(p, SD_OP_READ, grant, key, 3, 4096, out, sizeof(out)) == 0);
    CHECK(memcmp(in, out, sizeof(in)) == 0);    /* the refused write did
                                                 * not land */
    CHECK(run_io(p, SD_OP_READ, grant, key, NSLABS, 0, out, 4096) ==
          -ENOENT);
    CHECK(run_io(p, SD_OP_READ, grant, key, 1, SLAB - 100, out, 4096) ==
          -ERANGE);
    /* Ios the transport cannot carry are not queued. */
    CHECK(run_io(p, 7, grant, key, 1, 0, out, 16) == -EINVAL);
    CHECK(run_io(p, SD_OP_READ, grant, key, 1, 0, out,
                 SD_FRAME_MAX_LEN + 1) == -EINVAL);
    CHECK(run_io(p, SD_OP_READ, grant, key, 1, UINT64_MAX - 2, out, 16) ==
          -EINVAL);
    CHECK(T->alive(p) == 1);
}

/* Sealed ios: the seals travel after the pages both ways, land beside
 * them in the donor's store, and come back with them, for a small io and
 * one larger than a receive buffer; unaligned ones are not queued. */
static void test_sealed(struct sd_peer *p, struct sd_store *store)
{
    enum { BIG = 1 << 20 };
    static uint8_t in[BIG], out[BIG], sin[BIG / 4096 * SD_SEAL_LEN],
        sout[BIG / 4096 * SD_SEAL_LEN], direct[3 * SD_SEAL_LEN];
    struct waiter w;
    struct tio t;
    size_t i;
    int ok;

    for (i = 0; i < sizeof(in); i++) {
        in[i] = (uint8_t)(i * 13 + 1);
    }
    for (i = 0; i < sizeof(sin); i++) {
        sin[i] = (uint8_t)(i * 5 + 2);
    }
    waiter_init(&w);
    tio_prep(&t, &w, SD_OP_WRITE, grant, key, 2, 8192, in, 3 * 4096);
    t.io.seals = sin;
    ok = submit_counted(p, &t, -EIO) == 0 && wait_pending(&w, 0, 10);
    CHECK(ok && t.status == 0);
    CHECK(sd_store_access(store, SD_OP_READ, grant, key, 2, 8192, out,
                          3 * 4096, direct) == 0);
    CHECK(memcmp(out, in, 3 * 4096) == 0);
    CHECK(memcmp(direct, sin, sizeof(direct)) == 0);

    memset(out, 0, sizeof(out));
    tio_prep(&t, &w, SD_OP_READ, grant, key, 2, 8192, out, 3 * 4096);
    t.io.seals = sout;
    ok = submit_counted(p, &t, -EIO) == 0 && wait_pending(&w, 0, 10);
    CHECK(ok && t.status == 0);
    CHECK(memcmp(out, in, 3 * 4096) == 0);
    CHECK(memcmp(sout, sin, 3 * SD_SEAL_LEN) == 0);

    /* Larger than what one recv() brings in. */
    tio_prep(&t, &w, SD_OP_WRITE, grant, key, 4, 0, in, BIG);
    t.io.seals = sin;
    ok = submit_counted(p, &t, -EIO) == 0 && wait_pending(&w, 0, 10);
    CHECK(ok && t.status == 0);
    memset(out, 0, sizeof(out));
    memset(sout, 0, sizeof(sout));
    tio_prep(&t, &w, SD_OP_READ, grant, key, 4, 0, out, BIG);
    t.io.seals = sout;
    ok = submit_counted(p, &t, -EIO) == 0 && wait_pending(&w, 0, 10);
    CHECK(ok && t.status == 0);
    CHECK(memcmp(out, in, BIG) == 0 && memcmp(sout, sin, sizeof(sin)) == 0);

    /* A refused sealed read: a status and no payload. */
    tio_prep(&t, &w, SD_OP_READ, grant, wrong, 4, 0, out, 4096);
    t.io.seals = sout;
    ok = submit_counted(p, &t, -EIO) == 0 && wait_pending(&w, 0, 10);
    CHECK(ok && t.status == -EACCES);

    tio_prep(&t, &w, SD_OP_READ, grant, key, 4, 100, out, 4096);
    t.io.seals = sout;
    CHECK(submit1(p, &t.io) == -EINVAL);
    tio_prep(&t, &w, SD_OP_WRITE, grant, key, 4, 0, out, 4000);
    t.io.seals = sout;
    CHECK(submit1(p, &t.io) == -EINVAL);
    CHECK(T->alive(p) == 1);
}

/* Sealed reads answered together: the receiver sends what waits on the
 * pages it opened (the batch's deferred work) every few pages, not once
 * for all of a buffer's replies.  Each io's done() counts itself and
 * defers the reset of that count to the batch; the count never passes the
 * receiver's limit of 4 pages between two flushes.  (When the replies come
 * in in several reads the count stays low anyway: this can fail only the
 * other way.) */
static int since_flush, most_since_flush;

static void flushed(void *arg)
{
    (void)arg;
    since_flush = 0;
}

static void counted_done(struct sd_io *io, int status)
{
    if (++since_flush > most_since_flush) {
        most_since_flush = since_flush;
    }
    sd_batch_defer(flushed, NULL);
    tio_done(io, status);
}

static void test_sealed_flushes(struct sd_peer *p)
{
    enum { N = 32 };
    static uint8_t back[N][4096], seals[N][SD_SEAL_LEN];
    struct sd_io *ios[N];
    struct tio t[N];
    struct waiter w;
    size_t queued, i;
    int ok = 1;

    waiter_init(&w);
    for (i = 0; i < N; i++) {
        tio_prep(&t[i], &w, SD_OP_READ, grant, key, 4, i * 4096, back[i],
                 4096);
        t[i].io.seals = seals[i];
        t[i].io.done = counted_done;
        ios[i] = &t[i].io;
    }
    w.pending = N;
    CHECK(T->submit(p, ios, N, &queued) == 0 && queued == N);
    CHECK(wait_pending(&w, 0, 10));
    for (i = 0; i < N; i++) {
        ok &= t[i].calls == 1 && t[i].status == 0;
    }
    CHECK(ok);
    CHECK(most_since_flush >= 1 && most_since_flush <= 4);
}

/* Ios submitted together: more than one sendmsg's worth all complete and
 * read back; an io the transport cannot carry stops the burst there, the
 * ones before it queued and completed, the ones after it untouched. */
static void test_batch(struct sd_peer *p)
{
    enum { N = 100, LEN = 512 };
    static char bufs[N][LEN], back[N][LEN];
    struct sd_io *ios[N];
    struct tio t[N];
    struct waiter w;
    size_t queued, i;
    int ok = 1;

    for (int op = SD_OP_WRITE; ; op = SD_OP_READ) {
        waiter_init(&w);
        for (i = 0; i < N; i++) {
            memset(bufs[i], (int)i + 1, LEN);
            tio_prep(&t[i], &w, op, grant, key, 2, i * LEN,
                     op == SD_OP_WRITE ? bufs[i] : back[i], LEN);
            ios[i] = &t[i].io;
        }
        w.pending = N;
        CHECK(T->submit(p, ios, N, &queued) == 0);
        CHECK(queued == N);
        CHECK(wait_pending(&w, 0, 10));
        for (i = 0; i < N; i++) {
            ok &= t[i].calls == 1 && t[i].status == 0;
        }
        if (op == SD_OP_READ) {
            break;
        }
    }
    CHECK(ok);
    CHECK(memcmp(bufs, back, sizeof(bufs)) == 0);

    waiter_init(&w);
    for (i = 0; i < 3; i++) {
        tio_prep(&t[i], &w, SD_OP_READ, grant, key, 2, 0, back[i], LEN);
    }
    t[1].io.op = 7;
    w.pending = 1;
    CHECK(T->submit(p, ios, 3, &queued) == -EINVAL);
    CHECK(queued == 1);
    CHECK(wait_pending(&w, 0, 10));
    CHECK(t[0].calls == 1 && t[0].status == 0);
    CHECK(t[1].calls == 0 && t[2].calls == 0);
}

static void test_large(struct sd_peer *p)
{
    uint32_t len = (uint32_t)SLAB;      /* bigger than any socket buffer */
    unsigned char *in = malloc(len), *out = malloc(len);
    uint32_t i;

    for (i = 0; i < len; i++) {
        in[i] = (unsigned char)(i * 13 + (i >> 12));
    }
    CHECK(run_io(p, SD_OP_WRITE, grant, key, 6, 0, in, len) == 0);
    memset(out, 0, len);
    CHECK(run_io(p, SD_OP_READ, grant, key, 6, 0, out, len) == 0);
    CHECK(memcmp(in, out, len) == 0);
    free(in);
    free(out);
}

/* Several threads, each keeping QD ios in flight on the shared peer. */
#define THREADS 4
#define QD 32
#define ROUNDS 60

struct loader {
    struct sd_peer *p;
    int id;
    int errors;
};

static void *loader_main(void *arg)
{
    struct loader *l = arg;
    static __thread unsigned char bufs[QD][4096], back[QD][4096];
    struct waiter w;
    struct tio t[QD];
    int r, i;

    waiter_init(&w);
    for (r = 0; r < ROUNDS; r++) {
        /* QD writes in flight, then QD reads of the same pages. */
        for (i = 0; i < QD; i++) {
            uint64_t off = (uint64_t)((r * QD + i) % 256) * 4096;

            memset(bufs[i], (l->id * 31 + r * 7 + i) & 0xff, 4096);
            tio_prep(&t[i], &w, SD_OP_WRITE, grant, key, (uint32_t)l->id,
                     off, bufs[i], 4096);
            l->errors += submit_counted(l->p, &t[i], -EIO) != 0;
        }
        if (!wait_pending(&w, 0, 20)) {
            l->errors += 1000;
            return NULL;
        }
        for (i = 0; i < QD; i++) {
            l->errors += t[i].status != 0 || t[i].calls != 1;
            tio_prep(&t[i], &w, SD_OP_READ, grant, key, (uint32_t)l->id,
                     t[i].io.offset, back[i], 4096);
            l->errors += submit_counted(l->p, &t[i], -EIO) != 0;
        }
        if (!wait_pending(&w, 0, 20)) {
            l->errors += 1000;
            return NULL;
        }
        for (i = 0; i < QD; i++) {
            l->errors += t[i].status != 0 || t[i].calls != 1 ||
                         memcmp(bufs[i], back[i], 4096) != 0;
        }
    }
    return NULL;
}

static void test_concurrent(struct sd_peer *p)
{
    struct loader l[THREADS];
    pthread_t th[THREADS];
    int i, errors = 0;

    for (i = 0; i < THREADS; i++) {
        l[i] = (struct loader){ .p = p, .id = i };
        pthread_create(&th[i], NULL, loader_main, &l[i]);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        errors += l[i].errors;
    }
    CHECK(errors == 0);
    CHECK(T->alive(p) == 1);
}

/* The server stops under load: every io completes exactly once, with 0 or
 * -ECONNRESET; the peer is then dead and refuses new ios. */
static void test_server_stop(struct sd_peer *p, struct sd_server *srv)
{
    enum { N = 64 };
    static unsigned char bufs[N][64 * 1024];
    struct waiter w;
    struct tio t[N];
    int i, bad = 0, queued = 0;

    waiter_init(&w);
    for (i = 0; i < N; i++) {
        tio_prep(&t[i], &w, SD_OP_READ, grant, key, (uint32_t)(i % NSLABS),
                 0, bufs[i], sizeof(bufs[i]));
        queued += submit_counted(p, &t[i], -ECONNRESET) == 0;
        if (i == N / 2) {
            sd_server_stop(srv);
        }
    }
    CHECK(queued >= N / 2);
    CHECK(wait_pending(&w, 0, 10));
    for (i = 0; i < N; i++) {
        bad += t[i].calls != 1 ||
               (t[i].status != 0 && t[i].status != -ECONNRESET);
    }
    CHECK(bad == 0);
    /* The receiver notices within its tick. */
    for (i = 0; i < 100 && T->alive(p); i++) {
        usleep(20000);
    }
    CHECK(T->alive(p) == 0);
    CHECK(run_io(p, SD_OP_READ, grant, key, 0, 0, bufs[0], 16) ==
          -ECONNRESET);
}

/* ---- a fake donor that accepts and never answers ---- */

static int silent_listen(uint16_t *port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, 4) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        perror("silent donor");
        exit(2);
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* Connect *p to the silent donor listening on lfd (port) and submit n
 * 64-byte ios of op into t and buf, which it never answers; the first
 * io completes through first_done when that is not NULL.  Returns the
 * donor's end of the connection. */
static int submit_unanswered(int lfd, uint16_t port, struct sd_peer **p,
                             struct waiter *w, struct tio *t,
                             char (*buf)[64], int n, int op,
                             void (*first_done)(struct sd_io *, int))
{
    struct fake_donor d;
    char err[SD_ERRLEN];
    int cfd, i;

    fake_donor_start(&d, lfd);
    CHECK(T->connect("127.0.0.1", port, p, err, sizeof(err)) == 0);
    cfd = fake_donor_join(&d);
    for (i = 0; i < n; i++) {
        tio_prep(&t[i], w, op, grant, key, 0, 0, buf[i], 64);
        if (i == 0 && first_done) {
            t[i].io.done = first_done;
        }
        w->pending++;
        CHECK(submit1(*p, &t[i].io) == 0);
    }
    return cfd;
}

static void test_timeout(void)
{
    uint16_t port;
    int lfd = silent_listen(&port), cfd;
    struct sd_peer *p;
    struct fake_donor d;
    char err[SD_ERRLEN], buf[64];
    time_t start;
    int rc;

    fake_donor_start(&d, lfd);
    CHECK(T->connect("127.0.0.1", port, &p, err, sizeof(err)) == 0);
    cfd = fake_donor_join(&d);
    start = time(NULL);
    rc = run_io(p, SD_OP_READ, grant, key, 0, 0, buf, sizeof(buf));
    CHECK(rc == -ETIMEDOUT);
    CHECK(time(NULL) - start >= 4 && time(NULL) - start <= 8);
    CHECK(T->alive(p) == 1);    /* the connection itself is still up */
    T->close(p);
    close(cfd);
    close(lfd);
}

/* The donor's end closes with ios in flight. */
static void test_donor_gone(void)
{
    uint16_t port;
    int lfd = silent_listen(&port), i;
    struct sd_peer *p;
    char buf[8][64];
    struct waiter w;
    struct tio t[8];

    waiter_init(&w);
    close(submit_unanswered(lfd, port, &p, &w, t, buf, 8, SD_OP_READ, NULL));
    CHECK(wait_pending(&w, 0, 5));
    for (i = 0; i < 8; i++) {
        CHECK(t[i].calls == 1 && t[i].status == -ECONNRESET);
    }
    CHECK(T->alive(p) == 0);
    T->close(p);
    close(lfd);
}

/* close() with ios in flight fails them; close() from done() works. */
static struct sd_peer *closing_peer;

static void close_in_done(struct sd_io *io, int status)
{
    T->close(closing_peer);
    tio_done(io, status);
}

static void test_close(void)
{
    uint16_t port;
    int lfd = silent_listen(&port), cfd, i;
    struct sd_peer *p;
    char buf[4][64];
    struct waiter w;
    struct tio t[4];

    waiter_init(&w);
    cfd = submit_unanswered(lfd, port, &p, &w, t, buf, 4, SD_OP_WRITE, NULL);
    T->close(p);
    CHECK(w.pending == 0);
    for (i = 0; i < 4; i++) {
        CHECK(t[i].calls == 1 && t[i].status == -ECONNRESET);
    }
    close(cfd);

    /* The first completion closes the peer from the receiver thread. */
    close(submit_unanswered(lfd, port, &closing_peer, &w, t, buf, 4,
                            SD_OP_READ, close_in_done));
    CHECK(wait_pending(&w, 0, 5));
    for (i = 0; i < 4; i++) {
        CHECK(t[i].calls == 1 && t[i].status == -ECONNRESET);
    }
    close(lfd);
}

/* A consumer that speaks garbage gets an ERROR reply and is hung up on. */
static void test_garbage(uint16_t port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    uint8_t junk[SD_FRAME_HDR_LEN], reply[SD_FRAME_HDR_LEN + 1];
    struct sd_frame f;
    const char *why;
    ssize_t n, got = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    memset(junk, 'G', sizeof(junk));
    CHECK(write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
    while ((n = read(fd, reply + got, sizeof(reply) - (size_t)got)) > 0) {
        got += n;
    }
    CHECK(got == SD_FRAME_HDR_LEN);     /* one reply, then end of stream */
    CHECK(sd_frame_parse(reply, (size_t)got, &f, &why) == 0);
    CHECK(f.op == SD_FRAME_OP_ERROR && f.status == -EPROTO);
    close(fd);
}

/* ---- bounded before trusted ---- */

#define WAIT_UNTIL(cond) ({                                     \
        int waited_;                                            \
        for (waited_ = 0; waited_ < 500 && !(cond); waited_++) { \
            usleep(10000);                                      \
        }                                                       \
        (cond); })

/* A raw consumer's connection from 127.0.0.<host>, past its HELLO. */
static void raw_open(struct raw *r, uint16_t port, int host)
{
    CHECK(raw_hello(r, raw_connect(port, host), SD_FAUTH_HMAC) == 0);
}

/* Send the first bytes of a request signed with the key of grant g derived
 * from k (its payload tag left zero). */
static void send_header(struct raw *r, int op, const uint8_t *g,
                        const uint8_t *k, uint32_t slab, uint32_t len,
                        size_t bytes)
{
    struct sd_frame f = { .op = (uint8_t)op, .slab = slab, .len = len };
    uint8_t hdr[SD_FRAME_HDR_LEN];

    memcpy(f.grant, g, SD_UUID_LEN);
    raw_sign(r, &f, k, SD_FAUTH_C2D, NULL, 0, hdr);
    CHECK(send(r->fd, hdr, bytes, MSG_NOSIGNAL) == (ssize_t)bytes);
}

/* The status of the next reply on fd (waiting up to 5 s), or 1 when none
 * came. */
static int reply_status_of(int fd, void *payload, size_t len)
{
    uint8_t hdr[SD_FRAME_HDR_LEN];
    struct sd_frame f;
    const char *why;

    sd_tcp_timeout(fd, SO_RCVTIMEO, 5000000);
    if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != sizeof(hdr) ||
        sd_frame_parse(hdr, sizeof(hdr), &f, &why) != 0) {
        return 1;
    }
    if (f.status == 0 && len &&
        recv(fd, payload, len, MSG_WAITALL) != (ssize_t)len) {
        return 1;
    }
    return f.status;
}

/* Connections over the caps, per source address and in all, are closed
 * at accept and counted; a slot given back is taken again; the caps hold
 * the threads. */
static void test_caps(struct sd_store *store)
{
    const struct sd_limits_conf conf = { 4, 2, 300, 10 };
    struct sd_server *srv;
    char err[SD_ERRLEN];
    int a[3], b[2], c, i;
    uint16_t port;

    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, &conf, &srv, err,
                              sizeof(err)) == 0);
    port = sd_server_port(srv);
    for (i = 0; i < 3; i++) {
        a[i] = raw_connect(port, 2);
    }
    CHECK(ends_within(a[2], 5000));         /* the third from .2 */
    CHECK(WAIT_UNTIL(stats_of(srv).conns == 2));
    for (i = 0; i < 2; i++) {
        b[i] = raw_connect(port, 3);
    }
    CHECK(WAIT_UNTIL(stats_of(srv).conns == 4));
    c = raw_connect(port, 4);               /* over the total */
    CHECK(ends_within(c, 5000));
    close(c);
    CHECK(stats_of(srv).refused[SD_REFUSED_CONN] == 2);
    CHECK(stats_of(srv).threads <= conf.max_conns);
    CHECK(!ends_within(a[0], 100) && !ends_within(b[1], 100));

    /* A slot given back is another's. */
    close(a[0]);
    CHECK(WAIT_UNTIL(stats_of(srv).threads == 3));
    c = raw_connect(port, 4);
    CHECK(WAIT_UNTIL(stats_of(srv).conns == 4));
    CHECK(!ends_within(c, 100));
    CHECK(stats_of(srv).refused[SD_REFUSED_CONN] == 2);
    sd_server_stop(srv);
    CHECK(ends_within(c, 5000));
    close(c);
    close(a[1]);
    close(a[2]);
    close(b[0]);
    close(b[1]);
}

/* A connection that sends nothing before a frame of it is accepted, and a
 * frame cut short, are closed at their deadlines; a trusted connection
 * may idle. */
static void test_deadlines(struct sd_store *store)
{
    const struct sd_limits_conf conf = { 16, 16, 1, 1 };
    struct sd_server *srv;
    struct sd_peer *p;
    char err[SD_ERRLEN], buf[128];
    uint8_t hello_msg[SD_FRAME_HDR_LEN] = { 0 };
    struct raw payload_cut;
    int idle, cut;
    uint64_t start;
    uint16_t port;

    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, &conf, &srv, err,
                              sizeof(err)) == 0);
    port = sd_server_port(srv);
    CHECK(T->connect("127.0.0.1", port, &p, err, sizeof(err)) == 0);
    CHECK(run_io(p, SD_OP_READ, grant, key, 0, 0, buf, sizeof(buf)) == 0);
    start = sd_now_us();
    idle = raw_connect(port, 5);
    cut = raw_connect(port, 6);
    sd_hello_encode(0, SD_FAUTH_HMAC, hello_msg + 32, hello_msg);
    CHECK(send(cut, hello_msg, SD_FRAME_HDR_LEN / 2, MSG_NOSIGNAL) ==
          SD_FRAME_HDR_LEN / 2);
    raw_open(&payload_cut, port, 7);
    send_header(&payload_cut, SD_OP_WRITE, grant, key, 0, 4096,
                SD_FRAME_HDR_LEN);
    CHECK(send(payload_cut.fd, buf, 100, MSG_NOSIGNAL) == 100);
    CHECK(ends_within(idle, 5000));
    CHECK(ends_within(cut, 5000));
    CHECK(ends_within(payload_cut.fd, 5000));
    CHECK(sd_now_us() - start >= 1000000);
    CHECK(stats_of(srv).refused[SD_REFUSED_DEADLINE] == 3);
    /* The trusted connection outlived the idle deadline. */
    CHECK(T->alive(p) == 1);
    CHECK(run_io(p, SD_OP_READ, grant, key, 0, 0, buf, sizeof(buf)) == 0);
    T->close(p);
    close(idle);
    close(cut);
    close(payload_cut.fd);
    sd_server_stop(srv);
}

/* Headers announcing the largest WRITE with an unknown grant or a wrong
 * key (a header tag that fails) get -EACCES and no memory for their
 * payload; a refused payload that comes is drained and the connection
 * serves on. */
static void test_no_payload_before_check(struct sd_store *store)
{
    enum { N = 20 };
    struct sd_server *srv;
    char err[SD_ERRLEN], data[4096], back[4096];
    uint8_t nobody[SD_UUID_LEN];
    struct raw r[N], one;
    int i, statuses = 0;
    uint16_t port;

    memset(nobody, 0x77, sizeof(nobody));
    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, NULL, &srv, err,
                              sizeof(err)) == 0);
    port = sd_server_port(srv);
    for (i = 0; i < N; i++) {
        raw_open(&r[i], port, 8 + i % 2);
        send_header(&r[i], SD_OP_WRITE, i % 2 ? grant : nobody,
                    i % 2 ? wrong : key, 0, SD_FRAME_MAX_LEN,
                    SD_FRAME_HDR_LEN);
    }
    for (i = 0; i < N; i++) {
        statuses += reply_status_of(r[i].fd, NULL, 0) == -EACCES;
    }
    CHECK(statuses == N);
    CHECK(stats_of(srv).refused[SD_REFUSED_KEY] == N / 2);
    CHECK(stats_of(srv).refused[SD_REFUSED_AUTH] == N / 2);
    /* A header's worth of buffer each, and their replies'. */
    CHECK(stats_of(srv).buffered <= N * 2 * SD_FRAME_HDR_LEN);
    for (i = 0; i < N; i++) {
        close(r[i].fd);
    }

    /* A refused WRITE's payload that does come is drained; the next
     * frames on the connection are served. */
    memset(data, 0x3c, sizeof(data));
    raw_open(&one, port, 10);
    send_header(&one, SD_OP_WRITE, grant, wrong, 1, sizeof(data),
                SD_FRAME_HDR_LEN);
    CHECK(send(one.fd, data, sizeof(data), MSG_NOSIGNAL) == sizeof(data));
    CHECK(reply_status_of(one.fd, NULL, 0) == -EACCES);
    send_header(&one, SD_OP_READ, grant, key, 1, sizeof(back),
                SD_FRAME_HDR_LEN);
    CHECK(reply_status_of(one.fd, back, sizeof(back)) == 0);
    CHECK(back[0] != 0x3c);             /* the refused write did not land */
    /* A frame that passes is what gives a connection its buffer. */
    CHECK(stats_of(srv).buffered > SD_FRAME_HDR_LEN * 2);
    close(one.fd);
    sd_server_stop(srv);
}

/* ---- the rate-limited reports ---- */

struct reports {
    int lines;
    char peer[32];
    uint64_t counts[SD_REFUSED_KINDS];
};

static void count_report(void *ctx, const char *peer,
                         const uint64_t counts[SD_REFUSED_KINDS])
{
    struct reports *r = ctx;

    r->lines++;
    snprintf(r->peer, sizeof(r->peer), "%s", peer);
    memcpy(r->counts, counts, sizeof(r->counts));
}

static void test_limits(void)
{
    const struct sd_limits_conf conf = { 3, 2, 300, 10 };
    struct sd_limits_conf bad = conf;
    uint32_t a = htonl(0x0a000001), b = htonl(0x0a000002);
    struct sd_limits_stats st;
    struct sd_limits *l;
    struct reports r = { 0 };
    char err[128];
    uint32_t i;

    CHECK(sd_limits_conf_check(&conf, err, sizeof(err)) == 0);
    bad.max_conns_per_peer = 4;
    CHECK(sd_limits_conf_check(&bad, err, sizeof(err)) == -EINVAL);
    CHECK(strstr(err, "--max-connections-per-peer") != NULL);
    bad = conf;
    bad.max_conns = SD_LIMITS_MAX_CONNS + 1;
    CHECK(sd_limits_conf_check(&bad, err, sizeof(err)) == -EINVAL);
    bad = conf;
    bad.read_timeout_s = 0;
    CHECK(sd_limits_conf_check(&bad, err, sizeof(err)) == -EINVAL);
    CHECK(sd_limits_new(&bad, 1000000, count_report, &r, &l) == -EINVAL);

    CHECK(sd_limits_new(&conf, 1000000, count_report, &r, &l) == 0);
    /* The caps: two from a, the total's last from b. */
    CHECK(sd_limits_open(l, a, 0) == 0 && sd_limits_open(l, a, 0) == 0);
    CHECK(sd_limits_open(l, a, 0) == -EUSERS);
    CHECK(sd_limits_open(l, b, 0) == 0);
    CHECK(sd_limits_open(l, b, 0) == -EMFILE);
    sd_limits_close(l, a);
    CHECK(sd_limits_open(l, b, 0) == 0);
    sd_limits_stats(l, &st);
    CHECK(st.conns == 3 && st.refused[SD_REFUSED_CONN] == 2);
    /* a's first refusal was reported at once, b's too. */
    CHECK(r.lines == 2);

    /* A flood within the interval: no line; then one with its count. */
    for (i = 0; i < 10000; i++) {
        sd_limits_refuse(l, a, SD_REFUSED_KEY, 1000 + i);
    }
    sd_limits_flush(l, 999999);
    CHECK(r.lines == 2);
    sd_limits_flush(l, 1000000);
    CHECK(r.lines == 3 && strcmp(r.peer, "10.0.0.1") == 0);
    CHECK(r.counts[SD_REFUSED_KEY] == 10000 && r.counts[SD_REFUSED_CONN] == 0);
    sd_limits_flush(l, 5000000);
    CHECK(r.lines == 3);                    /* nothing since */
    sd_limits_refuse(l, a, SD_REFUSED_FRAME, 5000000);
    CHECK(r.lines == 4 && r.counts[SD_REFUSED_FRAME] == 1);

    /* More peers than the table holds: the rest are "other peers", in
     * one line per interval. */
    r.lines = 0;
    for (i = 0; i < 200; i++) {
        sd_limits_refuse(l, htonl(0x0b000000 + i), SD_REFUSED_DEADLINE,
                         6000000);
    }
    /* The table: 3 + 64 entries, two held by a's and b's connections. */
    CHECK(r.lines == 3 + 64 - 2 + 1);
    CHECK(strcmp(r.peer, "other peers") == 0);
    sd_limits_stats(l, &st);
    CHECK(st.refused[SD_REFUSED_DEADLINE] == 200);
    sd_limits_free(l);
}

static void test_connect_errors(void)
{
    uint16_t port;
    int lfd = silent_listen(&port);
    struct sd_peer *p = NULL;
    char err[SD_ERRLEN] = "";

    close(lfd);         /* nobody listens there now */
    CHECK(T->connect("127.0.0.1", port, &p, err, sizeof(err)) ==
          -ECONNREFUSED);
    CHECK(strstr(err, "127.0.0.1") != NULL);
    CHECK(T->connect("no-such-host.invalid", 7450, &p, err, sizeof(err)) < 0);
    CHECK(strstr(err, "no-such-host.invalid") != NULL);
    CHECK(T->probe(err, sizeof(err)) == 0);
}

static void test_endpoint(void)
{
    static const struct {
        const char *endpoint;
        int rc;
    } bad[] = {
        { "udp://h:1", -EPROTONOSUPPORT },
        { "TCP://h:1", -EPROTONOSUPPORT },
        { "tcp://h:0", -EINVAL },
        { "tcp://h:65536", -EINVAL },
        { "tcp://h:123456", -EINVAL },
        { "tcp://h:", -EINVAL },
        { "tcp://h:+1", -EINVAL },
        { "tcp://h:12x", -EINVAL },
        { "tcp://:7450", -EINVAL },
        { "tcp://h", -EINVAL },
        { "tcp://a b:1", -EINVAL },
        { "tcp://[::1]:1", -EINVAL },
        { "127.0.0.1:7450", -EINVAL },
        { "://h:1", -EINVAL },
        { "", -EINVAL },
    };
    const struct sd_transport *t;
    char host[64];
    uint16_t port = 0;
    size_t i;

    CHECK(sd_endpoint_parse("tcp://127.0.0.1:7450", &t, host, sizeof(host),
                            &port) == 0);
    CHECK(t == &sd_tcp_transport && strcmp(host, "127.0.0.1") == 0 &&
          port == 7450);
    CHECK(sd_endpoint_parse("rdma://donor-2.example:1", &t, host,
                            sizeof(host), &port) == 0);
    CHECK(t == &sd_fabric_transport && strcmp(host, "donor-2.example") == 0 &&
          port == 1);
    CHECK(sd_endpoint_parse("tcp://h:65535", &t, host, sizeof(host),
                            &port) == 0 && port == 65535);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = sd_endpoint_parse(bad[i].endpoint, &t, host, sizeof(host),
                                   &port);

        if (rc != bad[i].rc) {
            fprintf(stderr, "endpoint '%s': %d\n", bad[i].endpoint, rc);
        }
        CHECK(rc == bad[i].rc);
    }
    /* A host longer than the caller's buffer. */
    CHECK(sd_endpoint_parse("tcp://abcdefgh:1", &t, host, 8, &port) ==
          -EINVAL);
    CHECK(sd_endpoint_parse("tcp://abcdefg:1", &t, host, 8, &port) == 0);
}

int main(void)
{
    struct sd_store *store;
    struct sd_server *srv;
    struct sd_peer *p;
    char err[SD_ERRLEN];

    sd_log_level = LOG_ERR;     /* the faults below are logged on purpose */
    test_endpoint();
    store = make_store();
    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, NULL, &srv, err,
                              sizeof(err)) == 0);
    CHECK(sd_server_port(srv) != 0);
    CHECK(T->connect("127.0.0.1", sd_server_port(srv), &p, err,
                     sizeof(err)) == 0);
    test_basic(p);
    test_batch(p);
    test_large(p);
    test_sealed(p, store);
    test_sealed_flushes(p);
    test_concurrent(p);
    test_garbage(sd_server_port(srv));
    test_server_stop(p, srv);
    T->close(p);
    test_caps(store);
    test_deadlines(store);
    test_no_payload_before_check(store);
    sd_store_free(store);
    test_limits();

    test_connect_errors();
    test_donor_gone();
    test_close();
    test_timeout();
    return check_summary();
}
