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
 * Page key wrapping for live migration (keywrap.h): X25519, HKDF-SHA256
 * and AES-256-GCM through OpenSSL 3's EVP interfaces.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "kdf.h"
#include "keywrap.h"

#define KW_LABEL "memagg page key v1"
#define KW_LABEL_LEN (sizeof(KW_LABEL) - 1)
#define KW_SECRET_LEN 32                /* X25519's shared secret */

/* Offsets in the blob (keywrap.h). */
#define OFF_PUB 1
#define OFF_NONCE (OFF_PUB + SD_KW_PUB_LEN)
#define OFF_CT (OFF_NONCE + SD_KW_NONCE_LEN)
#define OFF_TAG (OFF_CT + SD_KEY_LEN)

struct sd_kw_offer {
    EVP_PKEY *pkey;
    uint8_t pub[SD_KW_PUB_LEN];         /* bound into the wrapping key */
};

/* The errors OpenSSL queues are of no use to the caller, who gets an
 * errno; dropped so they do not surface at a later, unrelated call. */
static int openssl_failed(void)
{
    ERR_clear_error();
    return -EIO;
}

static EVP_PKEY *new_x25519(void)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
}

static int raw_public(EVP_PKEY *pkey, uint8_t pub[SD_KW_PUB_LEN])
{
    size_t len = SD_KW_PUB_LEN;

    if (EVP_PKEY_get_raw_public_key(pkey, pub, &len) != 1 ||
        len != SD_KW_PUB_LEN) {
        return openssl_failed();
    }
    return 0;
}

int sd_kw_offer_new(struct sd_kw_offer **out, uint8_t pub[SD_KW_PUB_LEN])
{
    struct sd_kw_offer *o;
    int rc;

    if (!out || !pub) {
        return -EINVAL;
    }
    o = calloc(1, sizeof(*o));
    if (!o) {
        return -ENOMEM;
    }
    o->pkey = new_x25519();
    if (!o->pkey) {
        free(o);
        return openssl_failed();
    }
    rc = raw_public(o->pkey, o->pub);
    if (rc < 0) {
        sd_kw_offer_free(o);
        return rc;
    }
    memcpy(pub, o->pub, SD_KW_PUB_LEN);
    *out = o;
    return 0;
}

void sd_kw_offer_free(struct sd_kw_offer *o)
{
    if (!o) {
        return;
    }
    EVP_PKEY_free(o->pkey);             /* zeroes the private key */
    OPENSSL_cleanse(o, sizeof(*o));
    free(o);
}

/* X25519 of own with the peer's public key, then HKDF-SHA256 into wkey.
 * A peer key that gives no shared secret returns bad_peer: OpenSSL's
 * X25519 derive fails exactly when the result is all zeros, which is what
 * the small-order points give (RFC 7748 section 6.1). */
static int wrapping_key(EVP_PKEY *own, const uint8_t peer[SD_KW_PUB_LEN],
                        const uint8_t dst_pub[SD_KW_PUB_LEN],
                        const uint8_t src_pub[SD_KW_PUB_LEN],
                        const uint8_t grant[SD_UUID_LEN],
                        uint8_t wkey[SD_KEY_LEN], int bad_peer)
{
    uint8_t secret[KW_SECRET_LEN];
    uint8_t info[KW_LABEL_LEN + 2 * SD_KW_PUB_LEN];
    uint8_t salt[SD_UUID_LEN];
    size_t secret_len = sizeof(secret);
    EVP_PKEY *peer_key = NULL;
    EVP_PKEY_CTX *pctx = NULL;
    int rc = -EIO;

    peer_key = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, peer,
                                           SD_KW_PUB_LEN);
    pctx = EVP_PKEY_CTX_new(own, NULL);
    if (!peer_key || !pctx || EVP_PKEY_derive_init(pctx) != 1 ||
        EVP_PKEY_derive_set_peer(pctx, peer_key) != 1) {
        goto out;
    }
    if (EVP_PKEY_derive(pctx, secret, &secret_len) != 1 ||
        secret_len != sizeof(secret)) {
        rc = bad_peer;
        goto out;
    }

    memcpy(salt, grant, SD_UUID_LEN);
    memcpy(info, KW_LABEL, KW_LABEL_LEN);
    memcpy(info + KW_LABEL_LEN, dst_pub, SD_KW_PUB_LEN);
    memcpy(info + KW_LABEL_LEN + SD_KW_PUB_LEN, src_pub, SD_KW_PUB_LEN);
    rc = sd_hkdf_sha256(secret, sizeof(secret), salt, sizeof(salt), info,
                        sizeof(info), wkey, SD_KEY_LEN);

