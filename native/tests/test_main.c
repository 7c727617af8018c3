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
 * Unit tests of the native sampler's C layer: parsers, page drawing, bulk
 * pagemap and idle-bitmap I/O against fixture files, the sampler's
 * argument and dead-process handling, and its PFN backends against a fake
 * /proc and sysfs (ms_paths) where the test plays the kernel, pages moving
 * during the window included.  Prints "N passed, N failed".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "ms.h"

static int temp_file(char *path, size_t len)
{
    int fd;

    snprintf(path, len, "/tmp/ms-test-XXXXXX");
    fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    return fd;
}

static void test_parse_u64(void)
{
    uint64_t v = 7;

    CHECK(ms_parse_u64("42\n", 3, &v) == 0 && v == 42);
    CHECK(ms_parse_u64("  0 ", 4, &v) == 0 && v == 0);
    CHECK(ms_parse_u64("18446744073709551615", 20, &v) == 0 &&
          v == UINT64_MAX);
    CHECK(ms_parse_u64("18446744073709551616", 20, &v) == -ERANGE);
    CHECK(ms_parse_u64("", 0, &v) == -EINVAL);
    CHECK(ms_parse_u64("12a", 3, &v) == -EINVAL);
    CHECK(ms_parse_u64("-1", 2, &v) == -EINVAL);
    /* The length bounds the parse: the 9 is outside the buffer. */
    CHECK(ms_parse_u64("129", 2, &v) == 0 && v == 12);
}

static void test_pagemap_decode(void)
{
    struct ms_pagemap_entry e;

    ms_pagemap_decode((1ULL << 63) | 0x1234, &e);
    CHECK(e.present && !e.swapped && e.pfn == 0x1234);
    ms_pagemap_decode((1ULL << 62) | 0x55, &e);
    CHECK(!e.present && e.swapped && e.pfn == 0);
    ms_pagemap_decode(0, &e);
    CHECK(!e.present && e.pfn == 0);
    /* Soft-dirty and exclusive bits are not part of the PFN. */
    ms_pagemap_decode((1ULL << 63) | (1ULL << 55) | (1ULL << 56) | 9, &e);
    CHECK(e.present && e.pfn == 9);
}

static const char smaps[] =
    "10000-14000 rw-p 00000000 00:00 0 \n"
    "Size:                 16 kB\n"
    "Rss:                  16 kB\n"
    "Referenced:            8 kB\n"
    "20000-28000 rw-p 00000000 00:00 0                  [heap]\n"
    "Rss:                  32 kB\n"
    "Referenced:           32 kB\n"
    "VmFlags: rd wr mr mw me ac\n"
    "30000-31000 r--p 00000000 08:01 42    /usr/lib/x.so\n"
    "Referenced:            4 kB\n";

static void test_smaps(void)
{
    uint64_t ref, rss;

    CHECK(ms_smaps_scan(smaps, sizeof(smaps) - 1, 0x10000, 0x14000, &ref,
                        &rss) == 1);
    CHECK(ref == 8 && rss == 16);
    /* Whole heap plus half of the first VMA: the half counts half. */
    CHECK(ms_smaps_scan(smaps, sizeof(smaps) - 1, 0x12000, 0x28000, &ref,
                        &rss) == 2);
    CHECK(ref == 4 + 32 && rss == 8 + 32);
    CHECK(ms_smaps_scan(smaps, sizeof(smaps) - 1, 0x50000, 0x60000, &ref,
                        &rss) == 0);
    CHECK(ref == 0 && rss == 0);
    /* Garbage and truncation are ignored, not fatal. */
    CHECK(ms_smaps_scan("zz-\nReferenced: 9 kB\n1-", 23, 0, ~0ULL, &ref,
                        &rss) == 0 && ref == 0);
    CHECK(ms_smaps_scan(smaps, (size_t)(strstr(smaps, "Referenced") - smaps),
                        0x10000, 0x14000, &ref, &rss) == 1 &&
          rss == 16 && ref == 0);
}

static void test_mark_range(void)
{
    uint64_t keys[3] = { 10, 20, 30 };
    unsigned char marks[3] = { 0 };

    CHECK(ms_mark_range(keys, 3, 15, 31, marks) == 2);
    CHECK(!marks[0] && marks[1] && marks[2]);
    memset(marks, 0, sizeof(marks));
    /* The end is excluded; an empty or reversed range marks nothing. */
    CHECK(ms_mark_range(keys, 3, 0, 10, marks) == 0);
    CHECK(ms_mark_range(keys, 3, 31, 5, marks) == 0);
    CHECK(ms_mark_range(keys, 3, 20, 20, marks) == 0);
    CHECK(!marks[0] && !marks[1] && !marks[2]);
    CHECK(ms_mark_range(keys, 3, 0, UINT64_MAX, marks) == 3);
    CHECK(ms_mark_range(keys, 0, 0, UINT64_MAX, marks) == 0);
}

static void test_word_list(void)
{
    CHECK(ms_word_list_has("vaddr fvaddr paddr\n", 19, "paddr"));
    CHECK(ms_word_list_has("vaddr fvaddr paddr\n", 19, "vaddr"));
    CHECK(!ms_word_list_has("fvaddr paddr\n", 13, "vaddr"));
    CHECK(!ms_word_list_has("", 0, "paddr"));
}

static void test_cgroup_memcg(void)
{
    static const char v1[] = "9:name=systemd:/\n4:cpu,memory:/machine/"
                             "qemu-1-vm.libvirt-qemu\n0::/\n";
    static const char v2[] = "0::/machine.slice/vm.scope\n";
    char out[64];

    CHECK(ms_cgroup_memcg(v1, sizeof(v1) - 1, out, sizeof(out)) == 0);
    CHECK(strcmp(out, "/machine/qemu-1-vm.libvirt-qemu") == 0);
    CHECK(ms_cgroup_memcg(v2, sizeof(v2) - 1, out, sizeof(out)) == 0);
    CHECK(strcmp(out, "/machine.slice/vm.scope") == 0);
    /* memory as a substring of another controller's name is not it. */
    CHECK(ms_cgroup_memcg("3:nomemory:/x", 13, out, sizeof(out)) ==
          -ENOENT);
    CHECK(ms_cgroup_memcg(v1, sizeof(v1) - 1, out, 8) == -ENAMETOOLONG);
    CHECK(ms_cgroup_memcg("", 0, out, sizeof(out)) == -ENOENT);
}

