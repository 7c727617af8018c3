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

/* Page sealing with AEGIS-256X2 or AES-256-GCM (see seal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "aegis.h"
#include "seal.h"

#define NONCE_LEN 12
#define TAG_OFF 16
#define TAG_LEN 16
#define AAD_LEN (SD_UUID_LEN + 8)

/* What a thread keeps between pages, with the page key each was made
 * for: the GCM contexts (one to seal, one to open; a context per page
 * would cost an allocation on every page, and setting the key up again
 * for the same export about a third of a page's sealing, 0.5 of 1.6 us),
 * and the AEGIS-256X2 key derived from the page key (an HMAC per page would
 * cost more than the page's encryption). */
struct thread_ctx {
    EVP_CIPHER_CTX *ctx[2];             /* by enc: 1 seals, 0 opens */
    uint8_t key[2][SD_KEY_LEN];
    int keyed[2];
    uint8_t aegis_from[SD_KEY_LEN];     /* the page key ... */
    uint8_t aegis_key[SD_KEY_LEN];      /* ... and what it derives */
    int aegis_keyed;
};

static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static int ctx_key_ok;

static void ctx_free(void *arg)
{
    struct thread_ctx *t = arg;

    EVP_CIPHER_CTX_free(t->ctx[0]);
    EVP_CIPHER_CTX_free(t->ctx[1]);
    OPENSSL_cleanse(t, sizeof(*t));
    free(t);
}

static void ctx_key_make(void)
{
    ctx_key_ok = pthread_key_create(&ctx_key, ctx_free) == 0;
}

/* This thread's thread_ctx; NULL when out of memory. */
static struct thread_ctx *thread_state(void)
{
    struct thread_ctx *t;

    pthread_once(&ctx_once, ctx_key_make);
    if (!ctx_key_ok) {
        return NULL;
    }
    t = pthread_getspecific(ctx_key);
    if (!t) {
        t = calloc(1, sizeof(*t));
        if (!t || pthread_setspecific(ctx_key, t)) {
            free(t);
            return NULL;
        }
    }
    return t;
}

/* This thread's GCM context for enc (1) or dec (0), set up for key; NULL
 * when OpenSSL fails. */
static EVP_CIPHER_CTX *thread_ctx(int enc, const uint8_t key[SD_KEY_LEN])
{
    struct thread_ctx *t = thread_state();

    if (!t) {
        return NULL;
    }
    if (!t->ctx[enc] && !(t->ctx[enc] = EVP_CIPHER_CTX_new())) {
        return NULL;
    }
    if (t->keyed[enc] && CRYPTO_memcmp(t->key[enc], key, SD_KEY_LEN) == 0) {
        return t->ctx[enc];
    }
    t->keyed[enc] = 0;
    if (!EVP_CipherInit_ex(t->ctx[enc], EVP_aes_256_gcm(), NULL, key, NULL,
                           enc)) {
        return NULL;
    }
    memcpy(t->key[enc], key, SD_KEY_LEN);
    t->keyed[enc] = 1;
    return t->ctx[enc];
}

/* The AEGIS-256X2 key of a page key: HKDF-Expand (RFC 5869) with the page
 * key as the pseudorandom key (it is uniformly random already), one
 * block.  Pages of one export may be sealed with both AEADs (sealed with
 * GCM before an upgrade, with AEGIS-256X2 after it), and each gets a key of
 * its own.  NULL when OpenSSL fails. */
static const uint8_t *aegis_key(const uint8_t key[SD_KEY_LEN])
{
    static const char info[] = "memagg page seal v2 AEGIS-256X2\x01";
    struct thread_ctx *t = thread_state();
    unsigned int len = SD_KEY_LEN;

    if (!t) {
        return NULL;
    }
    if (t->aegis_keyed &&
        CRYPTO_memcmp(t->aegis_from, key, SD_KEY_LEN) == 0) {
        return t->aegis_key;
    }
    t->aegis_keyed = 0;
    if (!HMAC(EVP_sha256(), key, SD_KEY_LEN, (const uint8_t *)info,
              sizeof(info) - 1, t->aegis_key, &len) || len != SD_KEY_LEN) {
        return NULL;
    }
    memcpy(t->aegis_from, key, SD_KEY_LEN);
    t->aegis_keyed = 1;
    return t->aegis_key;
}

