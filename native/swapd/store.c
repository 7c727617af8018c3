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
 * The donor store: memory this host lends, by grant.
 *
 * A grant's slabs here are one anonymous mapping (MAP_NORESERVE: the host
 * gives pages only as they are written), laid out in the order they were
 * allocated.  Freeing a slab gives its pages back at once with
 * MADV_DONTNEED; the mapping goes when the grant's last slab does.  The
 * slabs' seals are a second such mapping, SD_SEAL_LEN bytes per page, in
 * the same order.
 * Accesses take the lock shared and are a memcpy; allocation and release
 * take it exclusively.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>

#include "store.h"
#include "donor.h"
#include "seal.h"
#include "util.h"

#define GRANT_BUCKETS 64

struct slot {
    uint32_t idx;               /* the slab's index within the grant */
    uint32_t pos;               /* its place in the region */
    int live;
};

struct grant {
    struct grant *next;         /* in its hash bucket */
    uint8_t uuid[SD_UUID_LEN];
    uint8_t key[SD_KEY_LEN];
    uint64_t slab_size;
    char *base;                 /* NULL once every slab is freed */
    size_t region_len;
    uint8_t *seals;             /* the slabs' seals, in the same order */
    size_t seals_len;
    struct slot *slots;         /* sorted by idx */
    size_t nslots;
    size_t live;
    void *mr, *seals_mr;        /* the hook's registrations, if any */
    uint64_t mr_key, seals_key;
    uint64_t refused;           /* atomic: accesses with a wrong key */
    int warned;                 /* atomic: the refusal was logged */
};

struct sd_store {
    pthread_rwlock_t lock;
    uint64_t capacity;
    uint64_t used;              /* slabs: what capacity bounds */
    uint64_t seals;             /* their seals, on top */
    uint32_t grants;
    uint32_t slabs;
    uint64_t refused;           /* atomic */
    struct grant *buckets[GRANT_BUCKETS];
    struct sd_store_mr_hook hook;
    int hooked;
};

static unsigned bucket_of(const uint8_t uuid[SD_UUID_LEN])
{
    uint32_t h = 2166136261u;
    int i;

    for (i = 0; i < SD_UUID_LEN; i++) {
        h = (h ^ uuid[i]) * 16777619u;
    }
    return h % GRANT_BUCKETS;
}

static struct grant **find_link(struct sd_store *s,
                                const uint8_t uuid[SD_UUID_LEN])
{
    struct grant **link = &s->buckets[bucket_of(uuid)];

    while (*link && memcmp((*link)->uuid, uuid, SD_UUID_LEN) != 0) {
        link = &(*link)->next;
    }
    return link;
}

