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
 * blob for memagg's test guest: the data whose loss a test would see.
 *
 *   blob write MIB FILE   writes MIB MiB of pseudo-random bytes to FILE
 *   blob sum FILE         reads FILE again
 *   blob hold MIB HOT     writes MIB MiB of pseudo-random bytes to its own
 *                         anonymous memory, in order, then reads its last
 *                         HOT MiB again and again (one word per page)
 *                         until killed
 *
 * Each prints "mb=<N> sum=<16 hex digits>": N the data's size in whole
 * MiB, the sum a 64-bit hash of all its bytes (hold: once written). Exit
 * status 1 on an I/O or memory error (with its reason on stderr), 2 on a
 * bad command line.
 *
 * hold is a process whose oldest data is idle and whose newest is its
 * working set, in anonymous memory: a page of it swapped in keeps its
 * swap slot while it stays clean (tmpfs frees the slot at every swap-in,
 * so its pages land somewhere new each time they go out).
 *
 * Why not dd from /dev/urandom and md5sum: the guest is emulated (TCG),
 * where ChaCha20 and MD5 took most of its one vCPU's time in a fill or a
 * check. The tests need bytes of which no page is zero or equal to another
 * (the host would share those) and a sum that changes when any 8 bytes
 * change or move, not a cryptographic one: xoshiro256** makes the bytes,
 * seeded from /dev/urandom so that two fills differ, and the sum runs
 * xxHash64's round (multiply, rotate) in four lanes over 8-byte words.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1024 * 1024)

static const uint64_t P1 = 0x9E3779B185EBCA87ULL;
static const uint64_t P2 = 0xC2B2AE3D27D4EB4FULL;
static const uint64_t P3 = 0x165667B19E3779F9ULL;

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* The running sum: word i of the data goes to lane i % 4. */
struct sum {
    uint64_t lane[4];
    uint64_t bytes;
};

static void sum_init(struct sum *s)
{
    s->lane[0] = P1 + P2;
    s->lane[1] = P2;
    s->lane[2] = 0;
    s->lane[3] = -P1;
    s->bytes = 0;
}

/* len is a multiple of 32 but for the data's last piece, whose tail is
 * summed as if padded with zeros (its length is in the final mix). */
static void sum_update(struct sum *s, const unsigned char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i += 32) {
        uint64_t w[4] = {0, 0, 0, 0};
        int j;

        memcpy(w, buf + i, len - i < 32 ? len - i : 32);
        for (j = 0; j < 4; j++)
            s->lane[j] = rotl(s->lane[j] + w[j] * P2, 31) * P1;
    }
    s->bytes += len;
}

