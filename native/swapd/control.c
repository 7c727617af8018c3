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
 * The control socket: a text protocol, one line per request and reply,
 * split by args.c; a thread serves one client at a time, which also keeps
 * export drops from racing other requests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "args.h"
#include "control.h"
#include "export.h"
#include "export_spec.h"
#include "conn_limits.h"
#include "store.h"
#include "transport.h"
#include "util.h"

/* A client that says nothing for this long is dropped, so it cannot keep
 * the socket from others. */
#define CLIENT_TIMEOUT_MS 30000

/* ---- replies ---- */

static char *reply_fmt(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static char *reply_fmt(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) {
        s = NULL;
    }
    va_end(ap);
    return s;
}

/* "OK " then words, then text, which the verb allocated: freed here. */
static char *reply_ok_text(const char *words, char *text)
{
    char *r = reply_fmt("OK %s%s\n", words, text);

    free(text);
    return r;
}

static char *reply_err(int err, const char *msg)
{
    return reply_fmt("ERR %s %s\n", sd_errno_name(err < 0 ? -err : err),
                     msg);
}

/* Every argument must be one the verb takes: a typo is an error, not a
 * default silently used. */
static char *check_keys(const struct sd_args *a, const char *const *keys)
{
    size_t i, k;

    for (i = 0; i < a->n; i++) {
        for (k = 0; keys[k]; k++) {
            if (strcmp(a->kv[i].key, keys[k]) == 0) {
                break;
            }
        }
        if (!keys[k]) {
            char msg[SD_ERRLEN], *p = msg;

            p += snprintf(msg, sizeof(msg), "%.64s: %s takes no such "
                          "argument; it takes", a->kv[i].key, a->verb);
            for (k = 0; keys[k] && p < msg + sizeof(msg) - 40; k++) {
                p += snprintf(p, (size_t)(msg + sizeof(msg) - p), "%s%s",
                              k ? "," : " ", keys[k]);
            }
            if (k == 0) {
                snprintf(p, (size_t)(msg + sizeof(msg) - p), " none");
            }
            return reply_err(EINVAL, msg);
        }
    }
    return NULL;
}

