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
 * DAMON through its sysfs interface, shared by every sampler of the process.
 *
 * The sysfs tree is global to the machine, so this file owns it while any
 * sampler is open: a pool of MS_DAMON_SLOTS kdamonds, each with one context,
 * one target and one "stat" scheme.  The pool is created on first use and
 * torn down (every kdamond off, nr_kdamonds 0) when the last sampler closes
 * and at process exit.  A lock keeps two processes from fighting over the
 * tree; whoever takes it turns off any kdamond a crashed run left on.  The
 * lock is the tree's own directory (flock), not a file under /run: /run
 * may be private to a mount namespace (a container, each simulated host of
 * the test rig) while the tree is not, and two memagg-compute processes
 * with their own /run each drove kdamond 0, rewriting each other's region
 * files (windows that read every sampled page accessed, or none).
 *
 * damon_paddr samplers share ONE kdamond, the host's: its single target's
 * regions are the pages every sampler watches, merged (the kernel refuses
 * more than one paddr target, and a kdamond has one context), so many VMs
 * cost one kernel thread.  Each sampler is a member (ms_damon_join()); its
 * begin() arms it with its pages and the kdamond restarts once every member
 * has armed, or at ms_damon_commit(), so the members' windows are aligned.
 * The first collect() of a window asks the kdamond for the regions its
 * scheme matched (through its trace event, damon_trace.c, or else
 * update_schemes_tried_regions' directories: host_regions()) and marks
 * them for every member at once; the others' collect() only read their
 * marks.  A kdamond watching one member only answers with the count of its
 * accessed pages (update_schemes_tried_bytes), and the regions are asked
 * for only if some of that member's pages moved or it keeps each sample's
 * result.  A member armed but not collected when the kdamond restarts (a
 * VM skipped for a period) has the answer so far kept, and its window goes
 * on: none is lost.
 * damon_vaddr samplers each have a kdamond of their own (a slot).
 *
 * Measuring a window: the kdamond's sampling interval is the (smallest)
 * sample_interval and its aggregation interval is an hour, so a region's
 * access count keeps growing for the whole window instead of being reset
 * every aggregation.  Turning the kdamond on clears the accessed bits at
 * once.  The scheme is applied every sampling interval and matches regions
 * with at least one access; the kdamond answers at its next sampling
 * interval, so a collect() blocks for at most one.  That is "accessed at
 * least once between begin() and collect()", with one accessed-bit check
 * per page per sampling interval: the kdamond's cost is 2 n pages x period
 * / sample_interval rmap walks, n summed over the members.
 * Turning a kdamond on and off costs about 0.2 ms; writing the regions'
 * start and end files costs more (about 1.3 us each), so nothing that did
 * not change is written again: when every member kept its sample, the
 * restart writes no region at all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ms.h"

#define MS_DAMON_SLOTS 64
/*
 * The second scheme of every context matches the regions of more than one
 * page, whatever their accesses.  memagg sets one-page regions only, and
 * DAMON neither merges nor grows them within the hour-long aggregation
 * interval: any byte that scheme tried is a region memagg did not set.
 * Another writer of the tree (a second memagg-compute when the lock was a
 * file under /run, or any DAMON tool) rewrote the context's region files
 * while the kdamond ran, a kept sample does not write them again, and the
 * next restart watched one region over the biggest System RAM range:
 * every sampled page read accessed.  The answer of such a kdamond is
 * rejected.
 */
#define FOREIGN_SCHEME 1
#define AGGR_US 3600000000ULL
/* DAMON's sysfs refuses writes (EBUSY) while another command runs. */
#define BUSY_RETRY_S 30.0
#define BUSY_PAUSE_MAX_NS 64000000L

struct slot {
    int used;
    int has_ctx;
    int configured;
    int running;
    unsigned int nr_regions;
    unsigned int nr_regions_minmax;
    char ops[8];
    uint64_t sample_us;
    pid_t target;
    int *fds;                   /* open start/end files of the regions */
    unsigned int nr_fds;
    uint64_t *vals;             /* what each of those files holds */
    int kdamond_pid;
};

static struct {
    pthread_mutex_t lock;
    int users;
    int lockfd;
    pid_t owner;
    int exit_hook;
    char avail_ops[128];
    struct slot slot[MS_DAMON_SLOTS];
    /* The host kdamond's answers through its trace event, when tracefs
     * offers it (tried once per pool; open while trace.dir is set). */
    struct ms_damon_trace trace;
    int trace_tried;
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .lockfd = -1 };

static int kwrite(const char *path, const char *text, char *err,
                  size_t errlen)
{
    double deadline = ms_now() + BUSY_RETRY_S;
    struct timespec pause = { 0, 1000000 };
    int ret;

    /*
     * The other command may wait a whole sampling interval for its kdamond:
     * back off (1 ms doubling to 64 ms) rather than retry at a fixed pace.
     */
    while ((ret = ms_write_file(path, text, err, errlen)) == -EBUSY &&
           ms_now() < deadline) {
        nanosleep(&pause, NULL);
        if (pause.tv_nsec < BUSY_PAUSE_MAX_NS) {
            pause.tv_nsec *= 2;
        }
    }
    return ret;
}

static int kwritef(char *err, size_t errlen, const char *text,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int kwritef(char *err, size_t errlen, const char *text,
                   const char *fmt, ...)
{
    char path[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    return kwrite(path, text, err, errlen);
}

static int kwrite_u64(char *err, size_t errlen, uint64_t v, const char *path)
{
    char text[32];

    snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
    return kwrite(path, text, err, errlen);
}

static void slot_path(char *buf, size_t len, int slot, const char *rel)
{
    snprintf(buf, len, "%s/kdamonds/%d/%s", ms_paths.damon, slot, rel);
}

/* Write number v to contexts/0/<rel> of kdamond slot i. */
static int ctx_write_u64(int i, const char *rel, uint64_t v, char *err,
                         size_t errlen)
{
    char p[512], full[256];

    snprintf(full, sizeof(full), "contexts/0/%s", rel);
    slot_path(p, sizeof(p), i, full);
    return kwrite_u64(err, errlen, v, p);
}

/* In a function with slot i, int ret, err and errlen: write or return. */
#define CTX_SET(rel, val) do { \
        ret = ctx_write_u64(i, (rel), (val), err, errlen); \
        if (ret) { \
            return ret; \
        } \
    } while (0)

static int slot_is_on(int i)
{
    char path[512], *buf;
    size_t len;
    int on = 0;

    snprintf(path, sizeof(path), "%s/kdamonds/%d/state", ms_paths.damon, i);
    if (ms_read_file(path, &buf, &len, NULL, 0) == 0) {
        on = len >= 2 && memcmp(buf, "on", 2) == 0;
        free(buf);
    }
    return on;
}

static void all_off(int nr)
{
    char path[512];
    int i;

    for (i = 0; i < nr; i++) {
        if (slot_is_on(i)) {
            snprintf(path, sizeof(path), "%s/kdamonds/%d/state",
                     ms_paths.damon, i);
            kwrite(path, "off", NULL, 0);
        }
    }
}

/* Opening a sysfs file costs ten times the write: keep them open. */
static void drop_fds(struct slot *s)
{
    unsigned int k;

    for (k = 0; k < s->nr_fds; k++) {
        if (s->fds[k] >= 0) {
            close(s->fds[k]);
        }
    }
    free(s->fds);
    free(s->vals);
    s->fds = NULL;
    s->vals = NULL;
    s->nr_fds = 0;
}

/*
 * Let the cached region files use up to 2^20 descriptors: two per sampled
 * page on a host sampling many VMs (86,000 for six VMs at about 7,000
 * pages each).  A region file that is not kept open costs an open and a
 * close at each change (about 7 us against 1.3 us).  Raising the hard
 * limit needs CAP_SYS_RESOURCE (root has it); without it, up to the hard
 * limit.
 */
static void raise_nofile(void)
{
    struct rlimit rl;
    rlim_t want = 1 << 20;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want) {
        return;
    }
    if (rl.rlim_max < want) {
        struct rlimit up = { want, want };

        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            return;
        }
    }
    rl.rlim_cur = rl.rlim_max > want ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

/* Half the descriptors the process may have, at most, hold region files. */
static int fd_budget_left(unsigned int want)
{
    struct rlimit rl;
    uint64_t cached = 0;
    int i;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return 0;
    }
    for (i = 0; i < MS_DAMON_SLOTS; i++) {
        cached += pool.slot[i].nr_fds;
    }
    return cached + want <= (uint64_t)rl.rlim_cur / 2;
}

static void host_reset(void);
static void memcg_reset(void);

static void pool_teardown(void)
{
    int i;

    char path[512];

    all_off(MS_DAMON_SLOTS);
    snprintf(path, sizeof(path), "%s/kdamonds/nr_kdamonds", ms_paths.damon);
    kwrite(path, "0", NULL, 0);
    for (i = 0; i < MS_DAMON_SLOTS; i++) {
        drop_fds(&pool.slot[i]);
    }
    memset(pool.slot, 0, sizeof(pool.slot));
    host_reset();
    memcg_reset();
    if (pool.trace_tried) {
        ms_damon_trace_close(&pool.trace);
    }
    pool.trace_tried = 0;
    if (pool.lockfd >= 0) {
        close(pool.lockfd);
        pool.lockfd = -1;
    }
}

static void pool_atexit(void)
{
    /* A forked child inherits the pool but must not tear down the parent's. */
    if (pool.users > 0 && pool.owner == getpid()) {
        pool_teardown();
        pool.users = 0;
    }
}

