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
 * Tests of page sealing (seal.h): a round trip, in place and not; the
 * ciphertext is not the page; an altered data byte, tag, nonce or version,
 * another page index (AAD), another grant, another key and an all-zero
 * seal do not open, and the page that failed is named and zeroed; nonces
 * are unique across threads sealing at once and across a counter wrap,
 * which draws a new epoch; pages sealed with AES-256-GCM (version 1, as
 * before AEGIS-256X2) still open, beside AEGIS-256X2 pages in one call,
 * and a page does not open under the other AEAD's version.  Prints
 * "N passed, N failed".
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "check.h"
#include "seal.h"

#define NPAGES 8
#define THREADS 4
#define PER_THREAD 256

static const uint8_t grant[SD_UUID_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8,
                                            9, 10, 11, 12, 13, 14, 15, 16 };
static uint8_t key[SD_KEY_LEN];

static void fill(uint8_t *p, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(i * 31 + seed * 7 + (i >> 12));
    }
}

/* Open a copy of cipher/seals as given; returns sd_open_pages's result. */
static int try_open(const uint8_t *k, const uint8_t *g, uint64_t first,
                    const uint8_t *cipher, const uint8_t *seals,
                    size_t npages, uint8_t *out, uint64_t *bad)
{
    memcpy(out, cipher, npages * SD_PAGE_SIZE);
    return sd_open_pages(k, g, first, out, seals, npages, bad);
}

struct sealer_arg {
    struct sd_sealer *s;
    uint8_t *seals;             /* PER_THREAD seals */
    int ret;
};

static void *seal_many(void *arg)
{
    struct sealer_arg *a = arg;
    static const uint8_t page[SD_PAGE_SIZE];
    uint8_t out[SD_PAGE_SIZE];
    int i;

    a->ret = 0;
    for (i = 0; i < PER_THREAD && a->ret == 0; i++) {
        a->ret = sd_seal_pages(a->s, key, grant, (uint64_t)i, page, out,
                               a->seals + (size_t)i * SD_SEAL_LEN, 1);
    }
    return NULL;
}

static int nonce_cmp(const void *a, const void *b)
{
    return memcmp(a, b, 12);
}

