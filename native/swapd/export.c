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
 * Exports: the slab table, the written-page bitmap, the local durability
 * copy, the donor connections (peers), counters and the ghost stream, and
 * their persistence in <state-dir>/exports/<uuid>.conf.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "export.h"
#include "nbd.h"
#include "seal.h"
#include "transport.h"
#include "util.h"

/* A failed connection to a donor is retried at most this often; so is a
 * rebuild that could not read from its donor. */
#define RECONNECT_INTERVAL_US 1000000ULL
/* An adopted export's rebuild reads this much at a time (within a slab),
 * in ios of REBUILD_IO (an RDMA staging slot) sent together. */
#define REBUILD_CHUNK (1U << 20)
#define REBUILD_IO (128U << 10)
/* A rebuild waiting for its donor says so again after this many tries. */
#define REBUILD_LOG_EVERY 60
/* Pages from donors that fail to open are logged once per this many. */
#define AUTH_LOG_EVERY 1000

/* ---- bitmap ---- */

int sd_bitmap_init(struct sd_bitmap *b, uint64_t pages)
{
    b->pages = pages;
    b->words = calloc((pages + 63) / 64 ? (pages + 63) / 64 : 1,
                      sizeof(uint64_t));
    return b->words ? 0 : -ENOMEM;
}

void sd_bitmap_destroy(struct sd_bitmap *b)
{
    free(b->words);
    b->words = NULL;
}

void sd_bitmap_set(struct sd_bitmap *b, uint64_t first, uint64_t n)
{
    uint64_t p, end = first + n < b->pages ? first + n : b->pages;

    for (p = first; p < end; p++) {
        if (p % 64 == 0 && end - p >= 64) {
            /* A whole word: an adopted export sets every page at once. */
            __atomic_store_n(&b->words[p / 64], UINT64_MAX,
                             __ATOMIC_RELAXED);
            p += 63;
            continue;
        }
        __atomic_fetch_or(&b->words[p / 64], 1ULL << (p % 64),
                          __ATOMIC_RELAXED);
    }
}

void sd_bitmap_clear(struct sd_bitmap *b, uint64_t first, uint64_t n)
{
    uint64_t p;

    for (p = first; p < first + n && p < b->pages; p++) {
        __atomic_fetch_and(&b->words[p / 64], ~(1ULL << (p % 64)),
                           __ATOMIC_RELAXED);
    }
}

int sd_bitmap_test(const struct sd_bitmap *b, uint64_t page)
{
    if (page >= b->pages) {
        return 0;
    }
    return !!(__atomic_load_n(&b->words[page / 64], __ATOMIC_RELAXED) &
              (1ULL << (page % 64)));
}

int sd_bitmap_any(const struct sd_bitmap *b, uint64_t first, uint64_t n)
{
    uint64_t p = first, end = first + n;

    if (end > b->pages) {
        end = b->pages;
    }
    while (p < end) {
        uint64_t w = __atomic_load_n(&b->words[p / 64], __ATOMIC_RELAXED);

        if (p % 64 == 0 && end - p >= 64) {
            if (w) {
                return 1;
            }
            p += 64;
            continue;
        }
        if (w & (1ULL << (p % 64))) {
            return 1;
        }
        p++;
    }
    return 0;
}

uint64_t sd_bitmap_count(const struct sd_bitmap *b)
{
    uint64_t n = 0, w;

    for (w = 0; w < (b->pages + 63) / 64; w++) {
        n += (uint64_t)__builtin_popcountll(
            __atomic_load_n(&b->words[w], __ATOMIC_RELAXED));
    }
    return n;
}

int sd_bitmap_load_extents(struct sd_bitmap *b, int fd)
{
    off_t end = (off_t)(b->pages * SD_PAGE_SIZE), data = 0, hole;

    for (;;) {
        data = lseek(fd, data, SEEK_DATA);
        if (data < 0) {
            return errno == ENXIO ? 0 : -errno;     /* ENXIO: no more */
        }
        if (data >= end) {
            return 0;
        }
        hole = lseek(fd, data, SEEK_HOLE);
        if (hole < 0) {
            return -errno;
        }
        if (hole > end) {
            hole = end;
        }
        sd_bitmap_set(b, (uint64_t)data / SD_PAGE_SIZE,
                      ((uint64_t)hole + SD_PAGE_SIZE - 1) / SD_PAGE_SIZE -
                      (uint64_t)data / SD_PAGE_SIZE);
        data = hole;
    }
}

/* ---- latency histogram: 8 linear steps per power of two ---- */

static unsigned hist_bucket(uint64_t us)
{
    unsigned e;

    if (us < 16) {
        return (unsigned)us;
    }
    e = 63 - (unsigned)__builtin_clzll(us);     /* us in [2^e, 2^e+1) */
    return 16 + (e - 4) * 8 + (unsigned)((us >> (e - 3)) & 7);
}

static uint64_t hist_upper(unsigned bucket)
{
    unsigned e, step;

    if (bucket < 16) {
        return bucket;
    }
    e = (bucket - 16) / 8 + 4;
    step = (bucket - 16) % 8;
    return (1ULL << e) + ((uint64_t)(step + 1) << (e - 3)) - 1;
}

void sd_hist_add(struct sd_hist *h, uint64_t us)
{
    unsigned b = hist_bucket(us);

    if (b >= SD_HIST_BUCKETS) {
        b = SD_HIST_BUCKETS - 1;
    }
    __atomic_fetch_add(&h->count[b], 1, __ATOMIC_RELAXED);
}

uint64_t sd_hist_percentile(const struct sd_hist *h, double p)
{
    uint64_t total = 0, seen = 0, want;
    unsigned b;

    for (b = 0; b < SD_HIST_BUCKETS; b++) {
        total += __atomic_load_n(&h->count[b], __ATOMIC_RELAXED);
    }
    if (total == 0) {
        return 0;
    }
    want = (uint64_t)((double)total * p / 100.0 + 0.999999);
    if (want == 0) {
        want = 1;
    }
    for (b = 0; b < SD_HIST_BUCKETS; b++) {
        seen += __atomic_load_n(&h->count[b], __ATOMIC_RELAXED);
        if (seen >= want) {
            return hist_upper(b);
        }
    }
    return hist_upper(SD_HIST_BUCKETS - 1);
}

/* ---- ghost ring ---- */

int sd_ghost_init(struct sd_ghost *g, uint32_t cap)
{
    memset(g, 0, sizeof(*g));
    /* calloc of this size maps fresh pages: memory is spent only as
     * events arrive. */
    g->ring = calloc(cap, sizeof(uint64_t));
    g->cap = cap;
    return g->ring ? 0 : -ENOMEM;
}

void sd_ghost_destroy(struct sd_ghost *g)
{
    free(g->ring);
    g->ring = NULL;
}

void sd_ghost_add(struct sd_ghost *g, char op, uint64_t page)
{
    g->ring[g->head % g->cap] = page << 1 | (op == 'i');
    g->head++;
    if (g->head - g->tail > g->cap) {
        g->tail++;              /* the oldest is overwritten */
        g->dropped++;
    }
}

long sd_ghost_drain(struct sd_ghost *g, size_t max, char **text)
{
    size_t n = g->head - g->tail, used = 0, i;
    char *buf;

    if (n > max) {
        n = max;
    }
    buf = malloc(n * 23 + 1);   /* op, up to 20 digits, comma */
    if (!buf) {
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        uint64_t e = g->ring[(g->tail + i) % g->cap];

        used += (size_t)sprintf(buf + used, "%s%c%llu", i ? "," : "",
                                (e & 1) ? 'i' : 'o',
                                (unsigned long long)(e >> 1));
    }
    buf[used] = '\0';
    g->tail += n;
    *text = buf;
    return (long)n;
}

/* ---- the export spec ---- */

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return ret;
}

static int parse_u64_field(const struct sd_args *a, const char *key,
                           uint64_t *v, char *err, size_t errlen)
{
    const char *s = sd_args_get(a, key);

    if (!s) {
        return fail(err, errlen, -EINVAL, "%s: missing", key);
    }
    if (sd_parse_u64(s, strlen(s), UINT64_MAX, v)) {
        return fail(err, errlen, -EINVAL,
                    "%s: must be a decimal number of bytes, not '%.40s'",
                    key, s);
    }
    return 0;
}

/* One "<i>[-<j>]@<endpoint>@<addr>@<rkey>" of slabs=: slabs i to j on one
 * donor, slab k at addr + (k - i) * slab_size. */
static int parse_slab_ref(const char *s, size_t len,
                          struct sd_export_spec *spec, char *err,
                          size_t errlen)
{
    const char *at1 = memchr(s, '@', len), *at3 = NULL, *at2 = NULL, *p;
    const char *dash = at1 ? memchr(s, '-', (size_t)(at1 - s)) : NULL;
    uint64_t first, last, addr, rkey, k;
    struct sd_export_slab *slab;

    for (p = s + len; p > s; p--) {
        if (p[-1] == '@') {
            if (!at3) {
                at3 = p - 1;
            } else {
                at2 = p - 1;
                break;
            }
        }
    }
    if (!at1 || !at2 || at2 <= at1 ||
        sd_parse_u64(s, (size_t)((dash ? dash : at1) - s), UINT32_MAX,
                     &first) ||
        (dash && sd_parse_u64(dash + 1, (size_t)(at1 - dash - 1),
                              UINT32_MAX, &last)) ||
        sd_parse_u64(at2 + 1, (size_t)(at3 - at2 - 1), UINT64_MAX, &addr) ||
        sd_parse_u64(at3 + 1, (size_t)(s + len - at3 - 1), UINT32_MAX,
                     &rkey)) {
        return fail(err, errlen, -EINVAL, "slabs: '%.*s' is not "
                    "<index>[-<index>]@<endpoint>@<addr>@<rkey>",
                    (int)(len > 80 ? 80 : len), s);
    }
    if (!dash) {
        last = first;
    }
    if (last < first) {
        return fail(err, errlen, -EINVAL, "slabs: the range %llu-%llu runs "
                    "backwards", (unsigned long long)first,
                    (unsigned long long)last);
    }
    if (last >= spec->nslabs) {
        return fail(err, errlen, -EINVAL, "slabs: index %llu is beyond the "
                    "export's %u slabs (size / slab_size)",
                    (unsigned long long)last, spec->nslabs);
    }
    if ((last - first) > (UINT64_MAX - addr) / spec->slab_size) {
        return fail(err, errlen, -EINVAL, "slabs: the addresses of slabs "
                    "%llu-%llu pass 2^64", (unsigned long long)first,
                    (unsigned long long)last);
    }
    if (at2 - at1 - 1 <= 0 || at2 - at1 - 1 >= SD_ENDPOINT_MAX) {
        return fail(err, errlen, -EINVAL, "slabs: the endpoint of slab %llu "
                    "must be 1 to %d characters (scheme://host:port)",
                    (unsigned long long)first, SD_ENDPOINT_MAX - 1);
    }
    for (k = first; k <= last; k++) {
        slab = &spec->slabs[k];
        if (slab->endpoint[0]) {
            return fail(err, errlen, -EINVAL, "slabs: index %llu is listed "
                        "twice", (unsigned long long)k);
        }
        memcpy(slab->endpoint, at1 + 1, (size_t)(at2 - at1 - 1));
        slab->endpoint[at2 - at1 - 1] = '\0';
        slab->addr = addr + (k - first) * spec->slab_size;
        slab->rkey = (uint32_t)rkey;
        slab->local = 0;
    }
    return 0;
}

/* adopt=, and the rebuilt= and rebuild_started= of an adopted export's
 * .conf; called once the slabs are known. */