/* Called with pool.lock held. */
static int pool_get(char *err, size_t errlen)
{
    char path[512];
    uint64_t nr = 0;
    int ret;

    if (pool.users++ > 0) {
        return 0;
    }
    snprintf(path, sizeof(path), "%s/kdamonds/nr_kdamonds", ms_paths.damon);
    if (access(path, W_OK) != 0) {
        ret = -errno;
        ms_err(err, errlen, "DAMON sysfs interface unusable (%s: %s)", path,
               strerror(errno));
        goto fail;
    }
    pool.lockfd = open(ms_paths.damon, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pool.lockfd < 0) {
        ret = -errno;
        ms_err(err, errlen, "cannot open %s to lock it: %s", ms_paths.damon,
               strerror(errno));
        goto fail;
    }
    if (flock(pool.lockfd, LOCK_EX | LOCK_NB) != 0) {
        ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
        ms_err(err, errlen, "DAMON is in use by another memagg process "
               "(lock on %s held)", ms_paths.damon);
        goto fail;
    }
    /* Whatever a previous run left behind goes: it cannot be ours to keep. */
    if (ms_read_u64_file(path, &nr, NULL, 0) == 0 && nr > 0) {
        all_off(nr > MS_DAMON_SLOTS ? (int)nr : MS_DAMON_SLOTS);
    }
    ret = kwrite_u64(err, errlen, MS_DAMON_SLOTS, path);
    if (ret) {
        goto fail;
    }
    memset(pool.slot, 0, sizeof(pool.slot));
    ret = kwritef(err, errlen, "1", "%s/kdamonds/0/contexts/nr_contexts",
                  ms_paths.damon);
    if (ret) {
        goto fail;
    }
    pool.slot[0].has_ctx = 1;
    pool.owner = getpid();
    raise_nofile();
    if (!pool.exit_hook) {
        atexit(pool_atexit);
        pool.exit_hook = 1;
    }
    return 0;
fail:
    pool.users--;
    if (pool.lockfd >= 0) {
        close(pool.lockfd);
        pool.lockfd = -1;
    }
    return ret;
}

/* Called with pool.lock held. */
static void pool_put(void)
{
    if (--pool.users == 0) {
        pool_teardown();
    }
}

int ms_damon_supported(const char *ops, char *reason, size_t len)
{
    char path[512], *buf;
    size_t blen;
    int ret = 0;

    pthread_mutex_lock(&pool.lock);
    if (!pool.avail_ops[0]) {
        ret = pool_get(reason, len);
        if (ret == 0) {
            slot_path(path, sizeof(path), 0, "contexts/0/avail_operations");
            ret = ms_read_file(path, &buf, &blen, reason, len);
            if (ret == 0) {
                snprintf(pool.avail_ops, sizeof(pool.avail_ops), "%.*s",
                         (int)(blen < 127 ? blen : 127), buf);
                free(buf);
            }
            pool_put();
        }
    }
    pthread_mutex_unlock(&pool.lock);
    if (ret) {
        return 0;
    }
    if (!ms_word_list_has(pool.avail_ops, strlen(pool.avail_ops), ops)) {
        ms_err(reason, len, "kernel DAMON lacks '%s' operations (has: %.*s)",
               ops, (int)strcspn(pool.avail_ops, "\n"), pool.avail_ops);
        return 0;
    }
    ms_err(reason, len, "DAMON sysfs with '%s' operations", ops);
    return 1;
}

/*
 * Mark a free slot used and return its index, or -EBUSY (the caller holds
 * pool.lock and a reference of the pool, which this drops on failure).
 */
static int take_slot(char *err, size_t errlen)
{
    int i;

    for (i = 0; i < MS_DAMON_SLOTS && pool.slot[i].used; i++) {
    }
    if (i == MS_DAMON_SLOTS) {
        pool_put();
        ms_err(err, errlen, "all %d DAMON slots are in use", MS_DAMON_SLOTS);
        return -EBUSY;
    }
    pool.slot[i].used = 1;
    return i;
}

int ms_damon_acquire(int *slot, char *err, size_t errlen)
{
    int ret;

    pthread_mutex_lock(&pool.lock);
    ret = pool_get(err, errlen);
    if (ret == 0) {
        ret = take_slot(err, errlen);
        if (ret >= 0) {
            *slot = ret;
            ret = 0;
        }
    }
    pthread_mutex_unlock(&pool.lock);
    return ret;
}

/* Stop slot i's kdamond and give the slot back; pool.lock held. */
static void free_slot(int i)
{
    ms_damon_stop(i);
    drop_fds(&pool.slot[i]);
    pool.slot[i].used = 0;
    pool.slot[i].configured = 0;
}

void ms_damon_release(int slot)
{
    pthread_mutex_lock(&pool.lock);
    free_slot(slot);
    pool_put();
    pthread_mutex_unlock(&pool.lock);
}

/* The sampling interval, and the scheme's, which must follow it. */
static int set_intervals(int i, uint64_t sample_us, char *err, size_t errlen)
{
    int ret = 0;

    CTX_SET("monitoring_attrs/intervals/sample_us", sample_us);
    CTX_SET("monitoring_attrs/intervals/aggr_us",
        sample_us > AGGR_US ? sample_us : AGGR_US);
    /* vaddr would otherwise replace our regions with its own every update. */
    CTX_SET("monitoring_attrs/intervals/update_us",
        sample_us > AGGR_US ? sample_us : AGGR_US);
    if (pool.slot[i].configured) {
        CTX_SET("schemes/0/apply_interval_us", sample_us);
        CTX_SET("schemes/1/apply_interval_us", sample_us);
    }
    pool.slot[i].sample_us = sample_us;
    return 0;
}

/*
 * A "stat" scheme k of slot i over the regions of at least min_accesses
 * accesses and min_sz bytes.  tried_bytes is answered once every scheme
 * was applied: apply them often.
 */
static int set_scheme(int i, int k, uint64_t min_accesses, uint64_t min_sz,
                      uint64_t sample_us, char *err, size_t errlen)
{
    char p[512], rel[128];
    int ret = 0;

#define SCHEME_SET(file, val) do { \
        snprintf(rel, sizeof(rel), "schemes/%d/%s", k, (file)); \
        CTX_SET(rel, (val)); \
    } while (0)

    snprintf(rel, sizeof(rel), "contexts/0/schemes/%d/action", k);
    slot_path(p, sizeof(p), i, rel);
    ret = kwrite(p, "stat", err, errlen);
    if (ret) {
        return ret;
    }
    SCHEME_SET("apply_interval_us", sample_us);
    SCHEME_SET("access_pattern/nr_accesses/min", min_accesses);
    SCHEME_SET("access_pattern/nr_accesses/max", UINT32_MAX);
    SCHEME_SET("access_pattern/sz/min", min_sz);
    SCHEME_SET("access_pattern/sz/max", UINT64_MAX);
    SCHEME_SET("access_pattern/age/min", 0);
    SCHEME_SET("access_pattern/age/max", UINT32_MAX);
#undef SCHEME_SET
    return 0;
}

static int configure(int i, const char *ops, pid_t pid, uint64_t sample_us,
                     char *err, size_t errlen)
{
    struct slot *s = &pool.slot[i];
    char p[512];
    int ret = 0;

    if (!s->has_ctx) {
        slot_path(p, sizeof(p), i, "contexts/nr_contexts");
        ret = kwrite(p, "1", err, errlen);
        if (ret) {
            return ret;
        }
        s->has_ctx = 1;
        s->nr_regions = 0;
        s->nr_regions_minmax = 0;
        drop_fds(s);
    }
    slot_path(p, sizeof(p), i, "contexts/0/operations");
    ret = kwrite(p, ops, err, errlen);
    if (ret) {
        return ret;
    }
    ret = set_intervals(i, sample_us, err, errlen);
    if (ret) {
        return ret;
    }
    /* This recreates the target's directory: cached region files go. */
    CTX_SET("targets/nr_targets", 1);
    s->nr_regions = 0;
    s->nr_regions_minmax = 0;
    drop_fds(s);
    if (strcmp(ops, "vaddr") == 0) {
        CTX_SET("targets/0/pid_target", (uint64_t)pid);
    }
    CTX_SET("schemes/nr_schemes", 2);
    /* Scheme 0 answers: the regions accessed at least once. */
    ret = set_scheme(i, 0, 1, 0, sample_us, err, errlen);
    if (ret == 0) {
        ret = set_scheme(i, FOREIGN_SCHEME, 0, 2 * MS_PAGE_SIZE, sample_us,
                         err, errlen);
    }
    if (ret) {
        return ret;
    }
    snprintf(s->ops, sizeof(s->ops), "%s", ops);
    s->sample_us = sample_us;
    s->target = pid;
    s->configured = 1;
    return 0;
}

