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

/* An export's table in <state-dir>/exports/<uuid>.conf: its EXPORT_CREATE
 * line, written durably (the export's rebuild and page key with it) and
 * read back at a restart. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "args.h"
#include "export_internal.h"
#include "util.h"

/* fsync the directory of the exports' .conf files: a rename in it is
 * durable only then. */
static int sync_conf_dir(const struct sd_exports *xs)
{
    int fd = open(xs->conf_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

    if (fd < 0) {
        return -errno;
    }
    if (fsync(fd)) {
        ret = -errno;
    }
    close(fd);
    return ret;
}

int sd_export_persist(struct sd_export *x)
{
    char tmp[PATH_MAX + 8], adopt[80] = "";
    char pkey[sizeof(" page_key=") + 2 * SD_KEY_LEN] = "";
    uint8_t *snap = malloc(x->spec.nslabs);
    char *line;
    uint32_t i;
    int fd, ret = 0;

    /* The slabs local (stale) before the table is formatted are in what
     * is saved: a slab turns local (degrade, reclaim) or stale (a write
     * its local copy missed) at any time; it stops being local only in a
     * promotion, which holds x->lock, and stays stale. */
    for (i = 0; snap && i < x->spec.nslabs; i++) {
        snap[i] = (uint8_t)(__atomic_load_n(&x->spec.slabs[i].local,
                                            __ATOMIC_SEQ_CST) |
                            __atomic_load_n(&x->spec.slabs[i].stale,
                                            __ATOMIC_SEQ_CST) << 1);
    }
    line = snap ? sd_export_spec_format(&x->spec) : NULL;
    if (!line) {
        free(snap);
        return -ENOMEM;
    }
    if (x->spec.adopt) {
        snprintf(adopt, sizeof(adopt), " adopt=1 rebuilt=%u "
                 "rebuild_started=%d", x->spec.rebuilt,
                 x->spec.rebuild_started);
    }
    if (x->spec.has_page_key) {
        memcpy(pkey, " page_key=", 10);
        sd_hex_encode(x->spec.page_key, SD_KEY_LEN, pkey + 10);
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", x->conf);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    /* A stale temp file keeps its mode through O_TRUNC: the page key is
     * for this user only. */
    if (fd >= 0 && fchmod(fd, 0600)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        ret = -errno;
    } else {
        if ((ret = sd_write_full(fd, "EXPORT_CREATE ", 14)) == 0 &&
            (ret = sd_write_full(fd, line, strlen(line))) == 0 &&
            (ret = sd_write_full(fd, adopt, strlen(adopt))) == 0 &&
            (ret = sd_write_full(fd, pkey, strlen(pkey))) == 0 &&
            (ret = sd_write_full(fd, "\n", 1)) == 0 && fsync(fd)) {
            ret = -errno;
        }
        close(fd);
        if (ret == 0 && rename(tmp, x->conf)) {
            ret = -errno;
        }
        if (ret) {
            unlink(tmp);
        } else {
            ret = sync_conf_dir(x->xs);
        }
    }
    if (ret) {
        sd_log(LOG_ERR, "export %s: cannot write %s: %s", x->uuid, x->conf,
               strerror(-ret));
    }
    for (i = 0; ret == 0 && i < x->spec.nslabs; i++) {
        if (snap[i] & 1) {
            __atomic_store_n(&x->saved_local[i], 1, __ATOMIC_RELEASE);
        }
        if (snap[i] & 2) {
            __atomic_store_n(&x->saved_stale[i], 1, __ATOMIC_RELEASE);
        }
    }
    OPENSSL_cleanse(pkey, sizeof(pkey));
    free(snap);
    free(line);
    return ret;
}

/* Whether the .conf on disk says what slab's flags do (local, stale). */
static int slab_saved(struct sd_export *x, uint32_t slab)
{
    return (!__atomic_load_n(&x->spec.slabs[slab].local, __ATOMIC_SEQ_CST) ||
            __atomic_load_n(&x->saved_local[slab], __ATOMIC_ACQUIRE)) &&
           (!__atomic_load_n(&x->spec.slabs[slab].stale, __ATOMIC_SEQ_CST) ||
            __atomic_load_n(&x->saved_stale[slab], __ATOMIC_ACQUIRE));
}

int sd_export_table_sync(struct sd_export *x, uint32_t slab)
{
    int ret = 0;

    if (slab_saved(x, slab)) {
        return 0;
    }
    /* A degrade or reclaim saving the table holds the lock: once it is
     * ours, that save is done, or failed and is tried again here. */
    pthread_mutex_lock(&x->lock);
    if (!slab_saved(x, slab)) {
        ret = sd_export_persist(x);
    }
    pthread_mutex_unlock(&x->lock);
    return ret;
}

int sd_export_read_conf(const char *path, char **line)
{
    char *buf = malloc(SD_CONTROL_MAX_LINE + 1), *nl;
    ssize_t n;
    int fd;

    if (!buf) {
        return -ENOMEM;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        free(buf);
        return -errno;
    }
    n = read(fd, buf, SD_CONTROL_MAX_LINE);
    close(fd);
    if (n < 0) {
        free(buf);
        return -errno;
    }
    buf[n] = '\0';
    nl = strchr(buf, '\n');
    if (nl) {
        *nl = '\0';
    }
    *line = buf;
    return 0;
}
