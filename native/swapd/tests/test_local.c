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
 * Tests of the local copy's I/O past the page cache (local.c): after an
 * export's pages are written and read over NBD, none of its local copy is
 * in the page cache (mincore), and the data survives a restart and reads
 * the same through another, buffered, descriptor; unaligned requests of
 * an unsealed export (read-modify-write of their pages) against a model,
 * four clients writing parts of the same pages at once losing nothing;
 * a buffer that is not aligned; the buffered mode of a file system
 * without direct I/O, whose cached pages stay bounded and go at a sync;
 * and, where this runs as root, an export on ramfs (which refuses
 * O_DIRECT) falling back to it.
 *
 * The copies live under /var/tmp, on disk where /tmp may be tmpfs: a
 * file of tmpfs is its page cache, so the residency checks are skipped
 * there (said on stdout).
 * Prints "N passed, N failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "args.h"
#include "check.h"
#include "export.h"
#include "export_internal.h"
#include "export_spec.h"
#include "local.h"
#include "nbd_client.h"
#include "scratch_dir.h"
#include "util.h"

#define GRANT "0a1b2c3d-0000-4000-8000-00000000d1ec"
#define KEY "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define SLAB (1024 * 1024ULL)
#define NSLABS 8
#define SIZE (NSLABS * SLAB)
#define PAGES (SIZE / SD_PAGE_SIZE)
#define PAGE SD_PAGE_SIZE

static char tmpdir[64];
static uint8_t grant_bin[SD_UUID_LEN];
/* The copies' file system keeps a file's data apart from its page cache
 * (not tmpfs or ramfs): residency means something there. */
static int on_disk;

/* Pages of the file at path in the page cache (mincore over a mapping of
 * it, which faults nothing in), or -1. */
static long resident(const char *path)
{
    int fd = open(path, O_RDONLY);
    unsigned char *vec = NULL;
    long count = -1;
    struct stat st;
    void *map;
    size_t n, i;

    if (fd < 0 || fstat(fd, &st) || st.st_size == 0) {
        goto out;
    }
    n = ((size_t)st.st_size + PAGE - 1) / PAGE;
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    vec = malloc(n);
    if (map != MAP_FAILED && vec && mincore(map, (size_t)st.st_size,
                                            vec) == 0) {
        for (count = 0, i = 0; i < n; i++) {
            count += vec[i] & 1;
        }
    }
    if (map != MAP_FAILED) {
        munmap(map, (size_t)st.st_size);
    }
out:
    free(vec);
    if (fd >= 0) {
        close(fd);
    }
    return count;
}

/* Page p as generation gen writes it. */
static void fill(uint8_t *page, uint64_t p, uint32_t gen)
{
    size_t i;

    for (i = 0; i < PAGE; i++) {
        page[i] = (uint8_t)(p * 131 + gen * 17 + i / 8);
    }
}

static struct sd_exports *registry(const char *state)
{
    struct sd_exports *xs;
    char err[SD_ERRLEN] = "";

