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
 * Internal to the export files: the registry (export.c), the request path
 * (export_io.c), the donor connections (peer.c), the .conf files
 * (persist.c), the rebuild of an adopted export (rebuild.c) and the
 * promotion of a slab to a donor (promote.c).  The
 * structures they share, and what each gives the others.
 */
#ifndef MEMAGG_SWAPD_EXPORT_INTERNAL_H
#define MEMAGG_SWAPD_EXPORT_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bitmap.h"
#include "confine.h"
#include "export_spec.h"
#include "ghost.h"
#include "hist.h"
#include "keywrap.h"
#include "ledger.h"
#include "local.h"
#include "nbd.h"
#include "seal.h"
#include "swapd.h"
#include "transport.h"
#include "util.h"

/* A failed connection to a donor is retried at most this often; so is a
 * rebuild that could not read from its donor. */
#define RECONNECT_INTERVAL_US 1000000ULL

struct peer {
    char endpoint[SD_ENDPOINT_MAX];
    const struct sd_transport *t;
    char host[256];
    uint16_t port;
    /* Submitters hold it shared; replacing a dead connection holds it
     * exclusively, so nobody submits to a connection being closed. */
    pthread_rwlock_t rw;
    struct sd_peer *conn;
    uint64_t last_attempt_us;
    struct peer *next;
};

/* What a tier's ledger counts (struct sd_export_tier). */
enum { LEDGER_PUTS, LEDGER_GETS, LEDGER_FLUSHES, LEDGER_MOVED_IN,
       LEDGER_MOVED_OUT, LEDGER_N };

struct sd_export {
    struct sd_exports *xs;
    struct sd_export_spec spec;
    char uuid[SD_UUID_STRLEN + 1];
    char name[64];
    char sock[PATH_MAX];
    char conf[PATH_MAX];
    struct sd_local lc;                 /* the local durability copy */
    struct sd_bitmap written;
    struct peer **peers;                /* per slab; NULL: no donor */
    uint8_t *degraded;                  /* per slab, for the counter */
    uint8_t *saved_local;               /* per slab, atomic: the .conf on
                                         * disk says it is local */
    uint8_t *saved_stale;               /* per slab, atomic: the .conf on
                                         * disk says it is stale */
    struct sd_nbd_server *nbd;
    uint64_t reads, writes, read_bytes, write_bytes;
    uint64_t remote_read_bytes, remote_write_bytes;
    uint64_t zero_reads, local_reads, remote_errors, auth_failures;
    uint64_t frame_auth_failures;
    uint32_t clients;
    struct sd_hist hist;
    struct sd_hist read_hist;                   /* reads alone */
    uint64_t ledger[SD_TIERS][LEDGER_N];        /* atomic; see ledger_add */
    /* Sealed exports: spec.page_key is usable once key_ready (atomic; an
     * adopted export waits for its key); bad holds the pages the rebuild
     * found altered on their donor, which fail to read until written. */
    struct sd_sealer sealer;
    int key_ready;
    struct sd_kw_offer *offer;          /* waiting: the pending private
                                         * key (x->lock) */
    uint8_t offer_pub[SD_KW_PUB_LEN];
    int nokey_warned;                   /* atomic */
    int sealer_ok;                      /* sealer is initialised */
    struct sd_bitmap bad;
    pthread_mutex_t lock;               /* ghost, conf file, spec.adopt and
                                         * spec.rebuilt */
    struct sd_ghost ghost;
    struct sd_export *next;

    /* An adopted export's rebuild (see rebuild.c).  The local copy
     * holds the current data of pages below rb_cursor and of fresh pages;
     * the others are on the donors only.  rb_cursor is the export's size
     * in pages once there is nothing to rebuild. */
    uint64_t rb_cursor;                 /* atomic; advanced under rb_lock */
    struct sd_bitmap fresh;             /* written or trimmed since the
                                         * adoption */
    uint64_t rb_partial;                /* writes in flight with a part of
                                         * a page the copy lacks */
    uint64_t rb_partial_gen;            /* such writes ever started */
    int rb_stop;
    pthread_mutex_t rb_lock;            /* the fields above */
    pthread_cond_t rb_cond;             /* rb_stop, rb_partial */
    pthread_t rb_thread;
    int rb_running;

