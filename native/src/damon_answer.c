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
 * What a kdamond answers to an update_schemes_tried_* command: the bytes
 * of the regions its scheme matched (tried_bytes) or, with
 * update_schemes_tried_regions, each region (a directory each under
 * tried_regions), unless it watched regions memagg did not set
 * (FOREIGN_SCHEME); and the CPU time its thread spent.  The same regions
 * through the kdamond's trace event are damon_trace.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "damon_internal.h"
#include "ms.h"

/* Nanoseconds the thread has spent on a CPU, from /proc/PID/schedstat. */
uint64_t ms_thread_cpu_ns(int pid)
{
    char path[160], *buf;
    size_t len, i;
    uint64_t ns = 0;

    snprintf(path, sizeof(path), "%s/%d/schedstat", ms_paths.proc, pid);
    if (ms_read_file(path, &buf, &len, NULL, 0) != 0) {
        return 0;
    }
    for (i = 0; i < len && buf[i] != ' '; i++) {
    }
    if (ms_parse_u64(buf, i, &ns) != 0) {
        ns = 0;
    }
    free(buf);
    return ns;
}

/* A number from the file rel under directory dirfd. */
static int read_u64_at(int dirfd, const char *rel, uint64_t *out)
{
    char buf[32];
    ssize_t got;
    int fd, ret;

    fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    got = read(fd, buf, sizeof(buf));
    if (got < 0) {
        ret = -errno;
    } else if ((size_t)got == sizeof(buf)) {
        ret = -EINVAL;          /* longer than any number */
    } else {
        ret = ms_parse_u64(buf, (size_t)got, out);
    }
    close(fd);
    return ret;
}

/* A tried region's directory: its number, in decimal. */
static int is_region_dir(const char *name)
{
    size_t len = strspn(name, "0123456789");

    return len > 0 && len < 16 && name[len] == '\0';
}

/*
 * Call fn(start, end, arg) for each region the scheme of slot i tried,
 * which its access pattern limits to regions with at least one access.
 * Their directories are numbered with gaps: list them.  Each sysfs file
 * read costs about 7 us here: when total_bytes says that every region is
 * one page (DAMON's smallest), only their starts are read.
 */
int ms_for_each_tried(int i, int scheme,
                      void (*fn)(uint64_t, uint64_t, void *), void *arg,
                      char *err, size_t errlen)
{
    char p[512], rel[48];
    uint64_t start, end, total = 0, nr = 0;
    struct dirent *de;
    DIR *dir;
    int ret = 0, one_page;

    snprintf(rel, sizeof(rel), "contexts/0/schemes/%d/tried_regions", scheme);
    ms_slot_path(p, sizeof(p), i, rel);
    dir = opendir(p);
    if (!dir) {
        ret = -errno;
        ms_err(err, errlen, "cannot open %s: %s", p, strerror(errno));
        return ret;
    }
    while ((de = readdir(dir))) {
        nr += is_region_dir(de->d_name);
    }
    rewinddir(dir);
    one_page = read_u64_at(dirfd(dir), "total_bytes", &total) == 0 &&
               total == nr * MS_PAGE_SIZE;
    while (!ret && (de = readdir(dir))) {
        if (!is_region_dir(de->d_name)) {
            continue;
        }
        snprintf(rel, sizeof(rel), "%.15s/start", de->d_name);
        ret = read_u64_at(dirfd(dir), rel, &start);
        end = start + MS_PAGE_SIZE;
        if (ret == 0 && !one_page) {
            snprintf(rel, sizeof(rel), "%.15s/end", de->d_name);
            ret = read_u64_at(dirfd(dir), rel, &end);
        }
        if (ret) {
            ms_err(err, errlen, "cannot read DAMON tried region %s of %s: %s",
                   de->d_name, p, strerror(-ret));
        } else {
            fn(start, end, arg);
        }
    }
    closedir(dir);
    return ret;
}

#define FIRST_LEN 48

/* Keep the first region listed, as "[start, end)", in an empty buffer. */
static void keep_first(uint64_t start, uint64_t end, void *arg)
{
    char *buf = arg;

    if (!buf[0]) {
        snprintf(buf, FIRST_LEN, "[%#llx, %#llx)", (unsigned long long)start,
                 (unsigned long long)end);
    }
}

/*
 * After an update_schemes_tried_* command on slot i: reject the answer of
 * a kdamond that watched regions memagg did not set (FOREIGN_SCHEME), and
 * forget the slot's setup, so that its next start writes every file again.
 * The error names what was seen (the kdamond's pid now and at memagg's
 * start, the first foreign region listed, how many regions memagg wrote
 * and what sysfs holds), so that a rejection says who rewrote them.
 */