static int get_grant(const struct sd_args *a, uint8_t grant[SD_UUID_LEN],
                     char **reply)
{
    const char *s = sd_args_get(a, "grant");

    if (!s || sd_uuid_parse(s, strlen(s), grant)) {
        *reply = reply_err(EINVAL, "grant: must be a uuid "
                           "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
        return -EINVAL;
    }
    return 0;
}

static char *no_export(const uint8_t grant[SD_UUID_LEN])
{
    char uuid[SD_UUID_STRLEN + 1];

    sd_uuid_format(grant, uuid);
    return reply_fmt("ERR ENOENT grant: no export of %s here\n", uuid);
}

/* ---- verbs ---- */

static char *do_ping(const struct sd_control_ctx *c, const struct sd_args *a)
{
    static const char *const keys[] = { NULL };
    char *r = check_keys(a, keys);

    return r ? r : reply_fmt("OK version=1 transport=%s rdma=%s fabric=%s "
                             "endpoint=%s\n", c->transport, c->rdma,
                             c->fabric, c->endpoint);
}

static char *do_grant_alloc(const struct sd_control_ctx *c,
                            const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "key", "slab_size",
                                        "slabs", NULL };
    uint8_t grant[SD_UUID_LEN], key[SD_KEY_LEN];
    uint64_t slab_size, *addrs = NULL;
    char *r = check_keys(a, keys), *out = NULL;
    uint32_t *idx = NULL;
    size_t n = 0, done = 0, i, used;
    const char *s;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    s = sd_args_get(a, "key");
    if (!s || sd_hex_decode(s, strlen(s), key, SD_KEY_LEN)) {
        return reply_err(EINVAL, "key: must be 64 hex digits");
    }
    s = sd_args_get(a, "slab_size");
    if (!s || sd_parse_u64(s, strlen(s), UINT64_MAX, &slab_size) ||
        slab_size == 0 || slab_size % SD_PAGE_SIZE) {
        return reply_err(EINVAL, "slab_size: must be a non-zero multiple of "
                         "4096 bytes");
    }
    s = sd_args_get(a, "slabs");
    ret = s ? sd_parse_index_list(s, SD_MAX_SLABS, &idx, &n) : -EINVAL;
    if (ret) {
        return reply_err(ret, "slabs: must be slab indexes, comma-separated, "
                         "each once");
    }
    addrs = calloc(n, sizeof(*addrs));
    if (!addrs) {
        free(idx);
        return NULL;
    }
    ret = sd_store_alloc(c->store, grant, key, slab_size, idx, n, addrs,
                         &done);
    if (ret == -ENOMEM) {
        struct sd_store_stats st;

        sd_store_stats(c->store, &st);
        r = reply_fmt("ERR ENOMEM slabs: this donor cannot lend another "
                      "slab of %llu bytes (capacity=%llu used=%llu)\n",
                      (unsigned long long)slab_size,
                      (unsigned long long)st.capacity,
                      (unsigned long long)st.used);
    } else if (ret == -EEXIST) {
        r = reply_err(EEXIST, "grant: already has slabs on this donor "
                      "(GRANT_FREE it first)");
    } else if (ret == -EINVAL) {
        r = reply_err(EINVAL, "slab_size: the store refused it");
    } else if (ret) {
        r = reply_err(ret, "slabs: the store could not allocate them");
    } else {
        /* "i:addr," is at most 10 + 1 + 20 + 1 characters. */
        out = malloc(done * 32 + 1);
        if (out) {
            used = 0;
            out[0] = '\0';
            for (i = 0; i < done; i++) {
                used += (size_t)sprintf(out + used, "%s%u:%llu",
                                        i ? "," : "", idx[i],
                                        (unsigned long long)addrs[i]);
            }
            /* rkey=0: the reply keeps its format, but memory keys go
             * only to consumers that prove the grant's secret, over the
             * fabric transport's handshake (fabric.c). */
            r = reply_fmt("OK endpoint=%s rkey=0 slabs=%s\n", c->endpoint,
                          out);
            free(out);
        }
    }
    free(idx);
    free(addrs);
    return r;
}

static char *do_grant_free(const struct sd_control_ctx *c,
                           const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "slabs", NULL };
    struct sd_store_stats before, after;
    uint8_t grant[SD_UUID_LEN];
    char *r = check_keys(a, keys);
    uint32_t *idx = NULL;
    const char *s;
    size_t n = 0;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    s = sd_args_get(a, "slabs");
    if (s && (ret = sd_parse_index_list(s, SD_MAX_SLABS, &idx, &n))) {
        return reply_err(ret, "slabs: must be slab indexes, comma-separated, "
                         "each once");
    }
    /* The control thread is the only one that frees: the difference is
     * what this call freed. */
    sd_store_stats(c->store, &before);
    ret = sd_store_release(c->store, grant, idx, n);
    sd_store_stats(c->store, &after);
    free(idx);
    if (ret == -ENOENT) {
        return reply_err(ENOENT, "grant: has no slabs on this donor");
    }
    if (ret) {
        return reply_err(ret, "grant: the store could not free it");
    }
    return reply_fmt("OK freed=%u\n", before.slabs - after.slabs);
}

