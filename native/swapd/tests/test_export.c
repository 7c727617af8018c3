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
 * answered), and an adopted export (live migration's destination)
 * whose local copy is rebuilt from its donors once asked, while the guest
 * writes, across restarts; a sealed export (ciphertext on the donor,
 * a page altered there caught, its key kept and restored, an adoption
 * that has no other copy of the altered page, its overlay of a degraded
 * slab) and the page key's handoff
 * to a migration's destination.
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

#include "args.h"
#include "bitmap.h"
#include "check.h"
#include "export.h"
#include "export_spec.h"
#include "ghost.h"
#include "hist.h"
#include "nbd_client.h"
#include "seal.h"
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

#define SPEC4 "grant=" GRANT " key=" KEY " size=1048576 slab_size=262144 " \
              "local=/tmp/x "

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

/* EXPORT_CREATE of GRANT over slabs with its local copy <dir>/local/copy and
 * the further arguments more (e.g. " seal=1"): 0 with its socket in sock,
 * or -errno (the error printed). */
static int create(struct sd_exports *xs, const char *dir, const char *slabs,
                  const char *more, char *sock)
{
    char line[1024], err[SD_ERRLEN] = "";
    struct sd_export_spec spec;
    int ret;

    snprintf(line, sizeof(line), "grant=" GRANT " key=" KEY " size=%llu "
             "slab_size=%llu local=%s/local/copy slabs=%s%s",
             4 * SLAB, SLAB, dir, slabs, more);
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

/* A new registry of exports in tmpdir, its one export restored from its
 * .conf (a restart). */
static struct sd_exports *restored(void)
{
    struct sd_exports *xs = NULL;
    char err[SD_ERRLEN];

    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(xs && sd_exports_restore(xs) == 1);
    return xs;
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
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    sd_server_stop(server);
    sd_store_free(store);
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

/* A donor: a store of 16 slabs behind a TCP server on 127.0.0.1, lending
 * GRANT's slabs 0 to n - 1 (n <= 4) under KEY at consecutive addresses;
 * their table entry goes into slabs.  Returns its port. */
static uint16_t donor_lending(uint32_t n, struct sd_store **store,
                              struct sd_server **server, char *slabs,
                              size_t len)
{
    uint32_t idx[4] = { 0, 1, 2, 3 };
    uint8_t key[SD_KEY_LEN];
    char err[SD_ERRLEN];
    uint64_t addrs[4];
    uint16_t port;
    size_t done;

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    CHECK(sd_store_new(16 * SLAB, store) == 0);
    CHECK(sd_tcp_server_start(*store, "127.0.0.1", 0, NULL, server, err,
                              sizeof(err)) == 0);
    port = sd_server_port(*server);
    CHECK(sd_store_alloc(*store, grant_bin, key, SLAB, idx, n, addrs,
                         &done) == 0 && done == n);
    snprintf(slabs, len, "0-%u@tcp://127.0.0.1:%u@%llu@0", n - 1, port,
             (unsigned long long)addrs[0]);
    return port;
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
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    sd_server_stop(server);
    sd_store_free(store);
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
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    sd_store_free(store);
}

/* ---- adoption ---- */

#define APAGES (4 * SLAB / 4096)        /* the adopted export's pages */
#define PPS (SLAB / 4096)               /* pages per slab */

/* What the source host left on the donors: page p is zeros when p % 3 is
 * 0, else bytes (p % 251) + 1. */
static void source_page(uint64_t p, uint8_t *page)
{
    memset(page, p % 3 ? (int)(p % 251) + 1 : 0, 4096);
}

static void fill_donor(struct sd_store *store, uint32_t slab,
                       const uint8_t *key)
{
    uint8_t page[4096];
    uint64_t p;

    for (p = slab * PPS; p < (slab + 1) * PPS; p++) {
        source_page(p, page);
        if (sd_store_access(store, SD_OP_WRITE, grant_bin, key, slab,
                            (p - slab * PPS) * 4096, page, 4096, NULL)) {
            tc_die("fill_donor");
        }
    }
}

/* Poll the export's stats until rebuild_left is want (10 s at most). */
static int rebuild_left_is(struct sd_exports *xs, uint64_t want)
{
    struct sd_export_stats st;
    int i;

    for (i = 0; i < 1000; i++) {
        if (sd_exports_stats(xs, grant_bin, &st) == 0 &&
            st.rebuild_left == want) {
            return 1;
        }
        usleep(10000);
    }
    fprintf(stderr, "rebuild_left=%llu, not %llu\n",
            (unsigned long long)st.rebuild_left, (unsigned long long)want);
    return 0;
}

static void conf_path(char *path, size_t len)
{
    snprintf(path, len, "%s/exports/" GRANT ".conf", tmpdir);
}

/* Whether the export's .conf holds text (10 s at most: it is written
 * after the rebuild moves on). */
static int conf_has(const char *text, int want)
{
    char path[256], line[4096];
    int i;

    conf_path(path, sizeof(path));
    for (i = 0; i < 1000; i++) {
        FILE *f = fopen(path, "r");
        int has = f && fgets(line, sizeof(line), f) && strstr(line, text);

        if (f) {
            fclose(f);
        }
        if (has == want) {
            return 1;
        }
        usleep(10000);
    }
    return 0;
}

/* A free TCP port of 127.0.0.1 (nothing listens on it). */
static uint16_t free_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
        getsockname(fd, (struct sockaddr *)&sa, &len)) {
        tc_die("free_port");
    }
    close(fd);
    return ntohs(sa.sin_port);
}

/* Rewrite the export's .conf as the code before EXPORT_REBUILD wrote it:
 * without rebuild_started=. */
static void conf_make_old(void)
{
    char path[256], line[4096], *at;
    FILE *f;

    conf_path(path, sizeof(path));
    f = fopen(path, "r");
    if (!f || !fgets(line, sizeof(line), f)) {
        tc_die("conf_make_old: read");
    }
    fclose(f);
    at = strstr(line, " rebuild_started=");
    if (!at) {
        tc_die("conf_make_old: no rebuild_started=");
    }
    memmove(at, at + strlen(" rebuild_started=1"),
            strlen(at + strlen(" rebuild_started=1")) + 1);
    f = fopen(path, "w");
    if (!f || fputs(line, f) < 0 || fclose(f)) {
        tc_die("conf_make_old: write");
    }
}

/* A live migration's destination: the source wrote its pages to three
 * donors (D1: slab 0, D2: slab 1, D3: slabs 2-3); this host adopts the
 * table with a local copy that holds junk.  The rebuild waits for
 * sd_exports_rebuild (EXPORT_REBUILD), across a restart, while reads come
 * from the donors.  Then D2 does not listen until late, so the rebuild
 * waits at slab 1 while the guest writes: whole pages, part of a page,
 * zeros, on a healthy donor (D3, whose copy is then altered behind the
 * export's back) and on slab 1, which degrades.  A restart from a .conf
 * as written before EXPORT_REBUILD existed finds the export adopted, its
 * rebuild running; once D2 answers, the rebuild ends and the local copy
 * holds exactly the guest's disk. */
static void test_adopt(void)
{
    static uint8_t want[4 * SLAB], got[4 * SLAB];
    uint8_t key[SD_KEY_LEN], page[4096];
    char sock[256], err[SD_ERRLEN], slabs[512], line[1024], path[256];
    struct sd_server *server[3];
    struct sd_store *store[3];
    struct sd_export_stats st;
    struct sd_store_stats ss;
    struct sd_export_spec spec;
    struct sd_exports *xs;
    struct sd_bitmap ext;
    uint32_t idx[2], n;
    uint64_t addr[2], p, stored = 0, left;
    uint16_t d2_port = free_port();
    size_t done;
    char *text;
    int d, fd, copy;

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    for (p = 0; p < APAGES; p++) {
        source_page(p, want + p * 4096);
    }
    for (d = 0; d < 3; d++) {
        CHECK(sd_store_new(4 * SLAB, &store[d]) == 0);
        CHECK(d == 1 || sd_tcp_server_start(store[d], "127.0.0.1", 0, NULL,
                                            &server[d], err,
                                            sizeof(err)) == 0);
    }
    /* D2 holds slab 1 (the source's pages, but for page 70, which the
     * guest writes here later) and serves it once it listens. */
    idx[0] = 1;
    CHECK(sd_store_alloc(store[1], grant_bin, key, SLAB, idx, 1, addr,
                         &done) == 0);
    fill_donor(store[1], 1, key);
    idx[0] = 0;
    CHECK(sd_store_alloc(store[0], grant_bin, key, SLAB, idx, 1, addr,
                         &done) == 0);
    fill_donor(store[0], 0, key);
    snprintf(slabs, sizeof(slabs), "0@tcp://127.0.0.1:%u@%llu@0,",
             sd_server_port(server[0]), (unsigned long long)addr[0]);
    idx[0] = 2;
    idx[1] = 3;
    CHECK(sd_store_alloc(store[2], grant_bin, key, SLAB, idx, 2, addr,
                         &done) == 0 && addr[1] == addr[0] + SLAB);
    fill_donor(store[2], 2, key);
    fill_donor(store[2], 3, key);
    snprintf(slabs + strlen(slabs), sizeof(slabs) - strlen(slabs),
             "1@tcp://127.0.0.1:%u@0@0,2-3@tcp://127.0.0.1:%u@%llu@0",
             d2_port, sd_server_port(server[2]),
             (unsigned long long)addr[0]);

    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    /* Junk in the local copy, on a page the source left zero. */
    snprintf(path, sizeof(path), "%s/local/copy", tmpdir);
    copy = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(copy >= 0 && pwrite(copy, "junk", 4, 6 * 4096) == 4);
    close(copy);
    snprintf(line, sizeof(line), "grant=" GRANT " key=" KEY " size=%llu "
             "slab_size=%llu local=%s slabs=%s adopt=1", 4 * SLAB, SLAB,
             path, slabs);
    CHECK(parse_spec(line, &spec, err) == 0);
    CHECK(sd_exports_create(xs, &spec, sock, 256, err, sizeof(err)) == 0);
    /* Waiting: every page is on the donors, read from there, and no
     * thread copies any (nothing runs that could lower rebuild_left). */
    CHECK(conf_has(" adopt=1 rebuilt=0 rebuild_started=0", 1));
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, (uint32_t)SLAB, got) == 0 &&
          memcmp(got, want, SLAB) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.rebuild_left == APAGES && st.stored_pages == APAGES);
    idx[0] = 0;
    CHECK(sd_exports_reclaim(xs, grant_bin, idx, 1, &n, err,
                             sizeof(err)) == -EBUSY);
    close(fd);
    /* A restart keeps it waiting. */
    sd_exports_free(xs);
    xs = restored();
    CHECK(conf_has(" adopt=1 rebuilt=0 rebuild_started=0", 1));
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_READ, 2 * SLAB, (uint32_t)SLAB, got) == 0 &&
          memcmp(got, want + 2 * SLAB, SLAB) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.rebuild_left == APAGES);
    close(fd);
    CHECK(sd_exports_rebuild(xs, (const uint8_t[SD_UUID_LEN]){ 0 }, &left,
                             err, sizeof(err)) == -ENOENT);

    /* EXPORT_REBUILD: slab 0 is rebuilt (its zero pages left out), then
     * D2 is not there.  Asked again, it changes nothing. */
    CHECK(sd_exports_rebuild(xs, grant_bin, &left, err, sizeof(err)) == 0
          && left <= APAGES);
    CHECK(rebuild_left_is(xs, 3 * PPS));
    CHECK(conf_has(" adopt=1 rebuilt=1 rebuild_started=1", 1));
    CHECK(sd_exports_rebuild(xs, grant_bin, &left, err, sizeof(err)) == 0
          && left == 3 * PPS);
    CHECK(conf_has(" adopt=1 rebuilt=1 rebuild_started=1", 1));
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.stored_pages == PPS * 2 / 3 + 3 * PPS);
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, (uint32_t)SLAB, got) == 0 &&
          memcmp(got, want, SLAB) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 2 * SLAB, (uint32_t)(2 * SLAB), got) == 0
          && memcmp(got, want + 2 * SLAB, 2 * SLAB) == 0);
    /* Only a rebuilt slab can be reclaimed: D2 still holds slab 1's. */
    idx[0] = 1;
    CHECK(sd_exports_reclaim(xs, grant_bin, idx, 1, &n, err,
                             sizeof(err)) == -EBUSY &&
          strncmp(err, "slabs: slab 1 of this adopted export", 36) == 0);
    CHECK(sd_exports_reclaim(xs, grant_bin, NULL, 0, &n, err,
                             sizeof(err)) == -EBUSY);
    idx[0] = 0;
    CHECK(sd_exports_reclaim(xs, grant_bin, idx, 1, &n, err,
                             sizeof(err)) == 0 && n == 1);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, (uint32_t)SLAB, got) == 0 &&
          memcmp(got, want, SLAB) == 0);

    /* Slab 2 (D3, healthy, not rebuilt): a whole page, part of a page,
     * a page of zeros; then D3's copy of the whole pages is altered: the
     * rebuild must keep the guest's. */
    memset(want + 130 * 4096, 0xa1, 4096);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 130 * 4096, 4096,
                want + 130 * 4096) == 0);
    memset(want + 131 * 4096 + 1024, 0xb2, 512);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 131 * 4096 + 1024, 512,
                want + 131 * 4096 + 1024) == 0);
    memset(want + 133 * 4096, 0, 4096);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 133 * 4096, 4096,
                want + 133 * 4096) == 0);
    memset(page, 0xee, sizeof(page));
    CHECK(sd_store_access(store[2], SD_OP_WRITE, grant_bin, key, 2,
                          2 * 4096, page, 4096, NULL) == 0 &&
          sd_store_access(store[2], SD_OP_WRITE, grant_bin, key, 2,
                          5 * 4096, page, 4096, NULL) == 0);
    /* Slab 1 (D2 away): a write degrades it and lands in the copy; a
     * page the copy lacks cannot be read, nor written in part. */
    memset(want + 70 * 4096, 0xc3, 4096);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 70 * 4096, 4096, want + 70 * 4096) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 70 * 4096, 4096, got) == 0 &&
          memcmp(got, want + 70 * 4096, 4096) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 71 * 4096, 4096, got) == NBD_EIO);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 73 * 4096 + 100, 512, page) == NBD_EIO);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.degraded_slabs == 1 && st.rebuild_left == 3 * PPS);
    close(fd);

    /* A restart, from a .conf of the code before EXPORT_REBUILD: the
     * export comes back adopted, the rebuild running from slab 1. */
    sd_exports_free(xs);
    CHECK(conf_has(" local_slabs=0,1 adopt=1 rebuilt=1 rebuild_started=1",
                   1));
    conf_make_old();
    CHECK(conf_has(" local_slabs=0,1 adopt=1 rebuilt=1\n", 1));
    xs = restored();
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.rebuild_left == 3 * PPS);
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_READ, 70 * 4096, 4096, got) == 0 &&
          memcmp(got, want + 70 * 4096, 4096) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 3 * SLAB, (uint32_t)SLAB, got) == 0 &&
          memcmp(got, want + 3 * SLAB, SLAB) == 0);

    /* D2 is back (its page 70 is the source's, older than the guest's):
     * the rebuild goes on, with no EXPORT_REBUILD, and ends.  Asked now,
     * there is nothing left to rebuild. */
    CHECK(sd_tcp_server_start(store[1], "127.0.0.1", d2_port, NULL,
                              &server[1], err, sizeof(err)) == 0);
    CHECK(rebuild_left_is(xs, 0));
    CHECK(conf_has("adopt=", 0));
    CHECK(sd_exports_rebuild(xs, grant_bin, &left, err, sizeof(err)) == 0
          && left == 0);
    CHECK(conf_has("rebuil", 0));
    /* Served from the local copy alone, it is the guest's disk. */
    CHECK(sd_exports_reclaim(xs, grant_bin, NULL, 0, &n, err,
                             sizeof(err)) == 0 && n == 2);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, (uint32_t)(4 * SLAB), got) == 0 &&
          memcmp(got, want, 4 * SLAB) == 0);
    close(fd);
    copy = open(path, O_RDONLY);
    CHECK(copy >= 0 && pread(copy, got, 4 * SLAB, 0) == (ssize_t)(4 * SLAB)
          && memcmp(got, want, 4 * SLAB) == 0);
    /* Its data: the non-zero pages and the page the guest zeroed. */
    CHECK(sd_bitmap_init(&ext, APAGES) == 0 &&
          sd_bitmap_load_extents(&ext, copy) == 0);
    for (p = 0; p < APAGES; p++) {
        int data = p == 133;

        source_page(p, page);
        data |= memcmp(want + p * 4096, (uint8_t[4096]){ 0 }, 4096) != 0;
        stored += data;
        if (sd_bitmap_test(&ext, p) != data) {
            fprintf(stderr, "page %llu: data %d in the copy\n",
                    (unsigned long long)p, !data);
            CHECK(0);
        }
    }
    sd_bitmap_destroy(&ext);
    close(copy);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.stored_pages == stored && st.rebuild_left == 0);
    CHECK(sd_exports_describe(xs, grant_bin, &text) == 0 &&
          strstr(text, " local_slabs=0,1,2,3") && !strstr(text, "adopt"));
    free(text);

    /* Dropping it removes the copy and frees nothing on the donors. */
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    CHECK(access(path, F_OK) != 0);
    for (d = 0; d < 3; d++) {
        sd_store_stats(store[d], &ss);
        CHECK(ss.slabs == (d == 2 ? 2U : 1U));
    }
    sd_exports_free(xs);
    for (d = 0; d < 3; d++) {
        sd_server_stop(server[d]);
        sd_store_free(store[d]);
    }
}

