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
 * Tests of the donor store: allocation (whole, partial, exhausted), release
 * of some and all slabs, the key check (wrong and freed keys refused,
 * counted, logged once per grant), bounds, the RDMA registration hook,
 * and concurrent access while grants come and go.
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "check.h"
#include "donor.h"
#include "seal.h"
#include "store.h"

#define SLAB (64 * 1024ULL)
/* The seals beside a slab's pages. */
#define SEALS (SLAB / SD_PAGE_SIZE * SD_SEAL_LEN)

static void make_id(uint8_t *out, size_t n, uint8_t seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        out[i] = (uint8_t)(seed * 31 + i);
    }
}

/* Run fn with stderr sent to a file; return how many lines contain word. */
static int log_lines(void (*fn)(void *), void *arg, const char *word)
{
    char path[] = "/tmp/sd-store-log-XXXXXX", line[1024];
    int fd = mkstemp(path), saved = dup(2), n = 0;
    FILE *f;

    fflush(stderr);
    dup2(fd, 2);
    fn(arg);
    dup2(saved, 2);
    close(saved);
    f = fdopen(fd, "r");
    rewind(f);
    while (fgets(line, sizeof(line), f)) {
        n += strstr(line, word) != NULL;
    }
    fclose(f);
    unlink(path);
    return n;
}

static void test_alloc(void)
{
    struct sd_store *s;
    struct sd_store_stats st;
    uint8_t ga[SD_UUID_LEN], gb[SD_UUID_LEN], gc[SD_UUID_LEN];
    uint8_t key[SD_KEY_LEN];
    uint32_t idx[] = { 5, 1, 9 }, dup_idx[] = { 3, 3 };
    uint64_t addrs[3];
    size_t done = 99;

    make_id(ga, sizeof(ga), 1);
    make_id(gb, sizeof(gb), 2);
    make_id(gc, sizeof(gc), 3);
    make_id(key, sizeof(key), 7);
    CHECK(sd_store_new(4 * SLAB, &s) == 0);

    CHECK(sd_store_alloc(s, ga, key, SLAB, idx, 3, addrs, &done) == 0);
    CHECK(done == 3);
    CHECK(addrs[0] && addrs[1] == addrs[0] + SLAB && addrs[2] == addrs[1] + SLAB);
    sd_store_stats(s, &st);
    CHECK(st.capacity == 4 * SLAB && st.used == 3 * SLAB &&
          st.seals == 3 * SEALS);
    CHECK(st.grants == 1 && st.slabs == 3 && st.refused == 0);

    /* Only one slab of capacity is left: a partial grant, in order. */
    CHECK(sd_store_alloc(s, gb, key, SLAB, idx, 3, addrs, &done) == 0);
    CHECK(done == 1);
    sd_store_stats(s, &st);
    CHECK(st.used == 4 * SLAB && st.seals == 4 * SEALS && st.grants == 2 &&
          st.slabs == 4);

    /* None left. */
    CHECK(sd_store_alloc(s, gc, key, SLAB, idx, 1, addrs, &done) ==
          -ENOMEM);
    CHECK(done == 0);
    /* A grant that already has slabs here. */
    CHECK(sd_store_alloc(s, ga, key, SLAB, idx, 1, addrs, &done) ==
          -EEXIST);
    CHECK(sd_store_alloc(s, gc, key, 0, idx, 1, addrs, &done) ==
          -EINVAL);
    CHECK(sd_store_alloc(s, gc, key, 1000, idx, 1, addrs, &done) ==
          -EINVAL);
    CHECK(sd_store_alloc(s, gc, key, SLAB, idx, 0, addrs, &done) ==
          -EINVAL);
    sd_store_stats(s, &st);
    CHECK(st.grants == 2 && st.slabs == 4);

    /* Freeing all of b makes room; a slab asked for twice is refused. */
    CHECK(sd_store_release(s, gb, NULL, 0) == 0);
    CHECK(sd_store_alloc(s, gc, key, SLAB, dup_idx, 2, addrs, &done) ==
          -EINVAL);
    CHECK(sd_store_alloc(s, gc, key, SLAB, idx, 1, addrs, &done) == 0);
    CHECK(done == 1);
    sd_store_stats(s, &st);
    CHECK(st.used == 4 * SLAB && st.seals == 4 * SEALS && st.grants == 2);

    /* A freed slab is lent again to its grant, at its address, once
     * there is room; not a slab it holds or never had here, nor under
     * another key or slab size. */
    CHECK(sd_store_alloc(s, ga, key, SLAB, idx, 3, addrs, &done) ==
          -EEXIST);
    {
        uint64_t again[2], was[3];
        uint32_t nine_five[] = { 9, 5 }, seven[] = { 7 };
        uint8_t other[SD_KEY_LEN];

        make_id(other, sizeof(other), 8);
        CHECK(sd_store_release(s, gc, NULL, 0) == 0);
        CHECK(sd_store_alloc(s, ga, key, SLAB, seven, 1, again, &done) ==
              -EEXIST);
        CHECK(sd_store_alloc(s, ga, key, SLAB, idx, 1, again, &done) ==
              -EEXIST);
        CHECK(sd_store_release(s, ga, nine_five, 2) == 0);
        CHECK(sd_store_alloc(s, ga, other, SLAB, nine_five, 2, again,
                             &done) == -EEXIST);
        CHECK(sd_store_alloc(s, ga, key, 2 * SLAB, nine_five, 2, again,
                             &done) == -EEXIST);
        CHECK(sd_store_alloc(s, ga, key, SLAB, nine_five, 2, again,
                             &done) == 0 && done == 2);
        /* idx 5 was the region's first slab, 9 its third. */
        CHECK(sd_store_alloc(s, ga, key, SLAB, idx + 1, 1, was, &done) ==
              -EEXIST);
        CHECK(again[1] + 2 * SLAB == again[0]);
        sd_store_stats(s, &st);
        CHECK(st.used == 3 * SLAB && st.grants == 1 && st.slabs == 3);
        /* All freed: the grant is lent new slabs. */
        CHECK(sd_store_release(s, ga, idx, 3) == 0);
        CHECK(sd_store_alloc(s, ga, key, SLAB, seven, 1, again, &done) ==
              0 && done == 1);
        sd_store_stats(s, &st);
        CHECK(st.used == SLAB && st.grants == 1 && st.slabs == 1);
    }
    sd_store_free(s);

    /* A slab size no address space holds fails cleanly. */
    CHECK(sd_store_new(UINT64_MAX, &s) == 0);
    CHECK(sd_store_alloc(s, ga, key, 1ULL << 62, idx, 3, addrs, &done) == -ENOMEM);
    sd_store_free(s);
}

