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

/* Frame authentication: key derivation and MACs (see frame_auth.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "aegis.h"
#include "frame_auth.h"
#include "kdf.h"

#define LABEL_LEN (sizeof(SD_FAUTH_LABEL) - 1)

/* What a MAC covers: part of its nonce, so no two MACs of a key share one. */
enum part { PART_HEADER = 1, PART_PAGES = 2, PART_SEALS = 3 };

uint8_t sd_fauth_macs(void)
{
    return SD_FAUTH_HMAC |
           (sd_aegis_best() != SD_AEGIS_NONE ? SD_FAUTH_AEGIS : 0);
}

uint8_t sd_fauth_choose(uint8_t macs)
{
    macs &= sd_fauth_macs();
    if (macs & SD_FAUTH_AEGIS) {
        return SD_FAUTH_AEGIS;
    }
    return macs & SD_FAUTH_HMAC;
}

int sd_fauth_nonce(uint8_t nonce[SD_FRAME_NONCE_LEN])
{
    return RAND_bytes(nonce, SD_FRAME_NONCE_LEN) == 1 ? 0 : -EIO;
}

int sd_fauth_derive(const struct sd_fauth_conn *conn,
                    const uint8_t key[SD_KEY_LEN],
                    const uint8_t grant[SD_UUID_LEN], enum sd_fauth_dir dir,
                    struct sd_fauth_key *out)
{
    uint8_t salt[2 * SD_FRAME_NONCE_LEN];
    uint8_t info[LABEL_LEN + SD_UUID_LEN + 1];

    if (conn->mac != SD_FAUTH_AEGIS && conn->mac != SD_FAUTH_HMAC) {
        return -EINVAL;
    }
    memcpy(salt, conn->nonce_c, SD_FRAME_NONCE_LEN);
    memcpy(salt + SD_FRAME_NONCE_LEN, conn->nonce_d, SD_FRAME_NONCE_LEN);
    memcpy(info, SD_FAUTH_LABEL, LABEL_LEN);
    memcpy(info + LABEL_LEN, grant, SD_UUID_LEN);
    info[LABEL_LEN + SD_UUID_LEN] = (uint8_t)dir;
    if (sd_hkdf_sha256(key, SD_KEY_LEN, salt, sizeof(salt), info,
                       sizeof(info), out->k, SD_KEY_LEN)) {
        return -EIO;
    }
    out->mac = conn->mac;
    return 0;
}

int sd_fauth_pad(const struct sd_fauth_conn *conn,
                 const uint8_t key[SD_KEY_LEN],
                 const uint8_t grant[SD_UUID_LEN], enum sd_fauth_dir dir,
                 uint64_t seq, uint8_t *buf, size_t len)
{
    static const char label[] = SD_FAUTH_PAD_LABEL;
    uint8_t salt[2 * SD_FRAME_NONCE_LEN];
    uint8_t info[sizeof(label) - 1 + SD_UUID_LEN + 1 + 8];
    uint8_t pad[SD_FAUTH_PAD_MAX];
    size_t i, off = sizeof(label) - 1;

    if (len > sizeof(pad)) {
        return -EINVAL;
    }
    memcpy(salt, conn->nonce_c, SD_FRAME_NONCE_LEN);
    memcpy(salt + SD_FRAME_NONCE_LEN, conn->nonce_d, SD_FRAME_NONCE_LEN);
    memcpy(info, label, off);
    memcpy(info + off, grant, SD_UUID_LEN);
    off += SD_UUID_LEN;
    info[off++] = (uint8_t)dir;
    for (i = 0; i < 8; i++) {
        info[off++] = (uint8_t)(seq >> (8 * i));
    }
    if (sd_hkdf_sha256(key, SD_KEY_LEN, salt, sizeof(salt), info,
                       sizeof(info), pad, len)) {
        return -EIO;
    }
    for (i = 0; i < len; i++) {
        buf[i] ^= pad[i];
    }
    OPENSSL_cleanse(pad, len);
    return 0;
}

/* The MAC of data[0..len) that part of frame seq. */
static int mac(const struct sd_fauth_key *k, uint64_t seq, enum part part,
               const void *data, size_t len, uint8_t tag[SD_FRAME_TAG_LEN])
{
    uint8_t nonce[SD_AEGIS_NONCE_LEN] = { 0 };
    uint8_t full[32];
    size_t i, flen = sizeof(full);
    EVP_MAC *m;
    EVP_MAC_CTX *ctx = NULL;
    char digest[] = "SHA256";
    OSSL_PARAM params[2];
    int rc = -EIO;

    for (i = 0; i < 8; i++) {
        nonce[i] = (uint8_t)(seq >> (8 * i));
    }
    nonce[8] = (uint8_t)part;
    if (k->mac == SD_FAUTH_AEGIS) {
        return sd_aegis_encrypt(k->k, nonce, data, len, NULL, NULL, 0, tag) ?
               -EIO : 0;
    }
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    ctx = m ? EVP_MAC_CTX_new(m) : NULL;
    if (ctx && EVP_MAC_init(ctx, k->k, SD_KEY_LEN, params) == 1 &&
        EVP_MAC_update(ctx, nonce, sizeof(nonce)) == 1 &&
        EVP_MAC_update(ctx, data, len) == 1 &&
        EVP_MAC_final(ctx, full, &flen, sizeof(full)) == 1) {
        memcpy(tag, full, SD_FRAME_TAG_LEN);
        rc = 0;
    } else {
        ERR_clear_error();
    }
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(m);
    return rc;
}

