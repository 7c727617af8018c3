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
 * rule, and each rejection of the parser with its errno and reason.
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "frame.h"

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
    for (i = 0; i < SD_KEY_LEN; i++) {
        f.key[i] = (uint8_t)(0x80 + i);
    }
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
    CHECK(memcmp(g.key, f.key, SD_KEY_LEN) == 0);
    CHECK(g.slab == f.slab && g.len == f.len && g.offset == f.offset);
    CHECK(g.status == 0);
    CHECK(sd_frame_payload_len(&g) == 4096);

    /* The layout is little-endian whatever the host: spot-check bytes. */
    CHECK(memcmp(hdr, "MSWP", 4) == 0);
    CHECK(hdr[4] == SD_FRAME_VERSION && hdr[5] == SD_OP_WRITE);
    CHECK(hdr[8] == 0x08 && hdr[15] == 0x01);
    CHECK(hdr[64] == 0xd0 && hdr[67] == 0xa0);
    CHECK(hdr[72] == 0x88 && hdr[79] == 0x11);

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
    bad[87] = 1;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "reserved"));

    memcpy(bad, hdr, sizeof(bad));
    bad[5] = 0;
    CHECK(rejected(bad, sizeof(bad), -EPROTO, "op"));
    bad[5] = 4;
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

int main(void)
{
    test_round_trip();
    test_rejections();
    test_sealed();
    return check_summary();
}
