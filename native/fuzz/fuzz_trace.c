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
 * libFuzzer harness: lines of a tracefs trace file, as the DAMON trace
 * reader (damon_trace.c) parses them, one line per newline of the input.
 * An event that parses has end > start and prints back, in the kernel's
 * format, to a line that parses to the same event.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ms.h"

static void check_round_trip(const struct ms_damos_event *ev)
{
    struct ms_damos_event again;
    char line[256];
    int len;

    if (ev->end <= ev->start) {
        __builtin_trap();
    }
    len = snprintf(line, sizeof(line), "damos_before_apply: ctx_idx=%" PRIu32
                   " scheme_idx=%" PRIu32 " target_idx=%" PRIu64
                   " nr_regions=1 %" PRIu64 "-%" PRIu64 ": %" PRIu32 " 0",
                   ev->ctx, ev->scheme, ev->target, ev->start, ev->end,
                   ev->nr_accesses);
    if (len <= 0 || (size_t)len >= sizeof(line) ||
        ms_damos_trace_line(line, (size_t)len, &again) != 0 ||
        again.ctx != ev->ctx || again.scheme != ev->scheme ||
        again.target != ev->target || again.start != ev->start ||
        again.end != ev->end || again.nr_accesses != ev->nr_accesses) {
        __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;

    while (p <= end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct ms_damos_event ev;
        int ret;

        memset(&ev, 0, sizeof(ev));
        ret = ms_damos_trace_line(p, len, &ev);
        if (ret == 0) {
            check_round_trip(&ev);
        } else if (ret != 1 && ret != -EINVAL && ret != -ENOSPC) {
            __builtin_trap();
        }
        p += len + 1;
    }
    return 0;
}