/* Region k is [starts[k], starts[k] + size), region 0 head_size long. */
static int write_regions(int i, const uint64_t *starts, unsigned int n,
                         uint64_t size, uint64_t head_size, char *err,
                         size_t errlen)
{
    struct slot *s = &pool.slot[i];
    char p[512], rel[64], text[32];
    uint64_t have = 0;
    unsigned int k;
    int dirfd, ret = 0;

    slot_path(p, sizeof(p), i, "contexts/0/targets/0/regions/nr_regions");
    /*
     * Another DAMON user may have rewritten the regions since (see
     * FOREIGN_SCHEME): then no file holds what is remembered of it.
     */
    if (s->nr_regions == n &&
        (ms_read_u64_file(p, &have, NULL, 0) != 0 || have != n)) {
        s->nr_regions = 0;
    }
    if (s->nr_regions != n) {
        /* The kernel recreates the region directories: old files are stale. */
        drop_fds(s);
        ret = kwrite_u64(err, errlen, n, p);
        if (ret) {
            return ret;
        }
        s->nr_regions = n;
    }
    /*
     * What the files hold is known even beyond the descriptors the process
     * may keep open (tens of thousands of regions on a host sampling many
     * VMs): a file that holds its value already is not opened at all.
     */
    if (!s->vals) {
        s->vals = malloc(sizeof(*s->vals) * n * 2);
        for (k = 0; s->vals && k < n * 2; k++) {
            s->vals[k] = UINT64_MAX;
        }
    }
    if (s->vals && !s->fds && fd_budget_left(n * 2)) {
        s->fds = malloc(sizeof(*s->fds) * n * 2);
        for (k = 0; s->fds && k < n * 2; k++) {
            s->fds[k] = -1;
        }
        s->nr_fds = s->fds ? n * 2 : 0;
    }
    slot_path(p, sizeof(p), i, "contexts/0/targets/0/regions");
    dirfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        ret = -errno;
        ms_err(err, errlen, "cannot open %s: %s", p, strerror(errno));
        return ret;
    }
    for (k = 0; k < n * 2 && !ret; k++) {
        uint64_t v = starts[k / 2] +
                     (k % 2 ? (k == 1 && head_size ? head_size : size) : 0);
        int fd = s->fds ? s->fds[k] : -1;
        int len;

        /* A kept sample: the file already holds it. */
        if (s->vals && s->vals[k] == v) {
            continue;
        }
        len = snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
        if (fd < 0) {
            snprintf(rel, sizeof(rel), "%u/%s", k / 2,
                     k % 2 ? "end" : "start");
            fd = openat(dirfd, rel, O_WRONLY | O_CLOEXEC);
        }
        if (fd < 0 || pwrite(fd, text, (size_t)len, 0) != len) {
            ret = errno ? -errno : -EIO;
            ms_err(err, errlen, "cannot set DAMON region %u of %s: %s",
                   k / 2, p, strerror(errno));
        }
        if (s->vals) {
            s->vals[k] = ret ? UINT64_MAX : v;
        }
        if (s->fds && fd >= 0) {
            s->fds[k] = fd;
        } else if (fd >= 0) {
            close(fd);
        }
    }
    close(dirfd);
    if (ret) {
        return ret;
    }
    /* DAMON wants at least 3; it cannot split one-page regions anyway. */
    if (s->nr_regions_minmax == (n < 3 ? 3 : n)) {
        return 0;
    }
    slot_path(p, sizeof(p), i, "contexts/0/monitoring_attrs/nr_regions/min");
    ret = kwrite_u64(err, errlen, n < 3 ? 3 : n, p);
    if (ret) {
        return ret;
    }
    slot_path(p, sizeof(p), i, "contexts/0/monitoring_attrs/nr_regions/max");
    ret = kwrite_u64(err, errlen, n < 3 ? 3 : n, p);
    s->nr_regions_minmax = ret ? 0 : (n < 3 ? 3 : n);
    return ret;
}

/* Nanoseconds the thread has spent on a CPU, from /proc/PID/schedstat. */
static uint64_t thread_cpu_ns(int pid)
{
    char path[160], *buf;
    size_t len, i;
    uint64_t ns = 0;

    snprintf(path, sizeof(path), "%s/%d/schedstat", ms_paths.proc, pid);
    if (ms_read_file(path, &buf, &len, NULL, 0) != 0) {
        return 0;
    }
    for (i = 0; i < len && buf[i] != ' '; i++) {
    }
    if (ms_parse_u64(buf, i, &ns) != 0) {
        ns = 0;
    }
    free(buf);
    return ns;
}

/*
 * What the slot remembers of its sysfs tree may be wrong after a failure:
 * region files whose directories were recreated (ENODEV on every write),
 * a half-written setup.  Forget it all, so the next start rebuilds the
 * context, its target and its regions from scratch.
 */
static void slot_forget(struct slot *s)
{
    drop_fds(s);
    s->has_ctx = 0;
    s->configured = 0;
    s->nr_regions = 0;
    s->nr_regions_minmax = 0;
}

static int start_slot(int i, const char *ops, pid_t pid,
                      const uint64_t *starts, unsigned int n, uint64_t size,
                      uint64_t sample_us, char *err, size_t errlen)
{
    struct slot *s = &pool.slot[i];
    char p[512];
    int ret;

    if (!s->configured || strcmp(s->ops, ops) != 0 || s->target != pid) {
        ret = configure(i, ops, pid, sample_us, err, errlen);
        if (ret) {
            return ret;
        }
    } else if (s->sample_us != sample_us) {
        ret = set_intervals(i, sample_us, err, errlen);
        if (ret) {
            return ret;
        }
    }
    ret = write_regions(i, starts, n, size, 0, err, errlen);
    if (ret) {
        return ret;
    }
    slot_path(p, sizeof(p), i, "state");
    return kwrite(p, "on", err, errlen);
}

int ms_damon_start(int i, const char *ops, pid_t pid,
                   const uint64_t *starts, unsigned int n, uint64_t size,
                   uint64_t sample_us, char *err, size_t errlen)
{
    struct slot *s = &pool.slot[i];
    char p[512];
    uint64_t kpid = 0;
    int ret;

    ms_damon_stop(i);
    ret = start_slot(i, ops, pid, starts, n, size, sample_us, err, errlen);
    if (ret) {
        slot_forget(s);
        return ret;
    }
    s->running = 1;
    slot_path(p, sizeof(p), i, "pid");
    if (ms_read_u64_file(p, &kpid, NULL, 0) == 0) {
        /* A new thread every "on": all its CPU time is this period's. */
        s->kdamond_pid = (int)kpid;
    }
    return 0;
}

/* A number from the file rel under directory dirfd. */
static int read_u64_at(int dirfd, const char *rel, uint64_t *out)
{
    char buf[32];
    ssize_t got;
    int fd, ret;

    fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    got = read(fd, buf, sizeof(buf));
    if (got < 0) {
        ret = -errno;
    } else if ((size_t)got == sizeof(buf)) {
        ret = -EINVAL;          /* longer than any number */
    } else {
        ret = ms_parse_u64(buf, (size_t)got, out);
    }
    close(fd);
    return ret;
}

/* A tried region's directory: its number, in decimal. */
static int is_region_dir(const char *name)
{
    size_t len = strspn(name, "0123456789");

    return len > 0 && len < 16 && name[len] == '\0';
}

/*
 * Call fn(start, end, arg) for each region the scheme of slot i tried,
 * which its access pattern limits to regions with at least one access.
 * Their directories are numbered with gaps: list them.  Each sysfs file
 * read costs about 7 us here: when total_bytes says that every region is
 * one page (DAMON's smallest), only their starts are read.
 */
static int for_each_tried(int i, void (*fn)(uint64_t, uint64_t, void *),
                          void *arg, char *err, size_t errlen)
{
    char p[512], rel[32];
    uint64_t start, end, total = 0, nr = 0;
    struct dirent *de;
    DIR *dir;
    int ret = 0, one_page;

    slot_path(p, sizeof(p), i, "contexts/0/schemes/0/tried_regions");
    dir = opendir(p);
    if (!dir) {
        ret = -errno;
        ms_err(err, errlen, "cannot open %s: %s", p, strerror(errno));
        return ret;
    }
    while ((de = readdir(dir))) {
        nr += is_region_dir(de->d_name);
    }
    rewinddir(dir);
    one_page = read_u64_at(dirfd(dir), "total_bytes", &total) == 0 &&
               total == nr * MS_PAGE_SIZE;
    while (!ret && (de = readdir(dir))) {
        if (!is_region_dir(de->d_name)) {
            continue;
        }
        snprintf(rel, sizeof(rel), "%.15s/start", de->d_name);
        ret = read_u64_at(dirfd(dir), rel, &start);
        end = start + MS_PAGE_SIZE;
        if (ret == 0 && !one_page) {
            snprintf(rel, sizeof(rel), "%.15s/end", de->d_name);
            ret = read_u64_at(dirfd(dir), rel, &end);
        }
        if (ret) {
            ms_err(err, errlen, "cannot read DAMON tried region %s of %s: %s",
                   de->d_name, p, strerror(-ret));
        } else {
            fn(start, end, arg);
        }
    }
    closedir(dir);
    return ret;
}

/*
 * After an update_schemes_tried_* command on slot i: reject the answer of
 * a kdamond that watched regions memagg did not set (FOREIGN_SCHEME), and
 * forget the slot's setup, so that its next start writes every file again.
 */
static int check_own_regions(int i, char *err, size_t errlen)
{
    char p[512];
    uint64_t bytes = 0;
    int ret;

    slot_path(p, sizeof(p), i,
              "contexts/0/schemes/1/tried_regions/total_bytes");
    ret = ms_read_u64_file(p, &bytes, err, errlen);
    if (ret == 0 && bytes) {
        slot_forget(&pool.slot[i]);
        ms_err(err, errlen, "window rejected: the kdamond watched %llu bytes "
               "in regions memagg did not set (their sysfs files were "
               "rewritten by another DAMON user)", (unsigned long long)bytes);
        ret = -EAGAIN;
    }
    return ret;
}