    /* A promotion of slab promo_slab (SD_PROMO_NONE: none) to a donor
     * (see promote.c): a write to it marks its pages in promo_dirty (slab
     * pages) once they are in the local copy; while promo_hold, writes to
     * it wait in promo_held (linked by backend_priv).  Every request is
     * submitted under promo_rw shared. */
    uint32_t promo_slab;                /* atomic */
    int promo_hold;                     /* set under promo_rw exclusive */
    struct sd_bitmap promo_dirty;
    pthread_rwlock_t promo_rw;
    pthread_mutex_t promo_held_lock;
    struct sd_nbd_io *promo_held;
};

#define SD_PROMO_NONE UINT32_MAX

struct sd_exports {
    /* Half of PATH_MAX leaves room for the file names below them. */
    char conf_dir[PATH_MAX / 2];
    char export_dir[PATH_MAX / 2];
    struct sd_confine local;            /* <state_dir>/local: local copies */
    uid_t uid;
    gid_t gid;
    pthread_mutex_t lock;               /* the two lists */
    struct sd_export *exports;
    struct peer *peers;
};

#define COUNT(x, field, v) __atomic_fetch_add(&(x)->field, (v), \
                                              __ATOMIC_RELAXED)
#define LOAD(x, field) __atomic_load_n(&(x)->field, __ATOMIC_RELAXED)

/* The export of grant, or NULL. */
struct sd_export *sd_export_lookup(struct sd_exports *xs,
                                   const uint8_t grant[SD_UUID_LEN]);

/* ---- peer.c ---- */

/* The peer of endpoint, made on first use; called with xs->lock held. */
int sd_peer_get(struct sd_exports *xs, const char *endpoint,
                struct peer **out, char *err, size_t errlen);
/* Submit ios[0..n) to the peer, connecting first when it has no live
 * connection (at most once per RECONNECT_INTERVAL_US); 0, or -errno when
 * only the first *queued were queued. */
int sd_peer_submit(struct peer *p, struct sd_io **ios, size_t n,
                   size_t *queued);
/* sd_peer_submit, then wait until every queued io is done (their done and
 * priv are this call's); 0, or the first io's -errno (or the submit's). */
int sd_peer_submit_wait(struct peer *p, struct sd_io **ios, size_t n);
/* Close the connections of xs's peers and free them. */
void sd_peers_free(struct sd_exports *xs);

/* ---- persist.c ---- */

/* Write the export's table to its .conf file durably (temp file, fsync,
 * rename, fsync of the directory), with the state of its rebuild while it
 * is adopted and its stale slabs; then mark the slabs it saved as local
 * in saved_local, as stale in saved_stale.  Called with x->lock held. */
int sd_export_persist(struct sd_export *x);
/* Make sure the .conf on disk says slab is local, and stale, when it is,
 * saving the table when it does not yet: a write that skipped the slab's
 * donor, or its local copy, is acknowledged only then, or a restart would
 * read the slab's pages from the copy that missed it.  0 or -errno (the
 * table could not be saved). */
int sd_export_table_sync(struct sd_export *x, uint32_t slab);
/* The request line an export's .conf at path holds (malloc'd, without its
 * newline); 0 or -errno. */
int sd_export_read_conf(const char *path, char **line);

/* ---- rebuild.c ---- */

/* The rebuild of an adopted export's local copy: a thread's body (arg is
 * the export), which runs until nothing is left or sd_rebuild_stop. */
void *sd_rebuild_main(void *arg);
/* Stop the rebuild thread, if one runs, and wait for it. */
void sd_rebuild_stop(struct sd_export *x);

/* ---- where the rebuild is, and zeros from a donor: inline, as the
 * request path asks per page ---- */

/* 1 while an adopted export's rebuild has pages left. */
static inline int rebuilding(struct sd_export *x)
{
    return __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE) <
           x->written.pages;
}

/* Pages an adopted export's rebuild has still to go through: all of them
 * while it waits for EXPORT_REBUILD, 0 once there is nothing to rebuild. */
static inline uint64_t rebuild_left(struct sd_export *x)
{
    return x->written.pages -
           __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE);
}

