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
 * libFuzzer harness: the fabric transport's KEY reply (fabric_key.h), as
 * the consumer takes it from the handshake -- decrypted with the pad of
 * its connection and grant (frame_auth.h, sd_fauth_pad), then parsed.
 * Each input is parsed as it is, then with the magic and version set right
 * (so the fuzzer gets past them at once), then as ciphertext under a fixed
 * connection.  A reply the parser accepts must hold its invariants (an
 * address within bounds, a region of whole pages that does not wrap, seals
 * that match it, a printable provider name) and encode back to the same
 * bytes; every rejection must say why.  A pad applied twice gives the
 * input back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fabric_key.h"
#include "frame_auth.h"
#include "seal.h"

static void check(const uint8_t *data, size_t size)
{
    uint8_t again[SD_FRAME_KEY_LEN];
    struct sd_fkey k;
    const char *why;
    size_t i;

    if (sd_fkey_parse(data, size, &k, &why) < 0) {
        if (!why || !*why) {
            abort();
        }
        return;
    }
    if (k.addr_len == 0 || k.addr_len > SD_FKEY_ADDR_MAX ||
        k.len == 0 || k.len % SD_PAGE_SIZE ||
        k.base > UINT64_MAX - k.len || k.target > UINT64_MAX - k.len ||
        k.seals_len != k.len / SD_PAGE_SIZE * SD_SEAL_LEN ||
        k.seals_target > UINT64_MAX - k.seals_len || !k.prov[0]) {
        abort();
    }
    for (i = 0; k.prov[i]; i++) {
        if (k.prov[i] < 0x21 || k.prov[i] > 0x7e) {
            abort();
        }
    }
    sd_fkey_encode(&k, again);
    if (memcmp(again, data, SD_FRAME_KEY_LEN) != 0) {
        abort();
    }
}

/* The input as a reply encrypted for a fixed connection and grant. */
static void check_sealed(const uint8_t *data)
{
    static const struct sd_fauth_conn conn = { .mac = SD_FAUTH_HMAC };
    static const uint8_t key[SD_KEY_LEN] = { 7 };
    uint8_t buf[SD_FRAME_KEY_LEN];

    memcpy(buf, data, sizeof(buf));
    if (sd_fauth_pad(&conn, key, data, SD_FAUTH_D2C, 1, buf,
                     sizeof(buf)) < 0) {
        abort();
    }
    check(buf, sizeof(buf));
    if (sd_fauth_pad(&conn, key, data, SD_FAUTH_D2C, 1, buf,
                     sizeof(buf)) < 0 ||
        memcmp(buf, data, sizeof(buf)) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t fixed[SD_FRAME_KEY_LEN];

    check(data, size);
    if (size != SD_FRAME_KEY_LEN) {
        return 0;
    }
    check_sealed(data);
    memcpy(fixed, data, size);
    memcpy(fixed, "MSFK", 4);
    fixed[4] = SD_FKEY_VERSION;
    check(fixed, size);
    return 0;
}
