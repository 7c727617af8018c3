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
 * An export's local copy, past the page cache (see local.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include <linux/aio_abi.h>

#include "local.h"
#include "util.h"

#define PAGE SD_PAGE_SIZE
/* A bounce buffer is at most this long: a longer request whose buffer
 * is not aligned goes through it in pieces. */
#define BOUNCE_MAX (256U << 10)

static uint64_t page_down(uint64_t v)
{
    return v - v % PAGE;
}

static uint64_t page_up(uint64_t v)
{
    return page_down(v + PAGE - 1);
}

/* Why direct I/O at page alignment is out for fd, or NULL when statx
 * does not say (the kernel's O_DIRECT check then decides). */
static const char *dio_misfit(int fd)
{
#ifdef STATX_DIOALIGN
    struct statx st;

    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st) == 0 &&
        (st.stx_mask & STATX_DIOALIGN)) {
        if (!st.stx_dio_offset_align) {
            return "its file system has no direct I/O";
        }
        if (st.stx_dio_offset_align > PAGE || st.stx_dio_mem_align > PAGE) {
            return "its file system's direct I/O needs more than 4 KiB "
                   "alignment";
        }
    }
#else
    (void)fd;
#endif
    return NULL;
}

void sd_local_open(struct sd_local *lc, int fd, int direct,
                   const char *name)
{
    const char *why = direct ? dio_misfit(fd) : "asked for (a test)";
    int flags;

    memset(lc, 0, sizeof(*lc));
    lc->fd = fd;
    /* Writer first: a read-modify-write must not wait out a stream of
     * whole-page writes. */
    sd_rwlock_init_writer_first(&lc->rmw);
    pthread_mutex_init(&lc->wb_lock, NULL);
    if (!why && ((flags = fcntl(fd, F_GETFL)) < 0 ||
                 fcntl(fd, F_SETFL, flags | O_DIRECT))) {
        why = errno == EINVAL ? "its file system refuses O_DIRECT"
                              : strerror(errno);
    }
    lc->direct = !why;
    if (lc->direct) {
        /* What an older memagg-swapd left cached (it wrote buffered)
         * goes where clean; the kernel keeps the rest coherent with
         * direct I/O (written back before a direct read of it, dropped
         * by a direct write). */
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        sd_log(LOG_INFO, "export %s: the local copy uses direct I/O "
               "(O_DIRECT): it stays out of the page cache", name);
    } else {
        /* Readahead would cache pages no read asked for: swap-ins are
         * random. */
        posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        sd_log(LOG_WARNING, "export %s: the local copy uses buffered I/O, "
               "its pages dropped from the page cache once written back: "
               "no direct I/O (%s)", name, why);
    }
}

void sd_local_close(struct sd_local *lc)
{
    if (lc->fd < 0) {
        return;
    }
    close(lc->fd);
    lc->fd = -1;
    pthread_rwlock_destroy(&lc->rmw);
    pthread_mutex_destroy(&lc->wb_lock);
}

/* pread [off, off + len); a short read is the end of the file: zeros
 * from there.  0 or -errno. */
static int pread_full(int fd, char *buf, size_t len, uint64_t off)
{
    ssize_t n;

    do {
        n = pread(fd, buf, len, (off_t)off);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return -errno;
    }
    memset(buf + n, 0, len - (size_t)n);
    return 0;
}