int ms_check_own_regions(int i, char *err, size_t errlen)
{
    char p[512], first[FIRST_LEN] = "";
    uint64_t bytes = 0, files = 0, start = 0, end = 0, kpid = 0;
    unsigned int wrote = ms_pool.slot[i].nr_regions;
    int ret;

    ms_slot_path(p, sizeof(p), i,
                 "contexts/0/schemes/1/tried_regions/total_bytes");
    ret = ms_read_u64_file(p, &bytes, err, errlen);
    if (ret == 0 && bytes) {
        ms_for_each_tried(i, FOREIGN_SCHEME, keep_first, first, NULL, 0);
        if (!first[0]) {
            /* update_schemes_tried_bytes lists none. */
            snprintf(first, sizeof(first), "none listed");
        }
        ms_slot_path(p, sizeof(p), i,
                     "contexts/0/targets/0/regions/nr_regions");
        ms_read_u64_file(p, &files, NULL, 0);
        ms_slot_path(p, sizeof(p), i,
                     "contexts/0/targets/0/regions/0/start");
        ms_read_u64_file(p, &start, NULL, 0);
        ms_slot_path(p, sizeof(p), i, "contexts/0/targets/0/regions/0/end");
        ms_read_u64_file(p, &end, NULL, 0);
        ms_slot_path(p, sizeof(p), i, "pid");
        ms_kread_u64(p, &kpid, NULL, 0);
        ms_err(err, errlen, "window rejected: kdamond %d (pid %llu, memagg "
               "started %d) watched %llu bytes in regions memagg did not "
               "set (first %s); memagg wrote %u regions, sysfs holds %llu, "
               "the first [%#llx, %#llx)", i, (unsigned long long)kpid,
               ms_pool.slot[i].kdamond_pid, (unsigned long long)bytes, first,
               wrote, (unsigned long long)files, (unsigned long long)start,
               (unsigned long long)end);
        ms_slot_forget(&ms_pool.slot[i]);
        ret = -EAGAIN;
    }
    return ret;
}

/*
 * After an update_schemes_tried_* command on slot i: *bytes, the bytes of
 * the regions its scheme 0 matched, unless the answer is rejected
 * (ms_check_own_regions()).
 */
int ms_own_tried_bytes(int i, uint64_t *bytes, char *err, size_t errlen)
{
    char p[512];
    int ret = ms_check_own_regions(i, err, errlen);

    if (ret == 0) {
        ms_slot_path(p, sizeof(p), i,
                     "contexts/0/schemes/0/tried_regions/total_bytes");
        ret = ms_read_u64_file(p, bytes, err, errlen);
    }
    return ret;
}

void ms_mark_slot_region(uint64_t start, uint64_t end, void *arg)
{
    struct marks *mk = arg;

    ms_mark_range(mk->starts, mk->n, start, end, mk->accessed);
}

/* Mark which of the n regions (sorted starts) were accessed. */
static int read_tried_regions(int i, const uint64_t *starts, unsigned int n,
                              unsigned char *accessed, char *err,
                              size_t errlen)
{
    struct marks mk = { starts, n, accessed };

    memset(accessed, 0, n);
    return ms_for_each_tried(i, 0, ms_mark_slot_region, &mk, err, errlen);
}

int ms_damon_collect(int i, const uint64_t *starts, unsigned int n,
                     unsigned char *accessed, struct ms_damon_result *res,
                     char *err, size_t errlen)
{
    struct slot *s = &ms_pool.slot[i];
    char p[512];
    uint64_t cpu_ns;
    int ret;

    if (!s->running) {
        ms_err(err, errlen, "DAMON slot %d is not monitoring", i);
        return -EINVAL;
    }
    ms_slot_path(p, sizeof(p), i, "state");
    ret = ms_kwrite(p, accessed ? "update_schemes_tried_regions"
                                : "update_schemes_tried_bytes", err, errlen);
    if (ret == 0) {
        ret = ms_own_tried_bytes(i, &res->accessed_bytes, err, errlen);
    }
    if (ret == 0 && accessed) {
        ret = read_tried_regions(i, starts, n, accessed, err, errlen);
    }
    res->kdamond_pid = s->kdamond_pid;
    cpu_ns = ms_thread_cpu_ns(s->kdamond_pid);
    res->kdamond_cpu_s = (double)cpu_ns / 1e9;
    return ret;
}
