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
 * Tests of AEGIS-256X2 (aegis.h), for every implementation this CPU runs:
 * the RFC's test vectors (from the reference implementation's set: no
 * data, then 8 bytes of associated data and a 120-byte message, a partial
 * last block); both implementations give the same ciphertext and tag for
 * every message length 0-130 and a page, with associated data of 0-70
 * bytes; in place; an altered tag, ciphertext byte, associated data byte
 * or nonce does not decrypt, and the output is then zeroed.  Prints
 * "N passed, N failed".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aegis.h"
#include "check.h"
#include "util.h"

#define PAGE 4096

static const char KEY[] =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
static const char NONCE[] =
    "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f";
static const char MSG2[] =
    "0405060704050607040506070405060704050607040506070405060704050607"
    "0405060704050607040506070405060704050607040506070405060704050607"
    "0405060704050607040506070405060704050607040506070405060704050607"
    "040506070405060704050607040506070405060704050607";
static const char CT2[] =
    "72120c2ea8236180d67859001f4729077b7064c414384fe3a7b52f1571f4f8a7"
    "d0f01e18db4f3bc0adb150702e5d147a8d36522132761b994c1bd395589e2ccf"
    "0790dfe2a3d12d61cd666b2859827739db4037dd3124c78424459376f6cac08e"
    "1a7223a2a43e398ce6385cd654a19f481cba3b8f25910b42";

/* Decode hex into out (cap bytes of room) with the daemon's decoder; the
 * byte count. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex) / 2;

    CHECK(n <= cap && sd_hex_decode(hex, strlen(hex), out, n) == 0);
    return n;
}

static void test_vectors(enum sd_aegis_impl impl)
{
    uint8_t key[32], nonce[32], ad[8], msg[128], ct[128], out[128];
    uint8_t tag[16], want[16];
    size_t len;

    unhex(KEY, key, sizeof(key));
    unhex(NONCE, nonce, sizeof(nonce));

    unhex("62cdbab084c83dacdb945bb446f049c8", want, sizeof(want));
    CHECK(sd_aegis_encrypt_with(impl, key, nonce, NULL, 0, NULL, out, 0,
                                tag) == 0);
    CHECK(memcmp(tag, want, 16) == 0);
    CHECK(sd_aegis_decrypt_with(impl, key, nonce, NULL, 0, NULL, out, 0,
                                want) == 0);

    unhex("0102030401020304", ad, sizeof(ad));
    len = unhex(MSG2, msg, sizeof(msg));
    CHECK(unhex(CT2, ct, sizeof(ct)) == len && len == 120);
    unhex("635d391828520bf1512763f0c8f5cdbd", want, sizeof(want));
    CHECK(sd_aegis_encrypt_with(impl, key, nonce, ad, sizeof(ad), msg, out,
                                len, tag) == 0);
    CHECK(memcmp(out, ct, len) == 0 && memcmp(tag, want, 16) == 0);
    CHECK(sd_aegis_decrypt_with(impl, key, nonce, ad, sizeof(ad), ct, out,
                                len, want) == 0);
    CHECK(memcmp(out, msg, len) == 0);

    /* In place, both ways. */
    memcpy(out, msg, len);
    CHECK(sd_aegis_encrypt_with(impl, key, nonce, ad, sizeof(ad), out, out,
                                len, tag) == 0);
    CHECK(memcmp(out, ct, len) == 0);
    CHECK(sd_aegis_decrypt_with(impl, key, nonce, ad, sizeof(ad), out, out,
                                len, want) == 0);
    CHECK(memcmp(out, msg, len) == 0);

    /* Altered: the tag, the last ciphertext byte, the associated data,
     * the nonce. */
    want[15] ^= 0x40;
    memset(out, 0xaa, sizeof(out));
    CHECK(sd_aegis_decrypt_with(impl, key, nonce, ad, sizeof(ad), ct, out,
                                len, want) == -EBADMSG);
    CHECK(all_zero(out, len));
    want[15] ^= 0x40;
    ct[len - 1] ^= 1;
    CHECK(sd_aegis_decrypt_with(impl, key, nonce, ad, sizeof(ad), ct, out,
                                len, want) == -EBADMSG);
    CHECK(all_zero(out, len));
    ct[len - 1] ^= 1;
    ad[7] ^= 1;
    CHECK(sd_aegis_decrypt_with(impl, key, nonce, ad, sizeof(ad), ct, out,
                                len, want) == -EBADMSG);
    ad[7] ^= 1;
    nonce[31] ^= 1;
    CHECK(sd_aegis_decrypt_with(impl, key, nonce, ad, sizeof(ad), ct, out,
                                len, want) == -EBADMSG);
}

/* AES-NI and VAES agree on every length, and each decrypts its own. */
static void test_same_everywhere(void)
{
    uint8_t key[32], nonce[32], ad[70], tag_ni[16], tag_va[16];
    uint8_t *msg = malloc(PAGE), *ni = malloc(PAGE), *va = malloc(PAGE);
    size_t len, adlen, i;
    int same = 1, opens = 1;

    for (i = 0; i < PAGE; i++) {
        msg[i] = (uint8_t)(i * 131 + 7);
    }
    for (i = 0; i < sizeof(ad); i++) {
        ad[i] = (uint8_t)(i * 17 + 3);
    }
    unhex(KEY, key, sizeof(key));
    unhex(NONCE, nonce, sizeof(nonce));
    for (len = 0; len <= PAGE; len = len < 130 ? len + 1 : PAGE) {
        adlen = len % sizeof(ad);
        nonce[0] = (uint8_t)len;
        same &= sd_aegis_encrypt_with(SD_AEGIS_AESNI, key, nonce, ad, adlen,
                                      msg, ni, len, tag_ni) == 0 &&
                sd_aegis_encrypt_with(SD_AEGIS_VAES, key, nonce, ad, adlen,
                                      msg, va, len, tag_va) == 0 &&
                memcmp(ni, va, len) == 0 && memcmp(tag_ni, tag_va, 16) == 0;
        opens &= sd_aegis_decrypt_with(SD_AEGIS_AESNI, key, nonce, ad, adlen,
                                       va, ni, len, tag_va) == 0 &&
                 memcmp(ni, msg, len) == 0;
        if (len == PAGE) {
            break;
        }
    }
    CHECK(same);
    CHECK(opens);
    free(msg);
    free(ni);
    free(va);
}

int main(void)
{
    enum sd_aegis_impl best = sd_aegis_best();
    uint8_t z[32] = { 0 }, tag[16];

    if (best == SD_AEGIS_NONE) {
        CHECK(sd_aegis_encrypt(z, z, NULL, 0, z, z, 16, tag) == -ENOTSUP);
        return check_summary();
    }
    test_vectors(SD_AEGIS_AESNI);
    if (best >= SD_AEGIS_VAES) {
        test_vectors(SD_AEGIS_VAES);
        test_same_everywhere();
    } else {
        CHECK(sd_aegis_encrypt_with(SD_AEGIS_VAES, z, z, NULL, 0, z, z, 16,
                                    tag) == -ENOTSUP);
    }
    CHECK(sd_aegis_encrypt_with(SD_AEGIS_NONE, z, z, NULL, 0, z, z, 16,
                                tag) == -ENOTSUP);
    return check_summary();
}
