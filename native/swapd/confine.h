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
 * Files a control request names, confined to one directory: an export's
 * local copy (local=) must be a regular file below <state_dir>/local.  A
 * request gives the absolute path memagg-compute builds; it must be the
 * directory's path as configured, then names separated by single '/',
 * none of them empty, "." or "..".  It is opened component by component
 * from a descriptor of the directory held open, each with O_NOFOLLOW, so
 * that no symlink, whether in the request or planted in the directory,
 * leads outside; only a regular file with a single link is used.
 */
#ifndef MEMAGG_SWAPD_CONFINE_H
#define MEMAGG_SWAPD_CONFINE_H

#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>

struct sd_confine {
    int dirfd;                          /* the directory, held open */
    char root[PATH_MAX / 2];            /* its path, no trailing '/' */
};

/* Open the directory root (which must exist) into c; -errno with err
 * naming it. */
int sd_confine_init(struct sd_confine *c, const char *root, char *err,
                    size_t errlen);
void sd_confine_destroy(struct sd_confine *c);

/* Check path by its text alone: *rel is then its part below c->root.
 * -EINVAL with err naming field and the fix otherwise. */
int sd_confine_name(const struct sd_confine *c, const char *field,
                    const char *path, const char **rel, char *err,
                    size_t errlen);

#define SD_CONFINE_CREATE 1             /* make the file when missing */
#define SD_CONFINE_EMPTY 2              /* truncate it to 0 bytes */

/* The file at path, read-write (close-on-exec), after sd_confine_name's
 * check and with no symlink, directory, device, fifo or hard-linked file
 * on the way; made with mode 0600 with SD_CONFINE_CREATE (its directories
 * must exist).  A file descriptor, or -errno with err naming field: a
 * path refused is -EINVAL, a failure of the file system its errno. */
int sd_confine_open(const struct sd_confine *c, const char *field,
                    const char *path, int how, char *err, size_t errlen);

/* Remove the file at path, reached as sd_confine_open does, if it is
 * still the file *same is the fstat of (another file put there since is
 * left alone: -ESTALE).  0 or -errno with err naming field. */
int sd_confine_unlink(const struct sd_confine *c, const char *field,
                      const char *path, const struct stat *same, char *err,
                      size_t errlen);

#endif
