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
 * The registry of this host's exports: an export's making (EXPORT_CREATE,
 * or its .conf at a start) and its end, and the control verbs on one.
 * Its requests are export_io.c's, its donor connections peer.c's, its
 * .conf persist.c's and an adopted export's rebuild rebuild.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "args.h"
#include "export.h"
#include "export_internal.h"
#include "keywrap.h"
#include "nbd.h"
#include "seal.h"
#include "transport.h"
#include "util.h"

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX], *p;

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        return -ENAMETOOLONG;
    }
    for (p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, mode) && errno != EEXIST) {
                return -errno;
            }
            *p = '/';
        }
    }
    if (mkdir(buf, mode) && errno != EEXIST) {
        return -errno;
    }
    return 0;
}

int sd_exports_new(const char *state_dir, const char *export_dir,
                   uid_t sock_uid, gid_t sock_gid, struct sd_exports **out,
                   char *err, size_t errlen)
{
    struct sd_exports *xs = calloc(1, sizeof(*xs));
    char local[PATH_MAX], cause[SD_ERRLEN];
    size_t n;
    int ret;

    if (!xs) {
        return sd_fail(err, errlen, -ENOMEM, "out of memory");
    }
    if (strlen(state_dir) + 8 >= sizeof(xs->conf_dir) ||
        strlen(export_dir) >= sizeof(xs->export_dir)) {
        free(xs);
        return sd_fail(err, errlen, -ENAMETOOLONG, "--state-dir, "
                       "--export-dir: must be shorter than %zu characters",
                       sizeof(xs->export_dir) - 8);
    }
    snprintf(xs->conf_dir, sizeof(xs->conf_dir), "%s/exports", state_dir);
    snprintf(xs->export_dir, sizeof(xs->export_dir), "%s", export_dir);
    xs->uid = sock_uid;
    xs->gid = sock_gid;
    /* The .conf files hold sealed exports' page keys. */
    if ((ret = mkdir_p(xs->conf_dir, 0700)) ||
        (chmod(xs->conf_dir, 0700) && (ret = -errno))) {
        sd_fail(err, errlen, ret, "--state-dir: cannot create %s: %s",
                xs->conf_dir, strerror(-ret));
        free(xs);
        return ret;
    }
    /* QEMU, another user, must traverse the export directory. */
    if ((ret = mkdir_p(xs->export_dir, 0755))) {
        sd_fail(err, errlen, ret, "--export-dir: cannot create %s: %s",
                xs->export_dir, strerror(-ret));
        free(xs);
        return ret;
    }
    /* The local copies, the only files a request names (local=), are
     * confined to <state_dir>/local, where memagg-compute puts them: not
     * beside the .conf files, which hold page keys. */
    n = strlen(state_dir);
    while (n > 0 && state_dir[n - 1] == '/') {
        n--;        /* memagg-compute's os.path.join drops it too */
    }
    snprintf(local, sizeof(local), "%.*s/local", (int)n, state_dir);
    if ((ret = mkdir_p(local, 0700))) {
        sd_fail(err, errlen, ret, "--state-dir: cannot create %s: %s", local,
                strerror(-ret));
        free(xs);
        return ret;
    }
    if ((ret = sd_confine_init(&xs->local, local, cause, sizeof(cause)))) {
        sd_fail(err, errlen, ret, "--state-dir: %s", cause);
        free(xs);
        return ret;
    }
    pthread_mutex_init(&xs->lock, NULL);
    *out = xs;
    return 0;
}

static struct sd_export *find(struct sd_exports *xs,
                              const uint8_t grant[SD_UUID_LEN])
{
    struct sd_export *x;

    for (x = xs->exports; x; x = x->next) {
        if (memcmp(x->spec.grant, grant, SD_UUID_LEN) == 0) {
            return x;
        }
    }
    return NULL;
}

