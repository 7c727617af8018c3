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
 * Unit tests of the native sampler's PFN backends (page_idle and
 * damon_paddr) against a fake /proc and sysfs (fake_kernel.h) where the
 * test plays the kernel: pages moving during the window, a kept sample,
 * another DAMON user's kdamonds and regions, the host's kdamond shared by
 * samplers, huge page splitting and the zero page, the quick recheck.
 * The C layer against this process and fixture files is
 * test_sampler_io.c.  Prints "N passed, N failed".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "ms.h"

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