/* Lines as a 6.18 kernel's trace file printed them (context-info on and
 * off), and what must not pass for one. */
static void test_damos_trace_line(void)
{
    static const char with_ctx[] =
        "       kdamond.0-10995   [001] .....   831.495583: "
        "damos_before_apply: ctx_idx=0 scheme_idx=1 target_idx=0 "
        "nr_regions=4000 4412055552-4412059648: 115 0";
    static const char bare[] =
        "damos_before_apply: ctx_idx=0 scheme_idx=0 target_idx=0 "
        "nr_regions=800 4420943872-4420947968: 94 0\n";
    static const char *const bad[] = {
        "damos_before_apply: ctx_idx=0 scheme_idx=0 target_idx=0 "
        "nr_regions=800 4420947968-4420943872: 94 0",   /* end <= start */
        "damos_before_apply: ctx_idx=0 scheme_idx=0 target_idx=0 "
        "nr_regions=800 4420943872-4420947968: 94",     /* no age */
        "damos_before_apply: ctx_idx=4294967296 scheme_idx=0 target_idx=0 "
        "nr_regions=800 0-4096: 94 0",                  /* past 32 bits */
        "damos_before_apply: ctx_idx=0 scheme_idx=0 target_idx=0 "
        "nr_regions=800 0-99999999999999999999: 94 0",  /* past 64 bits */
        "damos_before_apply: ctx_idx=0 scheme_idx=0 target_idx=0 "
        "nr_regions=800 0-4096: 94 0 extra",
    };
    struct ms_damos_event ev;
    unsigned int k;

    memset(&ev, 0, sizeof(ev));
    CHECK(ms_damos_trace_line(with_ctx, sizeof(with_ctx) - 1, &ev) == 0);
    CHECK(ev.ctx == 0 && ev.scheme == 1 && ev.target == 0);
    CHECK(ev.start == 4412055552ULL && ev.end == 4412059648ULL);
    CHECK(ev.nr_accesses == 115);
    CHECK(ms_damos_trace_line(bare, sizeof(bare) - 1, &ev) == 0);
    CHECK(ev.scheme == 0 && ev.start == 4420943872ULL && ev.nr_accesses == 94);
    for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        CHECK(ms_damos_trace_line(bad[k], strlen(bad[k]), &ev) == -EINVAL);
    }
    CHECK(ms_damos_trace_line("# tracer: nop", 13, &ev) == 1);
    CHECK(ms_damos_trace_line("", 0, &ev) == 1);
    CHECK(ms_damos_trace_line("damon_aggregated: target_id=0", 29, &ev) == 1);
    CHECK(ms_damos_trace_line("CPU:1 [LOST 12 EVENTS]", 22, &ev) == -ENOSPC);
    /* Cut anywhere, a line never parses as an event. */
    for (k = 0; k + 1 < sizeof(bare) - 1; k++) {
        CHECK(ms_damos_trace_line(bare, k, &ev) != 0);
    }
}

static void test_draw(void)
{
    static unsigned int hits[16];
    uint64_t state = 1, out[1000], big = 1ULL << 50;
    unsigned int n, i, k, sorted = 1, in_slice = 1, fair = 1;

    CHECK(ms_draw_pages(&state, 1 << 20, 1000, out, &n) == 0 && n == 1000);
    for (i = 0; i < n; i++) {
        /* Stratified: sample i lies in slice i of the range. */
        in_slice &= out[i] >= (uint64_t)(1 << 20) * i / 1000 &&
                    out[i] < (uint64_t)(1 << 20) * (i + 1) / 1000;
        if (i) {
            sorted &= out[i] > out[i - 1];
        }
    }
    CHECK(sorted && in_slice);
    /* Dense case: 600 of 1000 pages, still distinct and sorted. */
    CHECK(ms_draw_pages(&state, 1000, 600, out, &n) == 0 && n == 600);
    for (i = 1, sorted = 1; i < n; i++) {
        sorted &= out[i] > out[i - 1];
    }
    CHECK(sorted && out[n - 1] < 1000);
    /* Huge ranges: slice bounds must not overflow. */
    CHECK(ms_draw_pages(&state, big, 1000, out, &n) == 0 && n == 1000 &&
          out[999] < big && out[999] >= big / 1000 * 999);
    /*
     * Every page equally likely: 4 of 16 pages drawn 4000 times, each page
     * expected 1000 times (sd 27); 150 off would be a 5.5 sd fluke.
     */
    for (k = 0; k < 4000; k++) {
        fair &= ms_draw_pages(&state, 16, 4, out, &n) == 0 && n == 4;
        for (i = 0; i < n && fair; i++) {
            hits[out[i]]++;
        }
    }
    for (i = 0; i < 16; i++) {
        fair &= hits[i] > 850 && hits[i] < 1150;
    }
    CHECK(fair);
    /* More samples than pages: every page once. */
    CHECK(ms_draw_pages(&state, 5, 1000, out, &n) == 0 && n == 5 &&
          out[4] == 4);
    CHECK(ms_draw_pages(&state, 0, 10, out, &n) == -EINVAL);
}

static void test_pagemap_read(void)
{
    char path[64];
    uint64_t entries[2048], pages[6] = { 0, 1, 700, 710, 2047, 5000 };
    struct ms_pagemap_entry out[6];
    int fd = temp_file(path, sizeof(path)), i;

    for (i = 0; i < 2048; i++) {
        entries[i] = i % 2 ? 0 : (1ULL << 63) | (uint64_t)(i + 100);
    }
    CHECK(write(fd, entries, sizeof(entries)) == sizeof(entries));
    CHECK(ms_pagemap_read(fd, pages, 6, out) == 0);
    CHECK(out[0].present && out[0].pfn == 100);
    CHECK(!out[1].present);
    CHECK(out[2].present && out[2].pfn == 800);
    CHECK(out[3].present && out[3].pfn == 810);     /* read with 700 */
    CHECK(!out[4].present);
    CHECK(!out[5].present);     /* past the end of the file */
    close(fd);
    CHECK(ms_pagemap_read(fd, pages, 6, out) == -EBADF);
    unlink(path);
}