/* A byte of page p of the donor's copy (slab 0 on store), flipped. */
static void flip_on_donor(struct sd_store *store, const uint8_t *key,
                          uint64_t p)
{
    uint8_t page[4096], seal[SD_SEAL_LEN];
    uint32_t slab = (uint32_t)(p / PPS);
    uint64_t off = (p % PPS) * 4096;

    if (sd_store_access(store, SD_OP_READ, grant_bin, key, slab, off, page,
                        4096, seal) ||
        (page[100] ^= 0x01, 0) ||
        sd_store_access(store, SD_OP_WRITE, grant_bin, key, slab, off, page,
                        4096, seal)) {
        tc_die("flip_on_donor");
    }
}

/* The page key in the export's .conf (64 hex digits) into hex. */
static int conf_page_key(char *hex)
{
    char path[256], line[4096], *k;
    FILE *f;

    conf_path(path, sizeof(path));
    f = fopen(path, "r");
    if (!f || !fgets(line, sizeof(line), f)) {
        if (f) {
            fclose(f);
        }
        return 0;
    }
    fclose(f);
    k = strstr(line, " page_key=");
    if (!k || strlen(k) < 10 + 64) {
        return 0;
    }
    memcpy(hex, k + 10, 64);
    hex[64] = '\0';
    return 1;
}

