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
 * Sharing DAMON's sysfs tree with its other users.
 *
 * The tree has one count of kdamonds for the whole machine, and writing it
 * (which memagg must, to have kdamonds of its own) recreates every kdamond
 * directory empty, and is refused while any kdamond runs.  Another DAMON
 * user (damo, a platform's memory monitor) would lose its kdamond and,
 * finding it gone or changed, write its set-up into whichever kdamond now
 * holds its index: memagg's, under a running window.  So a kdamond that
 * holds a set-up memagg did not write is kept: its writable files are
 * read before the count changes and written back after, and it runs again
 * if it ran.  memagg's own kdamonds come after the kept ones.
 *
 * memagg's set-ups are known by their update interval of an hour (AGGR_US),
 * which no monitoring tool uses: a kdamond with one that is found running
 * when the pool is made was left by a memagg process that died, and is
 * turned off rather than kept.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "damon_internal.h"
#include "ms.h"

/* Deep enough for contexts/N/schemes/N/quotas/goals/N/file. */
#define MAX_DEPTH 10
/* A kept set-up's files (a few thousand regions at most, in practice). */
#define MAX_FILES 200000

static void kdamond_path(char *buf, size_t len, int index, const char *rel)
{
    snprintf(buf, len, "%s/kdamonds/%d/%s", ms_paths.damon, index, rel);
}

int ms_kdamond_is_on(int index)
{
    char path[512], *buf;
    size_t len;
    int on = 0;

    kdamond_path(path, sizeof(path), index, "state");
    if (ms_kread(path, &buf, &len, NULL, 0) == 0) {
        on = len >= 2 && memcmp(buf, "on", 2) == 0;
        free(buf);
    }
    return on;
}

int ms_kdamond_is_others(int index)
{
    char path[512];
    uint64_t nr = 0, update_us = 0;

    kdamond_path(path, sizeof(path), index, "contexts/nr_contexts");
    if (ms_read_u64_file(path, &nr, NULL, 0) != 0 || nr == 0) {
        return 0;       /* no set-up: nothing to keep */
    }
    kdamond_path(path, sizeof(path), index,
                 "contexts/0/monitoring_attrs/intervals/update_us");
    return ms_read_u64_file(path, &update_us, NULL, 0) != 0 ||
           update_us < AGGR_US;
}

static int is_number(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

struct entry {
    char name[256];
    int rank;           /* 0: a count (nr_*), 1: another file, 2: a dir */
};

/*
 * Counts first, since writing one makes the directories it counts; then
 * the other files; then the directories, numbered ones in their order.
 */
static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;

    if (x->rank != y->rank) {
        return x->rank - y->rank;
    }
    if (is_number(x->name) && is_number(y->name)) {
        unsigned long m = strtoul(x->name, NULL, 10);
        unsigned long n = strtoul(y->name, NULL, 10);

        return m < n ? -1 : m > n;
    }
    return strcmp(x->name, y->name);
}

static int add_file(struct kept_kdamond *k, const char *rel, char *val)
{
    if (k->n == k->cap) {
        unsigned int cap = k->cap ? k->cap * 2 : 64;
        char **rels = realloc(k->rel, sizeof(*rels) * cap);
        char **vals;

        if (!rels) {
            return -ENOMEM;
        }
        k->rel = rels;
        vals = realloc(k->val, sizeof(*vals) * cap);
        if (!vals) {
            return -ENOMEM;
        }
        k->val = vals;
        k->cap = cap;
    }
    k->rel[k->n] = strdup(rel);
    if (!k->rel[k->n]) {
        return -ENOMEM;
    }
    k->val[k->n++] = val;
    return 0;
}

static int save_dir(struct kept_kdamond *k, const char *rel, int depth)
{
    char path[1024], sub[768], *buf, *val;
    struct entry *ents = NULL;
    unsigned int n = 0, cap = 0, e;
    struct dirent *de;
    struct stat st;
    size_t len;
    DIR *d;
    int ret = 0;

    if (depth > MAX_DEPTH) {
        return -ELOOP;
    }
    kdamond_path(path, sizeof(path), k->index, rel);
    d = opendir(path);
    if (!d) {
        return -errno;
    }
    while ((de = readdir(d)) != NULL) {
        int rank;

        if (de->d_name[0] == '.' ||
            fstatat(dirfd(d), de->d_name, &st, 0) != 0) {
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            /* What DAMON answers, not what it was told. */
            if (strcmp(de->d_name, "stats") == 0 ||
                strcmp(de->d_name, "tried_regions") == 0) {
                continue;
            }
            rank = 2;
        } else if (!(st.st_mode & S_IWUSR) ||
                   (depth == 0 && strcmp(de->d_name, "state") == 0)) {
            continue;   /* read-only, or written last by whoever restores */
        } else {
            rank = strncmp(de->d_name, "nr_", 3) == 0 ? 0 : 1;
        }
        if (n == cap) {
            struct entry *more;

            cap = cap ? cap * 2 : 16;
            more = realloc(ents, sizeof(*ents) * cap);
            if (!more) {
                ret = -ENOMEM;
                break;
            }
            ents = more;
        }
        snprintf(ents[n].name, sizeof(ents[n].name), "%s", de->d_name);
        ents[n++].rank = rank;
    }
    closedir(d);
    if (ret == 0) {
        qsort(ents, n, sizeof(*ents), entry_cmp);
    }
    for (e = 0; e < n && ret == 0; e++) {
        if (snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "",
                     ents[e].name) >= (int)sizeof(sub)) {
            ret = -ENAMETOOLONG;
            break;
        }
        if (ents[e].rank == 2) {
            ret = save_dir(k, sub, depth + 1);
            continue;
        }
        if (k->n >= MAX_FILES) {
            ret = -E2BIG;
            break;
        }
        kdamond_path(path, sizeof(path), k->index, sub);
        if (ms_read_file(path, &buf, &len, NULL, 0) != 0) {
            continue;   /* a file that cannot be read cannot be restored */
        }
        while (len > 0 && buf[len - 1] == '\n') {
            len--;
        }
        val = strndup(buf, len);
        free(buf);
        ret = val ? add_file(k, sub, val) : -ENOMEM;
        if (ret) {
            free(val);
        }
    }
    free(ents);
    return ret;
}

int ms_kdamond_save(int index, struct kept_kdamond *k, char *err,
                    size_t errlen)
{
    int ret;

    memset(k, 0, sizeof(*k));
    k->index = index;
    k->on = ms_kdamond_is_on(index);
    ret = save_dir(k, "", 0);
    if (ret) {
        ms_err(err, errlen, "cannot read the set-up of kdamond %d, another "
               "DAMON user's: %s", index, strerror(-ret));
        ms_kdamond_free(k);
    }
    return ret;
}

int ms_kdamond_restore(const struct kept_kdamond *k)
{
    char path[1024];
    unsigned int f;
    int failed = 0;

    for (f = 0; f < k->n; f++) {
        kdamond_path(path, sizeof(path), k->index, k->rel[f]);
        /* A file the kernel refuses back (an empty path) is all it loses. */
        failed += ms_kwrite(path, k->val[f], NULL, 0) != 0;
    }
    if (k->on) {
        kdamond_path(path, sizeof(path), k->index, "state");
        failed += ms_kwrite(path, "on", NULL, 0) != 0;
    }
    return failed;
}

void ms_kdamond_free(struct kept_kdamond *k)
{
    unsigned int f;

    for (f = 0; f < k->n; f++) {
        free(k->rel[f]);
        free(k->val[f]);
    }
    free(k->rel);
    free(k->val);
    memset(k, 0, sizeof(*k));
}
