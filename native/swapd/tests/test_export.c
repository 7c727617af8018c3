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
 * Tests of exports: the page bitmap (and its rebuild from a sparse file),
 * the latency histogram, the ghost ring, the export table's parser and
 * format, slab math, and whole exports driven over NBD: local-only slabs,
 * slabs on an in-process donor over TCP (data lands there; a wrong key
 * degrades the slab and nothing is lost), bursts of requests over two
 * donors, reclaim, and a restart that restores the export from its .conf
 * and local copy.
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "check.h"
#include "control.h"
#include "export.h"
#include "nbd_client.h"
#include "store.h"
#include "transport.h"
#include "util.h"

#define GRANT "0a1b2c3d-0000-4000-8000-00000000abcd"
#define KEY "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define SLAB (256 * 1024ULL)

static char tmpdir[64];

static void test_bitmap(void)
{
    struct sd_bitmap b;
    char path[128];
    int fd;

    CHECK(sd_bitmap_init(&b, 200) == 0);
    CHECK(!sd_bitmap_any(&b, 0, 200));
    sd_bitmap_set(&b, 63, 2);
    CHECK(sd_bitmap_test(&b, 63) && sd_bitmap_test(&b, 64));
    CHECK(!sd_bitmap_test(&b, 62) && !sd_bitmap_test(&b, 65));
    CHECK(sd_bitmap_any(&b, 0, 64) && sd_bitmap_any(&b, 64, 1));
    CHECK(!sd_bitmap_any(&b, 65, 135) && !sd_bitmap_any(&b, 0, 63));
    sd_bitmap_clear(&b, 0, 64);
    CHECK(!sd_bitmap_test(&b, 63) && sd_bitmap_test(&b, 64));
    /* Beyond the end: ignored, never a write out of bounds. */
    sd_bitmap_set(&b, 199, 10);
    CHECK(sd_bitmap_test(&b, 199) && !sd_bitmap_test(&b, 200));
    sd_bitmap_destroy(&b);

    /* Data extents of a sparse file become set pages. */
    snprintf(path, sizeof(path), "%s/sparse", tmpdir);
    fd = open(path, O_RDWR | O_CREAT, 0600);
    CHECK(fd >= 0 && ftruncate(fd, 1024 * 4096) == 0);
    CHECK(pwrite(fd, "x", 1, 3 * 4096 + 100) == 1);
    CHECK(pwrite(fd, "y", 1, 700 * 4096) == 1);
    CHECK(sd_bitmap_init(&b, 1024) == 0);
    CHECK(sd_bitmap_load_extents(&b, fd) == 0);
    CHECK(sd_bitmap_test(&b, 3) && sd_bitmap_test(&b, 700));
    CHECK(!sd_bitmap_any(&b, 4, 600) && !sd_bitmap_any(&b, 0, 3));
    sd_bitmap_destroy(&b);
    close(fd);
    unlink(path);
}

static void test_hist(void)
{
    struct sd_hist h;
    uint64_t p50, p99;
    int i;

    memset(&h, 0, sizeof(h));
    CHECK(sd_hist_percentile(&h, 50) == 0);
    for (i = 0; i < 98; i++) {
        sd_hist_add(&h, 100);
    }
    sd_hist_add(&h, 5000);
    sd_hist_add(&h, 5000);
    p50 = sd_hist_percentile(&h, 50);
    p99 = sd_hist_percentile(&h, 99);
    /* Buckets are 1/8 of a power of two wide. */
    CHECK(p50 >= 100 && p50 < 100 + 100 / 8 + 1);
    CHECK(p99 >= 5000 && p99 < 5000 + 5000 / 8 + 1);
    sd_hist_add(&h, UINT64_MAX);        /* clamps to the last bucket */
    CHECK(sd_hist_percentile(&h, 100) > 5000);
}

static void test_ghost(void)
{
    struct sd_ghost g;
    char *text;

    CHECK(sd_ghost_init(&g, 4) == 0);
    sd_ghost_add(&g, 'o', 7);
    sd_ghost_add(&g, 'i', 7);
    CHECK(sd_ghost_drain(&g, 10, &text) == 2);
    CHECK(strcmp(text, "o7,i7") == 0);
    free(text);
    CHECK(sd_ghost_drain(&g, 10, &text) == 0 && strcmp(text, "") == 0);
    free(text);
    /* Six into a ring of four: the two oldest are dropped. */
    sd_ghost_add(&g, 'o', 1);
    sd_ghost_add(&g, 'o', 2);
    sd_ghost_add(&g, 'o', 3);
    sd_ghost_add(&g, 'o', 4);
    sd_ghost_add(&g, 'o', 5);
    sd_ghost_add(&g, 'i', 6);
    CHECK(g.dropped == 2);
    CHECK(sd_ghost_drain(&g, 3, &text) == 3 && strcmp(text, "o3,o4,o5") == 0);
    free(text);
    CHECK(sd_ghost_drain(&g, 3, &text) == 1 && strcmp(text, "i6") == 0);
    free(text);
    sd_ghost_destroy(&g);
}