out:
    if (rc < 0) {
        ERR_clear_error();
    }
    EVP_PKEY_CTX_free(pctx);
    EVP_PKEY_free(peer_key);
    OPENSSL_cleanse(secret, sizeof(secret));
    return rc;
}

int sd_kw_wrap(const uint8_t grant[SD_UUID_LEN], const uint8_t key[SD_KEY_LEN],
               const uint8_t pub[SD_KW_PUB_LEN],
               uint8_t blob[SD_KW_BLOB_LEN])
{
    uint8_t out[SD_KW_BLOB_LEN];
    uint8_t wkey[SD_KEY_LEN];
    EVP_PKEY *eph = NULL;
    EVP_CIPHER_CTX *cctx = NULL;
    int n, rc;

    if (!grant || !key || !pub || !blob) {
        return -EINVAL;
    }
    out[0] = SD_KW_VERSION;
    eph = new_x25519();
    if (!eph) {
        return openssl_failed();
    }
    rc = raw_public(eph, out + OFF_PUB);
    if (rc == 0) {
        rc = wrapping_key(eph, pub, pub, out + OFF_PUB, grant, wkey,
                          -EINVAL);
    }
    EVP_PKEY_free(eph);
    if (rc < 0) {
        return rc;
    }

    rc = -EIO;
    cctx = EVP_CIPHER_CTX_new();
    /* A nonce never repeats under a wrapping key: each key is used once,
     * the ephemeral pair being new for every blob. */
    if (!cctx || RAND_bytes(out + OFF_NONCE, SD_KW_NONCE_LEN) != 1 ||
        EVP_EncryptInit_ex2(cctx, EVP_aes_256_gcm(), wkey, out + OFF_NONCE,
                            NULL) != 1 ||
        EVP_EncryptUpdate(cctx, NULL, &n, grant, SD_UUID_LEN) != 1 ||
        EVP_EncryptUpdate(cctx, out + OFF_CT, &n, key, SD_KEY_LEN) != 1 ||
        n != SD_KEY_LEN ||
        EVP_EncryptFinal_ex(cctx, out + OFF_CT + n, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(cctx, EVP_CTRL_AEAD_GET_TAG, SD_KW_TAG_LEN,
                            out + OFF_TAG) != 1) {
        ERR_clear_error();
    } else {
        memcpy(blob, out, SD_KW_BLOB_LEN);
        rc = 0;
    }
    EVP_CIPHER_CTX_free(cctx);
    OPENSSL_cleanse(wkey, sizeof(wkey));
    OPENSSL_cleanse(out, sizeof(out));
    return rc;
}

int sd_kw_unwrap(const struct sd_kw_offer *o,
                 const uint8_t grant[SD_UUID_LEN],
                 const uint8_t blob[SD_KW_BLOB_LEN],
                 uint8_t key[SD_KEY_LEN])
{
    uint8_t wkey[SD_KEY_LEN];
    uint8_t plain[SD_KEY_LEN];
    uint8_t tag[SD_KW_TAG_LEN];
    EVP_CIPHER_CTX *cctx = NULL;
    int n, rc;

    if (!o || !grant || !blob || !key) {
        return -EINVAL;
    }
    if (blob[0] != SD_KW_VERSION) {
        return -EBADMSG;
    }
    /* A low-order source key is an altered blob, not a caller's error. */
    rc = wrapping_key(o->pkey, blob + OFF_PUB, o->pub, blob + OFF_PUB,
                      grant, wkey, -EBADMSG);
    if (rc < 0) {
        return rc;
    }

    rc = -EIO;
    memcpy(tag, blob + OFF_TAG, SD_KW_TAG_LEN);
    cctx = EVP_CIPHER_CTX_new();
    if (!cctx ||
        EVP_DecryptInit_ex2(cctx, EVP_aes_256_gcm(), wkey, blob + OFF_NONCE,
                            NULL) != 1 ||
        EVP_DecryptUpdate(cctx, NULL, &n, grant, SD_UUID_LEN) != 1 ||
        EVP_DecryptUpdate(cctx, plain, &n, blob + OFF_CT, SD_KEY_LEN) != 1 ||
        n != SD_KEY_LEN ||
        EVP_CIPHER_CTX_ctrl(cctx, EVP_CTRL_AEAD_SET_TAG, SD_KW_TAG_LEN,
                            tag) != 1) {
        ERR_clear_error();
    } else if (EVP_DecryptFinal_ex(cctx, plain + n, &n) != 1) {
        ERR_clear_error();
        rc = -EBADMSG;
    } else {
        memcpy(key, plain, SD_KEY_LEN);
        rc = 0;
    }
    EVP_CIPHER_CTX_free(cctx);
    OPENSSL_cleanse(wkey, sizeof(wkey));
    OPENSSL_cleanse(plain, sizeof(plain));
    return rc;
}
