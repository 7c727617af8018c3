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

/* A check the transport's tests share: whether a grant key's bytes show in
 * what went over the wire. */
#ifndef MEMAGG_SWAPD_TESTS_KEY_BYTES_H
#define MEMAGG_SWAPD_TESTS_KEY_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "swapd.h"

/* Whether any 8-byte window of key is in buf[0..len). */
static inline int has_key_bytes(const uint8_t *buf, size_t len,
                                const uint8_t key[SD_KEY_LEN])
{
    size_t i, j;

    for (i = 0; i + 8 <= len; i++) {
        for (j = 0; j + 8 <= SD_KEY_LEN; j++) {
            if (memcmp(buf + i, key + j, 8) == 0) {
                return 1;
            }
        }
    }
    return 0;
}

#endif
