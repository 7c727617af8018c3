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
 * Latency histograms: an export's request times, for the p50 and p99 of
 * EXPORT_STATS, counted without a lock from every I/O thread.
 */
#ifndef MEMAGG_SWAPD_HIST_H
#define MEMAGG_SWAPD_HIST_H

#include <stdint.h>

#define SD_HIST_BUCKETS 256
struct sd_hist {
    uint64_t count[SD_HIST_BUCKETS];
};
void sd_hist_add(struct sd_hist *h, uint64_t us);
/* The upper edge (us) of the bucket holding the p-th percentile, 0 when
 * empty. */
uint64_t sd_hist_percentile(const struct sd_hist *h, double p);

#endif