static void test_page_idle(void)
{
    char path[64];
    uint64_t words[4] = { 0 }, pfns[4] = { 3, 64, 65, 250 }, back[4];
    unsigned char accessed[4] = { 9, 9, 9, 9 };
    int fd = temp_file(path, sizeof(path));

    CHECK(write(fd, words, sizeof(words)) == sizeof(words));
    CHECK(ms_idle_mark(fd, pfns, 4) == 0);
    CHECK(pread(fd, back, sizeof(back), 0) == sizeof(back));
    CHECK(back[0] == 1ULL << 3 && back[1] == 3 && back[2] == 0 &&
          back[3] == 1ULL << (250 - 192));
    /* The "kernel" clears the bit of page 64: it was accessed. */
    back[1] = 2;
    CHECK(pwrite(fd, back, sizeof(back), 0) == sizeof(back));
    CHECK(ms_idle_read_accessed(fd, pfns, 4, accessed) == 0);
    CHECK(!accessed[0] && accessed[1] && !accessed[2] && !accessed[3]);
    close(fd);
    unlink(path);
}

/*
 * A real transparent huge page of this process split by ms_thp_split(): it
 * keeps its data and PFNs, and kpageflags no longer says THP.  Without
 * root (no PFNs) or without a huge page (THP off) only the errors are
 * checked.
 */
