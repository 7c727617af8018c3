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
 * pagemap and idle-bitmap I/O against fixture files, and the sampler's
 * argument and dead-process handling.  Prints "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static void test_word_list(void)
{
    CHECK(ms_word_list_has("vaddr fvaddr paddr\n", 19, "paddr"));
    CHECK(ms_word_list_has("vaddr fvaddr paddr\n", 19, "vaddr"));
    CHECK(!ms_word_list_has("fvaddr paddr\n", 13, "vaddr"));
    CHECK(!ms_word_list_has("", 0, "paddr"));
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
    unsigned int accessed = 99;
    int fd = temp_file(path, sizeof(path));

    CHECK(write(fd, words, sizeof(words)) == sizeof(words));
    CHECK(ms_idle_mark(fd, pfns, 4) == 0);
    CHECK(pread(fd, back, sizeof(back), 0) == sizeof(back));
    CHECK(back[0] == 1ULL << 3 && back[1] == 3 && back[2] == 0 &&
          back[3] == 1ULL << (250 - 192));
    /* The "kernel" clears the bit of page 64: it was accessed. */
    back[1] = 2;
    CHECK(pwrite(fd, back, sizeof(back), 0) == sizeof(back));
    CHECK(ms_idle_count_accessed(fd, pfns, 4, &accessed) == 0 &&
          accessed == 1);
    close(fd);
    unlink(path);
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

int main(void)
{
    test_parse_u64();
    test_pagemap_decode();
    test_smaps();
    test_word_list();
    test_draw();
    test_pagemap_read();
    test_page_idle();
    test_sampler_args();
    test_page_idle_unsupported();
    test_dead_process();
    test_clear_refs_self();
    return check_summary();
}