    CHECK(sd_exports_new(state, state, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    return xs;
}

/* An export of GRANT in xs, its slabs all in the local copy at
 * <state>/local/copy (L2), unsealed; its socket in sock. */
static int create(struct sd_exports *xs, const char *state, char *sock)
{
    char line[1024], err[SD_ERRLEN] = "";
    struct sd_export_spec spec;
    struct sd_args args;
    int ret;

    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=%llu slab_size=%llu local=%s/local/copy slabs=", SIZE,
             SLAB, state);
    ret = sd_control_parse_line(line, &args, err, sizeof(err));
    if (ret == 0) {
        ret = sd_export_spec_parse(&args, &spec, err, sizeof(err));
    }
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
    if (tc_go(fd, "memagg-swap-" GRANT) != SIZE) {
        tc_die("size");
    }
    return fd;
}

static int flush(int fd)
{
    uint64_t handle;

    tc_request(fd, NBD_CMD_FLUSH, 7, 0, 0, NULL);
    return tc_reply(fd, &handle);
}

/* The file system under tmpdir: the copies' own check, and the
 * measurement's (a buffered write shows up as resident). */
static void test_measure(void)
{
    char path[128];
    uint8_t page[PAGE];
    struct statfs sf;
    int fd, i;

    CHECK(statfs(tmpdir, &sf) == 0);
    on_disk = sf.f_type != TMPFS_MAGIC && sf.f_type != RAMFS_MAGIC;
    if (!on_disk) {
        printf("  %s is tmpfs or ramfs: residency not checked\n", tmpdir);
        return;
    }
    snprintf(path, sizeof(path), "%s/buffered", tmpdir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    for (i = 0; i < 256; i++) {
        fill(page, (uint64_t)i, 0);
        CHECK(pwrite(fd, page, PAGE, (off_t)i * PAGE) == PAGE);
    }
    CHECK(resident(path) >= 250);
    close(fd);
    unlink(path);
}

/* Every page of the export as generation gen, read back over NBD. */
static int reads_back(int fd, uint32_t gen)
{
    uint8_t *buf = malloc(64 * PAGE), want[PAGE];
    uint64_t p, k;
    int ok = buf != NULL;

    for (p = 0; ok && p < PAGES; p += 64) {
        ok = tc_io(fd, NBD_CMD_READ, p * PAGE, 64 * PAGE, buf) == 0;
        for (k = 0; ok && k < 64; k++) {
            fill(want, p + k, gen);
            ok = memcmp(buf + k * PAGE, want, PAGE) == 0;
        }
    }
    free(buf);
    return ok;
}

static void test_export_uncached(void)
{
    char sock[256], path[160];
    uint8_t page[PAGE], *buf = malloc(16 * PAGE);
    struct sd_export_stats st;
    struct sd_exports *xs;
    struct sd_export *x;
    uint64_t p, k;
    long res;
    int fd, ok, copy;

    snprintf(path, sizeof(path), "%s/local/copy", tmpdir);
    xs = registry(tmpdir);
    CHECK(create(xs, tmpdir, sock) == 0);
    x = sd_export_lookup(xs, grant_bin);
    CHECK(x && x->lc.direct == 1);
    fd = open_export(sock);
    /* A page per write, as a guest's swap-out, then runs of 16 over
     * every other run: each page written once or twice. */
    for (p = 0, ok = 1; p < PAGES; p++) {
        fill(page, p, 1);
        ok &= tc_io(fd, NBD_CMD_WRITE, p * PAGE, PAGE, page) == 0;
    }
    CHECK(ok);
    for (p = 0, ok = 1; p < PAGES; p += 32) {
        for (k = 0; k < 16; k++) {
            fill(buf + k * PAGE, p + k, 1);
        }
        ok &= tc_io(fd, NBD_CMD_WRITE, p * PAGE, 16 * PAGE, buf) == 0;
    }
    CHECK(ok);
    /* Swap-ins a page at a time, then in runs. */
    for (p = 0, ok = 1; p < PAGES; p++) {
        fill(buf, p, 1);
        ok &= tc_io(fd, NBD_CMD_READ, p * PAGE, PAGE, page) == 0 &&
              memcmp(page, buf, PAGE) == 0;
    }
    CHECK(ok);
    CHECK(reads_back(fd, 1));
    CHECK(flush(fd) == 0);
    CHECK(sd_exports_stats(xs, grant_bin, &st) == 0 &&
          st.local_reads == PAGES + PAGES / 64 &&
          st.tiers[SD_L2].used == PAGES);
    /* Nothing of it is cached.  The bound, 1 % of the pages, leaves room
     * for the file system's own reasons to go through the page cache
     * (ext4 does for a few writes, e.g. with data=journal); each write
     * and read here cached would be 100 %. */
    res = resident(path);
    printf("  local copy: %ld of %llu pages in the page cache after %llu "
           "writes and %llu reads\n", res, (unsigned long long)PAGES,
           (unsigned long long)(PAGES + PAGES / 32),
           (unsigned long long)(PAGES + PAGES / 64));
    CHECK(res >= 0 && (!on_disk || res <= (long)(PAGES / 100)));

    /* A restart finds every page, and another reader of the file (a
     * buffered one) sees what the direct writes put there. */
    close(fd);
    sd_exports_free(xs);
    xs = registry(tmpdir);
    CHECK(sd_exports_restore(xs) == 1);
    fd = open_export(sock);
    CHECK(reads_back(fd, 1));
    copy = open(path, O_RDONLY);
    for (p = 0, ok = copy >= 0; ok && p < PAGES; p++) {
        fill(buf, p, 1);
        ok = pread(copy, page, PAGE, (off_t)(p * PAGE)) == PAGE &&
             memcmp(page, buf, PAGE) == 0;
    }
    CHECK(ok);
    /* ... and the export what the other writes there (the kernel writes
     * a cached range back before a direct read of it). */
    close(copy);
    copy = open(path, O_WRONLY);
    fill(page, 5, 2);
    CHECK(copy >= 0 && pwrite(copy, page, PAGE, 5 * PAGE) == PAGE);
    CHECK(tc_io(fd, NBD_CMD_READ, 5 * PAGE, PAGE, buf) == 0 &&
          memcmp(buf, page, PAGE) == 0);
    close(copy);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    free(buf);
}

/* A small deterministic generator (xorshift64). */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Pages [0, PART_PAGES) of the export written by PARTS clients at once,
 * client i bytes [i * PART, (i + 1) * PART) of each page, PART_ROUNDS
 * times. */
#define PARTS 4
#define PART (PAGE / PARTS)
#define PART_PAGES 32
#define PART_ROUNDS 40

struct part {
    const char *sock;
    int which;
    int ok;
};

static void *write_parts(void *arg)
{
    struct part *c = arg;
    uint8_t data[PART];
    int fd = open_export(c->sock), round;
    uint64_t p;

    c->ok = 1;
    for (round = 1; round <= PART_ROUNDS; round++) {
        memset(data, c->which * 50 + round, sizeof(data));
        for (p = 0; p < PART_PAGES; p++) {
            c->ok &= tc_io(fd, NBD_CMD_WRITE, p * PAGE +
                           (uint64_t)c->which * PART, PART, data) == 0;
        }
    }
    close(fd);
    return NULL;
}

static void test_unaligned(void)
{
    /* A model of the bytes around the boundary of slabs 0 and 1. */
    const uint64_t base = SLAB - 64 * 1024, span = 128 * 1024;
    uint8_t *model = calloc(1, span), *buf = malloc(span);
    struct part parts[PARTS];
    pthread_t threads[PARTS];
    uint64_t seed = 0x9e3779b97f4a7c15ULL, p;
    struct sd_exports *xs;
    char sock[256];
    int fd, i, ok = 1, all = 1;

    xs = registry(tmpdir);
    CHECK(create(xs, tmpdir, sock) == 0);
    fd = open_export(sock);
    for (i = 0; i < 400; i++) {
        uint64_t len = rnd(&seed) % 9000 + 1;
        uint64_t off = rnd(&seed) % (span - len);
        uint64_t k;

        if (i % 3) {
            for (k = 0; k < len; k++) {
                buf[k] = (uint8_t)rnd(&seed);
            }
            ok &= tc_io(fd, NBD_CMD_WRITE, base + off, (uint32_t)len,
                        buf) == 0;
            memcpy(model + off, buf, len);
        } else {
            ok &= tc_io(fd, NBD_CMD_READ, base + off, (uint32_t)len,
                        buf) == 0 && memcmp(buf, model + off, len) == 0;
        }
    }
    CHECK(ok);
    /* Inside one page, at its end, and a page's first byte. */
    buf[0] = buf[1] = 0xa5;
    CHECK(tc_io(fd, NBD_CMD_WRITE, base + 10, 1, buf) == 0);
    CHECK(tc_io(fd, NBD_CMD_WRITE, base + PAGE - 1, 2, buf) == 0);
    model[10] = model[PAGE - 1] = model[PAGE] = 0xa5;
    CHECK(tc_io(fd, NBD_CMD_READ, base, (uint32_t)span, buf) == 0 &&
          memcmp(buf, model, span) == 0);
    /* A restart keeps them. */
    close(fd);
    sd_exports_free(xs);
    xs = registry(tmpdir);
    CHECK(sd_exports_restore(xs) == 1);
    fd = open_export(sock);
    CHECK(tc_io(fd, NBD_CMD_READ, base, (uint32_t)span, buf) == 0 &&
          memcmp(buf, model, span) == 0);

    /* Clients write parts of the same pages at once: each
     * read-modify-write waits for the others', so every part holds its
     * writer's last round. */
    for (i = 0; i < PARTS; i++) {
        parts[i] = (struct part){ sock, i, 0 };
        CHECK(pthread_create(&threads[i], NULL, write_parts,
                             &parts[i]) == 0);
    }
    for (i = 0; i < PARTS; i++) {
        pthread_join(threads[i], NULL);
        CHECK(parts[i].ok);
    }
    CHECK(tc_io(fd, NBD_CMD_READ, 0, PART_PAGES * PAGE, buf) == 0);
    for (p = 0; p < PART_PAGES * PAGE; p++) {
        all &= buf[p] == p % PAGE / PART * 50 + PART_ROUNDS;
    }
    CHECK(all);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    free(model);
    free(buf);
}

/* One request of test_burst's and what its reply must bring. */
struct breq {
    uint16_t type;
    uint64_t off;
    uint32_t len;
    uint32_t gen;               /* its data's or the read's (0: zeros) */
    uint32_t gen5;              /* a read's page 5 */
};

/* Append request h of q to out at *at (with a WRITE's data). */
static void burst_put(uint8_t *out, size_t *at, const struct breq *q,
                      uint64_t h)
{
    uint64_t k;

    tc_encode_request(out + *at, 0, q->type, h, q->off, q->len);
    *at += 28;
    for (k = 0; q->type == NBD_CMD_WRITE && k < q->len / PAGE; k++) {
        fill(out + *at, q->off / PAGE + k, q->gen);
        *at += PAGE;
    }
}

/* Whether a READ's data is as q says. */
static int burst_data_ok(const struct breq *q, const uint8_t *data)
{
    uint8_t want[PAGE];
    uint64_t k, p;

    for (k = 0; k < q->len / PAGE; k++) {
        p = q->off / PAGE + k;
        memset(want, 0, PAGE);
        if (q->gen) {
            fill(want, p, p == 5 ? q->gen5 : q->gen);
        }
        if (memcmp(data + k * PAGE, want, PAGE)) {
            return 0;
        }
    }
    return 1;
}

/* Requests sent in one go reach the copy in bursts, their local I/O
 * batched: more writes than a batch holds, a page written twice, reads
 * of pages written just before, a TRIM between a write and a read of its
 * page; each sees the ones before it, as one at a time would. */
static void test_burst(void)
{
    static struct breq q[110];
    uint8_t *out = malloc(128 * (28 + PAGE)), *data = malloc(100 * PAGE);
    uint64_t p, h;
    size_t at = 0, nq = 0, i;
    struct sd_exports *xs;
    char sock[256];
    int fd, ok = 1;

    xs = registry(tmpdir);
    CHECK(create(xs, tmpdir, sock) == 0);
    fd = open_export(sock);
    for (p = 0; p < 160; p++) {
        fill(data, p, 1);
        ok &= tc_io(fd, NBD_CMD_WRITE, p * PAGE, PAGE, data) == 0;
    }
    CHECK(ok);
    for (p = 0; p < 100; p++) {
        q[nq++] = (struct breq){ NBD_CMD_WRITE, p * PAGE, PAGE, 2, 0 };
    }
    q[nq++] = (struct breq){ NBD_CMD_WRITE, 5 * PAGE, PAGE, 3, 0 };
    q[nq++] = (struct breq){ NBD_CMD_READ, 5 * PAGE, PAGE, 3, 3 };
    q[nq++] = (struct breq){ NBD_CMD_WRITE, 150 * PAGE, PAGE, 2, 0 };
    q[nq++] = (struct breq){ NBD_CMD_TRIM, 150 * PAGE, PAGE, 0, 0 };
    q[nq++] = (struct breq){ NBD_CMD_READ, 150 * PAGE, PAGE, 0, 0 };
    q[nq++] = (struct breq){ NBD_CMD_READ, 100 * PAGE, 20 * PAGE, 1, 1 };
    q[nq++] = (struct breq){ NBD_CMD_READ, 0, 100 * PAGE, 2, 3 };
    for (i = 0; i < nq; i++) {
        burst_put(out, &at, &q[i], i);
    }
    tc_send(fd, out, at);
    for (i = 0; i < nq; i++) {
        if (tc_reply(fd, &h) || h >= nq) {
            tc_die("burst reply");
        }
        if (q[h].type == NBD_CMD_READ) {
            ok &= sd_read_full(fd, data, q[h].len) == 0 &&
                  burst_data_ok(&q[h], data);
        }
    }
    CHECK(ok);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    free(out);
    free(data);
}

/* A file of n pages for sd_local, made anew. */
static int local_file(const char *name, uint64_t pages, char *path)
{
    int fd;

    snprintf(path, 160, "%s/%s", tmpdir, name);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)(pages * PAGE)) == 0);
    return fd;
}

