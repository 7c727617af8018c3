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
 * Tests of the promotion of a slab from the local copy to a donor
 * (promote.c), over NBD and an in-process TCP donor: the pages land on the
 * donor and are read from there, the table says so across a restart;
 * a guest writing to the slab throughout loses nothing (the donor ends
 * with every page the local copy has); a sealed export's pages reach the
 * donor as ciphertext; a slab the donor did not prepare stays local, and
 * bad requests are refused with their errno.  The last two over the
 * fabric transport too (libfabric's tcp provider).
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "args.h"
#include "check.h"
#include "export.h"
#include "export_spec.h"
#include "nbd_client.h"
#include "scratch_dir.h"
#include "store.h"
#include "transport.h"
#include "util.h"

#define GRANT "0a1b2c3d-0000-4000-8000-00000000beef"
#define KEY "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
/* More pages than a promotion copies with writes held: it makes passes. */
#define SLAB (4 * 1024 * 1024ULL)
#define PAGES (SLAB / SD_PAGE_SIZE)
#define NSLABS 3

static char tmpdir[64];
static uint8_t grant_bin[SD_UUID_LEN], key[SD_KEY_LEN];
/* The donors' transport: "tcp", or "rdma" (libfabric's tcp provider). */
static const char *scheme = "tcp";

struct donor {
    struct sd_store *store;
    struct sd_server *server;
    char endpoint[64];
};

static void donor_start(struct donor *d)
{
    char err[SD_ERRLEN];

    CHECK(sd_store_new(8 * SLAB, &d->store) == 0);
    CHECK((strcmp(scheme, "rdma") == 0 ?
           sd_fabric_server_start : sd_tcp_server_start)(
              d->store, "127.0.0.1", 0, NULL, &d->server, err,
              sizeof(err)) == 0);
    snprintf(d->endpoint, sizeof(d->endpoint), "%s://127.0.0.1:%u", scheme,
             sd_server_port(d->server));
}

static void donor_stop(struct donor *d)
{
    sd_server_stop(d->server);
    sd_store_free(d->store);
}

/* The donor prepares slabs 1 and 2 of the grant (a donor holds one
 * allocation per grant); their addresses in addrs. */
static void prepare(struct donor *d, uint64_t addrs[2])
{
    static const uint32_t idx[2] = { 1, 2 };
    size_t done = 0;

    CHECK(sd_store_alloc(d->store, grant_bin, key, SLAB, idx, 2, addrs,
                         &done) == 0 && done == 2);
}

/* An export of GRANT with its slabs all local (more: e.g. " seal=1"). */
static struct sd_exports *export_new(const char *more, char *sock)
{
    char line[1024], err[SD_ERRLEN] = "";
    struct sd_export_spec spec;
    struct sd_exports *xs;
    struct sd_args args;

    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=%llu slab_size=%llu local=%s/local/copy slabs=%s",
             NSLABS * SLAB, SLAB, tmpdir, more);
    CHECK(sd_control_parse_line(line, &args, err, sizeof(err)) == 0);
    CHECK(sd_export_spec_parse(&args, &spec, err, sizeof(err)) == 0);
    CHECK(sd_exports_create(xs, &spec, sock, 256, err, sizeof(err)) == 0);
    return xs;
}

static int open_export(const char *sock)
{
    int fd = tc_connect(sock);

    tc_greet(fd);
    if (tc_go(fd, "memagg-swap-" GRANT) != NSLABS * SLAB) {
        tc_die("size");
    }
    return fd;
}

/* Page p of slab 1 as generation gen writes it. */
static void fill(uint8_t *page, uint64_t p, uint32_t gen)
{
    size_t i;

    for (i = 0; i < SD_PAGE_SIZE; i++) {
        page[i] = (uint8_t)(p * 31 + gen * 7 + i / 64);
    }
}

static void write_slab1(int fd, uint32_t gen)
{
    uint8_t *buf = malloc(SLAB);
    uint64_t p;

    for (p = 0; p < PAGES; p++) {
        fill(buf + p * SD_PAGE_SIZE, p, gen);
    }
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, (uint32_t)SLAB, buf) == 0);
    free(buf);
}

/* Whether the donor's slab 1 holds what the local copy does, page for
 * page (plaintext: unsealed exports). */
