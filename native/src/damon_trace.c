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
 * A kdamond's accessed regions through DAMON's damos_before_apply
 * tracepoint, in a tracefs instance of memagg's own (damon_paddr.c
 * decides when).
 *
 * update_schemes_tried_regions makes the kdamond create a sysfs directory
 * per region its scheme matched, which memagg then lists and reads: about
 * 15 us per accessed region, two thirds of it opening files (measured with
 * three members of the host's kdamond, 1,000 accessed regions each).
 * Here the event is switched on, update_schemes_tried_bytes asks the
 * kdamond for a walk of its regions (it makes no directory), the event is
 * switched off, and the instance's trace file holds a line for each region
 * a scheme was applied to meanwhile, the walk's included: about 2 us per
 * region, most of it the kernel printing the line.
 *
 * The instance records the kdamond's events only (set_event_pid), prints
 * no per-line context (options/context-info), and its ring buffer is sized
 * for the regions watched, up to MAX_BUFFER_KB per CPU.  Whether the lines
 * are the whole answer is the caller's check (their bytes against the
 * walk's total_bytes): a ring buffer that overflowed, or a kernel that
 * walks without applying, fails it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms.h"

#define INSTANCE "memagg-damon"
#define EVENT "events/damon/damos_before_apply"
/* A line's share of the ring buffer: a 52-byte record, its header and a
 * time extension now and then. */
#define EVENT_BYTES 64
#define MAX_BUFFER_KB 4096
#define READ_CHUNK (256 * 1024)

static void instance_path(const struct ms_damon_trace *t, char *buf,
                          size_t len, const char *rel)
{
    snprintf(buf, len, "%s/%s", t->dir, rel);
}

static int instance_write(const struct ms_damon_trace *t, const char *rel,
                          const char *text, char *err, size_t errlen)
{
    char p[512];

    instance_path(t, p, sizeof(p), rel);
    return ms_write_file(p, text, err, errlen);
}

int ms_damon_trace_open(struct ms_damon_trace *t, char *err, size_t errlen)
{
    char p[512];
    struct stat st;
    int ret;

    memset(t, 0, sizeof(*t));
    t->enable_fd = -1;
    snprintf(p, sizeof(p), "%s/%s", ms_paths.tracing, EVENT);
    if (stat(p, &st) != 0) {
        ret = -errno;
        ms_err(err, errlen, "no %s: tracefs is not mounted at %s, or the "
               "kernel lacks DAMON's damos_before_apply event (6.7 and "
               "later have it)", p, ms_paths.tracing);
        return ret;
    }
    snprintf(t->dir, sizeof(t->dir), "%s/instances/" INSTANCE,
             ms_paths.tracing);
    /* A crashed run's instance may still trace: start from a new one. */
    if (rmdir(t->dir) != 0 && errno != ENOENT) {
        ret = -errno;
        ms_err(err, errlen, "cannot remove the stale tracefs instance %s: "
               "%s", t->dir, strerror(errno));
        t->dir[0] = '\0';
        return ret;
    }
    if (mkdir(t->dir, 0700) != 0) {
        ret = -errno;
        ms_err(err, errlen, "cannot make the tracefs instance %s: %s", t->dir,
               strerror(errno));
        t->dir[0] = '\0';
        return ret;
    }
    ret = instance_write(t, "options/context-info", "0", err, errlen);
    if (ret == 0) {
        instance_path(t, p, sizeof(p), EVENT "/enable");
        t->enable_fd = open(p, O_WRONLY | O_CLOEXEC);
        if (t->enable_fd < 0) {
            ret = -errno;
            ms_err(err, errlen, "cannot open %s: %s", p, strerror(errno));
        }
    }
    if (ret) {
        ms_damon_trace_close(t);
    }
    return ret;
}

void ms_damon_trace_close(struct ms_damon_trace *t)
{
    if (t->enable_fd >= 0) {
        close(t->enable_fd);
        t->enable_fd = -1;
    }
    if (t->dir[0]) {
        rmdir(t->dir);
        t->dir[0] = '\0';
    }
}

static int set_enable(struct ms_damon_trace *t, int on, char *err,
                      size_t errlen)
{
    if (pwrite(t->enable_fd, on ? "1" : "0", 1, 0) != 1) {
        int ret = -errno;

        ms_err(err, errlen, "cannot switch %s/%s %s: %s", t->dir, EVENT,
               on ? "on" : "off", strerror(errno));
        return ret;
    }
    return 0;
}

int ms_damon_trace_start(struct ms_damon_trace *t, int pid,
                         uint64_t max_events, char *err, size_t errlen)
{
    uint64_t kb = (max_events * EVENT_BYTES + 1023) / 1024;
    char text[32], p[512];
    int fd, ret;

    if (pid != t->pid) {
        snprintf(text, sizeof(text), "%d", pid);
        ret = instance_write(t, "set_event_pid", text, err, errlen);
        if (ret) {
            return ret;
        }
        t->pid = pid;
    }
    if (kb > MAX_BUFFER_KB) {
        kb = MAX_BUFFER_KB;
    }
    if (kb > t->buffer_kb) {
        snprintf(text, sizeof(text), "%llu", (unsigned long long)kb);
        ret = instance_write(t, "buffer_size_kb", text, err, errlen);
        if (ret) {
            return ret;
        }
        t->buffer_kb = (unsigned int)kb;
    }
    /* Opening the trace file with O_TRUNC empties the ring buffer. */
    instance_path(t, p, sizeof(p), "trace");
    fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) {
        ret = -errno;
        ms_err(err, errlen, "cannot empty %s: %s", p, strerror(errno));
        return ret;
    }
    close(fd);
    return set_enable(t, 1, err, errlen);
}

