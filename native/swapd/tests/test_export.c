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
 * donors, reclaim, a restart that restores the export from its .conf
 * and local copy, a crash after a donor failed (the table on disk says
 * which slabs skip their donors before any write that skipped one is
 * answered), and a local copy that fails (writes stand on the donor, the
 * slab stale).  Adopted and sealed exports are test_adopt's.
 * Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "bitmap.h"
#include "export_fixture.h"
#include "ghost.h"
#include "hist.h"

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

/* "i-j@..." entries: one donor's run of slabs at consecutive addresses. */
static void test_spec_ranges(void)
{
    const char *ranged = SPEC4 "slabs=0-2@tcp://h:1@4096@5,"
                         "3@tcp://g:2@0@0";
    struct sd_export_spec spec;
    char err[SD_ERRLEN] = "", *text;

    CHECK(parse_spec(ranged, &spec, err) == 0);
    CHECK(spec.slabs[0].addr == 4096 && spec.slabs[2].addr == 4096 + 2 *
          262144 && spec.slabs[2].rkey == 5 &&
          strcmp(spec.slabs[1].endpoint, "tcp://h:1") == 0 &&
          !spec.slabs[1].local && strcmp(spec.slabs[3].endpoint,
                                         "tcp://g:2") == 0);
    text = sd_export_spec_format(&spec);
    CHECK(text && strcmp(text, ranged) == 0);
    free(text);
    sd_export_spec_free(&spec);
    /* Entries one by one come back as a range; a gap in the addresses
     * or another rkey ends it. */
    CHECK(parse_spec(SPEC4 "slabs=0@tcp://h:1@0@0,1@tcp://h:1@262144@0,"
                     "2@tcp://h:1@600000@0,3@tcp://h:1@862144@1", &spec,
                     err) == 0);
    text = sd_export_spec_format(&spec);
    CHECK(text && strstr(text, " slabs=0-1@tcp://h:1@0@0,"
                         "2@tcp://h:1@600000@0,3@tcp://h:1@862144@1"));
    free(text);
    sd_export_spec_free(&spec);

    CHECK(parse_spec(SPEC4 "slabs=2-1@tcp://h:1@0@0", &spec, err) ==
          -EINVAL && strstr(err, "backwards"));
    CHECK(parse_spec(SPEC4 "slabs=2-4@tcp://h:1@0@0", &spec, err) ==
          -EINVAL && strstr(err, "beyond"));
    CHECK(parse_spec(SPEC4 "slabs=0-1@tcp://h:1@18446744073709551615@0",
                     &spec, err) == -EINVAL && strstr(err, "2^64"));
    CHECK(parse_spec(SPEC4 "slabs=0-1@tcp://h:1@0@0,1@tcp://h:1@0@0", &spec,
                     err) == -EINVAL && strstr(err, "twice"));
    CHECK(parse_spec(SPEC4 "slabs=0-@tcp://h:1@0@0", &spec, err) ==
          -EINVAL && strncmp(err, "slabs:", 6) == 0);
    CHECK(parse_spec(SPEC4 "slabs=-1@tcp://h:1@0@0", &spec, err) ==
          -EINVAL && strncmp(err, "slabs:", 6) == 0);
}

