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
 * DAMON through its sysfs interface, shared by every sampler of the process:
 * the pool of kdamond slots, the lock on the tree, and setting a slot up,
 * writing its regions, starting and stopping it.
 *
 * The sysfs tree is global to the machine: while any sampler is open, this
 * file has a pool of MS_DAMON_SLOTS kdamonds in it, each with one context,
 * one target and one "stat" scheme, after the kdamonds other DAMON users
 * set up (kept as they were: damon_share.c).  The pool is made on first use
 * and goes (the tree as long as before) when the last sampler closes and at
 * process exit.  A lock keeps two memagg processes from fighting over the
 * tree; whoever takes it turns off any kdamond a crashed run left on.  The
 * lock is the tree's own directory (flock), not a file under /run: /run
 * may be private to a mount namespace (a container, each simulated host of
 * the test rig) while the tree is not, and two memagg-compute processes
 * with their own /run each drove kdamond 0, rewriting each other's region
 * files (windows that read every sampled page accessed, or none).
 *
 * damon_vaddr samplers each have a kdamond of their own (a slot); the
 * damon_paddr samplers share one (damon_paddr.c), the damon_memcg ones
 * another (damon_memcg.c).  What a kdamond answers is read by
 * damon_answer.c.
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
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "damon_internal.h"
#include "ms.h"

/* DAMON's sysfs answers EBUSY to a command, and to reading a kdamond's
 * state or pid, while another command runs. */
#define BUSY_RETRY_S 30.0
#define BUSY_PAUSE_MAX_NS 64000000L
/* The kdamonds looked at for other users' set-ups when the pool is made. */
#define MAX_KDAMONDS_SEEN 4096

struct pool ms_pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .lockfd = -1 };

/*
 * Wait before another try of a DAMON file that answered EBUSY (another
 * command, of memagg or of another DAMON user, holds DAMON's sysfs lock):
 * whether there is time left.  The other command may wait a whole
 * sampling interval for its kdamond: back off (1 ms doubling to 64 ms)
 * rather than retry at a fixed pace.
 */
static int busy_wait(struct timespec *pause, double deadline)
{
    if (ms_now() >= deadline) {
        return 0;
    }
    nanosleep(pause, NULL);
    if (pause->tv_nsec < BUSY_PAUSE_MAX_NS) {
        pause->tv_nsec *= 2;
    }
    return 1;
}

int ms_kwrite(const char *path, const char *text, char *err, size_t errlen)
{
    double deadline = ms_now() + BUSY_RETRY_S;
    struct timespec pause = { 0, 1000000 };
    int ret;

    while ((ret = ms_write_file(path, text, err, errlen)) == -EBUSY &&
           busy_wait(&pause, deadline)) {
    }
    return ret;
}

int ms_kread(const char *path, char **buf, size_t *len, char *err,
             size_t errlen)
{
    double deadline = ms_now() + BUSY_RETRY_S;
    struct timespec pause = { 0, 1000000 };
    int ret;

    while ((ret = ms_read_file(path, buf, len, err, errlen)) == -EBUSY &&
           busy_wait(&pause, deadline)) {
    }
    return ret;
}

int ms_kread_u64(const char *path, uint64_t *out, char *err, size_t errlen)
{
    return ms_read_u64_with(ms_kread, path, out, err, errlen);
}

static int kwrite_u64(char *err, size_t errlen, uint64_t v, const char *path)
{
    char text[32];

    snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
    return ms_kwrite(path, text, err, errlen);
}

void ms_slot_path(char *buf, size_t len, int slot, const char *rel)
{
    snprintf(buf, len, "%s/kdamonds/%d/%s", ms_paths.damon,
             ms_pool.base + slot, rel);
}

/* Write number v to contexts/0/<rel> of kdamond slot i. */
int ms_ctx_write_u64(int i, const char *rel, uint64_t v, char *err,
                     size_t errlen)
{
    char p[512], full[256];

    snprintf(full, sizeof(full), "contexts/0/%s", rel);
    ms_slot_path(p, sizeof(p), i, full);
    return kwrite_u64(err, errlen, v, p);
}

/* Turn kdamonds from, from + 1, ... from + nr - 1 off. */
static void all_off(int from, int nr)
{
    char path[512];
    int i;

    for (i = from; i < from + nr; i++) {
        if (ms_kdamond_is_on(i)) {
            snprintf(path, sizeof(path), "%s/kdamonds/%d/state",
                     ms_paths.damon, i);
            ms_kwrite(path, "off", NULL, 0);
        }
    }
}

