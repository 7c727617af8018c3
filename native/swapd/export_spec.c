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

/* The export table's parser and format: pure, fuzzed with the control
 * protocol. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "args.h"
#include "export_spec.h"
#include "util.h"

static int parse_u64_field(const struct sd_args *a, const char *key,
                           uint64_t *v, char *err, size_t errlen)
{
    const char *s = sd_args_get(a, key);

    if (!s) {
        return sd_fail(err, errlen, -EINVAL, "%s: missing", key);
    }
    if (sd_parse_u64(s, strlen(s), UINT64_MAX, v)) {
        return sd_fail(err, errlen, -EINVAL,
                       "%s: must be a decimal number of bytes, not '%.40s'",
                       key, s);
    }
    return 0;
}

/* One "<i>[-<j>]@<endpoint>@<addr>@<rkey>" of slabs=: slabs i to j on one
 * donor, slab k at addr + (k - i) * slab_size. */
static int parse_slab_ref(const char *s, size_t len,
                          struct sd_export_spec *spec, char *err,
                          size_t errlen)
{
    const char *at1 = memchr(s, '@', len), *at3 = NULL, *at2 = NULL, *p;
    const char *dash = at1 ? memchr(s, '-', (size_t)(at1 - s)) : NULL;
    uint64_t first, last, addr, rkey, k;
    struct sd_export_slab *slab;

    for (p = s + len; p > s; p--) {
        if (p[-1] == '@') {
            if (!at3) {
                at3 = p - 1;
            } else {
                at2 = p - 1;
                break;
            }
        }
    }
    if (!at1 || !at2 || at2 <= at1 ||
        sd_parse_u64(s, (size_t)((dash ? dash : at1) - s), UINT32_MAX,
                     &first) ||
        (dash && sd_parse_u64(dash + 1, (size_t)(at1 - dash - 1),
                              UINT32_MAX, &last)) ||
        sd_parse_u64(at2 + 1, (size_t)(at3 - at2 - 1), UINT64_MAX, &addr) ||
        sd_parse_u64(at3 + 1, (size_t)(s + len - at3 - 1), UINT32_MAX,
                     &rkey)) {
        return sd_fail(err, errlen, -EINVAL, "slabs: '%.*s' is not "
                       "<index>[-<index>]@<endpoint>@<addr>@<rkey>",
                       (int)(len > 80 ? 80 : len), s);
    }
    if (!dash) {
        last = first;
    }
    if (last < first) {
        return sd_fail(err, errlen, -EINVAL, "slabs: the range %llu-%llu runs "
                       "backwards", (unsigned long long)first,
                       (unsigned long long)last);
    }
    if (last >= spec->nslabs) {
        return sd_fail(err, errlen, -EINVAL, "slabs: index %llu is beyond the "
                       "export's %u slabs (size / slab_size)",
                       (unsigned long long)last, spec->nslabs);
    }
    if ((last - first) > (UINT64_MAX - addr) / spec->slab_size) {
        return sd_fail(err, errlen, -EINVAL, "slabs: the addresses of slabs "
                       "%llu-%llu pass 2^64", (unsigned long long)first,
                       (unsigned long long)last);
    }
    if (at2 - at1 - 1 <= 0 || at2 - at1 - 1 >= SD_ENDPOINT_MAX) {
        return sd_fail(err, errlen, -EINVAL, "slabs: the endpoint of slab "
                       "%llu must be 1 to %d characters (scheme://host:port)",
                       (unsigned long long)first, SD_ENDPOINT_MAX - 1);
    }
    for (k = first; k <= last; k++) {
        slab = &spec->slabs[k];
        if (slab->endpoint[0]) {
            return sd_fail(err, errlen, -EINVAL, "slabs: index %llu is listed "
                           "twice", (unsigned long long)k);
        }
        memcpy(slab->endpoint, at1 + 1, (size_t)(at2 - at1 - 1));
        slab->endpoint[at2 - at1 - 1] = '\0';
        slab->addr = addr + (k - first) * spec->slab_size;
        slab->rkey = (uint32_t)rkey;
        slab->local = 0;
    }
    return 0;
}