struct refuse_args {
    struct sd_store *s;
    const uint8_t *grant, *key;
    int n;
};

static void refuse_n(void *arg)
{
    struct refuse_args *a = arg;
    uint8_t buf[16];
    int i;

    for (i = 0; i < a->n; i++) {
        sd_store_access(a->s, SD_OP_READ, a->grant, a->key, 5, 0, buf, 16,
                        NULL);
    }
}

static void test_access(void)
{
    struct sd_store *s;
    struct sd_store_stats st;
    uint8_t g[SD_UUID_LEN], key[SD_KEY_LEN], wrong[SD_KEY_LEN];
    uint8_t got[SD_KEY_LEN];
    uint32_t idx[] = { 5, 1, 9 }, some[] = { 5, 42 };
    uint64_t addrs[3];
    size_t done;
    char in[8192], out[8192];
    struct refuse_args ra;

    make_id(g, sizeof(g), 1);
    make_id(key, sizeof(key), 7);
    memcpy(wrong, key, sizeof(wrong));
    wrong[SD_KEY_LEN - 1] ^= 1;
    memset(in, 'x', sizeof(in));
    CHECK(sd_store_new(16 * SLAB, &s) == 0);
    CHECK(sd_store_alloc(s, g, key, SLAB, idx, 3, addrs, &done) == 0);

    /* Never-written memory reads as zeros. */
    memset(out, 1, sizeof(out));
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, 0, out, 4096, NULL) == 0);
    CHECK(out[0] == 0 && out[4095] == 0);

    CHECK(sd_store_access(s, SD_OP_WRITE, g, key, 9, SLAB - 8192, in,
                          8192, NULL) == 0);
    CHECK(sd_store_access(s, SD_OP_WRITE, g, key, 1, 0, "one", 4, NULL) == 0);
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, SLAB - 8192, out,
                          8192, NULL) == 0);
    CHECK(memcmp(in, out, sizeof(in)) == 0);
    /* The slab's address is where the data is (what RDMA reaches). */
    CHECK(memcmp((const char *)(uintptr_t)addrs[1], "one", 4) == 0);

    /* Bounds. */
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, SLAB - 10, out, 20,
                          NULL) ==
          -ERANGE);
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, SLAB + 1, out, 0, NULL) ==
          -ERANGE);
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, UINT64_MAX, out, 2,
                          NULL) ==
          -ERANGE);
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, SLAB, out, 0, NULL) == 0);
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 7, 0, out, 16,
                          NULL) == -ENOENT);
    CHECK(sd_store_access(s, 3, g, key, 9, 0, out, 16, NULL) == -EINVAL);

    /* Seals: kept beside the pages, whole pages only, never looked at. */
    {
        uint8_t seals[2 * SD_SEAL_LEN], back[2 * SD_SEAL_LEN];

        memset(seals, 0xa5, sizeof(seals));
        seals[SD_SEAL_LEN] = 0x17;
        CHECK(sd_store_access(s, SD_OP_WRITE, g, key, 5, SLAB - 8192, in,
                              8192, seals) == 0);
        /* An unsealed write of the same pages leaves the seals alone. */
        CHECK(sd_store_access(s, SD_OP_WRITE, g, key, 5, SLAB - 4096, in,
                              16, NULL) == 0);
        memset(back, 0, sizeof(back));
        CHECK(sd_store_access(s, SD_OP_READ, g, key, 5, SLAB - 4096, out,
                              4096, back) == 0);
        CHECK(memcmp(back, seals + SD_SEAL_LEN, SD_SEAL_LEN) == 0);
        CHECK(memcmp(out, in, 4096) == 0);
        /* Another slab's seals, never written: zeros. */
        CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, 0, out, 4096,
                              back) == 0);
        CHECK(back[0] == 0 && back[SD_SEAL_LEN - 1] == 0);
        CHECK(sd_store_access(s, SD_OP_READ, g, key, 5, 100, out, 4096,
                              back) == -EINVAL);
        CHECK(sd_store_access(s, SD_OP_READ, g, key, 5, 0, out, 100,
                              back) == -EINVAL);
        CHECK(sd_store_access(s, SD_OP_READ, g, key, 5, SLAB, out, 4096,
                              back) == -ERANGE);
        memset(out, 0, 4096);
        CHECK(sd_store_access(s, SD_OP_WRITE, g, key, 5, SLAB - 4096, out,
                              4096, NULL) == 0);
    }

    /* A wrong key: refused, counted each time, logged once. */
    ra = (struct refuse_args){ s, g, wrong, 3 };
    CHECK(log_lines(refuse_n, &ra, "wrong key") == 1);
    CHECK(sd_store_access(s, SD_OP_WRITE, g, wrong, 9, 0, in, 16,
                          NULL) == -EACCES);
    sd_store_stats(s, &st);
    CHECK(st.refused == 4);
    /* and no write happened. */
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, 0, out, 16, NULL) == 0);
    CHECK(out[0] == 0);

    /* Release some: freed (and unknown) slabs are gone, others keep
     * their data; freeing twice is fine. */
    CHECK(sd_store_release(s, g, some, 2) == 0);
    CHECK(sd_store_release(s, g, some, 1) == 0);
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 5, 0, out, 16,
                          NULL) == -ENOENT);
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 1, 0, out, 4, NULL) == 0);
    CHECK(memcmp(out, "one", 4) == 0);
    sd_store_stats(s, &st);
    CHECK(st.used == 2 * SLAB && st.seals == 2 * SEALS && st.slabs == 2 &&
          st.grants == 1);

    /* Release the rest one by one: the region goes, the grant's key is
     * still checked until the grant is forgotten. */
    some[0] = 1;
    some[1] = 9;
    CHECK(sd_store_release(s, g, some, 2) == 0);
    sd_store_stats(s, &st);
    CHECK(st.used == 0 && st.seals == 0 && st.slabs == 0 && st.grants == 1);
    CHECK(sd_store_access(s, SD_OP_READ, g, key, 9, 0, out, 16,
                          NULL) == -ENOENT);
    CHECK(sd_store_access(s, SD_OP_READ, g, wrong, 9, 0, out, 16,
                          NULL) == -EACCES);

    /* The transport's header check: the grant's key is given out, counted
     * nothing; a frame whose tag failed is counted as a wrong key. */
    CHECK(sd_store_key(s, g, got) == 0 && memcmp(got, key, SD_KEY_LEN) == 0);
    sd_store_wrong_key(s, g);
    sd_store_stats(s, &st);
    CHECK(st.refused == 6);

    /* Forgotten: its own key is refused now and counted, but not logged
     * here (anyone can name a grant: the transport reports those per
     * peer, rate-limited). */
    CHECK(sd_store_release(s, g, NULL, 0) == 0);
    CHECK(sd_store_release(s, g, NULL, 0) == -ENOENT);
    ra = (struct refuse_args){ s, g, key, 2 };
    CHECK(log_lines(refuse_n, &ra, "grant") == 0);
    CHECK(sd_store_key(s, g, got) == -EACCES);
    sd_store_wrong_key(s, g);           /* no grant: nothing to count */
    sd_store_stats(s, &st);
    CHECK(st.refused == 9 && st.grants == 0 && st.used == 0);
    sd_store_free(s);
}