struct starts {
    uint64_t *v;
    size_t n, cap;
};

static int starts_add(struct starts *s, uint64_t start)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint64_t *v = realloc(s->v, cap * sizeof(*v));

        if (!v) {
            return -ENOMEM;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = start;
    return 0;
}

/* Each whole line of buf[0..*len): scheme's region starts added; the
 * unfinished last line is moved to the front and *len set to its size. */
static int take_lines(char *buf, size_t *len, unsigned int scheme,
                      struct starts *s)
{
    char *line = buf, *end = buf + *len, *nl;
    struct ms_damos_event ev;
    int ret = 0;

    while (ret == 0 &&
           (nl = memchr(line, '\n', (size_t)(end - line))) != NULL) {
        ret = ms_damos_trace_line(line, (size_t)(nl - line), &ev);
        if (ret == 0 && ev.scheme == scheme) {
            ret = starts_add(s, ev.start);
        }
        ret = ret == 1 ? 0 : ret;
        line = nl + 1;
    }
    *len = (size_t)(end - line);
    memmove(buf, line, *len);
    return ret;
}

int ms_damon_trace_stop(struct ms_damon_trace *t, unsigned int scheme,
                        uint64_t **starts, size_t *n, char *err,
                        size_t errlen)
{
    struct starts s = { NULL, 0, 0 };
    size_t have = 0;
    char p[512], *buf;
    ssize_t got;
    int fd, ret;

    ret = set_enable(t, 0, err, errlen);
    if (ret) {
        return ret;
    }
    instance_path(t, p, sizeof(p), "trace");
    buf = malloc(READ_CHUNK);
    fd = buf ? open(p, O_RDONLY | O_CLOEXEC) : -ENOMEM;
    if (fd < 0) {
        ret = buf ? -errno : -ENOMEM;
        ms_err(err, errlen, "cannot read %s: %s", p, strerror(-ret));
        free(buf);
        return ret;
    }
    for (;;) {
        got = read(fd, buf + have, READ_CHUNK - 1 - have);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            ret = got < 0 ? -errno : 0;
            break;
        }
        have += (size_t)got;
        ret = take_lines(buf, &have, scheme, &s);
        if (ret == 0 && have == READ_CHUNK - 1) {
            ret = -EINVAL;      /* a line longer than any event's */
        }
        if (ret) {
            break;
        }
    }
    if (ret == 0 && have) {
        buf[have++] = '\n';     /* a last line without its newline */
        ret = take_lines(buf, &have, scheme, &s);
    }
    close(fd);
    free(buf);
    if (ret) {
        ms_err(err, errlen, "%s: %s", p,
               ret == -ENOSPC ? "the ring buffer lost events" :
               ret == -EINVAL ? "a damos_before_apply line does not parse" :
               strerror(-ret));
        free(s.v);
        return ret;
    }
    /* A region applied to before the walk and again in it: once. */
    *starts = s.v;
    *n = ms_sort_unique_u64(s.v, s.n);
    return 0;
}