static int parse_adopt(const struct sd_args *a, struct sd_export_spec *spec,
                       int any_local_slabs, char *err, size_t errlen)
{
    const char *s = sd_args_get(a, "adopt");
    const char *started = sd_args_get(a, "rebuild_started");
    uint64_t v;
    uint32_t i;

    if (s && strcmp(s, "0") != 0 && strcmp(s, "1") != 0) {
        return fail(err, errlen, -EINVAL, "adopt: must be 0 or 1");
    }
    spec->adopt = s && s[0] == '1';
    s = sd_args_get(a, "rebuilt");
    if (s && !spec->adopt) {
        return fail(err, errlen, -EINVAL, "rebuilt: only an adopted export "
                    "(adopt=1) has a rebuild");
    }
    if (s && sd_parse_u64(s, strlen(s), spec->nslabs - 1, &v)) {
        return fail(err, errlen, -EINVAL, "rebuilt: must be a number of "
                    "slabs below %u", spec->nslabs);
    }
    spec->rebuilt = s ? (uint32_t)v : 0;
    if (started && !s) {
        return fail(err, errlen, -EINVAL, "rebuild_started: only an adopted "
                    "export's .conf has it, with rebuilt=");
    }
    if (started && strcmp(started, "0") != 0 && strcmp(started, "1") != 0) {
        return fail(err, errlen, -EINVAL, "rebuild_started: must be 0 or 1");
    }
    /* A .conf without rebuild_started= predates EXPORT_REBUILD: its
     * rebuild ran from the adoption on. */
    spec->rebuild_started = started ? started[0] == '1' : s != NULL;
    if (!spec->rebuild_started && spec->rebuilt) {
        return fail(err, errlen, -EINVAL, "rebuilt: a rebuild not started "
                    "(rebuild_started=0) has rebuilt no slab");
    }
    if (!spec->adopt) {
        return 0;
    }
    for (i = 0; i < spec->nslabs; i++) {
        if (!spec->slabs[i].endpoint[0]) {
            return fail(err, errlen, -EINVAL, "slabs: an adopted export "
                        "reads every slab from its donor; slab %u has none",
                        i);
        }
    }
    /* Slabs degraded during a rebuild (the .conf's rebuilt= says so)
     * still read the pages the local copy lacks from their donors; a
     * table's degraded or reclaimed slabs have their data in the
     * source's local copy only. */
    for (i = 0; i < spec->nslabs && any_local_slabs && !s; i++) {
        if (spec->slabs[i].local) {
            return fail(err, errlen, -EINVAL, "local_slabs: an adopted "
                        "export reads every slab from its donor; slab %u "
                        "is served from the local copy, whose data only "
                        "the source host has", i);
        }
    }
    return 0;
}

int sd_export_spec_parse(const struct sd_args *a, struct sd_export_spec *spec,
                         char *err, size_t errlen)
{
    const char *s;
    uint32_t *idx = NULL, i;
    size_t n;
    int ret;

    memset(spec, 0, sizeof(*spec));
    s = sd_args_get(a, "grant");
    if (!s || sd_uuid_parse(s, strlen(s), spec->grant)) {
        return fail(err, errlen, -EINVAL, "grant: must be a uuid "
                    "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
    }
    s = sd_args_get(a, "key");
    if (!s || sd_hex_decode(s, strlen(s), spec->key, SD_KEY_LEN)) {
        return fail(err, errlen, -EINVAL, "key: must be %d hex digits",
                    2 * SD_KEY_LEN);
    }
    if ((ret = parse_u64_field(a, "slab_size", &spec->slab_size, err,
                               errlen)) ||
        (ret = parse_u64_field(a, "size", &spec->size, err, errlen))) {
        return ret;
    }
    if (spec->slab_size == 0 || spec->slab_size % SD_PAGE_SIZE ||
        spec->slab_size > (1ULL << 40)) {
        return fail(err, errlen, -EINVAL, "slab_size: must be a non-zero "
                    "multiple of %u up to 1 TiB", SD_PAGE_SIZE);
    }
    if (spec->size == 0 || spec->size % spec->slab_size) {
        return fail(err, errlen, -EINVAL, "size: must be a non-zero "
                    "multiple of slab_size (%llu)",
                    (unsigned long long)spec->slab_size);
    }
    if (spec->size / spec->slab_size > SD_MAX_SLABS) {
        return fail(err, errlen, -EINVAL, "size: at most %u slabs "
                    "(size / slab_size)", SD_MAX_SLABS);
    }
    s = sd_args_get(a, "local");
    if (!s || s[0] != '/' || strlen(s) >= sizeof(spec->local)) {
        return fail(err, errlen, -EINVAL, "local: must be the absolute path "
                    "of the durability copy");
    }
    strcpy(spec->local, s);
    spec->nslabs = (uint32_t)(spec->size / spec->slab_size);
    spec->slabs = calloc(spec->nslabs, sizeof(*spec->slabs));
    if (!spec->slabs) {
        return fail(err, errlen, -ENOMEM, "size: no memory for %u slabs",
                    spec->nslabs);
    }
    for (i = 0; i < spec->nslabs; i++) {
        spec->slabs[i].local = 1;
    }
    s = sd_args_get(a, "slabs");
    if (!s) {
        ret = fail(err, errlen, -EINVAL, "slabs: missing (<index>[-<index>]"
                   "@<endpoint>@<addr>@<rkey>,...; may be empty)");
        goto out;
    }
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);

        ret = parse_slab_ref(s, len, spec, err, errlen);
        if (ret) {
            goto out;
        }
        s += len + (comma ? 1 : 0);
    }
    s = sd_args_get(a, "local_slabs");
    if (s) {
        ret = sd_parse_index_list(s, spec->nslabs, &idx, &n);
        if (ret) {
            ret = fail(err, errlen, -EINVAL, "local_slabs: must be slab "
                       "indexes below %u, comma-separated, each once",
                       spec->nslabs);
            goto out;
        }
        for (i = 0; i < n; i++) {
            spec->slabs[idx[i]].local = 1;
        }
        free(idx);
    }
    ret = parse_adopt(a, spec, s != NULL, err, errlen);
    if (ret) {
        goto out;
    }
    s = sd_args_get(a, "seal");
    if (s && strcmp(s, "0") != 0 && strcmp(s, "1") != 0) {
        ret = fail(err, errlen, -EINVAL, "seal: must be 0 or 1");
        goto out;
    }
    spec->seal = s && s[0] == '1';
    s = sd_args_get(a, "page_key");
    if (s && !spec->seal) {
        ret = fail(err, errlen, -EINVAL, "page_key: only a sealed export "
                   "(seal=1) has a page key");
        goto out;
    }
    if (s && sd_hex_decode(s, strlen(s), spec->page_key, SD_KEY_LEN)) {
        ret = fail(err, errlen, -EINVAL, "page_key: must be %d hex digits",
                   2 * SD_KEY_LEN);
        goto out;
    }
    spec->has_page_key = s != NULL;
    return 0;

out:
    sd_export_spec_free(spec);
    return ret;
}

void sd_export_spec_free(struct sd_export_spec *spec)
{
    free(spec->slabs);
    spec->slabs = NULL;
    OPENSSL_cleanse(spec->page_key, sizeof(spec->page_key));
}

/* A growing string. */
struct strbuf {
    char *s;
    size_t len, cap;
    int oom;
};