struct hook_state {
    int regs, deregs, fail;
    size_t bytes;
};

static int fake_reg(void *ctx, void *addr, size_t len, uint64_t *key,
                    void **handle)
{
    struct hook_state *h = ctx;

    if (h->fail && h->regs + 1 >= h->fail) {
        return -EIO;
    }
    h->regs++;
    h->bytes += len;
    *key = 0x7700000000000000ULL + (uint64_t)h->regs;
    *handle = addr;
    return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
    struct hook_state *h = ctx;

    h->deregs += handle != NULL;
}

static void test_hook(void)
{
    struct sd_store *s;
    struct hook_state h = { 0 };
    struct sd_store_mr_hook hook = { fake_reg, fake_dereg, &h };
    struct sd_store_region r;
    struct sd_store_stats st;
    uint8_t g1[SD_UUID_LEN], g2[SD_UUID_LEN], g3[SD_UUID_LEN];
    uint8_t key[SD_KEY_LEN], wrong[SD_KEY_LEN];
    uint32_t idx[] = { 0, 1 };
    uint64_t addrs[2];
    size_t done;
    const size_t seals = 2 * SLAB / SD_PAGE_SIZE * SD_SEAL_LEN;

    make_id(g1, sizeof(g1), 1);
    make_id(g2, sizeof(g2), 2);
    make_id(g3, sizeof(g3), 3);
    make_id(key, sizeof(key), 7);
    make_id(wrong, sizeof(wrong), 8);
    CHECK(sd_store_new(16 * SLAB, &s) == 0);
    CHECK(sd_store_alloc(s, g1, key, SLAB, idx, 2, addrs, &done) == 0);
    /* Nothing registered without a hook. */
    CHECK(sd_store_region(s, g1, key, &r) == -ENOENT);

    /* Setting the hook registers the grant already there: its slabs and
     * their seals. */
    CHECK(sd_store_set_mr_hook(s, &hook) == 0);
    CHECK(h.regs == 2 && h.bytes == 2 * SLAB + seals);
    CHECK(sd_store_set_mr_hook(s, &hook) == -EBUSY);
    CHECK(sd_store_region(s, g1, key, &r) == 0);
    CHECK(r.base == addrs[0] && r.len == 2 * SLAB && r.seals_len == seals &&
          r.key == 0x7700000000000001ULL &&
          r.seals_key == 0x7700000000000002ULL && r.seals != 0);
    /* Only with the grant's key, counted as a refusal otherwise. */
    CHECK(sd_store_region(s, g1, wrong, &r) == -EACCES);
    CHECK(sd_store_region(s, g3, key, &r) == -EACCES);
    sd_store_stats(s, &st);
    CHECK(st.refused == 2);
    /* A new grant gets its two regions and keys. */
    CHECK(sd_store_alloc(s, g2, key, SLAB, idx, 2, addrs, &done) == 0);
    CHECK(h.regs == 4);
    CHECK(sd_store_region(s, g2, key, &r) == 0 &&
          r.key == 0x7700000000000003ULL);
    /* A failed registration (the seals') fails the allocation and leaks
     * nothing: the data's is undone. */
    h.fail = 6;
    CHECK(sd_store_alloc(s, g3, key, SLAB, idx, 2, addrs, &done) ==
          -EIO);
    CHECK(h.regs == 5 && h.deregs == 1);
    h.fail = 0;
    /* The regions are deregistered when the last slab goes. */
    CHECK(sd_store_release(s, g2, idx, 1) == 0);
    CHECK(h.deregs == 1);
    CHECK(sd_store_release(s, g2, idx + 1, 1) == 0);
    CHECK(h.deregs == 3);
    CHECK(sd_store_region(s, g2, key, &r) == -ENOENT);
    /* Clearing deregisters the rest. */
    CHECK(sd_store_set_mr_hook(s, NULL) == 0);
    CHECK(h.deregs == 5);
    CHECK(sd_store_alloc(s, g3, key, SLAB, idx, 2, addrs, &done) == 0);
    CHECK(h.regs == 5);
    /* A hook that fails on the grants there is not set. */
    h.fail = 7;
    CHECK(sd_store_set_mr_hook(s, &hook) == -EIO);
    CHECK(h.regs == 6 && h.deregs == 6);
    h.fail = 0;
    h.regs = h.deregs = 0;
    CHECK(sd_store_set_mr_hook(s, &hook) == 0);
    CHECK(h.regs == 4);
    sd_store_free(s);
    CHECK(h.deregs == 4);
}

