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
 * libFuzzer harness: DAMON's tried regions (start and end numbers, as read
 * from sysfs) attributed to the sampled pages.  The first byte sets how
 * many keys, each next byte the gap to the previous key (in pages); the
 * rest is start/end text pairs, one number a line.
 */
#include <stdint.h>
#include <string.h>

#include "ms.h"

#define MAX_KEYS 64

/* The next line of data, parsed; 0 on garbage, as the sampler fails it. */
static int next_number(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    const uint8_t *eol = memchr(*p, '\n', (size_t)(end - *p));
    size_t len = eol ? (size_t)(eol - *p) : (size_t)(end - *p);
    int ret = ms_parse_u64((const char *)*p, len, v);

    *p += eol ? len + 1 : len;
    return ret == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t keys[MAX_KEYS], start, end, key = 0;
    unsigned char marks[MAX_KEYS];
    const uint8_t *p = data, *stop = data + size;
    unsigned int n, k, count;

    if (size < 1) {
        return 0;
    }
    n = *p++ % (MAX_KEYS + 1);
    for (k = 0; k < n && p < stop; k++) {
        key += (uint64_t)(*p++ + 1) * 4096;
        keys[k] = key;
    }
    n = k;
    while (p < stop) {
        if (!next_number(&p, stop, &start) || !next_number(&p, stop, &end)) {
            continue;
        }
        /* Exactly the keys in [start, end), as a linear scan finds them. */
        memset(marks, 0, sizeof(marks));
        count = ms_mark_range(keys, n, start, end, marks);
        for (k = 0; k < n; k++) {
            if (marks[k] != (keys[k] >= start && keys[k] < end)) {
                __builtin_trap();
            }
            count -= marks[k];
        }
        if (count) {
            __builtin_trap();
        }
    }
    return 0;
}
