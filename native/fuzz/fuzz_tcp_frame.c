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
 * libFuzzer harness: the TCP transport's frame header parser.  Each input
 * is parsed as it is and, so the fuzzer gets past the magic and version
 * at once, with those two fields set right.  A header the parser accepts
 * must encode back to the same bytes with a payload within the maximum
 * (a sealed frame's: whole pages and their seals); every rejection must
 * say why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

static void check(const uint8_t *data, size_t size)
{
    struct sd_frame f;
    const char *why;
    uint8_t again[SD_FRAME_HDR_LEN];

    if (sd_frame_parse(data, size, &f, &why) < 0) {
        if (!why || !*why) {
            abort();
        }
        return;
    }
    if (sd_frame_payload_len(&f) > SD_FRAME_MAX_PAYLOAD) {
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