static char *do_donor_stats(const struct sd_control_ctx *c,
                            const struct sd_args *a)
{
    static const char *const keys[] = { NULL };
    struct sd_store_stats st;
    struct sd_tcp_server_stats ts = { 0 };
    char *r = check_keys(a, keys);

    if (r) {
        return r;
    }
    sd_store_stats(c->store, &st);
    if (!c->tcp_server) {
        return reply_fmt("OK capacity=%llu used=%llu seals=%llu grants=%u "
                         "slabs=%u refused=%llu\n",
                         (unsigned long long)st.capacity,
                         (unsigned long long)st.used,
                         (unsigned long long)st.seals, st.grants, st.slabs,
                         (unsigned long long)st.refused);
    }
    /* The donor port's refusals (conn_limits.h), as its reports count
     * them. */
    sd_tcp_server_stats(c->tcp_server, &ts);
    return reply_fmt("OK capacity=%llu used=%llu seals=%llu grants=%u "
                     "slabs=%u refused=%llu frames_refused_key=%llu "
                     "frames_refused_auth=%llu frames_malformed=%llu\n",
                     (unsigned long long)st.capacity,
                     (unsigned long long)st.used,
                     (unsigned long long)st.seals, st.grants, st.slabs,
                     (unsigned long long)st.refused,
                     (unsigned long long)ts.refused[SD_REFUSED_KEY],
                     (unsigned long long)ts.refused[SD_REFUSED_AUTH],
                     (unsigned long long)ts.refused[SD_REFUSED_FRAME]);
}

static char *do_export_create(const struct sd_control_ctx *c,
                              const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "key", "size", "slab_size",
                                        "local", "slabs", "local_slabs",
                                        "adopt", "seal", NULL };
    char err[SD_ERRLEN] = "", sock[PATH_MAX], uuid[SD_UUID_STRLEN + 1];
    char offer[2 * SD_KW_PUB_LEN + 1];
    uint8_t grant[SD_UUID_LEN], pub[SD_KW_PUB_LEN];
    struct sd_export_spec spec;
    char *r = check_keys(a, keys);
    int ret;

    if (r) {
        return r;
    }
    ret = sd_export_spec_parse(a, &spec, err, sizeof(err));
    if (ret) {
        return reply_err(ret, err);
    }
    sd_uuid_format(spec.grant, uuid);
    ret = sd_exports_create(c->exports, &spec, sock, sizeof(sock), err,
                            sizeof(err));
    if (ret) {
        return reply_err(ret, err);
    }
    /* An adopted sealed export waits for its key: the source wraps it
     * for this offer. */
    if (sd_uuid_parse(uuid, strlen(uuid), grant) == 0 &&
        sd_exports_key_offer(c->exports, grant, pub) == 0) {
        sd_hex_encode(pub, SD_KW_PUB_LEN, offer);
        return reply_fmt("OK name=memagg-swap-%s socket=%s key_offer=%s\n",
                         uuid, sock, offer);
    }
    return reply_fmt("OK name=memagg-swap-%s socket=%s\n", uuid, sock);
}

static char *do_export_key_wrap(const struct sd_control_ctx *c,
                                const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "offer", NULL };
    uint8_t grant[SD_UUID_LEN], pub[SD_KW_PUB_LEN], blob[SD_KW_BLOB_LEN];
    char *r = check_keys(a, keys), err[SD_ERRLEN] = "";
    char hex[2 * SD_KW_BLOB_LEN + 1];
    const char *s;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    s = sd_args_get(a, "offer");
    if (!s || sd_hex_decode(s, strlen(s), pub, SD_KW_PUB_LEN)) {
        return reply_err(EINVAL, "offer: must be the 64 hex digits of the "
                         "destination's key_offer");
    }
    ret = sd_exports_key_wrap(c->exports, grant, pub, blob, err,
                              sizeof(err));
    if (ret == -ENOENT) {
        return no_export(grant);
    }
    if (ret) {
        return reply_err(ret, err);
    }
    sd_hex_encode(blob, SD_KW_BLOB_LEN, hex);
    return reply_fmt("OK wrapped=%s\n", hex);
}

static char *do_export_key_install(const struct sd_control_ctx *c,
                                   const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "wrapped", NULL };
    uint8_t grant[SD_UUID_LEN], blob[SD_KW_BLOB_LEN];
    char *r = check_keys(a, keys), err[SD_ERRLEN] = "";
    const char *s;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    s = sd_args_get(a, "wrapped");
    if (!s || sd_hex_decode(s, strlen(s), blob, SD_KW_BLOB_LEN)) {
        return reply_fmt("ERR EINVAL wrapped: must be the %d hex digits "
                         "EXPORT_KEY_WRAP gave on the source\n",
                         2 * SD_KW_BLOB_LEN);
    }
    ret = sd_exports_key_install(c->exports, grant, blob, err, sizeof(err));
    if (ret == -ENOENT) {
        return no_export(grant);
    }
    return ret ? reply_err(ret, err) : reply_fmt("OK\n");
}

