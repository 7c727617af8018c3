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
 * Tests of the NBD server: the request, option and INFO/GO parsers, and a
 * whole session over a socketpair against a memory backend (handshake
 * options, I/O, error replies that keep the connection, out-of-order
 * completion, short requests, bursts of requests sent in one go), and the
 * listening server's stop.
 * Prints "N passed, N failed".
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "nbd.h"
#include "nbd_client.h"

#define DISK (1U << 20)

/* A memory disk.  With hold_reads set, READs wait until two are held and
 * complete in reverse order. */
struct mem {
    uint8_t data[DISK];
    int hold_reads;
    struct sd_nbd_io *held;
    int flushes, trims, clients;
    size_t max_burst;           /* the most requests handed over at once */
};

static void mem_submit_one(void *ctx, struct sd_nbd_io *io)
{
    struct mem *m = ctx;

    switch (io->type) {
    case NBD_CMD_READ:
        memcpy(io->buf, m->data + io->offset, io->len);
        if (m->hold_reads) {
            if (!m->held) {
                m->held = io;
                return;
            }
            io->done(io, 0);
            m->held->done(m->held, 0);
            m->held = NULL;
            return;
        }
        break;
    case NBD_CMD_WRITE:
        memcpy(m->data + io->offset, io->buf, io->len);
        break;
    case NBD_CMD_FLUSH:
        m->flushes++;
        break;
    case NBD_CMD_TRIM:
        memset(m->data + io->offset, 0, io->len);
        m->trims++;
        break;
    default:
        io->done(io, NBD_EINVAL);
        return;
    }
    io->done(io, 0);
}

static void mem_submit(void *ctx, struct sd_nbd_io **ios, size_t n)
{
    struct mem *m = ctx;
    size_t i;

    if (n > m->max_burst) {
        m->max_burst = n;
    }
    for (i = 0; i < n; i++) {
        mem_submit_one(ctx, ios[i]);
    }
}

static void mem_clients(void *ctx, int delta)
{
    ((struct mem *)ctx)->clients += delta;
}

static struct mem mem;
static const struct sd_nbd_backend backend = {
    .name = "memagg-swap-test", .size = DISK, .ctx = &mem,
    .submit = mem_submit, .clients = mem_clients,
};

static void test_parse_request(void)
{
    struct sd_nbd_request req;
    uint8_t b[28];

    tc_encode_request(b, 1, NBD_CMD_WRITE, 77, 4096, 512);
    CHECK(sd_nbd_parse_request(b, &req) == 0);
    CHECK(req.type == NBD_CMD_WRITE && req.offset == 4096 &&
          req.len == 512 && req.handle == 77 && req.flags == 1);
    b[0] ^= 1;
    CHECK(sd_nbd_parse_request(b, &req) == -EPROTO);
}

static void check(uint16_t type, uint64_t off, uint32_t len,
                  struct sd_nbd_verdict *v)
{
    struct sd_nbd_request req = { .type = type, .offset = off, .len = len };

    sd_nbd_check_request(&req, DISK, v);
}

static void test_check_request(void)
{
    struct sd_nbd_verdict v;

    check(NBD_CMD_READ, 0, DISK, &v);
    CHECK(v.error == 0 && !v.close && !v.drain);
    check(NBD_CMD_READ, DISK, 0, &v);
    CHECK(v.error == 0);
    check(NBD_CMD_READ, DISK - 512, 1024, &v);
    CHECK(v.error == NBD_EINVAL && !v.close);
    /* offset + len wraps around 2^64: still beyond the export. */
    check(NBD_CMD_READ, UINT64_MAX - 10, 4096, &v);
    CHECK(v.error == NBD_EINVAL);
    check(NBD_CMD_READ, 0, SD_NBD_MAX_LEN + 1, &v);
    CHECK(v.error == NBD_EINVAL && !v.close);
    check(NBD_CMD_WRITE, DISK, 4096, &v);
    CHECK(v.error == NBD_EINVAL && v.drain == 4096 && !v.close);
    check(NBD_CMD_WRITE, 0, SD_NBD_MAX_LEN + 1, &v);
    CHECK(v.error == NBD_EINVAL && v.close);
    check(NBD_CMD_TRIM, DISK + 1, 0, &v);
    CHECK(v.error == NBD_EINVAL);
    check(NBD_CMD_FLUSH, UINT64_MAX, UINT32_MAX, &v);
    CHECK(v.error == 0);
    check(NBD_CMD_DISC, 0, 0, &v);
    CHECK(v.close && v.error == 0);
    check(99, 0, 0, &v);
    CHECK(v.error == NBD_EINVAL && !v.close);
    /* Not advertised, so unknown here. */
    check(NBD_CMD_WRITE_ZEROES, 0, 4096, &v);
    CHECK(v.error == NBD_EINVAL);
}