/* A caller's buffer that is not aligned, longer than a bounce buffer. */
static void test_unaligned_buffer(void)
{
    const size_t len = 300 * 1024;
    uint8_t *raw = malloc(len + 1), *back = malloc(len + 3);
    struct sd_local lc;
    char path[160];
    size_t i;

    sd_local_open(&lc, local_file("unaligned", 128, path), 1, "test");
    CHECK(lc.direct == 1 || !on_disk);
    for (i = 0; i < len; i++) {
        raw[i + 1] = (uint8_t)(i * 7);
    }
    CHECK(sd_local_write(&lc, raw + 1, len, 8 * PAGE) == 0);
    CHECK(sd_local_read(&lc, back + 3, len, 8 * PAGE) == 0 &&
          memcmp(back + 3, raw + 1, len) == 0);
    /* Past the end of the file: zeros. */
    memset(back, 0xff, 2 * PAGE);
    CHECK(sd_local_read(&lc, back, 2 * PAGE, 127 * PAGE) == 0 &&
          all_zero(back + PAGE, PAGE));
    CHECK(sd_local_sync(&lc) == 0);
    sd_local_close(&lc);
    unlink(path);
    free(raw);
    free(back);
}

/* The buffered mode: what it caches is bounded, and goes at a sync. */
static void test_buffered(void)
{
    const uint64_t pages = 4096;        /* 16 MiB, four times the bound */
    uint8_t page[PAGE], *buf = malloc(64 * PAGE);
    struct sd_local lc;
    char path[160];
    uint64_t p, k;
    long res;
    int ok = 1;

    sd_local_open(&lc, local_file("buffered", pages, path), 0, "test");
    CHECK(lc.direct == 0);
    for (p = 0; p < pages; p++) {
        fill(page, p, 3);
        ok &= sd_local_write(&lc, page, PAGE, p * PAGE) == 0;
    }
    CHECK(ok);
    /* The ring's bytes and the newest write, and a little slack for
     * pages redirtied while they were dropped. */
    res = resident(path);
    printf("  buffered mode: %ld of %llu pages cached after the writes\n",
           res, (unsigned long long)pages);
    CHECK(res >= 0 && (!on_disk || res <= (long)(SD_LOCAL_WB_BYTES / PAGE +
                                                 16)));
    CHECK(sd_local_sync(&lc) == 0);
    res = resident(path);
    CHECK(res >= 0 && (!on_disk || res <= (long)(pages / 100)));
    /* Reads drop their pages at once; part of a page works too. */
    for (p = 0; p < pages; p += 64) {
        ok &= sd_local_read(&lc, buf, 64 * PAGE, p * PAGE) == 0;
        for (k = 0; k < 64; k++) {
            fill(page, p + k, 3);
            ok &= memcmp(buf + k * PAGE, page, PAGE) == 0;
        }
    }
    CHECK(ok);
    CHECK(sd_local_write(&lc, "xyz", 3, PAGE - 1) == 0 &&
          sd_local_read(&lc, buf, 5, PAGE - 2) == 0 &&
          memcmp(buf + 1, "xyz", 3) == 0);
    res = resident(path);
    printf("  buffered mode: %ld pages cached after the reads\n", res);
    CHECK(res >= 0 && (!on_disk || res <= (long)(pages / 100)));
    sd_local_close(&lc);
    unlink(path);
    free(buf);
}

