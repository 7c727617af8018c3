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

/* libFuzzer harness: /proc/PID/smaps text, with the range from its head. */
#include <stdint.h>
#include <string.h>

#include "ms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t range[2] = { 0, UINT64_MAX }, ref, rss;

    if (size >= sizeof(range)) {
        memcpy(range, data, sizeof(range));
        data += sizeof(range);
        size -= sizeof(range);
    }
    ms_smaps_scan((const char *)data, size, range[0], range[1], &ref, &rss);
    return 0;
}
