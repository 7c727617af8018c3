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
 * The promotion of a slab from the local copy (L2) to a donor (L1), while
 * the guest runs (ALGORITHMS.md §8).  The slab's written pages are copied
 * to a slab the donor has prepared, in passes: a write to the slab marks
 * its pages dirty once they are in the local copy, and each pass copies
 * the pages dirty since the one before.  When few are left, writes to the
 * slab are held (their replies wait; reads never do: the slab is served
 * from the local copy until the switch), the last dirty pages are copied,
 * and the table says the slab is on the donor, saved before any write
 * goes there.  The held writes then go on, to both copies as on any donor
 * slab.
 *
 * Every request of an export is submitted under promo_rw shared: taking
 * it exclusively waits for the requests under way, so a write either
 * marks its pages dirty or was in the local copy before the promotion
 * looked at it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "export.h"
#include "export_internal.h"
#include "seal.h"
#include "transport.h"
#include "util.h"

/* Passes over the dirty pages before writes are held, and how few dirty
 * pages let the last copy run with writes held. */
#define PROMO_PASSES 8
#define PROMO_LAST_PAGES 256U
/* Pages per write to the donor. */
#define PROMO_RUN 256U

/* Write pages [first, first + n) of the slab (relative) from the local
 * copy to the donor p at addr, sealed when the export is; 0 or -errno. */
static int copy_run(struct sd_export *x, struct peer *p, uint32_t slab,
                    uint64_t addr, uint64_t first, uint32_t n, char *buf)
{
    uint64_t page = (uint64_t)slab * slab_pages(x) + first;
    size_t len = (size_t)n * SD_PAGE_SIZE;
    struct sd_io io, *ios = &io;
    int ret;

    if ((ret = sd_local_read(&x->lc, buf, len, page * SD_PAGE_SIZE))) {
        return ret;
    }
    memset(&io, 0, sizeof(io));
    io.op = SD_OP_WRITE;
    memcpy(io.grant, x->spec.grant, SD_UUID_LEN);
    memcpy(io.key, x->spec.key, SD_KEY_LEN);
    io.slab = slab;
    io.remote_addr = addr;
    io.offset = first * SD_PAGE_SIZE;
    io.len = (uint32_t)len;
    io.buf = buf;
    if (x->spec.seal) {
        io.seals = (uint8_t *)buf + len;
        ret = sd_seal_pages(&x->sealer, x->spec.page_key, x->spec.grant,
                            page, buf, buf, io.seals, n);
        if (ret) {
            return ret;
        }
    }
    ret = sd_peer_submit_wait(p, &ios, 1);
    if (ret == 0) {
        COUNT(x, remote_write_bytes, len);
    }
    return ret;
}

/* Copy the slab's dirty pages, in runs, clearing each run's bits before
 * reading it (a write after that marks it again); *copied counts them. */
static int copy_dirty(struct sd_export *x, struct peer *p, uint32_t slab,
                      uint64_t addr, char *buf, uint64_t *copied)
{
    uint64_t pps = slab_pages(x), i = 0;
    int ret;

    while (i < pps) {
        uint32_t n = 0;

        if (!sd_bitmap_test(&x->promo_dirty, i)) {
            i++;
            continue;
        }
        while (i + n < pps && n < PROMO_RUN &&
               sd_bitmap_test(&x->promo_dirty, i + n)) {
            n++;
        }
        sd_bitmap_clear(&x->promo_dirty, i, n);
        if ((ret = copy_run(x, p, slab, addr, i, n, buf))) {
            return ret;
        }
        *copied += n;
        i += n;
    }
    return 0;
}

/* End the promotion (held writes go on, to wherever the table now says)
 * and return ret. */
static int promo_end(struct sd_export *x, int ret)
{
    struct sd_nbd_io *held, *next;
    size_t n = 0, i = 0;
    struct sd_nbd_io **nios;

    pthread_rwlock_wrlock(&x->promo_rw);
    __atomic_store_n(&x->promo_slab, SD_PROMO_NONE, __ATOMIC_RELEASE);
    x->promo_hold = 0;
    held = x->promo_held;
    x->promo_held = NULL;
    pthread_rwlock_unlock(&x->promo_rw);
    sd_bitmap_destroy(&x->promo_dirty);
    for (next = held; next; next = next->backend_priv) {
        n++;
    }
    nios = n ? malloc(n * sizeof(*nios)) : NULL;
    for (; held; held = next) {
        next = held->backend_priv;
        held->backend_priv = NULL;
        if (nios) {
            nios[i++] = held;
        } else {
            held->done(held, NBD_ENOMEM);
        }
    }
    if (nios) {
        sd_export_submit(x, nios, n);
        free(nios);
    }
    return ret;
}