/* Parse "EXPORT_CREATE args" into spec; the error text in err. */
static int parse_spec(const char *line, struct sd_export_spec *spec,
                      char *err)
{
    char buf[2048];
    struct sd_args a;

    snprintf(buf, sizeof(buf), "EXPORT_CREATE %s", line);
    if (sd_control_parse_line(buf, &a, err, SD_ERRLEN)) {
        return -EINVAL;
    }
    return sd_export_spec_parse(&a, spec, err, SD_ERRLEN);
}

static void test_spec(void)
{
    const char *good = "grant=" GRANT " key=" KEY " size=1048576 "
                       "slab_size=262144 local=/tmp/x "
                       "slabs=0@tcp://10.0.0.1:7450@4096@0,"
                       "2@tcp://10.0.0.2:7450@0@17 local_slabs=2";
    struct sd_export_spec spec, again;
    char err[SD_ERRLEN] = "", *text;

    CHECK(parse_spec(good, &spec, err) == 0);
    CHECK(spec.nslabs == 4 && spec.size == 1048576);
    CHECK(strcmp(spec.slabs[0].endpoint, "tcp://10.0.0.1:7450") == 0 &&
          spec.slabs[0].addr == 4096 && !spec.slabs[0].local);
    CHECK(spec.slabs[1].endpoint[0] == '\0' && spec.slabs[1].local);
    CHECK(spec.slabs[2].rkey == 17 && spec.slabs[2].local);
    text = sd_export_spec_format(&spec);
    CHECK(text && strcmp(text, good) == 0);
    CHECK(text && parse_spec(text, &again, err) == 0 &&
          again.slabs[2].local && again.slabs[0].addr == 4096);
    free(text);
    sd_export_spec_free(&again);
    sd_export_spec_free(&spec);

    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1000000 "
                     "slab_size=262144 local=/tmp/x slabs=", &spec, err)
          == -EINVAL);
    CHECK(strcmp(err, "size: must be a non-zero multiple of slab_size "
                 "(262144)") == 0);
    CHECK(parse_spec("grant=nope key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x slabs=", &spec, err)
          == -EINVAL && strncmp(err, "grant:", 6) == 0);
    CHECK(parse_spec("grant=" GRANT " key=abc size=1048576 "
                     "slab_size=262144 local=/tmp/x slabs=", &spec, err)
          == -EINVAL && strncmp(err, "key:", 4) == 0);
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=1000 local=/tmp/x slabs=", &spec, err)
          == -EINVAL && strncmp(err, "slab_size:", 10) == 0);
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=rel slabs=", &spec, err)
          == -EINVAL && strncmp(err, "local:", 6) == 0);
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x slabs=4@tcp://h:1@0@0",
                     &spec, err) == -EINVAL && strstr(err, "beyond"));
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x "
                     "slabs=1@tcp://h:1@0@0,1@tcp://h:1@0@0",
                     &spec, err) == -EINVAL && strstr(err, "twice"));
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x slabs=1@0@0",
                     &spec, err) == -EINVAL && strncmp(err, "slabs:", 6) == 0);
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x", &spec, err)
          == -EINVAL && strncmp(err, "slabs:", 6) == 0);
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x slabs= local_slabs=9",
                     &spec, err) == -EINVAL &&
          strncmp(err, "local_slabs:", 12) == 0);

    CHECK(sd_slab_of(0, SLAB) == 0 && sd_slab_of(SLAB - 1, SLAB) == 0);
    CHECK(sd_slab_of(SLAB, SLAB) == 1 && sd_slab_of(5 * SLAB + 7, SLAB) == 5);
}

