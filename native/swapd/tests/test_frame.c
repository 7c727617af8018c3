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
 * Tests of the TCP frame header: encode/parse round trips, the payload
 * rule, and each rejection of the parser with its errno and reason; the
 * HELLO; frame authentication (frame_auth.h): no key bytes in a frame,
 * and a wrong key, another connection, another direction, an altered
 * header or payload all fail to verify.
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "frame.h"
#include "frame_auth.h"
#include "key_bytes.h"

static struct sd_frame sample(void)
{
    struct sd_frame f = {
        .op = SD_OP_WRITE, .flags = 0, .id = 0x0102030405060708ULL,
        .slab = 0xa0b0c0d0, .len = 4096, .offset = 0x1122334455667788ULL,
        .status = 0,
    };
    int i;

    for (i = 0; i < SD_UUID_LEN; i++) {
        f.grant[i] = (uint8_t)(0x10 + i);
    }
    f.seq = 0x8877665544332211ULL;
    return f;
}

static void test_round_trip(void)
{
    struct sd_frame f = sample(), g;
    uint8_t hdr[SD_FRAME_HDR_LEN];
    const char *why = "unset";

    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(why == NULL);
    CHECK(g.op == f.op && g.flags == f.flags && g.id == f.id);
    CHECK(memcmp(g.grant, f.grant, SD_UUID_LEN) == 0);
    CHECK(g.seq == f.seq);
    CHECK(g.slab == f.slab && g.len == f.len && g.offset == f.offset);
    CHECK(g.status == 0);
    CHECK(sd_frame_payload_len(&g) == 4096);

    /* The layout is little-endian whatever the host: spot-check bytes. */
    CHECK(memcmp(hdr, "MSWP", 4) == 0);
    CHECK(hdr[4] == SD_FRAME_VERSION && hdr[5] == SD_OP_WRITE);
    CHECK(hdr[8] == 0x08 && hdr[15] == 0x01);
    CHECK(hdr[32] == 0x11 && hdr[39] == 0x88);
    CHECK(hdr[40] == 0xd0 && hdr[43] == 0xa0);
    CHECK(hdr[48] == 0x88 && hdr[55] == 0x11);
    memset(f.ptag, 0xab, SD_FRAME_TAG_LEN);
    memset(f.htag, 0xcd, SD_FRAME_TAG_LEN);
    sd_frame_encode(&f, hdr);
    CHECK(hdr[64] == 0xab && hdr[79] == 0xab);
    CHECK(hdr[80] == 0xcd && hdr[95] == 0xcd);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(memcmp(g.ptag, f.ptag, SD_FRAME_TAG_LEN) == 0);
    CHECK(memcmp(g.htag, f.htag, SD_FRAME_TAG_LEN) == 0);
    f = sample();

    /* A failed READ reply carries its status and no payload. */
    f.op = SD_OP_READ;
    f.flags = SD_FRAME_REPLY;
    f.status = -EACCES;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(g.status == -EACCES && g.flags == SD_FRAME_REPLY);
    CHECK(sd_frame_payload_len(&g) == 0);
    f.status = 0;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(sd_frame_payload_len(&g) == 4096);
    /* A READ request and a WRITE reply have none either. */
    f.flags = 0;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(sd_frame_payload_len(&g) == 0);
    f.op = SD_OP_WRITE;
    f.flags = SD_FRAME_REPLY;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(sd_frame_payload_len(&g) == 0);

    /* Extremes that are still valid. */
    f = sample();
    f.len = SD_FRAME_MAX_LEN;
    f.offset = UINT64_MAX - SD_FRAME_MAX_LEN;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(g.len == SD_FRAME_MAX_LEN && g.offset == f.offset);
    f.op = SD_FRAME_OP_ERROR;
    f.flags = SD_FRAME_REPLY;
    f.status = -4095;
    f.len = 0;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(g.op == SD_FRAME_OP_ERROR && sd_frame_payload_len(&g) == 0);
}

/* Parse hdr; check the errno and that the reason contains word. */
static int rejected(const uint8_t *hdr, size_t len, int err, const char *word)
{
    struct sd_frame g;
    const char *why = NULL;
    int rc = sd_frame_parse(hdr, len, &g, &why);

    if (rc != err || !why || !strstr(why, word)) {
        fprintf(stderr, "  got %d (%s), wanted %d (%s)\n", rc,
                why ? why : "no reason", err, word);
        return 0;
    }
    return 1;
}

/* Sealed frames: the seals follow the pages on a WRITE request and a
 * successful READ reply; offset and length are page multiples. */