static char *do_export_describe(const struct sd_control_ctx *c,
                                const struct sd_args *a)
{
    static const char *const keys[] = { "grant", NULL };
    uint8_t grant[SD_UUID_LEN];
    char *r = check_keys(a, keys), *text;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    ret = sd_exports_describe(c->exports, grant, &text);
    if (ret == -ENOENT) {
        return no_export(grant);
    }
    if (ret) {
        return NULL;
    }
    return reply_ok_text("", text);
}

static char *do_export_reclaim(const struct sd_control_ctx *c,
                               const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "slabs", NULL };
    uint8_t grant[SD_UUID_LEN];
    char *r = check_keys(a, keys), err[SD_ERRLEN] = "";
    uint32_t *idx = NULL, done = 0;
    const char *s;
    size_t n = 0;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    s = sd_args_get(a, "slabs");
    if (!s || (strcmp(s, "all") != 0 &&
               sd_parse_index_list(s, SD_MAX_SLABS, &idx, &n))) {
        return reply_err(EINVAL, "slabs: must be 'all' or slab indexes, "
                         "comma-separated, each once");
    }
    ret = sd_exports_reclaim(c->exports, grant, idx, n, &done, err,
                             sizeof(err));
    free(idx);
    if (ret == -ENOENT) {
        return no_export(grant);
    }
    return ret ? reply_err(ret, err) : reply_fmt("OK reclaimed=%u\n", done);
}

static char *do_export_promote(const struct sd_control_ctx *c,
                               const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "slab", "endpoint", "addr",
                                        NULL };
    uint8_t grant[SD_UUID_LEN];
    char *r = check_keys(a, keys), err[SD_ERRLEN] = "";
    const char *slab = sd_args_get(a, "slab");
    const char *endpoint = sd_args_get(a, "endpoint");
    const char *addr = sd_args_get(a, "addr");
    const struct sd_transport *t;
    uint64_t index, at, copied = 0;
    char host[256];
    uint16_t port;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    if (!slab || sd_parse_u64(slab, strlen(slab), SD_MAX_SLABS - 1,
                              &index)) {
        return reply_err(EINVAL, "slab: must be the index of one slab");
    }
    if (!endpoint || strlen(endpoint) >= SD_ENDPOINT_MAX ||
        sd_endpoint_parse(endpoint, &t, host, sizeof(host), &port)) {
        return reply_fmt("ERR EINVAL endpoint: '%.64s' must be the "
                         "donor's tcp://host:port or rdma://host:port\n",
                         endpoint ? endpoint : "");
    }
    if (!addr || sd_parse_u64(addr, strlen(addr), UINT64_MAX, &at)) {
        return reply_err(EINVAL, "addr: must be the address GRANT_ALLOC "
                         "gave for the slab on the donor");
    }
    ret = sd_exports_promote(c->exports, grant, (uint32_t)index, endpoint,
                             at, &copied, err, sizeof(err));
    if (ret == -ENOENT) {
        return no_export(grant);
    }
    return ret ? reply_err(ret, err) :
                 reply_fmt("OK pages=%llu\n", (unsigned long long)copied);
}

static char *do_export_rebuild(const struct sd_control_ctx *c,
                               const struct sd_args *a)
{
    static const char *const keys[] = { "grant", NULL };
    uint8_t grant[SD_UUID_LEN];
    char *r = check_keys(a, keys), err[SD_ERRLEN] = "";
    uint64_t left = 0;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    ret = sd_exports_rebuild(c->exports, grant, &left, err, sizeof(err));
    if (ret == -ENOENT) {
        return no_export(grant);
    }
    return ret ? reply_err(ret, err) :
                 reply_fmt("OK rebuild_left=%llu\n", (unsigned long long)left);
}

