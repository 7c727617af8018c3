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


/* AEGIS-256X2 on x86 (see aegis.h): the algorithm is aegis_lanes.h,
 * instantiated for VAES (one 256-bit register per block) and for AES-NI
 * (two 128-bit registers per block). */
#include <errno.h>
#include <string.h>

#include "aegis.h"

#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>
#include <immintrin.h>

#define RATE 32

/* C0 and C1 of the RFC: the Fibonacci sequence modulo 256. */
static const uint8_t C0[16] = { 0x00, 0x01, 0x01, 0x02, 0x03, 0x05, 0x08,
                                0x0d, 0x15, 0x22, 0x37, 0x59, 0x90, 0xe9,
                                0x79, 0x62 };
static const uint8_t C1[16] = { 0xdb, 0x3d, 0x18, 0x55, 0x6d, 0xc2, 0x2f,
                                0xf1, 0x20, 0x11, 0x31, 0x42, 0x73, 0xb5,
                                0x28, 0xdd };
/* Lane i's context: Byte(i) || Byte(D - 1), zero-padded, D = 2. */
static const uint8_t CTX[RATE] = { 0, 1, [16] = 1, 1 };

/* AES-NI: a block is two 128-bit registers. */
struct lanes {
    __m128i l0, l1;
};

#define NI_FN __attribute__((target("aes,sse2")))

NI_FN static inline struct lanes ni_load(const uint8_t *p)
{
    struct lanes r = { _mm_loadu_si128((const __m128i *)p),
                       _mm_loadu_si128((const __m128i *)(p + 16)) };
    return r;
}

NI_FN static inline void ni_store(uint8_t *p, struct lanes v)
{
    _mm_storeu_si128((__m128i *)p, v.l0);
    _mm_storeu_si128((__m128i *)(p + 16), v.l1);
}

NI_FN static inline struct lanes ni_xor(struct lanes a, struct lanes b)
{
    struct lanes r = { _mm_xor_si128(a.l0, b.l0),
                       _mm_xor_si128(a.l1, b.l1) };
    return r;
}

NI_FN static inline struct lanes ni_and(struct lanes a, struct lanes b)
{
    struct lanes r = { _mm_and_si128(a.l0, b.l0),
                       _mm_and_si128(a.l1, b.l1) };
    return r;
}

NI_FN static inline struct lanes ni_aesenc(struct lanes a, struct lanes k)
{
    struct lanes r = { _mm_aesenc_si128(a.l0, k.l0),
                       _mm_aesenc_si128(a.l1, k.l1) };
    return r;
}

NI_FN static inline struct lanes ni_bcast(const uint8_t *p)
{
    __m128i b = _mm_loadu_si128((const __m128i *)p);
    struct lanes r = { b, b };

    return r;
}

NI_FN static inline void ni_fold(uint8_t *p, struct lanes v)
{
    _mm_storeu_si128((__m128i *)p, _mm_xor_si128(v.l0, v.l1));
}

#define VEC struct lanes
#define IMPL_FN NI_FN
#define IMPL(name) name##_aesni
#define vload ni_load
#define vstore ni_store
#define vxor ni_xor
#define vand ni_and
#define vaesenc ni_aesenc
#define vbcast ni_bcast
#define vfold ni_fold
#include "aegis_lanes.h"
#undef VEC
#undef IMPL_FN
#undef IMPL
#undef vload
#undef vstore
#undef vxor
#undef vand
#undef vaesenc
#undef vbcast
#undef vfold

/* VAES: a block is one 256-bit register. */
#define VA_FN __attribute__((target("vaes,avx2")))

VA_FN static inline __m256i va_load(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

VA_FN static inline void va_store(uint8_t *p, __m256i v)
{
    _mm256_storeu_si256((__m256i *)p, v);
}

VA_FN static inline __m256i va_bcast(const uint8_t *p)
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
}

VA_FN static inline void va_fold(uint8_t *p, __m256i v)
{
    _mm_storeu_si128((__m128i *)p,
                     _mm_xor_si128(_mm256_castsi256_si128(v),
                                   _mm256_extracti128_si256(v, 1)));
}

#define VEC __m256i
#define IMPL_FN VA_FN
#define IMPL(name) name##_vaes
#define vload va_load
#define vstore va_store
#define vxor _mm256_xor_si256
#define vand _mm256_and_si256
#define vaesenc _mm256_aesenc_epi128
#define vbcast va_bcast
#define vfold va_fold
#include "aegis_lanes.h"

typedef void (*crypt_fn)(const uint8_t *, const uint8_t *, const uint8_t *,
                         size_t, const uint8_t *, uint8_t *, size_t,
                         uint8_t *);