/*
 * After an update_schemes_tried_* command on slot i: *bytes, the bytes of
 * the regions its scheme 0 matched, unless the answer is rejected
 * (check_own_regions()).
 */
static int own_tried_bytes(int i, uint64_t *bytes, char *err, size_t errlen)
{
    char p[512];
    int ret = check_own_regions(i, err, errlen);

    if (ret == 0) {
        slot_path(p, sizeof(p), i,
                  "contexts/0/schemes/0/tried_regions/total_bytes");
        ret = ms_read_u64_file(p, bytes, err, errlen);
    }
    return ret;
}

struct marks {
    const uint64_t *starts;
    unsigned int n;
    unsigned char *accessed;
};

static void mark_slot_region(uint64_t start, uint64_t end, void *arg)
{
    struct marks *mk = arg;

    ms_mark_range(mk->starts, mk->n, start, end, mk->accessed);
}

/* Mark which of the n regions (sorted starts) were accessed. */
static int read_tried_regions(int i, const uint64_t *starts, unsigned int n,
                              unsigned char *accessed, char *err,
                              size_t errlen)
{
    struct marks mk = { starts, n, accessed };

    memset(accessed, 0, n);
    return for_each_tried(i, mark_slot_region, &mk, err, errlen);
}

int ms_damon_collect(int i, const uint64_t *starts, unsigned int n,
                     unsigned char *accessed, struct ms_damon_result *res,
                     char *err, size_t errlen)
{
    struct slot *s = &pool.slot[i];
    char p[512];
    uint64_t cpu_ns;
    int ret;

    if (!s->running) {
        ms_err(err, errlen, "DAMON slot %d is not monitoring", i);
        return -EINVAL;
    }
    slot_path(p, sizeof(p), i, "state");
    ret = kwrite(p, accessed ? "update_schemes_tried_regions"
                             : "update_schemes_tried_bytes", err, errlen);
    if (ret == 0) {
        ret = own_tried_bytes(i, &res->accessed_bytes, err, errlen);
    }
    if (ret == 0 && accessed) {
        ret = read_tried_regions(i, starts, n, accessed, err, errlen);
    }
    res->kdamond_pid = s->kdamond_pid;
    cpu_ns = thread_cpu_ns(s->kdamond_pid);
    res->kdamond_cpu_s = (double)cpu_ns / 1e9;
    return ret;
}

void ms_damon_stop(int i)
{
    char p[512];

    if (pool.slot[i].running) {
        slot_path(p, sizeof(p), i, "state");
        kwrite(p, "off", NULL, 0);
        pool.slot[i].running = 0;
    }
}

/* ---- The host's paddr kdamond, shared by its members ---- */

static struct {
    int slot;                   /* its pool slot, -1 while it has none */
    struct ms_damon_member *members;
    uint64_t *regions;          /* the members' pages, merged */
    uint64_t watched_n;         /* the members' pages in the running one */
    unsigned int capacity;      /* its regions, padding included */
    unsigned int epoch;         /* its restarts (atomic: read unlocked) */
} host = { .slot = -1 };

/*
 * Writing nr_regions makes the kernel recreate every region directory, and
 * memagg then opens and writes every file again: 603 ms for 24,000 regions
 * (measured), against about 2.6 us per region whose value changed.  So the
 * host kdamond's region count moves only when the pages outgrow it (with
 * a quarter's headroom) or fall below half of it; the slots in between
 * hold padding, one page each at PAD_BASE + 4 KiB x its index: physical
 * addresses above any RAM, where no page is ever found accessed or walked,
 * and the same value in a slot from one restart to the next.
 */
#define PAD_BASE (1ULL << 51)

/* The region count for total pages (never fewer). */
static unsigned int host_capacity(uint64_t total)
{
    if (total <= host.capacity && total >= host.capacity / 2) {
        return host.capacity;
    }
    return (unsigned int)(total + total / 4 + 16);
}

static int host_running(void)
{
    return host.slot >= 0 && pool.slot[host.slot].running;
}

/* Every member has armed since the kdamond last restarted. */
static int host_all_pending(void)
{
    struct ms_damon_member *m;

    for (m = host.members; m; m = m->next) {
        if (!m->pending) {
            return 0;
        }
    }
    return host.members != NULL;
}

static void host_mark(uint64_t start, uint64_t end, void *arg)
{
    struct ms_damon_member *m;

    (void)arg;
    for (m = host.members; m; m = m->next) {
        if (m->watched && !m->answered && m->n) {
            ms_mark_range(m->starts, m->n, start, end, m->hit);
        }
    }
}

/* The one member whose pages the running kdamond watches, or NULL. */
static struct ms_damon_member *host_sole_member(void)
{
    struct ms_damon_member *m, *sole = NULL;

    for (m = host.members; m; m = m->next) {
        if (m->watched) {
            if (sole) {
                return NULL;
            }
            sole = m;
        }
    }
    return sole;
}

/*
 * Ask the running kdamond which of its regions were accessed and call
 * fn(start, end, arg) for each.  Through its trace event when tracefs has
 * it (damon_trace.c): one update_schemes_tried_bytes, the answer taken
 * when the regions traced add up to the walk's total_bytes.  Otherwise,
 * or when they do not, through the directories that
 * update_schemes_tried_regions makes, one per region.  *how says which.
 */
static int host_regions(void (*fn)(uint64_t, uint64_t, void *), void *arg,
                        const char **how, char *err, size_t errlen)
{
    int kpid = pool.slot[host.slot].kdamond_pid, traced, ret;
    uint64_t *starts = NULL, bytes = 0;
    size_t n = 0, k;
    char p[512];

    *how = NULL;
    if (!pool.trace_tried) {
        /* Without the instance, the directories answer (its reason is
         * not kept: the result's answer says "regions"). */
        pool.trace_tried = 1;
        ms_damon_trace_open(&pool.trace, NULL, 0);
    }
    traced = pool.trace.dir[0] && kpid > 0 &&
             ms_damon_trace_start(&pool.trace, kpid, 2 * host.watched_n,
                                  NULL, 0) == 0;
    if (traced) {
        slot_path(p, sizeof(p), host.slot, "state");
        ret = kwrite(p, "update_schemes_tried_bytes", err, errlen);
        /* Right after the walk: a later application adds regions
         * accessed since, which its total_bytes does not count. */
        traced = ms_damon_trace_stop(&pool.trace, 0, &starts, &n, NULL,
                                     0) == 0;
        if (ret == 0) {
            ret = own_tried_bytes(host.slot, &bytes, err, errlen);
        }
        if (ret == 0 && traced && bytes == n * MS_PAGE_SIZE) {
            for (k = 0; k < n; k++) {
                fn(starts[k], starts[k] + MS_PAGE_SIZE, arg);
            }
            *how = "trace";
        }
        free(starts);
        if (ret || *how) {
            return ret;
        }
    }
    slot_path(p, sizeof(p), host.slot, "state");
    ret = kwrite(p, "update_schemes_tried_regions", err, errlen);
    if (ret == 0) {
        ret = check_own_regions(host.slot, err, errlen);
    }
    if (ret == 0) {
        ret = for_each_tried(host.slot, fn, arg, err, errlen);
        *how = "regions";
    }
    return ret;
}

/*
 * The running kdamond's answer, marked for every member watching and not
 * answered yet; each takes a share of the kdamond's CPU time so far (a new
 * thread each start) in proportion to its pages.  With bytes_ok and a
 * kdamond watching one member's pages only, the answer is their count
 * (tried_bytes: no region to read), its pages unmarked.
 */
static int host_answer(int bytes_ok, char *err, size_t errlen)
{
    struct ms_damon_member *m, *sole = NULL;
    const char *how = NULL;
    uint64_t bytes = 0;
    double cpu_s = 0;
    char p[512];
    int ret = 0;

    if (host_running()) {
        sole = bytes_ok ? host_sole_member() : NULL;
        if (sole) {
            slot_path(p, sizeof(p), host.slot, "state");
            ret = kwrite(p, "update_schemes_tried_bytes", err, errlen);
            if (ret == 0) {
                ret = own_tried_bytes(host.slot, &bytes, err, errlen);
            }
            how = "count";
        } else {
            ret = host_regions(host_mark, NULL, &how, err, errlen);
        }
        if (ret) {
            /* The one answer failed: so did every window waiting for it. */
            for (m = host.members; m; m = m->next) {
                if (m->watched && !m->answered) {
                    m->answered = 1;
                    m->error = ret;
                    snprintf(m->errmsg, sizeof(m->errmsg), "%s", err);
                }
            }
            return ret;
        }
        cpu_s = (double)thread_cpu_ns(pool.slot[host.slot].kdamond_pid) / 1e9;
    }
    for (m = host.members; m; m = m->next) {
        if (m->watched && !m->answered) {
            m->answered = 1;
            m->marked = m != sole;
            m->answer = how;
            m->accessed_pages = m == sole ? bytes / MS_PAGE_SIZE : 0;
            m->kdamond_pid = host_running()
                             ? pool.slot[host.slot].kdamond_pid : 0;
            if (host.watched_n) {
                m->cpu_s += cpu_s * m->n / (double)host.watched_n;
            }
        }
    }
    return 0;
}

