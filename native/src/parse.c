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
 * files, /proc/PID/smaps, word lists, DAMON's address ranges and its trace
 * events.  They take a buffer and its length (no NUL needed) and never read
 * past it; each has a libFuzzer harness.
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
 * The memory cgroup path of a /proc/PID/cgroup text ("ID:CONTROLLERS:PATH"
 * lines): the v1 line whose controllers include memory, else the v2 line
 * ("0::PATH") when no v1 hierarchy has the memory controller.  -ENOENT
 * when neither is there, -ENAMETOOLONG when the path does not fit.
 */
int ms_cgroup_memcg(const char *buf, size_t len, char *out, size_t outlen)
{
    const char *line = buf, *end = buf + len, *v2 = NULL, *v2_end = NULL;

    while (line < end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *eol = nl ? nl : end;
        const char *c1 = memchr(line, ':', (size_t)(eol - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1))
                            : NULL;

        if (c2) {
            const char *ctl = c1 + 1;
            int memory = 0;

            while (ctl < c2) {
                const char *comma = memchr(ctl, ',', (size_t)(c2 - ctl));
                const char *ce = comma ? comma : c2;

                memory |= ce - ctl == 6 && memcmp(ctl, "memory", 6) == 0;
                ctl = ce + 1;
            }
            if (memory || (c2 == c1 + 1 && c1 - line == 1 && *line == '0')) {
                size_t plen = (size_t)(eol - c2 - 1);

                if (!memory) {
                    v2 = c2 + 1;
                    v2_end = eol;
                } else {
                    if (plen + 1 > outlen) {
                        return -ENAMETOOLONG;
                    }
                    memcpy(out, c2 + 1, plen);
                    out[plen] = '\0';
                    return 0;
                }
            }
        }
        line = eol + 1;
    }
    if (!v2) {
        return -ENOENT;
    }
    if ((size_t)(v2_end - v2) + 1 > outlen) {
        return -ENAMETOOLONG;
    }
    memcpy(out, v2, (size_t)(v2_end - v2));
    out[v2_end - v2] = '\0';
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

/* Skip the literal lit at *p: 0, or -EINVAL when it is not there. */
static int skip_literal(const char **p, const char *end, const char *lit)
{
    size_t n = strlen(lit);

    if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0) {
        return -EINVAL;
    }
    *p += n;
    return 0;
}

/* A decimal number at *p, at most max: 0, or -EINVAL (none, too big). */
static int take_decimal(const char **p, const char *end, uint64_t max,
                        uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;

    while (*p < end && **p >= '0' && **p <= '9') {
        unsigned int d = (unsigned int)(**p - '0');

        if (v > (max - d) / 10) {
            return -EINVAL;
        }
        v = v * 10 + d;
        (*p)++;
    }
    if (*p == s) {
        return -EINVAL;
    }
    *out = v;
    return 0;
}

/*
 * One line of a tracefs trace file.  A damon:damos_before_apply event
 * prints, after the context the instance's options add,
 *   damos_before_apply: ctx_idx=C scheme_idx=S target_idx=T nr_regions=N
 *   START-END: NR_ACCESSES AGE
 * (one line).  0 and *ev for such a line; -ENOSPC for the line saying
 * the ring buffer lost events ("CPU:N [LOST M EVENTS]"); 1 for any other
 * line (a comment, another event); -EINVAL for a damos_before_apply line
 * that does not parse.
 */
int ms_damos_trace_line(const char *line, size_t len,
                        struct ms_damos_event *ev)
{
    static const char tag[] = "damos_before_apply: ";
    const char *end = line + len, *p = line;
    uint64_t v[8];
    static const char *const lit[8] = {
        "ctx_idx=", " scheme_idx=", " target_idx=", " nr_regions=", " ",
        "-", ": ", " ",
    };
    static const uint64_t max[8] = {
        UINT32_MAX, UINT32_MAX, UINT64_MAX, UINT32_MAX, UINT64_MAX,
        UINT64_MAX, UINT32_MAX, UINT32_MAX,
    };
    unsigned int k;

    if (len && line[0] == '#') {
        return 1;
    }
    while ((size_t)(end - p) >= sizeof(tag) - 1 &&
           memcmp(p, tag, sizeof(tag) - 1) != 0) {
        p++;
    }
    if ((size_t)(end - p) < sizeof(tag) - 1) {
        return ms_word_list_has(line, len, "[LOST") ? -ENOSPC : 1;
    }
    p += sizeof(tag) - 1;
    for (k = 0; k < 8; k++) {
        if (skip_literal(&p, end, lit[k]) ||
            take_decimal(&p, end, max[k], &v[k])) {
            return -EINVAL;
        }
    }
    while (p < end && is_space(*p)) {
        p++;
    }
    if (p != end || v[5] <= v[4]) {
        return -EINVAL;
    }
    ev->ctx = (uint32_t)v[0];
    ev->scheme = (uint32_t)v[1];
    ev->target = v[2];
    ev->start = v[4];
    ev->end = v[5];
    ev->nr_accesses = (uint32_t)v[6];
    return 0;
}