static void test_sealed(void)
{
    struct sd_frame f = sample(), g;
    uint8_t hdr[SD_FRAME_HDR_LEN];
    const char *why;

    f.flags = SD_FRAME_SEALED;
    f.offset = 3 * SD_PAGE_SIZE;
    f.len = 2 * SD_PAGE_SIZE;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(g.flags == SD_FRAME_SEALED);
    CHECK(sd_frame_payload_len(&g) == 2 * SD_PAGE_SIZE + 2 * SD_SEAL_LEN);
    f.op = SD_OP_READ;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(sd_frame_payload_len(&g) == 0);
    f.flags = SD_FRAME_SEALED | SD_FRAME_REPLY;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(sd_frame_payload_len(&g) == 2 * SD_PAGE_SIZE + 2 * SD_SEAL_LEN);
    f.status = -ENOENT;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(sd_frame_payload_len(&g) == 0);

    /* The largest sealed payload. */
    f = sample();
    f.flags = SD_FRAME_SEALED;
    f.offset = 0;
    f.len = SD_FRAME_MAX_LEN;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(sd_frame_payload_len(&g) == SD_FRAME_MAX_PAYLOAD);

    f.offset = 100;
    sd_frame_encode(&f, hdr);
    CHECK(rejected(hdr, sizeof(hdr), -EINVAL, "page"));
    f.offset = 0;
    f.len = 4095;
    sd_frame_encode(&f, hdr);
    CHECK(rejected(hdr, sizeof(hdr), -EINVAL, "page"));
    f.len = 0;
    sd_frame_encode(&f, hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    f.op = SD_FRAME_OP_ERROR;
    f.flags = SD_FRAME_REPLY | SD_FRAME_SEALED;
    f.status = -EINVAL;
    sd_frame_encode(&f, hdr);
    CHECK(rejected(hdr, sizeof(hdr), -EPROTO, "sealed"));
}

static void test_rejections(void)
{
    struct sd_frame f = sample();
    uint8_t hdr[SD_FRAME_HDR_LEN], bad[SD_FRAME_HDR_LEN];

    sd_frame_encode(&f, hdr);
    CHECK(rejected(hdr, SD_FRAME_HDR_LEN - 1, -EINVAL, "short"));
    CHECK(rejected(hdr, 0, -EINVAL, "short"));

    memcpy(bad, hdr, sizeof(bad));
    bad[0] ^= 1;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "magic"));

    memcpy(bad, hdr, sizeof(bad));
    bad[4] = SD_FRAME_VERSION + 1;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "version"));

    memcpy(bad, hdr, sizeof(bad));
    bad[6] = 0x04;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "flags"));
    bad[6] = 0x00;
    bad[7] = 0x80;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "flags"));

    memcpy(bad, hdr, sizeof(bad));
    bad[63] = 1;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "reserved"));

    /* A frame without payload has no payload tag. */
    f = sample();
    f.op = SD_OP_READ;
    f.ptag[3] = 1;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "payload tag"));

    memcpy(bad, hdr, sizeof(bad));
    bad[5] = 0;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "op"));
    bad[5] = SD_FRAME_OP_HELLO;     /* only ever the first message */
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "op"));
    bad[5] = 255;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "op"));
    /* ERROR is only ever a reply. */
    f = sample();
    f.op = SD_FRAME_OP_ERROR;
    f.len = 0;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "op"));

    f = sample();
    f.len = SD_FRAME_MAX_LEN + 1;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "length"));
    f.len = UINT32_MAX;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "length"));

    f = sample();
    f.offset = UINT64_MAX - f.len + 1;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "overflow"));

    f = sample();
    f.status = -EIO;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "request"));

    f = sample();
    f.flags = SD_FRAME_REPLY;
    f.status = 1;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "status"));
    f.status = -4096;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "status"));
    f.status = INT32_MIN;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "status"));

    f = sample();
    f.op = SD_FRAME_OP_ERROR;
    f.flags = SD_FRAME_REPLY;
    f.status = 0;
    sd_frame_encode(&f, bad);
    CHECK(rejected(bad, sizeof(bad), -EINVAL, "error"));
}

