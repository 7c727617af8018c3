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
 * damon_memcg: the host's kept-running kdamond, counted per cgroup.
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
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "damon_internal.h"
#include "ms.h"

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
    ms_slot_path(p, sizeof(p), mh.slot, rel);
    return ms_read_u64_file(p, out, err, errlen);
}

/*
 * Probe an unused slot for what damon_memcg needs: the kdamond's
 * refresh_ms and a scheme's ops_filters taking the memcg type.  Called
 * with ms_pool.lock held and a reference of the pool.
 */
static int memcg_probe_slot(char *reason, size_t len)
{
    char p[512];
    int i, ret;

    for (i = 0; i < MS_DAMON_SLOTS && ms_pool.slot[i].used; i++) {
    }
    if (i == MS_DAMON_SLOTS) {
        ms_err(reason, len, "all %d DAMON slots are in use", MS_DAMON_SLOTS);
        return 0;
    }
    ms_slot_path(p, sizeof(p), i, "refresh_ms");
    if (access(p, W_OK) != 0) {
        ms_err(reason, len, "kernel DAMON has no kdamond refresh_ms (%s): "
               "statistics cannot be read without a command per window", p);
        return 0;
    }
    ms_slot_path(p, sizeof(p), i, "contexts/nr_contexts");
    ret = ms_kwrite(p, "1", reason, len);
    if (ret == 0) {
        ms_pool.slot[i].has_ctx = 1;
        ms_pool.slot[i].configured = 0;
        ms_slot_path(p, sizeof(p), i, "contexts/0/schemes/nr_schemes");
        ret = ms_kwrite(p, "1", reason, len);
    }
    if (ret == 0) {
        ms_slot_path(p, sizeof(p), i,
                     "contexts/0/schemes/0/ops_filters/nr_filters");
        if (access(p, W_OK) != 0) {
            ms_err(reason, len, "kernel DAMON has no ops_filters in its "
                   "schemes (%s)", p);
            ret = -ENOENT;
        } else {
            ret = ms_kwrite(p, "1", reason, len);
        }
    }
    if (ret == 0) {
        ms_slot_path(p, sizeof(p), i,
                     "contexts/0/schemes/0/ops_filters/0/type");
        if (ms_kwrite(p, "memcg", NULL, 0) != 0) {
            ms_err(reason, len, "kernel DAMON has no ops filter of type "
                   "memcg");
            ret = -EINVAL;
        }
    }
    ms_slot_path(p, sizeof(p), i, "contexts/0/schemes/nr_schemes");
    ms_kwrite(p, "0", NULL, 0);
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
    pthread_mutex_lock(&ms_pool.lock);
    if (!memcg_probe.checked && ms_pool_get(why, sizeof(why)) == 0) {
        memcg_probe.ok = memcg_probe_slot(memcg_probe.reason,
                                          sizeof(memcg_probe.reason));
        memcg_probe.checked = 1;
        ms_pool_put();
    } else if (!memcg_probe.checked) {
        snprintf(memcg_probe.reason, sizeof(memcg_probe.reason), "%s", why);
    }
    ok = memcg_probe.ok;
    ms_err(reason, len, "%s", memcg_probe.reason);
    pthread_mutex_unlock(&ms_pool.lock);
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
        ms_slot_path(p, sizeof(p), i, rel); \
        ret = ms_kwrite(p, (text), err, errlen); \
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
    struct slot *s = &ms_pool.slot[mh.slot];
    uint64_t w = memcg_wanted_window();
    unsigned int k;
    char p[512];
    int i = mh.slot, ret = 0;

    if (!s->has_ctx || !s->configured || mh.rewrite || fresh) {
        ms_slot_forget(s);
        ms_slot_path(p, sizeof(p), i, "contexts/nr_contexts");
        ret = ms_kwrite(p, "1", err, errlen);
        if (ret) {
            return ret;
        }
        s->has_ctx = 1;
        ms_slot_path(p, sizeof(p), i, "contexts/0/operations");
        ret = ms_kwrite(p, "paddr", err, errlen);
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
        ms_slot_path(p, sizeof(p), i, "refresh_ms");
        ret = ms_kwrite(p, "1", err, errlen);
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
    return ms_write_regions(i, mh.regions, mh.nr_regions, MS_PAGE_SIZE,
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
 * by the commit thread with ms_pool.lock held, which it drops while the
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
        ms_slot_path(p, sizeof(p), mh.slot, "state");
        if (ret == 0 && fresh) {
            ret = ms_kwrite(p, "on", err, sizeof(err));
        } else if (ret == 0) {
            pthread_mutex_unlock(&ms_pool.lock);
            ret = ms_kwrite(p, "commit", err, sizeof(err));
            pthread_mutex_lock(&ms_pool.lock);
        }
        if (ret == 0) {
            break;
        }
        if (ret == -ENODEV || ret == -ENOENT) {
            /* Its files went stale (recreated): all written again. */
            ms_slot_forget(&ms_pool.slot[mh.slot]);
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
        ms_pool.slot[mh.slot].running = 1;
        ms_slot_path(p, sizeof(p), mh.slot, "pid");
        mh.kdamond_pid = ms_kread_u64(p, &kpid, NULL, 0) == 0
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
    pthread_mutex_lock(&ms_pool.lock);
    while (!mh.stop) {
        if (!mh.want) {
            pthread_cond_wait(&mh.cond, &ms_pool.lock);
            continue;
        }
        mh.want = 0;
        memcg_commit_locked();
        pthread_cond_broadcast(&mh.cond);
    }
    pthread_mutex_unlock(&ms_pool.lock);
    return NULL;
}

int ms_memcg_join(struct ms_memcg_member *m, char *err, size_t errlen)
{
    struct ms_memcg_member *o;
    int ret;

    pthread_mutex_lock(&ms_pool.lock);
    /* Its scheme would count every page of the cgroup: the other's too. */
    for (o = mh.members; o; o = o->next) {
        if (strcmp(o->memcg, m->memcg) == 0) {
            ms_err(err, errlen, "another damon_memcg sampler counts memory "
                   "cgroup %s", m->memcg);
            pthread_mutex_unlock(&ms_pool.lock);
            return -EEXIST;
        }
    }
    ret = ms_pool_get(err, errlen);
    if (ret == 0 && mh.slot < 0) {
        ret = ms_take_slot(err, errlen);
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
                ms_pool.slot[mh.slot].used = 0;
                mh.slot = -1;
                free(mh.schemes);
                mh.schemes = NULL;
                ms_pool_put();
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
    pthread_mutex_unlock(&ms_pool.lock);
    return ret;
}

void ms_memcg_leave(struct ms_memcg_member *m)
{
    struct ms_memcg_member **pp;
    pthread_t thread;

    pthread_mutex_lock(&ms_pool.lock);
    for (pp = &mh.members; *pp && *pp != m; pp = &(*pp)->next) {
    }
    if (!*pp) {
        pthread_mutex_unlock(&ms_pool.lock);
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
        ms_pool_put();
        pthread_mutex_unlock(&ms_pool.lock);
        return;
    }
    mh.stop = 1;
    thread = mh.thread;
    pthread_cond_broadcast(&mh.cond);
    pthread_mutex_unlock(&ms_pool.lock);
    /* A commit under way ends with the kdamond's window. */
    pthread_join(thread, NULL);
    pthread_mutex_lock(&ms_pool.lock);
    if (mh.slot >= 0) {
        ms_free_slot(mh.slot);
    }
    mh.thread_on = 0;
    ms_memcg_reset();
    ms_pool_put();
    pthread_mutex_unlock(&ms_pool.lock);
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
    pthread_mutex_lock(&ms_pool.lock);
    free(m->starts);
    m->starts = copy;
    m->n = n;
    m->staged = 1;
    /* Its windows go on counting the pages before, until the commit. */
    m->old = m->based;
    m->old_until = UINT64_MAX;
    m->error = 0;
    pthread_mutex_unlock(&ms_pool.lock);
    return 0;
}

void ms_memcg_commit(void)
{
    struct ms_memcg_member *m;
    int want = 0;

    pthread_mutex_lock(&ms_pool.lock);
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
    pthread_mutex_unlock(&ms_pool.lock);
}

int ms_memcg_settled(struct ms_memcg_member *m)
{
    int settled;

    pthread_mutex_lock(&ms_pool.lock);
    settled = !m->staged && !m->committing;
    pthread_mutex_unlock(&ms_pool.lock);
    return settled;
}

void ms_memcg_begun(struct ms_memcg_member *m)
{
    struct ms_memcg_member *o;
    int all = 1;

    pthread_mutex_lock(&ms_pool.lock);
    m->begun = 1;
    for (o = mh.members; o; o = o->next) {
        all &= o->begun;
    }
    pthread_mutex_unlock(&ms_pool.lock);
    if (all) {
        ms_memcg_commit();
    }
}

/*
 * Reject the windows of a kdamond that watched regions memagg did not set
 * (FOREIGN_SCHEME): every member counts again from the next commit, which
 * writes every file again.  Called with ms_pool.lock held.
 */
static int memcg_check_foreign(uint64_t foreign, char *err, size_t errlen)
{
    struct ms_memcg_member *m;

    if (foreign <= mh.foreign_seen) {
        return 0;
    }
    ms_err(err, errlen, "window rejected: the kdamond (kdamonds/%d, pid %d) "
           "watched %llu bytes in regions memagg did not set (their sysfs "
           "files were rewritten by another DAMON user)",
           ms_pool.base + mh.slot, mh.kdamond_pid,
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
    pthread_mutex_lock(&ms_pool.lock);
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
        cpu_s = (double)ms_thread_cpu_ns(mh.kdamond_pid) / 1e9;
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
        pthread_mutex_unlock(&ms_pool.lock);
        nanosleep(&(struct timespec){ 0, MEMCG_POLL_NS }, NULL);
        pthread_mutex_lock(&ms_pool.lock);
    }
    pthread_mutex_unlock(&ms_pool.lock);
    return ret;
}

/* The pool is gone: so is the kept-running kdamond. */
void ms_memcg_reset(void)
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