static int donor_matches_local(struct donor *d)
{
    uint8_t *remote = malloc(SLAB), *local = malloc(SLAB);
    char path[128];
    int fd, same;

    snprintf(path, sizeof(path), "%s/local/copy", tmpdir);
    fd = open(path, O_RDONLY);
    same = fd >= 0 &&
           pread(fd, local, SLAB, (off_t)SLAB) == (ssize_t)SLAB &&
           sd_store_access(d->store, SD_OP_READ, grant_bin, key, 1, 0,
                           remote, (uint32_t)SLAB, NULL) == 0 &&
           memcmp(remote, local, SLAB) == 0;
    if (fd >= 0) {
        close(fd);
    }
    free(remote);
    free(local);
    return same;
}

static int reads_gen(int fd, uint32_t gen)
{
    uint8_t *buf = malloc(SLAB), page[SD_PAGE_SIZE];
    uint64_t p;
    int ok = tc_io(fd, NBD_CMD_READ, SLAB, (uint32_t)SLAB, buf) == 0;

    for (p = 0; ok && p < PAGES; p++) {
        fill(page, p, gen);
        ok = memcmp(buf + p * SD_PAGE_SIZE, page, SD_PAGE_SIZE) == 0;
    }
    free(buf);
    return ok;
}

static void test_promote(void)
{
    char sock[256], err[SD_ERRLEN], *text, want[128];
    struct sd_export_stats st;
    struct sd_exports *xs;
    struct donor d;
    uint64_t addrs[2], copied, local_reads;
    uint8_t *half;
    int fd;

    donor_start(&d);
    xs = export_new("", sock);
    fd = open_export(sock);
    write_slab1(fd, 1);
    /* Half of slab 2 written: only written pages are copied. */
    half = calloc(1, SLAB / 2);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 2 * SLAB, (uint32_t)(SLAB / 2), half) ==
          0);
    free(half);

    /* Refused: no such grant, slab or endpoint. */
    CHECK(sd_exports_promote(xs, key, 1, d.endpoint, 0, &copied, err,
                             sizeof(err)) == -ENOENT);
    CHECK(sd_exports_promote(xs, grant_bin, NSLABS, d.endpoint, 0, &copied,
                             err, sizeof(err)) == -EINVAL &&
          strncmp(err, "slab:", 5) == 0);
    CHECK(sd_exports_promote(xs, grant_bin, 1, "ftp://x:1", 0, &copied,
                             err, sizeof(err)) == -EINVAL &&
          strstr(err, "endpoint"));
    /* A slab the donor did not prepare: the donor refuses the copy, the
     * slab stays local and keeps its data. */
    CHECK(sd_exports_promote(xs, grant_bin, 1, d.endpoint, 0, &copied, err,
                             sizeof(err)) < 0 &&
          strstr(err, "stays in the local copy"));
    CHECK(reads_gen(fd, 1));
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0);
    local_reads = st.local_reads;
    CHECK(local_reads > 0);

    prepare(&d, addrs);
    CHECK(sd_exports_promote(xs, grant_bin, 1, d.endpoint, addrs[0],
                             &copied, err, sizeof(err)) == 0 &&
          copied == PAGES);
    CHECK(donor_matches_local(&d));
    /* Read from the donor now, not the local copy. */
    CHECK(reads_gen(fd, 1));
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.local_reads == local_reads && st.remote_errors == 0);
    /* Writes reach both. */
    write_slab1(fd, 2);
    CHECK(donor_matches_local(&d));
    CHECK(sd_exports_promote(xs, grant_bin, 1, d.endpoint, addrs[0],
                             &copied, err, sizeof(err)) == -EALREADY);
    CHECK(sd_exports_promote(xs, grant_bin, 2, d.endpoint, addrs[1],
                             &copied, err, sizeof(err)) == 0 &&
          copied == PAGES / 2);

    /* The table says so across a restart. */
    close(fd);
    sd_exports_free(xs);
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(sd_exports_restore(xs) == 1);
    CHECK(sd_exports_describe(xs, grant_bin, &text) == 0);
    snprintf(want, sizeof(want), "1-2@%s@", d.endpoint);
    CHECK(strstr(text, want) != NULL);
    free(text);
    fd = open_export(sock);
    CHECK(reads_gen(fd, 2));
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.local_reads == 0 && st.remote_errors == 0);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    donor_stop(&d);
}