static void test_thp_split_self(void)
{
    const size_t huge = MS_HUGE_PAGES * MS_PAGE_SIZE;
    uint64_t vpage, pfn_before = 0, flags = 0, raw;
    struct ms_pagemap_entry e;
    int pidfd, pm = -1, kpf = -1;
    char *map, *mem;
    size_t i;

    CHECK(ms_pidfd_open(-1) == -EINVAL);
    pidfd = ms_pidfd_open(getpid());
    CHECK(pidfd >= 0);
    if (pidfd < 0) {
        return;
    }
    map = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    if (map == MAP_FAILED) {
        close(pidfd);
        return;
    }
    mem = (char *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(mem, huge, MADV_HUGEPAGE);
    for (i = 0; i < huge; i++) {
        mem[i] = (char)(i % 251 + 1);
    }
    vpage = (uintptr_t)mem / MS_PAGE_SIZE + 7;
    pm = open("/proc/self/pagemap", O_RDONLY);
    kpf = open("/proc/kpageflags", O_RDONLY);
    if (pm >= 0 && kpf >= 0 && ms_pagemap_read(pm, &vpage, 1, &e) == 0 &&
        e.pfn) {
        pfn_before = e.pfn;
        CHECK(ms_kpageflags_read(kpf, &e.pfn, 1, &flags) == 0);
    }
    CHECK(ms_thp_split(pidfd, &vpage, 1) == 0);
    if (flags & (1ULL << MS_KPF_THP)) {
        CHECK(ms_pagemap_read(pm, &vpage, 1, &e) == 0);
        CHECK(e.pfn == pfn_before);
        CHECK(ms_kpageflags_read(kpf, &e.pfn, 1, &flags) == 0);
        CHECK(!(flags & (1ULL << MS_KPF_THP)));
    } else {
        fprintf(stderr, "test_thp_split_self: no huge page here (not root "
                "or THP off): split not checked\n");
    }
    for (i = 0; i < huge && mem[i] == (char)(i % 251 + 1); i++) {
    }
    CHECK(i == huge);
    /* A PFN past the end of memory reads short: no flags. */
    raw = UINT64_C(1) << 50;
    if (kpf >= 0) {
        CHECK(ms_kpageflags_read(kpf, &raw, 1, &flags) == 0 && flags == 0);
    }
    /* Unmapped: the kernel says ENOMEM. */
    munmap(map, 2 * huge);
    CHECK(ms_thp_split(pidfd, &vpage, 1) == -ENOMEM);
    close(pidfd);
    CHECK(ms_thp_split(pidfd, &vpage, 1) == -EBADF);
    CHECK(ms_kpageflags_read(-1, &raw, 1, &flags) == -EBADF);
    if (pm >= 0) {
        close(pm);
    }
    if (kpf >= 0) {
        close(kpf);
    }
}

static void test_sampler_args(void)
{
    struct ms_sampler *s = NULL;
    char err[MS_ERRLEN];

    CHECK(ms_sampler_open(&s, 0, 0, 4096, 10, MS_CLEAR_REFS, NULL, 1.0,
                          err, sizeof(err)) == -EINVAL);
    CHECK(ms_sampler_open(&s, getpid(), 1, 4096, 10, MS_CLEAR_REFS, NULL,
                          1.0, err, sizeof(err)) == -EINVAL);
    CHECK(ms_sampler_open(&s, getpid(), 0, 4096, 0, MS_CLEAR_REFS, NULL, 1.0,
                          err, sizeof(err)) == -EINVAL);
    CHECK(ms_sampler_open(&s, getpid(), 0, 4096, 10, MS_NR_BACKENDS, NULL,
                          1.0, err, sizeof(err)) == -EINVAL);
    CHECK(s == NULL);
}

static void test_page_idle_unsupported(void)
{
    struct ms_sampler *s = NULL;
    char err[MS_ERRLEN] = "", saved[sizeof(ms_paths.page_idle)];

    memcpy(saved, ms_paths.page_idle, sizeof(saved));
    snprintf(ms_paths.page_idle, sizeof(ms_paths.page_idle),
             "/nonexistent/bitmap");
    CHECK(!ms_backend_supported(MS_PAGE_IDLE, err, sizeof(err)));
    CHECK(strstr(err, "no idle page tracking") != NULL);
    CHECK(ms_sampler_open(&s, getpid(), 0, 1 << 20, 10, MS_PAGE_IDLE, NULL,
                          1.0, err, sizeof(err)) == -EOPNOTSUPP);
    CHECK(strstr(err, "page_idle is not supported") != NULL);
    memcpy(ms_paths.page_idle, saved, sizeof(saved));
}

/* A child that exits at once: its pid is gone by the time we sample. */
static void test_dead_process(void)
{
    struct ms_sampler *s = NULL;
    char err[MS_ERRLEN] = "";
    pid_t pid = fork();

    if (pid == 0) {
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    CHECK(ms_sampler_open(&s, pid, 0, 1 << 20, 10, MS_CLEAR_REFS, NULL, 1.0,
                          err, sizeof(err)) == -ESRCH);
    CHECK(strstr(err, "does not exist") != NULL);
}

/* clear_refs on our own memory: what we touch after begin() is referenced. */
static void test_clear_refs_self(void)
{
    struct ms_sampler *s = NULL;
    struct ms_result r;
    char err[MS_ERRLEN] = "";
    size_t len = 64 << 20, i;
    char *map, *mem;
    int ret;

    if (access("/proc/self/clear_refs", W_OK) != 0) {
        fprintf(stderr, "skip clear_refs test: %s\n", strerror(errno));
        return;
    }
    /*
     * Its own VMA, no huge pages: smaps then counts exactly these pages.
     * A PROT_NONE guard page on each side keeps the kernel from merging it
     * with a neighbouring mapping whose pages smaps would count too.
     */
    map = mmap(NULL, len + 2 * 4096, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    if (map == MAP_FAILED) {
        return;
    }
    mem = map + 4096;
    CHECK(mprotect(map, 4096, PROT_NONE) == 0);
    CHECK(mprotect(mem + len, 4096, PROT_NONE) == 0);
    madvise(mem, len, MADV_NOHUGEPAGE);
    memset(mem, 1, len);
    ret = ms_sampler_open(&s, getpid(), (uint64_t)(uintptr_t)mem, len, 100,
                          MS_CLEAR_REFS, NULL, 1.0, err, sizeof(err));
    CHECK(ret == 0);
    if (ret) {
        fprintf(stderr, "%s\n", err);
        munmap(map, len + 2 * 4096);
        return;
    }
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == -EINVAL);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    for (i = 0; i < len / 4; i += 4096) {
        mem[i]++;
    }
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.sampled == len / 4096);
    CHECK(r.present == r.sampled);
    /*
     * Never more than the quarter touched: nothing else runs in this
     * mapping. Possibly a few less: the kernel's page aging may clear
     * referenced bits behind our back (seen here, up to 2 % of the quarter,
     * with most of the RAM free and no DAMON running), so allow 5 %.
     */
    CHECK(r.accessed <= r.sampled / 4);
    CHECK(r.accessed >= r.sampled / 4 - r.sampled / 80);
    if (r.accessed != r.sampled / 4) {
        fprintf(stderr, "clear_refs: %u of %u pages referenced, want %u\n",
                r.accessed, r.sampled, r.sampled / 4);
    }
    ms_sampler_close(s);
    munmap(map, len + 2 * 4096);
}

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

static void fake_put(const char *text, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Write text to the file at fmt under the fake root, making its parents. */
static void fake_put(const char *text, const char *fmt, ...)
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

static void fake_put_u64(uint64_t v, const char *rel)
{
    char text[32];

    snprintf(text, sizeof(text), "%llu\n", (unsigned long long)v);
    fake_put(text, "%s", rel);
}

static uint64_t fake_pfn(unsigned int page)
{
    return FAKE_PFN + (page == 46 || page == 47 ? 45 : page);
}

/* pagemap[page] := pfn (0: not present). */
static void fake_map(unsigned int page, uint64_t pfn)
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

static void fake_pagemap(void)
{
    unsigned int i;

    fake_put("", "proc/%d/pagemap", (int)getpid());
    for (i = 0; i < FAKE_PAGES; i++) {
        fake_map(i, i < FAKE_PRESENT ? fake_pfn(i) : 0);
    }
}

/*
 * Kdamond index as memagg leaves it.  The fake tree is not recreated when
 * nr_kdamonds is written, so what memagg wrote stays: update_us starts at
 * memagg's hour, as a set-up of its own (not another DAMON user's) reads.
 */
static void fake_kdamond(int index)
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

static void fake_damon_tree(void)
{
    fake_put("0\n", "damon/kdamonds/nr_kdamonds");
    fake_kdamond(0);
}

static void fake_setup(void)
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

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void fake_teardown(void)
{
    nftw(fake_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    ms_paths = saved_paths;
}

static struct ms_sampler *fake_sampler(enum ms_backend b)
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
static void idle_access(uint64_t pfn)
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

/*
 * The window of every test below: pages 0-15 and 45-47 (one KSM page)
 * are accessed.  With churn, during it the host moved page 0 (accessed)
 * and page 20 (idle) elsewhere and took page 21 (idle) away, and the old
 * PFNs of 20 and 21 now hold another process's busy pages.
 */
#define WINDOW_ACCESSED (16 + 3)
#define CHURN_ACCESSED (WINDOW_ACCESSED - 1)
#define CHURN_SAMPLED 61        /* 64 x (47 - 2) / 47 = 61.3 */

static void churn(void)
{
    fake_map(0, 3000);
    fake_map(20, 3001);
    fake_map(21, 0);
}

/*
 * Collect a window churn() went through and check what is left of it:
 * the two moved samples left out, each for the 64 / 47 drawn pages a
 * sample in use at both ends stands for; the vanished one sampled,
 * present when the window began, and idle, whoever uses its old PFN now.
 */
static void check_churned_window(struct ms_sampler *s)
{
    struct ms_result r;
    char err[MS_ERRLEN] = "";
    int ret;

    ret = ms_sampler_collect(s, &r, err, sizeof(err));
    CHECK(ret == 0);
    if (ret) {
        fprintf(stderr, "%s\n", err);
    }
    CHECK(r.moved == 2);
    CHECK(r.sampled == CHURN_SAMPLED && r.present == FAKE_PRESENT - 2);
    CHECK(r.accessed == CHURN_ACCESSED);
}

static void test_page_idle_moves(void)
{
    struct ms_sampler *s;
    struct ms_result r;
    char err[MS_ERRLEN] = "";
    unsigned int i;

    s = fake_sampler(MS_PAGE_IDLE);
    if (!s) {
        return;
    }
    /* A quiet window: every sample counts, the KSM page three times. */
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    for (i = 0; i < 16; i++) {
        idle_access(fake_pfn(i));
    }
    idle_access(fake_pfn(45));
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.sampled == FAKE_PAGES && r.present == FAKE_PRESENT);
    CHECK(r.moved == 0 && r.accessed == WINDOW_ACCESSED);

    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    for (i = 0; i < 16; i++) {
        idle_access(fake_pfn(i));
    }
    idle_access(fake_pfn(45));
    churn();
    idle_access(fake_pfn(20));
    idle_access(fake_pfn(21));
    check_churned_window(s);
    ms_sampler_close(s);
    fake_pagemap();
}

static void test_most_pages_moved(void)
{
    struct ms_sampler *s;
    struct ms_result r;
    char err[MS_ERRLEN] = "";
    unsigned int i;

    s = fake_sampler(MS_PAGE_IDLE);
    if (!s) {
        return;
    }
    /*
     * Half of the 48 present moved, 10 vanished: still a window, where
     * the 64 drawn count for 64 x (38 - 24) / 38 = 23.6.
     */
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    for (i = 0; i < FAKE_PRESENT / 2; i++) {
        fake_map(i, 3000 + i);
    }
    for (i = 30; i < 40; i++) {
        fake_map(i, 0);
    }
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.moved == FAKE_PRESENT / 2 && r.sampled == 24);
    CHECK(r.present == FAKE_PRESENT / 2);
    fake_pagemap();
    /* One more: not to be trusted. */
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    for (i = 0; i <= FAKE_PRESENT / 2; i++) {
        fake_map(i, 3000 + i);
    }
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == -EAGAIN);
    CHECK(strstr(err, "the host moved 25 of 48 sampled pages") != NULL);
    CHECK(r.sampled == 0 && r.accessed == 0);
    fake_pagemap();
    /* The sampler is fine for the next window. */
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.moved == 0 && r.sampled == FAKE_PAGES);
    ms_sampler_close(s);
}