static void test_spec_adopt(void)
{
    struct sd_export_spec spec;
    char err[SD_ERRLEN] = "", *text;

    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1", &spec,
                     err) == 0);
    /* A new adoption: its rebuild waits for EXPORT_REBUILD. */
    CHECK(spec.adopt == 1 && spec.rebuilt == 0 && !spec.rebuild_started);
    text = sd_export_spec_format(&spec);     /* the table only */
    CHECK(text && !strstr(text, "adopt") && !strstr(text, "rebuil"));
    free(text);
    sd_export_spec_free(&spec);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=0", &spec,
                     err) == 0 && spec.adopt == 0);
    sd_export_spec_free(&spec);

    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=yes", &spec,
                     err) == -EINVAL && strcmp(err, "adopt: must be 0 or "
                                               "1") == 0);
    /* Every slab must be on a donor, and none served locally. */
    CHECK(parse_spec(SPEC4 "slabs=0@tcp://h:1@0@0,2-3@tcp://h:1@0@0 "
                     "adopt=1", &spec, err) == -EINVAL);
    CHECK(strcmp(err, "slabs: an adopted export reads every slab from its "
                 "donor; slab 1 has none") == 0);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 local_slabs=2 adopt=1",
                     &spec, err) == -EINVAL &&
          strncmp(err, "local_slabs:", 12) == 0 &&
          strstr(err, "slab 2 is served from the local copy"));
    /* rebuilt= (an adopted export's .conf) only with adopt=1, below the
     * number of slabs; with it, slabs degraded during the rebuild. */
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 rebuilt=1", &spec,
                     err) == -EINVAL && strncmp(err, "rebuilt:", 8) == 0);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1 rebuilt=4",
                     &spec, err) == -EINVAL &&
          strncmp(err, "rebuilt:", 8) == 0);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1 rebuilt=x",
                     &spec, err) == -EINVAL &&
          strncmp(err, "rebuilt:", 8) == 0);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1 rebuilt=3 "
                     "local_slabs=1", &spec, err) == 0);
    CHECK(spec.rebuilt == 3 && spec.slabs[1].local && !spec.slabs[0].local);
    /* That .conf predates rebuild_started=: its rebuild runs. */
    CHECK(spec.rebuild_started == 1);
    sd_export_spec_free(&spec);

    /* rebuild_started= (the .conf again) only with rebuilt=, 0 or 1, and
     * a rebuild not started has rebuilt nothing. */
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1 rebuilt=0 "
                     "rebuild_started=0", &spec, err) == 0 &&
          spec.adopt && !spec.rebuild_started);
    sd_export_spec_free(&spec);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1 rebuilt=2 "
                     "rebuild_started=1", &spec, err) == 0 &&
          spec.rebuild_started && spec.rebuilt == 2);
    sd_export_spec_free(&spec);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1 "
                     "rebuild_started=1", &spec, err) == -EINVAL &&
          strncmp(err, "rebuild_started:", 16) == 0);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1 rebuilt=0 "
                     "rebuild_started=yes", &spec, err) == -EINVAL &&
          strcmp(err, "rebuild_started: must be 0 or 1") == 0);
    CHECK(parse_spec(SPEC4 "slabs=0-3@tcp://h:1@0@0 adopt=1 rebuilt=2 "
                     "rebuild_started=0", &spec, err) == -EINVAL &&
          strncmp(err, "rebuilt:", 8) == 0);
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
    /* stale_slabs: each on a donor; formatted back. */
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x slabs=0@tcp://h:1@0@0 "
                     "stale_slabs=1", &spec, err) == -EINVAL &&
          strstr(err, "stale_slabs: slab 1 has no donor"));
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x slabs=0@tcp://h:1@0@0 "
                     "stale_slabs=0,0", &spec, err) == -EINVAL &&
          strncmp(err, "stale_slabs:", 12) == 0);
    CHECK(parse_spec("grant=" GRANT " key=" KEY " size=1048576 "
                     "slab_size=262144 local=/tmp/x slabs=0-1@tcp://h:1@0@0 "
                     "local_slabs=1 stale_slabs=0,1", &spec, err) == 0 &&
          spec.slabs[0].stale && spec.slabs[1].stale &&
          !spec.slabs[2].stale);
    text = sd_export_spec_format(&spec);
    CHECK(text && strstr(text, " local_slabs=1 stale_slabs=0,1"));
    free(text);
    sd_export_spec_free(&spec);
    test_spec_ranges();
    test_spec_adopt();

    CHECK(sd_slab_of(0, SLAB) == 0 && sd_slab_of(SLAB - 1, SLAB) == 0);
    CHECK(sd_slab_of(SLAB, SLAB) == 1 && sd_slab_of(5 * SLAB + 7, SLAB) == 5);
}

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
    CHECK(create(xs, tmpdir, "", "", sock) == 0);
    CHECK(create(xs, tmpdir, "", "", sock) == -EEXIST);
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
    xs = restored();
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