/* A sealed export (seal=1) on one TCP donor: the donor holds ciphertext
 * and seals; reads open them; a byte flipped on the donor is caught and
 * the page read from the local copy; unaligned requests are refused; the
 * .conf keeps the key (mode 0600), EXPORT_DESCRIBE does not show it; a
 * restart reads the donor's pages again.  Then the same pages adopted
 * (its .conf with the key, as after a restart): the altered page fails
 * with EIO, never-written pages read zeros, and the rebuild leaves the
 * altered page out of the local copy. */
static void test_sealed_export(void)
{
    uint8_t key[SD_KEY_LEN], *buf = malloc(2 * SLAB), *back = malloc(SLAB);
    uint8_t seals[2 * SD_SEAL_LEN];
    char sock[256], err[SD_ERRLEN], slabs[512], line[1024], path[256];
    char hex[65], *text;
    struct sd_export_stats st;
    struct sd_export_spec spec;
    struct sd_server *server;
    struct sd_exports *xs;
    struct sd_store *store;
    uint64_t p;
    struct stat sb;
    FILE *f;
    int fd, i;

    /* The table's fields. */
    CHECK(parse_spec(SPEC4 "slabs= seal=2", &spec, err) == -EINVAL &&
          strstr(err, "seal"));
    CHECK(parse_spec(SPEC4 "slabs= page_key=" KEY, &spec, err) == -EINVAL &&
          strstr(err, "page_key") && strstr(err, "seal=1"));
    CHECK(parse_spec(SPEC4 "slabs= seal=1 page_key=12", &spec, err) ==
          -EINVAL && strstr(err, "page_key"));
    CHECK(parse_spec(SPEC4 "slabs= seal=1 page_key=" KEY, &spec, err) == 0);
    CHECK(spec.seal && spec.has_page_key);
    text = sd_export_spec_format(&spec);
    CHECK(text && strstr(text, " seal=1") && !strstr(text, "page_key") &&
          !strstr(text, "445566778899aabbccddeeff00112233445566778899"
                        "aabbccddeeff") == 0);
    free(text);
    sd_export_spec_free(&spec);

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    /* Over rdma:// too: the fabric transport carries the seals. */
    snprintf(line, sizeof(line), "grant=" GRANT " key=" KEY " size=%llu "
             "slab_size=%llu local=%s/local/copy slabs=0@rdma://127.0.0.1:1@0@5 "
             "seal=1", 4 * SLAB, SLAB, tmpdir);
    CHECK(parse_spec(line, &spec, err) == 0);
    CHECK(sd_exports_create(xs, &spec, sock, 256, err, sizeof(err)) == 0);
    sd_exports_free(xs);
    unlink(sock);

    donor_lending(4, &store, &server, slabs, sizeof(slabs));
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, tmpdir, slabs, " seal=1", sock) == 0);
    fd = open_export(sock);
    CHECK(tc_min_block == 4096);

    for (i = 0; i < (int)(2 * SLAB); i++) {
        buf[i] = (uint8_t)(i * 7 + i / 4096 + 1);
    }
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB / 2, (uint32_t)SLAB, buf) == 0);
    /* The donor has ciphertext and sealed pages. */
    CHECK(sd_store_access(store, SD_OP_READ, grant_bin, key, 0, SLAB / 2,
                          back, 8192, seals) == 0);
    CHECK(memcmp(back, buf, 4096) != 0 && memcmp(back + 4096, buf + 4096,
                                                 4096) != 0);
    CHECK(seals[12] == sd_seal_version() && seals[SD_SEAL_LEN + 12] ==
          sd_seal_version());
    CHECK(reads_back(fd, buf, back));
    /* Pages never written: zeros without a trip. */
    CHECK(tc_io(fd, NBD_CMD_READ, 3 * SLAB, 8192, back) == 0 &&
          back[0] == 0 && back[8191] == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.auth_failures == 0 && st.local_reads == 0 &&
          st.zero_reads == 1 && st.remote_errors == 0);

    /* Unaligned requests: refused, the connection goes on. */
    CHECK(tc_io(fd, NBD_CMD_READ, 512, 4096, back) == NBD_EINVAL);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 512, back) == NBD_EINVAL);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 4096 + 512, 4096, buf) == NBD_EINVAL);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB / 2, 4096, back) == 0 &&
          memcmp(back, buf, 4096) == 0);

    /* A byte flipped on the donor: caught, read from the local copy. */
    p = SLAB / 2 / 4096 + 2;
    flip_on_donor(store, key, p);
    CHECK(tc_io(fd, NBD_CMD_READ, p * 4096, 4096, back) == 0 &&
          memcmp(back, buf + 2 * 4096, 4096) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.auth_failures == 1 && st.local_reads == 1 &&
          st.remote_errors == 0 && st.degraded_slabs == 0);

    /* The key: in the .conf (mode 0600, directory 0700), not described. */
    CHECK(conf_page_key(hex) && conf_has(" seal=1", 1));
    conf_path(path, sizeof(path));
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
    snprintf(path, sizeof(path), "%s/exports", tmpdir);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    CHECK(sd_exports_describe(xs, grant_bin, &text) == 0);
    CHECK(strstr(text, " seal=1") && !strstr(text, "page_key") &&
          !strstr(text, hex));
    free(text);

    /* A restart: the key comes back from the .conf; the donor's pages
     * open again. */
    sd_exports_free(xs);
    close(fd);
    xs = restored();
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB / 2, 8192, back) == 0 &&
          memcmp(back, buf, 8192) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, (uint32_t)SLAB / 2, back) == 0 &&
          memcmp(back, buf + SLAB / 2, SLAB / 2) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.auth_failures == 0 && st.local_reads == 0);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);

    /* Adopted (no local copy): the .conf an adoption has once its key is
     * installed, restored. */
    conf_path(path, sizeof(path));
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "EXPORT_CREATE grant=" GRANT " key=" KEY " size=%llu "
                "slab_size=%llu local=%s/local/copy slabs=%s seal=1 adopt=1 "
                "rebuilt=0 rebuild_started=0 page_key=%s\n", 4 * SLAB, SLAB,
                tmpdir, slabs, hex);
        fclose(f);
    }
    xs = restored();
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_READ, p * 4096, 4096, back) == NBD_EIO);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB / 2, 8192, back) == 0 &&
          memcmp(back, buf, 8192) == 0);
    /* Never written by the source: zeros (the donor's, no seal). */
    memset(back, 0xff, 8192);
    CHECK(tc_io(fd, NBD_CMD_READ, 3 * SLAB, 8192, back) == 0 &&
          back[0] == 0 && back[8191] == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.auth_failures == 1);
    /* The rebuild copies the rest, but never the altered page. */
    CHECK(sd_exports_rebuild(xs, grant_bin, &p, err, sizeof(err)) == 0);
    CHECK(rebuild_left_is(xs, 0));
    CHECK(conf_has(" adopt=1", 0) && conf_has(" page_key=", 1));
    p = SLAB / 2 / 4096 + 2;
    CHECK(tc_io(fd, NBD_CMD_READ, p * 4096, 4096, back) == NBD_EIO);
    CHECK(reads_back(fd, buf, back) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB / 2, 8192, back) == 0 &&
          memcmp(back, buf, 8192) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.auth_failures == 2);
    /* The guest writes the page again: it reads back. */
    CHECK(tc_io(fd, NBD_CMD_WRITE, p * 4096, 4096, buf) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, p * 4096, 4096, back) == 0 &&
          memcmp(back, buf, 4096) == 0);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    sd_server_stop(server);
    sd_store_free(store);
    free(buf);
    free(back);
}