#define TRIED "damon/kdamonds/0/contexts/0/schemes/0/tried_regions"

/*
 * DAMON's answer: tried region k is [first, last + 1) in PFNs.  The kernel
 * numbers them with gaps (0, 2, 4 here on 6.18).
 */
static void damon_tried(unsigned int k, uint64_t first, uint64_t last)
{
    const char *dir = "damon/kdamonds/0/contexts/0/schemes/0/tried_regions";
    char rel[160];

    snprintf(rel, sizeof(rel), "%s/%u/start", dir, k);
    fake_put_u64(first * MS_PAGE_SIZE, rel);
    snprintf(rel, sizeof(rel), "%s/%u/end", dir, k);
    fake_put_u64((last + 1) * MS_PAGE_SIZE, rel);
}

static void damon_total_pages(uint64_t pages)
{
    fake_put_u64(pages * MS_PAGE_SIZE, "damon/kdamonds/0/contexts/0/"
                 "schemes/0/tried_regions/total_bytes");
}

static void test_damon_paddr_moves(void)
{
    struct ms_sampler *s;
    struct ms_result r;
    char err[MS_ERRLEN] = "";
    unsigned int i;

    s = fake_sampler(MS_DAMON_PADDR);
    if (!s) {
        return;
    }
    /*
     * The kernel's answer: one region for pages 0-15, one for the KSM
     * page, and the busy pages now at the old PFNs of pages 20 and 21.
     */
    damon_tried(0, fake_pfn(0), fake_pfn(15));
    damon_tried(2, fake_pfn(20), fake_pfn(21));
    damon_tried(4, fake_pfn(45), fake_pfn(45));
    damon_total_pages(19);

    /*
     * Nothing moved: the 19 pages, spread over the samples (x 48 / 46).
     * The kdamond watches this sampler alone: total_bytes is the answer,
     * no region is read (this one could not be).
     */
    fake_put("x\n", "%s/0/start", TRIED);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.moved == 0 && r.sampled == FAKE_PAGES);
    CHECK(r.accessed == 20);
    CHECK(r.kdamond_cpu_s >= 0);
    damon_tried(0, fake_pfn(0), fake_pfn(15));

    /* Pages moved: the regions, counted for the samples that stayed. */
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    churn();
    check_churned_window(s);
    fake_pagemap();

    /* A tried region that is not a number fails the window, no more. */
    fake_put("0x12\n", "damon/kdamonds/0/contexts/0/schemes/0/"
             "tried_regions/2/end");
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    fake_map(21, 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == -EINVAL);
    CHECK(strstr(err, "tried region 2") != NULL);
    fake_pagemap();
    damon_tried(2, fake_pfn(20), fake_pfn(21));

    /*
     * Regions of one page each, as the kernel leaves them within an
     * aggregation interval, and total_bytes says so: their ends are not
     * read.  Pages 1, 2 and the KSM page (three samples) count.
     */
    damon_tried(0, fake_pfn(1), fake_pfn(1));
    damon_tried(2, fake_pfn(2), fake_pfn(2));
    damon_total_pages(3);
    fake_put("x\n", "%s/2/end", TRIED);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    churn();
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.moved == 2 && r.accessed == 5);
    fake_pagemap();
    damon_tried(0, fake_pfn(0), fake_pfn(15));
    damon_tried(2, fake_pfn(20), fake_pfn(21));
    damon_total_pages(19);

    /* More than half moved: no window, whatever DAMON says. */
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    for (i = 0; i < FAKE_PRESENT; i++) {
        fake_map(i, 3000 + i);
    }
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == -EAGAIN);
    CHECK(strstr(err, "moved 48 of 48") != NULL);
    fake_pagemap();
    ms_sampler_close(s);
}

static uint64_t fake_get_u64(const char *rel)
{
    char path[512];
    uint64_t v = 0;

    snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
    CHECK(ms_read_u64_file(path, &v, NULL, 0) == 0);
    return v;
}

#define REGION0_START "damon/kdamonds/0/contexts/0/targets/0/regions/0/start"

/*
 * A sample whose pages stayed put serves the next window as it is: no
 * pagemap read at begin() (a page that appears in between is seen only
 * when the window ends, and then the sample is drawn anew), no region
 * written again.
 */
static void test_damon_kept_sample(void)
{
    struct ms_sampler *s;
    struct ms_result r;
    char err[MS_ERRLEN] = "";

    s = fake_sampler(MS_DAMON_PADDR);
    if (!s) {
        return;
    }
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(fake_get_u64(REGION0_START) == fake_pfn(0) * MS_PAGE_SIZE);
    /* Whatever the file holds now, a kept sample does not write it. */
    fake_put("7\n", REGION0_START);
    fake_map(50, 2000);
    fake_put("0\n", "damon/kdamonds/0/contexts/0/targets/0/regions/%u/start",
             FAKE_KEYS);
    fake_put("0\n", "damon/kdamonds/0/contexts/0/targets/0/regions/%u/end",
             FAKE_KEYS);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(fake_get_u64(REGION0_START) == 7);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.present == FAKE_PRESENT && r.sampled == FAKE_PAGES);
    /* Page 50 appeared during the last window: drawn anew, it counts. */
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.present == FAKE_PRESENT + 1);

    /* keep = 1: every window draws anew. */
    ms_sampler_set_keep(s, 1);
    fake_map(50, 0);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.present == FAKE_PRESENT);

    /* A new n: the next window draws that many. */
    CHECK(ms_sampler_set_n(s, 0, err, sizeof(err)) == -EINVAL);
    CHECK(strstr(err, "n must be between 1 and") != NULL);
    CHECK(ms_sampler_set_n(s, 16, err, sizeof(err)) == 0);
    CHECK(ms_sampler_n(s) == 16);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_set_n(s, 32, err, sizeof(err)) == -EBUSY);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.sampled == 16 && r.present == 12);
    ms_sampler_close(s);
    fake_pagemap();
}

