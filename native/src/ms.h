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
 * memagg native sampler: internal interfaces.
 *
 * Every function that can fail returns 0 on success or a negative errno
 * value, and writes a one-line explanation into the caller's error buffer.
 */
#ifndef MEMAGG_MS_H
#define MEMAGG_MS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MS_PAGE_SIZE 4096ULL
#define MS_ERRLEN 256
#define MS_MAX_SAMPLES 1000000U

enum ms_backend {
    MS_PAGE_IDLE,
    MS_DAMON_PADDR,
    MS_DAMON_MEMCG,
    MS_DAMON_VADDR,
    MS_CLEAR_REFS,
    MS_NR_BACKENDS,
};

/* Kernel interface locations; tests point them at fixtures. */
struct ms_paths {
    char proc[128];         /* "/proc" */
    char page_idle[128];    /* "/sys/kernel/mm/page_idle/bitmap" */
    char damon[128];        /* "/sys/kernel/mm/damon/admin" */
    char kpageflags[128];   /* "/proc/kpageflags" */
    char tracing[128];      /* "/sys/kernel/tracing" */
};
extern struct ms_paths ms_paths;

/* ---- parse.c: pure parsers, fuzzed ---- */
struct ms_pagemap_entry {
    uint64_t pfn;           /* 0 when not present or hidden (no privilege) */
    int present;
    int swapped;
};
void ms_pagemap_decode(uint64_t raw, struct ms_pagemap_entry *e);
int ms_parse_u64(const char *buf, size_t len, uint64_t *out);
int ms_smaps_scan(const char *buf, size_t len, uint64_t start, uint64_t end,
                  uint64_t *referenced_kb, uint64_t *rss_kb);
int ms_word_list_has(const char *buf, size_t len, const char *word);
/* The memory cgroup of a /proc/PID/cgroup (v1 memory line, else v2). */
int ms_cgroup_memcg(const char *buf, size_t len, char *out, size_t outlen);
unsigned int ms_mark_range(const uint64_t *keys, unsigned int n,
                           uint64_t start, uint64_t end, unsigned char *marks);
/* A damon:damos_before_apply event, as a trace file prints it. */
struct ms_damos_event {
    uint32_t ctx;
    uint32_t scheme;
    uint64_t target;
    uint64_t start;
    uint64_t end;
    uint32_t nr_accesses;
};
int ms_damos_trace_line(const char *line, size_t len,
                        struct ms_damos_event *ev);

/* ---- util.c: small file helpers ---- */
int ms_write_file(const char *path, const char *text, char *err, size_t errlen);
int ms_read_file(const char *path, char **buf, size_t *len,
                 char *err, size_t errlen);
int ms_read_u64_file(const char *path, uint64_t *out, char *err, size_t errlen);
/* A file's contents, as ms_read_file gives them. */
typedef int (*ms_reader)(const char *path, char **buf, size_t *len,
                         char *err, size_t errlen);
/* The number a file holds, read with read (ms_read_u64_file: ms_read_file). */
int ms_read_u64_with(ms_reader read, const char *path, uint64_t *out,
                     char *err, size_t errlen);
void ms_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
double ms_now(void);
/* qsort's comparison of two uint64_t. */
int ms_cmp_u64(const void *a, const void *b);
/* Sort v[0..n) ascending with each value once; how many are left. */
size_t ms_sort_unique_u64(uint64_t *v, size_t n);
/*
 * The memory cgroup process pid's memory is charged to, as DAMON's memcg
 * filter names it; -EOPNOTSUPP when it is the root (shared with the host).
 */
int ms_pid_memcg(pid_t pid, char *out, size_t outlen, char *err,
                 size_t errlen);

/* ---- draw.c: random page choice ---- */
uint64_t ms_rand_next(uint64_t *state);
int ms_draw_pages(uint64_t *state, uint64_t nr_pages, unsigned int n,
                  uint64_t *out, unsigned int *nr_out);

