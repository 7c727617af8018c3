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
 * The checks of the C test programs (the sampler's and memagg-swapd's).
 * CHECK(cond) counts a pass, or prints the failed condition and where it
 * is and counts a failure; check_summary() prints the result line
 * "N passed, M failed" that the C-suite pytest reads, and is main()'s
 * exit status; all_zero(p, n) says whether n bytes are all zero.  Each test program is one translation unit, so the
 * counters are its own.
 */
#ifndef MEMAGG_TESTS_CHECK_H
#define MEMAGG_TESTS_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static int passed, failed;

#define CHECK(cond) do { \
        if (cond) { \
            passed++; \
        } else { \
            failed++; \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
        } \
    } while (0)

static inline int all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        if (b[i]) {
            return 0;
        }
    }
    return 1;
}

static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#endif