/* Concurrency: readers/writers check their own slabs' data while another
 * thread allocates and frees other grants. */
struct worker {
    struct sd_store *s;
    uint8_t grant[SD_UUID_LEN], key[SD_KEY_LEN];
    uint32_t slab;
    int errors;
};

static int stop_churn;

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned char in[4096], out[4096];
    int i;

    for (i = 0; i < 3000; i++) {
        uint64_t off = (uint64_t)(i * 4096) % SLAB;

        memset(in, (int)(w->slab * 7 + (unsigned)i), sizeof(in));
        if (sd_store_access(w->s, SD_OP_WRITE, w->grant, w->key, w->slab,
                            off, in, sizeof(in), NULL) != 0 ||
            sd_store_access(w->s, SD_OP_READ, w->grant, w->key, w->slab,
                            off, out, sizeof(out), NULL) != 0 ||
            memcmp(in, out, sizeof(in)) != 0) {
            w->errors++;
        }
    }
    return NULL;
}

static void *churn_main(void *arg)
{
    struct sd_store *s = arg;
    uint8_t g[SD_UUID_LEN], key[SD_KEY_LEN];
    uint32_t idx[] = { 0, 1, 2 };
    uint64_t addrs[3];
    size_t done;
    uint8_t seed = 100;

    make_id(key, sizeof(key), 9);
    while (!__atomic_load_n(&stop_churn, __ATOMIC_RELAXED)) {
        make_id(g, sizeof(g), seed++);
        if (sd_store_alloc(s, g, key, SLAB, idx, 3, addrs, &done) == 0) {
            sd_store_release(s, g, idx, 1);
            sd_store_release(s, g, NULL, 0);
        }
    }
    return NULL;
}