static void export_free(struct sd_export *x)
{
    sd_rebuild_stop(x);
    sd_local_close(&x->lc);
    sd_bitmap_destroy(&x->written);
    sd_bitmap_destroy(&x->fresh);
    sd_bitmap_destroy(&x->bad);
    if (x->sealer_ok) {
        sd_sealer_destroy(&x->sealer);
    }
    sd_kw_offer_free(x->offer);
    pthread_cond_destroy(&x->rb_cond);
    pthread_mutex_destroy(&x->rb_lock);
    sd_ghost_destroy(&x->ghost);
    sd_export_spec_free(&x->spec);
    free(x->peers);
    free(x->degraded);
    free(x->saved_local);
    free(x->saved_stale);
    pthread_rwlock_destroy(&x->promo_rw);
    pthread_mutex_destroy(&x->promo_held_lock);
    pthread_mutex_destroy(&x->lock);
    free(x);
}

/* A sealed export's key, sealer and bad-page map.  A new export draws its
 * page key here; an adopted one waits for it (sd_exports_key_install); a
 * restored one has it in its .conf, or still waits when adopted. */
static int seal_setup(struct sd_export *x, int restoring, char *err,
                      size_t errlen)
{
    if (!restoring && x->spec.adopt) {
        x->spec.has_page_key = 0;
    } else if (!restoring) {
        if (RAND_bytes(x->spec.page_key, SD_KEY_LEN) != 1) {
            return sd_fail(err, errlen, -EIO, "seal: cannot draw a page key "
                           "(OpenSSL's RAND_bytes failed)");
        }
        x->spec.has_page_key = 1;
    } else if (!x->spec.has_page_key && !x->spec.adopt) {
        return sd_fail(err, errlen, -EINVAL, "page_key: missing from the "
                       ".conf of a sealed export: its pages on the donors "
                       "cannot be read; drop the export and make a new one");
    }
    x->key_ready = x->spec.has_page_key;
    /* The offer lives in memory only: a restart makes a new one. */
    if (!x->key_ready && sd_kw_offer_new(&x->offer, x->offer_pub)) {
        return sd_fail(err, errlen, -EIO, "seal: cannot make the key offer "
                       "(OpenSSL failed)");
    }
    if (sd_sealer_init(&x->sealer)) {
        return sd_fail(err, errlen, -EIO, "seal: cannot draw a nonce epoch "
                       "(OpenSSL's RAND_bytes failed)");
    }
    x->sealer_ok = 1;
    if (x->spec.adopt && sd_bitmap_init(&x->bad, x->written.pages)) {
        return sd_fail(err, errlen, -ENOMEM, "out of memory");
    }
    return 0;
}

/* Build the export of spec; called with xs->lock held.  restoring: the
 * .conf exists already. */
