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
 * Handing a grant's 32-byte page key to the destination of a live
 * migration so that only the destination's memagg-swapd can open it
 * (whatever carries the blob in between: memagg-compute, RPC, the DB).
 *
 *   destination: sd_kw_offer_new() -> an ephemeral X25519 key pair; the
 *                public half goes to the source (EXPORT_CREATE's
 *                key_offer=), the private half stays in the offer
 *   source:      sd_kw_wrap() with that public key -> a blob
 *   destination: sd_kw_unwrap() with the offer -> the page key
 *
 * The source makes an ephemeral X25519 pair of its own per blob; the
 * wrapping key is HKDF-SHA256 of the X25519 shared secret (salt: the
 * grant's uuid; info: "memagg page key v1" || destination public key ||
 * source ephemeral public key), and the page key is sealed with
 * AES-256-GCM (random 12-byte nonce, AAD: the grant's uuid).  Blob:
 *
 *   off size
 *    0   1   version (SD_KW_VERSION)
 *    1  32   source ephemeral X25519 public key
 *   33  12   nonce
 *   45  32   encrypted page key
 *   77  16   GCM tag
 *
 * A blob opens only with the offer it was made for and the same grant.
 * Every function is safe to call from several threads at once.
 */
#ifndef MEMAGG_SWAPD_KEYWRAP_H
#define MEMAGG_SWAPD_KEYWRAP_H

#include <stdint.h>

#include "swapd.h"

#define SD_KW_VERSION 1
#define SD_KW_PUB_LEN 32                /* an X25519 public key */
#define SD_KW_NONCE_LEN 12
#define SD_KW_TAG_LEN 16
#define SD_KW_BLOB_LEN (1 + SD_KW_PUB_LEN + SD_KW_NONCE_LEN + SD_KEY_LEN + \
                        SD_KW_TAG_LEN)  /* 93 */

/* The destination's pending private key, opaque. */
struct sd_kw_offer;

/* Make an offer: 0 with *out and its public key in pub, -EINVAL for a
 * NULL argument, -EIO when OpenSSL fails.  Free it with
 * sd_kw_offer_free() once the key is installed or the migration ends. */
int sd_kw_offer_new(struct sd_kw_offer **out, uint8_t pub[SD_KW_PUB_LEN]);

/* Forget the offer's private key (zeroed) and free it; NULL is a no-op. */
void sd_kw_offer_free(struct sd_kw_offer *o);

/* Seal key for the holder of the offer whose public key is pub, bound to
 * grant: 0 and blob, -EINVAL for a NULL argument or a public key that
 * gives no shared secret (a low-order point such as all zeros), -EIO when
 * OpenSSL fails. */
int sd_kw_wrap(const uint8_t grant[SD_UUID_LEN], const uint8_t key[SD_KEY_LEN],
               const uint8_t pub[SD_KW_PUB_LEN],
               uint8_t blob[SD_KW_BLOB_LEN]);

/* Open a blob made by sd_kw_wrap() for o and grant: 0 and key, -EBADMSG
 * when it does not open (another offer, another grant, an altered byte,
 * an unknown version), -EINVAL for a NULL argument, -EIO when OpenSSL
 * fails.  key is written only on success. */
int sd_kw_unwrap(const struct sd_kw_offer *o,
                 const uint8_t grant[SD_UUID_LEN],
                 const uint8_t blob[SD_KW_BLOB_LEN],
                 uint8_t key[SD_KEY_LEN]);

#endif