/* A live migration's page key handoff: the destination's adopted sealed
 * export fails donor I/O with EIO until the source's key, wrapped for its
 * offer, is installed; then it reads the source's pages, and still does
 * after a restart (the key is in its .conf). */
static void test_key_handoff(void)
{
    uint8_t key[SD_KEY_LEN], *buf = malloc(SLAB), *back = malloc(SLAB);
    uint8_t pub[SD_KW_PUB_LEN], blob[SD_KW_BLOB_LEN];
    char sock[2][256], err[SD_ERRLEN], slabs[512];
    char dir[2][128];
    struct sd_export_stats st;
    struct sd_server *server;
    struct sd_exports *xs[2];
    struct sd_store *store;
    int fd[2], i;

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    donor_lending(4, &store, &server, slabs, sizeof(slabs));
    for (i = 0; i < 2; i++) {
        snprintf(dir[i], sizeof(dir[i]), "%s/%s", tmpdir, i ? "dst" : "src");
        CHECK(sd_exports_new(dir[i], dir[i], (uid_t)-1, (gid_t)-1, &xs[i],
                             err, sizeof(err)) == 0);
        CHECK(create(xs[i], dir[i], slabs, i ? " seal=1 adopt=1" :
                     " seal=1", sock[i]) == 0);
        fd[i] = open_export(sock[i]);
    }
    for (i = 0; i < (int)SLAB; i++) {
        buf[i] = (uint8_t)(i * 11 + i / 4096 + 3);
    }
    CHECK(tc_io(fd[0], NBD_CMD_WRITE, SLAB / 2, (uint32_t)SLAB, buf) == 0);
    CHECK(sd_exports_key_offer(xs[0], grant_bin, pub) == -EALREADY);

    /* Waiting for the key: donor reads and writes fail. */
    CHECK(tc_io(fd[1], NBD_CMD_READ, SLAB / 2, 4096, back) == NBD_EIO);
    CHECK(tc_io(fd[1], NBD_CMD_WRITE, 3 * SLAB, 4096, buf) == NBD_EIO);
    CHECK(sd_exports_key_offer(xs[1], grant_bin, pub) == 0);
    CHECK(sd_exports_key_wrap(xs[1], grant_bin, pub, blob, err,
                              sizeof(err)) == -ENOKEY);
    CHECK(sd_exports_key_wrap(xs[0], grant_bin, pub, blob, err,
                              sizeof(err)) == 0);
    blob[50] ^= 1;
    CHECK(sd_exports_key_install(xs[1], grant_bin, blob, err,
                                 sizeof(err)) == -EBADMSG &&
          strstr(err, "wrapped"));
    blob[50] ^= 1;
    CHECK(sd_exports_key_install(xs[1], grant_bin, blob, err,
                                 sizeof(err)) == 0);
    CHECK(sd_exports_key_install(xs[1], grant_bin, blob, err,
                                 sizeof(err)) == -EALREADY);
    CHECK(sd_exports_key_offer(xs[1], grant_bin, pub) == -EALREADY);

    memset(back, 0, SLAB);
    CHECK(tc_io(fd[1], NBD_CMD_READ, SLAB / 2, (uint32_t)SLAB, back) == 0 &&
          memcmp(back, buf, SLAB) == 0);
    CHECK(sd_exports_stats(xs[1], grant_bin, &st) == 0 &&
          st.auth_failures == 0);

    /* The destination restarts: the key is read back from its .conf. */
    close(fd[1]);
    sd_exports_free(xs[1]);
    CHECK(sd_exports_new(dir[1], dir[1], (uid_t)-1, (gid_t)-1, &xs[1], err,
                         sizeof(err)) == 0);
    CHECK(sd_exports_restore(xs[1]) == 1);
    fd[1] = open_export(sock[1]);
    memset(back, 0, SLAB);
    CHECK(tc_io(fd[1], NBD_CMD_READ, SLAB / 2, (uint32_t)SLAB, back) == 0 &&
          memcmp(back, buf, SLAB) == 0);
    for (i = 0; i < 2; i++) {
        close(fd[i]);
        CHECK(sd_exports_drop(xs[i], grant_bin, 1) == 0);
        sd_exports_free(xs[i]);
    }
    sd_server_stop(server);
    sd_store_free(store);
    free(buf);
    free(back);
}

