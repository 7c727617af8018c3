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
 * The host's paddr kdamond, shared by the damon_paddr samplers.
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
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "damon_internal.h"
#include "ms.h"

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
    return host.slot >= 0 && ms_pool.slot[host.slot].running;
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
    int kpid = ms_pool.slot[host.slot].kdamond_pid, traced, ret;
    uint64_t *starts = NULL, bytes = 0;
    size_t n = 0, k;
    char p[512];

    *how = NULL;
    if (!ms_pool.trace_tried) {
        /* Without the instance, the directories answer (its reason is
         * not kept: the result's answer says "regions"). */
        ms_pool.trace_tried = 1;
        ms_damon_trace_open(&ms_pool.trace, NULL, 0);
    }
    traced = ms_pool.trace.dir[0] && kpid > 0 &&
             ms_damon_trace_start(&ms_pool.trace, kpid, 2 * host.watched_n,
                                  NULL, 0) == 0;
    if (traced) {
        ms_slot_path(p, sizeof(p), host.slot, "state");
        ret = ms_kwrite(p, "update_schemes_tried_bytes", err, errlen);
        /* Right after the walk: a later application adds regions
         * accessed since, which its total_bytes does not count. */
        traced = ms_damon_trace_stop(&ms_pool.trace, 0, &starts, &n, NULL,
                                     0) == 0;
        if (ret == 0) {
            ret = ms_own_tried_bytes(host.slot, &bytes, err, errlen);
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
    ms_slot_path(p, sizeof(p), host.slot, "state");
    ret = ms_kwrite(p, "update_schemes_tried_regions", err, errlen);
    if (ret == 0) {
        ret = ms_check_own_regions(host.slot, err, errlen);
    }
    if (ret == 0) {
        ret = ms_for_each_tried(host.slot, 0, fn, arg, err, errlen);
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
            ms_slot_path(p, sizeof(p), host.slot, "state");
            ret = ms_kwrite(p, "update_schemes_tried_bytes", err, errlen);
            if (ret == 0) {
                ret = ms_own_tried_bytes(host.slot, &bytes, err, errlen);
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
        cpu_s = (double)ms_thread_cpu_ns(
            ms_pool.slot[host.slot].kdamond_pid) / 1e9;
    }
    for (m = host.members; m; m = m->next) {
        if (m->watched && !m->answered) {
            m->answered = 1;
            m->marked = m != sole;
            m->answer = how;
            m->accessed_pages = m == sole ? bytes / MS_PAGE_SIZE : 0;
            m->kdamond_pid = host_running()
                             ? ms_pool.slot[host.slot].kdamond_pid : 0;
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
    ret = ms_start_slot(host.slot, "paddr", 0, regions, cap, MS_PAGE_SIZE,
                        sample_us, err, errlen);
    if (ret) {
        ms_slot_forget(&ms_pool.slot[host.slot]);
        return ret;
    }
    ms_pool.slot[host.slot].running = 1;
    ms_slot_path(p, sizeof(p), host.slot, "pid");
    ms_pool.slot[host.slot].kdamond_pid = 0;
    if (ms_kread_u64(p, &kpid, NULL, 0) == 0) {
        ms_pool.slot[host.slot].kdamond_pid = (int)kpid;
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
 * error for its collect().  Called with ms_pool.lock held.
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

    pthread_mutex_lock(&ms_pool.lock);
    ret = ms_pool_get(err, errlen);
    if (ret == 0 && host.slot < 0) {
        ret = ms_take_slot(err, errlen);
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
    pthread_mutex_unlock(&ms_pool.lock);
    return ret;
}

void ms_damon_leave(struct ms_damon_member *m)
{
    struct ms_damon_member **pp;

    pthread_mutex_lock(&ms_pool.lock);
    for (pp = &host.members; *pp && *pp != m; pp = &(*pp)->next) {
    }
    if (*pp) {
        *pp = m->next;
        if (!host.members) {
            ms_free_slot(host.slot);
            host.slot = -1;
            free(host.regions);
            host.regions = NULL;
        } else if (host_all_pending()) {
            /* The others were waiting for this one only. */
            host_commit(NULL, 0);
        }
        ms_pool_put();
    }
    pthread_mutex_unlock(&ms_pool.lock);
}

void ms_damon_arm(struct ms_damon_member *m, const uint64_t *starts,
                  unsigned int n, unsigned char *hit, uint64_t sample_us)
{
    pthread_mutex_lock(&ms_pool.lock);
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
    pthread_mutex_unlock(&ms_pool.lock);
}

void ms_damon_disarm(struct ms_damon_member *m)
{
    pthread_mutex_lock(&ms_pool.lock);
    m->armed = 0;
    m->pending = 0;
    m->answered = 1;
    pthread_mutex_unlock(&ms_pool.lock);
}

int ms_damon_commit(char *err, size_t errlen)
{
    struct ms_damon_member *m;
    int ret = 0, pending = 0, armed = 0;

    pthread_mutex_lock(&ms_pool.lock);
    for (m = host.members; m; m = m->next) {
        pending |= m->pending;
        armed |= m->armed;
    }
    /* Nothing new to watch, or a kdamond watching nobody any more. */
    if (pending || (!armed && host_running())) {
        ret = host_commit(err, errlen);
    }
    pthread_mutex_unlock(&ms_pool.lock);
    return ret;
}

int ms_damon_member_collect(struct ms_damon_member *m, int want_marks,
                            struct ms_damon_result *res, char *err,
                            size_t errlen)
{
    int ret = 0;

    pthread_mutex_lock(&ms_pool.lock);
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
    pthread_mutex_unlock(&ms_pool.lock);
    return ret;
}

int ms_damon_member_mark(struct ms_damon_member *m, char *err,
                         size_t errlen)
{
    struct marks mk = { m->starts, m->n, m->hit };
    int ret;

    pthread_mutex_lock(&ms_pool.lock);
    if (!m->watched || !host_running()) {
        ms_err(err, errlen, "the host's kdamond is not watching this "
               "sampler's pages");
        ret = -EINVAL;
    } else {
        memset(m->hit, 0, m->n);
        ret = host_regions(ms_mark_slot_region, &mk, &m->answer, err, errlen);
        m->marked = ret == 0;
    }
    pthread_mutex_unlock(&ms_pool.lock);
    return ret;
}

/* The pool is gone: so is the host's kdamond, and its members with it. */
void ms_host_reset(void)
{
    host.slot = -1;
    host.members = NULL;
    free(host.regions);
    host.regions = NULL;
    host.watched_n = 0;
    host.capacity = 0;
}
