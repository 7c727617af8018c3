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
 * libFuzzer harness: the TCP transport's frame header and HELLO parsers
 * and the frame authentication (frame.h, frame_auth.h).  Each input is
 * parsed as it is and, so the fuzzer gets past the magic and version at
 * once, with those two fields set right.  A header the parser accepts
 * must encode back to the same bytes with a payload within the maximum
 * (a sealed frame's: whole pages and their seals), and a payload tag only
 * with a payload; every rejection must say why.  A HELLO the parser
 * accepts must encode back the same.  The header tag of the input must not
 * verify (the fuzzer cannot make one), and the input signed must.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "frame_auth.h"

static void check_hello(const uint8_t *data, size_t size)
{
    uint8_t nonce[SD_FRAME_NONCE_LEN], again[SD_FRAME_HDR_LEN], macs;
    const char *why;
    int reply;

    for (reply = 0; reply < 2; reply++) {
        if (sd_hello_parse(data, size, reply, &macs, nonce, &why) < 0) {
            if (!why || !*why) {
                abort();
            }
            continue;
        }
        sd_hello_encode(reply, macs, nonce, again);
        if (memcmp(again, data, SD_FRAME_HDR_LEN) != 0) {
            abort();
        }
    }
}

/* A fixed key: the tag of a fuzzed header must not verify under it, and
 * must once signed. */
static void check_tags(const uint8_t *data)
{
    static const struct sd_fauth_conn conn = { .mac = SD_FAUTH_HMAC };
    static const uint8_t key[SD_KEY_LEN] = { 7 };
    uint8_t hdr[SD_FRAME_HDR_LEN];
    struct sd_fauth_key k;

    if (sd_fauth_derive(&conn, key, data + 16, SD_FAUTH_C2D, &k) < 0) {
        abort();
    }
    memcpy(hdr, data, sizeof(hdr));
    if (sd_fauth_verify(&k, 1, hdr) == 0) {
        abort();
    }
    if (sd_fauth_sign(&k, 1, hdr) < 0 || sd_fauth_verify(&k, 1, hdr) < 0) {
        abort();
    }
    hdr[0] ^= 1;
    if (sd_fauth_verify(&k, 1, hdr) == 0) {
        abort();
    }
}

static void check(const uint8_t *data, size_t size)
{
    struct sd_frame f;
    const char *why;
    uint8_t again[SD_FRAME_HDR_LEN];
    static const uint8_t zero[SD_FRAME_TAG_LEN];

    check_hello(data, size);
    if (sd_frame_parse(data, size, &f, &why) < 0) {
        if (!why || !*why) {
            abort();
        }
        return;
    }
    if (sd_frame_payload_len(&f) > SD_FRAME_MAX_PAYLOAD) {
        abort();
    }
    if (!sd_frame_payload_len(&f) &&
        memcmp(f.ptag, zero, SD_FRAME_TAG_LEN) != 0) {
        abort();
    }
    if ((f.flags & SD_FRAME_SEALED) &&
        (f.offset % SD_PAGE_SIZE || f.len % SD_PAGE_SIZE ||
         (sd_frame_payload_len(&f) &&
          sd_frame_payload_len(&f) != f.len + f.len / SD_PAGE_SIZE *
                                     SD_SEAL_LEN))) {
        abort();
    }
    sd_frame_encode(&f, again);
    if (memcmp(again, data, SD_FRAME_HDR_LEN) != 0) {
        abort();
    }
    check_tags(data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *fixed;

    check(data, size);
    if (size < 5) {
        return 0;
    }
    fixed = malloc(size);
    if (!fixed) {
        return 0;
    }
    memcpy(fixed, data, size);
    fixed[0] = 'M';
    fixed[1] = 'S';
    fixed[2] = 'W';
    fixed[3] = 'P';
    fixed[4] = SD_FRAME_VERSION;
    check(fixed, size);
    free(fixed);
    return 0;
}