static void test_remote_export(void)
{
    char sock[256], err[SD_ERRLEN], slabs[512];
    uint8_t key[SD_KEY_LEN], *buf = malloc(SLAB), *back = malloc(SLAB);
    uint32_t idx[2] = { 0, 1 }, n;
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
    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, NULL, &server, err,
                              sizeof(err)) == 0);
    port = sd_server_port(server);
    CHECK(sd_store_alloc(store, grant_bin, key, SLAB, idx, 2, addrs, &done) == 0 && done == 2);
    /* Slabs 0 and 1 on the donor; slab 2 under the wrong key (the donor
     * refuses it); slab 3 local. */
    snprintf(slabs, sizeof(slabs), "0@tcp://127.0.0.1:%u@%llu@0,"
             "1@tcp://127.0.0.1:%u@%llu@0", port,
             (unsigned long long)addrs[0], port,
             (unsigned long long)addrs[1]);
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, tmpdir, slabs, "", sock) == 0);
    fd = open_export(sock);
    for (i = 0; i < (int)SLAB; i++) {
        buf[i] = (uint8_t)(i * 7 + i / 4096);
    }
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB / 2, (uint32_t)SLAB, buf) == 0);
    /* The donor holds the pages. */
    CHECK(sd_store_access(store, SD_OP_READ, grant_bin, key, 0, SLAB / 2,
                          back, SLAB / 2, NULL) == 0 &&
          memcmp(back, buf, SLAB / 2) == 0);
    CHECK(sd_store_access(store, SD_OP_READ, grant_bin, key, 1, 0,
                          back, SLAB / 2, NULL) == 0 &&
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
    export_done(fd, xs, server, store);
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
    uint32_t idx;
    size_t pos = 0, done, used = 0;
    int fd, i, d, ok = 1;

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    /* Donor d holds slab d. */
    for (d = 0; d < 2; d++) {
        idx = (uint32_t)d;
        CHECK(sd_store_new(4 * SLAB, &store[d]) == 0);
        CHECK(sd_tcp_server_start(store[d], "127.0.0.1", 0, NULL, &server[d],
                                  err, sizeof(err)) == 0);
        CHECK(sd_store_alloc(store[d], grant_bin, key, SLAB, &idx, 1, &addr,
                             &done) == 0 && done == 1);
        snprintf(slabs + used, sizeof(slabs) - used,
                 "%s%d@tcp://127.0.0.1:%u@%llu@0", d ? "," : "", d,
                 sd_server_port(server[d]), (unsigned long long)addr);
        used = strlen(slabs);
    }
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, tmpdir, slabs, "", sock) == 0);
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
                              (uint32_t)d, 5 * 3 * PAGE, back, PAGE,
                              NULL) == 0 &&
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
    uint32_t idx = 0;
    uint64_t addr;
    size_t done;
    int fd;

    memset(other, 0x42, sizeof(other));
    CHECK(sd_store_new(4 * SLAB, &store) == 0);
    CHECK(sd_tcp_server_start(store, "127.0.0.1", 0, NULL, &server, err,
                              sizeof(err)) == 0);
    CHECK(sd_store_alloc(store, grant_bin, other, SLAB, &idx, 1, &addr,
                         &done) == 0);
    snprintf(slabs, sizeof(slabs), "0@tcp://127.0.0.1:%u@%llu@0",
             sd_server_port(server), (unsigned long long)addr);
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, tmpdir, slabs, "", sock) == 0);
    fd = open_export(sock);
    memset(buf, 0x33, 8192);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 0, 8192, buf) == 0);
    memset(buf, 0, 8192);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 8192, buf) == 0 && buf[8191] == 0x33);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.remote_errors == 1 && st.degraded_slabs == 1);
    sd_store_stats(store, &ss);
    CHECK(ss.refused >= 1);
    export_done(fd, xs, server, store);
    free(buf);
}

/* The export's .conf on disk holds text. */
static int conf_says(const char *text)
{
    char path[256], line[4096];
    FILE *f;
    int has;

    snprintf(path, sizeof(path), "%s/exports/" GRANT ".conf", tmpdir);
    f = fopen(path, "r");
    has = f && fgets(line, sizeof(line), f) && strstr(line, text);
    if (f) {
        fclose(f);
    }
    return has;
}

/* A crash (the registry goes without saving anything) after writes that
 * skipped a donor: the donor was down, so the slab degraded, and the
 * table on disk said so before the write's reply.  Restarted with the
 * donor back (holding the page as it was before that write), the export
 * reads the slab from the local copy, and the other slab from its donor.
 * A table that cannot be saved fails the write that needed it (and a
 * reclaim) rather than acknowledging it; the next write saves it. */