/* The table says slab is on donor p at addr (endpoint), saved; on failure
 * it is local again, as on disk. */
static int switch_slab(struct sd_export *x, uint32_t slab, struct peer *p,
                       const char *endpoint, uint64_t addr)
{
    struct sd_export_slab was = x->spec.slabs[slab];
    struct peer *was_peer = x->peers[slab];
    int ret;

    pthread_mutex_lock(&x->lock);
    /* Not saved as local from here: a degrade of the slab after the
     * switch saves the table again. */
    __atomic_store_n(&x->saved_local[slab], 0, __ATOMIC_SEQ_CST);
    snprintf(x->spec.slabs[slab].endpoint, SD_ENDPOINT_MAX, "%s", endpoint);
    __atomic_store_n(&x->spec.slabs[slab].addr, addr, __ATOMIC_RELAXED);
    x->spec.slabs[slab].rkey = 0;
    __atomic_store_n(&x->peers[slab], p, __ATOMIC_RELEASE);
    __atomic_store_n(&x->degraded[slab], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&x->spec.slabs[slab].local, 0, __ATOMIC_SEQ_CST);
    ret = sd_export_persist(x);
    if (ret == 0) {
        ledger_moved(x, slab, SD_L1);
    } else {
        __atomic_store_n(&x->spec.slabs[slab].local, 1, __ATOMIC_SEQ_CST);
        __atomic_store_n(&x->peers[slab], was_peer, __ATOMIC_RELEASE);
        memcpy(x->spec.slabs[slab].endpoint, was.endpoint, SD_ENDPOINT_MAX);
        __atomic_store_n(&x->spec.slabs[slab].addr, was.addr,
                         __ATOMIC_RELAXED);
        x->spec.slabs[slab].rkey = was.rkey;
        __atomic_store_n(&x->saved_local[slab], 1, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&x->lock);
    return ret;
}

int sd_exports_promote(struct sd_exports *xs,
                       const uint8_t grant[SD_UUID_LEN], uint32_t slab,
                       const char *endpoint, uint64_t addr,
                       uint64_t *copied, char *err, size_t errlen)
{
    struct sd_export *x = sd_export_lookup(xs, grant);
    uint64_t pps, i;
    struct peer *p;
    char *buf;
    int ret, pass;

    *copied = 0;
    if (!x) {
        return sd_fail(err, errlen, -ENOENT, "grant: no export here");
    }
    if (slab >= x->spec.nslabs) {
        return sd_fail(err, errlen, -EINVAL, "slab: index %u is beyond the "
                       "export's %u slabs", slab, x->spec.nslabs);
    }
    if (!__atomic_load_n(&x->spec.slabs[slab].local, __ATOMIC_SEQ_CST) &&
        x->peers[slab]) {
        return sd_fail(err, errlen, -EALREADY, "slab: slab %u is on donor "
                       "%s already", slab, x->spec.slabs[slab].endpoint);
    }
    if (slab_stale(x, slab)) {
        return sd_fail(err, errlen, -EBUSY, "slab: slab %u is stale in the "
                       "local copy, which missed writes its failed donor "
                       "had: there is nothing current to promote", slab);
    }
    if (rebuilding(x)) {
        return sd_fail(err, errlen, -EBUSY, "slab: this adopted export's "
                       "local copy is still rebuilt from its donors; "
                       "promote once EXPORT_STATS says rebuild_left=0");
    }
    if (x->spec.seal && !__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE)) {
        return sd_fail(err, errlen, -ENOKEY, "slab: the export waits for "
                       "its page key (EXPORT_KEY_INSTALL)");
    }
    if (__atomic_load_n(&x->promo_slab, __ATOMIC_ACQUIRE) !=
        SD_PROMO_NONE) {
        return sd_fail(err, errlen, -EBUSY, "slab: slab %u of this export "
                       "is being promoted; one at a time",
                       x->promo_slab);
    }
    pthread_mutex_lock(&xs->lock);
    ret = sd_peer_get(xs, endpoint, &p, err, errlen);
    pthread_mutex_unlock(&xs->lock);
    if (ret) {
        return ret;
    }
    pps = slab_pages(x);
    /* Aligned: the local copy is read into it with direct I/O. */
    buf = aligned_alloc(SD_PAGE_SIZE, (size_t)PROMO_RUN *
                        (SD_PAGE_SIZE + SD_SEAL_LEN));
    if (!buf || sd_bitmap_init(&x->promo_dirty, pps)) {
        free(buf);
        return sd_fail(err, errlen, -ENOMEM, "out of memory");
    }
    pthread_rwlock_wrlock(&x->promo_rw);
    __atomic_store_n(&x->promo_slab, slab, __ATOMIC_RELEASE);
    pthread_rwlock_unlock(&x->promo_rw);
    sd_log(LOG_INFO, "export %s: promoting slab %u to donor %s", x->name,
           slab, endpoint);
    /* Every write from here marks its pages; those before are in the
     * local copy, and their pages counted as written. */
    for (i = 0; i < pps; i++) {
        if (sd_bitmap_test(&x->written, slab * pps + i)) {
            sd_bitmap_set(&x->promo_dirty, i, 1);
        }
    }
    ret = 0;
    for (pass = 0; ret == 0 && pass < PROMO_PASSES &&
         sd_bitmap_count(&x->promo_dirty) > PROMO_LAST_PAGES; pass++) {
        ret = copy_dirty(x, p, slab, addr, buf, copied);
    }
    if (ret == 0) {
        pthread_rwlock_wrlock(&x->promo_rw);
        x->promo_hold = 1;
        pthread_rwlock_unlock(&x->promo_rw);
        ret = copy_dirty(x, p, slab, addr, buf, copied);
    }
    free(buf);
    if (ret) {
        sd_fail(err, errlen, ret, "slab: copying slab %u to %s failed (%s); "
                "it stays in the local copy: free the donor's slab",
                slab, endpoint, strerror(-ret));
        sd_log(LOG_WARNING, "export %s: %s", x->uuid, err);
        return promo_end(x, ret);
    }
    ret = switch_slab(x, slab, p, endpoint, addr);
    if (ret) {
        sd_fail(err, errlen, ret, "cannot write %s: %s (slab %u stays in "
                "the local copy: free the donor's slab)", x->conf,
                strerror(-ret), slab);
        return promo_end(x, ret);
    }
    sd_log(LOG_INFO, "export %s: slab %u promoted to donor %s (%llu pages "
           "copied)", x->name, slab, endpoint, (unsigned long long)*copied);
    return promo_end(x, 0);
}

