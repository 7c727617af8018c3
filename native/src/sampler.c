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
 * The sampler: n random pages of a process's address range, their accessed
 * state cleared at begin() and counted at collect(), through whichever
 * kernel interface this machine has.
 *
 * page_idle and damon_paddr watch the pages' PFNs, found in pagemap at
 * begin().  The host may move a page during the window (compaction, NUMA
 * migration, swap, a balloon discard): its old PFN is freed and may soon
 * hold another process's busy page.  So collect() reads pagemap again and
 * counts the accessed state of the samples still at the PFN watched; a
 * sample no longer present (the host took it) is idle; a sample now at
 * another PFN is left out (ms_samples_left()), being neither known accessed
 * nor known idle.  When more than half of them moved, the window is not
 * trusted at all.
 *
 * Neither interface sees a page while it is off the LRU lists (a page just
 * faulted, waiting in its CPU's batch; one isolated for reclaim or
 * migration): its accessed bit is neither cleared nor read, so it reads
 * idle, or accessed from before the window.  A batch holds a few dozen
 * pages per CPU, nothing next to a VM's RAM; a test that needs every
 * sample right settles its pages first (tests/unit/native/hotset.py).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "ms.h"
#include "sampler_internal.h"

struct ms_paths ms_paths = {
    .proc = "/proc",
    .page_idle = "/sys/kernel/mm/page_idle/bitmap",
    .damon = "/sys/kernel/mm/damon/admin",
    .kpageflags = "/proc/kpageflags",
    .tracing = "/sys/kernel/tracing",
};

const char *const ms_backend_names[MS_NR_BACKENDS] = {
    [MS_PAGE_IDLE] = "page_idle",
    [MS_DAMON_MEMCG] = "damon_memcg",
    [MS_DAMON_PADDR] = "damon_paddr",
    [MS_DAMON_VADDR] = "damon_vaddr",
    [MS_CLEAR_REFS] = "clear_refs",
};

/*
 * Automatic DAMON sampling interval.  The accessed state is sticky between
 * checks (the young bit, or the page's idle flag once reclaim took the bit),
 * so one check at the end of the period would do; every check costs two
 * rmap walks per page, and collect() waits for the next one.  So: two
 * checks per period as the caller paces it (one per 30 s for periods over
 * a minute, to keep a late collect()'s wait short), the last one 5 % after
 * the period's end; the first period uses 1 s.  One check would halve the
 * walks, but then a collect() that just missed it waits a whole period, and
 * a host collecting its VMs one after another stretches its period by
 * those waits, which the next interval then follows.
 */
#define AUTO_FIRST_US 1000000ULL
#define AUTO_MIN_US 10000ULL
#define AUTO_MAX_CHECK_S 30.0
#define AUTO_SLACK 1.05
/*
 * damon_memcg's window is a little shorter than the period, so that every
 * collect() finds a new one without waiting; now and then it finds two
 * and reports their mean.
 */
#define MEMCG_WINDOW_SHARE 0.95

/*
 * Redrawing the sample costs more than watching it: a pagemap read per
 * page and, for damon_paddr, two sysfs writes per region (about 4 us a
 * page against well under 1 us for a window over the same pages).  So a
 * sample is kept from one window to the next while none of its pages
 * changed (same presence, same PFN at both ends of the window), and drawn
 * anew after MS_KEEP_WINDOWS windows, when a page changed, or when n did.
 * damon_paddr samplers count those windows on the host kdamond's clock
 * (its restarts, ms_damon_epoch()) rather than their own: its regions are
 * every member's pages merged in address order, so one member's new draw
 * shifts nearly every region file (0.55 s for 40,000 regions here), and
 * members drawing in the same period pay that once rather than each.
 */
#define MS_KEEP_WINDOWS 32

static int damon_redraw(struct ms_damon_member *m, char *err,
                        size_t errlen);

int ms_backend_supported(enum ms_backend b, char *reason, size_t len)
{
    char path[160];

    switch (b) {
    case MS_PAGE_IDLE:
        if (access(ms_paths.page_idle, R_OK | W_OK) != 0) {
            ms_err(reason, len, "no idle page tracking (%s: %s)",
                   ms_paths.page_idle, strerror(errno));
            return 0;
        }
        ms_err(reason, len, "idle page tracking at %s", ms_paths.page_idle);
        return 1;
    case MS_DAMON_MEMCG:
        return ms_memcg_supported(reason, len);
    case MS_DAMON_PADDR:
        return ms_damon_supported("paddr", reason, len);
    case MS_DAMON_VADDR:
        return ms_damon_supported("vaddr", reason, len);
    case MS_CLEAR_REFS:
        snprintf(path, sizeof(path), "%s/self/clear_refs", ms_paths.proc);
        if (access(path, W_OK) != 0) {
            ms_err(reason, len, "cannot write %s: %s", path,
                   strerror(errno));
            return 0;
        }
        ms_err(reason, len, "clear_refs and smaps Referenced (whole range)");
        return 1;
    default:
        ms_err(reason, len, "unknown backend %d", (int)b);
        return 0;
    }
}