/* Start the kdamond on the armed members' pages, merged. */
static int host_start(char *err, size_t errlen)
{
    struct ms_damon_member *m;
    uint64_t total = 0, sample_us = 0, *regions;
    unsigned int i, nr = 0, cap;
    char p[512];
    uint64_t kpid = 0;
    int ret;

    for (m = host.members; m; m = m->next) {
        if (m->armed) {
            total += m->n;
            if (!sample_us || m->sample_us < sample_us) {
                sample_us = m->sample_us;
            }
        }
    }
    host.watched_n = total;
    if (!total) {
        return 0;
    }
    cap = host_capacity(total);
    regions = realloc(host.regions, sizeof(*regions) * cap);
    if (!regions) {
        ms_err(err, errlen, "out of memory for %llu DAMON regions",
               (unsigned long long)total);
        return -ENOMEM;
    }
    host.regions = regions;
    for (m = host.members; m; m = m->next) {
        if (m->armed && m->n) {
            memcpy(regions + nr, m->starts, sizeof(*regions) * m->n);
            nr += m->n;
        }
    }
    /* Two VMs may share a page (KSM): one region serves both. */
    total = ms_sort_unique_u64(regions, nr);
    cap = host_capacity(total);
    for (i = (unsigned int)total; i < cap; i++) {
        regions[i] = PAD_BASE + (uint64_t)i * MS_PAGE_SIZE;
    }
    host.capacity = cap;
    ret = start_slot(host.slot, "paddr", 0, regions, cap, MS_PAGE_SIZE,
                     sample_us, err, errlen);
    if (ret) {
        slot_forget(&pool.slot[host.slot]);
        return ret;
    }
    pool.slot[host.slot].running = 1;
    slot_path(p, sizeof(p), host.slot, "pid");
    pool.slot[host.slot].kdamond_pid = 0;
    if (ms_read_u64_file(p, &kpid, NULL, 0) == 0) {
        pool.slot[host.slot].kdamond_pid = (int)kpid;
    }
    return 0;
}

/*
 * Restart the kdamond on the armed members' pages.  A member still
 * watching (armed, not collected: skipped this period) first takes the
 * answer so far, and its window goes on in the new run.  DAMON refusing
 * the regions (ENODEV, ENOENT: their sysfs files went stale; EINVAL: e.g.
 * a page the balloon freed or moved since pagemap was read) makes every
 * armed member draw anew and the kdamond start again, twice at most,
 * rather than lose the period.  A member whose window is lost holds the
 * error for its collect().  Called with pool.lock held.
 */
static int host_commit(char *err, size_t errlen)
{
    struct ms_damon_member *m;
    char why[MS_ERRLEN] = "";
    int ret, attempt, skipped = 0;

    for (m = host.members; m; m = m->next) {
        skipped |= m->armed && m->watched && !m->answered;
    }
    /* Asking waits for the kdamond's next check: only when one needs it. */
    if (skipped && host_running() && host_answer(0, why, sizeof(why))) {
        /* A window the failed answer ended stays out of the new run. */
        for (m = host.members; m; m = m->next) {
            if (m->error && m->armed && !m->pending) {
                m->armed = 0;
            }
        }
    }
    if (host_running()) {
        ms_damon_stop(host.slot);
    }
    for (attempt = 0;; attempt++) {
        ret = host_start(why, sizeof(why));
        if (ret == 0 || attempt == 2 ||
            (ret != -ENODEV && ret != -ENOENT && ret != -EINVAL)) {
            break;
        }
        for (m = host.members; m; m = m->next) {
            int r;

            if (!m->armed) {
                continue;
            }
            r = m->redraw(m, m->errmsg, sizeof(m->errmsg));
            if (r == 0 && !m->pending) {
                r = -EAGAIN;
                ms_err(m->errmsg, sizeof(m->errmsg), "the window was "
                       "restarted on pages drawn anew (DAMON refused the "
                       "last ones)");
            }
            if (r) {
                m->error = r;
                m->armed = 0;
            }
        }
    }
    if (ret == 0) {
        __atomic_add_fetch(&host.epoch, 1, __ATOMIC_RELAXED);
    }
    for (m = host.members; m; m = m->next) {
        m->pending = 0;
        if (m->armed && ret) {
            m->error = ret;
            snprintf(m->errmsg, sizeof(m->errmsg), "%s", why);
            m->armed = 0;
        }
        m->watched = m->armed;
        m->answered = !m->armed;
    }
    if (ret) {
        ms_err(err, errlen, "%s", why);
    }
    return ret;
}

unsigned int ms_damon_epoch(void)
{
    return __atomic_load_n(&host.epoch, __ATOMIC_RELAXED);
}

int ms_damon_join(struct ms_damon_member *m, char *err, size_t errlen)
{
    int ret;

    pthread_mutex_lock(&pool.lock);
    ret = pool_get(err, errlen);
    if (ret == 0 && host.slot < 0) {
        ret = take_slot(err, errlen);
        if (ret >= 0) {
            host.slot = ret;
            ret = 0;
        }
    }
    if (ret == 0) {
        m->armed = m->pending = m->watched = m->error = 0;
        m->answered = m->marked = 1;
        m->accessed_pages = 0;
        m->n = 0;
        m->next = host.members;
        host.members = m;
    }
    pthread_mutex_unlock(&pool.lock);
    return ret;
}

void ms_damon_leave(struct ms_damon_member *m)
{
    struct ms_damon_member **pp;

    pthread_mutex_lock(&pool.lock);
    for (pp = &host.members; *pp && *pp != m; pp = &(*pp)->next) {
    }
    if (*pp) {
        *pp = m->next;
        if (!host.members) {
            free_slot(host.slot);
            host.slot = -1;
            free(host.regions);
            host.regions = NULL;
        } else if (host_all_pending()) {
            /* The others were waiting for this one only. */
            host_commit(NULL, 0);
        }
        pool_put();
    }
    pthread_mutex_unlock(&pool.lock);
}

void ms_damon_arm(struct ms_damon_member *m, const uint64_t *starts,
                  unsigned int n, unsigned char *hit, uint64_t sample_us)
{
    pthread_mutex_lock(&pool.lock);
    m->starts = starts;
    m->n = n;
    m->hit = hit;
    memset(hit, 0, n);
    m->sample_us = sample_us;
    m->cpu_s = 0;
    m->error = 0;
    m->armed = 1;
    m->pending = 1;
    if (host_all_pending()) {
        host_commit(NULL, 0);
    }
    pthread_mutex_unlock(&pool.lock);
}

void ms_damon_disarm(struct ms_damon_member *m)
{
    pthread_mutex_lock(&pool.lock);
    m->armed = 0;
    m->pending = 0;
    m->answered = 1;
    pthread_mutex_unlock(&pool.lock);
}

int ms_damon_commit(char *err, size_t errlen)
{
    struct ms_damon_member *m;
    int ret = 0, pending = 0, armed = 0;

    pthread_mutex_lock(&pool.lock);
    for (m = host.members; m; m = m->next) {
        pending |= m->pending;
        armed |= m->armed;
    }
    /* Nothing new to watch, or a kdamond watching nobody any more. */
    if (pending || (!armed && host_running())) {
        ret = host_commit(err, errlen);
    }
    pthread_mutex_unlock(&pool.lock);
    return ret;
}

int ms_damon_member_collect(struct ms_damon_member *m, int want_marks,
                            struct ms_damon_result *res, char *err,
                            size_t errlen)
{
    int ret = 0;

    pthread_mutex_lock(&pool.lock);
    /* Armed after every other member's last restart: start it now. */
    if (m->pending) {
        host_commit(NULL, 0);
    }
    if (!m->error && m->watched && !m->answered) {
        /* A failure lands in every member waiting for the answer. */
        host_answer(!want_marks, err, errlen);
    }
    if (m->error) {
        ret = m->error;
        ms_err(err, errlen, "%s", m->errmsg);
        m->error = 0;
    } else if (!m->watched) {
        ms_err(err, errlen, "the host's kdamond is not watching this "
               "sampler's pages");
        ret = -EINVAL;
    }
    if (ret == 0) {
        res->marked = m->marked;
        res->accessed_bytes = m->accessed_pages * MS_PAGE_SIZE;
        res->kdamond_cpu_s = m->cpu_s;
        res->kdamond_pid = m->kdamond_pid;
        res->answer = m->answer;
    }
    m->armed = 0;
    pthread_mutex_unlock(&pool.lock);
    return ret;
}

int ms_damon_member_mark(struct ms_damon_member *m, char *err,
                         size_t errlen)
{
    struct marks mk = { m->starts, m->n, m->hit };
    int ret;

    pthread_mutex_lock(&pool.lock);
    if (!m->watched || !host_running()) {
        ms_err(err, errlen, "the host's kdamond is not watching this "
               "sampler's pages");
        ret = -EINVAL;
    } else {
        memset(m->hit, 0, m->n);
        ret = host_regions(mark_slot_region, &mk, &m->answer, err, errlen);
        m->marked = ret == 0;
    }
    pthread_mutex_unlock(&pool.lock);
    return ret;
}

/* The pool is gone: so is the host's kdamond, and its members with it. */
static void host_reset(void)
{
    host.slot = -1;
    host.members = NULL;
    free(host.regions);
    host.regions = NULL;
    host.watched_n = 0;
    host.capacity = 0;
}