struct writer {
    const char *sock;
    int stop;                   /* atomic */
    uint64_t writes;            /* atomic */
    int failed;
};

/* Writes pages of slab 1 over and over, each with the next generation,
 * until stopped. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    uint8_t page[SD_PAGE_SIZE];
    int fd = open_export(w->sock);
    uint64_t n;

    for (n = 0; !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE); n++) {
        uint64_t p = (n * 97) % PAGES;

        fill(page, p, (uint32_t)(n + 3));
        if (tc_io(fd, NBD_CMD_WRITE, SLAB + p * SD_PAGE_SIZE,
                  SD_PAGE_SIZE, page)) {
            w->failed = 1;
        }
        __atomic_add_fetch(&w->writes, 1, __ATOMIC_RELEASE);
    }
    close(fd);
    return NULL;
}

static void wait_writes(struct writer *w, uint64_t n)
{
    uint64_t deadline = sd_now_us() + 60000000ULL;

    while (__atomic_load_n(&w->writes, __ATOMIC_ACQUIRE) < n &&
           sd_now_us() < deadline) {
        usleep(1000);
    }
    CHECK(__atomic_load_n(&w->writes, __ATOMIC_ACQUIRE) >= n);
}

/* Per tier, what the ledger counts adds up to what is stored. */
static int ledger_holds(struct sd_exports *xs)
{
    struct sd_export_stats st;
    int t, ok = sd_exports_stats(xs, grant_bin, &st) == 0;

    for (t = 0; ok && t < SD_TIERS; t++) {
        const struct sd_export_tier *l = &st.tiers[t];

        ok = l->used + l->flushes + l->moved_out + l->evicts ==
             l->puts + l->moved_in;
        if (!ok) {
            fprintf(stderr, "  L%d: used %llu puts %llu in %llu flushes "
                    "%llu out %llu\n", t + 1, (unsigned long long)l->used,
                    (unsigned long long)l->puts,
                    (unsigned long long)l->moved_in,
                    (unsigned long long)l->flushes,
                    (unsigned long long)l->moved_out);
        }
    }
    return ok;
}

/* The ledger of the tiers through writes, reads, trims, a reclaim and a
 * promotion, and across a restart. */
static void test_ledger(void)
{
    char sock[256], err[SD_ERRLEN];
    uint8_t *buf = calloc(1, SLAB);
    struct sd_export_stats st;
    struct sd_exports *xs;
    uint64_t addrs[2], copied;
    uint32_t one = 1;
    struct donor d;
    int fd;

    donor_start(&d);
    prepare(&d, addrs);
    /* Slabs 1 and 2 on the donor, slab 0 local. */
    {
        char slabs[256];

        snprintf(slabs, sizeof(slabs), "1-2@%s@%llu@0", d.endpoint,
                 (unsigned long long)addrs[0]);
        xs = export_new(slabs, sock);
    }
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 0, 16 * SD_PAGE_SIZE, buf) == 0);
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB - 4 * SD_PAGE_SIZE,
                8 * SD_PAGE_SIZE, buf) == 0);       /* across 0 and 1 */
    CHECK(tc_io(fd, NBD_CMD_WRITE, SLAB, 8 * SD_PAGE_SIZE, buf) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 16 * SD_PAGE_SIZE, buf) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, SLAB, 8 * SD_PAGE_SIZE, buf) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0);
    CHECK(st.tiers[SD_L2].puts == 20 && st.tiers[SD_L1].puts == 8);
    CHECK(st.tiers[SD_L2].gets == 16 && st.tiers[SD_L1].gets == 8);
    CHECK(st.tiers[SD_L2].used == 20 && st.tiers[SD_L1].used == 8);
    CHECK(ledger_holds(xs));
    CHECK(tc_io(fd, NBD_CMD_TRIM, 0, 4 * SD_PAGE_SIZE, NULL) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.tiers[SD_L2].flushes == 4 && st.tiers[SD_L2].used == 16);
    /* Slab 1 demoted: its 8 pages move to L2; promoted back: to L1. */
    CHECK(sd_exports_reclaim(xs, grant_bin, &one, 1, &one, err,
                             sizeof(err)) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.tiers[SD_L1].moved_out == 8 && st.tiers[SD_L2].moved_in == 8 &&
          st.tiers[SD_L1].used == 0 && st.tiers[SD_L2].used == 24);
    CHECK(ledger_holds(xs));
    CHECK(sd_exports_promote(xs, grant_bin, 1, d.endpoint, addrs[0],
                             &copied, err, sizeof(err)) == 0 && copied == 8);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.tiers[SD_L1].moved_in == 8 && st.tiers[SD_L1].used == 8);
    CHECK(ledger_holds(xs));
    CHECK(st.tiers[SD_L1].evicts == 0 && st.tiers[SD_L2].evicts == 0);
    /* After a restart, what is stored counts as put. */
    close(fd);
    sd_exports_free(xs);
    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(sd_exports_restore(xs) == 1);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.tiers[SD_L1].puts == 8 && st.tiers[SD_L2].puts == 16);
    CHECK(ledger_holds(xs));
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    donor_stop(&d);
    free(buf);
}