static void drop_kept(void)
{
    int k;

    for (k = 0; k < ms_pool.nr_kept; k++) {
        ms_kdamond_free(&ms_pool.kept[k]);
    }
    ms_pool.nr_kept = 0;
    ms_pool.base = 0;
}

/* Read the set-ups of other DAMON users among the first nr kdamonds. */
static int keep_others(int nr, char *err, size_t errlen)
{
    int i, ret;

    drop_kept();
    for (i = 0; i < nr; i++) {
        if (!ms_kdamond_is_others(i)) {
            continue;
        }
        if (ms_pool.nr_kept == MS_DAMON_KEPT) {
            ms_err(err, errlen, "DAMON has more than %d kdamonds of other "
                   "users: memagg cannot keep them all", MS_DAMON_KEPT);
            return -EBUSY;
        }
        ret = ms_kdamond_save(i, &ms_pool.kept[ms_pool.nr_kept], err,
                              errlen);
        if (ret) {
            return ret;
        }
        ms_pool.nr_kept++;
        ms_pool.base = i + 1;
    }
    return 0;
}

/*
 * What the kept kdamonds hold now (their users may have changed them while
 * memagg had its pool); one whose set-up went is not brought back.
 */
static void rekeep_others(void)
{
    struct kept_kdamond now;
    int k;

    for (k = 0; k < ms_pool.nr_kept; k++) {
        struct kept_kdamond *kept = &ms_pool.kept[k];
        int index = kept->index;

        if (!ms_kdamond_is_others(index)) {
            ms_kdamond_free(kept);
            kept->index = index;
        } else if (ms_kdamond_save(index, &now, NULL, 0) == 0) {
            ms_kdamond_free(kept);
            *kept = now;
        }
    }
}

/*
 * Make the tree nr kdamonds long (every kdamond is off by then), then
 * write the kept ones back and run those that ran.
 */
static int resize(uint64_t nr, char *err, size_t errlen)
{
    char path[512];
    int k, ret;

    snprintf(path, sizeof(path), "%s/kdamonds/nr_kdamonds", ms_paths.damon);
    ret = kwrite_u64(err, errlen, nr, path);
    for (k = 0; k < ms_pool.nr_kept; k++) {
        ms_kdamond_restore(&ms_pool.kept[k]);
    }
    return ret;
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
        cached += ms_pool.slot[i].nr_fds;
    }
    return cached + want <= (uint64_t)rl.rlim_cur / 2;
}

static void pool_teardown(void)
{
    int i;

    all_off(ms_pool.base, MS_DAMON_SLOTS);
    rekeep_others();
    all_off(0, ms_pool.base);
    resize(ms_pool.base, NULL, 0);
    drop_kept();
    for (i = 0; i < MS_DAMON_SLOTS; i++) {
        drop_fds(&ms_pool.slot[i]);
    }
    memset(ms_pool.slot, 0, sizeof(ms_pool.slot));
    ms_host_reset();
    ms_memcg_reset();
    if (ms_pool.trace_tried) {
        ms_damon_trace_close(&ms_pool.trace);
    }
    ms_pool.trace_tried = 0;
    if (ms_pool.lockfd >= 0) {
        close(ms_pool.lockfd);
        ms_pool.lockfd = -1;
    }
}

static void pool_atexit(void)
{
    /* A forked child inherits the pool but must not tear down the parent's. */
    if (ms_pool.users > 0 && ms_pool.owner == getpid()) {
        pool_teardown();
        ms_pool.users = 0;
    }
}