/* In a child of its own mount namespace: an export whose copy is on
 * ramfs, which refuses O_DIRECT.  Exit status: 1 when a check of its
 * failed, 77 when it cannot mount (not root), else 0. */
static int ramfs_child(void)
{
    char dir[160], sock[256];
    uint8_t page[PAGE], back[PAGE];
    struct sd_exports *xs;
    struct sd_export *x;
    int fd, before = failed;

    snprintf(dir, sizeof(dir), "%s/ramfs", tmpdir);
    if (mkdir(dir, 0700) || unshare(CLONE_NEWNS) ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
        mount("memagg-test", dir, "ramfs", 0, "mode=0700")) {
        printf("  ramfs: cannot mount (%s): skipped\n", strerror(errno));
        return 77;
    }
    xs = registry(dir);
    CHECK(create(xs, dir, sock) == 0);
    x = sd_export_lookup(xs, grant_bin);
    CHECK(x && x->lc.direct == 0);
    fd = open_export(sock);
    fill(page, 9, 4);
    CHECK(tc_io(fd, NBD_CMD_WRITE, 9 * PAGE, PAGE, page) == 0 &&
          tc_io(fd, NBD_CMD_WRITE, 3, 5, "abcde") == 0 && flush(fd) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 9 * PAGE, PAGE, back) == 0 &&
          memcmp(back, page, PAGE) == 0);
    CHECK(tc_io(fd, NBD_CMD_READ, 0, 10, back) == 0 &&
          memcmp(back, "\0\0\0abcde\0\0", 10) == 0);
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    umount(dir);
    return failed > before;
}

static void test_ramfs_fallback(void)
{
    int status = 0;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        _exit(ramfs_child());
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0 ||
                                WEXITSTATUS(status) == 77));
}

int main(void)
{
    if (scratch_dir_make(tmpdir, sizeof(tmpdir),
                         "/var/tmp/sd-local-test-XXXXXX")) {
        return 2;
    }
    sd_log_level = LOG_WARNING;
    sd_uuid_parse(GRANT, SD_UUID_STRLEN, grant_bin);
    test_measure();
    test_export_uncached();
    test_unaligned();
    test_burst();
    test_unaligned_buffer();
    test_buffered();
    test_ramfs_fallback();
    scratch_dir_remove(tmpdir);
    return check_summary();
}