/*
 * ---- damon_memcg: the host's kept-running kdamond, counted per cgroup ----
 *
 * One paddr kdamond, kept running, whose regions are every member's
 * sampled pages and whose sampling and aggregation intervals are both one
 * window: one accessed-bit check per page per window.  Each member has a
 * "stat" scheme of its own, over the regions accessed in the window, with
 * an ops filter of type memcg on the member's memory cgroup: the scheme's
 * sz_ops_filter_passed grows by the member's accessed pages every window
 * (a sampled page of another member is charged to another cgroup and
 * counts for none but its own).  The kdamond refreshes the statistics
 * files itself (refresh_ms), before it applies its schemes, so after
 * window k ends they hold the applications up to window k - 1: a collect()
 * reads the newest window they hold, one late, and waits for one only when
 * none is new.  The windows are counted by a sentinel region, [0, 8 KiB),
 * which no sampled page can be (physical page 0 and 1 hold no guest RAM),
 * and a scheme matching the two-page regions only: its nr_tried grows by
 * one per window.  A third scheme matches regions of three pages or more,
 * which memagg never sets (FOREIGN_SCHEME of the restarted kdamond).
 *
 * New pages (a draw) reach the running kdamond by a commit, which takes
 * the regions without stopping it, the statistics staying cumulative.  The
 * commit write returns only once the kdamond took it, at the end of its
 * current window (up to a whole window), so a thread of its own writes it,
 * never the caller's period; the staged pages of every member go in one
 * commit, which costs the kdamond about 0.34 ns x N^2 for N regions.  The
 * window the commit lands in checked the old pages and counts the new
 * ones unchecked: it is lost for the members whose pages changed, and
 * only for them.
 */
#define MEMCG_COUNTER 0
#define MEMCG_FOREIGN 1
#define MEMCG_FIRST 2
#define MEMCG_SENTINEL_SZ (2 * MS_PAGE_SIZE)
#define MEMCG_SCHEME_STEP 8
#define MEMCG_POLL_NS 5000000L

struct memcg_scheme {
    struct ms_memcg_member *owner;
    int written;                /* its sysfs files hold the owner's filter */
};

static struct {
    int slot;                   /* its pool slot, -1 while it has none */
    struct ms_memcg_member *members;
    pthread_t thread;
    int thread_on;
    pthread_cond_t cond;
    int want;                   /* a commit is asked for */
    int stop;
    int running;
    int rewrite;                /* every file to write again (a failure) */
    struct memcg_scheme *schemes;
    unsigned int nr_schemes;    /* MEMCG_FIRST + the members' schemes */
    uint64_t window_us;
    uint64_t *regions;
    unsigned int nr_regions;
    uint64_t foreign_seen;      /* the foreign scheme's sz_tried */
    int kdamond_pid;
} mh = { .slot = -1, .cond = PTHREAD_COND_INITIALIZER };

static struct {
    int checked, ok;
    char reason[MS_ERRLEN];
} memcg_probe;

static int memcg_stat(const char *file, int scheme, uint64_t *out,
                      char *err, size_t errlen)
{
    char p[512], rel[128];

    snprintf(rel, sizeof(rel), "contexts/0/schemes/%d/stats/%s", scheme,
             file);
    slot_path(p, sizeof(p), mh.slot, rel);
    return ms_read_u64_file(p, out, err, errlen);
}

/*
 * Probe an unused slot for what damon_memcg needs: the kdamond's
 * refresh_ms and a scheme's ops_filters taking the memcg type.  Called
 * with pool.lock held and a reference of the pool.
 */
static int memcg_probe_slot(char *reason, size_t len)
{
    char p[512];
    int i, ret;

    for (i = 0; i < MS_DAMON_SLOTS && pool.slot[i].used; i++) {
    }
    if (i == MS_DAMON_SLOTS) {
        ms_err(reason, len, "all %d DAMON slots are in use", MS_DAMON_SLOTS);
        return 0;
    }
    slot_path(p, sizeof(p), i, "refresh_ms");
    if (access(p, W_OK) != 0) {
        ms_err(reason, len, "kernel DAMON has no kdamond refresh_ms (%s): "
               "statistics cannot be read without a command per window", p);
        return 0;
    }
    slot_path(p, sizeof(p), i, "contexts/nr_contexts");
    ret = kwrite(p, "1", reason, len);
    if (ret == 0) {
        pool.slot[i].has_ctx = 1;
        pool.slot[i].configured = 0;
        slot_path(p, sizeof(p), i, "contexts/0/schemes/nr_schemes");
        ret = kwrite(p, "1", reason, len);
    }
    if (ret == 0) {
        slot_path(p, sizeof(p), i,
                  "contexts/0/schemes/0/ops_filters/nr_filters");
        if (access(p, W_OK) != 0) {
            ms_err(reason, len, "kernel DAMON has no ops_filters in its "
                   "schemes (%s)", p);
            ret = -ENOENT;
        } else {
            ret = kwrite(p, "1", reason, len);
        }
    }
    if (ret == 0) {
        slot_path(p, sizeof(p), i,
                  "contexts/0/schemes/0/ops_filters/0/type");
        if (kwrite(p, "memcg", NULL, 0) != 0) {
            ms_err(reason, len, "kernel DAMON has no ops filter of type "
                   "memcg");
            ret = -EINVAL;
        }
    }
    slot_path(p, sizeof(p), i, "contexts/0/schemes/nr_schemes");
    kwrite(p, "0", NULL, 0);
    if (ret) {
        return 0;
    }
    ms_err(reason, len, "DAMON sysfs with 'paddr' operations, memcg ops "
           "filters and refresh_ms (one kept-running kdamond, a count per "
           "memory cgroup)");
    return 1;
}

int ms_memcg_supported(char *reason, size_t len)
{
    char why[MS_ERRLEN] = "";
    int ok;

    if (!ms_damon_supported("paddr", why, sizeof(why))) {
        ms_err(reason, len, "%s", why);
        return 0;
    }
    pthread_mutex_lock(&pool.lock);
    if (!memcg_probe.checked && pool_get(why, sizeof(why)) == 0) {
        memcg_probe.ok = memcg_probe_slot(memcg_probe.reason,
                                          sizeof(memcg_probe.reason));
        memcg_probe.checked = 1;
        pool_put();
    } else if (!memcg_probe.checked) {
        snprintf(memcg_probe.reason, sizeof(memcg_probe.reason), "%s", why);
    }
    ok = memcg_probe.ok;
    ms_err(reason, len, "%s", memcg_probe.reason);
    pthread_mutex_unlock(&pool.lock);
    return ok;
}

/* A scheme k, written whole: the counter, the foreign check, a member's. */
static int memcg_write_scheme(unsigned int k, char *err, size_t errlen)
{
    struct ms_memcg_member *owner = mh.schemes[k].owner;
    char p[512], rel[160];
    int i = mh.slot, ret = 0;

#define MSET(file, val) do { \
        snprintf(rel, sizeof(rel), "schemes/%u/%s", k, (file)); \
        CTX_SET(rel, (val)); \
    } while (0)
#define MSETS(file, text) do { \
        snprintf(rel, sizeof(rel), "contexts/0/schemes/%u/%s", k, (file)); \
        slot_path(p, sizeof(p), i, rel); \
        ret = kwrite(p, (text), err, errlen); \
        if (ret) { \
            return ret; \
        } \
    } while (0)
    MSETS("action", "stat");
    MSET("apply_interval_us", 0);
    /* One check per window: a free scheme's 2 accesses never happen. */
    MSET("access_pattern/nr_accesses/min",
         k < MEMCG_FIRST ? 0 : owner ? 1 : 2);
    MSET("access_pattern/nr_accesses/max", UINT32_MAX);
    MSET("access_pattern/sz/min", k == MEMCG_COUNTER ? MEMCG_SENTINEL_SZ
                                  : k == MEMCG_FOREIGN ? 3 * MS_PAGE_SIZE
                                  : 0);
    MSET("access_pattern/sz/max", k == MEMCG_COUNTER ? MEMCG_SENTINEL_SZ
                                  : UINT64_MAX);
    MSET("access_pattern/age/min", 0);
    MSET("access_pattern/age/max", UINT32_MAX);
    if (k >= MEMCG_FIRST) {
        /* A gone VM's cgroup would make DAMON refuse the commit. */
        MSET("ops_filters/nr_filters", owner ? 1 : 0);
    }
    if (owner) {
        MSETS("ops_filters/0/type", "memcg");
        MSETS("ops_filters/0/memcg_path", owner->memcg);
        MSETS("ops_filters/0/matching", "Y");
        MSETS("ops_filters/0/allow", "Y");
    }
#undef MSET
#undef MSETS
    mh.schemes[k].written = 1;
    return 0;
}

/* Give each member a scheme; a full table grows by MEMCG_SCHEME_STEP. */
static int memcg_assign_schemes(char *err, size_t errlen)
{
    struct ms_memcg_member *m;
    unsigned int k;

    for (m = mh.members; m; m = m->next) {
        if (m->scheme >= 0 || !m->committing) {
            continue;
        }
        for (k = MEMCG_FIRST; k < mh.nr_schemes && mh.schemes[k].owner;
             k++) {
        }
        if (k == mh.nr_schemes) {
            struct memcg_scheme *t = realloc(
                mh.schemes, sizeof(*t) * (mh.nr_schemes + MEMCG_SCHEME_STEP));

            if (!t) {
                ms_err(err, errlen, "out of memory for DAMON schemes");
                return -ENOMEM;
            }
            memset(t + mh.nr_schemes, 0, sizeof(*t) * MEMCG_SCHEME_STEP);
            mh.schemes = t;
            mh.nr_schemes += MEMCG_SCHEME_STEP;
            /* nr_schemes recreates every scheme directory. */
            mh.rewrite = 1;
        }
        mh.schemes[k].owner = m;
        mh.schemes[k].written = 0;
        m->scheme = (int)k;
    }
    return 0;
}