static void test_concurrency(void)
{
    struct sd_store *s;
    struct sd_store_stats st;
    struct worker w[4];
    pthread_t t[4], churn;
    uint8_t g[SD_UUID_LEN], key[SD_KEY_LEN];
    uint32_t idx[] = { 0, 1, 2, 3 };
    uint64_t addrs[4];
    size_t done;
    int i, errors = 0;

    make_id(g, sizeof(g), 50);
    make_id(key, sizeof(key), 51);
    CHECK(sd_store_new(64 * SLAB, &s) == 0);
    CHECK(sd_store_alloc(s, g, key, SLAB, idx, 4, addrs, &done) == 0);
    pthread_create(&churn, NULL, churn_main, s);
    for (i = 0; i < 4; i++) {
        w[i] = (struct worker){ .s = s, .slab = (uint32_t)i };
        memcpy(w[i].grant, g, SD_UUID_LEN);
        memcpy(w[i].key, key, SD_KEY_LEN);
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        errors += w[i].errors;
    }
    __atomic_store_n(&stop_churn, 1, __ATOMIC_RELAXED);
    pthread_join(churn, NULL);
    CHECK(errors == 0);
    sd_store_stats(s, &st);
    CHECK(st.grants == 1 && st.slabs == 4 && st.used == 4 * SLAB &&
          st.seals == 4 * SEALS);
    sd_store_free(s);
}

int main(void)
{
    sd_log_level = LOG_WARNING;     /* the refusals, not every grant */
    test_alloc();
    test_access();
    test_hook();
    test_concurrency();
    return check_summary();
}
