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
 * HKDF-SHA256 (RFC 5869) through OpenSSL 3's EVP_KDF: the one key
 * derivation of memagg-swapd's wire keys (frame_auth.c's per-connection
 * frame keys, keywrap.c's wrapping keys).
 */
#ifndef MEMAGG_SWAPD_KDF_H
#define MEMAGG_SWAPD_KDF_H

#include <stddef.h>
#include <stdint.h>

/* out[0..out_len) = HKDF-SHA256(ikm, salt, info): 0, or -EIO (OpenSSL
 * could not derive; its error queue is cleared). */
int sd_hkdf_sha256(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt,
                   size_t salt_len, const uint8_t *info, size_t info_len,
                   uint8_t *out, size_t out_len);

#endif
