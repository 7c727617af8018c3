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
 * What the sampler's files share (sampler.c: drawing, windows and
 * collecting; sampler_recheck.c: the samples' PFNs read again at
 * collect()): the sampler itself and the recheck's functions.
 */
#ifndef MEMAGG_SAMPLER_INTERNAL_H
#define MEMAGG_SAMPLER_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include "ms.h"

/*
 * Reading pagemap again at collect() is the sampler's main cost (about
 * 1.5 us a page).  Above MS_RECHECK_MIN samples it first reads every
 * MS_RECHECK_STRIDE-th sample only (a different eighth each window); only
 * when one of those changed does it read them all.  A share q of changed
 * pages goes unseen with probability (1 - q)^(n / 8): below 1 % for q = 1 %
 * at n = 4,000, and what goes unseen then biases the window by at most q.
 * Every sample is read within MS_RECHECK_STRIDE windows of a kept sample.
 */
#define MS_RECHECK_STRIDE 8
#define MS_RECHECK_MIN 512

struct ms_sampler {
    pid_t pid;
    uint64_t start;
    uint64_t nr_pages;
    unsigned int n;
    enum ms_backend backend;
    uint64_t rng;
    uint64_t sample_us;
    int auto_interval;
    int pagemap_fd;
    int idle_fd;
    int damon_slot;             /* damon_vaddr: its own kdamond */
    int joined;                 /* damon_paddr: member of the host's */
    struct ms_damon_member member;
    int memcg_joined;           /* damon_memcg: member of the host's */
    struct ms_memcg_member mmember;
    double t_collected;         /* damon_memcg: the last collect() */
    /* damon_memcg: the sample its kdamond counts until a draw's commit. */
    unsigned int prev_keys, prev_present, prev_sampled;
    int prev_counted;           /* the last collect() counted on those */
    int begun;
    int kept;                   /* windows the current sample has served */
    unsigned int draw_epoch;    /* damon_paddr: ms_damon_epoch() at draw */
    unsigned int keep_windows;  /* at most; 1 draws anew every window */
    int unchanged;              /* last collect found every page in place */
    int split_thp;              /* split huge pages under samples (thp.c) */
    int per_page;               /* keep each sample's result (reclaim) */
    int idle_ok;                /* the last collect() has them in hit[] */
    int kpf_fd;                 /* /proc/kpageflags, when split_thp */
    int pidfd;                  /* the process, for process_madvise() */
    double t_begin;
    uint64_t *pages;            /* sampled page indexes, then vpage numbers */
    struct ms_pagemap_entry *entries;   /* at begin() */
    struct ms_pagemap_entry *now;       /* at collect() (PFN backends) */
    uint64_t *keys;             /* sorted distinct PFNs or addresses */
    unsigned int *key_of;       /* sample -> its PFN's key (PFN backends) */
    unsigned char *hit;         /* key -> accessed, when read per key */
    uint64_t *sub_pages;        /* the samples a quick recheck reads */
    struct ms_pagemap_entry *sub_now;
    uint64_t *kflags;           /* sample -> its page's kpageflags */
    unsigned char *zero;        /* sample -> at the zero page */
    unsigned int nr_split;      /* huge pages split at the last draw */
    unsigned int nr_huge;       /* samples under a huge page still */
    unsigned int nr_zero;       /* samples at the zero page */
    double split_s;
    unsigned int windows;       /* collected, to rotate the quick rechecks */
    unsigned int nr_sampled;
    unsigned int nr_present;
    unsigned int nr_keys;
    unsigned int nr_moved;      /* of the present, now at another PFN */
    unsigned int nr_vanished;   /* of the present, no longer present */
};

/*
 * Read pagemap again for the PFN backends (quickly: one sample in
 * MS_RECHECK_STRIDE first): of the samples present at begin(), count
 * those the host took or put elsewhere.  -EAGAIN when it moved more than
 * half of them.
 */
int ms_recheck_quick(struct ms_sampler *s, char *err, size_t errlen);
/* How many samples count once the moved ones are left out. */
unsigned int ms_samples_left(const struct ms_sampler *s);
/* The stable samples whose page was accessed, one by one (per key). */
unsigned int ms_count_stable(const struct ms_sampler *s);
/* Spread the distinct pages' count back over the samples sharing them. */
unsigned int ms_scale_to_samples(const struct ms_sampler *s,
                                 unsigned int accessed_keys);

#endif