/* adopt=, and the rebuilt= and rebuild_started= of an adopted export's
 * .conf; called once the slabs are known. */
static int parse_adopt(const struct sd_args *a, struct sd_export_spec *spec,
                       int any_local_slabs, char *err, size_t errlen)
{
    const char *s = sd_args_get(a, "adopt");
    const char *started = sd_args_get(a, "rebuild_started");
    uint64_t v;
    uint32_t i;

    if (s && strcmp(s, "0") != 0 && strcmp(s, "1") != 0) {
        return sd_fail(err, errlen, -EINVAL, "adopt: must be 0 or 1");
    }
    spec->adopt = s && s[0] == '1';
    s = sd_args_get(a, "rebuilt");
    if (s && !spec->adopt) {
        return sd_fail(err, errlen, -EINVAL, "rebuilt: only an adopted export "
                       "(adopt=1) has a rebuild");
    }
    if (s && sd_parse_u64(s, strlen(s), spec->nslabs - 1, &v)) {
        return sd_fail(err, errlen, -EINVAL, "rebuilt: must be a number of "
                       "slabs below %u", spec->nslabs);
    }
    spec->rebuilt = s ? (uint32_t)v : 0;
    if (started && !s) {
        return sd_fail(err, errlen, -EINVAL, "rebuild_started: only an "
                       "adopted export's .conf has it, with rebuilt=");
    }
    if (started && strcmp(started, "0") != 0 && strcmp(started, "1") != 0) {
        return sd_fail(err, errlen, -EINVAL,
                       "rebuild_started: must be 0 or 1");
    }
    /* A .conf without rebuild_started= predates EXPORT_REBUILD: its
     * rebuild ran from the adoption on. */
    spec->rebuild_started = started ? started[0] == '1' : s != NULL;
    if (!spec->rebuild_started && spec->rebuilt) {
        return sd_fail(err, errlen, -EINVAL, "rebuilt: a rebuild not started "
                       "(rebuild_started=0) has rebuilt no slab");
    }
    if (!spec->adopt) {
        return 0;
    }
    for (i = 0; i < spec->nslabs; i++) {
        if (!spec->slabs[i].endpoint[0]) {
            return sd_fail(err, errlen, -EINVAL, "slabs: an adopted export "
                           "reads every slab from its donor; slab %u has none",
                           i);
        }
    }
    /* Slabs degraded during a rebuild (the .conf's rebuilt= says so)
     * still read the pages the local copy lacks from their donors; a
     * table's degraded or reclaimed slabs have their data in the
     * source's local copy only. */
    for (i = 0; i < spec->nslabs && any_local_slabs && !s; i++) {
        if (spec->slabs[i].local) {
            return sd_fail(err, errlen, -EINVAL, "local_slabs: an adopted "
                           "export reads every slab from its donor; slab %u "
                           "is served from the local copy, whose data only "
                           "the source host has", i);
        }
    }
    return 0;
}

/* The int flag at offset off (local, stale) of struct sd_export_slab; one
 * helper for the parser, which sets it, and the format, which reads it. */
static int *slab_flag(const struct sd_export_slab *slab, size_t off)
{
    return (int *)((char *)slab + off);
}

/* <name>=<i,...>: sets the flag at off of each slab listed (indexes below
 * nslabs, each once); 0, setting nothing, when absent.  -EINVAL with err
 * naming the field. */
static int parse_slab_flags(const struct sd_args *a, const char *name,
                            size_t off, struct sd_export_spec *spec,
                            char *err, size_t errlen)
{
    const char *s = sd_args_get(a, name);
    uint32_t *idx;
    size_t n, i;

    if (!s) {
        return 0;
    }
    if (sd_parse_index_list(s, spec->nslabs, &idx, &n)) {
        return sd_fail(err, errlen, -EINVAL, "%s: must be slab indexes "
                       "below %u, comma-separated, each once", name,
                       spec->nslabs);
    }
    for (i = 0; i < n; i++) {
        *slab_flag(&spec->slabs[idx[i]], off) = 1;
    }
    free(idx);
    return 0;
}

