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

/* Helpers shared by the daemon's modules: keys, hex, uuids, numbers,
 * error messages, strings, locks. */
#define _GNU_SOURCE             /* writer-first rwlocks */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int sd_all_zero(const uint8_t *p, size_t len)
{
    uint8_t acc = 0;

    while (len--) {
        acc |= *p++;
    }
    return acc == 0;
}

int sd_key_equal(const uint8_t a[SD_KEY_LEN], const uint8_t b[SD_KEY_LEN])
{
    /* Every byte is compared whatever differs first, so the time taken
     * says nothing about how much of a guessed key was right. */
    volatile uint8_t diff = 0;
    size_t i;

    for (i = 0; i < SD_KEY_LEN; i++) {
        diff |= a[i] ^ b[i];
    }
    return diff == 0;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

int sd_hex_decode(const char *text, size_t len, uint8_t *out, size_t n)
{
    size_t i;

    if (len != 2 * n) {
        return -EINVAL;
    }
    for (i = 0; i < n; i++) {
        int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            return -EINVAL;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

void sd_hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Where the dashes of a uuid's text are. */
static int uuid_dash(size_t pos)
{
    return pos == 8 || pos == 13 || pos == 18 || pos == 23;
}

int sd_uuid_parse(const char *text, size_t len, uint8_t out[SD_UUID_LEN])
{
    size_t pos, n = 0;

    if (len != SD_UUID_STRLEN) {
        return -EINVAL;
    }
    for (pos = 0; pos < len; pos += 2) {
        int hi, lo;

        if (uuid_dash(pos)) {
            if (text[pos] != '-') {
                return -EINVAL;
            }
            pos--;      /* the pair starts one further */
            continue;
        }
        hi = hex_value(text[pos]);
        lo = hex_value(text[pos + 1]);
        if (hi < 0 || lo < 0) {
            return -EINVAL;
        }
        out[n++] = (uint8_t)(hi << 4 | lo);
    }
    return n == SD_UUID_LEN ? 0 : -EINVAL;
}

void sd_uuid_format(const uint8_t uuid[SD_UUID_LEN], char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i, pos = 0;

    for (i = 0; i < SD_UUID_LEN; i++) {
        if (uuid_dash(pos)) {
            out[pos++] = '-';
        }
        out[pos++] = digits[uuid[i] >> 4];
        out[pos++] = digits[uuid[i] & 15];
    }
    out[pos] = '\0';
}

int sd_parse_u64(const char *text, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (len == 0 || len > 20) {
        return len ? -ERANGE : -EINVAL;
    }
    for (i = 0; i < len; i++) {
        unsigned d;

        if (text[i] < '0' || text[i] > '9') {
            return -EINVAL;
        }
        d = (unsigned)(text[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return -ERANGE;
        }
        v = v * 10 + d;
    }
    if (v > max) {
        return -ERANGE;
    }
    *out = v;
    return 0;
}

const char *sd_errno_name(int err)
{
    switch (err) {
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case ENOMEM: return "ENOMEM";
    case EEXIST: return "EEXIST";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ERANGE: return "ERANGE";
    case EBUSY: return "EBUSY";
    case ENOSPC: return "ENOSPC";
    case ENODEV: return "ENODEV";
    case E2BIG: return "E2BIG";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ECONNRESET: return "ECONNRESET";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EBADMSG: return "EBADMSG";
    case EALREADY: return "EALREADY";
    case ENOKEY: return "ENOKEY";
    default: return "EIO";
    }
}

uint64_t sd_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void sd_rwlock_init_writer_first(pthread_rwlock_t *lock)
{
    pthread_rwlockattr_t attr;

    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(
        &attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(lock, &attr);
    pthread_rwlockattr_destroy(&attr);
}

int sd_write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len) {
        ssize_t n = write(fd, p, len);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int sd_read_full(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len) {
        ssize_t n = read(fd, p, len);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        if (n == 0) {
            return -ECONNRESET;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int sd_fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return ret;
}

void sd_strbuf_printf(struct sd_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->oom) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0,
                  fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if (!b->s || b->len + (size_t)n >= b->cap) {
        size_t cap = (b->cap ? b->cap : 256);
        char *s;

        while (cap <= b->len + (size_t)n) {
            cap *= 2;
        }
        s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
        va_start(ap, fmt);
        vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}
