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
 * Page sealing: a sealed export's pages are encrypted and authenticated on
 * the consumer with the export's page key before they leave for a donor,
 * so donors and the wire see only ciphertext.  The AEAD is AEGIS-256X2
 * (RFC 10032, aegis.h) where the CPU has AES instructions, with a key
 * derived from the page key (HKDF-Expand-SHA256), and otherwise
 * AES-256-GCM (OpenSSL's libcrypto) with the page key itself.
 * AEGIS-256X2 seals a page in a fourth of GCM's time with VAES, half of
 * it with AES-NI.  Each page has a seal of
 * SD_SEAL_LEN bytes stored beside it on the donor:
 *
 *   off size
 *    0  12   nonce: the sealer's 8-byte epoch || 4-byte big-endian counter
 *            (AEGIS-256X2's 32-byte nonce is these 12 bytes, then zeros)
 *   12   1   version: the AEAD (SD_SEAL_AES_GCM or SD_SEAL_AEGIS)
 *   13   3   zero
 *   16  16   tag
 *
 * The AAD is the grant's uuid (16 bytes) || the page's index in the export
 * (8 bytes, big-endian): a donor cannot move a page to another offset or
 * another grant.  An all-zero seal (a page the donor never got a sealed
 * write for) does not open.
 *
 * Nonces: a sealer draws a random 64-bit epoch (RAND_bytes) when made and
 * again each time its 32-bit counter wraps.  No counter is persisted: with
 * random epochs, the chance that a restarted swapd, or the other host of a
 * live migration sealing with the same key, repeats an epoch is about
 * 2^-64 per pair of epochs, which is negligible.
 *
 * A page opens by its own seal's version, so the pages of an export sealed
 * before an upgrade, with GCM, still open; a host without AES
 * instructions cannot open an AEGIS-256X2 page (-EBADMSG).
 *
 * Not detected: rollback.  A donor that returns an older page it once held
 * at the same offset of the same grant (with that page's seal) passes.
 */
#ifndef MEMAGG_SWAPD_SEAL_H
#define MEMAGG_SWAPD_SEAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "swapd.h"

#define SD_SEAL_LEN 32
#define SD_SEAL_AES_GCM 1
#define SD_SEAL_AEGIS 2         /* AEGIS-256X2 */

/* The nonce source of one export.  Thread-safe: sealing takes one atomic
 * increment per page, and the lock only when the counter wraps. */
struct sd_sealer {
    uint64_t next;              /* atomic: epoch generation << 32 | counter */
    uint64_t ready;             /* atomic: the newest generation drawn */
    uint64_t epochs[2];         /* atomic: by generation & 1 */
    pthread_mutex_t lock;       /* drawing a new epoch */
};

/* The version this host seals with: SD_SEAL_AEGIS where the CPU runs
 * it, else SD_SEAL_AES_GCM. */
int sd_seal_version(void);

/* 0, or -EIO when no random epoch can be drawn. */
int sd_sealer_init(struct sd_sealer *s);
void sd_sealer_destroy(struct sd_sealer *s);

/* Encrypt npages pages of plain (pages first_page.. of grant's export)
 * into cipher (may be plain: in place), with their seals in
 * seals[npages * SD_SEAL_LEN], with sd_seal_version()'s AEAD.  0, or -EIO
 * when OpenSSL fails. */
int sd_seal_pages(struct sd_sealer *s, const uint8_t key[SD_KEY_LEN],
                  const uint8_t grant[SD_UUID_LEN], uint64_t first_page,
                  const void *plain, void *cipher, uint8_t *seals,
                  size_t npages);

/* Decrypt and check npages pages of buf in place.  0; -EBADMSG when a page
 * does not open (altered data or seal, another offset or grant, no seal):
 * *bad_page is its index in the export, and that page is zeroed (pages
 * after it are left as they were); -EIO when OpenSSL fails. */
int sd_open_pages(const uint8_t key[SD_KEY_LEN],
                  const uint8_t grant[SD_UUID_LEN], uint64_t first_page,
                  void *buf, const uint8_t *seals, size_t npages,
                  uint64_t *bad_page);

#endif