/* Every member's pages and the sentinel, sorted and distinct. */
static int memcg_merge_regions(char *err, size_t errlen)
{
    struct ms_memcg_member *m;
    uint64_t total = 1, *r;
    unsigned int i, nr = 1, out = 1;

    for (m = mh.members; m; m = m->next) {
        total += m->staged ? 0 : m->n;
    }
    r = realloc(mh.regions, sizeof(*r) * total);
    if (!r) {
        ms_err(err, errlen, "out of memory for %llu DAMON regions",
               (unsigned long long)total);
        return -ENOMEM;
    }
    mh.regions = r;
    r[0] = 0;
    for (m = mh.members; m; m = m->next) {
        if (!m->staged && m->n) {
            memcpy(r + nr, m->starts, sizeof(*r) * m->n);
            nr += m->n;
        }
    }
    qsort(r + 1, nr - 1, sizeof(*r), ms_cmp_u64);
    for (i = 1; i < nr; i++) {
        /* Two VMs may share a page (KSM): one region serves both. */
        if (r[i] >= MEMCG_SENTINEL_SZ && r[i] != r[out - 1]) {
            r[out++] = r[i];
        }
    }
    mh.nr_regions = out;
    return 0;
}

/* The window every member asks for, the smallest. */
static uint64_t memcg_wanted_window(void)
{
    struct ms_memcg_member *m;
    uint64_t w = 0;

    for (m = mh.members; m; m = m->next) {
        if (!w || (m->window_us && m->window_us < w)) {
            w = m->window_us;
        }
    }
    return w ? w : 1000000ULL;
}

/* Write what changed since the kdamond took its files. */
static int memcg_write_files(int fresh, char *err, size_t errlen)
{
    struct slot *s = &pool.slot[mh.slot];
    uint64_t w = memcg_wanted_window();
    unsigned int k;
    char p[512];
    int i = mh.slot, ret = 0;

    if (!s->has_ctx || !s->configured || mh.rewrite || fresh) {
        slot_forget(s);
        slot_path(p, sizeof(p), i, "contexts/nr_contexts");
        ret = kwrite(p, "1", err, errlen);
        if (ret) {
            return ret;
        }
        s->has_ctx = 1;
        slot_path(p, sizeof(p), i, "contexts/0/operations");
        ret = kwrite(p, "paddr", err, errlen);
        if (ret) {
            return ret;
        }
        CTX_SET("targets/nr_targets", 1);
        CTX_SET("monitoring_attrs/intervals/update_us", AGGR_US);
        mh.window_us = 0;
        CTX_SET("schemes/nr_schemes", mh.nr_schemes);
        for (k = 0; k < mh.nr_schemes; k++) {
            mh.schemes[k].written = 0;
        }
        slot_path(p, sizeof(p), i, "refresh_ms");
        ret = kwrite(p, "1", err, errlen);
        if (ret) {
            return ret;
        }
        s->configured = 1;
        mh.rewrite = 0;
    }
    /* A window changed by more than a quarter: the new one. */
    if (!mh.window_us || w * 4 < mh.window_us * 3 || w * 4 > mh.window_us * 5) {
        CTX_SET("monitoring_attrs/intervals/sample_us", w);
        CTX_SET("monitoring_attrs/intervals/aggr_us", w);
        mh.window_us = w;
    }
    for (k = 0; k < mh.nr_schemes; k++) {
        if (!mh.schemes[k].written) {
            ret = memcg_write_scheme(k, err, errlen);
            if (ret) {
                return ret;
            }
        }
    }
    return write_regions(i, mh.regions, mh.nr_regions, MS_PAGE_SIZE,
                         MEMCG_SENTINEL_SZ, err, errlen);
}

/*
 * Read each member's cgroup again: those whose process moved to another
 * one are marked refused, their scheme to be written again.  How many.
 */
static int memcg_resolve_again(void)
{
    struct ms_memcg_member *m;
    char now[sizeof(m->memcg)];
    int moved = 0;

    for (m = mh.members; m; m = m->next) {
        if (ms_pid_memcg(m->pid, now, sizeof(now), NULL, 0) == 0 &&
            strcmp(now, m->memcg) != 0) {
            snprintf(m->memcg, sizeof(m->memcg), "%s", now);
            if (m->scheme >= 0) {
                mh.schemes[m->scheme].written = 0;
            }
            m->refused = 1;
            moved++;
        }
    }
    return moved;
}

/*
 * Commit the staged members' pages (or start the kdamond on them): called
 * by the commit thread with pool.lock held, which it drops while the
 * kdamond takes the commit.  A commit DAMON refuses (ENODEV, ENOENT: the
 * files went stale; EINVAL, ENOMEM: a filter on a cgroup that is gone) is
 * written again without the members it blames: those whose process moved
 * to another cgroup, else those whose pages it brought in.  They lose the
 * window (EAGAIN at their collect()) and draw anew at their next begin();
 * the others' windows go on.
 */
static void memcg_commit_locked(void)
{
    struct ms_memcg_member *m;
    char err[MS_ERRLEN] = "", p[512];
    uint64_t c0 = 0, kpid = 0;
    int ret = 0, attempt, fresh, moved;

    for (attempt = 0; attempt < 3; attempt++) {
        for (m = mh.members; m; m = m->next) {
            if (m->staged) {
                m->staged = 0;
                m->committing = 1;
            }
        }
        fresh = !mh.running;
        ret = memcg_assign_schemes(err, sizeof(err));
        if (ret == 0) {
            ret = memcg_merge_regions(err, sizeof(err));
        }
        if (ret == 0) {
            ret = memcg_write_files(fresh, err, sizeof(err));
        }
        slot_path(p, sizeof(p), mh.slot, "state");
        if (ret == 0 && fresh) {
            ret = kwrite(p, "on", err, sizeof(err));
        } else if (ret == 0) {
            pthread_mutex_unlock(&pool.lock);
            ret = kwrite(p, "commit", err, sizeof(err));
            pthread_mutex_lock(&pool.lock);
        }
        if (ret == 0) {
            break;
        }
        if (ret == -ENODEV || ret == -ENOENT) {
            /* Its files went stale (recreated): all written again. */
            slot_forget(&pool.slot[mh.slot]);
            mh.rewrite = 1;
        }
        /*
         * A member whose process moved to another cgroup (its old one gone:
         * EINVAL) is the one refused; otherwise the pages brought in are.
         */
        moved = memcg_resolve_again();
        for (m = mh.members; m; m = m->next) {
            if (moved ? m->refused : m->committing || (fresh && m->n)) {
                m->committing = 0;
                m->n = 0;
                m->based = m->old = 0;
                m->refused = 1;
                /* A lost window (EAGAIN), as a window the host spoiled. */
                m->error = -EAGAIN;
                snprintf(m->errmsg, sizeof(m->errmsg), "DAMON refused the "
                         "commit of its pages (%.160s): drawn anew at the "
                         "next begin()", err);
            }
        }
        if (fresh) {
            ms_damon_stop(mh.slot);
            break;
        }
    }
    if (ret) {
        return;
    }
    if (fresh) {
        mh.running = 1;
        pool.slot[mh.slot].running = 1;
        slot_path(p, sizeof(p), mh.slot, "pid");
        mh.kdamond_pid = ms_read_u64_file(p, &kpid, NULL, 0) == 0
                         ? (int)kpid : 0;
        mh.foreign_seen = 0;
    } else if (memcg_stat("nr_tried", MEMCG_COUNTER, &c0, NULL, 0) != 0) {
        c0 = UINT64_MAX - 2;
    }
    for (m = mh.members; m; m = m->next) {
        if (fresh) {
            /* New statistics: the first window counts every member. */
            m->committing = 0;
            m->good_from = 0;
            m->based = 1;
            m->old = 0;
            m->base_window = m->base_passed = 0;
            m->base_cpu_s = 0;
        } else if (m->committing) {
            /*
             * The statistics hold the windows up to c0; the kdamond took
             * the commit at the end of window c0 + 1 at the latest, whose
             * application counted the new pages unchecked.  Up to c0 the
             * windows counted the pages before the draw.
             */
            m->committing = 0;
            m->good_from = c0 + 1;
            m->old_until = c0;
            m->based = m->old;
        }
    }
}