/* Called with ms_pool.lock held. */
int ms_pool_get(char *err, size_t errlen)
{
    char path[512];
    uint64_t nr = 0;
    int ret;

    if (ms_pool.users++ > 0) {
        return 0;
    }
    snprintf(path, sizeof(path), "%s/kdamonds/nr_kdamonds", ms_paths.damon);
    if (access(path, W_OK) != 0) {
        ret = -errno;
        ms_err(err, errlen, "DAMON sysfs interface unusable (%s: %s)", path,
               strerror(errno));
        goto fail;
    }
    ms_pool.lockfd = open(ms_paths.damon, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ms_pool.lockfd < 0) {
        ret = -errno;
        ms_err(err, errlen, "cannot open %s to lock it: %s", ms_paths.damon,
               strerror(errno));
        goto fail;
    }
    if (flock(ms_pool.lockfd, LOCK_EX | LOCK_NB) != 0) {
        ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
        ms_err(err, errlen, "DAMON is in use by another memagg process "
               "(lock on %s held)", ms_paths.damon);
        goto fail;
    }
    /*
     * Other users' kdamonds are kept; whatever a memagg process that died
     * left running goes.
     */
    if (ms_read_u64_file(path, &nr, NULL, 0) == 0 && nr > 0) {
        if (nr > MAX_KDAMONDS_SEEN) {
            nr = MAX_KDAMONDS_SEEN;
        }
        ret = keep_others((int)nr, err, errlen);
        if (ret) {
            goto fail;
        }
        all_off(0, (int)nr);
    }
    ret = resize((uint64_t)ms_pool.base + MS_DAMON_SLOTS, err, errlen);
    if (ret) {
        goto fail;
    }
    memset(ms_pool.slot, 0, sizeof(ms_pool.slot));
    ms_slot_path(path, sizeof(path), 0, "contexts/nr_contexts");
    ret = ms_kwrite(path, "1", err, errlen);
    if (ret) {
        goto fail;
    }
    ms_pool.slot[0].has_ctx = 1;
    ms_pool.owner = getpid();
    raise_nofile();
    if (!ms_pool.exit_hook) {
        atexit(pool_atexit);
        ms_pool.exit_hook = 1;
    }
    return 0;
fail:
    drop_kept();
    ms_pool.users--;
    if (ms_pool.lockfd >= 0) {
        close(ms_pool.lockfd);
        ms_pool.lockfd = -1;
    }
    return ret;
}

/* Called with ms_pool.lock held. */
void ms_pool_put(void)
{
    if (--ms_pool.users == 0) {
        pool_teardown();
    }
}

int ms_damon_supported(const char *ops, char *reason, size_t len)
{
    char path[512], *buf;
    size_t blen;
    int ret = 0;

    pthread_mutex_lock(&ms_pool.lock);
    if (!ms_pool.avail_ops[0]) {
        ret = ms_pool_get(reason, len);
        if (ret == 0) {
            ms_slot_path(path, sizeof(path), 0, "contexts/0/avail_operations");
            ret = ms_read_file(path, &buf, &blen, reason, len);
            if (ret == 0) {
                snprintf(ms_pool.avail_ops, sizeof(ms_pool.avail_ops), "%.*s",
                         (int)(blen < 127 ? blen : 127), buf);
                free(buf);
            }
            ms_pool_put();
        }
    }
    pthread_mutex_unlock(&ms_pool.lock);
    if (ret) {
        return 0;
    }
    if (!ms_word_list_has(ms_pool.avail_ops, strlen(ms_pool.avail_ops), ops)) {
        ms_err(reason, len, "kernel DAMON lacks '%s' operations (has: %.*s)",
               ops, (int)strcspn(ms_pool.avail_ops, "\n"), ms_pool.avail_ops);
        return 0;
    }
    ms_err(reason, len, "DAMON sysfs with '%s' operations", ops);
    return 1;
}

/*
 * Mark a free slot used and return its index, or -EBUSY (the caller holds
 * ms_pool.lock and a reference of the pool, which this drops on failure).
 */
int ms_take_slot(char *err, size_t errlen)
{
    int i;

    for (i = 0; i < MS_DAMON_SLOTS && ms_pool.slot[i].used; i++) {
    }
    if (i == MS_DAMON_SLOTS) {
        ms_pool_put();
        ms_err(err, errlen, "all %d DAMON slots are in use", MS_DAMON_SLOTS);
        return -EBUSY;
    }
    ms_pool.slot[i].used = 1;
    return i;
}

int ms_damon_acquire(int *slot, char *err, size_t errlen)
{
    int ret;

    pthread_mutex_lock(&ms_pool.lock);
    ret = ms_pool_get(err, errlen);
    if (ret == 0) {
        ret = ms_take_slot(err, errlen);
        if (ret >= 0) {
            *slot = ret;
            ret = 0;
        }
    }
    pthread_mutex_unlock(&ms_pool.lock);
    return ret;
}

/* Stop slot i's kdamond and give the slot back; ms_pool.lock held. */
void ms_free_slot(int i)
{
    ms_damon_stop(i);
    drop_fds(&ms_pool.slot[i]);
    ms_pool.slot[i].used = 0;
    ms_pool.slot[i].configured = 0;
}