static void sb_printf(struct strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void sb_printf(struct strbuf *b, const char *fmt, ...)
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

/* Whether slab j follows slab j - 1 on the same donor, right after it. */
static int continues_run(const struct sd_export_spec *spec, uint32_t j)
{
    const struct sd_export_slab *prev = &spec->slabs[j - 1];
    const struct sd_export_slab *s = &spec->slabs[j];

    return strcmp(s->endpoint, prev->endpoint) == 0 &&
           s->rkey == prev->rkey &&
           prev->addr <= UINT64_MAX - spec->slab_size &&
           s->addr == prev->addr + spec->slab_size;
}

char *sd_export_spec_format(const struct sd_export_spec *spec)
{
    struct strbuf b = { 0 };
    char uuid[SD_UUID_STRLEN + 1], key[2 * SD_KEY_LEN + 1];
    const char *sep = "";
    uint32_t i, j;

    sd_uuid_format(spec->grant, uuid);
    sd_hex_encode(spec->key, SD_KEY_LEN, key);
    sb_printf(&b, "grant=%s key=%s size=%llu slab_size=%llu local=%s slabs=",
              uuid, key, (unsigned long long)spec->size,
              (unsigned long long)spec->slab_size, spec->local);
    for (i = 0; i < spec->nslabs; i = j) {
        const struct sd_export_slab *s = &spec->slabs[i];

        j = i + 1;
        if (!s->endpoint[0]) {
            continue;
        }
        /* A run on one donor at consecutive addresses is one entry: a
         * donor lays a grant's slabs out in one region, so a table of
         * thousands of slabs stays far below the request limit. */
        while (j < spec->nslabs && continues_run(spec, j)) {
            j++;
        }
        if (j - i > 1) {
            sb_printf(&b, "%s%u-%u@%s@%llu@%u", sep, i, j - 1, s->endpoint,
                      (unsigned long long)s->addr, s->rkey);
        } else {
            sb_printf(&b, "%s%u@%s@%llu@%u", sep, i, s->endpoint,
                      (unsigned long long)s->addr, s->rkey);
        }
        sep = ",";
    }
    /* Slabs with a donor that are nonetheless local (degraded or
     * reclaimed): the donor's copy is stale or gone. */
    sep = " local_slabs=";
    for (i = 0; i < spec->nslabs; i++) {
        /* Degrade and reclaim change it while the table is saved. */
        if (spec->slabs[i].endpoint[0] &&
            __atomic_load_n(&spec->slabs[i].local, __ATOMIC_RELAXED)) {
            sb_printf(&b, "%s%u", sep, i);
            sep = ",";
        }
    }
    if (spec->seal) {
        sb_printf(&b, " seal=1");
    }
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* ---- peers: one connection per donor endpoint, shared by exports ---- */

struct peer {
    char endpoint[SD_ENDPOINT_MAX];
    const struct sd_transport *t;
    char host[256];
    uint16_t port;
    /* Submitters hold it shared; replacing a dead connection holds it
     * exclusively, so nobody submits to a connection being closed. */
    pthread_rwlock_t rw;
    struct sd_peer *conn;
    uint64_t last_attempt_us;
    struct peer *next;
};

struct sd_export {
    struct sd_exports *xs;
    struct sd_export_spec spec;
    char uuid[SD_UUID_STRLEN + 1];
    char name[64];
    char sock[PATH_MAX];
    char conf[PATH_MAX];
    int fd;                             /* the local durability copy */
    struct sd_bitmap written;
    struct peer **peers;                /* per slab; NULL: no donor */
    uint8_t *degraded;                  /* per slab, for the counter */
    uint8_t *saved_local;               /* per slab, atomic: the .conf on
                                         * disk says it is local */
    struct sd_nbd_server *nbd;
    uint64_t reads, writes, read_bytes, write_bytes;
    uint64_t zero_reads, local_reads, remote_errors, auth_failures;
    uint32_t clients;
    struct sd_hist hist;
    /* Sealed exports: spec.page_key is usable once key_ready (atomic; an
     * adopted export waits for its key); bad holds the pages the rebuild
     * found altered on their donor, which fail to read until written. */
    struct sd_sealer sealer;
    int key_ready;
    struct sd_kw_offer *offer;          /* waiting: the pending private
                                         * key (x->lock) */
    uint8_t offer_pub[SD_KW_PUB_LEN];
    int nokey_warned;                   /* atomic */
    int sealer_ok;                      /* sealer is initialised */
    struct sd_bitmap bad;
    pthread_mutex_t lock;               /* ghost, conf file, spec.adopt and
                                         * spec.rebuilt */
    struct sd_ghost ghost;
    struct sd_export *next;

    /* An adopted export's rebuild (see "adoption" below).  The local copy
     * holds the current data of pages below rb_cursor and of fresh pages;
     * the others are on the donors only.  rb_cursor is the export's size
     * in pages once there is nothing to rebuild. */
    uint64_t rb_cursor;                 /* atomic; advanced under rb_lock */
    struct sd_bitmap fresh;             /* written or trimmed since the
                                         * adoption */
    uint64_t rb_partial;                /* writes in flight with a part of
                                         * a page the copy lacks */
    uint64_t rb_partial_gen;            /* such writes ever started */
    int rb_stop;
    pthread_mutex_t rb_lock;            /* the fields above */
    pthread_cond_t rb_cond;             /* rb_stop, rb_partial */
    pthread_t rb_thread;
    int rb_running;
};

struct sd_exports {
    /* Half of PATH_MAX leaves room for the file names below them. */
    char conf_dir[PATH_MAX / 2];
    char export_dir[PATH_MAX / 2];
    uid_t uid;
    gid_t gid;
    pthread_mutex_t lock;               /* the two lists */
    struct sd_export *exports;
    struct peer *peers;
};

#define COUNT(x, field, v) __atomic_fetch_add(&(x)->field, (v), \
                                              __ATOMIC_RELAXED)
#define LOAD(x, field) __atomic_load_n(&(x)->field, __ATOMIC_RELAXED)

/* The peer of endpoint, made on first use; called with xs->lock held. */
static int peer_get(struct sd_exports *xs, const char *endpoint,
                    struct peer **out, char *err, size_t errlen)
{
    struct peer *p;
    int ret;

    for (p = xs->peers; p; p = p->next) {
        if (strcmp(p->endpoint, endpoint) == 0) {
            *out = p;
            return 0;
        }
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        return fail(err, errlen, -ENOMEM, "slabs: out of memory");
    }
    ret = sd_endpoint_parse(endpoint, &p->t, p->host, sizeof(p->host),
                            &p->port);
    if (ret) {
        free(p);
        return fail(err, errlen, -EINVAL, "slabs: endpoint '%s' must be "
                    "tcp://host:port or rdma://host:port (%s)", endpoint,
                    strerror(-ret));
    }
    snprintf(p->endpoint, sizeof(p->endpoint), "%s", endpoint);
    pthread_rwlock_init(&p->rw, NULL);
    p->next = xs->peers;
    xs->peers = p;
    *out = p;
    return 0;
}

/* Submit ios[0..n) to the peer, connecting first when it has no live
 * connection (at most once per RECONNECT_INTERVAL_US); 0, or -errno when
 * only the first *queued were queued. */
static int peer_submit(struct peer *p, struct sd_io **ios, size_t n,
                       size_t *queued)
{
    char err[SD_ERRLEN] = "";
    uint64_t now;
    int ret;

    pthread_rwlock_rdlock(&p->rw);
    if (p->conn && p->t->alive(p->conn)) {
        ret = p->t->submit(p->conn, ios, n, queued);
        pthread_rwlock_unlock(&p->rw);
        return ret;
    }
    pthread_rwlock_unlock(&p->rw);

    pthread_rwlock_wrlock(&p->rw);
    if (p->conn && !p->t->alive(p->conn)) {
        sd_log(LOG_WARNING, "donor %s: connection lost", p->endpoint);
        p->t->close(p->conn);
        p->conn = NULL;
    }
    now = sd_now_us();
    if (!p->conn && now - p->last_attempt_us >= RECONNECT_INTERVAL_US) {
        p->last_attempt_us = now;
        ret = p->t->connect(p->host, p->port, &p->conn, err, sizeof(err));
        if (ret) {
            p->conn = NULL;
            sd_log(LOG_WARNING, "donor %s: cannot connect: %s", p->endpoint,
                   err[0] ? err : strerror(-ret));
        } else {
            sd_log(LOG_INFO, "donor %s: connected", p->endpoint);
        }
    }
    *queued = 0;
    ret = p->conn ? p->t->submit(p->conn, ios, n, queued) : -ECONNREFUSED;
    pthread_rwlock_unlock(&p->rw);
    return ret;
}

/* ---- persistence ---- */

/* fsync the directory of the exports' .conf files: a rename in it is
 * durable only then. */
static int sync_conf_dir(const struct sd_exports *xs)
{
    int fd = open(xs->conf_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

    if (fd < 0) {
        return -errno;
    }
    if (fsync(fd)) {
        ret = -errno;
    }
    close(fd);
    return ret;
}

/* Write the export's table to its .conf file durably (temp file, fsync,
 * rename, fsync of the directory), with the state of its rebuild while it
 * is adopted; then mark the slabs it saved as local in saved_local.
 * Called with x->lock held. */
static int persist(struct sd_export *x)
{
    char tmp[PATH_MAX + 8], adopt[80] = "";
    char pkey[sizeof(" page_key=") + 2 * SD_KEY_LEN] = "";
    uint8_t *snap = malloc(x->spec.nslabs);
    char *line;
    uint32_t i;
    int fd, ret = 0;

    /* The slabs local before the table is formatted are in what is
     * saved: a slab turns local (degrade, reclaim) at any time, but never
     * back. */
    for (i = 0; snap && i < x->spec.nslabs; i++) {
        snap[i] = (uint8_t)__atomic_load_n(&x->spec.slabs[i].local,
                                           __ATOMIC_SEQ_CST);
    }
    line = snap ? sd_export_spec_format(&x->spec) : NULL;
    if (!line) {
        free(snap);
        return -ENOMEM;
    }
    if (x->spec.adopt) {
        snprintf(adopt, sizeof(adopt), " adopt=1 rebuilt=%u "
                 "rebuild_started=%d", x->spec.rebuilt,
                 x->spec.rebuild_started);
    }
    if (x->spec.has_page_key) {
        memcpy(pkey, " page_key=", 10);
        sd_hex_encode(x->spec.page_key, SD_KEY_LEN, pkey + 10);
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", x->conf);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    /* A stale temp file keeps its mode through O_TRUNC: the page key is
     * for this user only. */
    if (fd >= 0 && fchmod(fd, 0600)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        ret = -errno;
    } else {
        if ((ret = sd_write_full(fd, "EXPORT_CREATE ", 14)) == 0 &&
            (ret = sd_write_full(fd, line, strlen(line))) == 0 &&
            (ret = sd_write_full(fd, adopt, strlen(adopt))) == 0 &&
            (ret = sd_write_full(fd, pkey, strlen(pkey))) == 0 &&
            (ret = sd_write_full(fd, "\n", 1)) == 0 && fsync(fd)) {
            ret = -errno;
        }
        close(fd);
        if (ret == 0 && rename(tmp, x->conf)) {
            ret = -errno;
        }
        if (ret) {
            unlink(tmp);
        } else {
            ret = sync_conf_dir(x->xs);
        }
    }
    if (ret) {
        sd_log(LOG_ERR, "export %s: cannot write %s: %s", x->uuid, x->conf,
               strerror(-ret));
    }
    for (i = 0; ret == 0 && i < x->spec.nslabs; i++) {
        if (snap[i]) {
            __atomic_store_n(&x->saved_local[i], 1, __ATOMIC_RELEASE);
        }
    }
    OPENSSL_cleanse(pkey, sizeof(pkey));
    free(snap);
    free(line);
    return ret;
}

/* Make sure the .conf on disk says slab is local, saving the table when
 * it does not yet: a write that skipped the slab's donor is acknowledged
 * only then, or a restart would read the slab's pages from the donor's
 * stale copy.  0 or -errno (the table could not be saved). */
static int table_sync(struct sd_export *x, uint32_t slab)
{
    int ret = 0;

    if (__atomic_load_n(&x->saved_local[slab], __ATOMIC_ACQUIRE)) {
        return 0;
    }
    /* A degrade or reclaim saving the table holds the lock: once it is
     * ours, that save is done, or failed and is tried again here. */
    pthread_mutex_lock(&x->lock);
    if (!__atomic_load_n(&x->saved_local[slab], __ATOMIC_ACQUIRE)) {
        ret = persist(x);
    }
    pthread_mutex_unlock(&x->lock);
    return ret;
}

/* ---- adoption: rebuilding the local copy from the donors ----
 *
 * An adopted export starts with an empty local copy and every page counted
 * as written, so reads go to the donors, which hold every page the source
 * host wrote (it flushed before handing the VM over; donor memory never
 * written reads as zeros).  It stays so, serving the guest's I/O as below,
 * until EXPORT_REBUILD (sd_exports_rebuild) starts the rebuild: during
 * the live migration the rebuild's reads and writes would slow the copy
 * of the guest's memory, so the migration's finish asks for it once the
 * guest runs here.  The .conf says rebuild_started=0 until then.
 *
 * The rebuild is a thread that walks the export in REBUILD_CHUNK
 * steps (rb_cursor): it reads a chunk from its donor and, under rb_lock,
 * writes its non-zero pages to the local copy, unmarks its zero pages as
 * written (they stay holes) and moves rb_cursor past it.  After each slab
 * it syncs the copy and saves rebuilt=<slabs> in the .conf; the last slab
 * turns the export into an ordinary one.
 *
 * Guest I/O meanwhile (see adopt_write and do_trim): a write or trim marks
 * its whole pages fresh under rb_lock before it touches the local copy,
 * and the rebuild skips fresh pages under the same lock when it writes.
 * Either the guest marks a page first, and the rebuild leaves it alone, or
 * the rebuild writes it first (under the lock, so before the guest marks
 * it), and the guest's own write of the local copy comes later and wins:
 * the donor's older copy never ends up over a page written here.
 *
 * A write of part of a page the copy lacks cannot be written there alone
 * (the rest of the page is on the donor): it goes to the donor only, and
 * the rebuild, which then copies the page, refuses a chunk read while
 * such a write ran (rb_partial, rb_partial_gen) and reads it again.
 *
 * A restart restores a waiting export as waiting (rebuild_started=0).  A
 * restart mid-rebuild restores the export as adopted from rebuilt=:
 * pages below it are the copy's data extents, as for any export; above
 * it every page counts as written again and the copy's data extents are
 * fresh (written here, or copied past the last save: the current data
 * either way, as the copy is never written there otherwise).  No page
 * written reads as zeros, and the rebuild resumes at the saved slab.
 */

/* 1 while an adopted export's rebuild has pages left. */
static int rebuilding(struct sd_export *x)
{
    return __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE) <
           x->written.pages;
}

/* Pages an adopted export's rebuild has still to go through: all of them
 * while it waits for EXPORT_REBUILD, 0 once there is nothing to rebuild. */
static uint64_t rebuild_left(struct sd_export *x)
{
    return x->written.pages -
           __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE);
}

/* Whether the local copy holds the current data of page p (or its zeros):
 * always but while an adopted export is rebuilt. */
static int local_has(struct sd_export *x, uint64_t p)
{
    return p < __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE) ||
           sd_bitmap_test(&x->fresh, p);
}

static int local_has_range(struct sd_export *x, uint64_t off, uint64_t len)
{
    uint64_t p;

    for (p = off / SD_PAGE_SIZE; p <= (off + len - 1) / SD_PAGE_SIZE; p++) {
        if (!local_has(x, p)) {
            return 0;
        }
    }
    return 1;
}

/* Sleep us, or less when the rebuild is stopped; 1 when it is. */
static int rb_sleep(struct sd_export *x, uint64_t us)
{
    struct timespec ts;
    int stop;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(us / 1000000);
    ts.tv_nsec += (long)(us % 1000000) * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&x->rb_lock);
    while (!x->rb_stop &&
           pthread_cond_timedwait(&x->rb_cond, &x->rb_lock, &ts) !=
           ETIMEDOUT) {
        continue;               /* woken for rb_partial, or spuriously */
    }
    stop = x->rb_stop;
    pthread_mutex_unlock(&x->rb_lock);
    return stop;
}

/* What the rebuild found in a page of a sealed export's chunk. */
enum { RB_PAGE_OK, RB_PAGE_BAD };

/* One chunk read from a donor: its ios and their completion. */
struct rb_fetch {
    struct sd_io io[REBUILD_CHUNK / REBUILD_IO];
    /* Sealed exports: the chunk's seals, and each page's verdict. */
    uint8_t seals[REBUILD_CHUNK / SD_PAGE_SIZE * SD_SEAL_LEN];
    uint8_t state[REBUILD_CHUNK / SD_PAGE_SIZE];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned pending;
    int status;                 /* the first error */
};

static void rb_fetch_done(struct sd_io *io, int status)
{
    struct rb_fetch *f = io->priv;

    pthread_mutex_lock(&f->lock);
    if (status && !f->status) {
        f->status = status;
    }
    if (--f->pending == 0) {
        pthread_cond_signal(&f->cond);
    }
    pthread_mutex_unlock(&f->lock);
}

/* Read [off, off + len) of the export, inside one slab, from the slab's
 * donor into buf; 0 or -errno. */
static int rb_fetch(struct sd_export *x, struct rb_fetch *f, uint64_t off,
                    uint32_t len, char *buf)
{
    uint32_t slab = sd_slab_of(off, x->spec.slab_size), i;
    unsigned n = (len + REBUILD_IO - 1) / REBUILD_IO;
    struct sd_io *ios[REBUILD_CHUNK / REBUILD_IO];
    size_t queued = 0;
    int ret;

    for (i = 0; i < n; i++) {
        struct sd_io *io = &f->io[i];

        memset(io, 0, sizeof(*io));
        io->op = SD_OP_READ;
        memcpy(io->grant, x->spec.grant, SD_UUID_LEN);
        memcpy(io->key, x->spec.key, SD_KEY_LEN);
        io->slab = slab;
        io->remote_addr = x->spec.slabs[slab].addr;
        io->rkey = x->spec.slabs[slab].rkey;
        io->offset = off - (uint64_t)slab * x->spec.slab_size +
                     (uint64_t)i * REBUILD_IO;
        io->len = len - i * REBUILD_IO < REBUILD_IO ? len - i * REBUILD_IO
                                                    : REBUILD_IO;
        io->buf = buf + (size_t)i * REBUILD_IO;
        if (x->spec.seal) {
            io->seals = f->seals + (size_t)i * (REBUILD_IO / SD_PAGE_SIZE) *
                        SD_SEAL_LEN;
        }
        io->done = rb_fetch_done;
        io->priv = f;
        ios[i] = io;
    }
    f->pending = n;
    f->status = 0;
    ret = peer_submit(x->peers[slab], ios, n, &queued);
    pthread_mutex_lock(&f->lock);
    f->pending -= (unsigned)(n - queued);   /* never to be done() */
    if (queued < n && !f->status) {
        f->status = ret ? ret : -EIO;
    }
    while (f->pending) {
        pthread_cond_wait(&f->cond, &f->lock);
    }
    ret = f->status;
    pthread_mutex_unlock(&f->lock);
    return ret;
}

