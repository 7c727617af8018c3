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
 * For the transports' tests: ios whose completions a test waits for, with
 * a deadline (struct tio's done is tio_done; its waiter counts what is
 * pending).
 */
#ifndef MEMAGG_SWAPD_TESTS_IO_WAITER_H
#define MEMAGG_SWAPD_TESTS_IO_WAITER_H

#include <pthread.h>
#include <time.h>

#include "transport.h"

struct waiter {
    pthread_mutex_t m;
    pthread_cond_t c;
    int pending;
};

struct tio {
    struct sd_io io;
    struct waiter *w;
    int status;
    int calls;
};

static inline void waiter_init(struct waiter *w)
{
    pthread_mutex_init(&w->m, NULL);
    pthread_cond_init(&w->c, NULL);
    w->pending = 0;
}

static inline void tio_done(struct sd_io *io, int status)
{
    struct tio *t = (struct tio *)io;
    struct waiter *w = t->w;

    pthread_mutex_lock(&w->m);
    t->status = status;
    t->calls++;
    w->pending--;
    pthread_cond_broadcast(&w->c);
    pthread_mutex_unlock(&w->m);
}

/* Wait until at most `left` are pending; 1 when so before the deadline. */
static inline int wait_pending(struct waiter *w, int left, int seconds)
{
    struct timespec ts;
    int ok;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    pthread_mutex_lock(&w->m);
    while (w->pending > left &&
           pthread_cond_timedwait(&w->c, &w->m, &ts) == 0) {
    }
    ok = w->pending <= left;
    pthread_mutex_unlock(&w->m);
    return ok;
}

#endif