static void test_hello(void)
{
    uint8_t nonce[SD_FRAME_NONCE_LEN], got[SD_FRAME_NONCE_LEN];
    uint8_t hdr[SD_FRAME_HDR_LEN], bad[SD_FRAME_HDR_LEN], macs = 0;
    struct sd_frame g;
    const char *why;
    int i;

    for (i = 0; i < SD_FRAME_NONCE_LEN; i++) {
        nonce[i] = (uint8_t)(0x40 + i);
    }
    sd_hello_encode(0, SD_FAUTH_HMAC | SD_FAUTH_AEGIS, nonce, hdr);
    CHECK(sd_hello_parse(hdr, sizeof(hdr), 0, &macs, got, &why) == 0);
    CHECK(macs == (SD_FAUTH_HMAC | SD_FAUTH_AEGIS));
    CHECK(memcmp(got, nonce, sizeof(nonce)) == 0);
    CHECK(hdr[5] == SD_FRAME_OP_HELLO && hdr[32] == 0x40);
    /* Not a frame, and not the other side's. */
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == -EPROTO);
    CHECK(sd_hello_parse(hdr, sizeof(hdr), 1, &macs, got, &why) == -EPROTO);
    CHECK(sd_hello_parse(hdr, sizeof(hdr) - 1, 0, &macs, got, &why) ==
          -EINVAL);
    sd_hello_encode(1, SD_FAUTH_HMAC, nonce, hdr);
    CHECK(sd_hello_parse(hdr, sizeof(hdr), 1, &macs, got, &why) == 0);
    CHECK(macs == SD_FAUTH_HMAC);
    memcpy(bad, hdr, sizeof(bad));
    bad[70] = 1;
    CHECK(sd_hello_parse(bad, sizeof(bad), 1, &macs, got, &why) == -EPROTO);
    memcpy(bad, hdr, sizeof(bad));
    bad[4] = 1;                     /* a version 1 swapd */
    CHECK(sd_hello_parse(bad, sizeof(bad), 1, &macs, got, &why) == -EPROTO);
    CHECK(strstr(why, "version") != NULL);
    /* The choice: the fastest both have; none in common is 0. */
    CHECK(sd_fauth_choose(SD_FAUTH_HMAC) == SD_FAUTH_HMAC);
    CHECK(sd_fauth_choose(0) == 0 && sd_fauth_choose(0x80) == 0);
    CHECK(sd_fauth_choose(SD_FAUTH_HMAC | SD_FAUTH_AEGIS) ==
          (sd_fauth_macs() & SD_FAUTH_AEGIS ? SD_FAUTH_AEGIS :
           SD_FAUTH_HMAC));
}

/* Sign a WRITE of payload with k into hdr. */
static void signed_write(const struct sd_fauth_key *k, uint64_t seq,
                         const uint8_t *payload, size_t len,
                         uint8_t hdr[SD_FRAME_HDR_LEN])
{
    struct sd_frame f = sample();

    f.seq = seq;
    f.len = (uint32_t)len;
    CHECK(sd_fauth_payload_tag(k, seq, payload, len, NULL, 0, f.ptag) == 0);
    sd_frame_encode(&f, hdr);
    CHECK(sd_fauth_sign(k, seq, hdr) == 0);
}

static void test_auth_with(uint8_t mac)
{
    struct sd_fauth_conn conn = { .mac = mac }, other;
    struct sd_fauth_key k, k2;
    uint8_t key[SD_KEY_LEN], wrong[SD_KEY_LEN], grant[SD_UUID_LEN];
    uint8_t hdr[SD_FRAME_HDR_LEN], bad[SD_FRAME_HDR_LEN];
    uint8_t page[SD_PAGE_SIZE], seals[SD_SEAL_LEN], tag[SD_FRAME_TAG_LEN];
    struct sd_frame f = sample(), g;
    const char *why;
    size_t i;

    for (i = 0; i < SD_KEY_LEN; i++) {
        key[i] = (uint8_t)(0x80 + i);
        wrong[i] = key[i];
    }
    wrong[31] ^= 1;
    memcpy(grant, f.grant, SD_UUID_LEN);
    for (i = 0; i < sizeof(page); i++) {
        page[i] = (uint8_t)(i * 7);
    }
    memset(seals, 0x33, sizeof(seals));
    CHECK(sd_fauth_nonce(conn.nonce_c) == 0);
    CHECK(sd_fauth_nonce(conn.nonce_d) == 0);
    CHECK(memcmp(conn.nonce_c, conn.nonce_d, SD_FRAME_NONCE_LEN) != 0);
    CHECK(sd_fauth_derive(&conn, key, grant, SD_FAUTH_C2D, &k) == 0);
    CHECK(k.mac == mac);

    /* A signed frame: parses, verifies, and holds no key bytes (the
     * grant key or the derived one). */
    signed_write(&k, 7, page, sizeof(page), hdr);
    CHECK(sd_frame_parse(hdr, sizeof(hdr), &g, &why) == 0);
    CHECK(g.seq == 7);
    CHECK(sd_fauth_verify(&k, 7, hdr) == 0);
    CHECK(sd_fauth_verify_payload(&k, 7, page, sizeof(page), NULL, 0,
                                  g.ptag) == 0);
    CHECK(!has_key_bytes(hdr, sizeof(hdr), key));
    CHECK(!has_key_bytes(hdr, sizeof(hdr), k.k));

    /* Every header byte the tag covers matters. */
    for (i = 0; i < SD_FRAME_HTAG_OFF; i++) {
        memcpy(bad, hdr, sizeof(bad));
        bad[i] ^= 0x20;
        CHECK(sd_fauth_verify(&k, 7, bad) == -EBADMSG);
    }
    memcpy(bad, hdr, sizeof(bad));
    bad[SD_FRAME_HDR_LEN - 1] ^= 1;
    CHECK(sd_fauth_verify(&k, 7, bad) == -EBADMSG);
    /* Another sequence number (a replay), key, connection, direction. */
    CHECK(sd_fauth_verify(&k, 8, hdr) == -EBADMSG);
    CHECK(sd_fauth_derive(&conn, wrong, grant, SD_FAUTH_C2D, &k2) == 0);
    CHECK(sd_fauth_verify(&k2, 7, hdr) == -EBADMSG);
    other = conn;
    other.nonce_d[0] ^= 1;
    CHECK(sd_fauth_derive(&other, key, grant, SD_FAUTH_C2D, &k2) == 0);
    CHECK(sd_fauth_verify(&k2, 7, hdr) == -EBADMSG);
    CHECK(sd_fauth_derive(&conn, key, grant, SD_FAUTH_D2C, &k2) == 0);
    CHECK(sd_fauth_verify(&k2, 7, hdr) == -EBADMSG);
    grant[0] ^= 1;
    CHECK(sd_fauth_derive(&conn, key, grant, SD_FAUTH_C2D, &k2) == 0);
    CHECK(sd_fauth_verify(&k2, 7, hdr) == -EBADMSG);
    grant[0] ^= 1;

    /* An altered payload, or its seals. */
    page[100] ^= 1;
    CHECK(sd_fauth_verify_payload(&k, 7, page, sizeof(page), NULL, 0,
                                  g.ptag) == -EBADMSG);
    page[100] ^= 1;
    CHECK(sd_fauth_payload_tag(&k, 7, page, sizeof(page), seals,
                               sizeof(seals), tag) == 0);
    CHECK(memcmp(tag, g.ptag, SD_FRAME_TAG_LEN) != 0);
    CHECK(sd_fauth_verify_payload(&k, 7, page, sizeof(page), seals,
                                  sizeof(seals), tag) == 0);
    seals[5] ^= 1;
    CHECK(sd_fauth_verify_payload(&k, 7, page, sizeof(page), seals,
                                  sizeof(seals), tag) == -EBADMSG);
    /* Moving bytes from the pages to the seals does not keep the tag. */
    CHECK(sd_fauth_verify_payload(&k, 7, page, sizeof(page) - 1,
                                  page + sizeof(page) - 1, 1, g.ptag) ==
          -EBADMSG);
}