/* pwrite all of buf at off; 0 or -errno. */
static int pwrite_full(int fd, const char *buf, size_t len, off_t off)
{
    while (len) {
        ssize_t n = pwrite(fd, buf, len, off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -errno : -EIO;
        }
        buf += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static int page_is_zero(const char *page)
{
    const uint64_t *w = (const uint64_t *)page;
    size_t i;

    for (i = 0; i < SD_PAGE_SIZE / sizeof(*w); i++) {
        if (w[i]) {
            return 0;
        }
    }
    return 1;
}

static int seal_is_zero(const uint8_t *seal)
{
    int i;

    for (i = 0; i < SD_SEAL_LEN; i++) {
        if (seal[i]) {
            return 0;
        }
    }
    return 1;
}

/* A page of a sealed export from a donor did not open: count it, and log
 * the first and then every AUTH_LOG_EVERY-th with what became of it. */
static void auth_failed(struct sd_export *x, uint64_t page, const char *then)
{
    uint64_t n = __atomic_fetch_add(&x->auth_failures, 1, __ATOMIC_RELAXED);
    uint32_t slab = sd_slab_of(page * SD_PAGE_SIZE, x->spec.slab_size);

    if (n % AUTH_LOG_EVERY == 0) {
        sd_log(LOG_ERR, "export %s: page %llu from donor %s failed "
               "authentication: altered on the donor or on the wire (%llu "
               "such pages so far, logged every %u); %s", x->uuid,
               (unsigned long long)page, x->spec.slabs[slab].endpoint,
               (unsigned long long)n + 1, AUTH_LOG_EVERY, then);
    }
}

/* Open the pages of a sealed export's chunk [off, off + len) read by the
 * rebuild, in place, each page's verdict in f->state.  A page with
 * neither data nor seal is one the source never wrote (zeros); a fresh
 * page is left to the rebuild to skip. */
static void rb_open(struct sd_export *x, struct rb_fetch *f, uint64_t off,
                    uint32_t len, char *buf)
{
    uint64_t first = off / SD_PAGE_SIZE, n = len / SD_PAGE_SIZE, i, bad;

    for (i = 0; i < n; i++) {
        char *page = buf + i * SD_PAGE_SIZE;
        const uint8_t *seal = f->seals + i * SD_SEAL_LEN;

        f->state[i] = RB_PAGE_OK;
        if ((seal_is_zero(seal) && page_is_zero(page)) ||
            sd_bitmap_test(&x->fresh, first + i)) {
            continue;
        }
        if (sd_open_pages(x->spec.page_key, x->spec.grant, first + i, page,
                          seal, 1, &bad)) {
            f->state[i] = RB_PAGE_BAD;
            auth_failed(x, first + i, "the rebuild leaves it out of the "
                        "local copy and reads of it fail with EIO until "
                        "the guest writes it again");
        }
    }
}

/* Put the chunk [off, off + len) read from the donor (buf) into the local
 * copy, but for its fresh pages, and move rb_cursor past it.  -EAGAIN when
 * a write of part of a page may have raced the read (gen: rb_partial_gen
 * before it): read it again.  -errno when the copy cannot be written. */
static int rb_commit(struct sd_export *x, uint64_t off, uint32_t len,
                     const char *buf, const uint8_t *state, uint64_t gen,
                     uint64_t *copied)
{
    uint64_t first = off / SD_PAGE_SIZE, n = len / SD_PAGE_SIZE, i, k;
    int ret = 0;

    pthread_mutex_lock(&x->rb_lock);
    if (x->rb_partial || x->rb_partial_gen != gen) {
        pthread_mutex_unlock(&x->rb_lock);
        return -EAGAIN;
    }
    for (i = 0; i < n && ret == 0; i++) {
        const char *page = buf + i * SD_PAGE_SIZE;

        if (sd_bitmap_test(&x->fresh, first + i)) {
            continue;
        }
        if (state && state[i] == RB_PAGE_BAD) {
            /* Never into the copy: it would pass for the page's data. */
            sd_bitmap_set(&x->bad, first + i, 1);
            continue;
        }
        if (page_is_zero(page)) {
            sd_bitmap_clear(&x->written, first + i, 1);
            continue;
        }
        ret = pwrite_full(x->fd, page, SD_PAGE_SIZE,
                          (off_t)((first + i) * SD_PAGE_SIZE));
        if (ret == 0 && state) {
            sd_bitmap_clear(&x->bad, first + i, 1);
        }
        *copied += ret == 0;
    }
    if (ret) {
        /* Pages past rb_cursor that the copy holds count as fresh after a
         * restart: take back the ones this chunk wrote, and mark the
         * zeros written again. */
        for (k = 0; k < i; k++) {
            if (!sd_bitmap_test(&x->fresh, first + k)) {
                sd_bitmap_set(&x->written, first + k, 1);
                if (fallocate(x->fd, FALLOC_FL_PUNCH_HOLE |
                              FALLOC_FL_KEEP_SIZE,
                              (off_t)((first + k) * SD_PAGE_SIZE),
                              SD_PAGE_SIZE)) {
                    sd_log(LOG_ERR, "export %s: cannot punch a hole in %s: "
                           "%s", x->uuid, x->spec.local, strerror(errno));
                }
            }
        }
    } else {
        __atomic_store_n(&x->rb_cursor, first + n, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&x->rb_lock);
    return ret;
}

/* Slab `slab` is rebuilt: make the copy durable, then say so in the
 * .conf (the last slab ends the adoption).  Retried until it works. */
static void rb_slab_done(struct sd_export *x, uint32_t slab)
{
    unsigned tries = 0;
    int ret;

    for (;;) {
        ret = fdatasync(x->fd) ? -errno : 0;
        if (ret == 0) {
            pthread_mutex_lock(&x->lock);
            x->spec.rebuilt = slab + 1;
            if (slab + 1 == x->spec.nslabs) {
                x->spec.adopt = 0;
                x->spec.rebuilt = 0;
            }
            ret = persist(x);
            if (ret) {
                x->spec.adopt = 1;
                x->spec.rebuilt = slab;
            }
            pthread_mutex_unlock(&x->lock);
        }
        if (ret == 0) {
            break;
        }
        if (tries++ % REBUILD_LOG_EVERY == 0) {
            sd_log(LOG_ERR, "export %s: slab %u is rebuilt but cannot be "
                   "saved as such (%s); retrying every second", x->uuid,
                   slab, strerror(-ret));
        }
        if (rb_sleep(x, RECONNECT_INTERVAL_US)) {
            return;
        }
    }
    sd_log(LOG_DEBUG, "export %s: slab %u of %u rebuilt", x->uuid, slab + 1,
           x->spec.nslabs);
}

static void *rebuild_main(void *arg)
{
    struct sd_export *x = arg;
    struct rb_fetch f;
    char *buf = NULL;
    uint64_t copied = 0, cur, gen;
    unsigned failures = 0;
    int ret;

    pthread_mutex_init(&f.lock, NULL);
    pthread_cond_init(&f.cond, NULL);
    while (!buf) {
        buf = aligned_alloc(SD_PAGE_SIZE, REBUILD_CHUNK);
        if (!buf && rb_sleep(x, RECONNECT_INTERVAL_US)) {
            goto out;
        }
    }
    while ((cur = __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE)) <
           x->written.pages) {
        uint64_t off = cur * SD_PAGE_SIZE;
        uint32_t slab = sd_slab_of(off, x->spec.slab_size);
        uint64_t slab_end = (uint64_t)(slab + 1) * x->spec.slab_size;
        uint32_t len = slab_end - off < REBUILD_CHUNK ?
                       (uint32_t)(slab_end - off) : REBUILD_CHUNK;

        if (x->spec.seal &&
            !__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE)) {
            /* Nothing from the donors opens before the key is here. */
            if (failures++ % REBUILD_LOG_EVERY == 0) {
                sd_log(LOG_WARNING, "export %s: the rebuild waits for the "
                       "page key (EXPORT_KEY_INSTALL)", x->uuid);
            }
            if (rb_sleep(x, RECONNECT_INTERVAL_US)) {
                break;
            }
            continue;
        }
        pthread_mutex_lock(&x->rb_lock);
        gen = x->rb_partial_gen;
        ret = x->rb_stop ? -ECANCELED : 0;
        pthread_mutex_unlock(&x->rb_lock);
        if (ret == 0) {
            ret = rb_fetch(x, &f, off, len, buf);
            if (ret) {
                if (failures++ % REBUILD_LOG_EVERY == 0) {
                    sd_log(LOG_WARNING, "export %s: the rebuild of the local "
                           "copy cannot read slab %u from donor %s (%s); it "
                           "retries every second, and the donor serves the "
                           "slab meanwhile", x->uuid, slab,
                           x->spec.slabs[slab].endpoint, strerror(-ret));
                }
                if (rb_sleep(x, RECONNECT_INTERVAL_US)) {
                    break;
                }
                continue;
            }
            if (x->spec.seal) {
                rb_open(x, &f, off, len, buf);
            }
            ret = rb_commit(x, off, len, buf, x->spec.seal ? f.state : NULL,
                            gen, &copied);
        }
        if (ret == -ECANCELED) {
            break;
        }
        if (ret == -EAGAIN) {
            /* Wait for the writes of parts of pages to be done. */
            pthread_mutex_lock(&x->rb_lock);
            while (x->rb_partial && !x->rb_stop) {
                pthread_cond_wait(&x->rb_cond, &x->rb_lock);
            }
            pthread_mutex_unlock(&x->rb_lock);
            continue;
        }
        if (ret) {
            if (failures++ % REBUILD_LOG_EVERY == 0) {
                sd_log(LOG_ERR, "export %s: the rebuild cannot write the "
                       "local copy %s (%s); it retries every second",
                       x->uuid, x->spec.local, strerror(-ret));
            }
            if (rb_sleep(x, RECONNECT_INTERVAL_US)) {
                break;
            }
            continue;
        }
        if (failures) {
            sd_log(LOG_INFO, "export %s: the rebuild goes on (slab %u)",
                   x->uuid, slab);
            failures = 0;
        }
        if (off + len == slab_end) {
            rb_slab_done(x, slab);
        }
    }
    pthread_mutex_lock(&x->lock);
    ret = x->spec.adopt;
    pthread_mutex_unlock(&x->lock);
    if (!ret) {
        sd_log(LOG_INFO, "export %s: local copy rebuilt from the donors "
               "(%llu pages copied by this run); an ordinary export now",
               x->uuid, (unsigned long long)copied);
    }
out:
    free(buf);
    pthread_cond_destroy(&f.cond);
    pthread_mutex_destroy(&f.lock);
    return NULL;
}

/* Stop the rebuild thread, if one runs, and wait for it. */
static void rebuild_stop(struct sd_export *x)
{
    if (!x->rb_running) {
        return;
    }
    pthread_mutex_lock(&x->rb_lock);
    x->rb_stop = 1;
    pthread_cond_broadcast(&x->rb_cond);
    pthread_mutex_unlock(&x->rb_lock);
    pthread_join(x->rb_thread, NULL);
    x->rb_running = 0;
}

/* ---- I/O ---- */

struct xreq;

/* Where a segment's data is: zeros (a read of pages never written), the
 * local copy, or the donor; or nowhere (its request fails). */
enum seg_where { SEG_ZERO, SEG_LOCAL, SEG_REMOTE, SEG_FAILED };

struct seg {
    struct sd_io io;
    struct xreq *r;
    uint64_t off;               /* in the export */
    uint32_t len;
    char *buf;
    enum seg_where where;
    int overlay;                /* a read from the donor of a local slab:
                                 * the pages the copy has come from it */
    char *bounce;               /* sealed: a WRITE's ciphertext and seals,
                                 * a READ's seals; freed with the request */
};

#define NO_PAGE UINT64_MAX

struct xreq {
    struct sd_export *x;
    struct sd_nbd_io *nio;
    uint64_t start_us;
    unsigned pending;
    uint32_t error;             /* the first NBD error */
    int touched_local;
    /* A write's first and last page when it covers only part of a page
     * the local copy lacks (adoption): not written there. */
    uint64_t skip[2];
    int partial;                /* counted in x->rb_partial */
    unsigned nseg;
    struct seg seg[];
};

/* The slab stops using its donor: the donor's copy may now be stale, so it
 * is not read again (and the table on disk says so), but for the pages an
 * adopted export's local copy lacks, which no write here has changed.
 * 0 once the table on disk says so, or -errno. */
static int degrade(struct sd_export *x, uint32_t slab, int status)
{
    if (!__atomic_exchange_n(&x->spec.slabs[slab].local, 1,
                             __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&x->degraded[slab], 1, __ATOMIC_RELAXED);
        sd_log(LOG_WARNING, "export %s: slab %u on donor %s failed (%s); it "
               "is served from the local copy from now on", x->uuid, slab,
               x->spec.slabs[slab].endpoint, strerror(-status));
    }
    return table_sync(x, slab);
}

static void set_error(struct xreq *r, uint32_t error)
{
    uint32_t none = 0;

    __atomic_compare_exchange_n(&r->error, &none, error, 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static int local_read(struct xreq *r, struct seg *s)
{
    ssize_t got = pread(r->x->fd, s->buf, s->len, (off_t)s->off);

    __atomic_store_n(&r->touched_local, 1, __ATOMIC_RELAXED);
    if (got < 0) {
        sd_log(LOG_ERR, "export %s: cannot read the local copy %s: %s",
               r->x->uuid, r->x->spec.local, strerror(errno));
        return -EIO;
    }
    if ((size_t)got < s->len) {
        memset(s->buf + got, 0, s->len - (size_t)got);  /* past its end */
    }
    return 0;
}

/* The pages of a donor's read of a degraded slab that the local copy has
 * (adoption) come from the copy: the donor missed the writes made here
 * since the slab degraded. */
static int overlay_local(struct xreq *r, struct seg *s)
{
    struct sd_export *x = r->x;
    uint64_t off = s->off, end = s->off + s->len;

    while (off < end) {
        uint64_t p = off / SD_PAGE_SIZE, next = (p + 1) * SD_PAGE_SIZE;
        size_t n = (size_t)((next < end ? next : end) - off);
        char *dst = s->buf + (off - s->off);
        ssize_t got;

        if (local_has(x, p) && !sd_bitmap_test(&x->written, p)) {
            memset(dst, 0, n);
        } else if (local_has(x, p)) {
            __atomic_store_n(&r->touched_local, 1, __ATOMIC_RELAXED);
            got = pread(x->fd, dst, n, (off_t)off);
            if (got < 0) {
                sd_log(LOG_ERR, "export %s: cannot read the local copy %s: "
                       "%s", x->uuid, x->spec.local, strerror(errno));
                return -EIO;
            }
            memset(dst + got, 0, n - (size_t)got);
        }
        off += n;
    }
    return 0;
}

/* The page of r->skip that seg holds, or NO_PAGE. */
static uint64_t seg_skipped(const struct xreq *r, const struct seg *s)
{
    uint64_t p0 = s->off / SD_PAGE_SIZE;
    uint64_t p1 = (s->off + s->len - 1) / SD_PAGE_SIZE;
    int i;

    for (i = 0; i < 2; i++) {
        if (r->skip[i] != NO_PAGE && r->skip[i] >= p0 && r->skip[i] <= p1) {
            return r->skip[i];
        }
    }
    return NO_PAGE;
}

static void finish_one(struct xreq *r)
{
    struct sd_export *x = r->x;
    struct sd_nbd_io *nio = r->nio;
    unsigned i;

    if (__atomic_sub_fetch(&r->pending, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    if (r->partial) {
        pthread_mutex_lock(&x->rb_lock);
        if (--x->rb_partial == 0) {
            pthread_cond_broadcast(&x->rb_cond);
        }
        pthread_mutex_unlock(&x->rb_lock);
    }
    if (nio->type == NBD_CMD_READ) {
        COUNT(x, reads, 1);
        COUNT(x, read_bytes, nio->len);
        if (r->touched_local) {
            COUNT(x, local_reads, 1);
        }
    } else {
        COUNT(x, writes, 1);
        COUNT(x, write_bytes, nio->len);
    }
    sd_hist_add(&x->hist, sd_now_us() - r->start_us);
    nio->done(nio, r->error);
    /* Not in seg_done: the submitting thread may still be in the send
     * of a bounce buffer when the donor's reply comes back. */
    for (i = 0; i < r->nseg; i++) {
        free(r->seg[i].bounce);
    }
    free(r);
}

/* Whether page p of a sealed read from a donor is not to be opened: a
 * page the overlay replaces, a page never written (zeroed here: a TRIM
 * leaves the donor's copy behind), or, while an adopted export counts
 * every page as written, a page with neither data nor seal (never
 * written by the source). */
static int seal_skip(struct xreq *r, struct seg *s, uint64_t i, int adopting)
{
    struct sd_export *x = r->x;
    uint64_t p = s->off / SD_PAGE_SIZE + i;
    char *page = s->buf + i * SD_PAGE_SIZE;

    if (s->overlay && local_has(x, p)) {
        return 1;
    }
    if (!sd_bitmap_test(&x->written, p)) {
        memset(page, 0, SD_PAGE_SIZE);
        return 1;
    }
    return adopting && seal_is_zero(s->io.seals + i * SD_SEAL_LEN) &&
           page_is_zero(page);
}

/* Open a sealed read from a donor in place, runs of pages at a time.  0
 * when every page opened; 1 when one did not and the segment came from
 * the local copy instead; -EIO when it cannot be served. */
static int open_seg(struct xreq *r, struct seg *s)
{
    struct sd_export *x = r->x;
    uint64_t p0 = s->off / SD_PAGE_SIZE, n = s->len / SD_PAGE_SIZE;
    uint64_t i = 0, j, bad = 0;
    int adopting = rebuilding(x), ret = 0, served;

    while (i < n && ret == 0) {
        for (j = i; j < n && !seal_skip(r, s, j, adopting); j++) {
            continue;
        }
        if (j > i) {
            ret = sd_open_pages(x->spec.page_key, x->spec.grant, p0 + i,
                                s->buf + i * SD_PAGE_SIZE,
                                s->io.seals + i * SD_SEAL_LEN, j - i, &bad);
        }
        i = j + 1;              /* j, if any, was skipped */
    }
    if (ret == 0) {
        return 0;
    }
    if (ret != -EBADMSG) {
        sd_log(LOG_ERR, "export %s: cannot open pages from donor %s: "
               "OpenSSL failed", x->uuid,
               x->spec.slabs[s->io.slab].endpoint);
        return -EIO;
    }
    served = local_has_range(x, s->off, s->len) && local_read(r, s) == 0;
    auth_failed(x, bad, served ? "read from the local copy" :
                "the local copy lacks it: the read fails with EIO");
    return served ? 1 : -EIO;
}

static void seg_done(struct sd_io *io, int status)
{
    struct seg *s = io->priv;
    struct xreq *r = s->r;
    struct sd_export *x = r->x;

    if (status) {
        COUNT(x, remote_errors, 1);
        if (degrade(x, io->slab, status) && io->op == SD_OP_WRITE) {
            /* Its donor missed it, and a restart would read the donor. */
            set_error(r, NBD_EIO);
        }
        /* A write is in the local copy before its reply; a read comes
         * from it.  But for an adopted export's pages the copy lacks yet:
         * only the donor has them. */
        if (io->op == SD_OP_READ && !local_has_range(x, s->off, s->len)) {
            sd_log(LOG_ERR, "export %s: cannot read %u bytes at %llu: only "
                   "donor %s has them until the rebuild reaches them (%s)",
                   x->uuid, s->len, (unsigned long long)s->off,
                   x->spec.slabs[io->slab].endpoint, strerror(-status));
            set_error(r, NBD_EIO);
        } else if (io->op == SD_OP_READ && local_read(r, s)) {
            set_error(r, NBD_EIO);
        } else if (io->op == SD_OP_WRITE && seg_skipped(r, s) != NO_PAGE) {
            set_error(r, NBD_EIO);      /* part of a page went nowhere */
        }
    } else {
        int opened = io->op == SD_OP_READ && io->seals ? open_seg(r, s) : 0;

        if (opened < 0 ||
            (opened == 0 && s->overlay && overlay_local(r, s))) {
            set_error(r, NBD_EIO);
        }
    }
    finish_one(r);
}

static struct xreq *xreq_new(struct sd_export *x, struct sd_nbd_io *nio)
{
    uint64_t first = nio->offset / x->spec.slab_size;
    uint64_t last = (nio->offset + nio->len - 1) / x->spec.slab_size;
    unsigned n = (unsigned)(last - first + 1), i;
    uint64_t off = nio->offset;
    struct xreq *r;

    r = calloc(1, sizeof(*r) + n * sizeof(struct seg));
    if (!r) {
        return NULL;
    }
    r->x = x;
    r->nio = nio;
    r->skip[0] = r->skip[1] = NO_PAGE;
    r->start_us = sd_now_us();
    r->pending = 1;     /* held until every segment is submitted */
    r->nseg = n;
    for (i = 0; i < n; i++) {
        struct seg *s = &r->seg[i];
        uint64_t slab_end = (first + i + 1) * x->spec.slab_size;
        uint64_t end = nio->offset + nio->len;

        s->r = r;
        s->off = off;
        s->len = (uint32_t)((end < slab_end ? end : slab_end) - off);
        s->buf = (char *)nio->buf + (off - nio->offset);
        s->io.slab = (uint32_t)(first + i);
        s->io.offset = off - (first + i) * x->spec.slab_size;
        s->io.len = s->len;
        s->io.buf = s->buf;
        s->io.done = seg_done;
        s->io.priv = s;
        memcpy(s->io.grant, x->spec.grant, SD_UUID_LEN);
        memcpy(s->io.key, x->spec.key, SD_KEY_LEN);
        s->io.remote_addr = x->spec.slabs[first + i].addr;
        s->io.rkey = x->spec.slabs[first + i].rkey;
        off += s->len;
    }
    return r;
}

static void ghost_pages(struct sd_export *x, char op, uint64_t off,
                        uint32_t len)
{
    uint64_t p, first = off / SD_PAGE_SIZE;
    uint64_t last = (off + len - 1) / SD_PAGE_SIZE;

    pthread_mutex_lock(&x->lock);
    for (p = first; p <= last; p++) {
        /* Swap-in events only for pages that were swapped out. */
        if (op == 'o' || sd_bitmap_test(&x->written, p)) {
            sd_ghost_add(&x->ghost, op, p);
        }
    }
    pthread_mutex_unlock(&x->lock);
}

static int slab_is_local(struct sd_export *x, uint32_t slab)
{
    return !x->peers[slab] ||
           __atomic_load_n(&x->spec.slabs[slab].local, __ATOMIC_RELAXED);
}

/* A WRITE to an export being rebuilt (see "adoption"): its whole pages
 * become fresh before anything is written; a first or last page it covers
 * only in part, and the local copy lacks, goes to the donor only. */
static void adopt_write(struct sd_export *x, struct xreq *r)
{
    uint64_t off = r->nio->offset, end = off + r->nio->len;
    uint64_t first = off / SD_PAGE_SIZE, last = (end - 1) / SD_PAGE_SIZE;
    uint64_t whole0 = (off + SD_PAGE_SIZE - 1) / SD_PAGE_SIZE;
    uint64_t whole1 = end / SD_PAGE_SIZE;

    pthread_mutex_lock(&x->rb_lock);
    if (whole1 > whole0) {
        sd_bitmap_set(&x->fresh, whole0, whole1 - whole0);
    }
    if (off % SD_PAGE_SIZE && !local_has(x, first)) {
        r->skip[0] = first;
    }
    if (end % SD_PAGE_SIZE && !local_has(x, last)) {
        r->skip[1] = last;
    }
    if (r->skip[0] != NO_PAGE || r->skip[1] != NO_PAGE) {
        r->partial = 1;
        x->rb_partial++;
        x->rb_partial_gen++;
    }
    pthread_mutex_unlock(&x->rb_lock);
}

/* A sealed export's donor io: a WRITE's pages are sealed into a bounce
 * buffer (the local copy keeps the plaintext), a READ gets room for the
 * seals.  0, or -ENOKEY (an adopted export's key is not installed yet),
 * -ENOMEM, -EIO. */
static int seal_remote(struct sd_export *x, struct seg *s, int write)
{
    size_t npages = s->len / SD_PAGE_SIZE, slen = npages * SD_SEAL_LEN;
    int ret;

    if (!__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE)) {
        return -ENOKEY;
    }
    s->bounce = malloc(write ? s->len + slen : slen);
    if (!s->bounce) {
        return -ENOMEM;
    }
    if (!write) {
        s->io.seals = (uint8_t *)s->bounce;
        return 0;
    }
    ret = sd_seal_pages(&x->sealer, x->spec.page_key, x->spec.grant,
                        s->off / SD_PAGE_SIZE, s->buf, s->bounce,
                        (uint8_t *)s->bounce + s->len, npages);
    if (ret) {
        free(s->bounce);
        s->bounce = NULL;
        return ret;
    }
    s->io.buf = s->bounce;
    s->io.seals = (uint8_t *)s->bounce + s->len;
    return 0;
}

/* The segments of a READ or WRITE that go to donors: each is counted in
 * its request's pending and its io added to remote. */
static void plan(struct sd_export *x, struct xreq *r, struct sd_io **remote,
                 size_t *nremote)
{
    int write = r->nio->type == NBD_CMD_WRITE, ret;
    unsigned i;

    if (write && rebuilding(x)) {
        adopt_write(x, r);
    }
    for (i = 0; i < r->nseg; i++) {
        struct seg *s = &r->seg[i];
        uint64_t p0 = s->off / SD_PAGE_SIZE;
        uint64_t p1 = (s->off + s->len - 1) / SD_PAGE_SIZE;
        int local = slab_is_local(x, s->io.slab);

        if (!write && x->bad.words &&
            sd_bitmap_any(&x->bad, p0, p1 - p0 + 1)) {
            /* The rebuild found the donor's copy altered (logged). */
            set_error(r, NBD_EIO);
            s->where = SEG_FAILED;
        } else if (!write && !sd_bitmap_any(&x->written, p0, p1 - p0 + 1)) {
            s->where = SEG_ZERO;        /* never written: no trip */
        } else if (local && write && seg_skipped(r, s) != NO_PAGE) {
            sd_log(LOG_ERR, "export %s: a write of part of page %llu cannot "
                   "go to the local copy alone: its other bytes are on "
                   "donor %s only until the rebuild reaches it", x->uuid,
                   (unsigned long long)seg_skipped(r, s),
                   x->spec.slabs[s->io.slab].endpoint);
            set_error(r, NBD_EIO);
            s->where = SEG_LOCAL;
        } else if (local && (write || local_has_range(x, s->off, s->len))) {
            s->where = SEG_LOCAL;
        } else if (x->spec.seal && (ret = seal_remote(x, s, write))) {
            if (ret != -ENOKEY) {
                sd_log(LOG_ERR, "export %s: cannot seal or make room for "
                       "%u bytes at %llu: %s", x->uuid, s->len,
                       (unsigned long long)s->off, strerror(-ret));
            } else if (!__atomic_exchange_n(&x->nokey_warned, 1,
                                            __ATOMIC_RELAXED)) {
                sd_log(LOG_ERR, "export %s: I/O that needs a donor fails "
                       "with EIO until the page key is installed "
                       "(EXPORT_KEY_INSTALL)", x->uuid);
            }
            set_error(r, NBD_EIO);
            s->where = SEG_FAILED;
        } else {
            s->where = SEG_REMOTE;
            s->overlay = local;
            s->io.op = r->nio->type == NBD_CMD_READ ? SD_OP_READ :
                                                      SD_OP_WRITE;
            __atomic_add_fetch(&r->pending, 1, __ATOMIC_RELAXED);
            remote[(*nremote)++] = &s->io;
        }
    }
}

/* Submit the donors' ios of a burst, those of one peer together; an io
 * that was not queued fails here. */
static void submit_remote(struct sd_export *x, struct sd_io **ios, size_t n)
{
    size_t done = 0, i;

    while (done < n) {
        struct peer *p = x->peers[ios[done]->slab];
        size_t k = done, queued;
        int ret;

        /* Move the ios of p to the front of what is left. */
        for (i = done; i < n; i++) {
            if (x->peers[ios[i]->slab] == p) {
                struct sd_io *t = ios[k];

                ios[k++] = ios[i];
                ios[i] = t;
            }
        }
        ret = peer_submit(p, ios + done, k - done, &queued);
        for (i = done + queued; i < k; i++) {
            seg_done(ios[i], ret);
        }
        done = k;
    }
}

static void finish_read(struct sd_export *x, struct xreq *r)
{
    unsigned i;
    int zero = 1;

    for (i = 0; i < r->nseg; i++) {
        struct seg *s = &r->seg[i];

        if (s->where == SEG_ZERO) {
            memset(s->buf, 0, s->len);
            continue;
        }
        zero = 0;
        if (s->where == SEG_FAILED) {
            memset(s->buf, 0, s->len);
        }
        if (s->where == SEG_LOCAL && local_read(r, s)) {
            set_error(r, NBD_EIO);
        }
    }
    if (zero) {
        COUNT(x, zero_reads, 1);
    } else {
        ghost_pages(x, 'i', r->nio->offset, r->nio->len);
    }
    finish_one(r);
}

/* The local copy of a WRITE, after its donor ios are on their way (the
 * reply waits for both: r->pending holds it until finish_one). */
static void finish_write(struct sd_export *x, struct xreq *r)
{
    struct sd_nbd_io *nio = r->nio;
    size_t done = 0;
    unsigned i;

    for (i = 0; i < r->nseg; i++) {
        const struct seg *s = &r->seg[i];

        /* A slab that has a donor but is local (degraded, reclaimed):
         * the donor misses this write, so the table on disk must say
         * that before the reply. */
        if (s->where == SEG_LOCAL && x->peers[s->io.slab] &&
            table_sync(x, s->io.slab)) {
            sd_log(LOG_ERR, "export %s: a write to slab %u fails: the "
                   "table saying the slab is served locally cannot be "
                   "saved in %s", x->uuid, s->io.slab, x->conf);
            set_error(r, NBD_EIO);
        }
    }
    while (done < nio->len) {
        /* One page per pwrite: the page cache then keeps small folios.
         * A large folio (from one large write) makes every later 4 KiB
         * write into it walk all its buffer heads on ext4, about 10x
         * slower (26.8 against 2.7 us measured). */
        size_t want = SD_PAGE_SIZE - (size_t)((nio->offset + done) %
                                              SD_PAGE_SIZE);
        uint64_t page = (nio->offset + done) / SD_PAGE_SIZE;
        ssize_t n;

        if (want > nio->len - done) {
            want = nio->len - done;
        }
        if (page == r->skip[0] || page == r->skip[1]) {
            done += want;               /* on the donor only (adoption) */
            continue;
        }
        n = pwrite(x->fd, (char *)nio->buf + done, want,
                   (off_t)(nio->offset + done));

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            sd_log(LOG_ERR, "export %s: cannot write the local copy %s: %s",
                   x->uuid, x->spec.local, n < 0 ? strerror(errno) : "short");
            set_error(r, n < 0 && errno == ENOSPC ? NBD_ENOSPC : NBD_EIO);
            finish_one(r);
            return;
        }
        done += (size_t)n;
    }
    if ((nio->flags & NBD_CMD_FLAG_FUA) && fdatasync(x->fd)) {
        set_error(r, NBD_EIO);
    }
    sd_bitmap_set(&x->written, nio->offset / SD_PAGE_SIZE,
                  (nio->offset + nio->len - 1) / SD_PAGE_SIZE -
                  nio->offset / SD_PAGE_SIZE + 1);
    if (x->bad.words) {
        /* Whole pages (sealed): the copy has them now. */
        sd_bitmap_clear(&x->bad, nio->offset / SD_PAGE_SIZE,
                        nio->len / SD_PAGE_SIZE);
    }
    ghost_pages(x, 'o', nio->offset, nio->len);
    finish_one(r);
}

/* TRIM: the pages wholly inside the range become never-written (zeros,
 * no trip) and leave the local copy. */
static uint32_t do_trim(struct sd_export *x, struct sd_nbd_io *nio)
{
    uint64_t first = (nio->offset + SD_PAGE_SIZE - 1) / SD_PAGE_SIZE;
    uint64_t end = (nio->offset + nio->len) / SD_PAGE_SIZE;

    if (end <= first) {
        return 0;
    }
    if (rebuilding(x)) {
        /* Keep the rebuild from bringing the donor's copy back. */
        pthread_mutex_lock(&x->rb_lock);
        sd_bitmap_set(&x->fresh, first, end - first);
        pthread_mutex_unlock(&x->rb_lock);
    }
    sd_bitmap_clear(&x->written, first, end - first);
    if (x->bad.words) {
        sd_bitmap_clear(&x->bad, first, end - first);
    }
    if (fallocate(x->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)(first * SD_PAGE_SIZE),
                  (off_t)((end - first) * SD_PAGE_SIZE))) {
        /* The bitmap already answers zeros; the copy keeps stale bytes
         * a restart would bring back as written pages. */
        sd_log(LOG_WARNING, "export %s: cannot punch a hole in %s: %s",
               x->uuid, x->spec.local, strerror(errno));
    }
    return 0;
}

/* A sealed export addresses whole pages only. */
static int misaligned(const struct sd_export *x, const struct sd_nbd_io *nio)
{
    return x->spec.seal &&
           (nio->offset % SD_PAGE_SIZE || nio->len % SD_PAGE_SIZE);
}

/* A burst of requests: first every donor io of its READs and WRITEs goes
 * out (one send per donor), then, in order, the local work of each and
 * the other commands. */
static void export_submit(void *ctx, struct sd_nbd_io **nios, size_t n)
{
    struct sd_export *x = ctx;
    struct xreq **reqs = calloc(n, sizeof(*reqs));
    struct sd_io **remote = NULL;
    size_t i, nseg = 0, nremote = 0;

    for (i = 0; reqs && i < n; i++) {
        struct sd_nbd_io *nio = nios[i];

        if ((nio->type == NBD_CMD_READ || nio->type == NBD_CMD_WRITE) &&
            nio->len && !misaligned(x, nio) &&
            (reqs[i] = xreq_new(x, nio)) != NULL) {
            nseg += reqs[i]->nseg;
        }
    }
    if (reqs && nseg && (remote = malloc(nseg * sizeof(*remote))) != NULL) {
        for (i = 0; i < n; i++) {
            if (reqs[i]) {
                plan(x, reqs[i], remote, &nremote);
            }
        }
        submit_remote(x, remote, nremote);
    }
    for (i = 0; i < n; i++) {
        struct sd_nbd_io *nio = nios[i];
        struct xreq *r = reqs ? reqs[i] : NULL;

        if (r && !remote) {
            free(r);            /* planned nothing: out of memory */
            r = NULL;
        }
        switch (nio->type) {
        case NBD_CMD_FLUSH:
            nio->done(nio, fdatasync(x->fd) ? NBD_EIO : 0);
            break;
        case NBD_CMD_TRIM:
            nio->done(nio, do_trim(x, nio));
            break;
        case NBD_CMD_READ:
        case NBD_CMD_WRITE:
            if (nio->len == 0) {
                nio->done(nio, 0);
            } else if (misaligned(x, nio)) {
                nio->done(nio, NBD_EINVAL);
            } else if (!r) {
                nio->done(nio, NBD_ENOMEM);
            } else if (nio->type == NBD_CMD_READ) {
                finish_read(x, r);
            } else {
                finish_write(x, r);
            }
            break;
        default:
            nio->done(nio, NBD_EINVAL);
            break;
        }
    }
    free(remote);
    free(reqs);
}

static void export_clients(void *ctx, int delta)
{
    struct sd_export *x = ctx;

    __atomic_add_fetch(&x->clients, (uint32_t)delta, __ATOMIC_RELAXED);
}

/* ---- the registry ---- */

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX], *p;

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        return -ENAMETOOLONG;
    }
    for (p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, mode) && errno != EEXIST) {
                return -errno;
            }
            *p = '/';
        }
    }
    if (mkdir(buf, mode) && errno != EEXIST) {
        return -errno;
    }
    return 0;
}