static void test_round_trip_and_tamper(struct sd_sealer *s)
{
    uint8_t *plain = malloc(NPAGES * SD_PAGE_SIZE);
    uint8_t *cipher = malloc(NPAGES * SD_PAGE_SIZE);
    uint8_t *out = malloc(NPAGES * SD_PAGE_SIZE);
    uint8_t seals[NPAGES * SD_SEAL_LEN], bad_seals[NPAGES * SD_SEAL_LEN];
    uint8_t other_grant[SD_UUID_LEN], other_key[SD_KEY_LEN];
    uint64_t bad = 0;
    int i;

    fill(plain, NPAGES * SD_PAGE_SIZE, 1);
    CHECK(sd_seal_pages(s, key, grant, 100, plain, cipher, seals,
                        NPAGES) == 0);
    CHECK(memcmp(plain, cipher, SD_PAGE_SIZE) != 0);
    for (i = 0; i < NPAGES; i++) {
        CHECK(seals[i * SD_SEAL_LEN + 12] == sd_seal_version());
    }
    CHECK(try_open(key, grant, 100, cipher, seals, NPAGES, out, &bad) == 0);
    CHECK(memcmp(out, plain, NPAGES * SD_PAGE_SIZE) == 0);

    /* In place. */
    memcpy(out, plain, NPAGES * SD_PAGE_SIZE);
    CHECK(sd_seal_pages(s, key, grant, 100, out, out, seals, NPAGES) == 0);
    memcpy(cipher, out, NPAGES * SD_PAGE_SIZE);
    CHECK(sd_open_pages(key, grant, 100, out, seals, NPAGES, &bad) == 0);
    CHECK(memcmp(out, plain, NPAGES * SD_PAGE_SIZE) == 0);

    /* A data byte of page 3 flipped: page 103 is named and zeroed. */
    cipher[3 * SD_PAGE_SIZE + 77] ^= 0x01;
    CHECK(try_open(key, grant, 100, cipher, seals, NPAGES, out, &bad) ==
          -EBADMSG);
    CHECK(bad == 103);
    CHECK(memcmp(out, plain, 3 * SD_PAGE_SIZE) == 0);
    for (i = 0; i < (int)SD_PAGE_SIZE; i++) {
        if (out[3 * SD_PAGE_SIZE + i]) {
            break;
        }
    }
    CHECK(i == (int)SD_PAGE_SIZE);
    cipher[3 * SD_PAGE_SIZE + 77] ^= 0x01;

    /* The tag, the nonce, the version, the zero bytes of a seal. */
    {
        static const int at[] = { 16, 31, 0, 11, 12, 13, 15 };

        for (i = 0; i < (int)(sizeof(at) / sizeof(at[0])); i++) {
            memcpy(bad_seals, seals, sizeof(seals));
            bad_seals[5 * SD_SEAL_LEN + at[i]] ^= 0x80;
            bad = 0;
            CHECK(try_open(key, grant, 100, cipher, bad_seals, NPAGES, out,
                           &bad) == -EBADMSG);
            CHECK(bad == 105);
        }
    }

    /* Another offset (the AAD's page index): pages moved. */
    CHECK(try_open(key, grant, 101, cipher, seals, NPAGES, out, &bad) ==
          -EBADMSG);
    CHECK(bad == 101);
    /* Page 2 put where page 1 was, with its seal. */
    CHECK(try_open(key, grant, 101, cipher + 2 * SD_PAGE_SIZE,
                   seals + 2 * SD_SEAL_LEN, 1, out, &bad) == -EBADMSG);
    CHECK(try_open(key, grant, 102, cipher + 2 * SD_PAGE_SIZE,
                   seals + 2 * SD_SEAL_LEN, 1, out, &bad) == 0);

    /* Another grant, another key. */
    memcpy(other_grant, grant, SD_UUID_LEN);
    other_grant[15] ^= 1;
    CHECK(try_open(key, other_grant, 100, cipher, seals, NPAGES, out,
                   &bad) == -EBADMSG && bad == 100);
    memcpy(other_key, key, SD_KEY_LEN);
    other_key[0] ^= 1;
    CHECK(try_open(other_key, grant, 100, cipher, seals, NPAGES, out,
                   &bad) == -EBADMSG && bad == 100);
    /* The thread's context follows the key back. */
    CHECK(try_open(key, grant, 100, cipher, seals, NPAGES, out, &bad) == 0);
    CHECK(sd_seal_pages(s, other_key, grant, 7, plain, cipher, seals, 1) ==
          0);
    CHECK(try_open(other_key, grant, 7, cipher, seals, 1, out, &bad) == 0 &&
          memcmp(out, plain, SD_PAGE_SIZE) == 0);
    CHECK(try_open(key, grant, 7, cipher, seals, 1, out, &bad) == -EBADMSG);

    /* A page the donor never got a sealed write for: zeros, zero seal. */
    memset(bad_seals, 0, sizeof(bad_seals));
    memset(out, 0, SD_PAGE_SIZE);
    CHECK(sd_open_pages(key, grant, 100, out, bad_seals, 1, &bad) ==
          -EBADMSG && bad == 100);

    free(plain);
    free(cipher);
    free(out);
}

static void test_nonces_unique(void)
{
    struct sd_sealer s;
    struct sealer_arg args[THREADS];
    pthread_t th[THREADS];
    uint8_t *all = malloc((size_t)THREADS * PER_THREAD * SD_SEAL_LEN);
    uint8_t *nonces = malloc((size_t)THREADS * PER_THREAD * 12);
    size_t i, dup = 0, total = (size_t)THREADS * PER_THREAD;

    CHECK(sd_sealer_init(&s) == 0);
    for (i = 0; i < THREADS; i++) {
        args[i].s = &s;
        args[i].seals = all + i * PER_THREAD * SD_SEAL_LEN;
        CHECK(pthread_create(&th[i], NULL, seal_many, &args[i]) == 0);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].ret == 0);
    }
    for (i = 0; i < total; i++) {
        memcpy(nonces + i * 12, all + i * SD_SEAL_LEN, 12);
    }
    qsort(nonces, total, 12, nonce_cmp);
    for (i = 1; i < total; i++) {
        dup += memcmp(nonces + (i - 1) * 12, nonces + i * 12, 12) == 0;
    }
    CHECK(dup == 0);
    sd_sealer_destroy(&s);
    free(all);
    free(nonces);
}

/* The counter wraps: the next seal has a new epoch and counter 0, and
 * still opens. */