/* Whether slab is served from the local copy (L2), not a donor (L1). */
static inline int slab_is_local(struct sd_export *x, uint32_t slab)
{
    return !__atomic_load_n(&x->peers[slab], __ATOMIC_RELAXED) ||
           __atomic_load_n(&x->spec.slabs[slab].local, __ATOMIC_RELAXED);
}

static inline int slab_tier(struct sd_export *x, uint32_t slab)
{
    return slab_is_local(x, slab) ? SD_L2 : SD_L1;
}

static inline void ledger_add(struct sd_export *x, int tier, int what,
                              uint64_t pages)
{
    __atomic_fetch_add(&x->ledger[tier][what], pages, __ATOMIC_RELAXED);
}

static inline uint64_t slab_pages(const struct sd_export *x)
{
    return x->spec.slab_size / SD_PAGE_SIZE;
}

/* The slab page p is in. */
static inline uint32_t page_slab(const struct sd_export *x, uint64_t p)
{
    return (uint32_t)(p / slab_pages(x));
}

/* The pages of slab that count as written. */
static inline uint64_t slab_stored(struct sd_export *x, uint32_t slab)
{
    return sd_bitmap_count_range(&x->written,
                                 (uint64_t)slab * slab_pages(x),
                                 slab_pages(x));
}

/* Slab's stored pages moved to tier to, from the other one. */
static inline void ledger_moved(struct sd_export *x, uint32_t slab, int to)
{
    uint64_t pages = slab_stored(x, slab);

    ledger_add(x, to, LEDGER_MOVED_IN, pages);
    ledger_add(x, to == SD_L1 ? SD_L2 : SD_L1, LEDGER_MOVED_OUT, pages);
}

/* Whether slab's local copy missed writes: its donor alone has them. */
static inline int slab_stale(struct sd_export *x, uint32_t slab)
{
    return __atomic_load_n(&x->spec.slabs[slab].stale, __ATOMIC_SEQ_CST);
}

/* Whether the local copy holds the current data of page p (or its zeros):
 * always but while an adopted export is rebuilt, and in a stale slab. */
static inline int local_has(struct sd_export *x, uint64_t p)
{
    return !slab_stale(x, page_slab(x, p)) &&
           (p < __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE) ||
            sd_bitmap_test(&x->fresh, p));
}

static inline int local_has_range(struct sd_export *x, uint64_t off,
                                  uint64_t len)
{
    uint64_t p;

    for (p = off / SD_PAGE_SIZE; p <= (off + len - 1) / SD_PAGE_SIZE; p++) {
        if (!local_has(x, p)) {
            return 0;
        }
    }
    return 1;
}

/* 1 when a page, or a page's seal, is all zeros: what a donor's memory
 * holds where nothing was written. */
static inline int page_is_zero(const char *page)
{
    const uint64_t *w = (const uint64_t *)page;
    size_t i;

    for (i = 0; i < SD_PAGE_SIZE / sizeof(*w); i++) {
        if (w[i]) {
            return 0;
        }
    }
    return 1;
}

static inline int seal_is_zero(const uint8_t *seal)
{
    int i;

    for (i = 0; i < SD_SEAL_LEN; i++) {
        if (seal[i]) {
            return 0;
        }
    }
    return 1;
}

/* ---- promote.c: called with promo_rw held shared ---- */

/* 1 when nio, a WRITE to the slab being switched, is held until the
 * promotion ends (it is submitted then); else 0. */
int sd_promote_hold(struct sd_export *x, struct sd_nbd_io *nio);
/* Bytes [off, off + len) are in the local copy now: the pages of the slab
 * being promoted among them are to be copied (again). */
void sd_promote_written(struct sd_export *x, uint64_t off, uint64_t len);

/* ---- export_io.c ---- */

/* The export's NBD backend (struct sd_nbd_backend's submit and clients;
 * ctx is the export). */
void sd_export_submit(void *ctx, struct sd_nbd_io **nios, size_t n);
void sd_export_clients(void *ctx, int delta);
/* A page of a sealed export from a donor did not open: count it, and log
 * the first and then every AUTH_LOG_EVERY-th with what became of it. */
void sd_export_auth_failed(struct sd_export *x, uint64_t page,
                           const char *then);

#endif
