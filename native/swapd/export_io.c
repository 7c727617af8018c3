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
 * The request path of an export: each NBD READ or WRITE is cut at slab
 * boundaries into segments, served from zeros (pages never written), the
 * local copy or the donor (sealed there when the export is), and answered
 * once every segment is done; a burst's donor I/O goes out together.
 * Also TRIM, FLUSH, and the degrade of a slab whose donor failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "export_internal.h"
#include "nbd.h"
#include "seal.h"
#include "transport.h"
#include "util.h"

/* Pages from donors that fail to open are logged once per this many. */
#define AUTH_LOG_EVERY 1000

struct xreq;

/* Where a segment's data is: zeros (a read of pages never written), the
 * local copy, or the donor; or nowhere (its request fails). */
enum seg_where { SEG_ZERO, SEG_LOCAL, SEG_REMOTE, SEG_FAILED };

struct seg {
    struct sd_io io;
    struct xreq *r;
    uint64_t off;               /* in the export */
    uint32_t len;
    char *buf;
    enum seg_where where;
    int overlay;                /* a read from the donor of a local slab:
                                 * the pages the copy has come from it */
    char *bounce;               /* sealed: a WRITE's ciphertext and seals,
                                 * a READ's seals; freed with the request */
    struct sd_local_op op;      /* its part of the local copy's I/O */
};

#define NO_PAGE UINT64_MAX

struct xreq {
    struct sd_export *x;
    struct sd_nbd_io *nio;
    uint64_t start_us;
    unsigned pending;
    uint32_t error;             /* the first NBD error */
    int touched_local;
    /* A write's first and last page when it covers only part of a page
     * the local copy lacks (adoption): not written there. */
    uint64_t skip[2];
    int partial;                /* counted in x->rb_partial */
    unsigned nseg;
    struct seg seg[];
};

/* The slab stops using its donor: the donor's copy may now be stale, so it
 * is not read again (and the table on disk says so), but for the pages an
 * adopted export's local copy lacks, which no write here has changed.
 * 0 once the table on disk says so, or -errno. */
static int degrade(struct sd_export *x, uint32_t slab, int status)
{
    if (!__atomic_exchange_n(&x->spec.slabs[slab].local, 1,
                             __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&x->degraded[slab], 1, __ATOMIC_RELAXED);
        ledger_moved(x, slab, SD_L2);
        sd_log(LOG_WARNING, "export %s: slab %u on donor %s failed (%s); it "
               "is served from the local copy from now on", x->uuid, slab,
               x->spec.slabs[slab].endpoint, strerror(-status));
    }
    return sd_export_table_sync(x, slab);
}

