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
 * The control protocol's request lines, "VERB key=value ...", split into
 * their arguments, and the lists of slab indexes they carry.  The control
 * socket reads its requests with it, and an export's .conf, which holds
 * its EXPORT_CREATE line, is read back with it too.
 */
#ifndef MEMAGG_SWAPD_ARGS_H
#define MEMAGG_SWAPD_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* The longest request line, an export's .conf included. */
#define SD_CONTROL_MAX_LINE (64U << 10)
#define SD_CONTROL_MAX_ARGS 16

/* A request line split in place: "VERB key=value key=value". */
struct sd_args {
    const char *verb;
    size_t n;
    struct {
        const char *key;
        const char *value;
    } kv[SD_CONTROL_MAX_ARGS];
};

/* Split line (NUL-terminated, without its newline; modified in place).
 * -EINVAL with err naming the problem: empty line, an argument without
 * '=', an empty key, a repeated key, too many arguments. */
int sd_control_parse_line(char *line, struct sd_args *out,
                          char *err, size_t errlen);

/* The value of key, or NULL. */
const char *sd_args_get(const struct sd_args *args, const char *key);

/* Parse a comma-separated list of slab indexes below limit into a malloc'd
 * array; -EINVAL when malformed, out of range or repeated. */
int sd_parse_index_list(const char *text, uint32_t limit, uint32_t **out,
                        size_t *n);

#endif
