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
 * The NBD server of an export (fixed newstyle handshake, simple replies):
 * QEMU's block layer connects to <export-dir>/<uuid>.sock and swaps
 * through it.  The wire parsing is kept in pure functions (fuzzed); the
 * server runs an accept thread per export and a reader thread per
 * connection that hands requests to the backend asynchronously, a burst at
 * a time, so many are in flight and replies go out in completion order.
 */
#ifndef MEMAGG_SWAPD_NBD_H
#define MEMAGG_SWAPD_NBD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "swapd.h"

#define NBD_MAGIC               0x4e42444d41474943ULL   /* "NBDMAGIC" */
#define NBD_IHAVEOPT            0x49484156454f5054ULL   /* "IHAVEOPT" */
#define NBD_REP_MAGIC           0x0003e889045565a9ULL
#define NBD_REQUEST_MAGIC       0x25609513U
#define NBD_SIMPLE_REPLY_MAGIC  0x67446698U

#define NBD_FLAG_FIXED_NEWSTYLE (1 << 0)
#define NBD_FLAG_NO_ZEROES      (1 << 1)
#define NBD_FLAG_C_FIXED_NEWSTYLE NBD_FLAG_FIXED_NEWSTYLE
#define NBD_FLAG_C_NO_ZEROES    NBD_FLAG_NO_ZEROES

#define NBD_FLAG_HAS_FLAGS      (1 << 0)
#define NBD_FLAG_SEND_FLUSH     (1 << 2)
#define NBD_FLAG_SEND_FUA       (1 << 3)
#define NBD_FLAG_SEND_TRIM      (1 << 5)
#define NBD_FLAG_CAN_MULTI_CONN (1 << 8)

#define NBD_OPT_EXPORT_NAME     1
#define NBD_OPT_ABORT           2
#define NBD_OPT_LIST            3
#define NBD_OPT_INFO            6
#define NBD_OPT_GO              7

#define NBD_REP_ACK             1
#define NBD_REP_SERVER          2
#define NBD_REP_INFO            3
#define NBD_REP_ERR_UNSUP       0x80000001U
#define NBD_REP_ERR_INVALID     0x80000003U
#define NBD_REP_ERR_UNKNOWN     0x80000006U
#define NBD_REP_ERR_TOO_BIG     0x80000009U

#define NBD_INFO_EXPORT         0
#define NBD_INFO_BLOCK_SIZE     3

#define NBD_CMD_READ            0
#define NBD_CMD_WRITE           1
#define NBD_CMD_DISC            2
#define NBD_CMD_FLUSH           3
#define NBD_CMD_TRIM            4
#define NBD_CMD_WRITE_ZEROES    6       /* not offered: QEMU writes zeros */

#define NBD_CMD_FLAG_FUA        (1 << 0)
#define NBD_CMD_FLAG_NO_HOLE    (1 << 1)

/* Error numbers on the wire (NBD's own, equal to Linux's). */
#define NBD_EPERM               1
#define NBD_EIO                 5
#define NBD_ENOMEM              12
#define NBD_EINVAL              22
#define NBD_ENOSPC              28
#define NBD_EOVERFLOW           75
#define NBD_ENOTSUP             95
#define NBD_ESHUTDOWN           108

#define SD_NBD_REQUEST_SIZE     28
#define SD_NBD_OPT_HEADER_SIZE  16
#define SD_NBD_MAX_LEN          (32U << 20)     /* largest READ/WRITE */
#define SD_NBD_MAX_OPT_LEN      4096U           /* largest option data */
#define SD_NBD_MAX_NAME         4096U

/* A transmission-phase request as read off the wire. */
struct sd_nbd_request {
    uint16_t flags;
    uint16_t type;
    uint64_t handle;
    uint64_t offset;
    uint32_t len;
};

/* Decode the SD_NBD_REQUEST_SIZE bytes of a request; -EPROTO for a wrong
 * magic (the stream is out of step: the connection must close). */
int sd_nbd_parse_request(const uint8_t *buf, struct sd_nbd_request *req);

/* What the server does with a parsed request. */
struct sd_nbd_verdict {
    uint32_t error;         /* 0, or NBD_E* to reply with */
    uint32_t drain;         /* payload bytes to read and drop first */
    int close;              /* 1: reply (if error) then close */
};

/* Check a request against an export of size bytes: out-of-range or
 * oversized extents and unknown commands get NBD_EINVAL; a write too large
 * to drain closes the connection; NBD_CMD_DISC closes it without a reply. */
void sd_nbd_check_request(const struct sd_nbd_request *req, uint64_t size,
                          struct sd_nbd_verdict *v);

/* Decode an option header (IHAVEOPT, option, length); -EPROTO for a wrong
 * magic. */
int sd_nbd_parse_option(const uint8_t *buf, uint32_t *opt, uint32_t *len);

/* The data of NBD_OPT_INFO / NBD_OPT_GO: the export name (not NUL
 * terminated, it points into data) and whether the client asked for
 * NBD_INFO_BLOCK_SIZE; -EINVAL when the lengths do not add up. */
struct sd_nbd_info_request {
    const char *name;
    uint32_t name_len;
    int want_block_size;
};
int sd_nbd_parse_info(const uint8_t *data, uint32_t len,
                      struct sd_nbd_info_request *out);

/* One command handed to the backend.  done() runs exactly once, on any
 * thread, with 0 or an NBD_E* error. */
struct sd_nbd_io {
    uint16_t type;          /* NBD_CMD_READ, WRITE, FLUSH, TRIM, ... */
    uint16_t flags;
    uint64_t offset;
    uint32_t len;
    void *buf;              /* READ: to fill; WRITE: the data; else
                             * NULL.  SD_PAGE_SIZE-aligned, for direct
                             * I/O (local.h) */
    void (*done)(struct sd_nbd_io *io, uint32_t error);
    void *priv;             /* the server's */
    void *backend_priv;     /* the backend's, while it holds the io */
};

/* What a server serves. */
struct sd_nbd_backend {
    const char *name;       /* the export name clients must ask for */
    uint64_t size;
    /* The smallest block clients may address (0 or 1: any byte); above
     * 1, NBD_INFO_BLOCK_SIZE is sent whether asked for or not, and the
     * backend refuses requests not aligned to it. */
    uint32_t min_block;
    void *ctx;
    /* Take ios[0..n), the requests read in one burst, in order. */
    void (*submit)(void *ctx, struct sd_nbd_io **ios, size_t n);
    /* Called with +1 when a client enters transmission, -1 when it
     * leaves (may be NULL). */
    void (*clients)(void *ctx, int delta);
};

struct sd_nbd_server;

/* Listen on the unix socket path (replacing a stale one) and serve
 * backend; uid/gid (-1: leave) own the socket, mode 0660. */
int sd_nbd_server_start(const char *path, const struct sd_nbd_backend *be,
                        uid_t uid, gid_t gid, struct sd_nbd_server **out,
                        char *err, size_t errlen);
/* Close the socket, disconnect every client, wait for their in-flight
 * requests, free the server (the socket file is unlinked). */
void sd_nbd_server_stop(struct sd_nbd_server *server);

/* Serve one connected socket in the calling thread until the client
 * leaves, then close fd (tests and the fuzzer). */
void sd_nbd_serve_fd(int fd, const struct sd_nbd_backend *be);

#endif