int sd_exports_new(const char *state_dir, const char *export_dir,
                   uid_t sock_uid, gid_t sock_gid, struct sd_exports **out,
                   char *err, size_t errlen)
{
    struct sd_exports *xs = calloc(1, sizeof(*xs));
    int ret;

    if (!xs) {
        return fail(err, errlen, -ENOMEM, "out of memory");
    }
    if (strlen(state_dir) + 8 >= sizeof(xs->conf_dir) ||
        strlen(export_dir) >= sizeof(xs->export_dir)) {
        free(xs);
        return fail(err, errlen, -ENAMETOOLONG, "--state-dir, --export-dir: "
                    "must be shorter than %zu characters",
                    sizeof(xs->export_dir) - 8);
    }
    snprintf(xs->conf_dir, sizeof(xs->conf_dir), "%s/exports", state_dir);
    snprintf(xs->export_dir, sizeof(xs->export_dir), "%s", export_dir);
    xs->uid = sock_uid;
    xs->gid = sock_gid;
    /* The .conf files hold sealed exports' page keys. */
    if ((ret = mkdir_p(xs->conf_dir, 0700)) ||
        (chmod(xs->conf_dir, 0700) && (ret = -errno))) {
        fail(err, errlen, ret, "--state-dir: cannot create %s: %s",
             xs->conf_dir, strerror(-ret));
        free(xs);
        return ret;
    }
    /* QEMU, another user, must traverse the export directory. */
    if ((ret = mkdir_p(xs->export_dir, 0755))) {
        fail(err, errlen, ret, "--export-dir: cannot create %s: %s",
             xs->export_dir, strerror(-ret));
        free(xs);
        return ret;
    }
    pthread_mutex_init(&xs->lock, NULL);
    *out = xs;
    return 0;
}

