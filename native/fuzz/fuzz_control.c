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
 * libFuzzer harness: the control protocol.  The input is one request line:
 * it goes through the line parser, the export-table parser, the index and
 * uuid/hex parsers, and sd_control_handle against a small donor store (the
 * export verbs, EXPORT_KEY_WRAP and EXPORT_KEY_INSTALL among them, answer
 * ENODEV here, so the fuzzer creates no files).  The
 * export-table parser also gets the input after a valid grant, key, size,
 * slab_size and local, so the fuzzer reaches slabs= (ranges), local_slabs=,
 * stale_slabs=, adopt=, rebuilt=, rebuild_started=, seal= and page_key=
 * without finding a uuid and 64 hex digits first.  The local= of the input, and the input
 * itself, go through the confinement of local copies (confine.c): its
 * text check, and its walk in a fixture directory with a file, a
 * directory, symlinks out of it, a fifo and a hard link, standing for
 * /var/lib/memagg/swapd/local so that corpus paths are fixed (no file is
 * created, emptied or removed).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "args.h"
#include "confine.h"
#include "control.h"
#include "export_spec.h"
#include "store.h"
#include "util.h"

#define TABLE_PREFIX \
    "EXPORT_CREATE grant=0a1b2c3d-0000-4000-8000-00000000abcd " \
    "key=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff " \
    "size=1048576 slab_size=262144 local=/nonexistent/copy "

/* Parse line as EXPORT_CREATE arguments and format the table back. */
static void parse_table(char *line)
{
    char err[SD_ERRLEN];
    struct sd_export_spec spec;
    struct sd_args args;

    if (sd_control_parse_line(line, &args, err, sizeof(err)) == 0 &&
        sd_export_spec_parse(&args, &spec, err, sizeof(err)) == 0) {
        char *text = sd_export_spec_format(&spec);

        free(text);
        sd_export_spec_free(&spec);
    }
}

#define FIXTURE_ROOT "/var/lib/memagg/swapd/local"

static struct sd_confine fixture = { .dirfd = -1 };
static char fixture_dir[] = "/tmp/fuzz_control.XXXXXX";

static void fixture_remove(void)
{
    static const char *const names[] = { "local/sub/copy.img", "local/sub/up",
                                         "local/link", "local/fifo",
                                         "local/hard", "local/sub", "local",
                                         "outside", NULL };
    char path[256];
    size_t i;

    for (i = 0; names[i]; i++) {
        snprintf(path, sizeof(path), "%s/%s", fixture_dir, names[i]);
        if (remove(path)) {
            perror(path);
        }
    }
    rmdir(fixture_dir);
}

/* <tmp>/outside, and <tmp>/local: sub/copy.img (the one file it may
 * open), sub/up -> .., link -> ../outside, fifo, hard (a link of
 * outside). */
static void fixture_make(void)
{
    char path[256], out[256];
    int fd;

    if (!mkdtemp(fixture_dir)) {
        abort();
    }
    snprintf(out, sizeof(out), "%s/outside", fixture_dir);
    fd = open(out, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        abort();
    }
    close(fd);
    snprintf(path, sizeof(path), "%s/local", fixture_dir);
    fixture.dirfd = mkdir(path, 0700) ? -1 :
                    open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(fixture.root, sizeof(fixture.root), FIXTURE_ROOT);
    if (fixture.dirfd < 0 || mkdirat(fixture.dirfd, "sub", 0700) ||
        (fd = openat(fixture.dirfd, "sub/copy.img", O_WRONLY | O_CREAT |
                     O_EXCL, 0600)) < 0 ||
        close(fd) || symlinkat("..", fixture.dirfd, "sub/up") ||
        symlinkat("../outside", fixture.dirfd, "link") ||
        mkfifoat(fixture.dirfd, "fifo", 0600) ||
        linkat(AT_FDCWD, out, fixture.dirfd, "hard", 0)) {
        abort();
    }
    atexit(fixture_remove);
}

/* path through the confinement: checked, opened without creating or
 * emptying, and removed only if it were a file no fstat matches. */
static void confine_path(const char *path)
{
    struct stat none = { .st_ino = 0 };
    char err[SD_ERRLEN];
    const char *rel;
    int fd;

    sd_confine_name(&fixture, "local", path, &rel, err, sizeof(err));
    fd = sd_confine_open(&fixture, "local", path, 0, err, sizeof(err));
    if (fd >= 0) {
        close(fd);
    }
    sd_confine_unlink(&fixture, "local", path, &none, err, sizeof(err));
}

/* The local= of line, if it has one, through the confinement. */
static void confine_local(char *line)
{
    char err[SD_ERRLEN];
    struct sd_args args;
    const char *local;

    if (sd_control_parse_line(line, &args, err, sizeof(err)) == 0 &&
        (local = sd_args_get(&args, "local"))) {
        confine_path(local);
    }
}

static struct sd_control_ctx ctx = {
    .transport = "tcp", .rdma = "unavailable:fuzz",
    .endpoint = "tcp://127.0.0.1:7450",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line, *copy, *table, *local, *reply;
    uint8_t uuid[SD_UUID_LEN];
    uint32_t *idx;
    size_t n;

    if (size > SD_CONTROL_MAX_LINE) {
        return 0;
    }
    if (!ctx.store) {
        sd_log_level = LOG_ERR;
        if (sd_store_new(1 << 20, &ctx.store)) {
            abort();
        }
    }
    if (fixture.dirfd < 0) {
        fixture_make();
    }
    line = malloc(size + 1);
    copy = malloc(size + 1);
    local = malloc(size + 1);
    table = malloc(sizeof(TABLE_PREFIX) + size);
    memcpy(line, data, size);
    line[size] = '\0';
    memcpy(copy, line, size + 1);
    memcpy(local, line, size + 1);
    memcpy(table, TABLE_PREFIX, sizeof(TABLE_PREFIX) - 1);
    memcpy(table + sizeof(TABLE_PREFIX) - 1, line, size + 1);

    sd_uuid_parse(line, strlen(line), uuid);
    sd_hex_decode(line, strlen(line), (uint8_t[SD_KEY_LEN]){ 0 },
                  SD_KEY_LEN);
    if (sd_parse_index_list(line, 1 << 20, &idx, &n) == 0) {
        free(idx);
    }
    confine_path(line);
    confine_local(local);
    parse_table(table);
    parse_table(line);
    if (sd_control_handle(&ctx, copy, &reply) == 0) {
        free(reply);
    }
    /* Forget the grants this input made, so inputs stay independent. */
    sd_store_free(ctx.store);
    ctx.store = NULL;
    free(line);
    free(copy);
    free(local);
    free(table);
    return 0;
}
