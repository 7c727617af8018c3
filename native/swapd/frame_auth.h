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
 * Frame authentication of the TCP transport (frame.h has the layout).
 *
 * No secret crosses the wire.  The consumer opens a connection with a
 * HELLO carrying a fresh random nonce (RAND_bytes) and the MACs it can
 * make; the donor answers with its own nonce and the MAC it chose.  For
 * each grant a connection carries, each side derives a key per direction:
 *
 *   K = HKDF-SHA256(ikm = the grant's key,
 *                   salt = consumer nonce || donor nonce,
 *                   info = SD_FAUTH_LABEL || grant uuid || direction)
 *
 * so a key is good for one grant, one connection and one direction: a
 * frame replayed on another connection, or sent back the other way, does
 * not verify.  Only holders of the grant key can make K, so a verified
 * request proves the consumer to the donor and a verified reply the donor
 * to the consumer (mutual authentication, per grant).
 *
 * Every frame after the HELLO has a sequence number, 1 and up in each
 * direction, which the receiver requires to be exactly the next one, and
 * two tags made with K: the payload tag over the payload (the pages, then
 * the seals) and the header tag over the header's first 80 bytes, payload
 * tag included.  The receiver checks the header tag before it makes room
 * for or reads any payload, and the payload tag before it uses any of it.
 *
 * The MAC is AEGIS-256 (aegis.h) as a MAC -- no plaintext, the data as
 * associated data -- where both ends have AES instructions; otherwise
 * HMAC-SHA256 truncated to 16 bytes.  Each MAC has a distinct nonce: the
 * sequence number, the direction and what it covers (header, pages,
 * seals); the tag of a payload with seals is the pages' tag XOR the
 * seals' tag, two MACs under distinct nonces, so the two parts need not
 * be contiguous.
 */
#ifndef MEMAGG_SWAPD_FRAME_AUTH_H
#define MEMAGG_SWAPD_FRAME_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "swapd.h"

#define SD_FAUTH_LABEL "memagg-swapd frame v2"
/* The label of the pads that encrypt KEY replies (sd_fauth_pad). */
#define SD_FAUTH_PAD_LABEL "memagg-swapd key reply v1"
/* The longest pad HKDF-SHA256 makes. */
#define SD_FAUTH_PAD_MAX (255 * 32)

/* The MACs, as HELLO's bits. */
#define SD_FAUTH_HMAC 0x01
#define SD_FAUTH_AEGIS 0x02

enum sd_fauth_dir {
    SD_FAUTH_C2D = 0,           /* requests */
    SD_FAUTH_D2C = 1,           /* replies */
};

/* The MACs this host can make (SD_FAUTH_* bits). */
uint8_t sd_fauth_macs(void);

/* The donor's choice among the consumer's macs: the fastest both have, or
 * 0 when none. */
uint8_t sd_fauth_choose(uint8_t macs);

/* Fresh random bytes for a HELLO: 0 or -EIO. */
int sd_fauth_nonce(uint8_t nonce[SD_FRAME_NONCE_LEN]);

/* One direction's key of a grant on a connection. */
struct sd_fauth_key {
    uint8_t mac;                /* SD_FAUTH_AEGIS or SD_FAUTH_HMAC */
    uint8_t k[SD_KEY_LEN];
};

/* What a connection's end knows after the HELLO. */
struct sd_fauth_conn {
    uint8_t mac;
    uint8_t nonce_c[SD_FRAME_NONCE_LEN];
    uint8_t nonce_d[SD_FRAME_NONCE_LEN];
};

int sd_fauth_derive(const struct sd_fauth_conn *conn,
                    const uint8_t key[SD_KEY_LEN],
                    const uint8_t grant[SD_UUID_LEN], enum sd_fauth_dir dir,
                    struct sd_fauth_key *out);

/* The payload tag of data[0..len) then seals[0..seals_len) (seals may be
 * NULL), for the frame numbered seq: 0 or -EIO. */
int sd_fauth_payload_tag(const struct sd_fauth_key *k, uint64_t seq,
                         const void *data, size_t len, const void *seals,
                         size_t seals_len, uint8_t tag[SD_FRAME_TAG_LEN]);

/* Write hdr's header tag (over its bytes before it; seq is the one in
 * hdr): 0 or -EIO. */
int sd_fauth_sign(const struct sd_fauth_key *k, uint64_t seq,
                  uint8_t hdr[SD_FRAME_HDR_LEN]);

/* 0 when hdr's header tag is right, else -EBADMSG (-EIO: cannot tell). */
int sd_fauth_verify(const struct sd_fauth_key *k, uint64_t seq,
                    const uint8_t hdr[SD_FRAME_HDR_LEN]);

/* 0 when tag is the payload's, else -EBADMSG (-EIO: cannot tell). */
int sd_fauth_verify_payload(const struct sd_fauth_key *k, uint64_t seq,
                            const void *data, size_t len, const void *seals,
                            size_t seals_len,
                            const uint8_t tag[SD_FRAME_TAG_LEN]);

/*
 * Encrypt or decrypt (the same XOR) buf[0..len) of the frame numbered seq,
 * in direction dir, of grant on conn (len <= SD_FAUTH_PAD_MAX):
 *
 *   pad = HKDF-SHA256(ikm = the grant's key,
 *                     salt = consumer nonce || donor nonce,
 *                     info = SD_FAUTH_PAD_LABEL || grant uuid || direction
 *                            || seq, 8 bytes little-endian)
 *
 * A pad serves one frame only (the sequence number is in it), and only
 * holders of the grant key can make it: what a KEY reply carries (a
 * donor's memory keys) crosses the wire encrypted; its payload tag,
 * made over the ciphertext, authenticates it.  0, or -EINVAL (too long)
 * or -EIO.
 */
int sd_fauth_pad(const struct sd_fauth_conn *conn,
                 const uint8_t key[SD_KEY_LEN],
                 const uint8_t grant[SD_UUID_LEN], enum sd_fauth_dir dir,
                 uint64_t seq, uint8_t *buf, size_t len);

/*
 * A small cache of derived keys for one direction of one connection: a
 * derivation costs microseconds, a frame's MAC less.  Keyed by grant and
 * grant key (a grant freed and made again with another key misses).  Not
 * locked: one thread uses it.
 */
#define SD_FAUTH_CACHE_LEN 32

struct sd_fauth_cache {
    struct sd_fauth_cache_entry {
        uint8_t grant[SD_UUID_LEN];
        uint8_t ikm[SD_KEY_LEN];
        struct sd_fauth_key key;
        int used;
    } *e;                       /* SD_FAUTH_CACHE_LEN, made on first put */
    unsigned next;              /* the entry a miss replaces */
};

/* The key of grant (whose key is ikm) in direction dir on conn: from the
 * cache, or derived into *tmp.  NULL: -EIO (OpenSSL failed). */
const struct sd_fauth_key *sd_fauth_key_of(struct sd_fauth_cache *c,
                                           const struct sd_fauth_conn *conn,
                                           const uint8_t grant[SD_UUID_LEN],
                                           const uint8_t ikm[SD_KEY_LEN],
                                           enum sd_fauth_dir dir,
                                           struct sd_fauth_key *tmp);

/* Keep *k (a key sd_fauth_key_of derived, which has since verified a
 * frame) for grant; out of memory, it is not kept. */
void sd_fauth_cache_put(struct sd_fauth_cache *c,
                        const uint8_t grant[SD_UUID_LEN],
                        const uint8_t ikm[SD_KEY_LEN],
                        const struct sd_fauth_key *k);
void sd_fauth_cache_free(struct sd_fauth_cache *c);

#endif