static unsigned int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    unsigned int nr = 0;

    while (d && readdir(d)) {
        nr++;
    }
    if (d) {
        closedir(d);
    }
    return nr;
}

/*
 * More regions than the descriptors the process may keep open (a host
 * sampling many VMs): their files are opened for each write, and a kept
 * sample still writes none, since what each holds is remembered.
 */
static void test_damon_kept_sample_few_fds(void)
{
    struct ms_sampler *s;
    struct ms_result r;
    struct rlimit was, few;
    char err[MS_ERRLEN] = "";

    s = fake_sampler(MS_DAMON_PADDR);
    if (!s) {
        return;
    }
    CHECK(getrlimit(RLIMIT_NOFILE, &was) == 0);
    few = was;
    few.rlim_cur = 100;         /* room for 50 region files, not 92 */
    CHECK(setrlimit(RLIMIT_NOFILE, &few) == 0);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(open_fds() < 50);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(fake_get_u64(REGION0_START) == fake_pfn(0) * MS_PAGE_SIZE);
    fake_put("7\n", REGION0_START);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(fake_get_u64(REGION0_START) == 7);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.sampled == FAKE_PAGES);
    ms_sampler_close(s);
    CHECK(setrlimit(RLIMIT_NOFILE, &was) == 0);
}

#define FOREIGN_TRIED "damon/kdamonds/0/contexts/0/schemes/1/tried_regions/" \
    "total_bytes"
#define NR_REGIONS "damon/kdamonds/0/contexts/0/targets/0/regions/nr_regions"

/*
 * Another DAMON user rewrites the kdamond's region files while it runs.
 * The kept sample writes none at the next restart, so the kdamond watches
 * that user's regions: its second scheme (regions of more than one page,
 * which memagg never sets) tried some, and the window is rejected however
 * many pages read accessed; the next window writes every file again.  A
 * rewritten number of regions is seen before the restart.
 */
static void test_damon_foreign_regions(void)
{
    struct ms_sampler *s;
    struct ms_result r;
    char err[MS_ERRLEN] = "";

    s = fake_sampler(MS_DAMON_PADDR);
    if (!s) {
        return;
    }
    damon_total_pages(19);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.accessed == 20);

    fake_put("7\n", REGION0_START);
    fake_put_u64(1ULL << 30, FOREIGN_TRIED);
    damon_total_pages(FAKE_KEYS);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(fake_get_u64(REGION0_START) == 7);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == -EAGAIN);
    CHECK(strstr(err, "window rejected") != NULL);
    CHECK(strstr(err, "1073741824 bytes in regions memagg did not set"));
    /* Which region, and how many memagg wrote and the kernel holds. */
    CHECK(strstr(err, "(first none listed); memagg wrote 73 regions, "
                 "sysfs holds 73, the first [0x7, "));

    /* update_schemes_tried_regions lists the regions: the first is named. */
    fake_put("4096\n", "damon/kdamonds/0/contexts/0/schemes/1/tried_regions/"
             "0/start");
    fake_put("2101248\n", "damon/kdamonds/0/contexts/0/schemes/1/"
             "tried_regions/0/end");
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == -EAGAIN);
    CHECK(strstr(err, "first [0x1000, 0x201000)"));

    fake_put("0\n", FOREIGN_TRIED);
    damon_total_pages(19);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(fake_get_u64(REGION0_START) == fake_pfn(0) * MS_PAGE_SIZE);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.accessed == 20);

    /* One region over the biggest System RAM range, as DAMON's default. */
    fake_put("1\n", NR_REGIONS);
    fake_put("7\n", REGION0_START);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(fake_get_u64(NR_REGIONS) > FAKE_KEYS);
    CHECK(fake_get_u64(REGION0_START) == fake_pfn(0) * MS_PAGE_SIZE);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.accessed == 20);
    ms_sampler_close(s);
}

/*
 * DAMON's sysfs tree is locked through its own directory: a process that
 * holds it (through its own open file, as another process would, whatever
 * its /run) keeps a sampler from opening DAMON, and the error says so.
 */
static void test_damon_locked_by_another(void)
{
    struct ms_sampler *s = NULL;
    char err[MS_ERRLEN] = "";
    uint64_t seed = 1;
    int fd = open(ms_paths.damon, O_RDONLY | O_DIRECTORY);

    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
    CHECK(ms_sampler_open(&s, getpid(), 0, FAKE_PAGES * MS_PAGE_SIZE,
                          FAKE_PAGES, MS_DAMON_PADDR, &seed, 0.1, err,
                          sizeof(err)) == -EBUSY);
    CHECK(strstr(err, "in use by another memagg process") != NULL);
    if (fd >= 0) {
        close(fd);
    }
    s = fake_sampler(MS_DAMON_PADDR);
    ms_sampler_close(s);
}

/* The last word written to kdamond 0's state (over the longer ones). */
static int fake_state_is(const char *want)
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

#define UPDATE_US "contexts/0/monitoring_attrs/intervals/update_us"

/*
 * Another DAMON user's kdamond (0 here, running) is kept: memagg's pool
 * comes after it (its slot 0 is kdamond 1), and it runs again with its
 * set-up as it was while the pool is there and after.  A kdamond a dead
 * memagg left running (an update interval of an hour) is turned off.
 */