static void test_auth(void)
{
    struct sd_fauth_conn conn = { .mac = 0 };
    struct sd_fauth_key k;
    uint8_t key[SD_KEY_LEN] = { 1 }, grant[SD_UUID_LEN] = { 2 };

    test_auth_with(SD_FAUTH_HMAC);
    if (sd_fauth_macs() & SD_FAUTH_AEGIS) {
        test_auth_with(SD_FAUTH_AEGIS);
    } else {
        fprintf(stderr, "  (no AES instructions: AEGIS not tested)\n");
    }
    CHECK(sd_fauth_derive(&conn, key, grant, SD_FAUTH_C2D, &k) == -EINVAL);
}

/* The cache: a hit for the same grant and key, a miss for another key. */
static void test_cache(void)
{
    struct sd_fauth_conn conn = { .mac = SD_FAUTH_HMAC };
    struct sd_fauth_cache c = { 0 };
    struct sd_fauth_key tmp;
    const struct sd_fauth_key *k, *k2;
    uint8_t key[SD_KEY_LEN] = { 1 }, grant[SD_UUID_LEN] = { 2 };
    int i;

    k = sd_fauth_key_of(&c, &conn, grant, key, SD_FAUTH_C2D, &tmp);
    CHECK(k == &tmp);
    sd_fauth_cache_put(&c, grant, key, k);
    k2 = sd_fauth_key_of(&c, &conn, grant, key, SD_FAUTH_C2D, &tmp);
    CHECK(k2 != &tmp && memcmp(k2->k, tmp.k, SD_KEY_LEN) == 0);
    key[0] = 9;
    CHECK(sd_fauth_key_of(&c, &conn, grant, key, SD_FAUTH_C2D, &tmp) ==
          &tmp);
    for (i = 0; i < 2 * SD_FAUTH_CACHE_LEN; i++) {
        grant[1] = (uint8_t)i;
        k = sd_fauth_key_of(&c, &conn, grant, key, SD_FAUTH_C2D, &tmp);
        sd_fauth_cache_put(&c, grant, key, k);
        CHECK(sd_fauth_key_of(&c, &conn, grant, key, SD_FAUTH_C2D, &tmp) !=
              &tmp);
    }
    sd_fauth_cache_free(&c);
    sd_fauth_cache_free(&c);
}

int main(void)
{
    test_round_trip();
    test_rejections();
    test_sealed();
    test_hello();
    test_auth();
    test_cache();
    return check_summary();
}