static int pwrite_full(int fd, const char *buf, size_t len, uint64_t off)
{
    while (len) {
        ssize_t n = pwrite(fd, buf, len, (off_t)off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -errno : -EIO;
        }
        buf += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* Direct I/O of whole pages [off, off + len) from or into buf, through a
 * bounce buffer when buf is not aligned. */
static int direct_pages(struct sd_local *lc, int write, char *buf,
                        size_t len, uint64_t off)
{
    size_t done, n;
    char *bounce;
    int ret = 0;

    if ((uintptr_t)buf % PAGE == 0) {
        return write ? pwrite_full(lc->fd, buf, len, off)
                     : pread_full(lc->fd, buf, len, off);
    }
    bounce = aligned_alloc(PAGE, len < BOUNCE_MAX ? len : BOUNCE_MAX);
    if (!bounce) {
        return -ENOMEM;
    }
    for (done = 0; done < len && ret == 0; done += n) {
        n = len - done < BOUNCE_MAX ? len - done : BOUNCE_MAX;
        if (write) {
            memcpy(bounce, buf + done, n);
            ret = pwrite_full(lc->fd, bounce, n, off + done);
        } else if ((ret = pread_full(lc->fd, bounce, n, off + done)) == 0) {
            memcpy(buf + done, bounce, n);
        }
    }
    free(bounce);
    return ret;
}

/* Direct I/O of [off, off + len), inside one page: the whole page is
 * read, and a write writes it back with buf's bytes in it. */
static int direct_part(struct sd_local *lc, int write, char *buf,
                       size_t len, uint64_t off)
{
    uint64_t base = page_down(off);
    char *page = aligned_alloc(PAGE, PAGE);
    int ret;

    if (!page) {
        return -ENOMEM;
    }
    ret = pread_full(lc->fd, page, PAGE, base);
    if (ret == 0 && write) {
        memcpy(page + (off - base), buf, len);
        ret = pwrite_full(lc->fd, page, PAGE, base);
    } else if (ret == 0) {
        memcpy(buf, page + (off - base), len);
    }
    free(page);
    return ret;
}

static int direct_io(struct sd_local *lc, int write, char *buf, size_t len,
                     uint64_t off)
{
    uint64_t end = off + len;
    size_t head = (size_t)(page_up(off) - off);
    size_t tail = (size_t)(end - page_down(end));
    int partial = head || tail, ret = 0;

    if (write && partial) {
        pthread_rwlock_wrlock(&lc->rmw);
    } else if (write) {
        pthread_rwlock_rdlock(&lc->rmw);
    }
    if (page_down(off) == page_down(end - 1) && partial) {
        ret = direct_part(lc, write, buf, len, off);        /* one page */
    } else {
        if (head) {
            ret = direct_part(lc, write, buf, head, off);
        }
        if (ret == 0 && len > head + tail) {
            ret = direct_pages(lc, write, buf + head, len - head - tail,
                               off + head);
        }
        if (ret == 0 && tail) {
            ret = direct_part(lc, write, buf + len - tail, tail, end - tail);
        }
    }
    if (write) {
        pthread_rwlock_unlock(&lc->rmw);
    }
    return ret;
}

/* Buffered mode: wait for the writeback of [off, off + len), started when
 * it was written, and drop its pages. */
static void wb_drop(struct sd_local *lc, const struct sd_local_range *r)
{
    sync_file_range(lc->fd, (off_t)r->off, (off_t)r->len,
                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                    SYNC_FILE_RANGE_WAIT_AFTER);
    posix_fadvise(lc->fd, (off_t)r->off, (off_t)r->len,
                  POSIX_FADV_DONTNEED);
}

/* Buffered mode: pages [off, off + len) were written; start their
 * writeback, queue them, and drop the oldest queued past the bounds. */
static void wb_add(struct sd_local *lc, uint64_t off, uint64_t len)
{
    struct sd_local_range old[SD_LOCAL_WB_RANGES];
    unsigned n = 0, i;

    sync_file_range(lc->fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
    pthread_mutex_lock(&lc->wb_lock);
    while (lc->wb_n && (lc->wb_n == SD_LOCAL_WB_RANGES ||
                        lc->wb_bytes + len > SD_LOCAL_WB_BYTES)) {
        old[n] = lc->wb[lc->wb_head];
        lc->wb_bytes -= old[n++].len;
        lc->wb_head = (lc->wb_head + 1) % SD_LOCAL_WB_RANGES;
        lc->wb_n--;
    }
    lc->wb[(lc->wb_head + lc->wb_n++) % SD_LOCAL_WB_RANGES] =
        (struct sd_local_range){ off, len };
    lc->wb_bytes += len;
    pthread_mutex_unlock(&lc->wb_lock);
    for (i = 0; i < n; i++) {
        wb_drop(lc, &old[i]);
    }
}

static int buffered_write(struct sd_local *lc, const char *buf, size_t len,
                          uint64_t off)
{
    size_t done = 0;
    int ret = 0;

    while (done < len && ret == 0) {
        /* One page per pwrite: the page cache then keeps small folios.
         * A large folio (from one large write) makes every later 4 KiB
         * write into it walk all its buffer heads on ext4, about 10x
         * slower (26.8 against 2.7 us measured). */
        size_t n = PAGE - (size_t)((off + done) % PAGE);

        if (n > len - done) {
            n = len - done;
        }
        ret = pwrite_full(lc->fd, buf + done, n, off + done);
        done += n;
    }
    wb_add(lc, page_down(off), page_up(off + len) - page_down(off));
    return ret;
}

int sd_local_read(struct sd_local *lc, void *buf, size_t len, uint64_t off)
{
    int ret;

    if (!len) {
        return 0;
    }
    if (lc->direct) {
        return direct_io(lc, 0, buf, len, off);
    }
    ret = pread_full(lc->fd, buf, len, off);
    /* Clean pages go now; those written lately go with their range. */
    posix_fadvise(lc->fd, (off_t)page_down(off),
                  (off_t)(page_up(off + len) - page_down(off)),
                  POSIX_FADV_DONTNEED);
    return ret;
}

int sd_local_write(struct sd_local *lc, const void *buf, size_t len,
                   uint64_t off)
{
    if (!len) {
        return 0;
    }
    return lc->direct ? direct_io(lc, 1, (char *)buf, len, off)
                      : buffered_write(lc, buf, len, off);
}

int sd_local_sync(struct sd_local *lc)
{
    struct sd_local_range old[SD_LOCAL_WB_RANGES];
    unsigned n = 0, i;
    int ret;

    if (!lc->direct) {
        /* Taken first: the fdatasync covers every range taken. */
        pthread_mutex_lock(&lc->wb_lock);
        for (; lc->wb_n; lc->wb_n--) {
            old[n++] = lc->wb[lc->wb_head];
            lc->wb_head = (lc->wb_head + 1) % SD_LOCAL_WB_RANGES;
        }
        lc->wb_bytes = 0;
        pthread_mutex_unlock(&lc->wb_lock);
    }
    ret = fdatasync(lc->fd) ? -errno : 0;
    for (i = 0; i < n; i++) {
        /* Clean now (dirty pages, should it have failed, stay). */
        posix_fadvise(lc->fd, (off_t)old[i].off, (off_t)old[i].len,
                      POSIX_FADV_DONTNEED);
    }
    return ret;
}

/* Each thread's AIO context for its batches, made at its first batch and
 * destroyed when the thread ends; 0 when none could be made (its batches
 * then go an op at a time). */
static pthread_key_t aio_key;
static pthread_once_t aio_once = PTHREAD_ONCE_INIT;
static int aio_key_ok, aio_warned;
static __thread aio_context_t aio_ctx;
static __thread int aio_tried;

static void aio_end(void *ctx)
{
    syscall(__NR_io_destroy, (aio_context_t)(uintptr_t)ctx);
}

static void aio_key_make(void)
{
    aio_key_ok = pthread_key_create(&aio_key, aio_end) == 0;
}

static aio_context_t thread_aio(void)
{
    if (aio_tried) {
        return aio_ctx;
    }
    aio_tried = 1;
    pthread_once(&aio_once, aio_key_make);
    if (!aio_key_ok || syscall(__NR_io_setup, SD_LOCAL_BATCH, &aio_ctx)) {
        /* aio-max-nr reached, most likely: slower, never wrong. */
        if (!__atomic_exchange_n(&aio_warned, 1, __ATOMIC_RELAXED)) {
            sd_log(LOG_WARNING, "cannot set up Linux AIO (%s): the local "
                   "copies' I/O goes a request at a time on some "
                   "connections", aio_key_ok ? strerror(errno)
                                             : "no thread key");
        }
        aio_ctx = 0;
    } else if (pthread_setspecific(aio_key, (void *)(uintptr_t)aio_ctx)) {
        syscall(__NR_io_destroy, aio_ctx);
        aio_ctx = 0;
    }
    return aio_ctx;
}

void sd_local_batch_init(struct sd_local_batch *b, struct sd_local *lc)
{
    b->lc = lc;
    b->n = 0;
}

static int overlap(const struct sd_local_op *a, const struct sd_local_op *b)
{
    return (a->write || b->write) && a->off < b->off + b->len &&
           b->off < a->off + a->len;
}

void sd_local_batch_add(struct sd_local_batch *b, struct sd_local_op *op)
{
    struct sd_local *lc = b->lc;
    unsigned i;

    op->ret = 0;
    if (!op->len) {
        return;
    }
    for (i = 0; i < b->n; i++) {
        if (overlap(op, b->op[i])) {
            sd_local_batch_wait(b);
            break;
        }
    }
    if (!lc->direct || (op->off | op->len | (uintptr_t)op->buf) % PAGE ||
        !thread_aio()) {
        op->ret = op->write ? sd_local_write(lc, op->buf, op->len, op->off)
                            : sd_local_read(lc, op->buf, op->len, op->off);
        return;
    }
    if (b->n == SD_LOCAL_BATCH) {
        sd_local_batch_wait(b);
    }
    b->op[b->n++] = op;
}

/* An op's AIO result res: a short read is the end of the file, the rest
 * of a short write is written again (its error then comes out). */
static void op_done(struct sd_local *lc, struct sd_local_op *op, long res)
{
    if (res < 0) {
        op->ret = (int)res;
    } else if (op->write) {
        op->ret = pwrite_full(lc->fd, op->buf + res, op->len - (size_t)res,
                              op->off + (uint64_t)res);
    } else {
        memset(op->buf + res, 0, op->len - (size_t)res);
        op->ret = 0;
    }
}

void sd_local_batch_wait(struct sd_local_batch *b)
{
    struct iocb cb[SD_LOCAL_BATCH], *cbp[SD_LOCAL_BATCH];
    struct io_event ev[SD_LOCAL_BATCH];
    struct sd_local *lc = b->lc;
    unsigned i, sent = 0, done = 0;
    int writes = 0;
    long k;

    if (!b->n) {
        return;
    }
    for (i = 0; i < b->n; i++) {
        memset(&cb[i], 0, sizeof(cb[i]));
        cb[i].aio_data = i;
        cb[i].aio_lio_opcode = b->op[i]->write ? IOCB_CMD_PWRITE
                                               : IOCB_CMD_PREAD;
        cb[i].aio_fildes = (uint32_t)lc->fd;
        cb[i].aio_buf = (uintptr_t)b->op[i]->buf;
        cb[i].aio_nbytes = b->op[i]->len;
        cb[i].aio_offset = (int64_t)b->op[i]->off;
        cbp[i] = &cb[i];
        writes |= b->op[i]->write;
    }
    /* Whole-page writes, shared: see local.h. */
    if (writes) {
        pthread_rwlock_rdlock(&lc->rmw);
    }
    while (sent < b->n && b->n > 1) {
        k = syscall(__NR_io_submit, aio_ctx, (long)(b->n - sent),
                    cbp + sent);
        if (k <= 0 && !(k < 0 && errno == EINTR)) {
            break;
        }
        sent += k > 0 ? (unsigned)k : 0;
    }
    for (i = sent; i < b->n; i++) {
        /* Alone (one pread or pwrite, not io_submit and io_getevents),
         * or not taken (EAGAIN): done here. */
        b->op[i]->ret = direct_pages(lc, b->op[i]->write, b->op[i]->buf,
                                     b->op[i]->len, b->op[i]->off);
    }
    while (done < sent) {
        k = syscall(__NR_io_getevents, aio_ctx, (long)(sent - done),
                    (long)(sent - done), ev, NULL);
        if (k < 0 && errno != EINTR) {
            /* The kernel still writes into the ops' buffers, which the
             * caller frees next: nothing safe is left to do. */
            sd_log(LOG_CRIT, "io_getevents failed: %s", strerror(errno));
            abort();
        }
        for (i = 0; k > 0 && i < (unsigned)k; i++) {
            op_done(lc, b->op[ev[i].data], (long)ev[i].res);
        }
        done += k > 0 ? (unsigned)k : 0;
    }
    if (writes) {
        pthread_rwlock_unlock(&lc->rmw);
    }
    b->n = 0;
}