static void test_parse_option_and_info(void)
{
    struct sd_nbd_info_request info;
    uint8_t hdr[16], data[32];
    uint64_t magic = htobe64(NBD_IHAVEOPT);
    uint32_t opt, len, v;
    uint16_t n, t;

    memcpy(hdr, &magic, 8);
    v = htobe32(NBD_OPT_GO);
    memcpy(hdr + 8, &v, 4);
    v = htobe32(9);
    memcpy(hdr + 12, &v, 4);
    CHECK(sd_nbd_parse_option(hdr, &opt, &len) == 0 && opt == NBD_OPT_GO &&
          len == 9);
    hdr[3] = 0;
    CHECK(sd_nbd_parse_option(hdr, &opt, &len) == -EPROTO);

    v = htobe32(3);
    memcpy(data, &v, 4);
    memcpy(data + 4, "abc", 3);
    n = htobe16(1);
    memcpy(data + 7, &n, 2);
    t = htobe16(NBD_INFO_BLOCK_SIZE);
    memcpy(data + 9, &t, 2);
    CHECK(sd_nbd_parse_info(data, 11, &info) == 0 && info.name_len == 3 &&
          memcmp(info.name, "abc", 3) == 0 && info.want_block_size);
    CHECK(sd_nbd_parse_info(data, 10, &info) == -EINVAL);
    CHECK(sd_nbd_parse_info(data, 12, &info) == -EINVAL);
    CHECK(sd_nbd_parse_info(data, 3, &info) == -EINVAL);
    v = htobe32(0xfffffff0);
    memcpy(data, &v, 4);
    CHECK(sd_nbd_parse_info(data, 11, &info) == -EINVAL);
}

static void *serve_thread(void *arg)
{
    sd_nbd_serve_fd(*(int *)arg, &backend);
    return NULL;
}

static int start_session(pthread_t *tid, int *server_fd)
{
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        tc_die("socketpair");
    }
    *server_fd = sv[1];
    pthread_create(tid, NULL, serve_thread, server_fd);
    return sv[0];
}

static void test_handshake_options(void)
{
    uint8_t buf[512], data[64];
    pthread_t tid;
    int fd, sfd;
    uint32_t len, n;

    fd = start_session(&tid, &sfd);
    tc_greet(fd);
    tc_option(fd, NBD_OPT_LIST, NULL, 0);
    CHECK(tc_opt_reply(fd, buf, sizeof(buf), &len) == NBD_REP_SERVER);
    memcpy(&n, buf, 4);
    CHECK(be32toh(n) == strlen(backend.name) &&
          memcmp(buf + 4, backend.name, be32toh(n)) == 0);
    CHECK(tc_opt_reply(fd, buf, sizeof(buf), &len) == NBD_REP_ACK);
    /* NBD_OPT_STRUCTURED_REPLY (8) is not supported. */
    tc_option(fd, 8, NULL, 0);
    CHECK(tc_opt_reply(fd, buf, sizeof(buf), &len) == NBD_REP_ERR_UNSUP);
    /* INFO for another export's name. */
    n = htobe32(5);
    memcpy(data, &n, 4);
    memcpy(data + 4, "other\0\0", 7);
    tc_option(fd, NBD_OPT_INFO, data, 11);
    CHECK(tc_opt_reply(fd, buf, sizeof(buf), &len) == NBD_REP_ERR_UNKNOWN);
    /* Malformed INFO data. */
    tc_option(fd, NBD_OPT_INFO, data, 6);
    CHECK(tc_opt_reply(fd, buf, sizeof(buf), &len) == NBD_REP_ERR_INVALID);
    CHECK(tc_go(fd, "memagg-swap-test") == DISK);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 8, buf) == 0);
    CHECK(mem.clients == 1);
    tc_request(fd, NBD_CMD_DISC, 1, 0, 0, NULL);
    pthread_join(tid, NULL);
    CHECK(mem.clients == 0);
    CHECK(recv(fd, buf, 1, 0) == 0);    /* the server closed */
    close(fd);

    /* ABORT ends the session with an ACK. */
    fd = start_session(&tid, &sfd);
    tc_greet(fd);
    tc_option(fd, NBD_OPT_ABORT, NULL, 0);
    CHECK(tc_opt_reply(fd, buf, sizeof(buf), &len) == NBD_REP_ACK);
    pthread_join(tid, NULL);
    close(fd);

    /* EXPORT_NAME (the oldest way in) with the empty default name. */
    fd = start_session(&tid, &sfd);
    tc_greet(fd);
    tc_option(fd, NBD_OPT_EXPORT_NAME, NULL, 0);
    CHECK(sd_read_full(fd, buf, 10) == 0);
    memcpy(&n, buf + 4, 4);
    CHECK(be32toh(n) == DISK);
    close(fd);
    pthread_join(tid, NULL);
}