void ms_damon_release(int slot)
{
    pthread_mutex_lock(&ms_pool.lock);
    ms_free_slot(slot);
    ms_pool_put();
    pthread_mutex_unlock(&ms_pool.lock);
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
    if (ms_pool.slot[i].configured) {
        CTX_SET("schemes/0/apply_interval_us", sample_us);
        CTX_SET("schemes/1/apply_interval_us", sample_us);
    }
    ms_pool.slot[i].sample_us = sample_us;
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
    ms_slot_path(p, sizeof(p), i, rel);
    ret = ms_kwrite(p, "stat", err, errlen);
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
    struct slot *s = &ms_pool.slot[i];
    char p[512];
    int ret = 0;

    if (!s->has_ctx) {
        ms_slot_path(p, sizeof(p), i, "contexts/nr_contexts");
        ret = ms_kwrite(p, "1", err, errlen);
        if (ret) {
            return ret;
        }
        s->has_ctx = 1;
        s->nr_regions = 0;
        s->nr_regions_minmax = 0;
        drop_fds(s);
    }
    ms_slot_path(p, sizeof(p), i, "contexts/0/operations");
    ret = ms_kwrite(p, ops, err, errlen);
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
int ms_write_regions(int i, const uint64_t *starts, unsigned int n,
                     uint64_t size, uint64_t head_size, char *err,
                     size_t errlen)
{
    struct slot *s = &ms_pool.slot[i];
    char p[512], rel[64], text[32];
    uint64_t have = 0;
    unsigned int k;
    int dirfd, ret = 0;

    ms_slot_path(p, sizeof(p), i, "contexts/0/targets/0/regions/nr_regions");
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
    ms_slot_path(p, sizeof(p), i, "contexts/0/targets/0/regions");
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
    ms_slot_path(p, sizeof(p), i,
                 "contexts/0/monitoring_attrs/nr_regions/min");
    ret = kwrite_u64(err, errlen, n < 3 ? 3 : n, p);
    if (ret) {
        return ret;
    }
    ms_slot_path(p, sizeof(p), i,
                 "contexts/0/monitoring_attrs/nr_regions/max");
    ret = kwrite_u64(err, errlen, n < 3 ? 3 : n, p);
    s->nr_regions_minmax = ret ? 0 : (n < 3 ? 3 : n);
    return ret;
}

/*
 * What the slot remembers of its sysfs tree may be wrong after a failure:
 * region files whose directories were recreated (ENODEV on every write),
 * a half-written setup.  Forget it all, so the next start rebuilds the
 * context, its target and its regions from scratch.
 */
void ms_slot_forget(struct slot *s)
{
    drop_fds(s);
    s->has_ctx = 0;
    s->configured = 0;
    s->nr_regions = 0;
    s->nr_regions_minmax = 0;
}

int ms_start_slot(int i, const char *ops, pid_t pid,
                  const uint64_t *starts, unsigned int n, uint64_t size,
                  uint64_t sample_us, char *err, size_t errlen)
{
    struct slot *s = &ms_pool.slot[i];
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
    ret = ms_write_regions(i, starts, n, size, 0, err, errlen);
    if (ret) {
        return ret;
    }
    ms_slot_path(p, sizeof(p), i, "state");
    return ms_kwrite(p, "on", err, errlen);
}

int ms_damon_start(int i, const char *ops, pid_t pid,
                   const uint64_t *starts, unsigned int n, uint64_t size,
                   uint64_t sample_us, char *err, size_t errlen)
{
    struct slot *s = &ms_pool.slot[i];
    char p[512];
    uint64_t kpid = 0;
    int ret;

    ms_damon_stop(i);
    ret = ms_start_slot(i, ops, pid, starts, n, size, sample_us, err, errlen);
    if (ret) {
        ms_slot_forget(s);
        return ret;
    }
    s->running = 1;
    ms_slot_path(p, sizeof(p), i, "pid");
    if (ms_kread_u64(p, &kpid, NULL, 0) == 0) {
        /* A new thread every "on": all its CPU time is this period's. */
        s->kdamond_pid = (int)kpid;
    }
    return 0;
}

void ms_damon_stop(int i)
{
    char p[512];

    if (ms_pool.slot[i].running) {
        ms_slot_path(p, sizeof(p), i, "state");
        ms_kwrite(p, "off", NULL, 0);
        ms_pool.slot[i].running = 0;
    }
}