static struct slot *find_slot(struct grant *g, uint32_t idx)
{
    size_t lo = 0, hi = g->nslots;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (g->slots[mid].idx == idx) {
            return &g->slots[mid];
        }
        if (g->slots[mid].idx < idx) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* Bytes of seals beside a slab of slab_size. */
static uint64_t slab_seals(uint64_t slab_size)
{
    return slab_size / SD_PAGE_SIZE * SD_SEAL_LEN;
}

static int slot_cmp(const void *a, const void *b)
{
    const struct slot *x = a, *y = b;

    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int sd_store_new(uint64_t capacity, struct sd_store **out)
{
    struct sd_store *s = calloc(1, sizeof(*s));

    if (!s) {
        return -ENOMEM;
    }
    if (pthread_rwlock_init(&s->lock, NULL) != 0) {
        free(s);
        return -ENOMEM;
    }
    s->capacity = capacity;
    *out = s;
    return 0;
}

/* Register g's two regions through hook: 0, or -errno with neither. */
static int region_reg(const struct sd_store_mr_hook *hook, struct grant *g)
{
    int err = hook->reg(hook->ctx, g->base, g->region_len, &g->mr_key,
                        &g->mr);

    if (err == 0) {
        err = hook->reg(hook->ctx, g->seals, g->seals_len, &g->seals_key,
                        &g->seals_mr);
        if (err < 0) {
            hook->dereg(hook->ctx, g->mr);
            g->mr = NULL;
        }
    }
    return err;
}

static void region_dereg(const struct sd_store_mr_hook *hook, struct grant *g)
{
    if (g->mr) {
        hook->dereg(hook->ctx, g->mr);
        hook->dereg(hook->ctx, g->seals_mr);
    }
    g->mr = g->seals_mr = NULL;
    g->mr_key = g->seals_key = 0;
}

/* Unregister and unmap a grant's region (the lock held exclusively). */
static void region_drop(struct sd_store *s, struct grant *g)
{
    if (s->hooked) {
        region_dereg(&s->hook, g);
    }
    if (g->base) {
        munmap(g->base, g->region_len);
        g->base = NULL;
    }
    if (g->seals) {
        munmap(g->seals, g->seals_len);
        g->seals = NULL;
    }
}

static void grant_free(struct sd_store *s, struct grant *g)
{
    region_drop(s, g);
    s->used -= (uint64_t)g->live * g->slab_size;
    s->seals -= (uint64_t)g->live * slab_seals(g->slab_size);
    s->slabs -= (uint32_t)g->live;
    s->grants--;
    free(g->slots);
    free(g);
}

void sd_store_free(struct sd_store *s)
{
    unsigned b;

    if (!s) {
        return;
    }
    for (b = 0; b < GRANT_BUCKETS; b++) {
        while (s->buckets[b]) {
            struct grant *g = s->buckets[b];

            s->buckets[b] = g->next;
            grant_free(s, g);
        }
    }
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

/* Lend again slabs want[0..n) (sorted by idx, pos their place in the
 * request) of grant g, all freed slabs of its region: as many as
 * capacity allows, in the request's order, at the addresses they had
 * (the lock held).  -EEXIST unless g has key and slab_size, its region is
 * there and each of them is a freed slab of it. */
static int revive(struct sd_store *s, struct grant *g,
                  const uint8_t key[SD_KEY_LEN], uint64_t slab_size,
                  const struct slot *want, size_t n, uint64_t *addrs,
                  size_t *done)
{
    size_t i, k;

    if (!g->base || g->slab_size != slab_size || !sd_key_equal(g->key, key)) {
        return -EEXIST;
    }
    for (i = 0; i < n; i++) {
        struct slot *sl = find_slot(g, want[i].idx);

        if (!sl || sl->live) {
            return -EEXIST;
        }
    }
    k = s->used < s->capacity ? (s->capacity - s->used) / slab_size : 0;
    if (k > n) {
        k = n;
    }
    if (k == 0) {
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        struct slot *sl = find_slot(g, want[i].idx);

        if (want[i].pos >= k) {
            continue;
        }
        sl->live = 1;
        g->live++;
        s->used += slab_size;
        s->seals += slab_seals(slab_size);
        s->slabs++;
        addrs[want[i].pos] = (uint64_t)(uintptr_t)(g->base +
                                                   (size_t)sl->pos *
                                                   slab_size);
    }
    *done = k;
    return 0;
}

int sd_store_alloc(struct sd_store *s, const uint8_t uuid[SD_UUID_LEN],
                   const uint8_t key[SD_KEY_LEN], uint64_t slab_size,
                   const uint32_t *idx, size_t n, uint64_t *addrs,
                   size_t *done)
{
    struct grant **link, *g;
    size_t i, k;
    char uuid_text[SD_UUID_STRLEN + 1];
    int err;

    *done = 0;
    if (slab_size == 0 || slab_size % SD_PAGE_SIZE != 0 || n == 0 ||
        n > UINT32_MAX) {
        return -EINVAL;
    }
    g = calloc(1, sizeof(*g));
    if (!g || !(g->slots = calloc(n, sizeof(*g->slots)))) {
        free(g);
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        g->slots[i].idx = idx[i];
        g->slots[i].pos = (uint32_t)i;
        g->slots[i].live = 1;
    }
    qsort(g->slots, n, sizeof(*g->slots), slot_cmp);
    for (i = 1; i < n; i++) {
        if (g->slots[i].idx == g->slots[i - 1].idx) {
            free(g->slots);
            free(g);
            return -EINVAL;     /* a slab asked for twice */
        }
    }

    pthread_rwlock_wrlock(&s->lock);
    link = find_link(s, uuid);
    if (*link && !(*link)->base && sd_key_equal((*link)->key, key)) {
        /* Every slab it had here was freed: lent anew. */
        struct grant *old = *link;

        *link = old->next;
        grant_free(s, old);
        link = find_link(s, uuid);
    }
    if (*link) {
        err = revive(s, *link, key, slab_size, g->slots, n, addrs, done);
        goto fail;
    }
    /* Partial: the first k slabs asked for, as many as capacity holds. */
    k = s->used < s->capacity ? (s->capacity - s->used) / slab_size : 0;
    if (k > n) {
        k = n;
    }
    if (k == 0 || k > SIZE_MAX / slab_size) {
        err = -ENOMEM;
        goto fail;
    }
    /* Keep those k, still sorted by index. */
    for (i = 0; i < n; i++) {
        if (g->slots[i].pos < k) {
            g->slots[g->nslots++] = g->slots[i];
        }
    }
    g->region_len = k * slab_size;
    g->base = mmap(NULL, g->region_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (g->base == MAP_FAILED) {
        g->base = NULL;
        err = -ENOMEM;
        goto fail;
    }
    g->seals_len = k * slab_seals(slab_size);
    g->seals = mmap(NULL, g->seals_len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (g->seals == MAP_FAILED) {
        g->seals = NULL;
        munmap(g->base, g->region_len);
        err = -ENOMEM;
        goto fail;
    }
    if (s->hooked) {
        err = region_reg(&s->hook, g);
        if (err < 0) {
            munmap(g->base, g->region_len);
            munmap(g->seals, g->seals_len);
            goto fail;
        }
    }
    memcpy(g->uuid, uuid, SD_UUID_LEN);
    memcpy(g->key, key, SD_KEY_LEN);
    g->slab_size = slab_size;
    g->live = k;
    *link = g;
    s->used += g->region_len;
    s->seals += g->seals_len;
    s->slabs += (uint32_t)k;
    s->grants++;
    for (i = 0; i < k; i++) {
        addrs[i] = (uint64_t)(uintptr_t)(g->base + i * slab_size);
    }
    *done = k;
    pthread_rwlock_unlock(&s->lock);

    sd_uuid_format(uuid, uuid_text);
    sd_log(LOG_INFO, "grant %s: %zu of %zu slabs of %llu bytes lent",
           uuid_text, k, n, (unsigned long long)slab_size);
    return 0;

fail:
    pthread_rwlock_unlock(&s->lock);
    free(g->slots);
    free(g);
    return err;
}

int sd_store_release(struct sd_store *s, const uint8_t uuid[SD_UUID_LEN],
                     const uint32_t *idx, size_t n)
{
    struct grant **link, *g;
    size_t i;

    pthread_rwlock_wrlock(&s->lock);
    link = find_link(s, uuid);
    g = *link;
    if (!g) {
        pthread_rwlock_unlock(&s->lock);
        return -ENOENT;
    }
    if (n == 0) {
        *link = g->next;
        grant_free(s, g);
        pthread_rwlock_unlock(&s->lock);
        return 0;
    }
    for (i = 0; i < n; i++) {
        struct slot *sl = find_slot(g, idx[i]);

        if (!sl || !sl->live) {
            continue;           /* freeing twice is not an error */
        }
        /* Under an RDMA registration the pages stay pinned until the
         * region is deregistered, when the last slab goes. */
        madvise(g->base + (size_t)sl->pos * g->slab_size, g->slab_size,
                MADV_DONTNEED);
        madvise(g->seals + (size_t)sl->pos * slab_seals(g->slab_size),
                slab_seals(g->slab_size), MADV_DONTNEED);
        sl->live = 0;
        g->live--;
        s->used -= g->slab_size;
        s->seals -= slab_seals(g->slab_size);
        s->slabs--;
    }
    if (g->live == 0) {
        region_drop(s, g);      /* the grant and its key stay known */
    }
    pthread_rwlock_unlock(&s->lock);
    return 0;
}

/* Count a refusal for g's key, logged once per grant (the lock held). */
static void wrong_key(struct sd_store *s, struct grant *g,
                      const uint8_t uuid[SD_UUID_LEN])
{
    __atomic_fetch_add(&g->refused, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->refused, 1, __ATOMIC_RELAXED);
    if (!__atomic_exchange_n(&g->warned, 1, __ATOMIC_RELAXED)) {
        char text[SD_UUID_STRLEN + 1];

        sd_uuid_format(uuid, text);
        sd_log(LOG_WARNING, "grant %s: access refused: wrong key "
               "(logged once per grant; DONOR_STATS counts them)", text);
    }
}

/* The grant of uuid if key is its key (the lock held shared), else NULL:
 * the refusal is counted, and a wrong key logged once per grant.  A grant
 * unknown here is not logged: anyone can name one, so the transport
 * reports those refusals per peer, rate-limited. */
static struct grant *grant_checked(struct sd_store *s,
                                   const uint8_t uuid[SD_UUID_LEN],
                                   const uint8_t key[SD_KEY_LEN])
{
    struct grant *g = *find_link(s, uuid);

    if (!g) {
        __atomic_fetch_add(&s->refused, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    if (!sd_key_equal(g->key, key)) {
        wrong_key(s, g, uuid);
        return NULL;
    }
    return g;
}

void sd_store_wrong_key(struct sd_store *s, const uint8_t uuid[SD_UUID_LEN])
{
    struct grant *g;

    pthread_rwlock_rdlock(&s->lock);
    g = *find_link(s, uuid);
    if (g) {
        wrong_key(s, g, uuid);
    }
    pthread_rwlock_unlock(&s->lock);
}

int sd_store_key(struct sd_store *s, const uint8_t uuid[SD_UUID_LEN],
                 uint8_t key[SD_KEY_LEN])
{
    struct grant *g;

    pthread_rwlock_rdlock(&s->lock);
    g = *find_link(s, uuid);
    if (g) {
        memcpy(key, g->key, SD_KEY_LEN);
    } else {
        __atomic_fetch_add(&s->refused, 1, __ATOMIC_RELAXED);
    }
    pthread_rwlock_unlock(&s->lock);
    return g ? 0 : -EACCES;
}

int sd_store_access(struct sd_store *s, int op,
                    const uint8_t uuid[SD_UUID_LEN],
                    const uint8_t key[SD_KEY_LEN], uint32_t slab,
                    uint64_t offset, void *buf, uint32_t len, void *seals)
{
    struct grant *g;
    struct slot *sl;
    uint8_t *sp = NULL;
    size_t seals_len = 0;
    char *p;

    if (op != SD_OP_READ && op != SD_OP_WRITE) {
        return -EINVAL;
    }
    if (seals && (offset % SD_PAGE_SIZE || len % SD_PAGE_SIZE)) {
        return -EINVAL;
    }
    pthread_rwlock_rdlock(&s->lock);
    g = grant_checked(s, uuid, key);
    if (!g) {
        pthread_rwlock_unlock(&s->lock);
        return -EACCES;
    }
    sl = find_slot(g, slab);
    if (!sl || !sl->live) {
        pthread_rwlock_unlock(&s->lock);
        return -ENOENT;
    }
    if (offset > g->slab_size || len > g->slab_size - offset) {
        pthread_rwlock_unlock(&s->lock);
        return -ERANGE;
    }
    p = g->base + (size_t)sl->pos * g->slab_size + offset;
    if (seals) {
        sp = g->seals + (size_t)sl->pos * slab_seals(g->slab_size) +
             offset / SD_PAGE_SIZE * SD_SEAL_LEN;
        seals_len = len / SD_PAGE_SIZE * SD_SEAL_LEN;
    }
    if (op == SD_OP_READ) {
        memcpy(buf, p, len);
        if (sp) {
            memcpy(seals, sp, seals_len);
        }
    } else {
        memcpy(p, buf, len);
        if (sp) {
            memcpy(sp, seals, seals_len);
        }
    }
    pthread_rwlock_unlock(&s->lock);
    return 0;
}

void sd_store_stats(struct sd_store *s, struct sd_store_stats *out)
{
    pthread_rwlock_rdlock(&s->lock);
    out->capacity = s->capacity;
    out->used = s->used;
    out->seals = s->seals;
    out->grants = s->grants;
    out->slabs = s->slabs;
    pthread_rwlock_unlock(&s->lock);
    out->refused = __atomic_load_n(&s->refused, __ATOMIC_RELAXED);
}

int sd_store_set_mr_hook(struct sd_store *s,
                         const struct sd_store_mr_hook *hook)
{
    unsigned b;
    struct grant *g;
    int err = 0;

    pthread_rwlock_wrlock(&s->lock);
    if (!hook) {
        for (b = 0; b < GRANT_BUCKETS && s->hooked; b++) {
            for (g = s->buckets[b]; g; g = g->next) {
                region_dereg(&s->hook, g);
            }
        }
        s->hooked = 0;
        goto out;
    }
    if (s->hooked) {
        err = -EBUSY;
        goto out;
    }
    for (b = 0; b < GRANT_BUCKETS && err == 0; b++) {
        for (g = s->buckets[b]; g && err == 0; g = g->next) {
            if (g->base) {
                err = region_reg(hook, g);
            }
        }
    }
    if (err < 0) {
        /* Undo the ones made: no half-registered store. */
        for (b = 0; b < GRANT_BUCKETS; b++) {
            for (g = s->buckets[b]; g; g = g->next) {
                region_dereg(hook, g);
            }
        }
        goto out;
    }
    s->hook = *hook;
    s->hooked = 1;
out:
    pthread_rwlock_unlock(&s->lock);
    return err;
}

int sd_store_region(struct sd_store *s, const uint8_t grant[SD_UUID_LEN],
                    const uint8_t key[SD_KEY_LEN],
                    struct sd_store_region *out)
{
    struct grant *g;
    int err = 0;

    pthread_rwlock_rdlock(&s->lock);
    g = grant_checked(s, grant, key);
    if (!g) {
        err = -EACCES;
    } else if (!g->mr) {
        err = -ENOENT;
    } else {
        out->base = (uint64_t)(uintptr_t)g->base;
        out->len = g->region_len;
        out->key = g->mr_key;
        out->seals = (uint64_t)(uintptr_t)g->seals;
        out->seals_len = g->seals_len;
        out->seals_key = g->seals_key;
    }
    pthread_rwlock_unlock(&s->lock);
    return err;
}