static int export_open(struct sd_exports *xs, struct sd_export_spec *spec,
                       int restoring, struct sd_export **out, char *err,
                       size_t errlen)
{
    struct sd_nbd_backend be;
    pthread_condattr_t ca;
    struct sd_export *x;
    uint64_t pps;
    const char *rel;
    struct stat st;
    uint32_t i;
    int ret;

    x = calloc(1, sizeof(*x));
    if (!x) {
        sd_export_spec_free(spec);
        return sd_fail(err, errlen, -ENOMEM, "out of memory");
    }
    x->xs = xs;
    x->spec = *spec;
    spec->slabs = NULL;
    x->lc.fd = -1;
    x->promo_slab = SD_PROMO_NONE;
    /* Writer first: a promotion's switch must not wait out a stream of
     * requests. */
    sd_rwlock_init_writer_first(&x->promo_rw);
    pthread_mutex_init(&x->promo_held_lock, NULL);
    pthread_mutex_init(&x->lock, NULL);
    pthread_mutex_init(&x->rb_lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* rb_sleep */
    pthread_cond_init(&x->rb_cond, &ca);
    pthread_condattr_destroy(&ca);
    sd_uuid_format(x->spec.grant, x->uuid);
    snprintf(x->name, sizeof(x->name), "memagg-swap-%s", x->uuid);
    snprintf(x->sock, sizeof(x->sock), "%s/%s.sock", xs->export_dir,
             x->uuid);
    snprintf(x->conf, sizeof(x->conf), "%s/%s.conf", xs->conf_dir, x->uuid);

    /* A path refused fails before any donor is reached. */
    if ((ret = sd_confine_name(&xs->local, "local", x->spec.local, &rel, err,
                               errlen))) {
        goto out;
    }
    x->peers = calloc(x->spec.nslabs, sizeof(*x->peers));
    x->degraded = calloc(x->spec.nslabs, 1);
    x->saved_local = calloc(x->spec.nslabs, 1);
    x->saved_stale = calloc(x->spec.nslabs, 1);
    if (!x->peers || !x->degraded || !x->saved_local || !x->saved_stale ||
        sd_bitmap_init(&x->written,
                       x->spec.size / SD_PAGE_SIZE) ||
        (x->spec.adopt && sd_bitmap_init(&x->fresh, x->written.pages)) ||
        sd_ghost_init(&x->ghost, SD_GHOST_RING)) {
        ret = sd_fail(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    pps = x->spec.slab_size / SD_PAGE_SIZE;
    x->rb_cursor = x->spec.adopt ? x->spec.rebuilt * pps : x->written.pages;
    for (i = 0; restoring && i < x->spec.nslabs; i++) {
        x->saved_local[i] = (uint8_t)x->spec.slabs[i].local;  /* as read */
        x->saved_stale[i] = (uint8_t)x->spec.slabs[i].stale;
    }
    for (i = 0; i < x->spec.nslabs; i++) {
        if (x->spec.slabs[i].endpoint[0] &&
            (ret = sd_peer_get(xs, x->spec.slabs[i].endpoint, &x->peers[i],
                               err, errlen))) {
            goto out;
        }
    }
    if (x->spec.seal && (ret = seal_setup(x, restoring, err, errlen))) {
        goto out;
    }

    /* A new adoption empties the copy: whatever it holds would pass for
     * pages written here. */
    ret = sd_confine_open(&xs->local, "local", x->spec.local,
                          SD_CONFINE_CREATE | (x->spec.adopt && !restoring ?
                                               SD_CONFINE_EMPTY : 0),
                          err, errlen);
    if (ret < 0) {
        goto out;
    }
    sd_local_open(&x->lc, ret, 1, x->uuid);
    if (fstat(x->lc.fd, &st) ||
        ((uint64_t)st.st_size < x->spec.size &&
         ftruncate(x->lc.fd, (off_t)x->spec.size))) {
        ret = sd_fail(err, errlen, -errno, "local: cannot use %s as the "
                      "durability copy: %s", x->spec.local, strerror(errno));
        goto out;
    }
    /* Pages the copy holds are the pages written before (a restart or a
     * hand-over); a new copy is one hole.  An adopted export's pages not
     * rebuilt yet are on the donors: written; those the copy holds there
     * are the current ones (see rebuild.c). */
    ret = sd_bitmap_load_extents(&x->written, x->lc.fd);
    if (ret == 0 && x->spec.adopt) {
        ret = sd_bitmap_load_extents(&x->fresh, x->lc.fd);
        sd_bitmap_set(&x->written, x->rb_cursor,
                      x->written.pages - x->rb_cursor);
    }
    if (ret) {
        sd_fail(err, errlen, ret, "local: cannot map the data of %s: %s",
                x->spec.local, strerror(-ret));
        goto out;
    }
    /* What is stored already counts as put, in its slab's tier; a stale
     * slab's pages its copy missed are on its donor only. */
    for (i = 0; i < x->spec.nslabs; i++) {
        if (x->spec.slabs[i].stale) {
            sd_bitmap_set(&x->written, (uint64_t)i * pps, pps);
        }
        ledger_add(x, slab_tier(x, i), LEDGER_PUTS, slab_stored(x, i));
    }

    /* The table is durable before the socket exists: no write reaches
     * an export a restart would not find. */
    if (!restoring && (ret = sd_export_persist(x))) {
        sd_fail(err, errlen, ret, "cannot write %s: %s", x->conf,
                strerror(-ret));
        goto out;
    }
    be.name = x->name;
    be.size = x->spec.size;
    /* Pages are sealed whole: QEMU aligns its requests to this. */
    be.min_block = x->spec.seal ? SD_PAGE_SIZE : 0;
    be.ctx = x;
    be.submit = sd_export_submit;
    be.clients = sd_export_clients;
    ret = sd_nbd_server_start(x->sock, &be, xs->uid, xs->gid, &x->nbd,
                              err, errlen);
    if (ret) {
        if (!restoring) {
            unlink(x->conf);
        }
        goto out;
    }
    if (x->spec.adopt && !x->spec.rebuild_started) {
        sd_log(LOG_INFO, "export %s: adopted; its local copy is rebuilt "
               "from the donors once EXPORT_REBUILD asks", x->uuid);
    } else if (x->spec.adopt) {
        sd_log(LOG_INFO, "export %s: adopted; its local copy is rebuilt "
               "from the donors from slab %u of %u", x->uuid,
               x->spec.rebuilt, x->spec.nslabs);
        ret = -pthread_create(&x->rb_thread, NULL, sd_rebuild_main, x);
        if (ret) {
            sd_nbd_server_stop(x->nbd);
            if (!restoring) {
                unlink(x->conf);
            }
            sd_fail(err, errlen, ret, "cannot start the rebuild's thread: %s",
                    strerror(-ret));
            goto out;
        }
        x->rb_running = 1;
    }
    *out = x;
    return 0;

out:
    export_free(x);
    return ret;
}

int sd_exports_create(struct sd_exports *xs, struct sd_export_spec *spec,
                      char *sock, size_t socklen, char *err, size_t errlen)
{
    struct sd_export *x;
    int ret;

    pthread_mutex_lock(&xs->lock);
    if (find(xs, spec->grant)) {
        char uuid[SD_UUID_STRLEN + 1];

        sd_uuid_format(spec->grant, uuid);
        sd_export_spec_free(spec);
        pthread_mutex_unlock(&xs->lock);
        return sd_fail(err, errlen, -EEXIST, "grant: %s already has an export "
                       "here (EXPORT_DROP it first)", uuid);
    }
    ret = export_open(xs, spec, 0, &x, err, errlen);
    if (ret == 0) {
        x->next = xs->exports;
        xs->exports = x;
        snprintf(sock, socklen, "%s", x->sock);
        sd_log(LOG_INFO, "export %s: %llu bytes in %u slabs on %s",
               x->name, (unsigned long long)x->spec.size, x->spec.nslabs,
               x->sock);
    }
    pthread_mutex_unlock(&xs->lock);
    return ret;
}

int sd_exports_restore(struct sd_exports *xs)
{
    struct dirent *de;
    int restored = 0;
    DIR *dir;

    dir = opendir(xs->conf_dir);
    if (!dir) {
        sd_log(LOG_ERR, "cannot list %s: %s", xs->conf_dir, strerror(errno));
        return 0;
    }
    while ((de = readdir(dir))) {
        char path[PATH_MAX], err[SD_ERRLEN] = "", *line = NULL;
        size_t len = strlen(de->d_name);
        struct sd_export_spec spec;
        struct sd_export *x;
        struct sd_args args;
        int ret;

        if (len < 6 || len > 255 || strcmp(de->d_name + len - 5, ".conf")) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", xs->conf_dir, de->d_name);
        ret = sd_export_read_conf(path, &line);
        if (ret == 0 && (ret = sd_control_parse_line(line, &args, err,
                                                      sizeof(err))) == 0 &&
            (ret = sd_export_spec_parse(&args, &spec, err,
                                        sizeof(err))) == 0) {
            pthread_mutex_lock(&xs->lock);
            if (find(xs, spec.grant)) {
                sd_export_spec_free(&spec);
                ret = -EEXIST;
                snprintf(err, sizeof(err), "its grant is restored already");
            } else if ((ret = export_open(xs, &spec, 1, &x, err,
                                          sizeof(err))) == 0) {
                x->next = xs->exports;
                xs->exports = x;
                restored++;
                sd_log(LOG_INFO, "export %s: restored from %s on %s",
                       x->name, path, x->sock);
            }
            pthread_mutex_unlock(&xs->lock);
        }
        if (ret) {
            sd_log(LOG_ERR, "cannot restore the export of %s: %s", path,
                   err[0] ? err : strerror(-ret));
        }
        free(line);
    }
    closedir(dir);
    return restored;
}

/* The export of grant, unlinked from the list. */
static struct sd_export *take(struct sd_exports *xs,
                              const uint8_t grant[SD_UUID_LEN])
{
    struct sd_export **pp, *x = NULL;

    pthread_mutex_lock(&xs->lock);
    for (pp = &xs->exports; *pp; pp = &(*pp)->next) {
        if (memcmp((*pp)->spec.grant, grant, SD_UUID_LEN) == 0) {
            x = *pp;
            *pp = x->next;
            break;
        }
    }
    pthread_mutex_unlock(&xs->lock);
    return x;
}

int sd_exports_drop(struct sd_exports *xs, const uint8_t grant[SD_UUID_LEN],
                    int delete_local)
{
    struct sd_export *x = take(xs, grant);
    char err[SD_ERRLEN];
    struct stat st;
    int ret = 0;

    if (!x) {
        return -ENOENT;
    }
    sd_nbd_server_stop(x->nbd);
    sd_rebuild_stop(x);
    unlink(x->conf);
    if (delete_local) {
        /* Only the file the export used, should its name have been
         * replaced meanwhile. */
        ret = fstat(x->lc.fd, &st) ?
              sd_fail(err, sizeof(err), -errno, "local: %s",
                      strerror(errno)) :
              sd_confine_unlink(&xs->local, "local", x->spec.local, &st, err,
                                sizeof(err));
        if (ret && ret != -ENOENT) {
            sd_log(LOG_WARNING, "export %s: its local copy is not deleted: "
                   "%s", x->name, err);
        }
    }
    sd_log(LOG_INFO, "export %s: dropped%s", x->name,
           delete_local && !ret ? " with its local copy" : "");
    export_free(x);
    return 0;
}

void sd_exports_free(struct sd_exports *xs)
{
    struct sd_export *x;

    if (!xs) {
        return;
    }
    while ((x = xs->exports)) {
        xs->exports = x->next;
        sd_nbd_server_stop(x->nbd);
        export_free(x);
    }
    sd_peers_free(xs);
    sd_confine_destroy(&xs->local);
    pthread_mutex_destroy(&xs->lock);
    free(xs);
}

/* The callers below run on the control thread, the only one that drops
 * exports, so x stays valid after xs->lock is released. */
struct sd_export *sd_export_lookup(struct sd_exports *xs,
                                   const uint8_t grant[SD_UUID_LEN])
{
    struct sd_export *x;

    pthread_mutex_lock(&xs->lock);
    x = find(xs, grant);
    pthread_mutex_unlock(&xs->lock);
    return x;
}

int sd_exports_describe(struct sd_exports *xs,
                        const uint8_t grant[SD_UUID_LEN], char **text)
{
    struct sd_export *x = sd_export_lookup(xs, grant);

    if (!x) {
        return -ENOENT;
    }
    pthread_mutex_lock(&x->lock);
    *text = sd_export_spec_format(&x->spec);
    pthread_mutex_unlock(&x->lock);
    return *text ? 0 : -ENOMEM;
}

int sd_exports_rebuild(struct sd_exports *xs,
                       const uint8_t grant[SD_UUID_LEN], uint64_t *left,
                       char *err, size_t errlen)
{
    struct sd_export *x = sd_export_lookup(xs, grant);
    int ret = 0;

    if (!x) {
        return sd_fail(err, errlen, -ENOENT, "grant: no export here");
    }
    /* Only the control thread starts a rebuild (here) or stops one (a
     * drop), so rb_running cannot change under this call. */
    pthread_mutex_lock(&x->lock);
    if (x->spec.adopt && !x->spec.rebuild_started) {
        /* Saved first: the rebuild's own saves (rb_slab_done) keep it,
         * and a restart must not find it waiting again. */
        x->spec.rebuild_started = 1;
        ret = sd_export_persist(x);
        if (ret) {
            sd_fail(err, errlen, ret, "cannot write %s: %s", x->conf,
                    strerror(-ret));
        } else if ((ret = -pthread_create(&x->rb_thread, NULL,
                                          sd_rebuild_main, x))) {
            sd_fail(err, errlen, ret, "cannot start the rebuild's thread: %s",
                    strerror(-ret));
        }
        if (ret) {
            x->spec.rebuild_started = 0;
            sd_export_persist(x);
        } else {
            x->rb_running = 1;
            sd_log(LOG_INFO, "export %s: the rebuild of its local copy "
                   "from the donors starts", x->uuid);
        }
    }
    pthread_mutex_unlock(&x->lock);
    *left = rebuild_left(x);
    return ret;
}

int sd_exports_reclaim(struct sd_exports *xs,
                       const uint8_t grant[SD_UUID_LEN],
                       const uint32_t *idx, size_t n, uint32_t *done,
                       char *err, size_t errlen)
{
    struct sd_export *x = sd_export_lookup(xs, grant);
    uint32_t i, count = 0;
    uint64_t cursor, pps;
    int ret;

    if (!x) {
        return sd_fail(err, errlen, -ENOENT, "grant: no export here");
    }
    pps = x->spec.slab_size / SD_PAGE_SIZE;
    for (i = 0; i < n; i++) {
        if (idx[i] >= x->spec.nslabs) {
            return sd_fail(err, errlen, -EINVAL, "slabs: index %u is beyond "
                           "the export's %u slabs", idx[i], x->spec.nslabs);
        }
    }
    /* Only the rebuild moves rb_cursor, and only forward: a slab found
     * rebuilt here stays so. */
    cursor = __atomic_load_n(&x->rb_cursor, __ATOMIC_ACQUIRE);
    for (i = 0; i < (n ? n : x->spec.nslabs); i++) {
        uint32_t s = n ? idx[i] : i;

        if (x->peers[s] && slab_stale(x, s) && !slab_is_local(x, s)) {
            return sd_fail(err, errlen, -EBUSY, "slabs: slab %u is stale in "
                           "the local copy %s, which missed writes to it "
                           "(see the log): only its donor has them, so it "
                           "stays there", s, x->spec.local);
        }
        if (x->peers[s] && (uint64_t)(s + 1) * pps > cursor) {
            return sd_fail(err, errlen, -EBUSY, "slabs: slab %u of this "
                           "adopted export is not rebuilt from its donor yet "
                           "(rebuild_left=%llu pages); reclaim it when "
                           "EXPORT_STATS says rebuild_left=0, after "
                           "EXPORT_REBUILD", s,
                           (unsigned long long)(x->written.pages - cursor));
        }
    }
    for (i = 0; i < (n ? n : x->spec.nslabs); i++) {
        uint32_t s = n ? idx[i] : i;

        if (x->peers[s] && !__atomic_exchange_n(&x->spec.slabs[s].local, 1,
                                                __ATOMIC_SEQ_CST)) {
            ledger_moved(x, s, SD_L2);
            count++;
        }
    }
    /* Saved before the answer: the caller then has the donors free the
     * slabs, and a restart must not read them there. */
    pthread_mutex_lock(&x->lock);
    ret = sd_export_persist(x);
    pthread_mutex_unlock(&x->lock);
    if (ret) {
        return sd_fail(err, errlen, ret, "cannot write %s: %s (the slabs are "
                       "served from the local copy, but a restart would read "
                       "them from their donors again: do not free them)",
                       x->conf, strerror(-ret));
    }
    sd_log(LOG_INFO, "export %s: %u slabs reclaimed to the local copy",
           x->name, count);
    *done = count;
    return 0;
}

int sd_exports_list(struct sd_exports *xs, char **text)
{
    struct sd_strbuf b = { 0 };
    struct sd_export *x;

    sd_strbuf_printf(&b, "%s", "");
    pthread_mutex_lock(&xs->lock);
    for (x = xs->exports; x; x = x->next) {
        sd_strbuf_printf(&b, "%s%s", b.len ? "," : "", x->uuid);
    }
    pthread_mutex_unlock(&xs->lock);
    if (b.oom) {
        free(b.s);
        return -ENOMEM;
    }
    *text = b.s;
    return 0;
}

int sd_exports_stats(struct sd_exports *xs,
                     const uint8_t grant[SD_UUID_LEN],
                     struct sd_export_stats *out)
{
    struct sd_export *x = sd_export_lookup(xs, grant);
    uint32_t i;

    if (!x) {
        return -ENOENT;
    }
    memset(out, 0, sizeof(*out));
    out->reads = LOAD(x, reads);
    out->writes = LOAD(x, writes);
    out->read_bytes = LOAD(x, read_bytes);
    out->write_bytes = LOAD(x, write_bytes);
    out->remote_read_bytes = LOAD(x, remote_read_bytes);
    out->remote_write_bytes = LOAD(x, remote_write_bytes);
    out->zero_reads = LOAD(x, zero_reads);
    out->local_reads = LOAD(x, local_reads);
    out->remote_errors = LOAD(x, remote_errors);
    out->auth_failures = LOAD(x, auth_failures);
    out->frame_auth_failures = LOAD(x, frame_auth_failures);
    out->sealed = (uint32_t)x->spec.seal;
    out->key_pending = x->spec.seal &&
                       !__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE);
    out->clients = LOAD(x, clients);
    for (i = 0; i < x->spec.nslabs; i++) {
        out->degraded_slabs += __atomic_load_n(&x->degraded[i],
                                               __ATOMIC_RELAXED);
        out->stale_slabs += (uint32_t)__atomic_load_n(&x->spec.slabs[i].stale,
                                                      __ATOMIC_RELAXED);
    }
    out->lat_p50_us = sd_hist_percentile(&x->hist, 50);
    out->lat_p99_us = sd_hist_percentile(&x->hist, 99);
    out->read_lat_p50_us = sd_hist_percentile(&x->read_hist, 50);
    out->read_lat_p99_us = sd_hist_percentile(&x->read_hist, 99);
    out->rebuild_left = rebuild_left(x);
    out->stored_pages = sd_bitmap_count(&x->written);
    for (i = 0; i < SD_TIERS; i++) {
        struct sd_export_tier *t = &out->tiers[i];

        t->puts = LOAD(x, ledger[i][LEDGER_PUTS]);
        t->gets = LOAD(x, ledger[i][LEDGER_GETS]);
        t->flushes = LOAD(x, ledger[i][LEDGER_FLUSHES]);
        t->moved_in = LOAD(x, ledger[i][LEDGER_MOVED_IN]);
        t->moved_out = LOAD(x, ledger[i][LEDGER_MOVED_OUT]);
    }
    for (i = 0; i < x->spec.nslabs; i++) {
        out->tiers[slab_tier(x, i)].used += slab_stored(x, i);
    }
    return 0;
}

int sd_exports_key_offer(struct sd_exports *xs,
                         const uint8_t grant[SD_UUID_LEN],
                         uint8_t pub[SD_KW_PUB_LEN])
{
    struct sd_export *x = sd_export_lookup(xs, grant);
    int ret = 0;

    if (!x) {
        return -ENOENT;
    }
    pthread_mutex_lock(&x->lock);
    if (!x->spec.seal) {
        ret = -EINVAL;
    } else if (!x->offer) {
        ret = -EALREADY;
    } else {
        memcpy(pub, x->offer_pub, SD_KW_PUB_LEN);
    }
    pthread_mutex_unlock(&x->lock);
    return ret;
}

int sd_exports_key_wrap(struct sd_exports *xs,
                        const uint8_t grant[SD_UUID_LEN],
                        const uint8_t pub[SD_KW_PUB_LEN],
                        uint8_t blob[SD_KW_BLOB_LEN], char *err,
                        size_t errlen)
{
    struct sd_export *x = sd_export_lookup(xs, grant);
    int ret;

    if (!x) {
        return -ENOENT;
    }
    if (!x->spec.seal) {
        return sd_fail(err, errlen, -EINVAL, "grant: the export of %s is not "
                       "sealed: it has no page key to hand over", x->uuid);
    }
    if (!__atomic_load_n(&x->key_ready, __ATOMIC_ACQUIRE)) {
        return sd_fail(err, errlen, -ENOKEY, "grant: the export of %s waits "
                       "for its own page key (EXPORT_KEY_INSTALL)", x->uuid);
    }
    ret = sd_kw_wrap(x->spec.grant, x->spec.page_key, pub, blob);
    if (ret == -EINVAL) {
        return sd_fail(err, errlen, ret, "offer: not a usable X25519 public "
                       "key; give the key_offer= of the destination's "
                       "EXPORT_CREATE");
    }
    if (ret) {
        return sd_fail(err, errlen, ret, "cannot wrap the page key (OpenSSL "
                       "failed)");
    }
    return 0;
}

int sd_exports_key_install(struct sd_exports *xs,
                           const uint8_t grant[SD_UUID_LEN],
                           const uint8_t blob[SD_KW_BLOB_LEN], char *err,
                           size_t errlen)
{
    struct sd_export *x = sd_export_lookup(xs, grant);
    uint8_t key[SD_KEY_LEN];
    int ret;

    if (!x) {
        return -ENOENT;
    }
    pthread_mutex_lock(&x->lock);
    if (!x->spec.seal) {
        ret = sd_fail(err, errlen, -EINVAL, "grant: the export of %s is not "
                      "sealed: it takes no page key", x->uuid);
    } else if (x->spec.has_page_key) {
        ret = sd_fail(err, errlen, -EALREADY, "grant: the export of %s has "
                      "its page key already", x->uuid);
    } else if ((ret = sd_kw_unwrap(x->offer, x->spec.grant, blob, key))) {
        ret = sd_fail(err, errlen, ret == -EBADMSG ? ret : -EIO, "wrapped: "
                      "does not open with this export's offer (made for "
                      "another host, grant or offer, or altered)");
    } else {
        memcpy(x->spec.page_key, key, SD_KEY_LEN);
        x->spec.has_page_key = 1;
        /* Durable before any page is sealed with it. */
        ret = sd_export_persist(x);
        if (ret) {
            x->spec.has_page_key = 0;
            OPENSSL_cleanse(x->spec.page_key, SD_KEY_LEN);
            sd_fail(err, errlen, ret, "cannot write %s: %s (the export still "
                    "waits for its key)", x->conf, strerror(-ret));
        } else {
            __atomic_store_n(&x->key_ready, 1, __ATOMIC_RELEASE);
            sd_kw_offer_free(x->offer);
            x->offer = NULL;
            sd_log(LOG_INFO, "export %s: page key installed", x->uuid);
        }
    }
    OPENSSL_cleanse(key, sizeof(key));
    pthread_mutex_unlock(&x->lock);
    return ret;
}

int sd_exports_ghost(struct sd_exports *xs,
                     const uint8_t grant[SD_UUID_LEN], size_t max,
                     char **events, uint64_t *dropped)
{
    struct sd_export *x = sd_export_lookup(xs, grant);
    long n;

    if (!x) {
        return -ENOENT;
    }
    pthread_mutex_lock(&x->lock);
    n = sd_ghost_drain(&x->ghost, max, events);
    *dropped = x->ghost.dropped;
    pthread_mutex_unlock(&x->lock);
    return n < 0 ? (int)n : 0;
}