static struct sd_export *find(struct sd_exports *xs,
                              const uint8_t grant[SD_UUID_LEN])
{
    struct sd_export *x;

    for (x = xs->exports; x; x = x->next) {
        if (memcmp(x->spec.grant, grant, SD_UUID_LEN) == 0) {
            return x;
        }
    }
    return NULL;
}

static void export_free(struct sd_export *x)
{
    rebuild_stop(x);
    if (x->fd >= 0) {
        close(x->fd);
    }
    sd_bitmap_destroy(&x->written);
    sd_bitmap_destroy(&x->fresh);
    sd_bitmap_destroy(&x->bad);
    if (x->sealer_ok) {
        sd_sealer_destroy(&x->sealer);
    }
    sd_kw_offer_free(x->offer);
    pthread_cond_destroy(&x->rb_cond);
    pthread_mutex_destroy(&x->rb_lock);
    sd_ghost_destroy(&x->ghost);
    sd_export_spec_free(&x->spec);
    free(x->peers);
    free(x->degraded);
    free(x->saved_local);
    pthread_mutex_destroy(&x->lock);
    free(x);
}

/* A sealed export's key, sealer and bad-page map.  A new export draws its
 * page key here; an adopted one waits for it (sd_exports_key_install); a
 * restored one has it in its .conf, or still waits when adopted. */