static void *memcg_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pool.lock);
    while (!mh.stop) {
        if (!mh.want) {
            pthread_cond_wait(&mh.cond, &pool.lock);
            continue;
        }
        mh.want = 0;
        memcg_commit_locked();
        pthread_cond_broadcast(&mh.cond);
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

int ms_memcg_join(struct ms_memcg_member *m, char *err, size_t errlen)
{
    struct ms_memcg_member *o;
    int ret;

    pthread_mutex_lock(&pool.lock);
    /* Its scheme would count every page of the cgroup: the other's too. */
    for (o = mh.members; o; o = o->next) {
        if (strcmp(o->memcg, m->memcg) == 0) {
            ms_err(err, errlen, "another damon_memcg sampler counts memory "
                   "cgroup %s", m->memcg);
            pthread_mutex_unlock(&pool.lock);
            return -EEXIST;
        }
    }
    ret = pool_get(err, errlen);
    if (ret == 0 && mh.slot < 0) {
        ret = take_slot(err, errlen);
        if (ret >= 0) {
            mh.slot = ret;
            ret = 0;
            mh.stop = 0;
            mh.running = 0;
            mh.nr_schemes = MEMCG_FIRST;
            mh.schemes = calloc(MEMCG_FIRST, sizeof(*mh.schemes));
            if (!mh.schemes ||
                pthread_create(&mh.thread, NULL, memcg_thread, NULL) != 0) {
                ms_err(err, errlen, "cannot start the DAMON commit thread");
                pool.slot[mh.slot].used = 0;
                mh.slot = -1;
                free(mh.schemes);
                mh.schemes = NULL;
                pool_put();
                ret = -EAGAIN;
            } else {
                mh.thread_on = 1;
            }
        }
    }
    if (ret == 0) {
        m->starts = NULL;
        m->n = 0;
        m->scheme = -1;
        m->staged = m->committing = m->based = m->error = 0;
        m->begun = m->refused = m->old = 0;
        m->next = mh.members;
        mh.members = m;
    }
    pthread_mutex_unlock(&pool.lock);
    return ret;
}

void ms_memcg_leave(struct ms_memcg_member *m)
{
    struct ms_memcg_member **pp;
    pthread_t thread;

    pthread_mutex_lock(&pool.lock);
    for (pp = &mh.members; *pp && *pp != m; pp = &(*pp)->next) {
    }
    if (!*pp) {
        pthread_mutex_unlock(&pool.lock);
        return;
    }
    *pp = m->next;
    if (m->scheme >= 0 && (unsigned int)m->scheme < mh.nr_schemes) {
        mh.schemes[m->scheme].owner = NULL;
        mh.schemes[m->scheme].written = 0;
    }
    free(m->starts);
    m->starts = NULL;
    if (mh.members) {
        /* Its pages and its cgroup (about to go) leave the kdamond. */
        mh.want = 1;
        pthread_cond_broadcast(&mh.cond);
        pool_put();
        pthread_mutex_unlock(&pool.lock);
        return;
    }
    mh.stop = 1;
    thread = mh.thread;
    pthread_cond_broadcast(&mh.cond);
    pthread_mutex_unlock(&pool.lock);
    /* A commit under way ends with the kdamond's window. */
    pthread_join(thread, NULL);
    pthread_mutex_lock(&pool.lock);
    if (mh.slot >= 0) {
        free_slot(mh.slot);
    }
    mh.thread_on = 0;
    memcg_reset();
    pool_put();
    pthread_mutex_unlock(&pool.lock);
}

int ms_memcg_stage(struct ms_memcg_member *m, const uint64_t *starts,
                   unsigned int n, char *err, size_t errlen)
{
    uint64_t *copy = malloc(sizeof(*copy) * (n ? n : 1));

    if (!copy) {
        ms_err(err, errlen, "out of memory for %u pages", n);
        return -ENOMEM;
    }
    memcpy(copy, starts, sizeof(*copy) * n);
    pthread_mutex_lock(&pool.lock);
    free(m->starts);
    m->starts = copy;
    m->n = n;
    m->staged = 1;
    /* Its windows go on counting the pages before, until the commit. */
    m->old = m->based;
    m->old_until = UINT64_MAX;
    m->error = 0;
    pthread_mutex_unlock(&pool.lock);
    return 0;
}

void ms_memcg_commit(void)
{
    struct ms_memcg_member *m;
    int want = 0;

    pthread_mutex_lock(&pool.lock);
    for (m = mh.members; m; m = m->next) {
        want |= m->staged;
    }
    if (mh.window_us) {
        uint64_t w = memcg_wanted_window();

        want |= w * 4 < mh.window_us * 3 || w * 4 > mh.window_us * 5;
    }
    for (m = mh.members; m; m = m->next) {
        m->begun = 0;
    }
    if (want && mh.thread_on) {
        mh.want = 1;
        pthread_cond_broadcast(&mh.cond);
    }
    pthread_mutex_unlock(&pool.lock);
}

int ms_memcg_settled(struct ms_memcg_member *m)
{
    int settled;

    pthread_mutex_lock(&pool.lock);
    settled = !m->staged && !m->committing;
    pthread_mutex_unlock(&pool.lock);
    return settled;
}

void ms_memcg_begun(struct ms_memcg_member *m)
{
    struct ms_memcg_member *o;
    int all = 1;

    pthread_mutex_lock(&pool.lock);
    m->begun = 1;
    for (o = mh.members; o; o = o->next) {
        all &= o->begun;
    }
    pthread_mutex_unlock(&pool.lock);
    if (all) {
        ms_memcg_commit();
    }
}

/*
 * Reject the windows of a kdamond that watched regions memagg did not set
 * (FOREIGN_SCHEME): every member counts again from the next commit, which
 * writes every file again.  Called with pool.lock held.
 */
static int memcg_check_foreign(uint64_t foreign, char *err, size_t errlen)
{
    struct ms_memcg_member *m;

    if (foreign <= mh.foreign_seen) {
        return 0;
    }
    ms_err(err, errlen, "window rejected: the kdamond watched %llu bytes in "
           "regions memagg did not set (their sysfs files were rewritten "
           "by another DAMON user)",
           (unsigned long long)(foreign - mh.foreign_seen));
    mh.foreign_seen = foreign;
    mh.rewrite = 1;
    for (m = mh.members; m; m = m->next) {
        if (m->n) {
            m->staged = 1;
            m->based = 0;
        }
    }
    mh.want = 1;
    pthread_cond_broadcast(&mh.cond);
    return -EAGAIN;
}

int ms_memcg_collect(struct ms_memcg_member *m, struct ms_memcg_result *res,
                     char *err, size_t errlen)
{
    uint64_t c = 0, passed = 0, foreign = 0, windows;
    double wait_s, deadline, cpu_s;
    int ret;

    memset(res, 0, sizeof(*res));
    pthread_mutex_lock(&pool.lock);
    /*
     * The next window ends within one; but a kdamond just started
     * refreshes its statistics with the first window's at the end of the
     * second, and one taking a commit refreshes none until it took it.
     */
    wait_s = (double)mh.window_us * 2.2e-6 + 0.5;
    deadline = ms_now() + wait_s;
    for (;;) {
        if (m->error) {
            ret = m->error;
            ms_err(err, errlen, "%s", m->errmsg);
            m->error = 0;
            break;
        }
        if (((m->staged || m->committing) && !m->based) || !mh.running ||
            m->scheme < 0) {
            ms_err(err, errlen, "its pages drawn anew are not counted yet "
                   "(the kdamond takes them at its next window)");
            ret = -EAGAIN;
            break;
        }
        ret = memcg_stat("nr_tried", MEMCG_COUNTER, &c, err, errlen);
        if (ret == 0) {
            ret = memcg_stat("sz_ops_filter_passed", m->scheme, &passed,
                             err, errlen);
        }
        if (ret == 0) {
            ret = memcg_stat("sz_tried", MEMCG_FOREIGN, &foreign, err,
                             errlen);
        }
        if (ret == 0) {
            ret = memcg_check_foreign(foreign, err, errlen);
        }
        if (ret) {
            break;
        }
        cpu_s = (double)thread_cpu_ns(mh.kdamond_pid) / 1e9;
        if (!m->based || c < m->base_window || passed < m->base_passed) {
            /* The first complete window of its pages starts here. */
            if (c >= m->good_from) {
                m->based = 1;
                m->base_window = c;
                m->base_passed = passed;
                m->base_cpu_s = cpu_s;
            }
            ms_err(err, errlen, "the window its pages were committed in is "
                   "lost (its count starts with the next one)");
            ret = -EAGAIN;
            break;
        }
        if (m->old && c > m->old_until) {
            /* Past the window its commit landed in: its new pages. */
            m->old = 0;
            m->based = c >= m->good_from;
            m->base_window = c;
            m->base_passed = passed;
            m->base_cpu_s = cpu_s;
            ms_err(err, errlen, "the window its pages were committed in is "
                   "lost (its count starts with the next one)");
            ret = -EAGAIN;
            break;
        }
        if (c > m->base_window) {
            windows = c - m->base_window;
            res->old_pages = m->old;
            res->windows = windows > UINT32_MAX ? UINT32_MAX
                                                : (unsigned int)windows;
            res->accessed = ((passed - m->base_passed) / MS_PAGE_SIZE +
                             windows / 2) / windows;
            res->kdamond_pid = mh.kdamond_pid;
            res->kdamond_cpu_s = mh.nr_regions
                ? (cpu_s - m->base_cpu_s) * m->n / (double)mh.nr_regions
                : 0;
            m->base_window = c;
            m->base_passed = passed;
            m->base_cpu_s = cpu_s;
            break;
        }
        if (ms_now() > deadline) {
            ms_err(err, errlen, "no window of the kdamond ended within %.1f "
                   "s", wait_s);
            ret = -ETIMEDOUT;
            break;
        }
        /* The statistics are refreshed every window: wait for the next. */
        pthread_mutex_unlock(&pool.lock);
        nanosleep(&(struct timespec){ 0, MEMCG_POLL_NS }, NULL);
        pthread_mutex_lock(&pool.lock);
    }
    pthread_mutex_unlock(&pool.lock);
    return ret;
}

/* The pool is gone: so is the kept-running kdamond. */
static void memcg_reset(void)
{
    mh.slot = -1;
    mh.members = NULL;
    mh.running = 0;
    mh.want = 0;
    mh.rewrite = 0;
    mh.window_us = 0;
    mh.nr_regions = 0;
    free(mh.regions);
    mh.regions = NULL;
    free(mh.schemes);
    mh.schemes = NULL;
    mh.nr_schemes = 0;
}
