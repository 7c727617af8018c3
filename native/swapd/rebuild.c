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
 * Adoption: rebuilding the local copy of an adopted export from the
 * donors.
 *
 * An adopted export starts with an empty local copy and every page counted
 * as written, so reads go to the donors, which hold every page the source
 * host wrote (it flushed before handing the VM over; donor memory never
 * written reads as zeros).  It stays so, serving the guest's I/O as below,
 * until EXPORT_REBUILD (sd_exports_rebuild) starts the rebuild: during
 * the live migration the rebuild's reads and writes would slow the copy
 * of the guest's memory, so the migration's finish asks for it once the
 * guest runs here.  The .conf says rebuild_started=0 until then.
 *
 * The rebuild is a thread that walks the export in REBUILD_CHUNK
 * steps (rb_cursor): it reads a chunk from its donor and, under rb_lock,
 * writes its non-zero pages to the local copy, unmarks its zero pages as
 * written (they stay holes) and moves rb_cursor past it.  After each slab
 * it syncs the copy and saves rebuilt=<slabs> in the .conf; the last slab
 * turns the export into an ordinary one.
 *
 * Guest I/O meanwhile (see adopt_write and do_trim in export_io.c): a
 * write or trim marks its whole pages fresh under rb_lock before it
 * touches the local copy, and the rebuild skips fresh pages under the
 * same lock when it writes.
 * Either the guest marks a page first, and the rebuild leaves it alone, or
 * the rebuild writes it first (under the lock, so before the guest marks
 * it), and the guest's own write of the local copy comes later and wins:
 * the donor's older copy never ends up over a page written here.
 *
 * A write of part of a page the copy lacks cannot be written there alone
 * (the rest of the page is on the donor): it goes to the donor only, and
 * the rebuild, which then copies the page, refuses a chunk read while
 * such a write ran (rb_partial, rb_partial_gen) and reads it again.
 *
 * A restart restores a waiting export as waiting (rebuild_started=0).  A
 * restart mid-rebuild restores the export as adopted from rebuilt=:
 * pages below it are the copy's data extents, as for any export; above
 * it every page counts as written again and the copy's data extents are
 * fresh (written here, or copied past the last save: the current data
 * either way, as the copy is never written there otherwise).  No page
 * written reads as zeros, and the rebuild resumes at the saved slab.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "export_internal.h"
#include "seal.h"
#include "transport.h"
#include "util.h"

/* An adopted export's rebuild reads this much at a time (within a slab),
 * in ios of REBUILD_IO (an RDMA staging slot) sent together. */
#define REBUILD_CHUNK (1U << 20)
#define REBUILD_IO (128U << 10)
/* A rebuild waiting for its donor says so again after this many tries. */
#define REBUILD_LOG_EVERY 60

/* Sleep us, or less when the rebuild is stopped; 1 when it is. */
static int rb_sleep(struct sd_export *x, uint64_t us)
{
    struct timespec ts;
    int stop;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(us / 1000000);
    ts.tv_nsec += (long)(us % 1000000) * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&x->rb_lock);
    while (!x->rb_stop &&
           pthread_cond_timedwait(&x->rb_cond, &x->rb_lock, &ts) !=
           ETIMEDOUT) {
        continue;               /* woken for rb_partial, or spuriously */
    }
    stop = x->rb_stop;
    pthread_mutex_unlock(&x->rb_lock);
    return stop;
}

/* What the rebuild found in a page of a sealed export's chunk. */
enum { RB_PAGE_OK, RB_PAGE_BAD };

/* One chunk read from a donor: its ios. */
struct rb_fetch {
    struct sd_io io[REBUILD_CHUNK / REBUILD_IO];
    /* Sealed exports: the chunk's seals, and each page's verdict. */
    uint8_t seals[REBUILD_CHUNK / SD_PAGE_SIZE * SD_SEAL_LEN];
    uint8_t state[REBUILD_CHUNK / SD_PAGE_SIZE];
};

