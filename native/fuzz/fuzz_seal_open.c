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
 * libFuzzer harness: opening a sealed page, whose seal and data come from
 * a donor (untrusted).  The input is a seal then a page, zero-padded; it
 * is opened as it is, then with its version byte set to each AEAD's and
 * its reserved bytes zero.  Every try must be refused with -EBADMSG
 * (nobody forges a tag by fuzzing) and leave the page zeroed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "seal.h"

static const uint8_t grant[SD_UUID_LEN] = { 7 };
static const uint8_t key[SD_KEY_LEN] = { 9 };

static void must_not_open(const uint8_t *seal, const uint8_t *data)
{
    static uint8_t page[SD_PAGE_SIZE];
    uint64_t bad = 0;
    size_t i;

    memcpy(page, data, SD_PAGE_SIZE);
    if (sd_open_pages(key, grant, 3, page, seal, 1, &bad) != -EBADMSG ||
        bad != 3) {
        abort();
    }
    for (i = 0; i < SD_PAGE_SIZE; i++) {
        if (page[i]) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t in[SD_SEAL_LEN + SD_PAGE_SIZE];
    uint8_t *seal = in, *page = in + SD_SEAL_LEN;

    memset(in, 0, sizeof(in));
    memcpy(in, data, size < sizeof(in) ? size : sizeof(in));
    must_not_open(seal, page);
    memset(seal + 13, 0, 3);
    seal[12] = SD_SEAL_AEGIS;
    must_not_open(seal, page);
    seal[12] = SD_SEAL_AES_GCM;
    must_not_open(seal, page);
    return 0;
}