static int create(struct sd_exports *xs, const char *slabs, char *sock)
{
    char line[1024], err[SD_ERRLEN] = "";
    struct sd_export_spec spec;
    int ret;

    snprintf(line, sizeof(line), "grant=" GRANT " key=" KEY " size=%llu "
             "slab_size=%llu local=%s/copy slabs=%s",
             4 * SLAB, SLAB, tmpdir, slabs);
    ret = parse_spec(line, &spec, err);
    if (ret == 0) {
        ret = sd_exports_create(xs, &spec, sock, 256, err, sizeof(err));
    }
    if (ret) {
        fprintf(stderr, "create: %s\n", err);
    }
    return ret;
}

static int open_export(const char *sock)
{
    int fd = tc_connect(sock);

    tc_greet(fd);
    if (tc_go(fd, "memagg-swap-" GRANT) != 4 * SLAB) {
        tc_die("size");
    }
    return fd;
}

static uint8_t grant_bin[SD_UUID_LEN];

static void test_local_export_and_restart(void)
{
    char sock[256], err[SD_ERRLEN], *text;
    struct sd_export_stats st;
    struct sd_exports *xs;
    uint8_t *buf = malloc(2 * SLAB);
    uint64_t dropped;
    uint32_t n;
    int fd;

    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, "", sock) == 0);
    CHECK(create(xs, "", sock) == -EEXIST);
    fd = open_export(sock);
    /* Never written: zeros, counted as a zero read. */
    memset(buf, 0xff, 8192);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 8192, buf) == 0 && buf[0] == 0 &&
          buf[8191] == 0);
    /* A write across the slab 0/1 boundary reads back. */
    memset(buf, 0x5a, 8192);
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB - 4096, 8192, buf) == 0);
    memset(buf, 0, 8192);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB - 4096, 8192, buf) == 0 &&
          buf[0] == 0x5a && buf[8191] == 0x5a);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0);
    CHECK(st.reads == 2 && st.writes == 1 && st.zero_reads == 1 &&
          st.local_reads == 1 && st.write_bytes == 8192 && st.clients == 1);
    CHECK(sd_exports_ghost(xs, grant_bin, 100, &text, &dropped) == 0);
    CHECK(strcmp(text, "o63,o64,i63,i64") == 0 && dropped == 0);
    free(text);
    /* TRIM makes the pages read zeros again. */
    tc_request(fd, NBD_CMD_TRIM, 3, SLAB, 4096, NULL);
    CHECK(tc_reply(fd, &dropped) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, 4096, buf) == 0 && buf[0] == 0);
    CHECK(sd_exports_list(xs, &text) == 0 && strcmp(text, GRANT) == 0);
    free(text);
    CHECK(sd_exports_reclaim(xs, grant_bin, NULL, 0, &n, err,
                             sizeof(err)) == 0 && n == 0);

    /* A restart: the registry goes, the client is disconnected; a new
     * one restores the export with its data. */
    sd_exports_free(xs);
    CHECK(tc_reply(fd, &dropped) == -1);
    close(fd);
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(sd_exports_restore(xs) == 1);
    fd = open_export(sock);
    memset(buf, 0, 8192);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB - 4096, 4096, buf) == 0 &&
          buf[0] == 0x5a && buf[4095] == 0x5a);
    CHECK(tc_io(fd, NBD_CMD_READ, 2 * SLAB, 4096, buf) == 0 && buf[0] == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 && st.zero_reads == 1);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == -ENOENT);
    CHECK(sd_exports_restore(xs) == 0);
    sd_exports_free(xs);
    free(buf);
}

/* Whether the SLAB bytes from SLAB / 2 (half of slab 0, half of slab 1)
 * read back over NBD, into a cleared back, as buf. */
static int reads_back(int fd, const uint8_t *buf, uint8_t *back)
{
    memset(back, 0, SLAB);
    return tc_io(fd, NBD_CMD_READ, SLAB / 2, (uint32_t)SLAB, back) == 0 &&
           memcmp(back, buf, SLAB) == 0;
}

