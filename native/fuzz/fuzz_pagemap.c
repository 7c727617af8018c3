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

/* libFuzzer harness: pagemap entries and idle-bitmap words, decoded. */
#include <stdint.h>
#include <string.h>

#include "ms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ms_pagemap_entry e;
    uint64_t raw;
    size_t i;

    for (i = 0; i + sizeof(raw) <= size; i += sizeof(raw)) {
        memcpy(&raw, data + i, sizeof(raw));
        ms_pagemap_decode(raw, &e);
        if (e.pfn >> 55 || (!e.present && e.pfn)) {
            __builtin_trap();
        }
    }
    return 0;
}