static void test_damon_keeps_others(void)
{
    struct ms_sampler *s;

    fake_kdamond(1);
    fake_put("1\n", "damon/kdamonds/nr_kdamonds");
    fake_put("on\n", "damon/kdamonds/0/state");
    fake_put("1\n", "damon/kdamonds/0/contexts/nr_contexts");
    fake_put("1000000\n", "damon/kdamonds/0/" UPDATE_US);
    fake_put("4294967296\n", REGION0_START);
    s = fake_sampler(MS_DAMON_PADDR);
    CHECK(s != NULL);
    CHECK(fake_state_is("on"));
    CHECK(fake_get_u64(REGION0_START) == 4294967296ULL);
    CHECK(fake_get_u64("damon/kdamonds/0/" UPDATE_US) == 1000000);
    CHECK(fake_get_u64("damon/kdamonds/1/contexts/nr_contexts") == 1);
    ms_sampler_close(s);
    CHECK(fake_state_is("on"));
    CHECK(fake_get_u64("damon/kdamonds/0/" UPDATE_US) == 1000000);

    fake_put("1\n", "damon/kdamonds/nr_kdamonds");
    fake_put("3600000000\n", "damon/kdamonds/0/" UPDATE_US);
    s = fake_sampler(MS_DAMON_PADDR);
    CHECK(s != NULL);
    CHECK(fake_state_is("off"));
    ms_sampler_close(s);
    fake_put("0\n", "damon/kdamonds/nr_kdamonds");
    fake_put("off\n", "damon/kdamonds/0/state");
}

#define HOST_FIRST 2000ULL

/*
 * Two damon_paddr samplers share the host's one kdamond (slot 0): it
 * starts once both have begun, on both samples merged; one answer, taken
 * at the first collect(), serves both, each counting its own pages.  A
 * sampler skipped for a period keeps what was seen before the restart; a
 * close lets the others' windows start; a restart DAMON refuses fails the
 * window at collect().
 */
static void test_damon_host_shared(void)
{
    struct ms_sampler *a, *b = NULL;
    struct ms_result r;
    char err[MS_ERRLEN] = "", path[512];
    uint64_t seed = 2, nr;
    unsigned int i;
    int ret;

    for (i = 0; i < FAKE_PAGES; i++) {
        fake_map(FAKE_PAGES + i, HOST_FIRST + i);
    }
    a = fake_sampler(MS_DAMON_PADDR);
    ret = ms_sampler_open(&b, getpid(), FAKE_PAGES * MS_PAGE_SIZE,
                          FAKE_PAGES * MS_PAGE_SIZE, FAKE_PAGES,
                          MS_DAMON_PADDR, &seed, 0.1, err, sizeof(err));
    CHECK(ret == 0);
    if (!a || ret) {
        ms_sampler_close(a);
        return;
    }
    fake_put("off", "damon/kdamonds/0/state");
    CHECK(ms_sampler_begin(a, err, sizeof(err)) == 0);
    CHECK(fake_state_is("off"));
    CHECK(ms_sampler_begin(b, err, sizeof(err)) == 0);
    CHECK(fake_state_is("on"));
    /* The pages of both, then padding above any RAM. */
    nr = fake_get_u64("damon/kdamonds/0/contexts/0/targets/0/regions/"
                      "nr_regions");
    CHECK(nr > FAKE_KEYS + FAKE_PAGES && nr <= FAKE_REGIONS);
    snprintf(path, sizeof(path), "damon/kdamonds/0/contexts/0/targets/0/"
             "regions/%u/start", FAKE_KEYS + FAKE_PAGES - 1);
    CHECK(fake_get_u64(path) < (1ULL << 51));
    snprintf(path, sizeof(path), "damon/kdamonds/0/contexts/0/targets/0/"
             "regions/%u/start", FAKE_KEYS + FAKE_PAGES);
    CHECK(fake_get_u64(path) >= (1ULL << 51));

    /* a: pages 0-15 (16 x 48 / 46); b: its first 10 pages. */
    damon_tried(0, fake_pfn(0), fake_pfn(15));
    damon_tried(2, HOST_FIRST, HOST_FIRST + 9);
    damon_tried(4, 3000, 3000);
    CHECK(ms_sampler_collect(a, &r, err, sizeof(err)) == 0);
    CHECK(r.accessed == 17 && r.kdamond_cpu_s >= 0);
    CHECK(r.answer && strcmp(r.answer, "regions") == 0);
    /* b reads the answer a's collect() took, not a new one. */
    damon_tried(2, HOST_FIRST, HOST_FIRST + 19);
    CHECK(ms_sampler_collect(b, &r, err, sizeof(err)) == 0);
    CHECK(r.accessed == 10 && r.sampled == FAKE_PAGES);

    /*
     * b skipped (a's collect() took its answer, but b is neither collected
     * nor begun): what it had before the restart stays, its window goes on.
     */
    CHECK(ms_sampler_begin(a, err, sizeof(err)) == 0);
    CHECK(ms_sampler_begin(b, err, sizeof(err)) == 0);
    damon_tried(2, HOST_FIRST, HOST_FIRST + 4);
    CHECK(ms_sampler_collect(a, &r, err, sizeof(err)) == 0);
    CHECK(ms_sampler_begin(a, err, sizeof(err)) == 0);
    CHECK(!fake_state_is("on"));
    CHECK(ms_damon_commit(err, sizeof(err)) == 0);
    CHECK(fake_state_is("on"));
    damon_tried(2, HOST_FIRST + 10, HOST_FIRST + 14);
    CHECK(ms_sampler_collect(b, &r, err, sizeof(err)) == 0);
    CHECK(r.accessed == 10);

    /* a closes while b waits for it: b's window starts. */
    CHECK(ms_sampler_begin(b, err, sizeof(err)) == 0);
    CHECK(!fake_state_is("on"));
    fake_put("0\n", "damon/kdamonds/0/contexts/0/targets/0/regions/"
             "nr_regions");
    ms_sampler_close(a);
    CHECK(fake_state_is("on"));
    /* Fewer than half the regions: the count shrinks. */
    nr = fake_get_u64("damon/kdamonds/0/contexts/0/targets/0/regions/"
                      "nr_regions");
    CHECK(nr >= FAKE_PAGES && nr < FAKE_KEYS + FAKE_PAGES);
    CHECK(ms_sampler_collect(b, &r, err, sizeof(err)) == 0);

    /*
     * DAMON refuses the regions (far fewer pages: the count shrinks, the
     * kernel recreates the region files, and one is gone), drawn anew
     * too: the window fails.
     */
    snprintf(path, sizeof(path), "%s/damon/kdamonds/0/contexts/0/targets/0/"
             "regions/10/start", fake_root);
    CHECK(unlink(path) == 0);
    CHECK(ms_sampler_set_n(b, 20, err, sizeof(err)) == 0);
    /* b alone: its accessed pages counted by total_bytes. */
    damon_total_pages(5);
    CHECK(ms_sampler_begin(b, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(b, &r, err, sizeof(err)) == -ENOENT);
    CHECK(strstr(err, "region 10") != NULL);
    fake_put("0\n", "damon/kdamonds/0/contexts/0/targets/0/regions/10/"
             "start");
    CHECK(ms_sampler_begin(b, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(b, &r, err, sizeof(err)) == 0);
    CHECK(r.sampled == 20 && r.accessed <= 5);
    CHECK(r.answer && strcmp(r.answer, "count") == 0);
    /* Two pages more: the count (and every directory) stays. */
    nr = fake_get_u64("damon/kdamonds/0/contexts/0/targets/0/regions/"
                      "nr_regions");
    CHECK(ms_sampler_set_n(b, 22, err, sizeof(err)) == 0);
    CHECK(ms_sampler_begin(b, err, sizeof(err)) == 0);
    CHECK(fake_get_u64("damon/kdamonds/0/contexts/0/targets/0/regions/"
                       "nr_regions") == nr);
    CHECK(ms_sampler_collect(b, &r, err, sizeof(err)) == 0);
    CHECK(r.sampled == 22);
    ms_sampler_close(b);
    CHECK(fake_state_is("off"));
    damon_tried(2, fake_pfn(20), fake_pfn(21));
    damon_tried(4, fake_pfn(45), fake_pfn(45));
    fake_pagemap();
}

static void fake_kflags(uint64_t pfn, uint64_t flags)
{
    int fd = open(ms_paths.kpageflags, O_WRONLY);

    CHECK(fd >= 0 && pwrite(fd, &flags, 8, (off_t)(pfn * 8)) == 8);
    if (fd >= 0) {
        close(fd);
    }
}

/*
 * Huge page splitting on: a sample at the zero page holds no memory and
 * is idle, whatever the zero page's own accessed state, and is left out
 * of the pages watched; a sample under a huge page is split through
 * process_madvise(), which the fake kernel cannot serve (the fake pages
 * are not mapped here): begin() fails, naming the split.
 */
static void test_split_and_zero_page(void)
{
    struct ms_sampler *s;
    struct ms_result r;
    char err[MS_ERRLEN] = "";
    unsigned int i;

    s = fake_sampler(MS_PAGE_IDLE);
    if (!s) {
        return;
    }
    CHECK(ms_sampler_set_split_thp(s, 1, err, sizeof(err)) == 0);
    fake_kflags(fake_pfn(10), 1ULL << MS_KPF_ZERO_PAGE);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    for (i = 0; i < 16; i++) {
        idle_access(fake_pfn(i));
    }
    idle_access(fake_pfn(45));
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.sampled == FAKE_PAGES && r.present == FAKE_PRESENT - 1);
    CHECK(r.accessed == WINDOW_ACCESSED - 1);
    CHECK(r.zero == 1 && r.split == 0 && r.huge == 0);

    ms_sampler_set_keep(s, 1);
    fake_kflags(fake_pfn(20), 1ULL << MS_KPF_THP);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == -ENOMEM);
    CHECK(strstr(err, "cannot split the huge pages of process") != NULL);
    fake_kflags(fake_pfn(20), 0);

    /* Off: the zero page is a page like the others. */
    CHECK(ms_sampler_set_split_thp(s, 0, err, sizeof(err)) == 0);
    CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
    CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
    CHECK(r.present == FAKE_PRESENT && r.zero == 0);
    fake_kflags(fake_pfn(10), 0);
    ms_sampler_close(s);

    /* No kpageflags: set_split_thp() says which file. */
    s = fake_sampler(MS_PAGE_IDLE);
    if (!s) {
        return;
    }
    unlink(ms_paths.kpageflags);
    CHECK(ms_sampler_set_split_thp(s, 1, err, sizeof(err)) == -ENOENT);
    CHECK(strstr(err, "kpageflags") != NULL);
    ms_sampler_close(s);
    fake_put("", "kpageflags");
    CHECK(truncate(ms_paths.kpageflags, 4096 * 8) == 0);
}

