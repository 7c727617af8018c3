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
 * Small helpers of the daemon: hex and uuid text, the errno names the
 * control protocol speaks, a monotonic clock, writer-first locks,
 * whole-buffer I/O, error messages and a growing string.
 */
#ifndef MEMAGG_SWAPD_UTIL_H
#define MEMAGG_SWAPD_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "swapd.h"

#define SD_UUID_STRLEN 36       /* 8-4-4-4-12 hex digits, without NUL */

/* 1 when p[0..len) are all zero bytes (a wire format's padding). */
int sd_all_zero(const uint8_t *p, size_t len);

/* Decode exactly 2 * n hex digits of text[0..len) into out; -EINVAL when
 * len is not 2 * n or a character is not a hex digit. */
int sd_hex_decode(const char *text, size_t len, uint8_t *out, size_t n);
/* Encode n bytes as 2 * n lower-case hex digits and a NUL. */
void sd_hex_encode(const uint8_t *in, size_t n, char *out);

/* Parse a uuid "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (any case) of
 * text[0..len); -EINVAL when malformed. */
int sd_uuid_parse(const char *text, size_t len, uint8_t out[SD_UUID_LEN]);
/* Format a uuid in lower case into out (SD_UUID_STRLEN + 1 bytes). */
void sd_uuid_format(const uint8_t uuid[SD_UUID_LEN], char *out);

/* Decimal unsigned integer of text[0..len), no sign, no spaces;
 * -EINVAL when malformed, -ERANGE above max. */
int sd_parse_u64(const char *text, size_t len, uint64_t max, uint64_t *out);

/* "EINVAL" for EINVAL (positive errno); "EIO" for the ones it does not
 * know. */
const char *sd_errno_name(int err);

/* Microseconds of CLOCK_MONOTONIC. */
uint64_t sd_now_us(void);

/* Initialise lock so that a waiting writer goes before new readers: a
 * writer's switch must not wait out a stream of readers. */
void sd_rwlock_init_writer_first(pthread_rwlock_t *lock);

/* Write or read all len bytes (retrying on EINTR and short counts);
 * 0, -errno, or for reads -ECONNRESET at end of file. */
int sd_write_full(int fd, const void *buf, size_t len);
int sd_read_full(int fd, void *buf, size_t len);

/* Write the message into err (errlen bytes) and return ret: the failure
 * path of the calls that say why they failed. */
int sd_fail(char *err, size_t errlen, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A growing string.  Start from all zeros; after an allocation failed,
 * oom is set, appends do nothing and s is only to be freed. */
struct sd_strbuf {
    char *s;
    size_t len, cap;
    int oom;
};
void sd_strbuf_printf(struct sd_strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