static char *do_export_drop(const struct sd_control_ctx *c,
                            const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "delete", NULL };
    uint8_t grant[SD_UUID_LEN];
    char *r = check_keys(a, keys);
    const char *del = sd_args_get(a, "delete");

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    if (del && strcmp(del, "0") != 0 && strcmp(del, "1") != 0) {
        return reply_err(EINVAL, "delete: must be 0 or 1");
    }
    if (sd_exports_drop(c->exports, grant, del && del[0] == '1')) {
        return no_export(grant);
    }
    return reply_fmt("OK\n");
}

static char *do_export_list(const struct sd_control_ctx *c,
                            const struct sd_args *a)
{
    static const char *const keys[] = { NULL };
    char *r = check_keys(a, keys), *text;

    if (r) {
        return r;
    }
    if (sd_exports_list(c->exports, &text)) {
        return NULL;
    }
    return reply_ok_text("grants=", text);
}

static char *do_export_stats(const struct sd_control_ctx *c,
                             const struct sd_args *a)
{
    static const char *const keys[] = { "grant", NULL };
    struct sd_export_stats st;
    struct sd_strbuf b = { 0 };
    uint8_t grant[SD_UUID_LEN];
    char *r = check_keys(a, keys);
    unsigned i;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    if (sd_exports_stats(c->exports, grant, &st)) {
        return no_export(grant);
    }
    sd_strbuf_printf(&b, "OK reads=%llu writes=%llu read_bytes=%llu "
                     "write_bytes=%llu zero_reads=%llu local_reads=%llu "
                     "remote_errors=%llu degraded_slabs=%u clients=%u "
                     "lat_p50_us=%llu lat_p99_us=%llu rebuild_left=%llu "
                     "stored_pages=%llu auth_failures=%llu sealed=%u "
                     "key_pending=%u frame_auth_failures=%llu "
                     "read_lat_p50_us=%llu read_lat_p99_us=%llu "
                     "remote_read_bytes=%llu remote_write_bytes=%llu "
                     "stale_slabs=%u",
                     (unsigned long long)st.reads,
                     (unsigned long long)st.writes,
                     (unsigned long long)st.read_bytes,
                     (unsigned long long)st.write_bytes,
                     (unsigned long long)st.zero_reads,
                     (unsigned long long)st.local_reads,
                     (unsigned long long)st.remote_errors,
                     st.degraded_slabs, st.clients,
                     (unsigned long long)st.lat_p50_us,
                     (unsigned long long)st.lat_p99_us,
                     (unsigned long long)st.rebuild_left,
                     (unsigned long long)st.stored_pages,
                     (unsigned long long)st.auth_failures, st.sealed,
                     st.key_pending,
                     (unsigned long long)st.frame_auth_failures,
                     (unsigned long long)st.read_lat_p50_us,
                     (unsigned long long)st.read_lat_p99_us,
                     (unsigned long long)st.remote_read_bytes,
                     (unsigned long long)st.remote_write_bytes,
                     st.stale_slabs);
    for (i = 0; i < SD_TIERS; i++) {
        const struct sd_export_tier *t = &st.tiers[i];
        unsigned l = i + 1;

        sd_strbuf_printf(&b, " l%u_puts=%llu l%u_gets=%llu "
                         "l%u_flushes=%llu l%u_moved_in=%llu "
                         "l%u_moved_out=%llu l%u_evicts=%llu l%u_used=%llu",
                         l, (unsigned long long)t->puts,
                         l, (unsigned long long)t->gets,
                         l, (unsigned long long)t->flushes,
                         l, (unsigned long long)t->moved_in,
                         l, (unsigned long long)t->moved_out,
                         l, (unsigned long long)t->evicts,
                         l, (unsigned long long)t->used);
    }
    sd_strbuf_printf(&b, "\n");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

static char *do_ghost(const struct sd_control_ctx *c, const struct sd_args *a)
{
    static const char *const keys[] = { "grant", "max", NULL };
    uint8_t grant[SD_UUID_LEN];
    char *r = check_keys(a, keys), *events;
    uint64_t max = SD_GHOST_DEFAULT_MAX, dropped;
    const char *s;
    int ret;

    if (r || get_grant(a, grant, &r)) {
        return r;
    }
    s = sd_args_get(a, "max");
    if (s && (sd_parse_u64(s, strlen(s), SD_GHOST_RING, &max) || !max)) {
        return reply_fmt("ERR EINVAL max: must be 1 to %u events\n",
                         SD_GHOST_RING);
    }
    ret = sd_exports_ghost(c->exports, grant, (size_t)max, &events,
                           &dropped);
    if (ret == -ENOENT) {
        return no_export(grant);
    }
    if (ret) {
        return NULL;
    }
    r = reply_fmt("OK events=%s dropped=%llu\n", events,
                  (unsigned long long)dropped);
    free(events);
    return r;
}

static const struct {
    const char *verb;
    char *(*fn)(const struct sd_control_ctx *, const struct sd_args *);
    int donor;                  /* needs the store */
} verbs[] = {
    { "PING", do_ping, 0 },
    { "GRANT_ALLOC", do_grant_alloc, 1 },
    { "GRANT_FREE", do_grant_free, 1 },
    { "DONOR_STATS", do_donor_stats, 1 },
    { "EXPORT_CREATE", do_export_create, 0 },
    { "EXPORT_DESCRIBE", do_export_describe, 0 },
    { "EXPORT_RECLAIM", do_export_reclaim, 0 },
    { "EXPORT_PROMOTE", do_export_promote, 0 },
    { "EXPORT_REBUILD", do_export_rebuild, 0 },
    { "EXPORT_DROP", do_export_drop, 0 },
    { "EXPORT_LIST", do_export_list, 0 },
    { "EXPORT_STATS", do_export_stats, 0 },
    { "EXPORT_KEY_WRAP", do_export_key_wrap, 0 },
    { "EXPORT_KEY_INSTALL", do_export_key_install, 0 },
    { "GHOST", do_ghost, 0 },
};

int sd_control_handle(const struct sd_control_ctx *ctx, char *line,
                      char **reply)
{
    char err[SD_ERRLEN] = "";
    struct sd_args args;
    size_t i;

    *reply = NULL;
    if (sd_control_parse_line(line, &args, err, sizeof(err))) {
        *reply = reply_err(EINVAL, err);
        return *reply ? 0 : -ENOMEM;
    }
    for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
        if (strcmp(args.verb, verbs[i].verb) == 0) {
            if ((verbs[i].donor && !ctx->store) ||
                (!verbs[i].donor && verbs[i].fn != do_ping &&
                 !ctx->exports)) {
                *reply = reply_fmt("ERR ENODEV verb: %s is not served by "
                                   "this swapd\n", args.verb);
            } else {
                *reply = verbs[i].fn(ctx, &args);
            }
            return *reply ? 0 : -ENOMEM;
        }
    }
    *reply = reply_fmt("ERR EINVAL verb: unknown '%.64s'; one of PING,"
                       "GRANT_ALLOC,GRANT_FREE,DONOR_STATS,EXPORT_CREATE,"
                       "EXPORT_DESCRIBE,EXPORT_RECLAIM,EXPORT_REBUILD,"
                       "EXPORT_DROP,EXPORT_LIST,EXPORT_STATS,"
                       "EXPORT_KEY_WRAP,EXPORT_KEY_INSTALL,GHOST\n",
                       args.verb);
    return *reply ? 0 : -ENOMEM;
}