/* Read [off, off + len) of the export, inside one slab, from the slab's
 * donor into buf; 0 or -errno. */
static int rb_fetch(struct sd_export *x, struct rb_fetch *f, uint64_t off,
                    uint32_t len, char *buf)
{
    uint32_t slab = sd_slab_of(off, x->spec.slab_size), i;
    unsigned n = (len + REBUILD_IO - 1) / REBUILD_IO;
    struct sd_io *ios[REBUILD_CHUNK / REBUILD_IO];

    for (i = 0; i < n; i++) {
        struct sd_io *io = &f->io[i];

        memset(io, 0, sizeof(*io));
        io->op = SD_OP_READ;
        memcpy(io->grant, x->spec.grant, SD_UUID_LEN);
        memcpy(io->key, x->spec.key, SD_KEY_LEN);
        io->slab = slab;
        io->remote_addr = x->spec.slabs[slab].addr;
        io->offset = off - (uint64_t)slab * x->spec.slab_size +
                     (uint64_t)i * REBUILD_IO;
        io->len = len - i * REBUILD_IO < REBUILD_IO ? len - i * REBUILD_IO
                                                    : REBUILD_IO;
        io->buf = buf + (size_t)i * REBUILD_IO;
        if (x->spec.seal) {
            io->seals = f->seals + (size_t)i * (REBUILD_IO / SD_PAGE_SIZE) *
                        SD_SEAL_LEN;
        }
        ios[i] = io;
    }
    return sd_peer_submit_wait(x->peers[slab], ios, n);
}

/* Open the pages of a sealed export's chunk [off, off + len) read by the
 * rebuild, in place, each page's verdict in f->state.  A page with
 * neither data nor seal is one the source never wrote (zeros); a fresh
 * page is left to the rebuild to skip. */
static void rb_open(struct sd_export *x, struct rb_fetch *f, uint64_t off,
                    uint32_t len, char *buf)
{
    uint64_t first = off / SD_PAGE_SIZE, n = len / SD_PAGE_SIZE, i, bad;

    for (i = 0; i < n; i++) {
        char *page = buf + i * SD_PAGE_SIZE;
        const uint8_t *seal = f->seals + i * SD_SEAL_LEN;

        f->state[i] = RB_PAGE_OK;
        if ((seal_is_zero(seal) && page_is_zero(page)) ||
            sd_bitmap_test(&x->fresh, first + i)) {
            continue;
        }
        if (sd_open_pages(x->spec.page_key, x->spec.grant, first + i, page,
                          seal, 1, &bad)) {
            f->state[i] = RB_PAGE_BAD;
            sd_export_auth_failed(x, first + i, "the rebuild leaves it out "
                                  "of the local copy and reads of it fail "
                                  "with EIO until the guest writes it again");
        }
    }
}

/* Whether page i of the chunk read from the donor (buf) goes into the
 * local copy: not fresh, not found altered, not zeros. */
static int rb_wanted(struct sd_export *x, uint64_t first, uint64_t i,
                     const char *buf, const uint8_t *state)
{
    return !sd_bitmap_test(&x->fresh, first + i) &&
           !(state && state[i] == RB_PAGE_BAD) &&
           !page_is_zero(buf + i * SD_PAGE_SIZE);
}

/* Put the chunk [off, off + len) read from the donor (buf) into the local
 * copy, but for its fresh pages, and move rb_cursor past it.  -EAGAIN when
 * a write of part of a page may have raced the read (gen: rb_partial_gen
 * before it): read it again.  -errno when the copy cannot be written. */