static void test_remote_export(void)
{
    char sock[256], err[SD_ERRLEN], slabs[512];
    uint8_t key[SD_KEY_LEN], *buf = malloc(SLAB), *back = malloc(SLAB);
    uint32_t idx[2] = { 0, 1 }, rkey, n;
    struct sd_export_stats st;
    struct sd_server *server;
    struct sd_exports *xs;
    struct sd_store *store;
    uint64_t addrs[2];
    size_t done;
    uint16_t port;
    int fd, i;

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    CHECK(sd_store_new(16 * SLAB, &store) == 0);
    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, &server, err,
                              sizeof(err)) == 0);
    port = sd_server_port(server);
    CHECK(sd_store_alloc(store, grant_bin, key, SLAB, idx, 2, addrs, &done,
                         &rkey) == 0 && done == 2);
    /* Slabs 0 and 1 on the donor; slab 2 under the wrong key (the donor
     * refuses it); slab 3 local. */
    snprintf(slabs, sizeof(slabs), "0@tcp://127.0.0.1:%u@%llu@0,"
             "1@tcp://127.0.0.1:%u@%llu@0", port,
             (unsigned long long)addrs[0], port,
             (unsigned long long)addrs[1]);
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, slabs, sock) == 0);
    fd = open_export(sock);
    for (i = 0; i < (int)SLAB; i++) {
        buf[i] = (uint8_t)(i * 7 + i / 4096);
    }
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB / 2, (uint32_t)SLAB, buf) == 0);
    /* The donor holds the pages. */
    CHECK(sd_store_access(store, SD_OP_READ, grant_bin, key, 0, SLAB / 2,
                          back, SLAB / 2) == 0 &&
          memcmp(back, buf, SLAB / 2) == 0);
    CHECK(sd_store_access(store, SD_OP_READ, grant_bin, key, 1, 0,
                          back, SLAB / 2) == 0 &&
          memcmp(back, buf + SLAB / 2, SLAB / 2) == 0);
    CHECK(reads_back(fd, buf, back));
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.remote_errors == 0 && st.local_reads == 0 &&
          st.degraded_slabs == 0);

    /* The donor loses slab 1 (freed under us): the next read fails
     * there, the slab degrades, the data comes from the local copy. */
    CHECK(sd_store_release(store, grant_bin, &idx[1], 1) == 0);
    CHECK(reads_back(fd, buf, back));
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.remote_errors == 1 && st.degraded_slabs == 1 &&
          st.local_reads == 1);
    /* Writes to it still succeed, locally. */
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, 4096, buf) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, 4096, back) == 0 &&
          memcmp(back, buf, 4096) == 0);
    /* Reclaim slab 0: reads no longer reach the donor. */
    CHECK(sd_exports_reclaim(xs, grant_bin, idx, 1, &n, err,
                             sizeof(err)) == 0 && n == 1);
    CHECK(sd_store_release(store, grant_bin, NULL, 0) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB / 2, 4096, back) == 0 &&
          memcmp(back, buf, 4096) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.remote_errors == 1 && st.degraded_slabs == 1);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    sd_server_stop(server);
    sd_store_free(store);
    free(buf);
    free(back);
}

/* Append a request (and a WRITE's payload) to out at *pos. */
static void add_request(uint8_t *out, size_t *pos, uint16_t type,
                        uint64_t handle, uint64_t offset, uint32_t len,
                        const void *payload)
{
    tc_encode_request(out + *pos, 0, type, handle, offset, len);
    *pos += 28;
    if (payload) {
        memcpy(out + *pos, payload, len);
        *pos += len;
    }
}

/* Bursts of requests sent in one go over slabs on two donors, a local
 * slab and never-written pages: each donor gets its pages, every request
 * is answered, the data reads back. */
