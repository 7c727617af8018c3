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
 * Choice of n random pages out of a range: stratified, one page drawn
 * uniformly in each of n equal slices of the range.  Every page still has
 * the same chance n/N, so f/n stays unbiased, and the variance is never
 * above that of n independent draws -- much below it when hot memory is
 * contiguous, as guest RAM usually is.  The result comes out distinct and
 * sorted, as the pagemap reads want it, without a sort.
 */
#include <errno.h>

#include "ms.h"

/* splitmix64: small, fast and good enough to pick pages. */
uint64_t ms_rand_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* First page of slice i of n over nr_pages (128 bits: i * nr may overflow). */
static uint64_t slice_start(uint64_t nr_pages, unsigned int n, uint64_t i)
{
    return (uint64_t)((unsigned __int128)nr_pages * i / n);
}

int ms_draw_pages(uint64_t *state, uint64_t nr_pages, unsigned int n,
                  uint64_t *out, unsigned int *nr_out)
{
    uint64_t i, lo, hi;

    if (!nr_pages || !n) {
        return -EINVAL;
    }
    if (n >= nr_pages) {
        for (i = 0; i < nr_pages; i++) {
            out[i] = i;
        }
        *nr_out = (unsigned int)nr_pages;
        return 0;
    }
    /* n < nr_pages: every slice holds at least one page. */
    for (i = 0, lo = 0; i < n; i++, lo = hi) {
        hi = slice_start(nr_pages, n, i + 1);
        out[i] = lo + ms_rand_next(state) % (hi - lo);
    }
    *nr_out = n;
    return 0;
}
