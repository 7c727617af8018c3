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
 * The tiers of an export's slabs and the ledger memagg-swapd keeps of each:
 * the request path and the registry count it (export_internal.h), the
 * export's stats show it (export.h, EXPORT_STATS).
 */
#ifndef MEMAGG_SWAPD_LEDGER_H
#define MEMAGG_SWAPD_LEDGER_H

#include <stdint.h>

/* The tiers of an export's slabs: on a donor (L1) or in the local copy
 * only (L2). */
enum { SD_L1, SD_L2, SD_TIERS };

/* One tier's ledger (ALGORITHMS.md §8), in 4 KiB pages since memagg-swapd
 * started: pages newly stored (puts: a page found in the local copy at a
 * start counts as one), read (gets), trimmed (flushes), moved in and out
 * with their slabs, and evicted (none: nothing leaves without a copy).
 * A read leaves its page stored, as on any disk: the guest frees it by a
 * TRIM.  So used = puts + moved_in - flushes - moved_out - evicts, but for
 * writes and trims that race with a move (at most a slab's). */
struct sd_export_tier {
    uint64_t puts, gets, flushes, moved_in, moved_out, evicts, used;
};

#endif
