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
 * Tests of completion batches (batch.h): nothing is deferred without an
 * open batch, a call deferred twice runs once, the outermost close runs
 * them in order, a full batch says run it now, and a deferred call may
 * open a batch of its own.  Prints "N passed, N failed".
 */
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "check.h"

static char order[256];
static size_t norder;

static void note(void *arg)
{
    order[norder++] = *(const char *)arg;
}

/* A deferred call that defers another one in a batch of its own. */
static void nested(void *arg)
{
    note(arg);
    sd_batch_open();
    CHECK(sd_batch_defer(note, "n") == SD_BATCH_DEFERRED);
    sd_batch_close();
}

int main(void)
{
    static char keys[100];
    int i, run_now = 0;

    CHECK(sd_batch_defer(note, "x") == SD_BATCH_RUN_NOW);
    CHECK(norder == 0);

    sd_batch_open();
    CHECK(sd_batch_defer(note, "a") == SD_BATCH_DEFERRED);
    CHECK(sd_batch_defer(note, "b") == SD_BATCH_DEFERRED);
    sd_batch_open();                    /* nested: closes without running */
    CHECK(sd_batch_defer(note, "a") == SD_BATCH_ALREADY);
    sd_batch_close();
    CHECK(norder == 0);
    sd_batch_close();
    CHECK(norder == 2 && memcmp(order, "ab", 2) == 0);

    /* The same function with another argument is another call. */
    norder = 0;
    for (i = 0; i < 100; i++) {
        keys[i] = (char)('0' + i % 10);
    }
    sd_batch_open();
    for (i = 0; i < 100; i++) {
        run_now += sd_batch_defer(note, &keys[i]) == SD_BATCH_RUN_NOW;
    }
    CHECK(run_now == 100 - 64);         /* 64 fit in a batch */
    sd_batch_close();
    CHECK(norder == 64 && order[0] == '0' && order[63] == '3');

    norder = 0;
    sd_batch_open();
    CHECK(sd_batch_defer(nested, "o") == SD_BATCH_DEFERRED);
    sd_batch_close();
    CHECK(norder == 2 && memcmp(order, "on", 2) == 0);
    /* Nothing is left open or pending afterwards. */
    CHECK(sd_batch_defer(note, "z") == SD_BATCH_RUN_NOW);
    return check_summary();
}