/* A stale slab's writes its local copy missed are on its donor only. */
static int check_stale(const struct sd_export_spec *spec, char *err,
                       size_t errlen)
{
    uint32_t i;

    for (i = 0; i < spec->nslabs; i++) {
        if (spec->slabs[i].stale && !spec->slabs[i].endpoint[0]) {
            return sd_fail(err, errlen, -EINVAL, "stale_slabs: slab %u has "
                           "no donor, but only its donor has the writes its "
                           "local copy missed", i);
        }
    }
    return 0;
}

int sd_export_spec_parse(const struct sd_args *a, struct sd_export_spec *spec,
                         char *err, size_t errlen)
{
    const char *s;
    uint32_t i;
    int ret;

    memset(spec, 0, sizeof(*spec));
    s = sd_args_get(a, "grant");
    if (!s || sd_uuid_parse(s, strlen(s), spec->grant)) {
        return sd_fail(err, errlen, -EINVAL, "grant: must be a uuid "
                       "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
    }
    s = sd_args_get(a, "key");
    if (!s || sd_hex_decode(s, strlen(s), spec->key, SD_KEY_LEN)) {
        return sd_fail(err, errlen, -EINVAL, "key: must be %d hex digits",
                       2 * SD_KEY_LEN);
    }
    if ((ret = parse_u64_field(a, "slab_size", &spec->slab_size, err,
                               errlen)) ||
        (ret = parse_u64_field(a, "size", &spec->size, err, errlen))) {
        return ret;
    }
    if (spec->slab_size == 0 || spec->slab_size % SD_PAGE_SIZE ||
        spec->slab_size > (1ULL << 40)) {
        return sd_fail(err, errlen, -EINVAL, "slab_size: must be a non-zero "
                       "multiple of %u up to 1 TiB", SD_PAGE_SIZE);
    }
    if (spec->size == 0 || spec->size % spec->slab_size) {
        return sd_fail(err, errlen, -EINVAL, "size: must be a non-zero "
                       "multiple of slab_size (%llu)",
                       (unsigned long long)spec->slab_size);
    }
    if (spec->size / spec->slab_size > SD_MAX_SLABS) {
        return sd_fail(err, errlen, -EINVAL, "size: at most %u slabs "
                       "(size / slab_size)", SD_MAX_SLABS);
    }
    s = sd_args_get(a, "local");
    if (!s || s[0] != '/' || strlen(s) >= sizeof(spec->local)) {
        return sd_fail(err, errlen, -EINVAL, "local: must be the absolute "
                       "path of the durability copy");
    }
    strcpy(spec->local, s);
    spec->nslabs = (uint32_t)(spec->size / spec->slab_size);
    spec->slabs = calloc(spec->nslabs, sizeof(*spec->slabs));
    if (!spec->slabs) {
        return sd_fail(err, errlen, -ENOMEM, "size: no memory for %u slabs",
                       spec->nslabs);
    }
    for (i = 0; i < spec->nslabs; i++) {
        spec->slabs[i].local = 1;
    }
    s = sd_args_get(a, "slabs");
    if (!s) {
        ret = sd_fail(err, errlen, -EINVAL, "slabs: missing (<index>[-<index>]"
                      "@<endpoint>@<addr>@<rkey>,...; may be empty)");
        goto out;
    }
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);

        ret = parse_slab_ref(s, len, spec, err, errlen);
        if (ret) {
            goto out;
        }
        s += len + (comma ? 1 : 0);
    }
    if ((ret = parse_slab_flags(a, "local_slabs",
                                offsetof(struct sd_export_slab, local), spec,
                                err, errlen)) ||
        (ret = parse_adopt(a, spec, sd_args_get(a, "local_slabs") != NULL,
                           err, errlen)) ||
        (ret = parse_slab_flags(a, "stale_slabs",
                                offsetof(struct sd_export_slab, stale), spec,
                                err, errlen)) ||
        (ret = check_stale(spec, err, errlen))) {
        goto out;
    }
    s = sd_args_get(a, "seal");
    if (s && strcmp(s, "0") != 0 && strcmp(s, "1") != 0) {
        ret = sd_fail(err, errlen, -EINVAL, "seal: must be 0 or 1");
        goto out;
    }
    spec->seal = s && s[0] == '1';
    s = sd_args_get(a, "page_key");
    if (s && !spec->seal) {
        ret = sd_fail(err, errlen, -EINVAL, "page_key: only a sealed export "
                      "(seal=1) has a page key");
        goto out;
    }
    if (s && sd_hex_decode(s, strlen(s), spec->page_key, SD_KEY_LEN)) {
        ret = sd_fail(err, errlen, -EINVAL, "page_key: must be %d hex digits",
                      2 * SD_KEY_LEN);
        goto out;
    }
    spec->has_page_key = s != NULL;
    return 0;

