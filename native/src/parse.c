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
 * Parsers for what the kernel hands back: pagemap entries, numbers in sysfs
 * files, /proc/PID/smaps, word lists and DAMON's address ranges.  They take
 * a buffer and its length (no NUL needed) and never read past it; each has
 * a libFuzzer harness.
 */
#include <errno.h>
#include <string.h>

#include "ms.h"

#define PM_PFN_MASK ((1ULL << 55) - 1)
#define PM_SWAPPED (1ULL << 62)
#define PM_PRESENT (1ULL << 63)

void ms_pagemap_decode(uint64_t raw, struct ms_pagemap_entry *e)
{
    e->present = !!(raw & PM_PRESENT);
    e->swapped = !!(raw & PM_SWAPPED);
    /* Bits 0-54 hold the swap type/offset for swapped entries, not a PFN. */
    e->pfn = e->present ? raw & PM_PFN_MASK : 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int ms_parse_u64(const char *buf, size_t len, uint64_t *out)
{
    size_t i = 0;
    uint64_t v = 0;
    int digits = 0;

    while (i < len && is_space(buf[i])) {
        i++;
    }
    for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++, digits++) {
        uint64_t d = (uint64_t)(buf[i] - '0');

        if (v > (UINT64_MAX - d) / 10) {
            return -ERANGE;
        }
        v = v * 10 + d;
    }
    while (i < len && is_space(buf[i])) {
        i++;
    }
    if (!digits || i != len) {
        return -EINVAL;
    }
    *out = v;
    return 0;
}

/* Parse hex digits at *p (bounded by end); 0 when there are none. */
static int parse_hex(const char **p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    int digits = 0;

    for (; *p < end; (*p)++, digits++) {
        char c = **p;
        unsigned int d;

        if (c >= '0' && c <= '9') {
            d = (unsigned int)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            d = (unsigned int)(c - 'a' + 10);
        } else {
            break;
        }
        if (digits >= 16) {
            return 0;
        }
        v = v << 4 | d;
    }
    *out = v;
    return digits;
}

/* "Name:   123 kB" -> 123 when the line starts with name. */
static int field_kb(const char *line, const char *end, const char *name,
                    uint64_t *kb)
{
    size_t nlen = strlen(name);
    const char *p = line + nlen;
    const char *q;

    if ((size_t)(end - line) < nlen || memcmp(line, name, nlen) != 0) {
        return 0;
    }
    while (p < end && is_space(*p)) {
        p++;
    }
    q = p;
    while (q < end && *q >= '0' && *q <= '9') {
        q++;
    }
    return q > p && ms_parse_u64(p, (size_t)(q - p), kb) == 0;
}

int ms_smaps_scan(const char *buf, size_t len, uint64_t start, uint64_t end,
                  uint64_t *referenced_kb, uint64_t *rss_kb)
{
    const char *p = buf;
    const char *stop = buf + len;
    uint64_t vstart = 0, vend = 0, overlap = 0;
    unsigned __int128 ref = 0, rss = 0;
    int matched = 0;

    while (p < stop) {
        const char *eol = memchr(p, '\n', (size_t)(stop - p));
        const char *q = p;
        uint64_t a, b, kb;

        if (!eol) {
            eol = stop;
        }
        /* A VMA header: "start-end perms offset dev inode [path]". */
        if (parse_hex(&q, eol, &a) && q < eol && *q == '-') {
            q++;
            if (parse_hex(&q, eol, &b) && q < eol && *q == ' ' && b > a) {
                vstart = a;
                vend = b;
                overlap = 0;
                if (vstart < end && vend > start) {
                    overlap = (vend < end ? vend : end) -
                              (vstart > start ? vstart : start);
                    matched++;
                }
            } else {
                overlap = 0;
            }
        } else if (overlap) {
            /*
             * smaps has no finer grain than a VMA: a VMA that sticks out of
             * the range contributes in proportion to its overlap.
             */
            if (field_kb(p, eol, "Referenced:", &kb)) {
                ref += (unsigned __int128)kb * overlap / (vend - vstart);
            } else if (field_kb(p, eol, "Rss:", &kb)) {
                rss += (unsigned __int128)kb * overlap / (vend - vstart);
            }
        }
        p = eol + 1;
    }
    *referenced_kb = ref > UINT64_MAX ? UINT64_MAX : (uint64_t)ref;
    *rss_kb = rss > UINT64_MAX ? UINT64_MAX : (uint64_t)rss;
    return matched;
}

int ms_word_list_has(const char *buf, size_t len, const char *word)
{
    size_t wlen = strlen(word);
    size_t i = 0;

    while (i < len) {
        size_t j;

        while (i < len && is_space(buf[i])) {
            i++;
        }
        j = i;
        while (j < len && !is_space(buf[j])) {
            j++;
        }
        if (j > i && j - i == wlen && memcmp(buf + i, word, wlen) == 0) {
            return 1;
        }
        i = j;
    }
    return 0;
}

/*
 * Mark the keys (sorted, ascending) in [start, end): the samples a range
 * the kernel reports covers.  Returns how many; none when end <= start.
 */
unsigned int ms_mark_range(const uint64_t *keys, unsigned int n,
                           uint64_t start, uint64_t end, unsigned char *marks)
{
    unsigned int lo = 0, hi = n, count = 0;

    while (lo < hi) {
        unsigned int mid = lo + (hi - lo) / 2;

        if (keys[mid] < start) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for (; lo < n && keys[lo] < end; lo++, count++) {
        marks[lo] = 1;
    }
    return count;
}
