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

/* The fabric transport's KEY reply: encoder and parser (see fabric_key.h
 * for the layout). */
#include <errno.h>
#include <string.h>

#include "fabric_key.h"
#include "seal.h"
#include "util.h"

static void put64(uint8_t *p, uint64_t v)
{
    int i;

    for (i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

void sd_fkey_encode(const struct sd_fkey *k, uint8_t out[SD_FRAME_KEY_LEN])
{
    memset(out, 0, SD_FRAME_KEY_LEN);
    out[0] = 'M';
    out[1] = 'S';
    out[2] = 'F';
    out[3] = 'K';
    out[4] = SD_FKEY_VERSION;
    out[5] = (uint8_t)k->addr_len;
    put64(out + 8, k->key);
    put64(out + 16, k->base);
    put64(out + 24, k->len);
    put64(out + 32, k->target);
    put64(out + 40, k->seals_key);
    put64(out + 48, k->seals_target);
    put64(out + 56, k->seals_len);
    memcpy(out + 64, k->prov, strnlen(k->prov, SD_FKEY_PROV_LEN - 1));
    memcpy(out + SD_FKEY_ADDR_OFF, k->addr, k->addr_len);
}

static int reject(const char **why, const char *reason, int err)
{
    *why = reason;
    return err;
}

int sd_fkey_parse(const uint8_t *buf, size_t len, struct sd_fkey *k,
                  const char **why)
{
    size_t i, plen;

    *why = NULL;
    if (len != SD_FRAME_KEY_LEN) {
        return reject(why, "not the length of a KEY reply", -EINVAL);
    }
    if (memcmp(buf, "MSFK", 4) != 0) {
        return reject(why, "bad magic", -EPROTO);
    }
    if (buf[4] != SD_FKEY_VERSION) {
        return reject(why, "unsupported version", -EPROTO);
    }
    k->addr_len = buf[5];
    if (k->addr_len == 0 || k->addr_len > SD_FKEY_ADDR_MAX) {
        return reject(why, "address length out of range", -EINVAL);
    }
    if (!sd_all_zero(buf + 6, 2) ||
        !sd_all_zero(buf + SD_FKEY_ADDR_OFF + k->addr_len,
                  SD_FKEY_ADDR_MAX - k->addr_len)) {
        return reject(why, "padding not zero", -EPROTO);
    }
    k->key = get64(buf + 8);
    k->base = get64(buf + 16);
    k->len = get64(buf + 24);
    k->target = get64(buf + 32);
    k->seals_key = get64(buf + 40);
    k->seals_target = get64(buf + 48);
    k->seals_len = get64(buf + 56);
    if (k->len == 0 || k->len % SD_PAGE_SIZE) {
        return reject(why, "region length not whole pages", -EINVAL);
    }
    if (k->base > UINT64_MAX - k->len || k->target > UINT64_MAX - k->len) {
        return reject(why, "region past the end of the address space",
                      -EINVAL);
    }
    if (k->seals_len != k->len / SD_PAGE_SIZE * SD_SEAL_LEN ||
        k->seals_target > UINT64_MAX - k->seals_len) {
        return reject(why, "seals do not match the region", -EINVAL);
    }
    /* A printable name, then NULs only. */
    plen = strnlen((const char *)buf + 64, SD_FKEY_PROV_LEN);
    if (plen == 0 || plen == SD_FKEY_PROV_LEN ||
        !sd_all_zero(buf + 64 + plen, SD_FKEY_PROV_LEN - plen)) {
        return reject(why, "provider name empty or not NUL-padded",
                      -EINVAL);
    }
    for (i = 0; i < plen; i++) {
        if (buf[64 + i] < 0x21 || buf[64 + i] > 0x7e) {
            return reject(why, "provider name not printable", -EINVAL);
        }
    }
    memcpy(k->prov, buf + 64, plen);
    k->prov[plen] = '\0';
    memcpy(k->addr, buf + SD_FKEY_ADDR_OFF, k->addr_len);
    return 0;
}
