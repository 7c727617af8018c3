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
 * The fabric transport's KEY reply: what a donor tells a consumer, over
 * the TCP handshake (frame.h's KEY frame, encrypted and tagged with keys
 * derived from the grant's secret), so that the consumer can read and
 * write the grant's memory with one-sided operations.  SD_FRAME_KEY_LEN
 * bytes, little-endian:
 *
 *   off size
 *    0   4   magic "MSFK" (SD_FKEY_MAGIC)
 *    4   1   version (SD_FKEY_VERSION)
 *    5   1   length of the donor endpoint's address (1..SD_FKEY_ADDR_MAX)
 *    6   2   zero
 *    8   8   the slabs' memory key
 *   16   8   the slabs' first address, as slab tables have it
 *   24   8   the slabs' length in bytes (whole pages)
 *   32   8   the RMA address of that first byte (the address itself with
 *            FI_MR_VIRT_ADDR, else 0: offsets)
 *   40   8   the seals' memory key
 *   48   8   the RMA address of the seals' first byte
 *   56   8   the seals' length: SD_SEAL_LEN bytes per page of the slabs
 *   64  32   the donor's provider (fi_info's prov_name), NUL-padded
 *   96 160   the donor endpoint's fabric address (fi_getname), then zeros
 *
 * Slab k's byte x is at (slab address + x - first address) from the data's
 * RMA address; its page's seal at (that - first address) / SD_PAGE_SIZE *
 * SD_SEAL_LEN from the seals' RMA address (store.c lays both out in the
 * same order).
 */
#ifndef MEMAGG_SWAPD_FABRIC_KEY_H
#define MEMAGG_SWAPD_FABRIC_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"

#define SD_FKEY_MAGIC 0x4b46534dU      /* "MSFK" in memory order */
#define SD_FKEY_VERSION 1
#define SD_FKEY_PROV_LEN 32
#define SD_FKEY_ADDR_OFF 96
#define SD_FKEY_ADDR_MAX (SD_FRAME_KEY_LEN - SD_FKEY_ADDR_OFF)

struct sd_fkey {
    uint64_t key, base, len, target;
    uint64_t seals_key, seals_target, seals_len;
    char prov[SD_FKEY_PROV_LEN];        /* NUL-terminated */
    uint8_t addr[SD_FKEY_ADDR_MAX];
    size_t addr_len;
};

/* Write k (addr_len within bounds, prov NUL-terminated) into out. */
void sd_fkey_encode(const struct sd_fkey *k, uint8_t out[SD_FRAME_KEY_LEN]);

/* Parse and check a reply: 0 and *k, or -EINVAL (a short buffer, a field
 * out of range) or -EPROTO (not this format: magic, version, non-zero
 * padding), with *why saying which. */
int sd_fkey_parse(const uint8_t *buf, size_t len, struct sd_fkey *k,
                  const char **why);

#endif