/* Open /proc/PID/<name>, telling a vanished process from other failures. */
static int open_proc(pid_t pid, const char *name, int flags, char *err,
                     size_t errlen)
{
    char path[160];
    int fd, e;

    snprintf(path, sizeof(path), "%s/%d/%s", ms_paths.proc, (int)pid, name);
    fd = open(path, flags | O_CLOEXEC);
    if (fd >= 0) {
        return fd;
    }
    e = errno;
    if (e == ENOENT || e == ESRCH) {
        ms_err(err, errlen, "process %d does not exist", (int)pid);
        return -ESRCH;
    }
    ms_err(err, errlen, "cannot open %s: %s", path, strerror(e));
    return -e;
}

void ms_sampler_close(struct ms_sampler *s)
{
    if (!s) {
        return;
    }
    if (s->damon_slot >= 0) {
        ms_damon_release(s->damon_slot);
    }
    if (s->joined) {
        ms_damon_leave(&s->member);
    }
    if (s->memcg_joined) {
        ms_memcg_leave(&s->mmember);
    }
    if (s->pagemap_fd >= 0) {
        close(s->pagemap_fd);
    }
    if (s->idle_fd >= 0) {
        close(s->idle_fd);
    }
    if (s->kpf_fd >= 0) {
        close(s->kpf_fd);
    }
    if (s->pidfd >= 0) {
        close(s->pidfd);
    }
    free(s->kflags);
    free(s->zero);
    free(s->pages);
    free(s->entries);
    free(s->now);
    free(s->keys);
    free(s->key_of);
    free(s->hit);
    free(s->sub_pages);
    free(s->sub_now);
    free(s);
}

static int alloc_samples(struct ms_sampler *s, unsigned int n)
{
    uint64_t *pages = calloc(n, sizeof(*pages));
    struct ms_pagemap_entry *entries = calloc(n, sizeof(*entries));
    struct ms_pagemap_entry *now = calloc(n, sizeof(*now));
    uint64_t *keys = calloc(n, sizeof(*keys));
    unsigned int *key_of = calloc(n, sizeof(*key_of));
    unsigned char *hit = calloc(n, sizeof(*hit));
    uint64_t *sub_pages = calloc(n / MS_RECHECK_STRIDE + 1,
                                 sizeof(*sub_pages));
    struct ms_pagemap_entry *sub_now = calloc(n / MS_RECHECK_STRIDE + 1,
                                              sizeof(*sub_now));
    uint64_t *kflags = calloc(n, sizeof(*kflags));
    unsigned char *zero = calloc(n, sizeof(*zero));

    if (!pages || !entries || !now || !keys || !key_of || !hit ||
        !sub_pages || !sub_now || !kflags || !zero) {
        free(kflags);
        free(zero);
        free(pages);
        free(entries);
        free(now);
        free(keys);
        free(key_of);
        free(hit);
        free(sub_pages);
        free(sub_now);
        return -ENOMEM;
    }
    free(s->sub_pages);
    free(s->sub_now);
    free(s->kflags);
    free(s->zero);
    s->kflags = kflags;
    s->zero = zero;
    s->sub_pages = sub_pages;
    s->sub_now = sub_now;
    free(s->pages);
    free(s->entries);
    free(s->now);
    free(s->keys);
    free(s->key_of);
    free(s->hit);
    s->pages = pages;
    s->entries = entries;
    s->now = now;
    s->keys = keys;
    s->key_of = key_of;
    s->hit = hit;
    s->n = n;
    s->nr_sampled = 0;
    s->nr_keys = 0;
    s->nr_present = 0;
    s->nr_huge = 0;
    s->nr_zero = 0;
    s->unchanged = 0;
    return 0;
}