/* ---- pagemap.c: bulk pagemap lookups ---- */
int ms_pagemap_read(int fd, const uint64_t *vpages, unsigned int n,
                    struct ms_pagemap_entry *out);

/* ---- thp.c: transparent huge pages under the samples ---- */
#define MS_KPF_THP 22
#define MS_KPF_ZERO_PAGE 24
#define MS_HUGE_PAGES 512       /* 4 KiB pages per 2 MiB huge page */
int ms_kpageflags_read(int fd, const uint64_t *pfns, unsigned int n,
                       uint64_t *flags);
int ms_pidfd_open(pid_t pid);
/* Split the huge pages holding these (sorted, one per huge page) pages. */
int ms_thp_split(int pidfd, const uint64_t *vpages, unsigned int n);
/* process_madvise(advice) over npages[i] pages from vpages[i] (1 if NULL). */
int ms_madvise_pages(int pidfd, const uint64_t *vpages,
                     const uint64_t *npages, unsigned int n, int advice);

/* ---- page_idle.c ---- */
int ms_idle_mark(int fd, const uint64_t *pfns, unsigned int n);
int ms_idle_read_accessed(int fd, const uint64_t *pfns, unsigned int n,
                          unsigned char *accessed);

/* ---- damon_trace.c: a kdamond's regions through its trace event ---- */
struct ms_damon_trace {
    char dir[256];              /* the tracefs instance; "" when closed */
    int enable_fd;              /* its damos_before_apply/enable */
    unsigned int buffer_kb;     /* its ring buffer per CPU, as set */
    int pid;                    /* the kdamond its events come from */
};
/* Make memagg's tracefs instance; -errno with the reason when it cannot. */
int ms_damon_trace_open(struct ms_damon_trace *t, char *err, size_t errlen);
void ms_damon_trace_close(struct ms_damon_trace *t);
/* Empty the instance and record the events of kdamond pid from now on,
 * with room for max_events of them. */
int ms_damon_trace_start(struct ms_damon_trace *t, int pid,
                         uint64_t max_events, char *err, size_t errlen);
/* Stop recording; *starts (malloc'd, sorted, each once) and *n: the starts
 * of the regions the scheme of index scheme was applied to.  -ENOSPC when
 * the ring buffer lost events. */
int ms_damon_trace_stop(struct ms_damon_trace *t, unsigned int scheme,
                        uint64_t **starts, size_t *n, char *err,
                        size_t errlen);

/* ---- damon_*.c: the DAMON sysfs slots shared by all samplers ---- */
struct ms_damon_result {
    /* damon_paddr: unless marked, the member's accessed pages' bytes */
    uint64_t accessed_bytes;
    int marked;                 /* damon_paddr: the member's hit is marked */
    double kdamond_cpu_s;
    int kdamond_pid;
    /* damon_paddr: how the kdamond answered: "count" (tried_bytes),
     * "trace" (its trace event) or "regions" (a directory each) */
    const char *answer;
};
int ms_damon_supported(const char *ops, char *reason, size_t len);
int ms_damon_acquire(int *slot, char *err, size_t errlen);
void ms_damon_release(int slot);
int ms_damon_start(int slot, const char *ops, pid_t pid,
                   const uint64_t *starts, unsigned int n, uint64_t size,
                   uint64_t sample_us, char *err, size_t errlen);
/*
 * accessed NULL: only the accessed bytes; otherwise also which of the n
 * regions (sorted starts, as given to ms_damon_start) were accessed.  The
 * kdamond keeps running: ms_damon_stop() ends the window.
 */
int ms_damon_collect(int slot, const uint64_t *starts, unsigned int n,
                     unsigned char *accessed, struct ms_damon_result *res,
                     char *err, size_t errlen);
void ms_damon_stop(int slot);

/*
 * A damon_paddr sampler, member of the host's one kdamond (see
 * damon_paddr.c).  The member's starts (sorted physical addresses) and hit
 * stay the sampler's, untouched by it from ms_damon_arm() until its
 * collect.
 */