int sd_promote_hold(struct sd_export *x, struct sd_nbd_io *nio)
{
    uint64_t slab_size = x->spec.slab_size;
    uint32_t slab = __atomic_load_n(&x->promo_slab, __ATOMIC_ACQUIRE);

    if (!x->promo_hold || nio->type != NBD_CMD_WRITE || !nio->len ||
        nio->offset / slab_size > slab ||
        (nio->offset + nio->len - 1) / slab_size < slab) {
        return 0;
    }
    pthread_mutex_lock(&x->promo_held_lock);
    nio->backend_priv = x->promo_held;
    x->promo_held = nio;
    pthread_mutex_unlock(&x->promo_held_lock);
    return 1;
}

void sd_promote_written(struct sd_export *x, uint64_t off, uint64_t len)
{
    uint32_t slab = __atomic_load_n(&x->promo_slab, __ATOMIC_ACQUIRE);
    uint64_t pps = slab_pages(x), first, last;

    if (slab == SD_PROMO_NONE) {
        return;
    }
    first = off / SD_PAGE_SIZE;
    last = (off + len - 1) / SD_PAGE_SIZE;
    if (first < (uint64_t)slab * pps) {
        first = (uint64_t)slab * pps;
    }
    if (last >= ((uint64_t)slab + 1) * pps) {
        last = ((uint64_t)slab + 1) * pps - 1;
    }
    if (first <= last) {
        sd_bitmap_set(&x->promo_dirty, first - slab * pps,
                      last - first + 1);
    }
}