int ms_sampler_open(struct ms_sampler **out, pid_t pid, uint64_t start,
                    uint64_t length, unsigned int n, int backend,
                    const uint64_t *seed, double sample_interval,
                    char *err, size_t errlen)
{
    char reason[MS_ERRLEN], memcg[256] = "";
    struct ms_sampler *s;
    int fd, ret;

    if (pid <= 0 || n == 0 || n > MS_MAX_SAMPLES || length < MS_PAGE_SIZE ||
        start % MS_PAGE_SIZE || start + length < start ||
        sample_interval < 0 || backend >= MS_NR_BACKENDS) {
        ms_err(err, errlen, "invalid sampler arguments");
        return -EINVAL;
    }
    if (backend < 0) {
        /* damon_memcg comes after damon_paddr, which it needs: not auto's. */
        for (backend = 0; backend < MS_NR_BACKENDS; backend++) {
            if (ms_backend_supported((enum ms_backend)backend, NULL, 0)) {
                break;
            }
        }
        if (backend == MS_NR_BACKENDS) {
            ms_err(err, errlen, "no sampler backend works on this kernel");
            return -EOPNOTSUPP;
        }
    } else if (!ms_backend_supported((enum ms_backend)backend, reason,
                                     sizeof(reason))) {
        ms_err(err, errlen, "backend %s is not supported here: %s",
               ms_backend_names[backend], reason);
        return -EOPNOTSUPP;
    } else if (backend == MS_DAMON_MEMCG) {
        ret = ms_pid_memcg(pid, memcg, sizeof(memcg), reason, sizeof(reason));
        if (ret) {
            ms_err(err, errlen, "backend damon_memcg cannot count process "
                   "%d: %s", (int)pid, reason);
            return ret;
        }
    }
    fd = open_proc(pid, "pagemap", O_RDONLY, err, errlen);
    if (fd < 0) {
        return fd;
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        close(fd);
        ms_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->pagemap_fd = fd;
    s->idle_fd = -1;
    s->kpf_fd = -1;
    s->pidfd = -1;
    s->damon_slot = -1;
    s->pid = pid;
    s->start = start;
    s->nr_pages = length / MS_PAGE_SIZE;
    s->backend = (enum ms_backend)backend;
    s->auto_interval = sample_interval == 0;
    s->sample_us = s->auto_interval ? AUTO_FIRST_US
                                    : (uint64_t)(sample_interval * 1e6);
    if (s->sample_us < 1000) {
        s->sample_us = 1000;
    }
    if (seed) {
        s->rng = *seed;
    } else if (getrandom(&s->rng, sizeof(s->rng), 0) != sizeof(s->rng)) {
        s->rng = (uint64_t)getpid() ^ (uint64_t)(ms_now() * 1e9);
    }
    s->keep_windows = MS_KEEP_WINDOWS;
    if (alloc_samples(s, n)) {
        ms_sampler_close(s);
        ms_err(err, errlen, "out of memory for %u samples", n);
        return -ENOMEM;
    }
    ret = 0;
    if (s->backend == MS_DAMON_MEMCG) {
        snprintf(s->mmember.memcg, sizeof(s->mmember.memcg), "%s", memcg);
        s->mmember.pid = pid;
        s->mmember.window_us = s->sample_us;
        ret = ms_memcg_join(&s->mmember, err, errlen);
        s->memcg_joined = ret == 0;
    }
    if (ret) {
        ms_sampler_close(s);
        return ret;
    }
    if (s->backend == MS_PAGE_IDLE) {
        s->idle_fd = open(ms_paths.page_idle, O_RDWR | O_CLOEXEC);
        if (s->idle_fd < 0) {
            ret = -errno;
            ms_err(err, errlen, "cannot open %s: %s", ms_paths.page_idle,
                   strerror(errno));
        }
    } else if (s->backend == MS_DAMON_PADDR) {
        s->member.redraw = damon_redraw;
        ret = ms_damon_join(&s->member, err, errlen);
        s->joined = ret == 0;
    } else if (s->backend == MS_DAMON_VADDR) {
        ret = ms_damon_acquire(&s->damon_slot, err, errlen);
    }
    if (ret) {
        ms_sampler_close(s);
        return ret;
    }
    *out = s;
    return 0;
}

enum ms_backend ms_sampler_backend(const struct ms_sampler *s)
{
    return s->backend;
}

unsigned int ms_sampler_n(const struct ms_sampler *s)
{
    return s->n;
}

/*
 * damon_memcg: before a draw, remember the sample the kdamond counts (no
 * commit pending), to scale its windows until the draw's commit lands.
 */
static void keep_prev(struct ms_sampler *s)
{
    if (s->backend == MS_DAMON_MEMCG && s->nr_keys &&
        ms_memcg_settled(&s->mmember)) {
        s->prev_keys = s->nr_keys;
        s->prev_present = s->nr_present;
        s->prev_sampled = s->nr_sampled;
    }
}

int ms_sampler_set_n(struct ms_sampler *s, unsigned int n, char *err,
                     size_t errlen)
{
    if (n == 0 || n > MS_MAX_SAMPLES) {
        ms_err(err, errlen, "n must be between 1 and %u, not %u",
               MS_MAX_SAMPLES, n);
        return -EINVAL;
    }
    if (s->begun) {
        ms_err(err, errlen, "n cannot change during a window");
        return -EBUSY;
    }
    if (n == s->n) {
        return 0;
    }
    keep_prev(s);
    if (alloc_samples(s, n)) {
        ms_err(err, errlen, "out of memory for %u samples", n);
        return -ENOMEM;
    }
    return 0;
}

void ms_sampler_set_per_page(struct ms_sampler *s, int on)
{
    char err[MS_ERRLEN];

    s->per_page = on;
    /*
     * A count cannot say which pages were idle: such a sampler joins the
     * host's damon_paddr kdamond, whose answer is the accessed regions.
     */
    if (on && s->backend == MS_DAMON_MEMCG && !s->begun &&
        ms_damon_supported("paddr", NULL, 0)) {
        s->member.redraw = damon_redraw;
        if (ms_damon_join(&s->member, err, sizeof(err)) == 0) {
            ms_memcg_leave(&s->mmember);
            s->memcg_joined = 0;
            s->joined = 1;
            s->backend = MS_DAMON_PADDR;
            s->unchanged = 0;
        }
    }
}

int ms_sampler_set_split_thp(struct ms_sampler *s, int on, char *err,
                             size_t errlen)
{
    int fd;

    if (!on || s->backend == MS_CLEAR_REFS) {
        s->split_thp = 0;
        return 0;
    }
    if (s->kpf_fd < 0) {
        fd = open(ms_paths.kpageflags, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fd = -errno;
            ms_err(err, errlen, "cannot open %s to find huge pages: %s",
                   ms_paths.kpageflags, strerror(-fd));
            return fd;
        }
        s->kpf_fd = fd;
    }
    if (s->pidfd < 0) {
        fd = ms_pidfd_open(s->pid);
        if (fd < 0) {
            ms_err(err, errlen, fd == -ESRCH ? "process %d does not exist"
                   : "cannot open a pidfd of process %d to split its huge "
                   "pages: %s", (int)s->pid, strerror(-fd));
            return fd;
        }
        s->pidfd = fd;
    }
    s->split_thp = 1;
    return 0;
}

void ms_sampler_set_keep(struct ms_sampler *s, unsigned int windows)
{
    s->keep_windows = windows ? windows : 1;
}

static int pfn_backend(const struct ms_sampler *s)
{
    return s->backend == MS_PAGE_IDLE || s->backend == MS_DAMON_PADDR ||
           s->backend == MS_DAMON_MEMCG;
}

/* kpageflags of the present samples (0 for the others). */
static int read_kflags(struct ms_sampler *s, char *err, size_t errlen)
{
    unsigned int i;
    int ret;

    for (i = 0; i < s->nr_sampled; i++) {
        s->kflags[i] = 0;
        if (s->entries[i].present && s->entries[i].pfn) {
            ret = ms_kpageflags_read(s->kpf_fd, &s->entries[i].pfn, 1,
                                     &s->kflags[i]);
            if (ret) {
                ms_err(err, errlen, "cannot read %s: %s",
                       ms_paths.kpageflags, strerror(-ret));
                return ret;
            }
        }
    }
    return 0;
}

static int under_thp(const struct ms_sampler *s, unsigned int i)
{
    return (s->kflags[i] & (1ULL << MS_KPF_THP)) &&
           !(s->kflags[i] & (1ULL << MS_KPF_ZERO_PAGE));
}

/*
 * Split the huge pages that hold sampled pages (one call per huge page,
 * the samples being sorted), read where the samples are again (a split
 * maps parts holding only zeros to the zero page), and mark the samples at
 * the zero page.  Only the huge pages under this draw's samples: at most n
 * per draw, none while the sample is kept; a page khugepaged collapsed
 * back moved (new PFN), which draws anew and splits it again.
 */
static int split_huge(struct ms_sampler *s, char *err, size_t errlen)
{
    double t0 = ms_now();
    uint64_t last = UINT64_MAX;
    unsigned int i, m = 0;
    int ret;

    ret = read_kflags(s, err, errlen);
    if (ret) {
        return ret;
    }
    /* keys is free until the samples' keys are made: the split list. */
    for (i = 0; i < s->nr_sampled; i++) {
        if (under_thp(s, i) && s->pages[i] / MS_HUGE_PAGES != last) {
            last = s->pages[i] / MS_HUGE_PAGES;
            s->keys[m++] = s->pages[i];
        }
    }
    if (m) {
        ret = ms_thp_split(s->pidfd, s->keys, m);
        if (ret == -ESRCH) {
            ms_err(err, errlen, "process %d does not exist", (int)s->pid);
            return ret;
        }
        if (ret) {
            ms_err(err, errlen, "cannot split the huge pages of process "
                   "%d (process_madvise MADV_COLD): %s", (int)s->pid,
                   strerror(-ret));
            return ret;
        }
        ret = ms_pagemap_read(s->pagemap_fd, s->pages, s->nr_sampled,
                              s->entries);
        if (!ret) {
            ret = read_kflags(s, err, errlen);
        } else {
            ms_err(err, errlen, "cannot read pagemap of process %d: %s",
                   (int)s->pid, strerror(-ret));
        }
        if (ret) {
            return ret;
        }
    }
    s->nr_split = m;
    s->nr_huge = 0;
    s->nr_zero = 0;
    for (i = 0; i < s->nr_sampled; i++) {
        s->zero[i] = (s->kflags[i] & (1ULL << MS_KPF_ZERO_PAGE)) != 0;
        s->nr_zero += s->zero[i];
        s->nr_huge += under_thp(s, i) ? 1 : 0;
    }
    s->split_s = ms_now() - t0;
    return 0;
}

/* Draw the pages and find which are resident, and where. */
static int draw_and_locate(struct ms_sampler *s, char *err, size_t errlen)
{
    unsigned int i, hidden = 0;
    int ret;

    s->kept = 0;
    s->unchanged = 0;
    ret = ms_draw_pages(&s->rng, s->nr_pages, s->n, s->pages,
                        &s->nr_sampled);
    if (ret) {
        ms_err(err, errlen, "cannot draw %u pages", s->n);
        return ret;
    }
    for (i = 0; i < s->nr_sampled; i++) {
        s->pages[i] += s->start / MS_PAGE_SIZE;
    }
    ret = ms_pagemap_read(s->pagemap_fd, s->pages, s->nr_sampled,
                          s->entries);
    if (ret) {
        ms_err(err, errlen, "cannot read pagemap of process %d: %s",
               (int)s->pid, strerror(-ret));
        return ret == -ESRCH ? -ESRCH : ret;
    }
    if (s->split_thp) {
        ret = split_huge(s, err, errlen);
        if (ret) {
            return ret;
        }
    } else {
        memset(s->zero, 0, s->nr_sampled);
        s->nr_huge = 0;
        s->nr_zero = 0;
    }
    s->nr_present = 0;
    s->nr_keys = 0;
    s->nr_moved = 0;
    s->nr_vanished = 0;
    for (i = 0; i < s->nr_sampled; i++) {
        const struct ms_pagemap_entry *e = &s->entries[i];

        /* The zero page holds none of the process's memory: idle. */
        if (!e->present || s->zero[i]) {
            continue;
        }
        s->nr_present++;
        if (s->backend == MS_DAMON_VADDR) {
            s->keys[s->nr_keys++] = s->pages[i] * MS_PAGE_SIZE;
        } else if (e->pfn) {
            s->keys[s->nr_keys++] = e->pfn;
        } else {
            hidden++;
        }
    }
    if (hidden && s->backend != MS_CLEAR_REFS) {
        ms_err(err, errlen, "pagemap of process %d hides PFNs: "
               "CAP_SYS_ADMIN is needed", (int)s->pid);
        return -EPERM;
    }
    /* Pages shared between samples (KSM, zero page) are watched once. */
    qsort(s->keys, s->nr_keys, sizeof(*s->keys), ms_cmp_u64);
    for (i = 0, ret = 0; i < s->nr_keys; i++) {
        if (!ret || s->keys[ret - 1] != s->keys[i]) {
            s->keys[ret++] = s->keys[i];
        }
    }
    s->nr_keys = (unsigned int)ret;
    if (!pfn_backend(s)) {
        return 0;
    }
    for (i = 0; i < s->nr_sampled; i++) {
        const uint64_t *key = NULL;

        if (s->entries[i].present && !s->zero[i]) {
            key = bsearch(&s->entries[i].pfn, s->keys, s->nr_keys,
                          sizeof(*s->keys), ms_cmp_u64);
        }
        s->key_of[i] = key ? (unsigned int)(key - s->keys) : UINT32_MAX;
    }
    return 0;
}

/* Draw the pages; DAMON watches them at these (physical) addresses. */
static int damon_draw(struct ms_sampler *s, char *err, size_t errlen)
{
    unsigned int i;
    int ret;

    ret = draw_and_locate(s, err, errlen);
    if (ret == 0 && s->backend != MS_DAMON_VADDR) {
        for (i = 0; i < s->nr_keys; i++) {
            s->keys[i] *= MS_PAGE_SIZE;
        }
    }
    return ret;
}

/* Draw the pages and point the kdamond at them. */
static int damon_arm(struct ms_sampler *s, char *err, size_t errlen)
{
    int ret;

    ret = damon_draw(s, err, errlen);
    if (ret == 0 && s->backend == MS_DAMON_PADDR) {
        s->draw_epoch = ms_damon_epoch();
        ms_damon_arm(&s->member, s->keys, s->nr_keys, s->hit, s->sample_us);
        return 0;
    }
    if (ret || !s->nr_keys) {
        return ret;
    }
    return ms_damon_start(s->damon_slot, "vaddr", s->pid, s->keys,
                          s->nr_keys, MS_PAGE_SIZE, s->sample_us, err,
                          errlen);
}

/* The host's kdamond refused the pages: draw them anew for it. */
static int damon_redraw(struct ms_damon_member *m, char *err, size_t errlen)
{
    struct ms_sampler *s = (struct ms_sampler *)(void *)
        ((char *)m - offsetof(struct ms_sampler, member));
    int ret;

    ret = damon_draw(s, err, errlen);
    if (ret == 0) {
        m->starts = s->keys;
        m->n = s->nr_keys;
        m->hit = s->hit;
        memset(s->hit, 0, s->nr_keys);
    }
    return ret;
}

/*
 * The last window ended with every sampled page as it began (the sample's
 * pagemap entries are still right) and the sample has not served its
 * windows yet: the next begin() watches the same pages again.
 */
static int sample_kept_next(const struct ms_sampler *s)
{
    if (!s->unchanged || !pfn_backend(s)) {
        return 0;
    }
    if (s->backend == MS_DAMON_PADDR) {
        return ms_damon_epoch() / s->keep_windows ==
               s->draw_epoch / s->keep_windows;
    }
    return (unsigned int)s->kept + 1 < s->keep_windows;
}

int ms_sampler_draws_next(const struct ms_sampler *s)
{
    return !sample_kept_next(s);
}

static int keep_sample(struct ms_sampler *s)
{
    if (!sample_kept_next(s)) {
        return 0;
    }
    s->kept++;
    return 1;
}

int ms_sampler_begin(struct ms_sampler *s, char *err, size_t errlen)
{
    char text[2] = "1";
    int fd, ret = 0, keep = keep_sample(s);

    s->begun = 0;
    s->unchanged = 0;
    s->nr_split = 0;
    s->split_s = 0;
    if (s->damon_slot >= 0) {
        ms_damon_stop(s->damon_slot);
    }
    if (s->joined) {
        ms_damon_disarm(&s->member);
    }
    switch (s->backend) {
    case MS_CLEAR_REFS:
        fd = open_proc(s->pid, "clear_refs", O_WRONLY, err, errlen);
        if (fd < 0) {
            return fd;
        }
        if (write(fd, text, 1) != 1) {
            ret = -errno;
            ms_err(err, errlen, "cannot clear referenced bits of %d: %s",
                   (int)s->pid, strerror(errno));
        }
        close(fd);
        break;
    case MS_PAGE_IDLE:
        ret = keep ? 0 : draw_and_locate(s, err, errlen);
        if (!ret && (ret = ms_idle_mark(s->idle_fd, s->keys, s->nr_keys))) {
            ms_err(err, errlen, "cannot mark pages idle: %s", strerror(-ret));
        }
        break;
    case MS_DAMON_PADDR:
        /*
         * The host's kdamond starts once every member has armed (or at
         * ms_damon_commit()); a refusal by DAMON is retried there, with
         * every member drawing anew, and a window it loses fails collect().
         */
        if (keep) {
            ms_damon_arm(&s->member, s->keys, s->nr_keys, s->hit,
                         s->sample_us);
        } else {
            ret = damon_arm(s, err, errlen);
        }
        break;
    case MS_DAMON_MEMCG:
        /*
         * The kept-running kdamond takes a new draw at the next commit
         * (a thread of damon_memcg.c writes it); a kept sample is counted on.
         */
        if (!keep) {
            keep_prev(s);
            ret = damon_draw(s, err, errlen);
            if (ret == 0) {
                ret = ms_memcg_stage(&s->mmember, s->keys, s->nr_keys, err,
                                     errlen);
            }
        }
        if (ret == 0) {
            ms_memcg_begun(&s->mmember);
        }
        break;
    case MS_DAMON_VADDR:
        ret = damon_arm(s, err, errlen);
        /*
         * DAMON refused the regions: their sysfs files went stale under us
         * (ENODEV, ENOENT: the directories were recreated) or the kernel
         * rejected the setup (EINVAL).  ms_damon_start() has forgotten the
         * slot's setup: draw again and rebuild it, once, rather than lose
         * the period.
         */
        if (ret == -ENODEV || ret == -ENOENT || ret == -EINVAL) {
            ret = damon_arm(s, err, errlen);
        }
        break;
    default:
        ret = -EINVAL;
    }
    if (ret == 0) {
        s->begun = 1;
        s->t_begin = ms_now();
    }
    return ret;
}

static int collect_clear_refs(struct ms_sampler *s, struct ms_result *r,
                              char *err, size_t errlen)
{
    char path[160], *buf;
    uint64_t ref_kb, rss_kb;
    size_t len;
    int ret;

    snprintf(path, sizeof(path), "%s/%d/smaps", ms_paths.proc, (int)s->pid);
    ret = ms_read_file(path, &buf, &len, err, errlen);
    if (ret) {
        if (ret == -ENOENT || ret == -ESRCH) {
            ms_err(err, errlen, "process %d does not exist", (int)s->pid);
            return -ESRCH;
        }
        return ret;
    }
    ms_smaps_scan(buf, len, s->start, s->start + s->nr_pages * MS_PAGE_SIZE,
                  &ref_kb, &rss_kb);
    free(buf);
    r->sampled = s->nr_pages > UINT32_MAX ? UINT32_MAX
                                          : (unsigned int)s->nr_pages;
    r->accessed = (unsigned int)(ref_kb / 4);
    r->present = (unsigned int)(rss_kb / 4);
    if (r->accessed > r->sampled) {
        r->accessed = r->sampled;
    }
    return 0;
}

static int collect_page_idle(struct ms_sampler *s, unsigned int *accessed,
                             char *err, size_t errlen)
{
    int ret;

    ret = ms_idle_read_accessed(s->idle_fd, s->keys, s->nr_keys, s->hit);
    if (ret) {
        ms_err(err, errlen, "cannot read idle bitmap: %s", strerror(-ret));
        return ret;
    }
    /* After the bitmap: a page moved while it was read is caught too. */
    ret = ms_recheck_quick(s, err, errlen);
    if (ret == 0) {
        *accessed = ms_count_stable(s);
    }
    return ret;
}

/*
 * damon_vaddr: the bytes its kdamond's scheme matched, spread over the
 * samples.  damon_paddr: the accessed regions the host's kdamond marked;
 * while every sampled page stays where it was, the accessed pages spread
 * over the samples, otherwise counted for the stable samples alone.  The
 * pagemap read comes after the kdamond's answer, so that a page moved
 * while it was awaited is caught.
 */
static int collect_damon(struct ms_sampler *s, struct ms_damon_result *dr,
                         unsigned int *accessed, char *err, size_t errlen)
{
    unsigned int i, hits = 0;
    int ret;

    if (s->backend == MS_DAMON_VADDR) {
        ret = ms_damon_collect(s->damon_slot, NULL, 0, NULL, dr, err,
                               errlen);
        if (ret == 0) {
            *accessed = ms_scale_to_samples(
                s, (unsigned int)(dr->accessed_bytes / MS_PAGE_SIZE));
        }
        ms_damon_stop(s->damon_slot);
        return ret;
    }
    /*
     * A window that keeps each sample's result takes the marks as the
     * kdamond's one answer, its count included: a count first and the
     * marks from a later answer could tell different pages.
     */
    ret = ms_damon_member_collect(&s->member, s->per_page, dr, err, errlen);
    if (ret == 0) {
        ret = ms_recheck_quick(s, err, errlen);
    }
    /* A count cannot leave the moved pages out: their marks can. */
    if (ret == 0 && (s->nr_moved || s->nr_vanished) && !dr->marked) {
        ret = ms_damon_member_mark(&s->member, err, errlen);
        dr->answer = s->member.answer;
    }
    if (ret == 0 && !s->nr_moved && !s->nr_vanished) {
        if (dr->marked) {
            for (i = 0; i < s->nr_keys; i++) {
                hits += s->hit[i];
            }
        } else {
            hits = (unsigned int)(dr->accessed_bytes / MS_PAGE_SIZE);
        }
        *accessed = ms_scale_to_samples(s, hits);
    } else if (ret == 0) {
        /* ms_recheck_quick() read every sample once one had changed. */
        *accessed = ms_count_stable(s);
    }
    return ret;
}

/*
 * damon_memcg: the member's count of the newest windows the kdamond's
 * statistics hold, spread over the samples.  The moved pages cannot be
 * left out of a count, but a moved page's old PFN is not charged to the
 * VM's cgroup any more, or not accessed: it counts as idle, and the moved
 * ones are left out of sampled (ms_samples_left()).  A window lost to a
 * commit (the sample drawn anew) keeps the sample for the next one;
 * pages DAMON refused are drawn anew at the next begin().
 */
static int collect_memcg(struct ms_sampler *s, struct ms_damon_result *dr,
                         unsigned int *accessed, char *err, size_t errlen)
{
    struct ms_memcg_result mr;
    char why[MS_ERRLEN];
    int ret, r;

    ret = ms_memcg_collect(&s->mmember, &mr, err, errlen);
    if (s->mmember.refused) {
        s->mmember.refused = 0;
        return ret ? ret : -EAGAIN;
    }
    s->prev_counted = ret == 0 && mr.old_pages && s->prev_keys;
    if (s->prev_counted) {
        /*
         * Windows of the sample before the draw: scaled as it was.  The
         * new one is checked all the same, so that it is kept.
         */
        ms_recheck_quick(s, why, sizeof(why));
        dr->kdamond_cpu_s = mr.kdamond_cpu_s;
        dr->kdamond_pid = mr.kdamond_pid;
        *accessed = (unsigned int)((mr.accessed * s->prev_present +
                                    s->prev_keys / 2) / s->prev_keys);
        return 0;
    }
    if (ret == 0 && mr.old_pages) {
        ret = -EAGAIN;
        ms_err(err, errlen, "the window counted pages of an earlier draw");
    }
    if (ret && ret != -EAGAIN && ret != -ETIMEDOUT) {
        return ret;
    }
    r = ms_recheck_quick(s, ret ? why : err, ret ? sizeof(why) : errlen);
    if (ret) {
        return ret;
    }
    if (r) {
        return r;
    }
    dr->kdamond_cpu_s = mr.kdamond_cpu_s;
    dr->kdamond_pid = mr.kdamond_pid;
    *accessed = ms_scale_to_samples(
        s, mr.accessed > UINT32_MAX ? UINT32_MAX : (unsigned int)mr.accessed);
    return 0;
}

static void next_interval(struct ms_sampler *s, double period)
{
    uint64_t m = (uint64_t)(period / AUTO_MAX_CHECK_S) + 1;
    double us;

    us = period * AUTO_SLACK / (double)(m < 2 ? 2 : m) * 1e6;
    s->sample_us = us < AUTO_MIN_US ? AUTO_MIN_US : (uint64_t)us;
}

int ms_sampler_collect(struct ms_sampler *s, struct ms_result *r,
                       char *err, size_t errlen)
{
    struct ms_damon_result dr = { 0 };
    unsigned int accessed = 0;
    double t_asked = ms_now();
    int ret = 0;

    memset(r, 0, sizeof(*r));
    r->kdamond_cpu_s = -1;
    s->idle_ok = 0;
    if (!s->begun) {
        ms_err(err, errlen, "collect() called without begin()");
        return -EINVAL;
    }
    if (kill(s->pid, 0) != 0 && errno == ESRCH) {
        if (s->damon_slot >= 0) {
            ms_damon_stop(s->damon_slot);
        }
        if (s->joined) {
            ms_damon_disarm(&s->member);
        }
        s->begun = 0;
        ms_err(err, errlen, "process %d does not exist", (int)s->pid);
        return -ESRCH;
    }
    switch (s->backend) {
    case MS_CLEAR_REFS:
        ret = collect_clear_refs(s, r, err, errlen);
        break;
    case MS_PAGE_IDLE:
        ret = collect_page_idle(s, &accessed, err, errlen);
        break;
    case MS_DAMON_MEMCG:
        r->kdamond_cpu_s = 0;
        if (s->nr_keys) {
            ret = collect_memcg(s, &dr, &accessed, err, errlen);
            r->kdamond_cpu_s = dr.kdamond_cpu_s;
            r->kdamond_pid = dr.kdamond_pid;
        }
        /* One window per period: the period between two collect()s. */
        if (s->auto_interval && s->t_collected > 0) {
            double w = (t_asked - s->t_collected) * MEMCG_WINDOW_SHARE;

            s->mmember.window_us = w < AUTO_MIN_US / 1e6 ? AUTO_MIN_US
                                   : (uint64_t)(w * 1e6);
        }
        s->t_collected = t_asked;
        break;
    case MS_DAMON_PADDR:
    case MS_DAMON_VADDR:
        r->kdamond_cpu_s = 0;
        if (s->nr_keys) {
            ret = collect_damon(s, &dr, &accessed, err, errlen);
            r->kdamond_cpu_s = dr.kdamond_cpu_s;
            r->kdamond_pid = dr.kdamond_pid;
            r->answer = dr.answer;
        } else if (s->joined) {
            ms_damon_disarm(&s->member);
        }
        break;
    default:
        ret = -EINVAL;
    }
    r->window_s = ms_now() - s->t_begin;
    s->windows++;
    if (s->auto_interval && s->backend != MS_DAMON_MEMCG) {
        next_interval(s, t_asked - s->t_begin);
    }
    s->begun = 0;
    if (ret || s->backend == MS_CLEAR_REFS) {
        return ret;
    }
    /* Marked above for damon_paddr with per_page; page_idle always is. */
    s->idle_ok = s->per_page && (s->backend == MS_PAGE_IDLE ||
                                 (s->backend == MS_DAMON_PADDR &&
                                  s->nr_keys));
    r->sampled = ms_samples_left(s);
    r->present = s->nr_present - s->nr_moved;
    r->moved = s->nr_moved;
    if (s->backend == MS_DAMON_MEMCG && s->prev_counted) {
        r->sampled = s->prev_sampled;
        r->present = s->prev_present;
        r->moved = 0;
    }
    r->accessed = accessed;
    r->split = s->nr_split;
    r->huge = s->nr_huge;
    r->zero = s->nr_zero;
    r->split_s = s->split_s;
    return 0;
}