/* ---- the socket ---- */

struct sd_control {
    int fd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct sd_control_ctx ctx;
    int stop_pipe[2];
    pthread_t thread;
    char *buf;                  /* SD_CONTROL_MAX_LINE + 1 */
};

/* Wait for fd to be readable; 0, or -1 when stopping or timed out. */
static int wait_readable(struct sd_control *c, int fd, int timeout_ms)
{
    struct pollfd pfd[2] = {
        { .fd = fd, .events = POLLIN },
        { .fd = c->stop_pipe[0], .events = POLLIN },
    };

    for (;;) {
        int n = poll(pfd, 2, timeout_ms);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0 || pfd[1].revents) {
            return -1;
        }
        return 0;
    }
}

static void send_all(int fd, const char *s)
{
    size_t len = strlen(s);

    while (len) {
        ssize_t n = send(fd, s, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        s += n;
        len -= (size_t)n;
    }
}

/* Serve one client's lines until it leaves. */
static void serve_client(struct sd_control *c, int fd)
{
    size_t used = 0;

    for (;;) {
        char *nl;
        ssize_t n;

        while ((nl = memchr(c->buf, '\n', used))) {
            size_t len = (size_t)(nl - c->buf) + 1;
            char *reply;

            *nl = '\0';
            if (sd_control_handle(&c->ctx, c->buf, &reply)) {
                send_all(fd, "ERR ENOMEM control: out of memory\n");
            } else {
                send_all(fd, reply);
                free(reply);
            }
            memmove(c->buf, c->buf + len, used - len);
            used -= len;
        }
        if (used == SD_CONTROL_MAX_LINE) {
            send_all(fd, "ERR E2BIG line: longer than 65536 bytes\n");
            return;
        }
        if (wait_readable(c, fd, CLIENT_TIMEOUT_MS)) {
            return;
        }
        n = recv(fd, c->buf + used, SD_CONTROL_MAX_LINE - used, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        used += (size_t)n;
    }
}

static void *control_thread(void *arg)
{
    struct sd_control *c = arg;

    for (;;) {
        int fd;

        if (wait_readable(c, c->fd, -1)) {
            return NULL;
        }
        fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        serve_client(c, fd);
        close(fd);
    }
}

int sd_control_start(const char *path, const struct sd_control_ctx *ctx,
                     struct sd_control **out, char *err, size_t errlen)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    struct sd_control *c;
    int ret;

    if (strlen(path) >= sizeof(addr.sun_path)) {
        snprintf(err, errlen, "--control: %s is longer than %zu characters",
                 path, sizeof(addr.sun_path) - 1);
        return -ENAMETOOLONG;
    }
    c = calloc(1, sizeof(*c));
    if (!c || !(c->buf = malloc(SD_CONTROL_MAX_LINE + 1))) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    strcpy(addr.sun_path, path);
    strcpy(c->path, path);
    c->ctx = *ctx;
    c->stop_pipe[0] = c->stop_pipe[1] = -1;
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        ret = -errno;
        snprintf(err, errlen, "--control: socket: %s", strerror(errno));
        goto fail;
    }
    unlink(path);       /* left by an earlier run */
    if (bind(c->fd, (struct sockaddr *)&addr, sizeof(addr)) ||
        chmod(path, 0600) || listen(c->fd, 16)) {
        ret = -errno;
        snprintf(err, errlen, "--control: cannot listen on %s: %s", path,
                 strerror(errno));
        goto fail;
    }
    if (pipe2(c->stop_pipe, O_CLOEXEC)) {
        ret = -errno;
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    ret = -pthread_create(&c->thread, NULL, control_thread, c);
    if (ret) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(-ret));
        goto fail;
    }
    *out = c;
    return 0;

fail:
    if (c->fd >= 0) {
        close(c->fd);
        unlink(path);
    }
    if (c->stop_pipe[0] >= 0) {
        close(c->stop_pipe[0]);
        close(c->stop_pipe[1]);
    }
    free(c->buf);
    free(c);
    return ret;
}

void sd_control_stop(struct sd_control *c)
{
    if (!c) {
        return;
    }
    if (write(c->stop_pipe[1], "x", 1) < 0) {
        sd_log(LOG_ERR, "control: cannot stop its thread: %s",
               strerror(errno));
    }
    pthread_join(c->thread, NULL);
    close(c->fd);
    unlink(c->path);
    close(c->stop_pipe[0]);
    close(c->stop_pipe[1]);
    free(c->buf);
    free(c);
}