static void test_wrap(void)
{
    struct sd_sealer s;
    uint8_t page[SD_PAGE_SIZE], out[SD_PAGE_SIZE], seals[2 * SD_SEAL_LEN];
    uint64_t bad;

    CHECK(sd_sealer_init(&s) == 0);
    s.next = 0xffffffffULL;
    fill(page, sizeof(page), 3);
    CHECK(sd_seal_pages(&s, key, grant, 0, page, out, seals, 1) == 0);
    CHECK(sd_seal_pages(&s, key, grant, 1, page, out, seals + SD_SEAL_LEN,
                        1) == 0);
    CHECK(memcmp(seals + 8, "\xff\xff\xff\xff", 4) == 0);
    CHECK(memcmp(seals + SD_SEAL_LEN + 8, "\0\0\0\0", 4) == 0);
    CHECK(memcmp(seals, seals + SD_SEAL_LEN, 8) != 0);
    CHECK(s.ready == 1);
    CHECK(sd_open_pages(key, grant, 1, out, seals + SD_SEAL_LEN, 1,
                        &bad) == 0);
    CHECK(memcmp(out, page, sizeof(page)) == 0);
    sd_sealer_destroy(&s);
}

/* Seal one page as version 1 did: AES-256-GCM with the page key itself,
 * the 12-byte nonce, AAD grant || big-endian page index. */
static int seal_gcm(const uint8_t *plain, uint8_t *cipher, uint8_t *seal,
                    uint64_t page, uint8_t nonce_byte)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    uint8_t aad[SD_UUID_LEN + 8];
    int n, i, ok;

    memset(seal, 0, SD_SEAL_LEN);
    memset(seal, nonce_byte, 12);
    seal[12] = SD_SEAL_AES_GCM;
    memcpy(aad, grant, SD_UUID_LEN);
    for (i = 0; i < 8; i++) {
        aad[SD_UUID_LEN + i] = (uint8_t)(page >> (56 - 8 * i));
    }
    ok = c && EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, seal) &&
         EVP_EncryptUpdate(c, NULL, &n, aad, sizeof(aad)) &&
         EVP_EncryptUpdate(c, cipher, &n, plain, SD_PAGE_SIZE) &&
         EVP_EncryptFinal_ex(c, cipher + n, &n) &&
         EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, seal + 16);
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

/* Pages on donors from before AEGIS-256X2 (GCM, version 1) open beside new
 * ones; the version byte chooses the AEAD and its key, so a page does not
 * open under the other's. */
static void test_versions(struct sd_sealer *s)
{
    uint8_t *plain = malloc(3 * SD_PAGE_SIZE);
    uint8_t *cipher = malloc(3 * SD_PAGE_SIZE);
    uint8_t *out = malloc(3 * SD_PAGE_SIZE);
    uint8_t seals[3 * SD_SEAL_LEN];
    uint64_t bad = 0;

    fill(plain, 3 * SD_PAGE_SIZE, 5);
    CHECK(seal_gcm(plain, cipher, seals, 40, 0x11) == 0);
    CHECK(sd_seal_pages(s, key, grant, 41, plain + SD_PAGE_SIZE,
                        cipher + SD_PAGE_SIZE, seals + SD_SEAL_LEN, 1) == 0);
    CHECK(seal_gcm(plain + 2 * SD_PAGE_SIZE, cipher + 2 * SD_PAGE_SIZE,
                   seals + 2 * SD_SEAL_LEN, 42, 0x22) == 0);
    CHECK(try_open(key, grant, 40, cipher, seals, 3, out, &bad) == 0);
    CHECK(memcmp(out, plain, 3 * SD_PAGE_SIZE) == 0);

    if (sd_seal_version() == SD_SEAL_AEGIS) {
        /* An AEGIS page called GCM, and a GCM page called AEGIS. */
        seals[SD_SEAL_LEN + 12] = SD_SEAL_AES_GCM;
        CHECK(try_open(key, grant, 40, cipher, seals, 3, out, &bad) ==
              -EBADMSG && bad == 41);
        seals[SD_SEAL_LEN + 12] = SD_SEAL_AEGIS;
        seals[12] = SD_SEAL_AEGIS;
        CHECK(try_open(key, grant, 40, cipher, seals, 3, out, &bad) ==
              -EBADMSG && bad == 40);
    }
    free(plain);
    free(cipher);
    free(out);
}

int main(void)
{
    struct sd_sealer s;

    fill(key, sizeof(key), 9);
    CHECK(sd_sealer_init(&s) == 0);
    test_round_trip_and_tamper(&s);
    test_versions(&s);
    sd_sealer_destroy(&s);
    test_nonces_unique();
    test_wrap();
    return check_summary();
}
