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

/* Latency histograms: log-linear buckets of microseconds, 8 linear steps
 * per power of two, so a percentile is within 1/8 of its value. */
#include "hist.h"

static unsigned hist_bucket(uint64_t us)
{
    unsigned e;

    if (us < 16) {
        return (unsigned)us;
    }
    e = 63 - (unsigned)__builtin_clzll(us);     /* us in [2^e, 2^e+1) */
    return 16 + (e - 4) * 8 + (unsigned)((us >> (e - 3)) & 7);
}

static uint64_t hist_upper(unsigned bucket)
{
    unsigned e, step;

    if (bucket < 16) {
        return bucket;
    }
    e = (bucket - 16) / 8 + 4;
    step = (bucket - 16) % 8;
    return (1ULL << e) + ((uint64_t)(step + 1) << (e - 3)) - 1;
}

void sd_hist_add(struct sd_hist *h, uint64_t us)
{
    unsigned b = hist_bucket(us);

    if (b >= SD_HIST_BUCKETS) {
        b = SD_HIST_BUCKETS - 1;
    }
    __atomic_fetch_add(&h->count[b], 1, __ATOMIC_RELAXED);
}

uint64_t sd_hist_percentile(const struct sd_hist *h, double p)
{
    uint64_t total = 0, seen = 0, want;
    unsigned b;

    for (b = 0; b < SD_HIST_BUCKETS; b++) {
        total += __atomic_load_n(&h->count[b], __ATOMIC_RELAXED);
    }
    if (total == 0) {
        return 0;
    }
    want = (uint64_t)((double)total * p / 100.0 + 0.999999);
    if (want == 0) {
        want = 1;
    }
    for (b = 0; b < SD_HIST_BUCKETS; b++) {
        seen += __atomic_load_n(&h->count[b], __ATOMIC_RELAXED);
        if (seen >= want) {
            return hist_upper(b);
        }
    }
    return hist_upper(SD_HIST_BUCKETS - 1);
}