int sd_fauth_payload_tag(const struct sd_fauth_key *k, uint64_t seq,
                         const void *data, size_t len, const void *seals,
                         size_t seals_len, uint8_t tag[SD_FRAME_TAG_LEN])
{
    uint8_t t2[SD_FRAME_TAG_LEN];
    int rc = mac(k, seq, PART_PAGES, data, len, tag), i;

    if (rc == 0 && seals) {
        rc = mac(k, seq, PART_SEALS, seals, seals_len, t2);
        for (i = 0; i < SD_FRAME_TAG_LEN; i++) {
            tag[i] ^= t2[i];
        }
    }
    return rc;
}

int sd_fauth_sign(const struct sd_fauth_key *k, uint64_t seq,
                  uint8_t hdr[SD_FRAME_HDR_LEN])
{
    return mac(k, seq, PART_HEADER, hdr, SD_FRAME_HTAG_OFF,
               hdr + SD_FRAME_HTAG_OFF);
}

int sd_fauth_verify(const struct sd_fauth_key *k, uint64_t seq,
                    const uint8_t hdr[SD_FRAME_HDR_LEN])
{
    uint8_t want[SD_FRAME_TAG_LEN];
    int rc = mac(k, seq, PART_HEADER, hdr, SD_FRAME_HTAG_OFF, want);

    if (rc < 0) {
        return rc;
    }
    return CRYPTO_memcmp(want, hdr + SD_FRAME_HTAG_OFF,
                         SD_FRAME_TAG_LEN) ? -EBADMSG : 0;
}

int sd_fauth_verify_payload(const struct sd_fauth_key *k, uint64_t seq,
                            const void *data, size_t len, const void *seals,
                            size_t seals_len,
                            const uint8_t tag[SD_FRAME_TAG_LEN])
{
    uint8_t want[SD_FRAME_TAG_LEN];
    int rc = sd_fauth_payload_tag(k, seq, data, len, seals, seals_len, want);

    if (rc < 0) {
        return rc;
    }
    return CRYPTO_memcmp(want, tag, SD_FRAME_TAG_LEN) ? -EBADMSG : 0;
}

const struct sd_fauth_key *sd_fauth_key_of(struct sd_fauth_cache *c,
                                           const struct sd_fauth_conn *conn,
                                           const uint8_t grant[SD_UUID_LEN],
                                           const uint8_t ikm[SD_KEY_LEN],
                                           enum sd_fauth_dir dir,
                                           struct sd_fauth_key *tmp)
{
    unsigned i;

    for (i = 0; c->e && i < SD_FAUTH_CACHE_LEN; i++) {
        struct sd_fauth_cache_entry *e = &c->e[i];

        if (e->used && memcmp(e->grant, grant, SD_UUID_LEN) == 0 &&
            CRYPTO_memcmp(e->ikm, ikm, SD_KEY_LEN) == 0) {
            return &e->key;
        }
    }
    return sd_fauth_derive(conn, ikm, grant, dir, tmp) == 0 ? tmp : NULL;
}

void sd_fauth_cache_put(struct sd_fauth_cache *c,
                        const uint8_t grant[SD_UUID_LEN],
                        const uint8_t ikm[SD_KEY_LEN],
                        const struct sd_fauth_key *k)
{
    struct sd_fauth_cache_entry *e;
    unsigned i;

    if (!c->e && !(c->e = calloc(SD_FAUTH_CACHE_LEN, sizeof(*c->e)))) {
        return;
    }
    for (i = 0; i < SD_FAUTH_CACHE_LEN; i++) {
        if (c->e[i].used && &c->e[i].key == k) {
            return;             /* already there */
        }
    }
    /* An older key of this grant goes first, else the next in turn. */
    for (i = 0; i < SD_FAUTH_CACHE_LEN; i++) {
        if (c->e[i].used && memcmp(c->e[i].grant, grant, SD_UUID_LEN) == 0) {
            break;
        }
    }
    if (i == SD_FAUTH_CACHE_LEN) {
        i = c->next;
        c->next = (c->next + 1) % SD_FAUTH_CACHE_LEN;
    }
    e = &c->e[i];
    memcpy(e->grant, grant, SD_UUID_LEN);
    memcpy(e->ikm, ikm, SD_KEY_LEN);
    e->key = *k;
    e->used = 1;
}

void sd_fauth_cache_free(struct sd_fauth_cache *c)
{
    if (c->e) {
        OPENSSL_cleanse(c->e, SD_FAUTH_CACHE_LEN * sizeof(*c->e));
        free(c->e);
        c->e = NULL;
    }
}