int sd_seal_version(void)
{
    return sd_aegis_best() != SD_AEGIS_NONE ? SD_SEAL_AEGIS : SD_SEAL_AES_GCM;
}

static int draw_epoch(uint64_t *epoch)
{
    return RAND_bytes((unsigned char *)epoch, sizeof(*epoch)) == 1 ? 0
                                                                   : -EIO;
}

int sd_sealer_init(struct sd_sealer *s)
{
    uint64_t epoch;

    memset(s, 0, sizeof(*s));
    if (draw_epoch(&epoch)) {
        return -EIO;
    }
    s->epochs[0] = epoch;
    pthread_mutex_init(&s->lock, NULL);
    return 0;
}

void sd_sealer_destroy(struct sd_sealer *s)
{
    pthread_mutex_destroy(&s->lock);
}

/* The next nonce: a fresh epoch for each generation of 2^32 counters.  A
 * slot of epochs[] is reused two generations later, by which time every
 * seal of the older generation is long done. */
static int next_nonce(struct sd_sealer *s, uint8_t nonce[NONCE_LEN])
{
    uint64_t v = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
    uint64_t gen = v >> 32, epoch;
    uint32_t ctr = (uint32_t)v;

    if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) < gen) {
        int ret = 0;

        pthread_mutex_lock(&s->lock);
        if (s->ready < gen) {
            ret = draw_epoch(&epoch);
            if (ret == 0) {
                __atomic_store_n(&s->epochs[gen & 1], epoch,
                                 __ATOMIC_RELAXED);
                __atomic_store_n(&s->ready, gen, __ATOMIC_RELEASE);
            }
        }
        pthread_mutex_unlock(&s->lock);
        if (ret) {
            return ret;
        }
    }
    epoch = __atomic_load_n(&s->epochs[gen & 1], __ATOMIC_RELAXED);
    memcpy(nonce, &epoch, 8);
    nonce[8] = (uint8_t)(ctr >> 24);
    nonce[9] = (uint8_t)(ctr >> 16);
    nonce[10] = (uint8_t)(ctr >> 8);
    nonce[11] = (uint8_t)ctr;
    return 0;
}

static void make_aad(uint8_t aad[AAD_LEN], const uint8_t grant[SD_UUID_LEN],
                     uint64_t page)
{
    int i;

    memcpy(aad, grant, SD_UUID_LEN);
    for (i = 0; i < 8; i++) {
        aad[SD_UUID_LEN + i] = (uint8_t)(page >> (56 - 8 * i));
    }
}

/* AEGIS-256X2's 32-byte nonce: the seal's 12-byte one, then zeros.  The
 * 12 bytes are already unique per key (see seal.h). */
static void aegis_nonce(uint8_t out[SD_AEGIS_NONCE_LEN],
                        const uint8_t *seal)
{
    memset(out, 0, SD_AEGIS_NONCE_LEN);
    memcpy(out, seal, NONCE_LEN);
}

