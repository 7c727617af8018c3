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
 * The AEGIS-256X2 algorithm (RFC 10032), written once for aegis.c to
 * instantiate per implementation.  The includer defines:
 *   VEC            a 256-bit value: lane 0 is bytes 0-15, lane 1 16-31
 *   IMPL_FN        the function attribute (the instructions it needs)
 *   IMPL(name)     name with the implementation's suffix
 *   vload(p), vstore(p, v), vxor(a, b), vand(a, b)
 *   vaesenc(a, k)  one AES round of each lane of a, keyed by k's
 *   vbcast(p)      the 16 bytes at p in both lanes
 *   vfold(p, v)    lane 0 XOR lane 1, to the 16 bytes at p
 * and RATE (32), C0, C1 and CTX as uint8_t arrays.
 */

/* Update(M): each Si becomes one AES round of S(i-1) keyed with Si; M
 * enters through S0. */
IMPL_FN static inline void IMPL(update)(VEC s[6], VEC m)
{
    VEC s5 = s[5];

    s[5] = vaesenc(s[4], s[5]);
    s[4] = vaesenc(s[3], s[4]);
    s[3] = vaesenc(s[2], s[3]);
    s[2] = vaesenc(s[1], s[2]);
    s[1] = vaesenc(s[0], s[1]);
    s[0] = vaesenc(s5, vxor(s[0], m));
}

IMPL_FN static inline VEC IMPL(keystream)(const VEC s[6])
{
    return vxor(vxor(s[1], s[4]), vxor(s[5], vand(s[2], s[3])));
}

/* Init(key, nonce), then the associated data absorbed. */
IMPL_FN static void IMPL(init)(VEC s[6], const uint8_t *key,
                               const uint8_t *nonce, const uint8_t *ad,
                               size_t adlen)
{
    uint8_t kn[32], kc[32], pad[RATE];
    VEC in[4], ctx = vload(CTX);
    size_t i;
    int r, j;

    for (i = 0; i < 16; i++) {
        kn[i] = key[i] ^ nonce[i];
        kn[16 + i] = key[16 + i] ^ nonce[16 + i];
        kc[i] = key[i] ^ C0[i];
        kc[16 + i] = key[16 + i] ^ C1[i];
    }
    in[0] = vbcast(key);
    in[1] = vbcast(key + 16);
    in[2] = vbcast(kn);
    in[3] = vbcast(kn + 16);
    s[0] = in[2];
    s[1] = in[3];
    s[2] = vbcast(C1);
    s[3] = vbcast(C0);
    s[4] = vbcast(kc);
    s[5] = vbcast(kc + 16);
    for (r = 0; r < 4; r++) {
        for (j = 0; j < 4; j++) {
            s[3] = vxor(s[3], ctx);
            s[5] = vxor(s[5], ctx);
            IMPL(update)(s, in[j]);
        }
    }
    for (i = 0; i + RATE <= adlen; i += RATE) {
        IMPL(update)(s, vload(ad + i));
    }
    if (i < adlen) {
        memset(pad, 0, sizeof(pad));
        memcpy(pad, ad + i, adlen - i);
        IMPL(update)(s, vload(pad));
    }
}

/* Finalize: the lengths in bits (little-endian) into both lanes of S3,
 * seven updates, the tag the XOR of every block of both lanes. */
IMPL_FN static void IMPL(finalize)(VEC s[6], size_t adlen, size_t len,
                                   uint8_t tag[16])
{
    uint8_t u[RATE];
    uint64_t bits[2] = { (uint64_t)adlen * 8, (uint64_t)len * 8 };
    VEC t;
    int r;

    memcpy(u, bits, 16);
    memcpy(u + 16, bits, 16);
    t = vxor(s[3], vload(u));
    for (r = 0; r < 7; r++) {
        IMPL(update)(s, t);
    }
    vfold(tag, vxor(vxor(vxor(s[0], s[1]), vxor(s[2], s[3])),
                    vxor(s[4], s[5])));
}

IMPL_FN static void IMPL(encrypt)(const uint8_t *key, const uint8_t *nonce,
                                  const uint8_t *ad, size_t adlen,
                                  const uint8_t *in, uint8_t *out,
                                  size_t len, uint8_t *tag)
{
    uint8_t pad[RATE];
    VEC s[6], x;
    size_t i;

    IMPL(init)(s, key, nonce, ad, adlen);
    for (i = 0; i + RATE <= len; i += RATE) {
        x = vload(in + i);
        vstore(out + i, vxor(x, IMPL(keystream)(s)));
        IMPL(update)(s, x);
    }
    if (i < len) {
        memset(pad, 0, sizeof(pad));
        memcpy(pad, in + i, len - i);
        x = vload(pad);
        vstore(pad, vxor(x, IMPL(keystream)(s)));
        memcpy(out + i, pad, len - i);
        IMPL(update)(s, x);
    }
    IMPL(finalize)(s, adlen, len, tag);
}

/* Decrypt, leaving the tag the data gives in tag. */
IMPL_FN static void IMPL(decrypt)(const uint8_t *key, const uint8_t *nonce,
                                  const uint8_t *ad, size_t adlen,
                                  const uint8_t *in, uint8_t *out,
                                  size_t len, uint8_t *tag)
{
    uint8_t pad[RATE];
    VEC s[6], x;
    size_t i;

    IMPL(init)(s, key, nonce, ad, adlen);
    for (i = 0; i + RATE <= len; i += RATE) {
        x = vxor(vload(in + i), IMPL(keystream)(s));
        vstore(out + i, x);
        IMPL(update)(s, x);
    }
    if (i < len) {
        /* The plaintext's tail enters the state padded with zeros, not
         * with the keystream's bytes past it. */
        memset(pad, 0, sizeof(pad));
        memcpy(pad, in + i, len - i);
        vstore(pad, vxor(vload(pad), IMPL(keystream)(s)));
        memset(pad + (len - i), 0, sizeof(pad) - (len - i));
        memcpy(out + i, pad, len - i);
        IMPL(update)(s, vload(pad));
    }
    IMPL(finalize)(s, adlen, len, tag);
}