struct ms_damon_member {
    struct ms_damon_member *next;
    const uint64_t *starts;
    unsigned int n;
    unsigned char *hit;         /* n: accessed since the member armed */
    uint64_t sample_us;
    /* Draw the pages anew (starts, n, hit) after DAMON refused them. */
    int (*redraw)(struct ms_damon_member *m, char *err, size_t errlen);
    int armed;                  /* its pages belong in the kdamond */
    int pending;                /* armed since the kdamond last restarted */
    int watched;                /* its pages are in the running kdamond */
    int answered;               /* it has the running kdamond's answer: */
    int marked;                 /* in hit, page by page, */
    uint64_t accessed_pages;    /* or else as a count (the sole member) */
    int error;                  /* its window was lost: errmsg says why */
    char errmsg[MS_ERRLEN];
    double cpu_s;               /* its share of the kdamond's CPU time */
    int kdamond_pid;
    const char *answer;         /* as in struct ms_damon_result */
};
int ms_damon_join(struct ms_damon_member *m, char *err, size_t errlen);
void ms_damon_leave(struct ms_damon_member *m);
/* Open the member's window; the kdamond restarts once all have armed. */
void ms_damon_arm(struct ms_damon_member *m, const uint64_t *starts,
                  unsigned int n, unsigned char *hit, uint64_t sample_us);
void ms_damon_disarm(struct ms_damon_member *m);
/* Restart the kdamond now for the members armed since its last restart. */
int ms_damon_commit(char *err, size_t errlen);
/*
 * End the member's window: hit marks its accessed pages, or (res->marked
 * 0: the kdamond watched this member alone and want_marks was 0)
 * res->accessed_bytes counts them.
 */
int ms_damon_member_collect(struct ms_damon_member *m, int want_marks,
                            struct ms_damon_result *res, char *err,
                            size_t errlen);
/*
 * The host kdamond's restarts so far: its members count their samples'
 * windows on it, so that they draw anew in the same period.
 */
unsigned int ms_damon_epoch(void);
/* After a collect() answered with a count: mark hit from the kdamond. */
int ms_damon_member_mark(struct ms_damon_member *m, char *err,
                         size_t errlen);

/*
 * A damon_memcg sampler, member of the host's kept-running kdamond (see
 * damon_memcg.c): counted by a scheme of its own whose ops filter is its
 * memory cgroup.  Its pages, staged at ms_memcg_stage(), are copied; the
 * kdamond takes them at the next commit, which a thread of damon_memcg.c
 * writes.
 */
struct ms_memcg_member {
    struct ms_memcg_member *next;
    pid_t pid;                  /* the process counted */
    char memcg[256];            /* its path in the memory hierarchy */
    uint64_t window_us;         /* the window it asks for */
    /* Private to damon_memcg.c. */
    uint64_t *starts;           /* the pages staged or committed */
    unsigned int n;
    int scheme;                 /* its scheme, -1 before its first commit */
    int begun;                  /* begun since the last commit asked */
    int refused;                /* DAMON refused its pages: draw anew */
    int staged;                 /* pages waiting for a commit */
    int committing;             /* in the commit being written */
    uint64_t good_from;         /* counting its pages from this window on */
    int based;                  /* base_* hold a window of its pages */
    int old;                    /* they are the pages before its draw, */
    uint64_t old_until;         /* up to this window (its commit's) */
    uint64_t base_window, base_passed;
    double base_cpu_s;
    int error;                  /* its pages were refused: errmsg says why */
    char errmsg[MS_ERRLEN];
};
struct ms_memcg_result {
    uint64_t accessed;          /* pages, mean over the windows */
    unsigned int windows;       /* new windows read (more: a period skipped) */
    int old_pages;              /* counted on its pages before its draw */
    double kdamond_cpu_s;       /* its share since its last collect */
    int kdamond_pid;
};
int ms_memcg_supported(char *reason, size_t len);
int ms_memcg_join(struct ms_memcg_member *m, char *err, size_t errlen);
void ms_memcg_leave(struct ms_memcg_member *m);
/* Its new pages (sorted physical addresses), for the next commit. */
int ms_memcg_stage(struct ms_memcg_member *m, const uint64_t *starts,
                   unsigned int n, char *err, size_t errlen);
