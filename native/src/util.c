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

/* Small helpers for /proc and sysfs files. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ms.h"

void ms_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

double ms_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int ms_write_file(const char *path, const char *text, char *err,
                  size_t errlen)
{
    size_t len = strlen(text);
    ssize_t done;
    int fd, ret = 0;

    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        ret = -errno;
        ms_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return ret;
    }
    done = write(fd, text, len);
    if (done < 0) {
        ret = -errno;
        ms_err(err, errlen, "cannot write '%s' to %s: %s", text, path,
               strerror(errno));
    } else if ((size_t)done != len) {
        ret = -EIO;
        ms_err(err, errlen, "short write to %s", path);
    }
    close(fd);
    return ret;
}

int ms_read_file(const char *path, char **buf, size_t *len,
                 char *err, size_t errlen)
{
    size_t cap = 65536, used = 0;
    char *data = malloc(cap);
    int fd, ret = 0;

    if (!data) {
        ms_err(err, errlen, "out of memory reading %s", path);
        return -ENOMEM;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ret = -errno;
        ms_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
        free(data);
        return ret;
    }
    for (;;) {
        ssize_t got;

        if (used == cap) {
            char *bigger = realloc(data, cap * 2);

            if (!bigger) {
                ret = -ENOMEM;
                ms_err(err, errlen, "out of memory reading %s", path);
                break;
            }
            data = bigger;
            cap *= 2;
        }
        got = read(fd, data + used, cap - used);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            ret = -errno;
            ms_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
            break;
        }
        if (got == 0) {
            break;
        }
        used += (size_t)got;
    }
    close(fd);
    if (ret) {
        free(data);
        return ret;
    }
    *buf = data;
    *len = used;
    return 0;
}

int ms_read_u64_file(const char *path, uint64_t *out, char *err,
                     size_t errlen)
{
    return ms_read_u64_with(ms_read_file, path, out, err, errlen);
}

int ms_read_u64_with(ms_reader read, const char *path, uint64_t *out,
                     char *err, size_t errlen)
{
    char *buf;
    size_t len;
    int ret = read(path, &buf, &len, err, errlen);

    if (ret) {
        return ret;
    }
    ret = ms_parse_u64(buf, len, out);
    if (ret) {
        ms_err(err, errlen, "%s does not hold a number", path);
    }
    free(buf);
    return ret;
}

/* From /proc/PID/cgroup (parse.c), the root refused. */
int ms_pid_memcg(pid_t pid, char *out, size_t outlen, char *err,
                 size_t errlen)
{
    char path[160], *buf;
    size_t len;
    int ret;

    snprintf(path, sizeof(path), "%s/%d/cgroup", ms_paths.proc, (int)pid);
    ret = ms_read_file(path, &buf, &len, err, errlen);
    if (ret) {
        return ret == -ENOENT ? -ESRCH : ret;
    }
    ret = ms_cgroup_memcg(buf, len, out, outlen);
    free(buf);
    if (ret) {
        ms_err(err, errlen, "%s names no memory cgroup", path);
        return -EOPNOTSUPP;
    }
    if (strcmp(out, "/") == 0) {
        ms_err(err, errlen, "process %d is in the root memory cgroup, "
               "not one of its own", (int)pid);
        return -EOPNOTSUPP;
    }
    return 0;
}

int ms_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

size_t ms_sort_unique_u64(uint64_t *v, size_t n)
{
    size_t i, k = 0;

    qsort(v, n, sizeof(*v), ms_cmp_u64);
    for (i = 0; i < n; i++) {
        if (k == 0 || v[k - 1] != v[i]) {
            v[k++] = v[i];
        }
    }
    return k;
}
