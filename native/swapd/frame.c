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

/* The TCP frame header: encoder and parser (see frame.h for the layout). */
#include <errno.h>
#include <string.h>

#include "frame.h"
#include "util.h"

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
    return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
    return get32(p) | (uint64_t)get32(p + 4) << 32;
}

void sd_frame_encode(const struct sd_frame *f, uint8_t out[SD_FRAME_HDR_LEN])
{
    put32(out, SD_FRAME_MAGIC);
    out[4] = SD_FRAME_VERSION;
    out[5] = f->op;
    put16(out + 6, f->flags);
    put64(out + 8, f->id);
    memcpy(out + 16, f->grant, SD_UUID_LEN);
    put64(out + 32, f->seq);
    put32(out + 40, f->slab);
    put32(out + 44, f->len);
    put64(out + 48, f->offset);
    put32(out + 56, (uint32_t)f->status);
    put32(out + 60, 0);
    memcpy(out + SD_FRAME_PTAG_OFF, f->ptag, SD_FRAME_TAG_LEN);
    memcpy(out + SD_FRAME_HTAG_OFF, f->htag, SD_FRAME_TAG_LEN);
}

void sd_hello_encode(int reply, uint8_t macs,
                     const uint8_t nonce[SD_FRAME_NONCE_LEN],
                     uint8_t out[SD_FRAME_HDR_LEN])
{
    memset(out, 0, SD_FRAME_HDR_LEN);
    put32(out, SD_FRAME_MAGIC);
    out[4] = SD_FRAME_VERSION;
    out[5] = SD_FRAME_OP_HELLO;
    put16(out + 6, reply ? SD_FRAME_REPLY : 0);
    out[8] = macs;
    memcpy(out + 32, nonce, SD_FRAME_NONCE_LEN);
}

static int reject(const char **why, const char *reason, int err)
{
    *why = reason;
    return err;
}

/* What every message starts with: a whole header of this protocol and
 * version. */
static int check_head(const uint8_t *buf, size_t len, const char **why)
{
    *why = NULL;
    if (len < SD_FRAME_HDR_LEN) {
        return reject(why, "short header", -EINVAL);
    }
    if (get32(buf) != SD_FRAME_MAGIC) {
        return reject(why, "bad magic", -EPROTO);
    }
    if (buf[4] != SD_FRAME_VERSION) {
        return reject(why, "unsupported version", -EPROTO);
    }
    return 0;
}

int sd_hello_parse(const uint8_t *buf, size_t len, int reply, uint8_t *macs,
                   uint8_t nonce[SD_FRAME_NONCE_LEN], const char **why)
{
    int rc = check_head(buf, len, why);

    if (rc) {
        return rc;
    }
    if (buf[5] != SD_FRAME_OP_HELLO) {
        return reject(why, "not a HELLO", -EPROTO);
    }
    if (get16(buf + 6) != (reply ? SD_FRAME_REPLY : 0)) {
        return reject(why, "HELLO with wrong flags", -EPROTO);
    }
    if (!sd_all_zero(buf + 9, 23) || !sd_all_zero(buf + 64, 32)) {
        return reject(why, "HELLO's zero fields not zero", -EPROTO);
    }
    *macs = buf[8];
    memcpy(nonce, buf + 32, SD_FRAME_NONCE_LEN);
    return 0;
}

int sd_frame_parse(const uint8_t *buf, size_t len, struct sd_frame *f,
                   const char **why)
{
    int reply, rc = check_head(buf, len, why);

    if (rc) {
        return rc;
    }
    f->op = buf[5];
    f->flags = get16(buf + 6);
    if (f->flags & ~(SD_FRAME_REPLY | SD_FRAME_SEALED)) {
        return reject(why, "unknown flags", -EPROTO);
    }
    if (get32(buf + 60) != 0) {
        return reject(why, "reserved field not zero", -EPROTO);
    }
    reply = f->flags & SD_FRAME_REPLY;
    if (f->op != SD_OP_READ && f->op != SD_OP_WRITE &&
        f->op != SD_FRAME_OP_KEY &&
        !(f->op == SD_FRAME_OP_ERROR && reply)) {
        return reject(why, "unknown op", -EPROTO);
    }
    f->id = get64(buf + 8);
    memcpy(f->grant, buf + 16, SD_UUID_LEN);
    f->seq = get64(buf + 32);
    f->slab = get32(buf + 40);
    f->len = get32(buf + 44);
    f->offset = get64(buf + 48);
    f->status = (int32_t)get32(buf + 56);
    memcpy(f->ptag, buf + SD_FRAME_PTAG_OFF, SD_FRAME_TAG_LEN);
    memcpy(f->htag, buf + SD_FRAME_HTAG_OFF, SD_FRAME_TAG_LEN);
    if (f->len > SD_FRAME_MAX_LEN) {
        return reject(why, "length above the maximum", -EINVAL);
    }
    if (f->offset > UINT64_MAX - f->len) {
        return reject(why, "offset + length overflows", -EINVAL);
    }
    if (!reply && f->status != 0) {
        return reject(why, "status set in a request", -EINVAL);
    }
    if (reply && (f->status > 0 || f->status < -4095)) {
        return reject(why, "status not 0 or -errno", -EINVAL);
    }
    if (f->op == SD_FRAME_OP_ERROR && f->status == 0) {
        return reject(why, "error reply without an error", -EINVAL);
    }
    if ((f->flags & SD_FRAME_SEALED) && f->op == SD_FRAME_OP_ERROR) {
        return reject(why, "sealed flag on an error reply", -EPROTO);
    }
    if (f->op == SD_FRAME_OP_KEY &&
        (f->len != SD_FRAME_KEY_LEN || f->slab || f->offset ||
         (f->flags & SD_FRAME_SEALED))) {
        return reject(why, "KEY frame with a slab, offset, seals or length "
                      "of its own", -EINVAL);
    }
    /* Seals go with whole pages only. */
    if ((f->flags & SD_FRAME_SEALED) &&
        (f->offset % SD_PAGE_SIZE || f->len % SD_PAGE_SIZE)) {
        return reject(why, "sealed frame's offset or length not a multiple "
                      "of the page size", -EINVAL);
    }
    if (sd_frame_payload_len(f) == 0 &&
        !sd_all_zero(f->ptag, SD_FRAME_TAG_LEN)) {
        return reject(why, "payload tag without a payload", -EINVAL);
    }
    return 0;
}

uint32_t sd_frame_payload_len(const struct sd_frame *f)
{
    int reply = f->flags & SD_FRAME_REPLY;
    uint32_t seals = f->flags & SD_FRAME_SEALED ?
                     f->len / SD_PAGE_SIZE * SD_SEAL_LEN : 0;

    if (f->op == SD_OP_WRITE && !reply) {
        return f->len + seals;
    }
    if ((f->op == SD_OP_READ || f->op == SD_FRAME_OP_KEY) && reply &&
        f->status == 0) {
        return f->len + seals;
    }
    return 0;
}