static uint64_t sum_final(const struct sum *s)
{
    uint64_t h = rotl(s->lane[0], 1) + rotl(s->lane[1], 7)
        + rotl(s->lane[2], 12) + rotl(s->lane[3], 18);

    h ^= s->bytes;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

static void report(const struct sum *s)
{
    printf("mb=%" PRIu64 " sum=%016" PRIx64 "\n", s->bytes / MIB,
           sum_final(s));
}

static int fail(const char *what, const char *path)
{
    fprintf(stderr, "blob: %s %s: %s\n", what, path, strerror(errno));
    return 1;
}

/* xoshiro256**: fast on an emulated vCPU, and never a zero page. */
static uint64_t next(uint64_t st[4])
{
    uint64_t out = rotl(st[1] * 5, 7) * 9;
    uint64_t t = st[1] << 17;

    st[2] ^= st[0];
    st[3] ^= st[1];
    st[1] ^= st[2];
    st[0] ^= st[3];
    st[2] ^= t;
    st[3] = rotl(st[3], 45);
    return out;
}

static int seed(uint64_t st[4])
{
    int rnd = open("/dev/urandom", O_RDONLY);

    if (rnd < 0)
        return fail("cannot open", "/dev/urandom");
    if (read(rnd, st, 4 * sizeof(*st)) != (ssize_t)(4 * sizeof(*st))) {
        close(rnd);
        return fail("cannot read", "/dev/urandom");
    }
    close(rnd);
    st[0] |= 1;  /* xoshiro's state must not be all zeros */
    return 0;
}

static int write_all(int fd, const unsigned char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int blob_write(long mib, const char *path, uint64_t *words)
{
    unsigned char *buf = (unsigned char *)words;
    uint64_t st[4];
    struct sum s;
    int fd;
    long m;

    if (seed(st))
        return 1;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return fail("cannot create", path);
    sum_init(&s);
    for (m = 0; m < mib; m++) {
        size_t i;

        for (i = 0; i < MIB / sizeof(uint64_t); i++)
            words[i] = next(st);
        sum_update(&s, buf, MIB);
        if (write_all(fd, buf, MIB) < 0) {
            close(fd);
            return fail("cannot write", path);
        }
    }
    if (close(fd) < 0)
        return fail("cannot write", path);
    report(&s);
    return 0;
}

static int blob_sum(const char *path, unsigned char *buf)
{
    struct sum s;
    int fd = open(path, O_RDONLY);

    if (fd < 0)
        return fail("cannot open", path);
    sum_init(&s);
    for (;;) {
        size_t have = 0;
        ssize_t n = 0;

        /* Whole buffers but for the last: a lane's words stay in order. */
        while (have < MIB) {
            n = read(fd, buf + have, MIB - have);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            have += (size_t)n;
        }
        if (n < 0) {
            close(fd);
            return fail("cannot read", path);
        }
        sum_update(&s, buf, have);
        if (have < MIB)
            break;
    }
    close(fd);
    report(&s);
    return 0;
}

static int blob_hold(long mib, long hot, uint64_t st[4])
{
    size_t len = (size_t)mib * MIB, first = (size_t)(mib - hot) * MIB;
    unsigned char *mem;
    uint64_t sink = 0;
    struct sum s;
    size_t off;

    mem = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return fail("cannot map", "anonymous memory");
    /* 4 KiB pages: each goes out to swap and comes back on its own. */
    madvise(mem, len, MADV_NOHUGEPAGE);
    sum_init(&s);
    for (off = 0; off < len; off += MIB) {
        uint64_t *words = (uint64_t *)(mem + off);
        size_t i;

        for (i = 0; i < MIB / sizeof(uint64_t); i++)
            words[i] = next(st);
        sum_update(&s, mem + off, MIB);
    }
    report(&s);
    fflush(stdout);
    for (;;) {
        for (off = first; off < len; off += 4096)
            sink += *(volatile uint64_t *)(mem + off);
        /* Never true: keeps the reads from being optimised away. */
        if (sink == 1)
            putchar('.');
    }
}

/* A whole number of MiB from 0 to 65536 in arg, or -1 (said why). */
static long mib_arg(const char *what, const char *arg)
{
    char *end;
    long mib;

    errno = 0;
    mib = strtol(arg, &end, 10);
    if (errno || *end || end == arg || mib < 0 || mib > 65536) {
        fprintf(stderr, "blob: %s must be a whole number from 0 to "
                "65536, not '%s'\n", what, arg);
        return -1;
    }
    return mib;
}

static int usage(void)
{
    fprintf(stderr, "usage: blob write MIB FILE | blob sum FILE | "
            "blob hold MIB HOT\n");
    return 2;
}

int main(int argc, char **argv)
{
    static uint64_t buf[MIB / sizeof(uint64_t)];

    if (argc == 4 && strcmp(argv[1], "write") == 0) {
        long mib = mib_arg("MIB", argv[2]);

        return mib < 0 ? 2 : blob_write(mib, argv[3], buf);
    }
    if (argc == 4 && strcmp(argv[1], "hold") == 0) {
        long mib = mib_arg("MIB", argv[2]), hot = mib_arg("HOT", argv[3]);
        uint64_t st[4];

        if (mib < 0 || hot < 0)
            return 2;
        if (hot > mib) {
            fprintf(stderr, "blob: HOT (%ld) must not exceed MIB (%ld)\n",
                    hot, mib);
            return 2;
        }
        return seed(st) ? 1 : blob_hold(mib, hot, st);
    }
    if (argc == 3 && strcmp(argv[1], "sum") == 0)
        return blob_sum(argv[2], (unsigned char *)buf);
    return usage();
}
