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

/* Completion batches (batch.h): per-thread, no locks. */
#include <stddef.h>

#include "batch.h"

#define BATCH_MAX 64            /* distinct deferred calls per batch */

struct deferred {
    void (*fn)(void *arg);
    void *arg;
};

static __thread unsigned depth;
static __thread unsigned count;
static __thread struct deferred pending[BATCH_MAX];

void sd_batch_open(void)
{
    depth++;
}

void sd_batch_close(void)
{
    struct deferred run[BATCH_MAX];
    unsigned i, n;

    if (--depth) {
        return;
    }
    /* Taken out first: a deferred call may open and close a batch of
     * its own. */
    n = count;
    for (i = 0; i < n; i++) {
        run[i] = pending[i];
    }
    count = 0;
    for (i = 0; i < n; i++) {
        run[i].fn(run[i].arg);
    }
}

enum sd_batch_defer_result sd_batch_defer(void (*fn)(void *arg), void *arg)
{
    unsigned i;

    if (!depth) {
        return SD_BATCH_RUN_NOW;
    }
    for (i = 0; i < count; i++) {
        if (pending[i].fn == fn && pending[i].arg == arg) {
            return SD_BATCH_ALREADY;
        }
    }
    if (count == BATCH_MAX) {
        return SD_BATCH_RUN_NOW;
    }
    pending[count].fn = fn;
    pending[count].arg = arg;
    count++;
    return SD_BATCH_DEFERRED;
}