static void set_error(struct xreq *r, uint32_t error)
{
    uint32_t none = 0;

    __atomic_compare_exchange_n(&r->error, &none, error, 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Read [off, off + len) of the local copy into buf for r; 0 or -EIO
 * (logged). */
static int copy_read(struct xreq *r, char *buf, size_t len, uint64_t off)
{
    int ret = sd_local_read(&r->x->lc, buf, len, off);

    __atomic_store_n(&r->touched_local, 1, __ATOMIC_RELAXED);
    if (ret) {
        sd_log(LOG_ERR, "export %s: cannot read the local copy %s: %s",
               r->x->uuid, r->x->spec.local, strerror(-ret));
        return -EIO;
    }
    return 0;
}

static int local_read(struct xreq *r, struct seg *s)
{
    return copy_read(r, s->buf, s->len, s->off);
}

/* The outcome of a local op of r's, done in a batch: 0 or -errno
 * (logged). */
static int local_done(struct xreq *r, const struct sd_local_op *op)
{
    if (!op->write) {
        __atomic_store_n(&r->touched_local, 1, __ATOMIC_RELAXED);
    }
    if (op->ret) {
        sd_log(LOG_ERR, "export %s: cannot %s the local copy %s: %s",
               r->x->uuid, op->write ? "write" : "read", r->x->spec.local,
               strerror(-op->ret));
    }
    return op->ret;
}

/* The pages of a donor's read of a degraded slab that the local copy has
 * (adoption) come from the copy: the donor missed the writes made here
 * since the slab degraded. */
static int overlay_local(struct xreq *r, struct seg *s)
{
    struct sd_export *x = r->x;
    uint64_t off = s->off, end = s->off + s->len;

    while (off < end) {
        uint64_t p = off / SD_PAGE_SIZE, next = (p + 1) * SD_PAGE_SIZE;
        size_t n = (size_t)((next < end ? next : end) - off);
        char *dst = s->buf + (off - s->off);

        if (local_has(x, p) && !sd_bitmap_test(&x->written, p)) {
            memset(dst, 0, n);
        } else if (local_has(x, p) && copy_read(r, dst, n, off)) {
            return -EIO;
        }
        off += n;
    }
    return 0;
}

/* The page of r->skip that seg holds, or NO_PAGE. */
static uint64_t seg_skipped(const struct xreq *r, const struct seg *s)
{
    uint64_t p0 = s->off / SD_PAGE_SIZE;
    uint64_t p1 = (s->off + s->len - 1) / SD_PAGE_SIZE;
    int i;

    for (i = 0; i < 2; i++) {
        if (r->skip[i] != NO_PAGE && r->skip[i] >= p0 && r->skip[i] <= p1) {
            return r->skip[i];
        }
    }
    return NO_PAGE;
}

static void finish_one(struct xreq *r)
{
    struct sd_export *x = r->x;
    struct sd_nbd_io *nio = r->nio;
    uint64_t took;
    unsigned i;

    if (__atomic_sub_fetch(&r->pending, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    if (r->partial) {
        pthread_mutex_lock(&x->rb_lock);
        if (--x->rb_partial == 0) {
            pthread_cond_broadcast(&x->rb_cond);
        }
        pthread_mutex_unlock(&x->rb_lock);
    }
    took = sd_now_us() - r->start_us;
    if (nio->type == NBD_CMD_READ) {
        COUNT(x, reads, 1);
        COUNT(x, read_bytes, nio->len);
        if (r->touched_local) {
            COUNT(x, local_reads, 1);
        }
        sd_hist_add(&x->read_hist, took);
    } else {
        COUNT(x, writes, 1);
        COUNT(x, write_bytes, nio->len);
    }
    sd_hist_add(&x->hist, took);
    nio->done(nio, r->error);
    /* Not in seg_done: the submitting thread may still be in the send
     * of a bounce buffer when the donor's reply comes back. */
    for (i = 0; i < r->nseg; i++) {
        free(r->seg[i].bounce);
    }
    free(r);
}

void sd_export_auth_failed(struct sd_export *x, uint64_t page,
                           const char *then)
{
    uint64_t n = __atomic_fetch_add(&x->auth_failures, 1, __ATOMIC_RELAXED);
    uint32_t slab = sd_slab_of(page * SD_PAGE_SIZE, x->spec.slab_size);

    if (n % AUTH_LOG_EVERY == 0) {
        sd_log(LOG_ERR, "export %s: page %llu from donor %s failed "
               "authentication: altered on the donor or on the wire (%llu "
               "such pages so far, logged every %u); %s", x->uuid,
               (unsigned long long)page, x->spec.slabs[slab].endpoint,
               (unsigned long long)n + 1, AUTH_LOG_EVERY, then);
    }
}

/* Whether page p of a sealed read from a donor is not to be opened: a
 * page the overlay replaces, a page never written (zeroed here: a TRIM
 * leaves the donor's copy behind), or, while every page of its slab
 * counts as written (an adopted export's rebuild, a stale slab after a
 * restart), a page with neither data nor seal (never written). */
static int seal_skip(struct xreq *r, struct seg *s, uint64_t i,
                     int all_written)
{
    struct sd_export *x = r->x;
    uint64_t p = s->off / SD_PAGE_SIZE + i;
    char *page = s->buf + i * SD_PAGE_SIZE;

    if (s->overlay && local_has(x, p)) {
        return 1;
    }
    if (!sd_bitmap_test(&x->written, p)) {
        memset(page, 0, SD_PAGE_SIZE);
        return 1;
    }
    return all_written && seal_is_zero(s->io.seals + i * SD_SEAL_LEN) &&
           page_is_zero(page);
}

/* Open a sealed read from a donor in place, runs of pages at a time.  0
 * when every page opened; 1 when one did not and the segment came from
 * the local copy instead; -EIO when it cannot be served. */
static int open_seg(struct xreq *r, struct seg *s)
{
    struct sd_export *x = r->x;
    uint64_t p0 = s->off / SD_PAGE_SIZE, n = s->len / SD_PAGE_SIZE;
    uint64_t i = 0, j, bad = 0;
    int all_written = rebuilding(x) || slab_stale(x, s->io.slab);
    int ret = 0, served;

    while (i < n && ret == 0) {
        for (j = i; j < n && !seal_skip(r, s, j, all_written); j++) {
            continue;
        }
        if (j > i) {
            ret = sd_open_pages(x->spec.page_key, x->spec.grant, p0 + i,
                                s->buf + i * SD_PAGE_SIZE,
                                s->io.seals + i * SD_SEAL_LEN, j - i, &bad);
        }
        i = j + 1;              /* j, if any, was skipped */
    }
    if (ret == 0) {
        return 0;
    }
    if (ret != -EBADMSG) {
        sd_log(LOG_ERR, "export %s: cannot open pages from donor %s: "
               "OpenSSL failed", x->uuid,
               x->spec.slabs[s->io.slab].endpoint);
        return -EIO;
    }
    served = local_has_range(x, s->off, s->len) && local_read(r, s) == 0;
    sd_export_auth_failed(x, bad, served ? "read from the local copy" :
                          "the local copy lacks it: the read fails with EIO");
    return served ? 1 : -EIO;
}

static void seg_done(struct sd_io *io, int status)
{
    struct seg *s = io->priv;
    struct xreq *r = s->r;
    struct sd_export *x = r->x;

    if (status) {
        COUNT(x, remote_errors, 1);
        if (status == -EBADMSG) {
            /* The transport refused its reply's tags (frame_auth.h). */
            COUNT(x, frame_auth_failures, 1);
        }
        if (io->op == SD_OP_WRITE &&
            (degrade(x, io->slab, status) || slab_stale(x, io->slab))) {
            /* Its donor missed it, and a restart would read the donor;
             * or the slab's local copy misses writes the donor had. */
            set_error(r, NBD_EIO);
        } else if (io->op == SD_OP_READ) {
            degrade(x, io->slab, status);
        }
        /* A write is in the local copy before its reply; a read comes
         * from it.  But for an adopted export's pages the copy lacks yet:
         * only the donor has them. */
        if (io->op == SD_OP_READ && !local_has_range(x, s->off, s->len)) {
            sd_log(LOG_ERR, "export %s: cannot read %u bytes at %llu: only "
                   "donor %s has them, %s (%s)", x->uuid, s->len,
                   (unsigned long long)s->off,
                   x->spec.slabs[io->slab].endpoint,
                   slab_stale(x, io->slab) ? "the slab being stale in the "
                   "local copy" : "until the rebuild reaches them",
                   strerror(-status));
            set_error(r, NBD_EIO);
        } else if (io->op == SD_OP_READ && local_read(r, s)) {
            set_error(r, NBD_EIO);
        } else if (io->op == SD_OP_WRITE && seg_skipped(r, s) != NO_PAGE) {
            set_error(r, NBD_EIO);      /* part of a page went nowhere */
        }
    } else {
        int opened = io->op == SD_OP_READ && io->seals ? open_seg(r, s) : 0;

        if (io->op == SD_OP_READ) {
            COUNT(x, remote_read_bytes, io->len);
        } else {
            COUNT(x, remote_write_bytes, io->len);
        }

        if (opened < 0 ||
            (opened == 0 && s->overlay && overlay_local(r, s))) {
            set_error(r, NBD_EIO);
        }
    }
    finish_one(r);
}

static struct xreq *xreq_new(struct sd_export *x, struct sd_nbd_io *nio)
{
    uint64_t first = nio->offset / x->spec.slab_size;
    uint64_t last = (nio->offset + nio->len - 1) / x->spec.slab_size;
    unsigned n = (unsigned)(last - first + 1), i;
    uint64_t off = nio->offset;
    struct xreq *r;

    r = calloc(1, sizeof(*r) + n * sizeof(struct seg));
    if (!r) {
        return NULL;
    }
    r->x = x;
    r->nio = nio;
    r->skip[0] = r->skip[1] = NO_PAGE;
    r->start_us = sd_now_us();
    r->pending = 1;     /* held until every segment is submitted */
    r->nseg = n;
    for (i = 0; i < n; i++) {
        struct seg *s = &r->seg[i];
        uint64_t slab_end = (first + i + 1) * x->spec.slab_size;
        uint64_t end = nio->offset + nio->len;

        s->r = r;
        s->off = off;
        s->len = (uint32_t)((end < slab_end ? end : slab_end) - off);
        s->buf = (char *)nio->buf + (off - nio->offset);
        s->io.slab = (uint32_t)(first + i);
        s->io.offset = off - (first + i) * x->spec.slab_size;
        s->io.len = s->len;
        s->io.buf = s->buf;
        s->io.done = seg_done;
        s->io.priv = s;
        memcpy(s->io.grant, x->spec.grant, SD_UUID_LEN);
        memcpy(s->io.key, x->spec.key, SD_KEY_LEN);
        s->io.remote_addr = __atomic_load_n(&x->spec.slabs[first + i].addr,
                                            __ATOMIC_RELAXED);
        off += s->len;
    }
    return r;
}

static void ghost_pages(struct sd_export *x, char op, uint64_t off,
                        uint32_t len)
{
    uint64_t p, first = off / SD_PAGE_SIZE;
    uint64_t last = (off + len - 1) / SD_PAGE_SIZE;

    pthread_mutex_lock(&x->lock);
    for (p = first; p <= last; p++) {
        /* Swap-in events only for pages that were swapped out. */
        if (op == 'o' || sd_bitmap_test(&x->written, p)) {
            sd_ghost_add(&x->ghost, op, p);
        }
    }
    pthread_mutex_unlock(&x->lock);
}

/* A WRITE to an export being rebuilt (see rebuild.c): its whole pages
 * become fresh before anything is written; a first or last page it covers
 * only in part, and the local copy lacks, goes to the donor only. */
static void adopt_write(struct sd_export *x, struct xreq *r)
{
    uint64_t off = r->nio->offset, end = off + r->nio->len;
    uint64_t first = off / SD_PAGE_SIZE, last = (end - 1) / SD_PAGE_SIZE;
    uint64_t whole0 = (off + SD_PAGE_SIZE - 1) / SD_PAGE_SIZE;
    uint64_t whole1 = end / SD_PAGE_SIZE;

    pthread_mutex_lock(&x->rb_lock);
    if (whole1 > whole0) {
        sd_bitmap_set(&x->fresh, whole0, whole1 - whole0);
    }
    if (off % SD_PAGE_SIZE && !local_has(x, first)) {
        r->skip[0] = first;
    }
    if (end % SD_PAGE_SIZE && !local_has(x, last)) {
        r->skip[1] = last;
    }
    if (r->skip[0] != NO_PAGE || r->skip[1] != NO_PAGE) {
        r->partial = 1;
        x->rb_partial++;
        x->rb_partial_gen++;
    }
    pthread_mutex_unlock(&x->rb_lock);
}

/* A sealed export's donor io: a WRITE's pages are sealed into a bounce
 * buffer (the local copy keeps the plaintext), a READ gets room for the
 * seals.  0, or -ENOKEY (an adopted export's key is not installed yet),
 * -ENOMEM, -EIO. */
static int seal_remote(struct sd_export *x, struct seg *s, int write)
{
    size_t npages = s->len / SD_PAGE_SIZE, slen = npages * SD_SEAL_LEN;
    int ret;

    if (!__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE)) {
        return -ENOKEY;
    }
    s->bounce = malloc(write ? s->len + slen : slen);
    if (!s->bounce) {
        return -ENOMEM;
    }
    if (!write) {
        s->io.seals = (uint8_t *)s->bounce;
        return 0;
    }
    ret = sd_seal_pages(&x->sealer, x->spec.page_key, x->spec.grant,
                        s->off / SD_PAGE_SIZE, s->buf, s->bounce,
                        (uint8_t *)s->bounce + s->len, npages);
    if (ret) {
        free(s->bounce);
        s->bounce = NULL;
        return ret;
    }
    s->io.buf = s->bounce;
    s->io.seals = (uint8_t *)s->bounce + s->len;
    return 0;
}

/* The segments of a READ or WRITE that go to donors: each is counted in
 * its request's pending and its io added to remote. */
static void plan(struct sd_export *x, struct xreq *r, struct sd_io **remote,
                 size_t *nremote)
{
    int write = r->nio->type == NBD_CMD_WRITE, ret;
    unsigned i;

    if (write && rebuilding(x)) {
        adopt_write(x, r);
    }
    for (i = 0; i < r->nseg; i++) {
        struct seg *s = &r->seg[i];
        uint64_t p0 = s->off / SD_PAGE_SIZE;
        uint64_t p1 = (s->off + s->len - 1) / SD_PAGE_SIZE;
        int local = slab_is_local(x, s->io.slab);

        if (!write && x->bad.words &&
            sd_bitmap_any(&x->bad, p0, p1 - p0 + 1)) {
            /* The rebuild found the donor's copy altered (logged). */
            set_error(r, NBD_EIO);
            s->where = SEG_FAILED;
        } else if (!write && !sd_bitmap_any(&x->written, p0, p1 - p0 + 1)) {
            s->where = SEG_ZERO;        /* never written: no trip */
        } else if (local && write && seg_skipped(r, s) != NO_PAGE) {
            sd_log(LOG_ERR, "export %s: a write of part of page %llu cannot "
                   "go to the local copy alone: its other bytes are on "
                   "donor %s only until the rebuild reaches it", x->uuid,
                   (unsigned long long)seg_skipped(r, s),
                   x->spec.slabs[s->io.slab].endpoint);
            set_error(r, NBD_EIO);
            s->where = SEG_LOCAL;
        } else if (local && write && slab_stale(x, s->io.slab)) {
            /* Its donor failed after its copy missed writes: this write
             * could not be read back. */
            set_error(r, NBD_EIO);
            s->where = SEG_FAILED;
        } else if (local && (write || local_has_range(x, s->off, s->len))) {
            s->where = SEG_LOCAL;
        } else if (x->spec.seal && (ret = seal_remote(x, s, write))) {
            if (ret != -ENOKEY) {
                sd_log(LOG_ERR, "export %s: cannot seal or make room for "
                       "%u bytes at %llu: %s", x->uuid, s->len,
                       (unsigned long long)s->off, strerror(-ret));
            } else if (!__atomic_exchange_n(&x->nokey_warned, 1,
                                            __ATOMIC_RELAXED)) {
                sd_log(LOG_ERR, "export %s: I/O that needs a donor fails "
                       "with EIO until the page key is installed "
                       "(EXPORT_KEY_INSTALL)", x->uuid);
            }
            set_error(r, NBD_EIO);
            s->where = SEG_FAILED;
        } else {
            s->where = SEG_REMOTE;
            s->overlay = local;
            s->io.op = r->nio->type == NBD_CMD_READ ? SD_OP_READ :
                                                      SD_OP_WRITE;
            __atomic_add_fetch(&r->pending, 1, __ATOMIC_RELAXED);
            remote[(*nremote)++] = &s->io;
        }
    }
}

/* Submit the donors' ios of a burst, those of one peer together; an io
 * that was not queued fails here. */
static void submit_remote(struct sd_export *x, struct sd_io **ios, size_t n)
{
    size_t done = 0, i;

    while (done < n) {
        struct peer *p = x->peers[ios[done]->slab];
        size_t k = done, queued;
        int ret;

        /* Move the ios of p to the front of what is left. */
        for (i = done; i < n; i++) {
            if (x->peers[ios[i]->slab] == p) {
                struct sd_io *t = ios[k];

                ios[k++] = ios[i];
                ios[i] = t;
            }
        }
        ret = sd_peer_submit(p, ios + done, k - done, &queued);
        for (i = done + queued; i < k; i++) {
            seg_done(ios[i], ret);
        }
        done = k;
    }
}

/* The pages a segment touches. */
static uint64_t seg_pages(const struct seg *s)
{
    return (s->off + s->len - 1) / SD_PAGE_SIZE - s->off / SD_PAGE_SIZE + 1;
}

static void finish_read(struct sd_export *x, struct xreq *r)
{
    unsigned i;
    int zero = 1;

    for (i = 0; i < r->nseg; i++) {
        struct seg *s = &r->seg[i];

        if (s->where == SEG_ZERO) {
            memset(s->buf, 0, s->len);
            continue;
        }
        zero = 0;
        if (s->where != SEG_FAILED) {
            ledger_add(x, s->where == SEG_LOCAL ? SD_L2 : SD_L1,
                       LEDGER_GETS, seg_pages(s));
        }
        if (s->where == SEG_FAILED) {
            memset(s->buf, 0, s->len);
        }
        if (s->where == SEG_LOCAL && local_done(r, &s->op)) {
            set_error(r, NBD_EIO);
        }
    }
    if (zero) {
        COUNT(x, zero_reads, 1);
    } else {
        ghost_pages(x, 'i', r->nio->offset, r->nio->len);
    }
    finish_one(r);
}

/* The local copy's I/O of a READ or WRITE, into b, after its donor ios
 * are on their way: a READ's segments the copy serves; all of a WRITE but
 * a page in r->skip (on the donor only: adoption). */
static void start_local(struct sd_export *x, struct xreq *r,
                        struct sd_local_batch *b)
{
    struct sd_nbd_io *nio = r->nio;
    int write = nio->type == NBD_CMD_WRITE;
    uint64_t lo = nio->offset, hi = nio->offset + nio->len;
    unsigned i;

    for (i = 0; write && i < r->nseg; i++) {
        const struct seg *s = &r->seg[i];

        /* A slab that has a donor but is local (degraded, reclaimed):
         * the donor misses this write, so the table on disk must say
         * that before the reply. */
        if (s->where == SEG_LOCAL && x->peers[s->io.slab] &&
            sd_export_table_sync(x, s->io.slab)) {
            sd_log(LOG_ERR, "export %s: a write to slab %u fails: the "
                   "table saying the slab is served locally cannot be "
                   "saved in %s", x->uuid, s->io.slab, x->conf);
            set_error(r, NBD_EIO);
        }
    }
    if (write && r->skip[0] != NO_PAGE) {
        lo = (r->skip[0] + 1) * SD_PAGE_SIZE;
    }
    if (write && r->skip[1] != NO_PAGE) {
        hi = r->skip[1] * SD_PAGE_SIZE;
    }
    for (i = 0; i < r->nseg; i++) {
        struct seg *s = &r->seg[i];
        uint64_t off = s->off > lo ? s->off : lo;
        uint64_t end = s->off + s->len < hi ? s->off + s->len : hi;

        if ((write || s->where == SEG_LOCAL) && off < end) {
            s->op.buf = s->buf + (off - s->off);
            s->op.len = (size_t)(end - off);
            s->op.off = off;
            s->op.write = write;
            sd_local_batch_add(b, &s->op);
        }
    }
}

/* A segment of a WRITE that its local copy could not take (the device
 * failed or filled) but that went to its donor: the donor keeps it and
 * the slab is stale from now on (its reads need the donor, it may not
 * leave it; the table on disk says so).  0 when the write stands, or
 * -EIO: the table cannot be saved, or the donor failed too. */
static int copy_missed(struct sd_export *x, const struct seg *s, int error)
{
    uint32_t slab = s->io.slab;

    if (!__atomic_exchange_n(&x->spec.slabs[slab].stale, 1,
                             __ATOMIC_SEQ_CST)) {
        sd_log(LOG_WARNING, "export %s: slab %u is stale in the local copy "
               "%s (%s): only donor %s has all of its data from now on",
               x->uuid, slab, x->spec.local, strerror(-error),
               x->spec.slabs[slab].endpoint);
    }
    if (sd_export_table_sync(x, slab)) {
        return -EIO;
    }
    /* A donor failing meanwhile degraded the slab (seg_done). */
    return slab_is_local(x, slab) ? -EIO : 0;
}

/* A WRITE once its local I/O is done (the reply waits for its donor ios
 * too: r->pending holds it until finish_one).  A segment its local copy
 * missed stands when its donor has it (copy_missed). */
static void finish_write(struct sd_export *x, struct xreq *r)
{
    struct sd_nbd_io *nio = r->nio;
    unsigned i;
    int ret = 0;

    for (i = 0; i < r->nseg; i++) {
        const struct seg *s = &r->seg[i];
        int err = local_done(r, &s->op);

        if (err && (s->where != SEG_REMOTE || copy_missed(x, s, err)) &&
            ret == 0) {
            ret = err;
        }
    }
    if (ret) {
        set_error(r, ret == -ENOSPC ? NBD_ENOSPC : NBD_EIO);
        /* Some of it may be in the copy: a promotion copies it again. */
        sd_promote_written(x, nio->offset, nio->len);
        finish_one(r);
        return;
    }
    if ((nio->flags & NBD_CMD_FLAG_FUA) && sd_local_sync(&x->lc)) {
        set_error(r, NBD_EIO);
    }
    for (i = 0; i < r->nseg; i++) {
        const struct seg *s = &r->seg[i];

        ledger_add(x, slab_tier(x, s->io.slab), LEDGER_PUTS,
                   sd_bitmap_set(&x->written, s->off / SD_PAGE_SIZE,
                                 seg_pages(s)));
    }
    if (x->bad.words) {
        /* Whole pages (sealed): the copy has them now. */
        sd_bitmap_clear(&x->bad, nio->offset / SD_PAGE_SIZE,
                        nio->len / SD_PAGE_SIZE);
    }
    sd_promote_written(x, nio->offset, nio->len);
    ghost_pages(x, 'o', nio->offset, nio->len);
    finish_one(r);
}

/* TRIM: the pages wholly inside the range become never-written (zeros,
 * no trip) and leave the local copy. */
static uint32_t do_trim(struct sd_export *x, struct sd_nbd_io *nio)
{
    uint64_t first = (nio->offset + SD_PAGE_SIZE - 1) / SD_PAGE_SIZE;
    uint64_t end = (nio->offset + nio->len) / SD_PAGE_SIZE;
    uint64_t pps = slab_pages(x), p, next;

    if (end <= first) {
        return 0;
    }
    if (rebuilding(x)) {
        /* Keep the rebuild from bringing the donor's copy back. */
        pthread_mutex_lock(&x->rb_lock);
        sd_bitmap_set(&x->fresh, first, end - first);
        pthread_mutex_unlock(&x->rb_lock);
    }
    for (p = first; p < end; p = next) {
        uint32_t slab = page_slab(x, p);

        next = (uint64_t)(slab + 1) * pps < end ? (uint64_t)(slab + 1) * pps
                                                : end;
        ledger_add(x, slab_tier(x, slab), LEDGER_FLUSHES,
                   sd_bitmap_clear(&x->written, p, next - p));
    }
    if (x->bad.words) {
        sd_bitmap_clear(&x->bad, first, end - first);
    }
    if (fallocate(x->lc.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)(first * SD_PAGE_SIZE),
                  (off_t)((end - first) * SD_PAGE_SIZE))) {
        /* The bitmap already answers zeros; the copy keeps stale bytes
         * a restart would bring back as written pages. */
        sd_log(LOG_WARNING, "export %s: cannot punch a hole in %s: %s",
               x->uuid, x->spec.local, strerror(errno));
    }
    return 0;
}

/* A sealed export addresses whole pages only. */
static int misaligned(const struct sd_export *x, const struct sd_nbd_io *nio)
{
    return x->spec.seal &&
           (nio->offset % SD_PAGE_SIZE || nio->len % SD_PAGE_SIZE);
}

/* Requests [from, to) of a burst whose local I/O is in b: once it is
 * done, each goes on (reqs[i] is NULL for the others). */
static void finish_local(struct sd_export *x, struct xreq **reqs,
                         size_t from, size_t to, struct sd_local_batch *b)
{
    size_t i;

    sd_local_batch_wait(b);
    for (i = from; reqs && i < to; i++) {
        if (reqs[i] && reqs[i]->nio->type == NBD_CMD_READ) {
            finish_read(x, reqs[i]);
        } else if (reqs[i]) {
            finish_write(x, reqs[i]);
        }
    }
}

/* A burst of requests: first every donor io of its READs and WRITEs goes
 * out (one send per donor), then, in order, the local work of each and
 * the other commands; the local I/O of the READs and WRITEs between two
 * other commands goes to the disk together (sd_local_batch). */
void sd_export_submit(void *ctx, struct sd_nbd_io **nios, size_t n)
{
    struct sd_export *x = ctx;
    /* reqs, then a flag per request held by a promotion. */
    struct xreq **reqs = calloc(n, sizeof(*reqs) + 1);
    uint8_t *held = reqs ? (uint8_t *)(reqs + n) : NULL;
    struct sd_io **remote = NULL;
    size_t i, nseg = 0, nremote = 0, first = 0;
    struct sd_local_batch batch;

    pthread_rwlock_rdlock(&x->promo_rw);
    for (i = 0; reqs && i < n; i++) {
        struct sd_nbd_io *nio = nios[i];

        if ((held[i] = (uint8_t)sd_promote_hold(x, nio))) {
            continue;
        }
        if ((nio->type == NBD_CMD_READ || nio->type == NBD_CMD_WRITE) &&
            nio->len && !misaligned(x, nio) &&
            (reqs[i] = xreq_new(x, nio)) != NULL) {
            nseg += reqs[i]->nseg;
        }
    }
    if (reqs && nseg && (remote = malloc(nseg * sizeof(*remote))) != NULL) {
        for (i = 0; i < n; i++) {
            if (reqs[i]) {
                plan(x, reqs[i], remote, &nremote);
            }
        }
        submit_remote(x, remote, nremote);
    }
    sd_local_batch_init(&batch, &x->lc);
    for (i = 0; i < n; i++) {
        struct sd_nbd_io *nio = nios[i];
        struct xreq *r = reqs ? reqs[i] : NULL;

        if (held && held[i]) {
            continue;
        }
        if (r && !remote) {
            free(r);            /* planned nothing: out of memory */
            reqs[i] = r = NULL;
        }
        switch (nio->type) {
        case NBD_CMD_FLUSH:
        case NBD_CMD_TRIM:
            /* After the reads and writes before it, as they came. */
            finish_local(x, reqs, first, i, &batch);
            first = i + 1;
            nio->done(nio, nio->type == NBD_CMD_TRIM ? do_trim(x, nio) :
                           sd_local_sync(&x->lc) ? NBD_EIO : 0);
            break;
        case NBD_CMD_READ:
        case NBD_CMD_WRITE:
            if (nio->len == 0) {
                nio->done(nio, 0);
            } else if (misaligned(x, nio)) {
                nio->done(nio, NBD_EINVAL);
            } else if (!r) {
                nio->done(nio, NBD_ENOMEM);
            } else {
                start_local(x, r, &batch);
            }
            break;
        default:
            nio->done(nio, NBD_EINVAL);
            break;
        }
    }
    finish_local(x, reqs, first, n, &batch);
    pthread_rwlock_unlock(&x->promo_rw);
    free(remote);
    free(reqs);
}

void sd_export_clients(void *ctx, int delta)
{
    struct sd_export *x = ctx;

    __atomic_add_fetch(&x->clients, (uint32_t)delta, __ATOMIC_RELAXED);
}
