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
 * The fake kernel of the sampler's backend tests (test_sampler_backends.c),
 * where the test plays the kernel: the tree ms_paths points into
 * (fake_setup, fake_teardown), its files written and read (fake_put,
 * fake_get_u64, fake_state_is), a page mapped (fake_map, fake_pagemap),
 * accessed (idle_access) or flagged (fake_kflags), DAMON's answer
 * (damon_tried, damon_total_pages), and a sampler of the fake pages
 * (fake_sampler).  Its includer defines _GNU_SOURCE first (nftw).
 */
#ifndef MEMAGG_TESTS_FAKE_KERNEL_H
#define MEMAGG_TESTS_FAKE_KERNEL_H

#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ms.h"

/*
 * The fake kernel: a directory tree that ms_paths points into, with
 * /proc/<this pid>/pagemap, the idle bitmap and the DAMON sysfs files.
 * 64 pages at virtual page 0 are all sampled (n = 64): pages 0-47 are
 * present at PFN FAKE_PFN + i, except 46 and 47 which share page 45's PFN
 * (KSM), so 46 keys; pages 48-63 are not present.
 */
#define FAKE_PAGES 64
#define FAKE_PRESENT 48
#define FAKE_KEYS 46
/* Region files in the fake tree: room for the host kdamond's padding. */
#define FAKE_REGIONS (4 * FAKE_PAGES)
#define FAKE_PFN 1000ULL
#define PM_PRESENT (1ULL << 63)

static char fake_root[64];
static struct ms_paths saved_paths;

static inline void fake_put(const char *text, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Write text to the file at fmt under the fake root, making its parents. */
static inline void fake_put(const char *text, const char *fmt, ...)
{
    char path[512], *slash;
    size_t root_len = strlen(fake_root);
    va_list ap;
    int fd;

    memcpy(path, fake_root, root_len);
    path[root_len] = '/';
    va_start(ap, fmt);
    vsnprintf(path + root_len + 1, sizeof(path) - root_len - 1, fmt, ap);
    va_end(ap);
    for (slash = strchr(path + root_len + 1, '/'); slash;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0700);
        *slash = '/';
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    if (fd >= 0) {
        close(fd);
    }
}

static inline void fake_put_u64(uint64_t v, const char *rel)
{
    char text[32];

    snprintf(text, sizeof(text), "%llu\n", (unsigned long long)v);
    fake_put(text, "%s", rel);
}

static inline uint64_t fake_get_u64(const char *rel)
{
    char path[512];
    uint64_t v = 0;

    snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
    CHECK(ms_read_u64_file(path, &v, NULL, 0) == 0);
    return v;
}

static inline uint64_t fake_pfn(unsigned int page)
{
    return FAKE_PFN + (page == 46 || page == 47 ? 45 : page);
}

/* pagemap[page] := pfn (0: not present). */
static inline void fake_map(unsigned int page, uint64_t pfn)
{
    char path[512];
    uint64_t raw = pfn ? PM_PRESENT | pfn : 0;
    int fd;

    snprintf(path, sizeof(path), "%s/proc/%d/pagemap", fake_root,
             (int)getpid());
    fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, &raw, sizeof(raw), page * 8) == 8);
    if (fd >= 0) {
        close(fd);
    }
}

static inline void fake_pagemap(void)
{
    unsigned int i;

    fake_put("", "proc/%d/pagemap", (int)getpid());
    for (i = 0; i < FAKE_PAGES; i++) {
        fake_map(i, i < FAKE_PRESENT ? fake_pfn(i) : 0);
    }
}

static inline void fake_kflags(uint64_t pfn, uint64_t flags)
{
    int fd = open(ms_paths.kpageflags, O_WRONLY);

    CHECK(fd >= 0 && pwrite(fd, &flags, 8, (off_t)(pfn * 8)) == 8);
    if (fd >= 0) {
        close(fd);
    }
}

/*
 * Kdamond index as memagg leaves it.  The fake tree is not recreated when
 * nr_kdamonds is written, so what memagg wrote stays: update_us starts at
 * memagg's hour, as a set-up of its own (not another DAMON user's) reads.
 */
