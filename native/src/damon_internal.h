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
 * Internal to the DAMON files: the pool of kdamond slots and the lock on
 * the sysfs tree (damon_pool.c), a kdamond's answers (damon_answer.c), the
 * host's paddr kdamond shared by its members (damon_paddr.c) and the
 * damon_memcg backend's kept-running kdamond (damon_memcg.c).  The pool
 * they share, and what each gives the others.
 */
#ifndef MEMAGG_DAMON_INTERNAL_H
#define MEMAGG_DAMON_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ms.h"

#define MS_DAMON_SLOTS 64
/* Kdamonds of other DAMON users kept while memagg has its pool. */
#define MS_DAMON_KEPT 16
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

/* A kdamond of another DAMON user: its writable files and what they held,
 * in the order to write them back (damon_share.c). */
struct kept_kdamond {
    int index;
    int on;
    char **rel;
    char **val;
    unsigned int n;
    unsigned int cap;
};

/* The slots; its lock also guards damon_paddr.c's and damon_memcg.c's
 * state. */
struct pool {
    pthread_mutex_t lock;
    int users;
    int lockfd;
    pid_t owner;
    int exit_hook;
    char avail_ops[128];
    /* Slot i is kdamond base + i: those below are other users'. */
    int base;
    struct kept_kdamond kept[MS_DAMON_KEPT];
    int nr_kept;
    struct slot slot[MS_DAMON_SLOTS];
    /* The host kdamond's answers through its trace event, when tracefs
     * offers it (tried once per pool; open while trace.dir is set). */
    struct ms_damon_trace trace;
    int trace_tried;
};
extern struct pool ms_pool;

/* In a function with slot i, int ret, err and errlen: write or return. */
#define CTX_SET(rel, val) do { \
        ret = ms_ctx_write_u64(i, (rel), (val), err, errlen); \
        if (ret) { \
            return ret; \
        } \
    } while (0)

/* ---- damon_pool.c ---- */

/* ms_write_file, retried while DAMON's sysfs is busy with another command. */
int ms_kwrite(const char *path, const char *text, char *err, size_t errlen);
/* ms_read_file and ms_read_u64_file, retried the same way: a kdamond's state
 * and pid answer EBUSY while any DAMON command runs (another DAMON user's
 * too), which is no answer. */
int ms_kread(const char *path, char **buf, size_t *len, char *err,
             size_t errlen);
int ms_kread_u64(const char *path, uint64_t *out, char *err, size_t errlen);
/* The path of rel under the directory of kdamond slot. */
void ms_slot_path(char *buf, size_t len, int slot, const char *rel);
/* Write number v to contexts/0/<rel> of kdamond slot i. */
int ms_ctx_write_u64(int i, const char *rel, uint64_t v, char *err,
                     size_t errlen);
/* Take and drop a reference of the pool (made on the first, torn down
 * with the last); called with ms_pool.lock held. */
int ms_pool_get(char *err, size_t errlen);
void ms_pool_put(void);
/* A free slot marked used, or -EBUSY (dropping the caller's reference);
 * ms_pool.lock held. */
int ms_take_slot(char *err, size_t errlen);
/* Stop slot i's kdamond and give the slot back; ms_pool.lock held. */
void ms_free_slot(int i);
/* Forget what the slot knows of its sysfs files: the next start writes
 * them all. */
void ms_slot_forget(struct slot *s);
/* Set slot i up (what changed only) and turn its kdamond on. */
int ms_start_slot(int i, const char *ops, pid_t pid,
                  const uint64_t *starts, unsigned int n, uint64_t size,
                  uint64_t sample_us, char *err, size_t errlen);
/* Region k is [starts[k], starts[k] + size), region 0 head_size long. */
int ms_write_regions(int i, const uint64_t *starts, unsigned int n,
                     uint64_t size, uint64_t head_size, char *err,
                     size_t errlen);

/* ---- damon_share.c ---- */

/* Whether kdamond index (not slot) runs. */
int ms_kdamond_is_on(int index);
/* Whether it holds a set-up of another DAMON user (memagg's have an update
 * interval of AGGR_US). */
int ms_kdamond_is_others(int index);
/* Read its writable files into k (freed on failure). */
int ms_kdamond_save(int index, struct kept_kdamond *k, char *err,
                    size_t errlen);
/* Write them back and turn it on if it was: how many writes failed. */
int ms_kdamond_restore(const struct kept_kdamond *k);
void ms_kdamond_free(struct kept_kdamond *k);

/* ---- damon_answer.c ---- */

/* Nanoseconds the thread has spent on a CPU, from /proc/PID/schedstat. */
uint64_t ms_thread_cpu_ns(int pid);
/* Call fn(start, end, arg) for each region the scheme of slot i tried. */
int ms_for_each_tried(int i, int scheme,
                      void (*fn)(uint64_t, uint64_t, void *),
                      void *arg, char *err, size_t errlen);
/* After an update_schemes_tried_* command on slot i: -EAGAIN when its
 * kdamond watched regions memagg did not set (FOREIGN_SCHEME). */
int ms_check_own_regions(int i, char *err, size_t errlen);
/* The same check, then *bytes: the bytes of the regions its scheme 0
 * matched. */
int ms_own_tried_bytes(int i, uint64_t *bytes, char *err, size_t errlen);
/* ms_mark_slot_region's arg: which of n regions (sorted starts) were
 * accessed. */
struct marks {
    const uint64_t *starts;
    unsigned int n;
    unsigned char *accessed;
};
void ms_mark_slot_region(uint64_t start, uint64_t end, void *arg);

/* ---- damon_paddr.c, damon_memcg.c ---- */

/* The pool was torn down: forget the host's kdamond, the kept-running one
 * and their members. */
void ms_host_reset(void);
void ms_memcg_reset(void);

#endif
