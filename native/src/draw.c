/* Choice of n distinct random pages out of a range, sorted. */
#include <errno.h>
#include <stdlib.h>

#include "ms.h"

/* splitmix64: small, fast and good enough to pick pages. */
uint64_t ms_rand_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static unsigned int sort_unique(uint64_t *v, unsigned int n)
{
    unsigned int i, out = 0;

    qsort(v, n, sizeof(*v), cmp_u64);
    for (i = 0; i < n; i++) {
        if (!out || v[out - 1] != v[i]) {
            v[out++] = v[i];
        }
    }
    return out;
}

int ms_draw_pages(uint64_t *state, uint64_t nr_pages, unsigned int n,
                  uint64_t *out, unsigned int *nr_out)
{
    unsigned int have = 0;
    uint64_t i;

    if (!nr_pages || !n) {
        return -EINVAL;
    }
    if (n >= nr_pages) {
        for (i = 0; i < nr_pages; i++) {
            out[i] = i;
        }
        *nr_out = (unsigned int)nr_pages;
        return 0;
    }
    if ((uint64_t)n * 2 > nr_pages) {
        /* Dense: selection sampling keeps each page with the right odds. */
        for (i = 0; i < nr_pages && have < n; i++) {
            if (ms_rand_next(state) % (nr_pages - i) < n - have) {
                out[have++] = i;
            }
        }
        *nr_out = have;
        return 0;
    }
    /* Sparse: draw, drop duplicates, top up; converges in a few rounds. */
    while (have < n) {
        while (have < n) {
            out[have++] = ms_rand_next(state) % nr_pages;
        }
        have = sort_unique(out, have);
    }
    *nr_out = have;
    return 0;
}