/* What CPUID says, and for VAES whether the kernel saves the YMM
 * registers (XCR0's SSE and AVX bits). */
static enum sd_aegis_impl detect(void)
{
    unsigned int a, b, c, d, xcr0_lo, xcr0_hi;
    int aes, ymm;

    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        return SD_AEGIS_NONE;
    }
    aes = (c >> 25) & 1;
    ymm = ((c >> 27) & 1) && ((c >> 28) & 1);           /* OSXSAVE, AVX */
    if (!aes) {
        return SD_AEGIS_NONE;
    }
    if (ymm) {
        __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
        ymm = (xcr0_lo & 6) == 6;
    }
    if (ymm && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
        ((b >> 5) & 1) && ((c >> 9) & 1)) {             /* AVX2, VAES */
        return SD_AEGIS_VAES;
    }
    return SD_AEGIS_AESNI;
}

enum sd_aegis_impl sd_aegis_best(void)
{
    static int best = -1;
    int v = __atomic_load_n(&best, __ATOMIC_RELAXED);

    if (v < 0) {
        v = (int)detect();
        __atomic_store_n(&best, v, __ATOMIC_RELAXED);
    }
    return (enum sd_aegis_impl)v;
}

/* The implementation's encrypt (enc) or decrypt; NULL when this CPU does
 * not run it. */
static crypt_fn pick(enum sd_aegis_impl impl, int enc)
{
    if (impl == SD_AEGIS_NONE || impl > sd_aegis_best()) {
        return NULL;
    }
    if (impl == SD_AEGIS_VAES) {
        return enc ? encrypt_vaes : decrypt_vaes;
    }
    return enc ? encrypt_aesni : decrypt_aesni;
}

#else

enum sd_aegis_impl sd_aegis_best(void)
{
    return SD_AEGIS_NONE;
}

static void *pick(enum sd_aegis_impl impl, int enc)
{
    (void)impl, (void)enc;
    return NULL;
}

#endif

int sd_aegis_encrypt_with(enum sd_aegis_impl impl,
                          const uint8_t key[SD_AEGIS_KEY_LEN],
                          const uint8_t nonce[SD_AEGIS_NONCE_LEN],
                          const uint8_t *ad, size_t adlen,
                          const uint8_t *in, uint8_t *out, size_t len,
                          uint8_t tag[SD_AEGIS_TAG_LEN])
{
    crypt_fn fn = pick(impl, 1);

    if (!fn) {
        return -ENOTSUP;
    }
    fn(key, nonce, ad, adlen, in, out, len, tag);
    return 0;
}

int sd_aegis_decrypt_with(enum sd_aegis_impl impl,
                          const uint8_t key[SD_AEGIS_KEY_LEN],
                          const uint8_t nonce[SD_AEGIS_NONCE_LEN],
                          const uint8_t *ad, size_t adlen,
                          const uint8_t *in, uint8_t *out, size_t len,
                          const uint8_t tag[SD_AEGIS_TAG_LEN])
{
    crypt_fn fn = pick(impl, 0);
    uint8_t want[SD_AEGIS_TAG_LEN];
    unsigned diff = 0;
    size_t i;

    if (!fn) {
        return -ENOTSUP;
    }
    fn(key, nonce, ad, adlen, in, out, len, want);
    for (i = 0; i < sizeof(want); i++) {
        diff |= (unsigned)(want[i] ^ tag[i]);
    }
    if (diff) {
        memset(out, 0, len);
        return -EBADMSG;
    }
    return 0;
}

int sd_aegis_encrypt(const uint8_t key[SD_AEGIS_KEY_LEN],
                     const uint8_t nonce[SD_AEGIS_NONCE_LEN],
                     const uint8_t *ad, size_t adlen,
                     const uint8_t *in, uint8_t *out, size_t len,
                     uint8_t tag[SD_AEGIS_TAG_LEN])
{
    return sd_aegis_encrypt_with(sd_aegis_best(), key, nonce, ad, adlen, in,
                                 out, len, tag);
}

int sd_aegis_decrypt(const uint8_t key[SD_AEGIS_KEY_LEN],
                     const uint8_t nonce[SD_AEGIS_NONCE_LEN],
                     const uint8_t *ad, size_t adlen,
                     const uint8_t *in, uint8_t *out, size_t len,
                     const uint8_t tag[SD_AEGIS_TAG_LEN])
{
    return sd_aegis_decrypt_with(sd_aegis_best(), key, nonce, ad, adlen, in,
                                 out, len, tag);
}
