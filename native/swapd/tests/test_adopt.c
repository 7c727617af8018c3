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
 * Tests of adopted and sealed exports, driven over NBD: an adopted export
 * (live migration's destination) whose local copy is rebuilt from its
 * donors once asked, while the guest writes, across restarts; a sealed
 * export (ciphertext on the donor, a page altered there caught, its key
 * kept and restored, an adoption that has no other copy of the altered
 * page, its overlay of a degraded slab) and the page key's handoff to a
 * migration's destination.
 * Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bitmap.h"
#include "export_fixture.h"
#include "seal.h"
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
/* At path, the .conf of a sealed export over slabs adopted with its page
 * key (hex) installed, its rebuild not asked for yet, its local copy in
 * dir. */
static void write_adopted_conf(const char *path, const char *dir,
                               const char *slabs, const char *hex)
{
    FILE *f = fopen(path, "w");

    CHECK(f != NULL);
    if (f) {
        fprintf(f, "EXPORT_CREATE grant=" GRANT " key=" KEY " size=%llu "
                "slab_size=%llu local=%s/local/copy slabs=%s seal=1 adopt=1 "
                "rebuilt=0 rebuild_started=0 page_key=%s\n", 4 * SLAB, SLAB,
                dir, slabs, hex);
        fclose(f);
    }
}

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
    write_adopted_conf(path, tmpdir, slabs, hex);
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
    export_done(fd, xs, server, store);
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
    write_adopted_conf(path, dir[1], slabs, hex);
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
    export_done(fd, xs, server, store);
    free(buf);
    free(back);
    free(mine);
}

int main(void)
{
    if (fixture_start()) {
        return 2;
    }
    test_adopt();
    test_sealed_export();
    test_key_handoff();
    test_sealed_overlay();
    fixture_end();
    return check_summary();
}
