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
 * The samples' PFNs read again at collect(), for the PFN backends
 * (page_idle, damon_paddr): a sample the host took during the window is
 * idle, one it moved to another PFN is left out (see sampler.c).
 */
#include <errno.h>
#include <string.h>

#include "ms.h"
#include "sampler_internal.h"

/* Spread the distinct pages' count back over the samples that share them. */
unsigned int ms_scale_to_samples(const struct ms_sampler *s,
                                 unsigned int accessed_keys)
{
    if (!s->nr_keys) {
        return 0;
    }
    if (accessed_keys > s->nr_keys) {
        accessed_keys = s->nr_keys;
    }
    return (unsigned int)(((uint64_t)accessed_keys * s->nr_present +
                           s->nr_keys / 2) / s->nr_keys);
}

/* Present at begin() and at the same PFN now: its accessed state counts. */
static int stable(const struct ms_sampler *s, unsigned int i)
{
    return s->entries[i].present && s->now[i].present &&
           s->now[i].pfn == s->entries[i].pfn;
}

/*
 * Read pagemap again for the PFN backends: of the samples present at
 * begin(), count those the host took (vanished) or put elsewhere (moved).
 */
static int recheck(struct ms_sampler *s, char *err, size_t errlen)
{
    unsigned int i;
    int ret;

    ret = ms_pagemap_read(s->pagemap_fd, s->pages, s->nr_sampled, s->now);
    if (ret) {
        ms_err(err, errlen, "cannot read pagemap of process %d: %s",
               (int)s->pid, strerror(-ret));
        return ret;
    }
    s->nr_moved = 0;
    s->nr_vanished = 0;
    s->unchanged = 1;
    for (i = 0; i < s->nr_sampled; i++) {
        if (s->now[i].present != s->entries[i].present ||
            s->now[i].pfn != s->entries[i].pfn) {
            s->unchanged = 0;
        }
        if (!s->entries[i].present || s->zero[i]) {
            continue;
        }
        if (!s->now[i].present) {
            s->nr_vanished++;
        } else if (!s->now[i].pfn) {
            ms_err(err, errlen, "pagemap of process %d hides PFNs: "
                   "CAP_SYS_ADMIN is needed", (int)s->pid);
            return -EPERM;
        } else if (s->now[i].pfn != s->entries[i].pfn) {
            s->nr_moved++;
        }
    }
    if ((uint64_t)s->nr_moved * 2 > s->nr_present) {
        s->unchanged = 0;
        ms_err(err, errlen, "the host moved %u of %u sampled pages during "
               "the window (compaction or migration)", s->nr_moved,
               s->nr_present);
        return -EAGAIN;
    }
    return 0;
}

/*
 * The quick recheck: one sample in MS_RECHECK_STRIDE read again.  When all
 * of those are as they were, the window counts as unchanged, every sample
 * stable; otherwise every sample is read (recheck()).
 */
int ms_recheck_quick(struct ms_sampler *s, char *err, size_t errlen)
{
    unsigned int i, m = 0, off = s->windows % MS_RECHECK_STRIDE;
    int ret;

    if (s->nr_sampled < MS_RECHECK_MIN) {
        return recheck(s, err, errlen);
    }
    for (i = off; i < s->nr_sampled; i += MS_RECHECK_STRIDE) {
        s->sub_pages[m++] = s->pages[i];
    }
    ret = ms_pagemap_read(s->pagemap_fd, s->sub_pages, m, s->sub_now);
    if (ret) {
        ms_err(err, errlen, "cannot read pagemap of process %d: %s",
               (int)s->pid, strerror(-ret));
        return ret;
    }
    for (i = 0; i < m; i++) {
        const struct ms_pagemap_entry *was =
            &s->entries[off + i * MS_RECHECK_STRIDE];

        if (s->sub_now[i].present != was->present ||
            s->sub_now[i].pfn != was->pfn) {
            return recheck(s, err, errlen);
        }
    }
    memcpy(s->now, s->entries, sizeof(*s->now) * s->nr_sampled);
    s->nr_moved = 0;
    s->nr_vanished = 0;
    s->unchanged = 1;
    return 0;
}

/*
 * How many samples count once the moved ones are left out.  A moved page
 * was in use at both ends of the window, like the k samples present at
 * begin() and at collect(); the m moved ones are m / k of those, so the n
 * drawn pages count for n (k - m) / k, and accessed / sampled estimates
 * the same share as without moves.  n - m would lower it: the moved pages
 * are all in use, not a share of every kind of page drawn.
 */
unsigned int ms_samples_left(const struct ms_sampler *s)
{
    uint64_t n = s->nr_sampled, m = s->nr_moved;
    uint64_t k = s->nr_present - s->nr_vanished;

    if (!m) {
        return s->nr_sampled;
    }
    return (unsigned int)((n * (k - m) * 2 + k) / (2 * k));
}

/* The stable samples whose page was accessed, one by one (per key). */
unsigned int ms_count_stable(const struct ms_sampler *s)
{
    unsigned int i, accessed = 0;

    for (i = 0; i < s->nr_sampled; i++) {
        if (stable(s, i) && s->key_of[i] < s->nr_keys &&
            s->hit[s->key_of[i]]) {
            accessed++;
        }
    }
    return accessed;
}

int ms_sampler_seen_pages(const struct ms_sampler *s, int accessed,
                          uint64_t *out, unsigned int *n_out)
{
    unsigned int i, m = 0;

    if (!s->idle_ok) {
        return -ENODATA;
    }
    for (i = 0; i < s->nr_sampled; i++) {
        if (stable(s, i) && s->key_of[i] < s->nr_keys &&
            !s->hit[s->key_of[i]] == !accessed) {
            out[m++] = s->pages[i];
        }
    }
    *n_out = m;
    return 0;
}
