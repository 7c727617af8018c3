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
 * Completion batches: a thread that completes many I/Os in a row (a
 * transport's receiver with a buffer of replies, the NBD reader with a
 * burst of requests) opens a batch around them.  Work that can wait until
 * the batch closes (sending the NBD replies of one connection together)
 * is deferred to it and runs once per distinct (fn, arg) when it closes,
 * on the same thread.
 */
#ifndef MEMAGG_SWAPD_BATCH_H
#define MEMAGG_SWAPD_BATCH_H

/* Open a batch on this thread; batches nest (the outermost close runs
 * the deferred work). */
void sd_batch_open(void);
/* Close it: run what was deferred, in the order it was first deferred. */
void sd_batch_close(void);
/* What sd_batch_defer did. */
enum sd_batch_defer_result {
    SD_BATCH_RUN_NOW,           /* no batch is open, or it is full */
    SD_BATCH_DEFERRED,          /* this call deferred it */
    SD_BATCH_ALREADY,           /* an earlier call in this batch did */
};
/* Defer fn(arg) to the batch open on this thread. */
enum sd_batch_defer_result sd_batch_defer(void (*fn)(void *arg), void *arg);

#endif