static void test_transmission(void)
{
    uint8_t *wbuf = malloc(65536), *rbuf = malloc(65536);
    uint64_t handle, h1, h2;
    pthread_t tid;
    int fd, sfd, e1, e2;

    memset(&mem, 0, sizeof(mem));
    fd = start_session(&tid, &sfd);
    tc_greet(fd);
    CHECK(tc_go(fd, "") == DISK);
    memset(wbuf, 0xa5, 65536);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 8192, 65536, wbuf) == 0);
    CHECK(memcmp(mem.data + 8192, wbuf, 65536) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 8192, 65536, rbuf) == 0);
    CHECK(memcmp(rbuf, wbuf, 65536) == 0);

    /* Beyond the export: an error reply, and the session goes on. */
    CHECK(tc_io(fd, NBD_CMD_READ, DISK - 4096, 8192, rbuf) == NBD_EINVAL);
    CHECK(tc_io(fd, NBD_CMD_WRITE, DISK, 4096, wbuf) == NBD_EINVAL);
    tc_request(fd, 42, 9, 0, 4096, NULL);
    CHECK(tc_reply(fd, &handle) == NBD_EINVAL && handle == 9);
    CHECK(tc_io(fd, NBD_CMD_READ, 8192, 4096, rbuf) == 0 && rbuf[0] == 0xa5);

    tc_request(fd, NBD_CMD_FLUSH, 10, 0, 0, NULL);
    CHECK(tc_reply(fd, &handle) == 0 && handle == 10 && mem.flushes == 1);
    tc_request(fd, NBD_CMD_TRIM, 11, 8192, 4096, NULL);
    CHECK(tc_reply(fd, &handle) == 0 && handle == 11 && mem.trims == 1);

    /* Two reads in flight: the second completes first and its reply
     * comes first. */
    mem.hold_reads = 1;
    tc_request(fd, NBD_CMD_READ, 100, 0, 512, NULL);
    tc_request(fd, NBD_CMD_READ, 200, 12288, 512, NULL);
    e1 = tc_reply(fd, &h1);
    CHECK(sd_read_full(fd, rbuf, 512) == 0);
    e2 = tc_reply(fd, &h2);
    CHECK(sd_read_full(fd, rbuf + 512, 512) == 0);
    CHECK(e1 == 0 && e2 == 0 && h1 == 200 && h2 == 100);
    CHECK(rbuf[0] == 0xa5 && rbuf[512] == 0);
    mem.hold_reads = 0;

    /* A bad magic ends the connection. */
    memset(wbuf, 0, 28);
    tc_send(fd, wbuf, 28);
    CHECK(tc_reply(fd, &handle) == -1);
    pthread_join(tid, NULL);
    close(fd);

    /* A short request (10 of 28 bytes, then end of stream): the server
     * closes that connection and returns. */
    fd = start_session(&tid, &sfd);
    tc_greet(fd);
    tc_go(fd, "");
    tc_send(fd, wbuf, 10);
    shutdown(fd, SHUT_WR);
    pthread_join(tid, NULL);
    CHECK(tc_reply(fd, &handle) == -1);
    close(fd);

    /* A write too large to drain: error reply, then the server closes. */
    fd = start_session(&tid, &sfd);
    tc_greet(fd);
    tc_go(fd, "");
    tc_request(fd, NBD_CMD_WRITE, 5, 0, SD_NBD_MAX_LEN + 4096, NULL);
    CHECK(tc_reply(fd, &handle) == NBD_EINVAL && handle == 5);
    CHECK(tc_reply(fd, &handle) == -1);
    pthread_join(tid, NULL);
    close(fd);
    free(wbuf);
    free(rbuf);
}