static int seal_setup(struct sd_export *x, int restoring, char *err,
                      size_t errlen)
{
    if (!restoring && x->spec.adopt) {
        x->spec.has_page_key = 0;
    } else if (!restoring) {
        if (RAND_bytes(x->spec.page_key, SD_KEY_LEN) != 1) {
            return fail(err, errlen, -EIO, "seal: cannot draw a page key "
                        "(OpenSSL's RAND_bytes failed)");
        }
        x->spec.has_page_key = 1;
    } else if (!x->spec.has_page_key && !x->spec.adopt) {
        return fail(err, errlen, -EINVAL, "page_key: missing from the .conf "
                    "of a sealed export: its pages on the donors cannot be "
                    "read; drop the export and make a new one");
    }
    x->key_ready = x->spec.has_page_key;
    /* The offer lives in memory only: a restart makes a new one. */
    if (!x->key_ready && sd_kw_offer_new(&x->offer, x->offer_pub)) {
        return fail(err, errlen, -EIO, "seal: cannot make the key offer "
                    "(OpenSSL failed)");
    }
    if (sd_sealer_init(&x->sealer)) {
        return fail(err, errlen, -EIO, "seal: cannot draw a nonce epoch "
                    "(OpenSSL's RAND_bytes failed)");
    }
    x->sealer_ok = 1;
    if (x->spec.adopt && sd_bitmap_init(&x->bad, x->written.pages)) {
        return fail(err, errlen, -ENOMEM, "out of memory");
    }
    return 0;
}

/* Build the export of spec; called with xs->lock held.  restoring: the
 * .conf exists already. */