out:
    sd_export_spec_free(spec);
    return ret;
}

void sd_export_spec_free(struct sd_export_spec *spec)
{
    free(spec->slabs);
    spec->slabs = NULL;
    OPENSSL_cleanse(spec->page_key, sizeof(spec->page_key));
}

/* Whether slab j follows slab j - 1 on the same donor, right after it. */
static int continues_run(const struct sd_export_spec *spec, uint32_t j)
{
    const struct sd_export_slab *prev = &spec->slabs[j - 1];
    const struct sd_export_slab *s = &spec->slabs[j];

    return strcmp(s->endpoint, prev->endpoint) == 0 &&
           s->rkey == prev->rkey &&
           prev->addr <= UINT64_MAX - spec->slab_size &&
           s->addr == prev->addr + spec->slab_size;
}

/* <name><i>,<j>,... of the slabs with a donor whose flag at off is set;
 * nothing when none is.  Read atomically: degrade, reclaim and a write
 * the local copy missed set them while the table is saved. */
static void format_slab_flags(struct sd_strbuf *b,
                              const struct sd_export_spec *spec,
                              const char *name, size_t off)
{
    const char *sep = name;
    uint32_t i;

    for (i = 0; i < spec->nslabs; i++) {
        if (spec->slabs[i].endpoint[0] &&
            __atomic_load_n(slab_flag(&spec->slabs[i], off),
                            __ATOMIC_RELAXED)) {
            sd_strbuf_printf(b, "%s%u", sep, i);
            sep = ",";
        }
    }
}

char *sd_export_spec_format(const struct sd_export_spec *spec)
{
    struct sd_strbuf b = { 0 };
    char uuid[SD_UUID_STRLEN + 1], key[2 * SD_KEY_LEN + 1];
    const char *sep = "";
    uint32_t i, j;

    sd_uuid_format(spec->grant, uuid);
    sd_hex_encode(spec->key, SD_KEY_LEN, key);
    sd_strbuf_printf(&b, "grant=%s key=%s size=%llu slab_size=%llu "
                     "local=%s slabs=", uuid, key,
                     (unsigned long long)spec->size,
                     (unsigned long long)spec->slab_size, spec->local);
    for (i = 0; i < spec->nslabs; i = j) {
        const struct sd_export_slab *s = &spec->slabs[i];

        j = i + 1;
        if (!s->endpoint[0]) {
            continue;
        }
        /* A run on one donor at consecutive addresses is one entry: a
         * donor lays a grant's slabs out in one region, so a table of
         * thousands of slabs stays far below the request limit. */
        while (j < spec->nslabs && continues_run(spec, j)) {
            j++;
        }
        if (j - i > 1) {
            sd_strbuf_printf(&b, "%s%u-%u@%s@%llu@%u", sep, i, j - 1,
                             s->endpoint, (unsigned long long)s->addr,
                             s->rkey);
        } else {
            sd_strbuf_printf(&b, "%s%u@%s@%llu@%u", sep, i, s->endpoint,
                             (unsigned long long)s->addr, s->rkey);
        }
        sep = ",";
    }
    /* Slabs with a donor that are nonetheless local (degraded or
     * reclaimed): the donor's copy is stale or gone.  Then those whose
     * local copy is. */
    format_slab_flags(&b, spec, " local_slabs=",
                      offsetof(struct sd_export_slab, local));
    format_slab_flags(&b, spec, " stale_slabs=",
                      offsetof(struct sd_export_slab, stale));
    if (spec->seal) {
        sd_strbuf_printf(&b, " seal=1");
    }
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
