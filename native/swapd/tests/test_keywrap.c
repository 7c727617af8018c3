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
 * Tests of the page key wrapping (keywrap.h): round trip, a blob opened
 * with another offer or grant, every bit of a blob flipped, low-order
 * public keys, NULL arguments, and the blob's layout checked by opening
 * it through a second derivation written from the documented scheme
 * (OpenSSL's HKDF as an EVP_PKEY method rather than EVP_KDF).
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "check.h"
#include "keywrap.h"

static const uint8_t GRANT[SD_UUID_LEN] = {
    0x6f, 0x1c, 0x2a, 0x90, 0x3b, 0x44, 0x4d, 0x8e,
    0x9a, 0x01, 0x52, 0x7d, 0xc3, 0x0e, 0xb4, 0x11,
};

static void sample_key(uint8_t key[SD_KEY_LEN])
{
    int i;

    for (i = 0; i < SD_KEY_LEN; i++) {
        key[i] = (uint8_t)(0xa0 + i);
    }
}

static void test_round_trip(void)
{
    struct sd_kw_offer *o = NULL;
    uint8_t pub[SD_KW_PUB_LEN], key[SD_KEY_LEN], got[SD_KEY_LEN];
    uint8_t blob[SD_KW_BLOB_LEN], again[SD_KW_BLOB_LEN];

    CHECK(SD_KW_BLOB_LEN == 93);
    sample_key(key);
    CHECK(sd_kw_offer_new(&o, pub) == 0);
    CHECK(o != NULL);
    CHECK(!all_zero(pub, sizeof(pub)));
    CHECK(sd_kw_wrap(GRANT, key, pub, blob) == 0);
    CHECK(blob[0] == SD_KW_VERSION);
    /* The page key is not in clear where it travels. */
    CHECK(memcmp(blob + 45, key, SD_KEY_LEN) != 0);
    memset(got, 0, sizeof(got));
    CHECK(sd_kw_unwrap(o, GRANT, blob, got) == 0);
    CHECK(memcmp(got, key, SD_KEY_LEN) == 0);

    /* A fresh ephemeral key and nonce per blob: the same key wraps to
     * another blob, which opens just as well. */
    CHECK(sd_kw_wrap(GRANT, key, pub, again) == 0);
    CHECK(memcmp(again + 1, blob + 1, SD_KW_PUB_LEN) != 0);
    CHECK(memcmp(again, blob, SD_KW_BLOB_LEN) != 0);
    memset(got, 0, sizeof(got));
    CHECK(sd_kw_unwrap(o, GRANT, again, got) == 0);
    CHECK(memcmp(got, key, SD_KEY_LEN) == 0);
    sd_kw_offer_free(o);
}

static void test_wrong_offer(void)
{
    struct sd_kw_offer *o = NULL, *other = NULL;
    uint8_t pub[SD_KW_PUB_LEN], pub2[SD_KW_PUB_LEN];
    uint8_t key[SD_KEY_LEN], got[SD_KEY_LEN], blob[SD_KW_BLOB_LEN];

    sample_key(key);
    CHECK(sd_kw_offer_new(&o, pub) == 0);
    CHECK(sd_kw_offer_new(&other, pub2) == 0);
    CHECK(memcmp(pub, pub2, SD_KW_PUB_LEN) != 0);
    CHECK(sd_kw_wrap(GRANT, key, pub, blob) == 0);
    memset(got, 0x5a, sizeof(got));
    CHECK(sd_kw_unwrap(other, GRANT, blob, got) == -EBADMSG);
    /* Nothing is written on failure. */
    CHECK(got[0] == 0x5a && got[SD_KEY_LEN - 1] == 0x5a);
    sd_kw_offer_free(o);
    sd_kw_offer_free(other);
}

static void test_wrong_grant(void)
{
    struct sd_kw_offer *o = NULL;
    uint8_t pub[SD_KW_PUB_LEN], key[SD_KEY_LEN], got[SD_KEY_LEN];
    uint8_t blob[SD_KW_BLOB_LEN], grant[SD_UUID_LEN];

    sample_key(key);
    memcpy(grant, GRANT, sizeof(grant));
    grant[SD_UUID_LEN - 1] ^= 1;
    CHECK(sd_kw_offer_new(&o, pub) == 0);
    CHECK(sd_kw_wrap(GRANT, key, pub, blob) == 0);
    CHECK(sd_kw_unwrap(o, grant, blob, got) == -EBADMSG);
    CHECK(sd_kw_unwrap(o, GRANT, blob, got) == 0);
    sd_kw_offer_free(o);
}

static void test_every_bit_flipped(void)
{
    struct sd_kw_offer *o = NULL;
    uint8_t pub[SD_KW_PUB_LEN], key[SD_KEY_LEN], got[SD_KEY_LEN];
    uint8_t blob[SD_KW_BLOB_LEN], bad[SD_KW_BLOB_LEN];
    int i, bit, wrong = 0;

    sample_key(key);
    CHECK(sd_kw_offer_new(&o, pub) == 0);
    CHECK(sd_kw_wrap(GRANT, key, pub, blob) == 0);
    /* Including bit 255 of the source's public key, which X25519 itself
     * ignores: the key is bound into the wrapping key as sent. */
    for (i = 0; i < SD_KW_BLOB_LEN; i++) {
        for (bit = 0; bit < 8; bit++) {
            memcpy(bad, blob, sizeof(bad));
            bad[i] ^= (uint8_t)(1U << bit);
            if (sd_kw_unwrap(o, GRANT, bad, got) != -EBADMSG) {
                fprintf(stderr, "byte %d bit %d: not rejected\n", i, bit);
                wrong++;
            }
        }
    }
    CHECK(wrong == 0);
    sd_kw_offer_free(o);
}

static void test_low_order_keys(void)
{
    /* u = 0 and u = 1, two of X25519's small-order points: no shared
     * secret comes of them. */
    uint8_t zero[SD_KW_PUB_LEN] = {0}, one[SD_KW_PUB_LEN] = {1};
    struct sd_kw_offer *o = NULL;
    uint8_t pub[SD_KW_PUB_LEN], key[SD_KEY_LEN], got[SD_KEY_LEN];
    uint8_t blob[SD_KW_BLOB_LEN];

    sample_key(key);
    memset(blob, 0x77, sizeof(blob));
    CHECK(sd_kw_wrap(GRANT, key, zero, blob) == -EINVAL);
    CHECK(sd_kw_wrap(GRANT, key, one, blob) == -EINVAL);
    CHECK(blob[0] == 0x77 && blob[SD_KW_BLOB_LEN - 1] == 0x77);

    /* A blob claiming such a source key is refused as altered. */
    CHECK(sd_kw_offer_new(&o, pub) == 0);
    CHECK(sd_kw_wrap(GRANT, key, pub, blob) == 0);
    memset(blob + 1, 0, SD_KW_PUB_LEN);
    CHECK(sd_kw_unwrap(o, GRANT, blob, got) == -EBADMSG);
    memset(blob, 0, sizeof(blob));
    blob[0] = SD_KW_VERSION;
    CHECK(sd_kw_unwrap(o, GRANT, blob, got) == -EBADMSG);
    sd_kw_offer_free(o);
}

static void test_null_arguments(void)
{
    struct sd_kw_offer *o = NULL;
    uint8_t pub[SD_KW_PUB_LEN], key[SD_KEY_LEN], got[SD_KEY_LEN];
    uint8_t blob[SD_KW_BLOB_LEN];

    sample_key(key);
    CHECK(sd_kw_offer_new(NULL, pub) == -EINVAL);
    CHECK(sd_kw_offer_new(&o, NULL) == -EINVAL);
    CHECK(o == NULL);
    CHECK(sd_kw_offer_new(&o, pub) == 0);
    CHECK(sd_kw_wrap(NULL, key, pub, blob) == -EINVAL);
    CHECK(sd_kw_wrap(GRANT, NULL, pub, blob) == -EINVAL);
    CHECK(sd_kw_wrap(GRANT, key, NULL, blob) == -EINVAL);
    CHECK(sd_kw_wrap(GRANT, key, pub, NULL) == -EINVAL);
    CHECK(sd_kw_wrap(GRANT, key, pub, blob) == 0);
    CHECK(sd_kw_unwrap(NULL, GRANT, blob, got) == -EINVAL);
    CHECK(sd_kw_unwrap(o, NULL, blob, got) == -EINVAL);
    CHECK(sd_kw_unwrap(o, GRANT, NULL, got) == -EINVAL);
    CHECK(sd_kw_unwrap(o, GRANT, blob, NULL) == -EINVAL);
    sd_kw_offer_free(o);
    sd_kw_offer_free(NULL);
}

/* The scheme of keywrap.h done again: X25519(dst_priv, blob's source key),
 * HKDF-SHA256 through EVP_PKEY_HKDF, AES-256-GCM open.  0 and key, or -1. */
static int open_independently(EVP_PKEY *dst, const uint8_t dst_pub[32],
                              const uint8_t grant[16],
                              const uint8_t blob[SD_KW_BLOB_LEN],
                              uint8_t key[32])
{
    const uint8_t *src_pub = blob + 1, *nonce = blob + 33, *ct = blob + 45;
    uint8_t secret[32], wkey[32], info[18 + 64], tag[16];
    size_t secret_len = sizeof(secret), wkey_len = sizeof(wkey);
    EVP_PKEY *src = NULL;
    EVP_PKEY_CTX *x = NULL, *h = NULL;
    EVP_CIPHER_CTX *c = NULL;
    int n, ok = 0;

    memcpy(info, "memagg page key v1", 18);
    memcpy(info + 18, dst_pub, 32);
    memcpy(info + 50, src_pub, 32);
    memcpy(tag, blob + 77, sizeof(tag));
    src = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, src_pub, 32);
    x = EVP_PKEY_CTX_new(dst, NULL);
    h = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    c = EVP_CIPHER_CTX_new();
    ok = blob[0] == 1 && src && x && h && c &&
        EVP_PKEY_derive_init(x) == 1 &&
        EVP_PKEY_derive_set_peer(x, src) == 1 &&
        EVP_PKEY_derive(x, secret, &secret_len) == 1 &&
        EVP_PKEY_derive_init(h) == 1 &&
        EVP_PKEY_CTX_set_hkdf_md(h, EVP_sha256()) == 1 &&
        EVP_PKEY_CTX_set1_hkdf_key(h, secret, 32) == 1 &&
        EVP_PKEY_CTX_set1_hkdf_salt(h, grant, 16) == 1 &&
        EVP_PKEY_CTX_add1_hkdf_info(h, info, sizeof(info)) == 1 &&
        EVP_PKEY_derive(h, wkey, &wkey_len) == 1 &&
        EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, wkey, nonce) == 1 &&
        EVP_DecryptUpdate(c, NULL, &n, grant, 16) == 1 &&
        EVP_DecryptUpdate(c, key, &n, ct, 32) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16, tag) == 1 &&
        EVP_DecryptFinal_ex(c, key + 32, &n) == 1;
    EVP_CIPHER_CTX_free(c);
    EVP_PKEY_CTX_free(h);
    EVP_PKEY_CTX_free(x);
    EVP_PKEY_free(src);
    return ok ? 0 : -1;
}

static void test_layout(void)
{
    EVP_PKEY *dst = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
    uint8_t pub[32], key[SD_KEY_LEN], got[SD_KEY_LEN];
    uint8_t blob[SD_KW_BLOB_LEN];
    size_t len = sizeof(pub);

    sample_key(key);
    CHECK(dst != NULL);
    CHECK(EVP_PKEY_get_raw_public_key(dst, pub, &len) == 1);
    CHECK(sd_kw_wrap(GRANT, key, pub, blob) == 0);
    memset(got, 0, sizeof(got));
    CHECK(open_independently(dst, pub, GRANT, blob, got) == 0);
    CHECK(memcmp(got, key, SD_KEY_LEN) == 0);
    EVP_PKEY_free(dst);
}

int main(void)
{
    test_round_trip();
    test_wrong_offer();
    test_wrong_grant();
    test_every_bit_flipped();
    test_low_order_keys();
    test_null_arguments();
    test_layout();
    return check_summary();
}