static int export_open(struct sd_exports *xs, struct sd_export_spec *spec,
                       int restoring, struct sd_export **out, char *err,
                       size_t errlen)
{
    struct sd_nbd_backend be;
    pthread_condattr_t ca;
    struct sd_export *x;
    uint64_t pps;
    struct stat st;
    uint32_t i;
    int ret;

    x = calloc(1, sizeof(*x));
    if (!x) {
        sd_export_spec_free(spec);
        return fail(err, errlen, -ENOMEM, "out of memory");
    }
    x->xs = xs;
    x->spec = *spec;
    spec->slabs = NULL;
    x->fd = -1;
    pthread_mutex_init(&x->lock, NULL);
    pthread_mutex_init(&x->rb_lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* rb_sleep */
    pthread_cond_init(&x->rb_cond, &ca);
    pthread_condattr_destroy(&ca);
    sd_uuid_format(x->spec.grant, x->uuid);
    snprintf(x->name, sizeof(x->name), "memagg-swap-%s", x->uuid);
    snprintf(x->sock, sizeof(x->sock), "%s/%s.sock", xs->export_dir,
             x->uuid);
    snprintf(x->conf, sizeof(x->conf), "%s/%s.conf", xs->conf_dir, x->uuid);

    x->peers = calloc(x->spec.nslabs, sizeof(*x->peers));
    x->degraded = calloc(x->spec.nslabs, 1);
    x->saved_local = calloc(x->spec.nslabs, 1);
    if (!x->peers || !x->degraded || !x->saved_local ||
        sd_bitmap_init(&x->written,
                       x->spec.size / SD_PAGE_SIZE) ||
        (x->spec.adopt && sd_bitmap_init(&x->fresh, x->written.pages)) ||
        sd_ghost_init(&x->ghost, SD_GHOST_RING)) {
        ret = fail(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    pps = x->spec.slab_size / SD_PAGE_SIZE;
    x->rb_cursor = x->spec.adopt ? x->spec.rebuilt * pps : x->written.pages;
    for (i = 0; restoring && i < x->spec.nslabs; i++) {
        x->saved_local[i] = (uint8_t)x->spec.slabs[i].local;  /* as read */
    }
    for (i = 0; i < x->spec.nslabs; i++) {
        if (x->spec.slabs[i].endpoint[0] &&
            (ret = peer_get(xs, x->spec.slabs[i].endpoint, &x->peers[i],
                            err, errlen))) {
            goto out;
        }
        if (x->spec.seal && x->peers[i] &&
            x->peers[i]->t == &sd_rdma_transport) {
            ret = fail(err, errlen, -EOPNOTSUPP, "seal: page sealing over "
                       "RDMA is not built yet (slab %u is on %s); "
                       "[swapd] encrypt_pages=false turns it off", i,
                       x->spec.slabs[i].endpoint);
            goto out;
        }
    }
    if (x->spec.seal && (ret = seal_setup(x, restoring, err, errlen))) {
        goto out;
    }

    /* A new adoption empties the copy: whatever it holds would pass for
     * pages written here. */
    x->fd = open(x->spec.local, O_RDWR | O_CREAT | O_CLOEXEC |
                 (x->spec.adopt && !restoring ? O_TRUNC : 0), 0600);
    if (x->fd < 0 || fstat(x->fd, &st) ||
        ((uint64_t)st.st_size < x->spec.size &&
         ftruncate(x->fd, (off_t)x->spec.size))) {
        ret = fail(err, errlen, -errno, "local: cannot use %s as the "
                   "durability copy: %s", x->spec.local, strerror(errno));
        goto out;
    }
    /* Pages the copy holds are the pages written before (a restart or a
     * hand-over); a new copy is one hole.  An adopted export's pages not
     * rebuilt yet are on the donors: written; those the copy holds there
     * are the current ones (see "adoption"). */
    ret = sd_bitmap_load_extents(&x->written, x->fd);
    if (ret == 0 && x->spec.adopt) {
        ret = sd_bitmap_load_extents(&x->fresh, x->fd);
        sd_bitmap_set(&x->written, x->rb_cursor,
                      x->written.pages - x->rb_cursor);
    }
    if (ret) {
        fail(err, errlen, ret, "local: cannot map the data of %s: %s",
             x->spec.local, strerror(-ret));
        goto out;
    }

    /* The table is durable before the socket exists: no write reaches
     * an export a restart would not find. */
    if (!restoring && (ret = persist(x))) {
        fail(err, errlen, ret, "cannot write %s: %s", x->conf,
             strerror(-ret));
        goto out;
    }
    be.name = x->name;
    be.size = x->spec.size;
    /* Pages are sealed whole: QEMU aligns its requests to this. */
    be.min_block = x->spec.seal ? SD_PAGE_SIZE : 0;
    be.ctx = x;
    be.submit = export_submit;
    be.clients = export_clients;
    ret = sd_nbd_server_start(x->sock, &be, xs->uid, xs->gid, &x->nbd,
                              err, errlen);
    if (ret) {
        if (!restoring) {
            unlink(x->conf);
        }
        goto out;
    }
    if (x->spec.adopt && !x->spec.rebuild_started) {
        sd_log(LOG_INFO, "export %s: adopted; its local copy is rebuilt "
               "from the donors once EXPORT_REBUILD asks", x->uuid);
    } else if (x->spec.adopt) {
        sd_log(LOG_INFO, "export %s: adopted; its local copy is rebuilt "
               "from the donors from slab %u of %u", x->uuid,
               x->spec.rebuilt, x->spec.nslabs);
        ret = -pthread_create(&x->rb_thread, NULL, rebuild_main, x);
        if (ret) {
            sd_nbd_server_stop(x->nbd);
            if (!restoring) {
                unlink(x->conf);
            }
            fail(err, errlen, ret, "cannot start the rebuild's thread: %s",
                 strerror(-ret));
            goto out;
        }
        x->rb_running = 1;
    }
    *out = x;
    return 0;

out:
    export_free(x);
    return ret;
}

int sd_exports_create(struct sd_exports *xs, struct sd_export_spec *spec,
                      char *sock, size_t socklen, char *err, size_t errlen)
{
    struct sd_export *x;
    int ret;

    pthread_mutex_lock(&xs->lock);
    if (find(xs, spec->grant)) {
        char uuid[SD_UUID_STRLEN + 1];

        sd_uuid_format(spec->grant, uuid);
        sd_export_spec_free(spec);
        pthread_mutex_unlock(&xs->lock);
        return fail(err, errlen, -EEXIST, "grant: %s already has an export "
                    "here (EXPORT_DROP it first)", uuid);
    }
    ret = export_open(xs, spec, 0, &x, err, errlen);
    if (ret == 0) {
        x->next = xs->exports;
        xs->exports = x;
        snprintf(sock, socklen, "%s", x->sock);
        sd_log(LOG_INFO, "export %s: %llu bytes in %u slabs on %s",
               x->name, (unsigned long long)x->spec.size, x->spec.nslabs,
               x->sock);
    }
    pthread_mutex_unlock(&xs->lock);
    return ret;
}

static int read_conf(const char *path, char **line)
{
    char *buf = malloc(SD_CONTROL_MAX_LINE + 1), *nl;
    ssize_t n;
    int fd;

    if (!buf) {
        return -ENOMEM;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        free(buf);
        return -errno;
    }
    n = read(fd, buf, SD_CONTROL_MAX_LINE);
    close(fd);
    if (n < 0) {
        free(buf);
        return -errno;
    }
    buf[n] = '\0';
    nl = strchr(buf, '\n');
    if (nl) {
        *nl = '\0';
    }
    *line = buf;
    return 0;
}

int sd_exports_restore(struct sd_exports *xs)
{
    struct dirent *de;
    int restored = 0;
    DIR *dir;

    dir = opendir(xs->conf_dir);
    if (!dir) {
        sd_log(LOG_ERR, "cannot list %s: %s", xs->conf_dir, strerror(errno));
        return 0;
    }
    while ((de = readdir(dir))) {
        char path[PATH_MAX], err[SD_ERRLEN] = "", *line = NULL;
        size_t len = strlen(de->d_name);
        struct sd_export_spec spec;
        struct sd_export *x;
        struct sd_args args;
        int ret;

        if (len < 6 || len > 255 || strcmp(de->d_name + len - 5, ".conf")) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", xs->conf_dir, de->d_name);
        ret = read_conf(path, &line);
        if (ret == 0 && (ret = sd_control_parse_line(line, &args, err,
                                                      sizeof(err))) == 0 &&
            (ret = sd_export_spec_parse(&args, &spec, err,
                                        sizeof(err))) == 0) {
            pthread_mutex_lock(&xs->lock);
            if (find(xs, spec.grant)) {
                sd_export_spec_free(&spec);
                ret = -EEXIST;
                snprintf(err, sizeof(err), "its grant is restored already");
            } else if ((ret = export_open(xs, &spec, 1, &x, err,
                                          sizeof(err))) == 0) {
                x->next = xs->exports;
                xs->exports = x;
                restored++;
                sd_log(LOG_INFO, "export %s: restored from %s on %s",
                       x->name, path, x->sock);
            }
            pthread_mutex_unlock(&xs->lock);
        }
        if (ret) {
            sd_log(LOG_ERR, "cannot restore the export of %s: %s", path,
                   err[0] ? err : strerror(-ret));
        }
        free(line);
    }
    closedir(dir);
    return restored;
}

/* The export of grant, unlinked from the list. */
static struct sd_export *take(struct sd_exports *xs,
                              const uint8_t grant[SD_UUID_LEN])
{
    struct sd_export **pp, *x = NULL;

    pthread_mutex_lock(&xs->lock);
    for (pp = &xs->exports; *pp; pp = &(*pp)->next) {
        if (memcmp((*pp)->spec.grant, grant, SD_UUID_LEN) == 0) {
            x = *pp;
            *pp = x->next;
            break;
        }
    }
    pthread_mutex_unlock(&xs->lock);
    return x;
}

int sd_exports_drop(struct sd_exports *xs, const uint8_t grant[SD_UUID_LEN],
                    int delete_local)
{
    struct sd_export *x = take(xs, grant);

    if (!x) {
        return -ENOENT;
    }
    sd_nbd_server_stop(x->nbd);
    rebuild_stop(x);
    unlink(x->conf);
    if (delete_local) {
        unlink(x->spec.local);
    }
    sd_log(LOG_INFO, "export %s: dropped%s", x->name,
           delete_local ? " with its local copy" : "");
    export_free(x);
    return 0;
}

void sd_exports_free(struct sd_exports *xs)
{
    struct sd_export *x;
    struct peer *p;

    if (!xs) {
        return;
    }
    while ((x = xs->exports)) {
        xs->exports = x->next;
        sd_nbd_server_stop(x->nbd);
        export_free(x);
    }
    while ((p = xs->peers)) {
        xs->peers = p->next;
        if (p->conn) {
            p->t->close(p->conn);
        }
        pthread_rwlock_destroy(&p->rw);
        free(p);
    }
    pthread_mutex_destroy(&xs->lock);
    free(xs);
}

/* The callers below run on the control thread, the only one that drops
 * exports, so x stays valid after xs->lock is released. */
static struct sd_export *lookup(struct sd_exports *xs,
                                const uint8_t grant[SD_UUID_LEN])
{
    struct sd_export *x;

    pthread_mutex_lock(&xs->lock);
    x = find(xs, grant);
    pthread_mutex_unlock(&xs->lock);
    return x;
}

int sd_exports_describe(struct sd_exports *xs,
                        const uint8_t grant[SD_UUID_LEN], char **text)
{
    struct sd_export *x = lookup(xs, grant);

    if (!x) {
        return -ENOENT;
    }
    pthread_mutex_lock(&x->lock);
    *text = sd_export_spec_format(&x->spec);
    pthread_mutex_unlock(&x->lock);
    return *text ? 0 : -ENOMEM;
}

int sd_exports_rebuild(struct sd_exports *xs,
                       const uint8_t grant[SD_UUID_LEN], uint64_t *left,
                       char *err, size_t errlen)
{
    struct sd_export *x = lookup(xs, grant);
    int ret = 0;

    if (!x) {
        return fail(err, errlen, -ENOENT, "grant: no export here");
    }
    /* Only the control thread starts a rebuild (here) or stops one (a
     * drop), so rb_running cannot change under this call. */
    pthread_mutex_lock(&x->lock);
    if (x->spec.adopt && !x->spec.rebuild_started) {
        /* Saved first: the rebuild's own saves (rb_slab_done) keep it,
         * and a restart must not find it waiting again. */
        x->spec.rebuild_started = 1;
        ret = persist(x);
        if (ret) {
            fail(err, errlen, ret, "cannot write %s: %s", x->conf,
                 strerror(-ret));
        } else if ((ret = -pthread_create(&x->rb_thread, NULL,
                                          rebuild_main, x))) {
            fail(err, errlen, ret, "cannot start the rebuild's thread: %s",
                 strerror(-ret));
        }
        if (ret) {
            x->spec.rebuild_started = 0;
            persist(x);
        } else {
            x->rb_running = 1;
            sd_log(LOG_INFO, "export %s: the rebuild of its local copy "
                   "from the donors starts", x->uuid);
        }
    }
    pthread_mutex_unlock(&x->lock);
    *left = rebuild_left(x);
    return ret;
}

int sd_exports_reclaim(struct sd_exports *xs,
                       const uint8_t grant[SD_UUID_LEN],
                       const uint32_t *idx, size_t n, uint32_t *done,
                       char *err, size_t errlen)
{
    struct sd_export *x = lookup(xs, grant);
    uint32_t i, count = 0;
    uint64_t cursor, pps;
    int ret;

    if (!x) {
        return fail(err, errlen, -ENOENT, "grant: no export here");
    }
    pps = x->spec.slab_size / SD_PAGE_SIZE;
    for (i = 0; i < n; i++) {
        if (idx[i] >= x->spec.nslabs) {
            return fail(err, errlen, -EINVAL, "slabs: index %u is beyond "
                        "the export's %u slabs", idx[i], x->spec.nslabs);
        }
    }
    /* Only the rebuild moves rb_cursor, and only forward: a slab found
     * rebuilt here stays so. */
    cursor = __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE);
    for (i = 0; i < (n ? n : x->spec.nslabs); i++) {
        uint32_t s = n ? idx[i] : i;

        if (x->peers[s] && (uint64_t)(s + 1) * pps > cursor) {
            return fail(err, errlen, -EBUSY, "slabs: slab %u of this "
                        "adopted export is not rebuilt from its donor yet "
                        "(rebuild_left=%llu pages); reclaim it when "
                        "EXPORT_STATS says rebuild_left=0, after "
                        "EXPORT_REBUILD", s,
                        (unsigned long long)(x->written.pages - cursor));
        }
    }
    for (i = 0; i < (n ? n : x->spec.nslabs); i++) {
        uint32_t s = n ? idx[i] : i;

        if (x->peers[s] && !__atomic_exchange_n(&x->spec.slabs[s].local, 1,
                                                __ATOMIC_SEQ_CST)) {
            count++;
        }
    }
    /* Saved before the answer: the caller then has the donors free the
     * slabs, and a restart must not read them there. */
    pthread_mutex_lock(&x->lock);
    ret = persist(x);
    pthread_mutex_unlock(&x->lock);
    if (ret) {
        return fail(err, errlen, ret, "cannot write %s: %s (the slabs are "
                    "served from the local copy, but a restart would read "
                    "them from their donors again: do not free them)",
                    x->conf, strerror(-ret));
    }
    sd_log(LOG_INFO, "export %s: %u slabs reclaimed to the local copy",
           x->name, count);
    *done = count;
    return 0;
}

int sd_exports_list(struct sd_exports *xs, char **text)
{
    struct strbuf b = { 0 };
    struct sd_export *x;

    sb_printf(&b, "%s", "");
    pthread_mutex_lock(&xs->lock);
    for (x = xs->exports; x; x = x->next) {
        sb_printf(&b, "%s%s", b.len ? "," : "", x->uuid);
    }
    pthread_mutex_unlock(&xs->lock);
    if (b.oom) {
        free(b.s);
        return -ENOMEM;
    }
    *text = b.s;
    return 0;
}

int sd_exports_stats(struct sd_exports *xs,
                     const uint8_t grant[SD_UUID_LEN],
                     struct sd_export_stats *out)
{
    struct sd_export *x = lookup(xs, grant);
    uint32_t i;

    if (!x) {
        return -ENOENT;
    }
    memset(out, 0, sizeof(*out));
    out->reads = LOAD(x, reads);
    out->writes = LOAD(x, writes);
    out->read_bytes = LOAD(x, read_bytes);
    out->write_bytes = LOAD(x, write_bytes);
    out->zero_reads = LOAD(x, zero_reads);
    out->local_reads = LOAD(x, local_reads);
    out->remote_errors = LOAD(x, remote_errors);
    out->auth_failures = LOAD(x, auth_failures);
    out->sealed = (uint32_t)x->spec.seal;
    out->key_pending = x->spec.seal &&
                       !__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE);
    out->clients = LOAD(x, clients);
    for (i = 0; i < x->spec.nslabs; i++) {
        out->degraded_slabs += __atomic_load_n(&x->degraded[i],
                                               __ATOMIC_RELAXED);
    }
    out->lat_p50_us = sd_hist_percentile(&x->hist, 50);
    out->lat_p99_us = sd_hist_percentile(&x->hist, 99);
    out->rebuild_left = rebuild_left(x);
    out->stored_pages = sd_bitmap_count(&x->written);
    return 0;
}

int sd_exports_key_offer(struct sd_exports *xs,
                         const uint8_t grant[SD_UUID_LEN],
                         uint8_t pub[SD_KW_PUB_LEN])
{
    struct sd_export *x = lookup(xs, grant);
    int ret = 0;

    if (!x) {
        return -ENOENT;
    }
    pthread_mutex_lock(&x->lock);
    if (!x->spec.seal) {
        ret = -EINVAL;
    } else if (!x->offer) {
        ret = -EALREADY;
    } else {
        memcpy(pub, x->offer_pub, SD_KW_PUB_LEN);
    }
    pthread_mutex_unlock(&x->lock);
    return ret;
}

int sd_exports_key_wrap(struct sd_exports *xs,
                        const uint8_t grant[SD_UUID_LEN],
                        const uint8_t pub[SD_KW_PUB_LEN],
                        uint8_t blob[SD_KW_BLOB_LEN], char *err,
                        size_t errlen)
{
    struct sd_export *x = lookup(xs, grant);
    int ret;

    if (!x) {
        return -ENOENT;
    }
    if (!x->spec.seal) {
        return fail(err, errlen, -EINVAL, "grant: the export of %s is not "
                    "sealed: it has no page key to hand over", x->uuid);
    }
    if (!__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE)) {
        return fail(err, errlen, -ENOKEY, "grant: the export of %s waits "
                    "for its own page key (EXPORT_KEY_INSTALL)", x->uuid);
    }
    ret = sd_kw_wrap(x->spec.grant, x->spec.page_key, pub, blob);
    if (ret == -EINVAL) {
        return fail(err, errlen, ret, "offer: not a usable X25519 public "
                    "key; give the key_offer= of the destination's "
                    "EXPORT_CREATE");
    }
    if (ret) {
        return fail(err, errlen, ret, "cannot wrap the page key (OpenSSL "
                    "failed)");
    }
    return 0;
}

int sd_exports_key_install(struct sd_exports *xs,
                           const uint8_t grant[SD_UUID_LEN],
                           const uint8_t blob[SD_KW_BLOB_LEN], char *err,
                           size_t errlen)
{
    struct sd_export *x = lookup(xs, grant);
    uint8_t key[SD_KEY_LEN];
    int ret;

    if (!x) {
        return -ENOENT;
    }
    pthread_mutex_lock(&x->lock);
    if (!x->spec.seal) {
        ret = fail(err, errlen, -EINVAL, "grant: the export of %s is not "
                   "sealed: it takes no page key", x->uuid);
    } else if (x->spec.has_page_key) {
        ret = fail(err, errlen, -EALREADY, "grant: the export of %s has "
                   "its page key already", x->uuid);
    } else if ((ret = sd_kw_unwrap(x->offer, x->spec.grant, blob, key))) {
        ret = fail(err, errlen, ret == -EBADMSG ? ret : -EIO, "wrapped: "
                   "does not open with this export's offer (made for "
                   "another host, grant or offer, or altered)");
    } else {
        memcpy(x->spec.page_key, key, SD_KEY_LEN);
        x->spec.has_page_key = 1;
        /* Durable before any page is sealed with it. */
        ret = persist(x);
        if (ret) {
            x->spec.has_page_key = 0;
            OPENSSL_cleanse(x->spec.page_key, SD_KEY_LEN);
            fail(err, errlen, ret, "cannot write %s: %s (the export still "
                 "waits for its key)", x->conf, strerror(-ret));
        } else {
            __atomic_store_n(&x->key_ready, 1, __ATOMIC_RELEASE);
            sd_kw_offer_free(x->offer);
            x->offer = NULL;
            sd_log(LOG_INFO, "export %s: page key installed", x->uuid);
        }
    }
    OPENSSL_cleanse(key, sizeof(key));
    pthread_mutex_unlock(&x->lock);
    return ret;
}

int sd_exports_ghost(struct sd_exports *xs,
                     const uint8_t grant[SD_UUID_LEN], size_t max,
                     char **events, uint64_t *dropped)
{
    struct sd_export *x = lookup(xs, grant);
    long n;

    if (!x) {
        return -ENOENT;
    }
    pthread_mutex_lock(&x->lock);
    n = sd_ghost_drain(&x->ghost, max, events);
    *dropped = x->ghost.dropped;
    pthread_mutex_unlock(&x->lock);
    return n < 0 ? (int)n : 0;
}
