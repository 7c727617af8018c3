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
 * The TCP transport's wire format.  Every message is a fixed header of
 * SD_FRAME_HDR_LEN bytes, little-endian, then a payload:
 *
 *   off size
 *    0   4   magic "MSWP" (SD_FRAME_MAGIC)
 *    4   1   version (SD_FRAME_VERSION)
 *    5   1   op: READ, WRITE, or ERROR (a reply to a frame that could not
 *            be parsed; the donor closes the connection after it)
 *    6   2   flags: SD_FRAME_REPLY on replies; SD_FRAME_SEALED on a
 *            sealed export's READ or WRITE (request and reply); others
 *            must be 0
 *    8   8   request id, chosen by the consumer, echoed in the reply
 *   16  16   grant uuid
 *   32  32   grant key (zero in replies: the key never travels back)
 *   64   4   slab index
 *   68   4   length in bytes (at most SD_FRAME_MAX_LEN)
 *   72   8   offset inside the slab
 *   80   4   status: 0 in requests; 0 or -errno in replies
 *   84   4   reserved, 0
 *
 * Payload: length bytes after a WRITE request and after a successful READ
 * reply; none otherwise.  With SD_FRAME_SEALED, offset and length are
 * multiples of SD_PAGE_SIZE and that payload is followed by the pages'
 * seals, (length / SD_PAGE_SIZE) * SD_SEAL_LEN bytes, which the donor
 * stores and returns without reading them.
 */
#ifndef MEMAGG_SWAPD_FRAME_H
#define MEMAGG_SWAPD_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "seal.h"
#include "swapd.h"

#define SD_FRAME_MAGIC 0x5057534dU     /* "MSWP" in memory order */
#define SD_FRAME_VERSION 1
#define SD_FRAME_HDR_LEN 88
#define SD_FRAME_MAX_LEN (32U << 20)    /* QEMU's largest NBD request */

#define SD_FRAME_OP_ERROR 3             /* besides SD_OP_READ, SD_OP_WRITE */
#define SD_FRAME_REPLY 0x0001
#define SD_FRAME_SEALED 0x0002
/* The largest payload: SD_FRAME_MAX_LEN bytes of pages and their seals. */
#define SD_FRAME_MAX_PAYLOAD (SD_FRAME_MAX_LEN + \
                              SD_FRAME_MAX_LEN / SD_PAGE_SIZE * SD_SEAL_LEN)

struct sd_frame {
    uint8_t op;
    uint16_t flags;
    uint64_t id;
    uint8_t grant[SD_UUID_LEN];
    uint8_t key[SD_KEY_LEN];
    uint32_t slab;
    uint32_t len;
    uint64_t offset;
    int32_t status;
};

/* Write f's header into out. */
void sd_frame_encode(const struct sd_frame *f,
                     uint8_t out[SD_FRAME_HDR_LEN]);

/* Parse and check the header in buf[0..len): 0 and *f, or -EINVAL (short
 * buffer, a field's value out of range) or -EPROTO (not this protocol:
 * magic, version, op, flags, reserved), with *why saying which. */
int sd_frame_parse(const uint8_t *buf, size_t len, struct sd_frame *f,
                   const char **why);

/* Bytes of payload that follow a parsed header (with SD_FRAME_SEALED, the
 * seals too). */
uint32_t sd_frame_payload_len(const struct sd_frame *f);

#endif