static inline void fake_kdamond(int index)
{
    static const char *const files[] = {
        "state", "pid", "contexts/nr_contexts", "contexts/0/operations",
        "contexts/0/monitoring_attrs/intervals/sample_us",
        "contexts/0/monitoring_attrs/intervals/aggr_us",
        "contexts/0/monitoring_attrs/intervals/update_us",
        "contexts/0/monitoring_attrs/nr_regions/min",
        "contexts/0/monitoring_attrs/nr_regions/max",
        "contexts/0/targets/nr_targets",
        "contexts/0/targets/0/pid_target",
        "contexts/0/targets/0/regions/nr_regions",
        "contexts/0/schemes/nr_schemes", "contexts/0/schemes/0/action",
        "contexts/0/schemes/0/apply_interval_us",
        "contexts/0/schemes/0/access_pattern/nr_accesses/min",
        "contexts/0/schemes/0/access_pattern/nr_accesses/max",
        "contexts/0/schemes/0/access_pattern/sz/min",
        "contexts/0/schemes/0/access_pattern/sz/max",
        "contexts/0/schemes/0/access_pattern/age/min",
        "contexts/0/schemes/0/access_pattern/age/max",
        "contexts/0/schemes/0/tried_regions/total_bytes",
        "contexts/0/schemes/1/action",
        "contexts/0/schemes/1/apply_interval_us",
        "contexts/0/schemes/1/access_pattern/nr_accesses/min",
        "contexts/0/schemes/1/access_pattern/nr_accesses/max",
        "contexts/0/schemes/1/access_pattern/sz/min",
        "contexts/0/schemes/1/access_pattern/sz/max",
        "contexts/0/schemes/1/access_pattern/age/min",
        "contexts/0/schemes/1/access_pattern/age/max",
        "contexts/0/schemes/1/tried_regions/total_bytes",
    };
    unsigned int k;

    fake_put("paddr\n", "damon/kdamonds/%d/contexts/0/avail_operations",
             index);
    for (k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
        fake_put("0\n", "damon/kdamonds/%d/%s", index, files[k]);
    }
    fake_put("3600000000\n", "damon/kdamonds/%d/contexts/0/monitoring_attrs/"
             "intervals/update_us", index);
    for (k = 0; k < FAKE_REGIONS; k++) {
        fake_put("0\n", "damon/kdamonds/%d/contexts/0/targets/0/regions/%u/"
                 "start", index, k);
        fake_put("0\n", "damon/kdamonds/%d/contexts/0/targets/0/regions/%u/"
                 "end", index, k);
    }
}

static inline void fake_damon_tree(void)
{
    fake_put("0\n", "damon/kdamonds/nr_kdamonds");
    fake_kdamond(0);
}

/* The last word written to kdamond 0's state (over the longer ones). */
static inline int fake_state_is(const char *want)
{
    char path[512], buf[64] = "";
    ssize_t got;
    int fd;

    snprintf(path, sizeof(path), "%s/damon/kdamonds/0/state", fake_root);
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        return 0;
    }
    got = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    return got >= 0 && strncmp(buf, want, strlen(want)) == 0;
}

/*
 * DAMON's answer: tried region k is [first, last + 1) in PFNs.  The kernel
 * numbers them with gaps (0, 2, 4 here on 6.18).
 */
static inline void damon_tried(unsigned int k, uint64_t first, uint64_t last)
{
    const char *dir = "damon/kdamonds/0/contexts/0/schemes/0/tried_regions";
    char rel[160];

    snprintf(rel, sizeof(rel), "%s/%u/start", dir, k);
    fake_put_u64(first * MS_PAGE_SIZE, rel);
    snprintf(rel, sizeof(rel), "%s/%u/end", dir, k);
    fake_put_u64((last + 1) * MS_PAGE_SIZE, rel);
}

static inline void damon_total_pages(uint64_t pages)
{
    fake_put_u64(pages * MS_PAGE_SIZE, "damon/kdamonds/0/contexts/0/"
                 "schemes/0/tried_regions/total_bytes");
}

static inline void fake_setup(void)
{
    snprintf(fake_root, sizeof(fake_root), "/tmp/ms-fake-XXXXXX");
    if (!mkdtemp(fake_root)) {
        perror("mkdtemp");
        exit(2);
    }
    saved_paths = ms_paths;
    snprintf(ms_paths.proc, sizeof(ms_paths.proc), "%s/proc", fake_root);
    snprintf(ms_paths.page_idle, sizeof(ms_paths.page_idle),
             "%s/page_idle/bitmap", fake_root);
    snprintf(ms_paths.damon, sizeof(ms_paths.damon), "%s/damon", fake_root);
    snprintf(ms_paths.kpageflags, sizeof(ms_paths.kpageflags),
             "%s/kpageflags", fake_root);
    /* No tracefs: the kdamond answers through its region directories. */
    snprintf(ms_paths.tracing, sizeof(ms_paths.tracing), "%s/tracing",
             fake_root);
    fake_pagemap();
    /* 4096 PFNs of page flags, none set. */
    fake_put("", "kpageflags");
    CHECK(truncate(ms_paths.kpageflags, 4096 * 8) == 0);
    /* 4096 PFNs of idle bits, none set. */
    fake_put("", "page_idle/bitmap");
    CHECK(truncate(ms_paths.page_idle, 4096 / 8) == 0);
    fake_damon_tree();
}

static inline int remove_entry(const char *path, const struct stat *st,
                               int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void fake_teardown(void)
{
    nftw(fake_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    ms_paths = saved_paths;
}

static inline struct ms_sampler *fake_sampler(enum ms_backend b)
{
    struct ms_sampler *s = NULL;
    char err[MS_ERRLEN] = "";
    uint64_t seed = 1;
    int ret;

    ret = ms_sampler_open(&s, getpid(), 0, FAKE_PAGES * MS_PAGE_SIZE,
                          FAKE_PAGES, b, &seed, 0.1, err, sizeof(err));
    CHECK(ret == 0);
    if (ret) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    return s;
}

/* The kernel saw the page at pfn accessed: its idle bit goes. */
static inline void idle_access(uint64_t pfn)
{
    uint64_t word;
    int fd = open(ms_paths.page_idle, O_RDWR);

    CHECK(fd >= 0 && pread(fd, &word, 8, (off_t)(pfn / 64 * 8)) == 8);
    word &= ~(1ULL << (pfn % 64));
    CHECK(fd >= 0 && pwrite(fd, &word, 8, (off_t)(pfn / 64 * 8)) == 8);
    if (fd >= 0) {
        close(fd);
    }
}

#endif
