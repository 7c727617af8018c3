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
 * What the export tests (test_export, test_adopt) share: grant GRANT under
 * KEY in slabs of SLAB, a directory of their own (tmpdir), the export's
 * creation from an EXPORT_CREATE line, its NBD connection, a restart of
 * the registry, and a donor on loopback lending the grant's slabs.
 */
#ifndef MEMAGG_SWAPD_TEST_EXPORT_FIXTURE_H
#define MEMAGG_SWAPD_TEST_EXPORT_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "args.h"
#include "check.h"
#include "export.h"
#include "export_spec.h"
#include "nbd_client.h"
#include "scratch_dir.h"
#include "store.h"
#include "transport.h"
#include "util.h"

#define GRANT "0a1b2c3d-0000-4000-8000-00000000abcd"
#define KEY "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define SLAB (256 * 1024ULL)
/* The start of an EXPORT_CREATE line of 4 slabs of 256 KiB. */
#define SPEC4 "grant=" GRANT " key=" KEY " size=1048576 slab_size=262144 " \
              "local=/tmp/x "

static char tmpdir[64];
static uint8_t grant_bin[SD_UUID_LEN];

/* The test's directory and grant_bin; nonzero (said) when the directory
 * cannot be made. */
static inline int fixture_start(void)
{
    if (scratch_dir_make(tmpdir, sizeof(tmpdir),
                         "/tmp/sd-export-test-XXXXXX")) {
        return 1;
    }
    sd_log_level = LOG_WARNING;
    sd_uuid_parse(GRANT, SD_UUID_STRLEN, grant_bin);
    return 0;
}

static inline void fixture_end(void)
{
    scratch_dir_remove(tmpdir);
}

/* Parse "EXPORT_CREATE args" into spec; the error text in err. */
static inline int parse_spec(const char *line, struct sd_export_spec *spec,
                      char *err)
{
    char buf[2048];
    struct sd_args a;

    snprintf(buf, sizeof(buf), "EXPORT_CREATE %s", line);
    if (sd_control_parse_line(buf, &a, err, SD_ERRLEN)) {
        return -EINVAL;
    }
    return sd_export_spec_parse(&a, spec, err, SD_ERRLEN);
}

/* EXPORT_CREATE of GRANT over slabs with its local copy <dir>/local/copy and
 * the further arguments more (e.g. " seal=1"): 0 with its socket in sock,
 * or -errno (the error printed). */
static inline int create(struct sd_exports *xs, const char *dir, const char *slabs,
                  const char *more, char *sock)
{
    char line[1024], err[SD_ERRLEN] = "";
    struct sd_export_spec spec;
    int ret;

    snprintf(line, sizeof(line), "grant=" GRANT " key=" KEY " size=%llu "
             "slab_size=%llu local=%s/local/copy slabs=%s%s",
             4 * SLAB, SLAB, dir, slabs, more);
    ret = parse_spec(line, &spec, err);
    if (ret == 0) {
        ret = sd_exports_create(xs, &spec, sock, 256, err, sizeof(err));
    }
    if (ret) {
        fprintf(stderr, "create: %s\n", err);
    }
    return ret;
}

static inline int open_export(const char *sock)
{
    int fd = tc_connect(sock);

    tc_greet(fd);
    if (tc_go(fd, "memagg-swap-" GRANT) != 4 * SLAB) {
        tc_die("size");
    }
    return fd;
}

/* A new registry of exports in tmpdir, its one export restored from its
 * .conf (a restart). */
static inline struct sd_exports *restored(void)
{
    struct sd_exports *xs = NULL;
    char err[SD_ERRLEN];

    CHECK(sd_exports_new(tmpdir, tmpdir, (uid_t)-1, (gid_t)-1, &xs, err,
                         sizeof(err)) == 0);
    CHECK(xs && sd_exports_restore(xs) == 1);
    return xs;
}

/* Whether the SLAB bytes from SLAB / 2 (half of slab 0, half of slab 1)
 * read back over NBD, into a cleared back, as buf. */
static inline int reads_back(int fd, const uint8_t *buf, uint8_t *back)
{
    memset(back, 0, SLAB);
    return tc_io(fd, NBD_CMD_READ, SLAB / 2, (uint32_t)SLAB, back) == 0 &&
           memcmp(back, buf, SLAB) == 0;
}

/* A donor: a store of 16 slabs behind a TCP server on 127.0.0.1, lending
 * GRANT's slabs 0 to n - 1 (n <= 4) under KEY at consecutive addresses;
 * their table entry goes into slabs.  Returns its port. */
static inline uint16_t donor_lending(uint32_t n, struct sd_store **store,
                              struct sd_server **server, char *slabs,
                              size_t len)
{
    uint32_t idx[4] = { 0, 1, 2, 3 };
    uint8_t key[SD_KEY_LEN];
    char err[SD_ERRLEN];
    uint64_t addrs[4];
    uint16_t port;
    size_t done;

    sd_hex_decode(KEY, 64, key, SD_KEY_LEN);
    CHECK(sd_store_new(16 * SLAB, store) == 0);
    CHECK(sd_tcp_server_start(*store, "127.0.0.1", 0, NULL, server, err,
                              sizeof(err)) == 0);
    port = sd_server_port(*server);
    CHECK(sd_store_alloc(*store, grant_bin, key, SLAB, idx, n, addrs,
                         &done) == 0 && done == n);
    snprintf(slabs, len, "0-%u@tcp://127.0.0.1:%u@%llu@0", n - 1, port,
             (unsigned long long)addrs[0]);
    return port;
}

/* The end of a test of an export on a donor: its NBD connection closed,
 * the export dropped with its local copy, the registry, donor and store
 * gone. */
static inline void export_done(int fd, struct sd_exports *xs,
                               struct sd_server *server,
                               struct sd_store *store)
{
    close(fd);
    CHECK(sd_exports_drop(xs, grant_bin, 1) == 0);
    sd_exports_free(xs);
    sd_server_stop(server);
    sd_store_free(store);
}

#endif
