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
 * An export's local copy (the durability copy on this host's disk, and
 * the only copy of the slabs no donor serves): its I/O bypasses the
 * host's page cache, as QEMU's cache=none does.  Cached, the pages memagg
 * took out of a guest to free host memory would take that memory again,
 * and reads of the local tier would come from RAM, not from the disk the
 * tier stands for.
 *
 * The file is switched to O_DIRECT when its file system takes direct I/O
 * at SD_PAGE_SIZE alignment.  Buffers, offsets and lengths are then all
 * aligned: a caller's buffer that is not goes through an aligned bounce
 * buffer, and a request that covers part of a page reads that whole page
 * (a write then writes it back: read-modify-write).  Such a write holds
 * rmw exclusively and every other write holds it shared, so no write of
 * the same page lands between its read and its write and is undone.
 *
 * Where direct I/O is refused (EINVAL: ramfs, some FUSE file systems),
 * I/O is buffered and its pages leave the page cache once clean: a
 * read's right after it; a write's writeback starts at once, the ranges
 * written wait in a bounded ring (wb), and the oldest are waited for and
 * dropped as new ones come in, all of them at the next sd_local_sync.
 *
 * A write is in the kernel's hands when the call returns (on the device
 * with O_DIRECT, in the page cache otherwise), so a crash of the process
 * loses none; sd_local_sync (fdatasync) makes writes durable against a
 * crash of the host, with direct I/O too (the disk's write cache, the
 * extents of pages written into holes).
 */
#ifndef MEMAGG_SWAPD_LOCAL_H
#define MEMAGG_SWAPD_LOCAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "swapd.h"

/* Buffered mode: at most this many ranges, and bytes but for the newest
 * range's, may wait in the page cache for their writeback. */
#define SD_LOCAL_WB_RANGES 64
#define SD_LOCAL_WB_BYTES (4U << 20)

struct sd_local_range {
    uint64_t off, len;
};

struct sd_local {
    int fd;                     /* -1 before sd_local_open */
    int direct;                 /* O_DIRECT; else buffered, dropped */
    pthread_rwlock_t rmw;       /* direct: writes (see above) */
    pthread_mutex_t wb_lock;    /* buffered: the fields below */
    struct sd_local_range wb[SD_LOCAL_WB_RANGES];   /* oldest at wb_head */
    unsigned wb_head, wb_n;
    uint64_t wb_bytes;
};

/* Take fd (the copy, open read-write) into lc, with direct I/O when
 * direct is set and the file system takes it; logs which mode the copy
 * of export name uses.  Never fails: a refusal of direct I/O is the
 * buffered mode.  Tests pass direct 0 to run that mode anywhere. */
void sd_local_open(struct sd_local *lc, int fd, int direct,
                   const char *name);
/* Close the file, if lc holds one. */
void sd_local_close(struct sd_local *lc);

/* Read [off, off + len) into buf, zeros past the end of the file; 0 or
 * -errno. */
int sd_local_read(struct sd_local *lc, void *buf, size_t len, uint64_t off);
/* Write buf to [off, off + len); 0 or -errno (some of it may be written
 * then). */
int sd_local_write(struct sd_local *lc, const void *buf, size_t len,
                   uint64_t off);
/* fdatasync: every write before the call is durable; 0 or -errno. */
int sd_local_sync(struct sd_local *lc);

/*
 * The local I/O of a burst of requests (export_io.c), so that a direct
 * copy has it on the disk at once, not one request after the other: the
 * reads and writes of whole pages into aligned buffers wait in the batch
 * and go out together at sd_local_batch_wait (Linux AIO, the calling
 * thread's context), the others are done as they are added.  An op that
 * overlaps a waiting one, one of the two a write, waits for it first:
 * the copy sees a burst's I/O of one page in its order.
 */
#define SD_LOCAL_BATCH 64

struct sd_local_op {
    char *buf;
    size_t len;
    uint64_t off;
    int write;
    int ret;                    /* once done: 0 or -errno */
};

struct sd_local_batch {
    struct sd_local *lc;
    struct sd_local_op *op[SD_LOCAL_BATCH];
    unsigned n;
};

void sd_local_batch_init(struct sd_local_batch *b, struct sd_local *lc);
/* Do op (its buffer, range and direction set), now or at the next wait;
 * op stays the caller's until then. */
void sd_local_batch_add(struct sd_local_batch *b, struct sd_local_op *op);
/* Until every op added is done. */
void sd_local_batch_wait(struct sd_local_batch *b);

#endif