static int rb_commit(struct sd_export *x, uint64_t off, uint32_t len,
                     const char *buf, const uint8_t *state, uint64_t gen,
                     uint64_t *copied)
{
    uint64_t first = off / SD_PAGE_SIZE, n = len / SD_PAGE_SIZE, i, j, k;
    int ret = 0;

    pthread_mutex_lock(&x->rb_lock);
    if (x->rb_partial || x->rb_partial_gen != gen) {
        pthread_mutex_unlock(&x->rb_lock);
        return -EAGAIN;
    }
    for (i = 0; i < n && ret == 0; i = j) {
        j = i + 1;
        if (sd_bitmap_test(&x->fresh, first + i)) {
            continue;
        }
        if (state && state[i] == RB_PAGE_BAD) {
            /* Never into the copy: it would pass for the page's data. */
            sd_bitmap_set(&x->bad, first + i, 1);
            continue;
        }
        if (page_is_zero(buf + i * SD_PAGE_SIZE)) {
            /* Never written after all: the ledger counts it flushed. */
            ledger_add(x, slab_tier(x, page_slab(x, first + i)),
                       LEDGER_FLUSHES,
                       sd_bitmap_clear(&x->written, first + i, 1));
            continue;
        }
        /* The run of pages to copy from i: one write (a direct one is
         * a trip to the disk each). */
        while (j < n && rb_wanted(x, first, j, buf, state)) {
            j++;
        }
        ret = sd_local_write(&x->lc, buf + i * SD_PAGE_SIZE,
                             (size_t)(j - i) * SD_PAGE_SIZE,
                             (first + i) * SD_PAGE_SIZE);
        if (ret == 0 && state) {
            sd_bitmap_clear(&x->bad, first + i, j - i);
        }
        *copied += ret == 0 ? j - i : 0;
    }
    if (ret) {
        /* Pages past rb_cursor that the copy holds count as fresh after a
         * restart: take back the ones this chunk wrote, and mark the
         * zeros written again. */
        for (k = 0; k < i; k++) {
            if (!sd_bitmap_test(&x->fresh, first + k)) {
                ledger_add(x, slab_tier(x, page_slab(x, first + k)),
                           LEDGER_PUTS,
                           sd_bitmap_set(&x->written, first + k, 1));
                if (fallocate(x->lc.fd, FALLOC_FL_PUNCH_HOLE |
                              FALLOC_FL_KEEP_SIZE,
                              (off_t)((first + k) * SD_PAGE_SIZE),
                              SD_PAGE_SIZE)) {
                    sd_log(LOG_ERR, "export %s: cannot punch a hole in %s: "
                           "%s", x->uuid, x->spec.local, strerror(errno));
                }
            }
        }
    } else {
        __atomic_store_n(&x->rb_cursor, first + n, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&x->rb_lock);
    return ret;
}

/* Slab `slab` is rebuilt: make the copy durable, then say so in the
 * .conf (the last slab ends the adoption).  Retried until it works. */
static void rb_slab_done(struct sd_export *x, uint32_t slab)
{
    unsigned tries = 0;
    int ret;

    for (;;) {
        ret = sd_local_sync(&x->lc);
        if (ret == 0) {
            pthread_mutex_lock(&x->lock);
            x->spec.rebuilt = slab + 1;
            if (slab + 1 == x->spec.nslabs) {
                x->spec.adopt = 0;
                x->spec.rebuilt = 0;
            }
            ret = sd_export_persist(x);
            if (ret) {
                x->spec.adopt = 1;
                x->spec.rebuilt = slab;
            }
            pthread_mutex_unlock(&x->lock);
        }
        if (ret == 0) {
            break;
        }
        if (tries++ % REBUILD_LOG_EVERY == 0) {
            sd_log(LOG_ERR, "export %s: slab %u is rebuilt but cannot be "
                   "saved as such (%s); retrying every second", x->uuid,
                   slab, strerror(-ret));
        }
        if (rb_sleep(x, RECONNECT_INTERVAL_US)) {
            return;
        }
    }
    sd_log(LOG_DEBUG, "export %s: slab %u of %u rebuilt", x->uuid, slab + 1,
           x->spec.nslabs);
}

void *sd_rebuild_main(void *arg)
{
    struct sd_export *x = arg;
    struct rb_fetch f;
    char *buf = NULL;
    uint64_t copied = 0, cur, gen;
    unsigned failures = 0;
    int ret;

    while (!buf) {
        buf = aligned_alloc(SD_PAGE_SIZE, REBUILD_CHUNK);
        if (!buf && rb_sleep(x, RECONNECT_INTERVAL_US)) {
            goto out;
        }
    }
    while ((cur = __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE)) <
           x->written.pages) {
        uint64_t off = cur * SD_PAGE_SIZE;
        uint32_t slab = sd_slab_of(off, x->spec.slab_size);
        uint64_t slab_end = (uint64_t)(slab + 1) * x->spec.slab_size;
        uint32_t len = slab_end - off < REBUILD_CHUNK ?
                       (uint32_t)(slab_end - off) : REBUILD_CHUNK;

        if (x->spec.seal &&
            !__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE)) {
            /* Nothing from the donors opens before the key is here. */
            if (failures++ % REBUILD_LOG_EVERY == 0) {
                sd_log(LOG_WARNING, "export %s: the rebuild waits for the "
                       "page key (EXPORT_KEY_INSTALL)", x->uuid);
            }
            if (rb_sleep(x, RECONNECT_INTERVAL_US)) {
                break;
            }
            continue;
        }
        pthread_mutex_lock(&x->rb_lock);
        gen = x->rb_partial_gen;
        ret = x->rb_stop ? -ECANCELED : 0;
        pthread_mutex_unlock(&x->rb_lock);
        if (ret == 0) {
            ret = rb_fetch(x, &f, off, len, buf);
            if (ret) {
                if (failures++ % REBUILD_LOG_EVERY == 0) {
                    sd_log(LOG_WARNING, "export %s: the rebuild of the local "
                           "copy cannot read slab %u from donor %s (%s); it "
                           "retries every second, and the donor serves the "
                           "slab meanwhile", x->uuid, slab,
                           x->spec.slabs[slab].endpoint, strerror(-ret));
                }
                if (rb_sleep(x, RECONNECT_INTERVAL_US)) {
                    break;
                }
                continue;
            }
            if (x->spec.seal) {
                rb_open(x, &f, off, len, buf);
            }
            ret = rb_commit(x, off, len, buf, x->spec.seal ? f.state : NULL,
                            gen, &copied);
        }
        if (ret == -ECANCELED) {
            break;
        }
        if (ret == -EAGAIN) {
            /* Wait for the writes of parts of pages to be done. */
            pthread_mutex_lock(&x->rb_lock);
            while (x->rb_partial && !x->rb_stop) {
                pthread_cond_wait(&x->rb_cond, &x->rb_lock);
            }
            pthread_mutex_unlock(&x->rb_lock);
            continue;
        }
        if (ret) {
            if (failures++ % REBUILD_LOG_EVERY == 0) {
                sd_log(LOG_ERR, "export %s: the rebuild cannot write the "
                       "local copy %s (%s); it retries every second",
                       x->uuid, x->spec.local, strerror(-ret));
            }
            if (rb_sleep(x, RECONNECT_INTERVAL_US)) {
                break;
            }
            continue;
        }
        if (failures) {
            sd_log(LOG_INFO, "export %s: the rebuild goes on (slab %u)",
                   x->uuid, slab);
            failures = 0;
        }
        if (off + len == slab_end) {
            rb_slab_done(x, slab);
        }
    }
    pthread_mutex_lock(&x->lock);
    ret = x->spec.adopt;
    pthread_mutex_unlock(&x->lock);
    if (!ret) {
        sd_log(LOG_INFO, "export %s: local copy rebuilt from the donors "
               "(%llu pages copied by this run); an ordinary export now",
               x->uuid, (unsigned long long)copied);
    }
out:
    free(buf);
    return NULL;
}

void sd_rebuild_stop(struct sd_export *x)
{
    if (!x->rb_running) {
        return;
    }
    pthread_mutex_lock(&x->rb_lock);
    x->rb_stop = 1;
    pthread_cond_broadcast(&x->rb_cond);
    pthread_mutex_unlock(&x->rb_lock);
    pthread_join(x->rb_thread, NULL);
    x->rb_running = 0;
}
