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
 * The TCP transport's wire format.  A connection opens with a HELLO each
 * way, then carries frames: each a fixed header of SD_FRAME_HDR_LEN
 * bytes, little-endian, then a payload.  No key is ever on the wire:
 * frames carry MAC tags made with a key derived per grant and per
 * connection (frame_auth.h says how).
 *
 * HELLO (the consumer's first message, and the donor's answer to it):
 *
 *   off size
 *    0   4   magic "MSWP" (SD_FRAME_MAGIC)
 *    4   1   version (SD_FRAME_VERSION)
 *    5   1   op: SD_FRAME_OP_HELLO
 *    6   2   flags: SD_FRAME_REPLY on the donor's; others must be 0
 *    8   1   MACs: the consumer's, those it can make (SD_FAUTH_* bits);
 *            the donor's, the one it chose of them (one bit)
 *    9  23   zero
 *   32  32   the sender's nonce: fresh random bytes
 *   64  32   zero
 *
 * Every other frame:
 *
 *   off size
 *    0   4   magic "MSWP" (SD_FRAME_MAGIC)
 *    4   1   version (SD_FRAME_VERSION)
 *    5   1   op: READ, WRITE, KEY (the fabric transport's request for a
 *            grant's memory keys, see fabric_key.h), or ERROR (a reply to
 *            a frame that could not be parsed or authenticated; the donor
 *            closes the connection after it)
 *    6   2   flags: SD_FRAME_REPLY on replies; SD_FRAME_SEALED on a
 *            sealed export's READ or WRITE (request and reply); others
 *            must be 0
 *    8   8   request id, chosen by the consumer, echoed in the reply
 *   16  16   grant uuid
 *   32   8   sequence number: 1 for the first frame after the HELLO, one
 *            more for each next frame in the same direction
 *   40   4   slab index
 *   44   4   length in bytes (at most SD_FRAME_MAX_LEN)
 *   48   8   offset inside the slab
 *   56   4   status: 0 in requests; 0 or -errno in replies
 *   60   4   reserved, 0
 *   64  16   payload tag: the MAC of the payload; zero without one
 *   80  16   header tag: the MAC of bytes 0..80 (so of the payload tag
 *            too); zero only in a reply the donor cannot sign (ERROR, or
 *            -EACCES for a grant it does not hold)
 *
 * Payload: length bytes after a WRITE request and after a successful READ
 * or KEY reply; none otherwise.  A KEY frame names no slab (slab and
 * offset 0, not sealed), its length is SD_FRAME_KEY_LEN, and its reply's
 * payload is encrypted (frame_auth.h, sd_fauth_pad) before it is
 * tagged.  With SD_FRAME_SEALED, offset and length are multiples of
 * SD_PAGE_SIZE and that payload is followed by the pages' seals,
 * (length / SD_PAGE_SIZE) * SD_SEAL_LEN bytes, which the donor stores and
 * returns without reading them.
 *
 * Version 1 had the grant's key where the sequence number is, in clear,
 * and no tags; the two versions do not talk to each other.
 */
#ifndef MEMAGG_SWAPD_FRAME_H
#define MEMAGG_SWAPD_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "seal.h"
#include "swapd.h"

#define SD_FRAME_MAGIC 0x5057534dU     /* "MSWP" in memory order */
#define SD_FRAME_VERSION 2
#define SD_FRAME_HDR_LEN 96
#define SD_FRAME_TAG_LEN 16
#define SD_FRAME_NONCE_LEN 32
/* Where the header tag starts: it covers the bytes before it. */
#define SD_FRAME_HTAG_OFF 80
#define SD_FRAME_PTAG_OFF 64
#define SD_FRAME_MAX_LEN (32U << 20)    /* QEMU's largest NBD request */

#define SD_FRAME_OP_ERROR 3             /* besides SD_OP_READ, SD_OP_WRITE */
#define SD_FRAME_OP_HELLO 4
#define SD_FRAME_OP_KEY 5
/* A KEY reply's payload: fabric_key.h's layout. */
#define SD_FRAME_KEY_LEN 256
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
    uint64_t seq;
    uint32_t slab;
    uint32_t len;
    uint64_t offset;
    int32_t status;
    uint8_t ptag[SD_FRAME_TAG_LEN];
    uint8_t htag[SD_FRAME_TAG_LEN];
};

/* Write f's header into out. */
void sd_frame_encode(const struct sd_frame *f,
                     uint8_t out[SD_FRAME_HDR_LEN]);

/* Parse and check the header in buf[0..len): 0 and *f, or -EINVAL (short
 * buffer, a field's value out of range) or -EPROTO (not this protocol:
 * magic, version, op, flags, reserved), with *why saying which. */
int sd_frame_parse(const uint8_t *buf, size_t len, struct sd_frame *f,
                   const char **why);

/* A HELLO: the consumer's (reply 0) with the MACs it can make, or the
 * donor's (reply 1) with the one it chose. */
void sd_hello_encode(int reply, uint8_t macs,
                     const uint8_t nonce[SD_FRAME_NONCE_LEN],
                     uint8_t out[SD_FRAME_HDR_LEN]);

/* Parse a HELLO (the donor's when reply): 0 with *macs and nonce, or
 * -EINVAL / -EPROTO with *why as sd_frame_parse. */
int sd_hello_parse(const uint8_t *buf, size_t len, int reply, uint8_t *macs,
                   uint8_t nonce[SD_FRAME_NONCE_LEN], const char **why);

/* Bytes of payload that follow a parsed header (with SD_FRAME_SEALED, the
 * seals too). */
uint32_t sd_frame_payload_len(const struct sd_frame *f);

#endif