static void test_crash_after_degrade(void)
{
    uint8_t old[4096], new[4096], back[4096];
    char sock[256], err[SD_ERRLEN], slabs[512], tmp[256];
    uint32_t idx[2] = { 0, 1 }, n;
    struct sd_export_stats st;
    struct sd_server *server;
    struct sd_exports *xs;
    struct sd_store *store;
    uint16_t port;
    int fd;

    memset(old, 0x0d, sizeof(old));
    memset(new, 0x7e, sizeof(new));
    port = donor_lending(2, &store, &server, slabs, sizeof(slabs));
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, tmpdir, slabs, "", sock) == 0);
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 0, 4096, old) == 0);
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, 4096, old) == 0);

    /* The donor goes: the write to slab 1 degrades it, locally only. */
    sd_server_stop(server);
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, 4096, new) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.degraded_slabs == 1);
    CHECK(conf_says(" local_slabs=1"));

    /* The crash; the donor is back with the page before the write. */
    sd_exports_free(xs);
    close(fd);
    CHECK(sd_tcp_server_start(store, "127.0.0.1", port, NULL, &server, err,
                              sizeof(err)) == 0);
    xs = restored();
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, 4096, back) == 0 &&
          memcmp(back, new, 4096) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 4096, back) == 0 &&
          memcmp(back, old, 4096) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.local_reads == 1 && st.remote_errors == 0);

    /* The table cannot be saved (its temp file's path is taken): the
     * write that degrades slab 0 fails, and so does a reclaim. */
    snprintf(tmp, sizeof(tmp), "%s/exports/" GRANT ".conf.tmp", tmpdir);
    CHECK(mkdir(tmp, 0700) == 0);
    CHECK(sd_store_release(store, grant_bin, &idx[0], 1) == 0);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 0, 4096, new) != 0);
    CHECK(!conf_says("local_slabs=0"));
    CHECK(sd_exports_reclaim(xs, grant_bin, &idx[0], 1, &n, err,
                             sizeof(err)) != 0 && strstr(err, ".conf"));
    /* Saved again, the next write to the slab is acknowledged. */
    CHECK(rmdir(tmp) == 0);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 0, 4096, new) == 0);
    CHECK(conf_says(" local_slabs=0,1"));
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 4096, back) == 0 &&
          memcmp(back, new, 4096) == 0);
    export_done(fd, xs, server, store);
}

/* The local copy's device fails (RLIMIT_FSIZE makes writes past slab 0
 * fail with EFBIG): a write to a slab on a donor stands there and the
 * slab turns stale (the table on disk says so first); a write to a local
 * slab fails.  A stale slab reads from its donor, stays there (no
 * reclaim), still does after a restart, and once its donor is gone its
 * reads fail rather than serve the old copy. */
static void test_local_copy_fails(void)
{
    uint8_t old[4096], new[4096], back[4096], zero[4096] = { 0 };
    char sock[256], err[SD_ERRLEN], slabs[512];
    uint32_t idx[3] = { 0, 1, 2 }, n;
    struct sd_export_stats st;
    struct sd_server *server;
    struct sd_exports *xs;
    struct sd_store *store;
    struct rlimit was, small;
    int fd;

    memset(old, 0x31, sizeof(old));
    memset(new, 0x4c, sizeof(new));
    /* Slabs 0-2 on the donor (L1), slab 3 local (L2). */
    donor_lending(3, &store, &server, slabs, sizeof(slabs));
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, tmpdir, slabs, "", sock) == 0);
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, 4096, old) == 0);

    signal(SIGXFSZ, SIG_IGN);
    CHECK(getrlimit(RLIMIT_FSIZE, &was) == 0);
    small = was;
    small.rlim_cur = SLAB;
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, 4096, new) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.stale_slabs == 1 && st.degraded_slabs == 0);
    CHECK(conf_says(" stale_slabs=1"));
    CHECK(tc_io(fd, NBD_CMD_WRITE, 3 * SLAB, 4096, new) != 0);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 0, 4096, new) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, 4096, back) == 0 &&
          memcmp(back, new, 4096) == 0);
    CHECK(sd_exports_reclaim(xs, grant_bin, &idx[1], 1, &n, err,
                             sizeof(err)) == -EBUSY && strstr(err, "stale"));
    CHECK(sd_exports_reclaim(xs, grant_bin, &idx[2], 1, &n, err,
                             sizeof(err)) == 0 && n == 1);
    CHECK(setrlimit(RLIMIT_FSIZE, &was) == 0);
    signal(SIGXFSZ, SIG_DFL);

    /* A crash: restarted, slab 1 is still stale and read from its donor
     * (its copy holds the old page); a page of it never written there
     * reads as zeros. */
    sd_exports_free(xs);
    close(fd);
    xs = restored();
    fd = open_export(sock);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 && st.stale_slabs == 1);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, 4096, back) == 0 &&
          memcmp(back, new, 4096) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB + 5 * 4096, 4096, back) == 0 &&
          memcmp(back, zero, 4096) == 0);

    /* The donor goes: slab 0 is served from its copy, slab 1's reads and
     * writes fail. */
    sd_server_stop(server);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 4096, back) == 0 &&
          memcmp(back, new, 4096) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, 4096, back) != 0);
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, 4096, new) != 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, 4096, back) != 0);
    export_done(fd, xs, NULL, store);   /* the donor is stopped already */
}

int main(void)
{
    if (fixture_start()) {
        return 2;
    }
    test_bitmap();
    test_hist();
    test_ghost();
    test_spec();
    test_local_export_and_restart();
    test_remote_export();
    test_burst_two_donors();
    test_wrong_key();
    test_crash_after_degrade();
    test_local_copy_fails();
    fixture_end();
    return check_summary();
}
