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

/* Files a control request names, confined to one directory (confine.h);
 * fuzzed with the control protocol. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine.h"
#include "util.h"

int sd_confine_init(struct sd_confine *c, const char *root, char *err,
                    size_t errlen)
{
    size_t n = strlen(root);

    /* Requests name it as memagg-compute joins it: "/a/b/" + "x" is
     * "/a/b/x", so the trailing '/' is not part of the prefix. */
    while (n > 1 && root[n - 1] == '/') {
        n--;
    }
    if (n >= sizeof(c->root)) {
        return sd_fail(err, errlen, -ENAMETOOLONG, "%.80s: longer than %zu "
                       "characters", root, sizeof(c->root) - 1);
    }
    memcpy(c->root, root, n);
    c->root[n == 1 && root[0] == '/' ? 0 : n] = '\0';
    c->dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->dirfd < 0) {
        return sd_fail(err, errlen, -errno, "cannot open %.120s: %s", root,
                       strerror(errno));
    }
    return 0;
}

void sd_confine_destroy(struct sd_confine *c)
{
    if (c->dirfd >= 0) {
        close(c->dirfd);
        c->dirfd = -1;
    }
}

int sd_confine_name(const struct sd_confine *c, const char *field,
                    const char *path, const char **rel, char *err,
                    size_t errlen)
{
    size_t n = strlen(c->root), len;
    const char *name;

    if (strlen(path) >= PATH_MAX) {
        return sd_fail(err, errlen, -EINVAL, "%s: a path of %d characters "
                       "or more; give a shorter one", field, PATH_MAX);
    }
    if (strncmp(path, c->root, n) != 0 || path[n] != '/') {
        return sd_fail(err, errlen, -EINVAL, "%s: must name a file under "
                       "%.100s/, not %.80s", field, c->root, path);
    }
    for (name = path + n + 1;; name += len + 1) {
        len = strcspn(name, "/");
        if (len == 0) {
            return sd_fail(err, errlen, -EINVAL, "%s: an empty name (a '//' "
                           "or a trailing '/') in %.80s; name a file", field,
                           path);
        }
        if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'))) {
            return sd_fail(err, errlen, -EINVAL, "%s: '.' and '..' are "
                           "refused in %.80s; give the path without them",
                           field, path);
        }
        if (len > NAME_MAX) {
            return sd_fail(err, errlen, -EINVAL, "%s: a name longer than %d "
                           "characters in %.80s...", field, NAME_MAX, path);
        }
        if (!name[len]) {
            break;
        }
    }
    *rel = path + n + 1;
    return 0;
}

/* The directory that holds path's last name, opened from c->dirfd one
 * name at a time, none of them a symlink; *last is that name, in path. */
static int walk(const struct sd_confine *c, const char *field,
                const char *path, const char **last, char *err,
                size_t errlen)
{
    char name[NAME_MAX + 1];
    const char *rel;
    int fd, next, ret;
    size_t len;

    if ((ret = sd_confine_name(c, field, path, &rel, err, errlen))) {
        return ret;
    }
    fd = fcntl(c->dirfd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        return sd_fail(err, errlen, -errno, "%s: %s", field, strerror(errno));
    }
    while (rel[len = strcspn(rel, "/")]) {
        memcpy(name, rel, len);
        name[len] = '\0';
        next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                      O_CLOEXEC);
        ret = -errno;
        close(fd);
        if (next < 0 && (ret == -ELOOP || ret == -ENOTDIR)) {
            return sd_fail(err, errlen, -EINVAL, "%s: '%s' in %.80s is a "
                           "symlink or not a directory; only directories "
                           "may lead to the file", field, name, path);
        }
        if (next < 0) {
            return sd_fail(err, errlen, ret, "%s: cannot open the directory "
                           "'%s' of %.80s: %s", field, name, path,
                           strerror(-ret));
        }
        fd = next;
        rel += len + 1;
    }
    *last = rel;
    return fd;
}

int sd_confine_open(const struct sd_confine *c, const char *field,
                    const char *path, int how, char *err, size_t errlen)
{
    const char *last;
    struct stat st;
    int dir, fd, ret;

    dir = walk(c, field, path, &last, err, errlen);
    if (dir < 0) {
        return dir;
    }
    /* O_NONBLOCK: a fifo put there must be refused, not waited on. */
    fd = openat(dir, last, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                (how & SD_CONFINE_CREATE ? O_CREAT : 0), 0600);
    ret = -errno;
    close(dir);
    if (fd < 0 && ret == -ELOOP) {
        return sd_fail(err, errlen, -EINVAL, "%s: %.80s is a symlink; give "
                       "the file itself", field, path);
    }
    if (fd < 0 && (ret == -EISDIR || ret == -ENXIO)) {
        return sd_fail(err, errlen, -EINVAL, "%s: %.80s is not a regular "
                       "file", field, path);
    }
    if (fd < 0) {
        return sd_fail(err, errlen, ret, "%s: cannot open %.80s: %s", field,
                       path, strerror(-ret));
    }
    /* F_SETFL 0: back to blocking I/O once it is known to be a file. */
    if (fstat(fd, &st) || fcntl(fd, F_SETFL, 0)) {
        ret = sd_fail(err, errlen, -errno, "%s: cannot use %.80s: %s", field,
                      path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        ret = sd_fail(err, errlen, -EINVAL, "%s: %.80s is not a regular "
                      "file (a device, fifo or directory)", field, path);
    } else if (st.st_nlink != 1) {
        /* Another name of it may be outside the directory. */
        ret = sd_fail(err, errlen, -EINVAL, "%s: %.80s has other hard links; "
                      "give a file of its own", field, path);
    } else if ((how & SD_CONFINE_EMPTY) && ftruncate(fd, 0)) {
        ret = sd_fail(err, errlen, -errno, "%s: cannot empty %.80s: %s",
                      field, path, strerror(errno));
    } else {
        return fd;
    }
    close(fd);
    return ret;
}

int sd_confine_unlink(const struct sd_confine *c, const char *field,
                      const char *path, const struct stat *same, char *err,
                      size_t errlen)
{
    const char *last;
    struct stat st;
    int dir, ret = 0;

    dir = walk(c, field, path, &last, err, errlen);
    if (dir < 0) {
        return dir;
    }
    /* unlinkat removes a name, never what a symlink points at: a name
     * swapped after this check still loses nothing outside the
     * directory. */
    if (fstatat(dir, last, &st, AT_SYMLINK_NOFOLLOW)) {
        ret = sd_fail(err, errlen, -errno, "%s: cannot find %.80s: %s",
                      field, path, strerror(errno));
    } else if (!S_ISREG(st.st_mode) || st.st_dev != same->st_dev ||
               st.st_ino != same->st_ino) {
        ret = sd_fail(err, errlen, -ESTALE, "%s: %.80s is no longer the "
                      "file opened; left in place", field, path);
    } else if (unlinkat(dir, last, 0)) {
        ret = sd_fail(err, errlen, -errno, "%s: cannot remove %.80s: %s",
                      field, path, strerror(errno));
    }
    close(dir);
    return ret;
}
