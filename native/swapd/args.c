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

/* The split of request lines and the index-list parser: pure, fuzzed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "util.h"

int sd_control_parse_line(char *line, struct sd_args *out, char *err,
                          size_t errlen)
{
    char *save = NULL, *tok;
    size_t i;

    memset(out, 0, sizeof(*out));
    tok = strtok_r(line, " \t\r", &save);
    if (!tok) {
        snprintf(err, errlen, "verb: the line is empty");
        return -EINVAL;
    }
    out->verb = tok;
    while ((tok = strtok_r(NULL, " \t\r", &save))) {
        char *eq = strchr(tok, '=');

        if (!eq || eq == tok) {
            snprintf(err, errlen, "%.64s: arguments are key=value", tok);
            return -EINVAL;
        }
        *eq = '\0';
        for (i = 0; i < out->n; i++) {
            if (strcmp(out->kv[i].key, tok) == 0) {
                snprintf(err, errlen, "%.64s: given twice", tok);
                return -EINVAL;
            }
        }
        if (out->n == SD_CONTROL_MAX_ARGS) {
            snprintf(err, errlen, "%.64s: more than %d arguments", tok,
                     SD_CONTROL_MAX_ARGS);
            return -EINVAL;
        }
        out->kv[out->n].key = tok;
        out->kv[out->n].value = eq + 1;
        out->n++;
    }
    return 0;
}

const char *sd_args_get(const struct sd_args *args, const char *key)
{
    size_t i;

    for (i = 0; i < args->n; i++) {
        if (strcmp(args->kv[i].key, key) == 0) {
            return args->kv[i].value;
        }
    }
    return NULL;
}

int sd_parse_index_list(const char *text, uint32_t limit, uint32_t **out,
                        size_t *n)
{
    size_t count = 1, i = 0, j;
    const char *p;
    uint32_t *idx;

    if (!*text) {
        return -EINVAL;
    }
    for (p = text; *p; p++) {
        count += *p == ',';
    }
    if (count > limit) {
        return -EINVAL;     /* more than there are distinct indexes */
    }
    idx = malloc(count * sizeof(*idx));
    if (!idx) {
        return -ENOMEM;
    }
    for (p = text; i < count; i++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        uint64_t v;

        if (sd_parse_u64(p, len, UINT32_MAX, &v) || v >= limit) {
            free(idx);
            return -EINVAL;
        }
        idx[i] = (uint32_t)v;
        p += len + 1;
    }
    /* Lists are short (a grant's slabs): a quadratic check is fine. */
    for (i = 0; i < count; i++) {
        for (j = i + 1; j < count; j++) {
            if (idx[i] == idx[j]) {
                free(idx);
                return -EINVAL;
            }
        }
    }
    *out = idx;
    *n = count;
    return 0;
}