/* Hand the staged pages to the commit thread (once per period at most). */
void ms_memcg_commit(void);
/* The member began its window: commit once every member has. */
void ms_memcg_begun(struct ms_memcg_member *m);
/* The kdamond counts the pages last staged (no commit pending). */
int ms_memcg_settled(struct ms_memcg_member *m);
/*
 * The newest windows the refreshed statistics hold since the member's last
 * collect (waiting one window at most).  Until a new draw's commit has
 * landed they count the pages before it (old_pages); -EAGAIN for the
 * window the commit landed in, which mixes both.
 */
int ms_memcg_collect(struct ms_memcg_member *m, struct ms_memcg_result *res,
                     char *err, size_t errlen);

/* ---- sampler.c ---- */
struct ms_result {
    unsigned int sampled;   /* pages drawn, the moved ones left out */
    unsigned int accessed;
    unsigned int present;   /* resident when the window began, not moved */
    unsigned int moved;     /* PFN backends: moved by the host, left out */
    double window_s;
    double kdamond_cpu_s;   /* < 0 when the backend has no kernel thread */
    int kdamond_pid;
    /* Huge page splitting at the window's begin() (thp.c), when on. */
    unsigned int split;     /* huge pages split */
    unsigned int huge;      /* samples left under a huge page (unsplit) */
    unsigned int zero;      /* samples at the zero page: counted idle */
    double split_s;         /* time spent on it */
    const char *answer;     /* damon_paddr: as in struct ms_damon_result */
};
/* sample_interval: DAMON's, in seconds; 0 lets the sampler pace it. */
struct ms_sampler;
extern const char *const ms_backend_names[MS_NR_BACKENDS];
int ms_backend_supported(enum ms_backend b, char *reason, size_t len);
int ms_sampler_open(struct ms_sampler **out, pid_t pid, uint64_t start,
                    uint64_t length, unsigned int n, int backend,
                    const uint64_t *seed, double sample_interval,
                    char *err, size_t errlen);
enum ms_backend ms_sampler_backend(const struct ms_sampler *s);
unsigned int ms_sampler_n(const struct ms_sampler *s);
/* The next begin() draws the pages anew rather than keep the sample. */
int ms_sampler_draws_next(const struct ms_sampler *s);
/* A new n takes effect at the next begin(), with a new draw. */
int ms_sampler_set_n(struct ms_sampler *s, unsigned int n, char *err,
                     size_t errlen);
/*
 * Split the transparent huge pages under the sampled pages at each draw,
 * so that their accessed bits are per 4 KiB page (thp.c); not for
 * clear_refs.  Needs /proc/kpageflags and CAP_SYS_NICE over the process.
 */
int ms_sampler_set_split_thp(struct ms_sampler *s, int on, char *err,
                             size_t errlen);
/*
 * Keep each sample's own result (host-side reclaim's cold set): damon_paddr
 * then always reads the accessed regions per page rather than a count.
 */
void ms_sampler_set_per_page(struct ms_sampler *s, int on);
/*
 * The page numbers of the samples the last collect() saw in place and
 * idle (accessed 0) or accessed (1), at most n; -ENODATA when it has no
 * result per sample (the backend counts only: damon_vaddr, clear_refs,
 * or per_page off).
 */
int ms_sampler_seen_pages(const struct ms_sampler *s, int accessed,
                          uint64_t *out, unsigned int *n_out);
/* Windows a drawn sample serves at most while its pages stay put. */
void ms_sampler_set_keep(struct ms_sampler *s, unsigned int windows);
int ms_sampler_begin(struct ms_sampler *s, char *err, size_t errlen);
int ms_sampler_collect(struct ms_sampler *s, struct ms_result *r,
                       char *err, size_t errlen);
void ms_sampler_close(struct ms_sampler *s);

#endif