/* Read len bytes at off into buf until it works (5 s at most: a donor
 * that came back is reconnected to within a second); the last error. */
static int read_until_ok(int fd, uint64_t off, uint32_t len, uint8_t *buf)
{
    int i, ret = -1;

    for (i = 0; i < 500 && ret != 0; i++) {
        ret = tc_io(fd, NBD_CMD_READ, off, len, buf);
        if (ret) {
            usleep(10000);
        }
    }
    return ret;
}

/* The overlay of a sealed adopted export: its slab degrades (a write
 * its donor missed) while the pages the copy lacks are still read from
 * the donor; those open, the page written here comes from the copy, and
 * an altered one fails with EIO. */
static void test_sealed_overlay(void)
{
    uint8_t key[SD_KEY_LEN], *buf = malloc(SLAB), *back = malloc(SLAB);
    uint8_t *mine = malloc(4096);
    char sock[256], err[SD_ERRLEN], slabs[512], dir[2][128];
    char path[256], hex[65] = "";
    struct sd_export_stats st;
    struct sd_server *server;
    struct sd_exports *xs;
    struct sd_store *store;
    uint64_t w = PPS + 5;
    uint16_t port;
    FILE *f;
    int fd, i;

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    port = donor_lending(4, &store, &server, slabs, sizeof(slabs));
    /* The source writes slab 1 sealed. */
    snprintf(dir[0], sizeof(dir[0]), "%s/ova", tmpdir);
    snprintf(dir[1], sizeof(dir[1]), "%s/ovb", tmpdir);
    CHECK(sd_exports_new(dir[0], dir[0], (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(create(xs, dir[0], slabs, " seal=1", sock) == 0);
    fd = open_export(sock);
    for (i = 0; i < (int)SLAB; i++) {
        buf[i] = (uint8_t)(i * 3 + i / 4096 + 9);
    }
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, (uint32_t)SLAB, buf) == 0);
    close(fd);
    snprintf(path, sizeof(path), "%s/exports/" GRANT ".conf", dir[0]);
    f = fopen(path, "r");
    if (f) {
        char text[4096], *k;

        if (fgets(text, sizeof(text), f) &&
            (k = strstr(text, " page_key=")) != NULL) {
            snprintf(hex, sizeof(hex), "%.64s", k + 10);
        }
        fclose(f);
    }
    CHECK(strlen(hex) == 64);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);

    /* The destination, adopted with the key; the donor away. */
    sd_server_stop(server);
    CHECK(mkdir(dir[1], 0700) == 0);
    snprintf(path, sizeof(path), "%s/exports", dir[1]);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/exports/" GRANT ".conf", dir[1]);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "EXPORT_CREATE grant=" GRANT " key=" KEY " size=%llu "
                "slab_size=%llu local=%s/local/copy slabs=%s seal=1 adopt=1 "
                "rebuilt=0 rebuild_started=0 page_key=%s\n", 4 * SLAB, SLAB,
                dir[1], slabs, hex);
        fclose(f);
    }
    CHECK(sd_exports_new(dir[1], dir[1], (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(sd_exports_restore(xs) == 1);
    snprintf(sock, sizeof(sock), "%s/" GRANT ".sock", dir[1]);
    fd = open_export(sock);
    /* A whole page written here: the donor misses it, the slab
     * degrades, the copy has the page. */
    memset(mine, 0x77, 4096);
    CHECK(tc_io(fd, NBD_CMD_WRITE, w * 4096, 4096, mine) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.degraded_slabs == 1);

    /* The donor is back: the other pages come from it, opened; its stale
     * copy of the page written here (altered too) is not even opened. */
    flip_on_donor(store, key, w);
    CHECK(sd_tcp_server_start(store, "127.0.0.1", port, NULL, &server, err,
                              sizeof(err)) == 0);
    CHECK(read_until_ok(fd, SLAB, 8 * 4096, back) == 0);
    CHECK(memcmp(back, buf, 5 * 4096) == 0 &&
          memcmp(back + 5 * 4096, mine, 4096) == 0 &&
          memcmp(back + 6 * 4096, buf + 6 * 4096, 2 * 4096) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.auth_failures == 0);
    /* An altered page the copy lacks: EIO. */
    flip_on_donor(store, key, PPS + 2);
    CHECK(tc_io(fd, NBD_CMD_READ, (PPS + 2) * 4096, 4096, back) == NBD_EIO);
    CHECK(tc_io(fd, NBD_CMD_READ, w * 4096, 4096, back) == 0 &&
          memcmp(back, mine, 4096) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.auth_failures == 1);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    sd_server_stop(server);
    sd_store_free(store);
    free(buf);
    free(back);
    free(mine);
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
    test_crash_after_degrade();
    test_local_copy_fails();
    test_adopt();
    test_sealed_export();
    test_key_handoff();
    test_sealed_overlay();
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    if (system(cmd)) {
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    }
    return check_summary();
}