/*
 * Past 512 samples, collect() reads one sample in 8 again, another eighth
 * each window, and all of them only when one of those changed: a page
 * moved during the first window is seen at the fourth, when its eighth
 * (index 3) comes round.
 */
static void test_quick_recheck(void)
{
    struct ms_sampler *s = NULL;
    struct ms_result r;
    char err[MS_ERRLEN] = "";
    uint64_t seed = 1;
    unsigned int w;

    CHECK(ms_sampler_open(&s, getpid(), 0, 1024 * MS_PAGE_SIZE, 1024,
                          MS_PAGE_IDLE, &seed, 0.1, err, sizeof(err)) == 0);
    if (!s) {
        return;
    }
    for (w = 0; w < 4; w++) {
        CHECK(ms_sampler_begin(s, err, sizeof(err)) == 0);
        if (w == 0) {
            fake_map(3, 3000);
        }
        CHECK(ms_sampler_collect(s, &r, err, sizeof(err)) == 0);
        CHECK(r.moved == (w == 3 ? 1U : 0U));
        CHECK(r.present == FAKE_PRESENT - (w == 3 ? 1U : 0U));
    }
    ms_sampler_close(s);
    fake_pagemap();
}

int main(void)
{
    test_parse_u64();
    test_pagemap_decode();
    test_smaps();
    test_mark_range();
    test_word_list();
    test_cgroup_memcg();
    test_damos_trace_line();
    test_draw();
    test_pagemap_read();
    test_page_idle();
    test_sampler_args();
    test_page_idle_unsupported();
    test_dead_process();
    test_clear_refs_self();
    test_thp_split_self();
    fake_setup();
    test_page_idle_moves();
    test_most_pages_moved();
    test_damon_paddr_moves();
    test_damon_kept_sample();
    test_damon_kept_sample_few_fds();
    test_damon_foreign_regions();
    test_damon_locked_by_another();
    test_damon_keeps_others();
    test_damon_host_shared();
    test_quick_recheck();
    test_split_and_zero_page();
    fake_teardown();
    return check_summary();
}