static void test_promote_under_writes(void)
{
    char sock[256], err[SD_ERRLEN];
    struct writer w = { 0 };
    struct sd_exports *xs;
    struct donor d;
    uint64_t addrs[2], copied, before, during;
    pthread_t t;
    int fd;

    donor_start(&d);
    xs = export_new("", sock);
    fd = open_export(sock);
    write_slab1(fd, 1);
    w.sock = sock;
    CHECK(pthread_create(&t, NULL, writer_main, &w) == 0);
    wait_writes(&w, 100);
    prepare(&d, addrs);
    before = __atomic_load_n(&w.writes, __ATOMIC_ACQUIRE);
    CHECK(sd_exports_promote(xs, grant_bin, 1, d.endpoint, addrs[0],
                             &copied, err, sizeof(err)) == 0);
    during = __atomic_load_n(&w.writes, __ATOMIC_ACQUIRE) - before;
    CHECK(copied >= PAGES);
    /* The writer goes on after the switch, to both copies. */
    wait_writes(&w, before + during + 100);
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(!w.failed);
    /* Read once the writer stopped: its counters are not read at once. */
    CHECK(ledger_holds(xs));
    printf("  %llu writes during the promotion, %llu pages copied\n",
           (unsigned long long)during, (unsigned long long)copied);
    CHECK(donor_matches_local(&d));
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    donor_stop(&d);
}

static void test_promote_sealed(void)
{
    char sock[256], err[SD_ERRLEN];
    uint8_t *remote = malloc(SD_PAGE_SIZE), page[SD_PAGE_SIZE];
    struct sd_export_stats st;
    struct sd_exports *xs;
    struct donor d;
    uint64_t addrs[2], copied;
    int fd;

    donor_start(&d);
    xs = export_new(" seal=1", sock);
    fd = open_export(sock);
    write_slab1(fd, 5);
    prepare(&d, addrs);
    CHECK(sd_exports_promote(xs, grant_bin, 1, d.endpoint, addrs[0],
                             &copied, err, sizeof(err)) == 0 &&
          copied == PAGES);
    /* Ciphertext on the donor; the pages open when read back. */
    fill(page, 0, 5);
    CHECK(sd_store_access(d.store, SD_OP_READ, grant_bin, key, 1, 0, remote,
                          SD_PAGE_SIZE, NULL) == 0 &&
          memcmp(remote, page, SD_PAGE_SIZE) != 0);
    CHECK(reads_gen(fd, 5));
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.local_reads == 0 && st.auth_failures == 0 &&
          st.remote_errors == 0);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    donor_stop(&d);
    free(remote);
}

int main(void)
{
    if (scratch_dir_make(tmpdir, sizeof(tmpdir),
                         "/tmp/sd-promote-test-XXXXXX")) {
        return 2;
    }
    sd_log_level = LOG_ERR;
    sd_uuid_parse(GRANT, SD_UUID_STRLEN, grant_bin);
    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    test_promote();
    test_ledger();
    test_promote_under_writes();
    test_promote_sealed();
    /* The fabric transport: its one-sided writes carry the copy. */
    {
        char prov[64], why[SD_ERRLEN];
        int hw;

        CHECK(sd_fabric_select("tcp", prov, sizeof(prov), &hw, why,
                               sizeof(why)) == 0);
        scheme = "rdma";
        test_promote_under_writes();
        test_promote_sealed();
    }
    scratch_dir_remove(tmpdir);
    return check_summary();
}