int sd_seal_pages(struct sd_sealer *s, const uint8_t key[SD_KEY_LEN],
                  const uint8_t grant[SD_UUID_LEN], uint64_t first_page,
                  const void *plain, void *cipher, uint8_t *seals,
                  size_t npages)
{
    int version = sd_seal_version();
    EVP_CIPHER_CTX *ctx = NULL;
    const uint8_t *akey = NULL;
    uint8_t aad[AAD_LEN], nonce[SD_AEGIS_NONCE_LEN];
    size_t i;
    int n;

    if (version == SD_SEAL_AEGIS ? !(akey = aegis_key(key))
                                 : !(ctx = thread_ctx(1, key))) {
        return -EIO;
    }
    for (i = 0; i < npages; i++) {
        const uint8_t *in = (const uint8_t *)plain + i * SD_PAGE_SIZE;
        uint8_t *out = (uint8_t *)cipher + i * SD_PAGE_SIZE;
        uint8_t *seal = seals + i * SD_SEAL_LEN;

        memset(seal, 0, SD_SEAL_LEN);
        if (next_nonce(s, seal)) {
            return -EIO;
        }
        seal[NONCE_LEN] = (uint8_t)version;
        make_aad(aad, grant, first_page + i);
        if (akey) {
            aegis_nonce(nonce, seal);
            if (sd_aegis_encrypt(akey, nonce, aad, AAD_LEN, in, out,
                                 SD_PAGE_SIZE, seal + TAG_OFF)) {
                return -EIO;
            }
            continue;
        }
        /* The key schedule stays; only the nonce changes per page. */
        if (!EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, seal) ||
            !EVP_EncryptUpdate(ctx, NULL, &n, aad, AAD_LEN) ||
            !EVP_EncryptUpdate(ctx, out, &n, in, SD_PAGE_SIZE) ||
            !EVP_EncryptFinal_ex(ctx, out + n, &n) ||
            !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN,
                                 seal + TAG_OFF)) {
            return -EIO;
        }
    }
    return 0;
}

/* Open one page sealed with AES-256-GCM: 0, -EBADMSG, or -EIO when
 * OpenSSL cannot set up. */
static int open_gcm(const uint8_t key[SD_KEY_LEN], const uint8_t *aad,
                    uint8_t *page, const uint8_t *seal)
{
    EVP_CIPHER_CTX *ctx = thread_ctx(0, key);
    uint8_t tag[TAG_LEN];
    int n;

    if (!ctx) {
        return -EIO;
    }
    memcpy(tag, seal + TAG_OFF, TAG_LEN);
    if (!EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, seal) ||
        !EVP_DecryptUpdate(ctx, NULL, &n, aad, AAD_LEN) ||
        !EVP_DecryptUpdate(ctx, page, &n, page, SD_PAGE_SIZE) ||
        !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) ||
        EVP_DecryptFinal_ex(ctx, page + n, &n) <= 0) {
        return -EBADMSG;
    }
    return 0;
}

/* Open one page sealed with AEGIS-256X2: 0, -EBADMSG (also on a CPU that
 * cannot run it), or -EIO when the key cannot be derived. */
static int open_aegis(const uint8_t key[SD_KEY_LEN], const uint8_t *aad,
                      uint8_t *page, const uint8_t *seal)
{
    const uint8_t *akey = aegis_key(key);
    uint8_t nonce[SD_AEGIS_NONCE_LEN];

    if (!akey) {
        return -EIO;
    }
    aegis_nonce(nonce, seal);
    return sd_aegis_decrypt(akey, nonce, aad, AAD_LEN, page, page,
                            SD_PAGE_SIZE, seal + TAG_OFF) ? -EBADMSG : 0;
}

int sd_open_pages(const uint8_t key[SD_KEY_LEN],
                  const uint8_t grant[SD_UUID_LEN], uint64_t first_page,
                  void *buf, const uint8_t *seals, size_t npages,
                  uint64_t *bad_page)
{
    static const uint8_t zero3[3];
    uint8_t aad[AAD_LEN];
    size_t i;
    int ret;

    for (i = 0; i < npages; i++) {
        uint8_t *page = (uint8_t *)buf + i * SD_PAGE_SIZE;
        const uint8_t *seal = seals + i * SD_SEAL_LEN;

        make_aad(aad, grant, first_page + i);
        if (memcmp(seal + NONCE_LEN + 1, zero3, 3) != 0) {
            ret = -EBADMSG;
        } else if (seal[NONCE_LEN] == SD_SEAL_AEGIS) {
            ret = open_aegis(key, aad, page, seal);
        } else if (seal[NONCE_LEN] == SD_SEAL_AES_GCM) {
            ret = open_gcm(key, aad, page, seal);
        } else {
            ret = -EBADMSG;
        }
        if (ret == -EIO) {
            return ret;
        }
        if (ret) {
            /* Never leave unauthenticated plaintext behind. */
            memset(page, 0, SD_PAGE_SIZE);
            *bad_page = first_page + i;
            return ret;
        }
    }
    return 0;
}