static void test_burst_two_donors(void)
{
    enum { PER_SLAB = 16, PAGE = 4096 };
    static uint8_t out[3 * PER_SLAB * (28 + PAGE) + 28], back[PAGE];
    static const uint32_t written_slabs[3] = { 0, 1, 3 };
    char sock[256], err[SD_ERRLEN], slabs[512];
    uint8_t key[SD_KEY_LEN], page[PAGE];
    struct sd_server *server[2];
    struct sd_store *store[2];
    struct sd_export_stats st;
    struct sd_exports *xs;
    uint64_t addr, handle;
    uint32_t idx, rkey;
    size_t pos = 0, done, used = 0;
    int fd, i, d, ok = 1;

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    /* Donor d holds slab d. */
    for (d = 0; d < 2; d++) {
        idx = (uint32_t)d;
        CHECK(sd_store_new(4 * SLAB, &store[d]) == 0);
        CHECK(sd_tcp_server_start(store[d], "127.0.0.1", 0, &server[d], err,
                                  sizeof(err)) == 0);
        CHECK(sd_store_alloc(store[d], grant_bin, key, SLAB, &idx, 1, &addr,
                             &done, &rkey) == 0 && done == 1);
        snprintf(slabs + used, sizeof(slabs) - used,
                 "%s%d@tcp://127.0.0.1:%u@%llu@0", d ? "," : "", d,
                 sd_server_port(server[d]), (unsigned long long)addr);
        used = strlen(slabs);
    }
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, slabs, sock) == 0);
    fd = open_export(sock);

    /* Page i of slabs 0, 1 and 3 holds byte (slab * 16 + i + 1). */
    for (d = 0; d < 3; d++) {
        for (i = 0; i < PER_SLAB; i++) {
            memset(page, written_slabs[d] * PER_SLAB + i + 1, PAGE);
            add_request(out, &pos, NBD_CMD_WRITE, (uint64_t)(d * 100 + i),
                        written_slabs[d] * SLAB + (uint64_t)i * 3 * PAGE,
                        PAGE, page);
        }
    }
    tc_send(fd, out, pos);
    for (i = 0; i < 3 * PER_SLAB; i++) {
        ok &= tc_reply(fd, &handle) == 0;
    }
    CHECK(ok);
    for (d = 0; d < 2; d++) {
        CHECK(sd_store_access(store[d], SD_OP_READ, grant_bin, key,
                              (uint32_t)d, 5 * 3 * PAGE, back, PAGE) == 0 &&
              back[0] == d * PER_SLAB + 6 && back[PAGE - 1] == back[0]);
    }

    /* The same pages back, and one never written in slab 2. */
    pos = 0;
    for (d = 0; d < 3; d++) {
        for (i = 0; i < PER_SLAB; i++) {
            add_request(out, &pos, NBD_CMD_READ, (uint64_t)(d * 100 + i),
                        written_slabs[d] * SLAB + (uint64_t)i * 3 * PAGE,
                        PAGE, NULL);
        }
    }
    add_request(out, &pos, NBD_CMD_READ, 999, 2 * SLAB, PAGE, NULL);
    tc_send(fd, out, pos);
    for (i = 0; i < 3 * PER_SLAB + 1; i++) {
        uint8_t want;

        if (tc_reply(fd, &handle) != 0 || sd_read_full(fd, back, PAGE)) {
            ok = 0;
            break;
        }
        want = handle == 999 ? 0 : (uint8_t)(written_slabs[handle / 100] *
                                             PER_SLAB + handle % 100 + 1);
        ok &= back[0] == want && back[PAGE - 1] == want;
    }
    CHECK(ok);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0);
    CHECK(st.writes == 3 * PER_SLAB && st.reads == 3 * PER_SLAB + 1 &&
          st.zero_reads == 1 && st.local_reads == PER_SLAB &&
          st.remote_errors == 0 && st.degraded_slabs == 0);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    for (d = 0; d < 2; d++) {
        sd_server_stop(server[d]);
        sd_store_free(store[d]);
    }
}

/* A grant key the donor does not know: every access is refused. */
static void test_wrong_key(void)
{
    uint8_t other[SD_KEY_LEN], *buf = malloc(8192);
    char sock[256], err[SD_ERRLEN], slabs[256];
    struct sd_export_stats st;
    struct sd_server *server;
    struct sd_exports *xs;
    struct sd_store *store;
    struct sd_store_stats ss;
    uint32_t idx = 0, rkey;
    uint64_t addr;
    size_t done;
    int fd;

    memset(other, 0x42, sizeof(other));
    CHECK(sd_store_new(4 * SLAB, &store) == 0);
    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, &server, err,
                              sizeof(err)) == 0);
    CHECK(sd_store_alloc(store, grant_bin, other, SLAB, &idx, 1, &addr,
                         &done, &rkey) == 0);
    snprintf(slabs, sizeof(slabs), "0@tcp://127.0.0.1:%u@%llu@0",
             sd_server_port(server), (unsigned long long)addr);
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, slabs, sock) == 0);
    fd = open_export(sock);
    memset(buf, 0x33, 8192);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 0, 8192, buf) == 0);
    memset(buf, 0, 8192);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 8192, buf) == 0 && buf[8191] == 0x33);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.remote_errors == 1 && st.degraded_slabs == 1);
    sd_store_stats(store, &ss);
    CHECK(ss.refused >= 1);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    sd_server_stop(server);
    sd_store_free(store);
    free(buf);
}

int main(void)
{
    char cmd[128];

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/sd-export-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    sd_log_level = LOG_WARNING;
    sd_uuid_parse(GRANT, SD_UUID_STRLEN, grant_bin);
    test_bitmap();
    test_hist();
    test_ghost();
    test_spec();
    test_local_export_and_restart();
    test_remote_export();
    test_burst_two_donors();
    test_wrong_key();
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    if (system(cmd)) {
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    }
    return check_summary();
}