/* Requests sent in one go reach the backend in bursts (of at most 128, the
 * in-flight limit) and every one is answered: 80 writes of 512 bytes, then
 * 80 reads of them. */
static void test_burst(void)
{
    enum { N = 80, LEN = 512, REQ = 28 };
    static uint8_t out[N * (REQ + LEN) + N * REQ], back[LEN];
    size_t pos = 0;
    uint64_t handle, seen[2 * N] = { 0 };
    pthread_t tid;
    int fd, sfd, i, ok = 1;

    memset(&mem, 0, sizeof(mem));
    fd = start_session(&tid, &sfd);
    tc_greet(fd);
    tc_go(fd, "");
    for (i = 0; i < 2 * N; i++) {
        int write = i < N;

        tc_encode_request(out + pos, 0, write ? NBD_CMD_WRITE : NBD_CMD_READ,
                          (uint64_t)i, (uint64_t)(i % N) * LEN, LEN);
        pos += REQ;
        if (write) {
            memset(out + pos, i + 1, LEN);
            pos += LEN;
        }
    }
    tc_send(fd, out, pos);
    for (i = 0; i < 2 * N; i++) {
        if (tc_reply(fd, &handle) != 0 || handle >= 2 * N || seen[handle]) {
            ok = 0;
            break;
        }
        seen[handle] = 1;
        if (handle >= N) {
            CHECK(sd_read_full(fd, back, LEN) == 0);
            ok &= back[0] == (uint8_t)(handle - N + 1) &&
                  back[LEN - 1] == back[0];
        }
    }
    CHECK(ok);
    CHECK(mem.max_burst > 1 && mem.max_burst <= 128);
    tc_request(fd, NBD_CMD_DISC, 1, 0, 0, NULL);
    pthread_join(tid, NULL);
    close(fd);
}

static void test_listening_server(void)
{
    char path[] = "/tmp/sd-nbd-test-XXXXXX", sock[64], err[SD_ERRLEN];
    struct sd_nbd_server *s;
    uint8_t buf[8];
    uint64_t handle;
    int fd;

    CHECK(mkdtemp(path) != NULL);
    snprintf(sock, sizeof(sock), "%s/x.sock", path);
    CHECK(sd_nbd_server_start(sock, &backend, (uid_t)-1, (gid_t)-1, &s, err,
                              sizeof(err)) == 0);
    fd = tc_connect(sock);
    tc_greet(fd);
    CHECK(tc_go(fd, "memagg-swap-test") == DISK);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 8, buf) == 0);
    /* Stopping disconnects the client and removes the socket. */
    sd_nbd_server_stop(s);
    CHECK(tc_reply(fd, &handle) == -1);
    CHECK(access(sock, F_OK) != 0);
    close(fd);
    rmdir(path);

    CHECK(sd_nbd_server_start("/nonexistent/dir/x.sock", &backend,
                              (uid_t)-1, (gid_t)-1, &s, err,
                              sizeof(err)) < 0);
    CHECK(strstr(err, "/nonexistent/dir/x.sock") != NULL);
}

int main(void)
{
    test_parse_request();
    test_check_request();
    test_parse_option_and_info();
    test_handshake_options();
    test_transmission();
    test_burst();
    test_listening_server();
    return check_summary();
}
