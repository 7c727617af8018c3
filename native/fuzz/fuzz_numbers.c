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
 * libFuzzer harness: sysfs numbers (DAMON's total_bytes, nr_kdamonds,
 * kdamond pid, schedstat) and word lists (avail_operations).
 */
#include <stdint.h>

#include "ms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t v;

    ms_parse_u64((const char *)data, size, &v);
    ms_word_list_has((const char *)data, size, "paddr");
    ms_word_list_has((const char *)data, size, "");
    return 0;
}
