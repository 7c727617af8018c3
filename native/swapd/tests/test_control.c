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
 * Tests of the control socket: the line parser, index lists, every verb
 * through sd_control_handle against a real donor store and exports (the
 * replies' words and the errors naming their field), the socket itself,
 * and sd_main's bad-option exits.
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "args.h"
#include "check.h"
#include "control.h"
#include "export.h"
#include "scratch_dir.h"
#include "store.h"
#include "util.h"

#define GRANT "11111111-2222-4333-8444-555555555555"
#define KEY "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
#define OTHER "22222222-2222-4333-8444-555555555555"

int sd_main(int argc, char **argv);

static void test_parse_line(void)
{
    char line[256], err[SD_ERRLEN];
    struct sd_args a;
    uint32_t *idx;
    size_t n;

    strcpy(line, "EXPORT_STATS grant=abc  max=5\r");
    CHECK(sd_control_parse_line(line, &a, err, sizeof(err)) == 0);
    CHECK(strcmp(a.verb, "EXPORT_STATS") == 0 && a.n == 2);
    CHECK(strcmp(sd_args_get(&a, "grant"), "abc") == 0 &&
          strcmp(sd_args_get(&a, "max"), "5") == 0 &&
          sd_args_get(&a, "nope") == NULL);
    strcpy(line, "PING empty=");
    CHECK(sd_control_parse_line(line, &a, err, sizeof(err)) == 0 &&
          strcmp(sd_args_get(&a, "empty"), "") == 0);
    strcpy(line, "   ");
    CHECK(sd_control_parse_line(line, &a, err, sizeof(err)) == -EINVAL &&
          strncmp(err, "verb:", 5) == 0);
    strcpy(line, "PING novalue");
    CHECK(sd_control_parse_line(line, &a, err, sizeof(err)) == -EINVAL &&
          strncmp(err, "novalue:", 8) == 0);
    strcpy(line, "PING =x");
    CHECK(sd_control_parse_line(line, &a, err, sizeof(err)) == -EINVAL);
    strcpy(line, "PING a=1 a=2");
    CHECK(sd_control_parse_line(line, &a, err, sizeof(err)) == -EINVAL &&
          strstr(err, "twice"));
    strcpy(line, "V a=1 b=1 c=1 d=1 e=1 f=1 g=1 h=1 i=1 j=1 k=1 l=1 m=1 "
           "n=1 o=1 p=1 q=1");
    CHECK(sd_control_parse_line(line, &a, err, sizeof(err)) == -EINVAL);

    CHECK(sd_parse_index_list("0,5,2", 10, &idx, &n) == 0 && n == 3 &&
          idx[1] == 5);
    free(idx);
    CHECK(sd_parse_index_list("", 10, &idx, &n) == -EINVAL);
    CHECK(sd_parse_index_list("1,,2", 10, &idx, &n) == -EINVAL);
    CHECK(sd_parse_index_list("10", 10, &idx, &n) == -EINVAL);
    CHECK(sd_parse_index_list("3,3", 10, &idx, &n) == -EINVAL);
    CHECK(sd_parse_index_list("-1", 10, &idx, &n) == -EINVAL);
}

static struct sd_control_ctx ctx;

/* The reply to line, without its newline, in a static buffer. */
static const char *call(const char *line)
{
    static char out[4096];
    char buf[8192], *reply;

    snprintf(buf, sizeof(buf), "%s", line);
    if (sd_control_handle(&ctx, buf, &reply)) {
        return "(out of memory)";
    }
    snprintf(out, sizeof(out), "%s", reply);
    free(reply);
    if (strchr(out, '\n')) {
        *strchr(out, '\n') = '\0';
    }
    return out;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_verbs(const char *dir)
{
    char err[SD_ERRLEN], line[1024];
    const char *r;

    CHECK(sd_store_new(3 * 65536, &ctx.store) == 0);
    CHECK(sd_exports_new(dir, dir, (uid_t)-1, (gid_t)-1, &ctx.exports, err,
                         sizeof(err)) == 0);
    ctx.transport = "tcp";
    ctx.rdma = "unavailable:no_RDMA_device";
    ctx.fabric = "none";
    ctx.endpoint = "tcp://127.0.0.1:7450";

    CHECK(strcmp(call("PING"), "OK version=1 transport=tcp "
                  "rdma=unavailable:no_RDMA_device fabric=none "
                  "endpoint=tcp://127.0.0.1:7450") == 0);
    CHECK(starts(call("PING x=1"), "ERR EINVAL x: PING takes no such "
                 "argument"));
    CHECK(starts(call("FROB"), "ERR EINVAL verb: unknown 'FROB'; one of "
                 "PING,"));
    CHECK(strstr(call("FROB"), ",EXPORT_REBUILD,"));
    CHECK(starts(call(""), "ERR EINVAL verb:"));

    /* Donor: four slabs asked, three fit: a partial grant. */
    r = call("GRANT_ALLOC grant=" GRANT " key=" KEY " slab_size=65536 "
             "slabs=0,1,2,3");
    CHECK(starts(r, "OK endpoint=tcp://127.0.0.1:7450 rkey=0 slabs=0:"));
    CHECK(strstr(r, ",2:") && !strstr(r, ",3:"));
    CHECK(starts(call("GRANT_ALLOC grant=" GRANT " key=" KEY
                      " slab_size=65536 slabs=5"), "ERR "));
    CHECK(starts(call("GRANT_ALLOC grant=22222222-2222-4333-8444-"
                      "555555555555 key=" KEY " slab_size=65536 slabs=0"),
                 "ERR ENOMEM slabs:"));
    CHECK(starts(call("GRANT_ALLOC grant=" GRANT " key=12 slab_size=65536 "
                      "slabs=0"), "ERR EINVAL key:"));
    CHECK(starts(call("GRANT_ALLOC grant=" GRANT " key=" KEY
                      " slab_size=100 slabs=0"), "ERR EINVAL slab_size:"));
    CHECK(starts(call("GRANT_ALLOC grant=x key=" KEY " slab_size=65536 "
                      "slabs=0"), "ERR EINVAL grant:"));
    CHECK(strcmp(call("DONOR_STATS"), "OK capacity=196608 used=196608 "
                  "seals=1536 grants=1 slabs=3 refused=0") == 0);
    CHECK(strcmp(call("GRANT_FREE grant=" GRANT " slabs=1"),
                 "OK freed=1") == 0);
    CHECK(strcmp(call("GRANT_FREE grant=" GRANT), "OK freed=2") == 0);
    CHECK(starts(call("GRANT_FREE grant=" GRANT), "ERR ENOENT grant:"));

    /* Consumer. */
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=1000 slab_size=65536 local=%s/local/copy slabs=", dir);
    CHECK(strcmp(call(line), "ERR EINVAL size: must be a non-zero multiple "
                  "of slab_size (65536)") == 0);
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=262144 slab_size=65536 local=%s/local/copy slabs= colour=red",
             dir);
    CHECK(starts(call(line), "ERR EINVAL colour: EXPORT_CREATE takes no "
                 "such argument"));
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=262144 slab_size=65536 local=%s/local/copy "
             "slabs=1@udp://h:1@0@0", dir);
    CHECK(starts(call(line), "ERR EINVAL slabs: endpoint 'udp://h:1'"));
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=262144 slab_size=65536 local=%s/local/copy "
             "slabs=1@tcp://127.0.0.1:1@0@0", dir);
    r = call(line);
    CHECK(starts(r, "OK name=memagg-swap-" GRANT " socket="));
    CHECK(strstr(r, GRANT ".sock") != NULL);
    CHECK(starts(call(line), "ERR EEXIST grant:"));
    CHECK(strcmp(call("EXPORT_LIST"), "OK grants=" GRANT) == 0);
    r = call("EXPORT_DESCRIBE grant=" GRANT);
    CHECK(starts(r, "OK grant=" GRANT " key=" KEY " size=262144 "
                 "slab_size=65536 local=") &&
          strstr(r, " slabs=1@tcp://127.0.0.1:1@0@0"));
    CHECK(strcmp(call("EXPORT_STATS grant=" GRANT), "OK reads=0 writes=0 "
                  "read_bytes=0 write_bytes=0 zero_reads=0 local_reads=0 "
                  "remote_errors=0 degraded_slabs=0 clients=0 lat_p50_us=0 "
                  "lat_p99_us=0 rebuild_left=0 stored_pages=0 "
                  "auth_failures=0 sealed=0 key_pending=0 frame_auth_failures=0 "
                  "read_lat_p50_us=0 read_lat_p99_us=0 "
                  "remote_read_bytes=0 remote_write_bytes=0 stale_slabs=0 "
                  "l1_puts=0 l1_gets=0 l1_flushes=0 l1_moved_in=0 "
                  "l1_moved_out=0 l1_evicts=0 l1_used=0 l2_puts=0 l2_gets=0 "
                  "l2_flushes=0 l2_moved_in=0 l2_moved_out=0 l2_evicts=0 "
                  "l2_used=0") == 0);
    CHECK(strcmp(call("GHOST grant=" GRANT), "OK events= dropped=0") == 0);
    CHECK(starts(call("GHOST grant=" GRANT " max=0"), "ERR EINVAL max:"));
    /* Not adopted: nothing to rebuild, and asking is no error. */
    CHECK(strcmp(call("EXPORT_REBUILD grant=" GRANT), "OK rebuild_left=0")
          == 0);
    CHECK(starts(call("EXPORT_REBUILD grant=" GRANT " slabs=1"),
                 "ERR EINVAL slabs: EXPORT_REBUILD takes no such argument"));
    CHECK(starts(call("EXPORT_REBUILD grant=x"), "ERR EINVAL grant:"));
    CHECK(strcmp(call("EXPORT_REBUILD grant=" OTHER), "ERR ENOENT grant: "
                  "no export of " OTHER " here") == 0);
    CHECK(strcmp(call("EXPORT_RECLAIM grant=" GRANT " slabs=all"),
                 "OK reclaimed=1") == 0);
    CHECK(strstr(call("EXPORT_DESCRIBE grant=" GRANT), " local_slabs=1"));
    CHECK(strcmp(call("EXPORT_RECLAIM grant=" GRANT " slabs=1"),
                 "OK reclaimed=0") == 0);
    CHECK(starts(call("EXPORT_RECLAIM grant=" GRANT " slabs=9"),
                 "ERR EINVAL slabs:"));
    /* Back to a donor: nothing written, nothing to copy (test_promote
     * copies pages). */
    CHECK(strcmp(call("EXPORT_PROMOTE grant=" GRANT " slab=1 "
                      "endpoint=tcp://127.0.0.1:1 addr=4096"),
                 "OK pages=0") == 0);
    r = call("EXPORT_DESCRIBE grant=" GRANT);
    CHECK(strstr(r, " slabs=1@tcp://127.0.0.1:1@4096@0") &&
          !strstr(r, "local_slabs"));
    CHECK(starts(call("EXPORT_PROMOTE grant=" GRANT " slab=1 "
                      "endpoint=tcp://127.0.0.1:1 addr=0"),
                 "ERR EALREADY slab: slab 1 is on donor"));
    CHECK(starts(call("EXPORT_PROMOTE grant=" GRANT " slab=9 "
                      "endpoint=tcp://127.0.0.1:1 addr=0"),
                 "ERR EINVAL slab: index 9 is beyond"));
    CHECK(starts(call("EXPORT_PROMOTE grant=" GRANT " slab=one "
                      "endpoint=tcp://127.0.0.1:1 addr=0"),
                 "ERR EINVAL slab:"));
    CHECK(starts(call("EXPORT_PROMOTE grant=" GRANT " slab=1 addr=0"),
                 "ERR EINVAL endpoint:"));
    CHECK(starts(call("EXPORT_PROMOTE grant=" GRANT " slab=1 "
                      "endpoint=tcp://127.0.0.1:1"), "ERR EINVAL addr:"));
    CHECK(starts(call("EXPORT_PROMOTE grant=" GRANT " slab=1 "
                      "endpoint=udp://h:1 addr=0"), "ERR EINVAL endpoint: "
                 "'udp://h:1' must be"));
    CHECK(starts(call("EXPORT_PROMOTE grant=" OTHER " slab=1 "
                      "endpoint=tcp://127.0.0.1:1 addr=0"),
                 "ERR ENOENT grant:"));
    CHECK(starts(call("EXPORT_DROP grant=" GRANT " delete=yes"),
                 "ERR EINVAL delete:"));
    CHECK(strcmp(call("EXPORT_DROP grant=" GRANT " delete=1"), "OK") == 0);
    CHECK(starts(call("EXPORT_DROP grant=" GRANT), "ERR ENOENT grant:"));
    CHECK(starts(call("EXPORT_STATS grant=" GRANT), "ERR ENOENT grant:"));
    CHECK(strcmp(call("EXPORT_LIST"), "OK grants=") == 0);

    /* An adopted export waits for EXPORT_REBUILD (its donor, on a port
     * nobody listens on, is never asked): every page left to rebuild,
     * none reclaimable, and it drops. */
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=262144 slab_size=65536 local=%s/local/copy "
             "slabs=0-3@tcp://127.0.0.1:1@0@0 adopt=1", dir);
    CHECK(starts(call(line), "OK name=memagg-swap-" GRANT " socket="));
    CHECK(strstr(call("EXPORT_STATS grant=" GRANT), " rebuild_left=64 "));
    CHECK(starts(call("EXPORT_RECLAIM grant=" GRANT " slabs=all"),
                 "ERR EBUSY slabs: slab 0 of this adopted export"));
    CHECK(strcmp(call("EXPORT_DROP grant=" GRANT " delete=1"), "OK") == 0);
    CHECK(strcmp(call("EXPORT_LIST"), "OK grants=") == 0);
}

/* A file outside <dir>/local holding "secret": (its path, 0600). */
static void write_secret(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    CHECK(fd >= 0 && write(fd, "secret", 6) == 6);
    close(fd);
}

/* Whether path still holds just "secret". */
static int still_secret(const char *path)
{
    char buf[16] = "";
    struct stat st;
    int fd = open(path, O_RDONLY), n;

    if (fd < 0) {
        return 0;
    }
    n = (int)read(fd, buf, sizeof(buf));
    close(fd);
    return n == 6 && memcmp(buf, "secret", 6) == 0 && stat(path, &st) == 0 &&
           st.st_size == 6;
}

/* EXPORT_CREATE of GRANT with local=<local> and the further arguments
 * more (e.g. " adopt=1"): the reply. */
static const char *create_at(const char *local, const char *more)
{
    char line[8192];

    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=262144 slab_size=65536 local=%s "
             "slabs=0-3@tcp://127.0.0.1:1@0@0%s", local, more);
    return call(line);
}

/* local= names a regular file below <state_dir>/local only: paths outside
 * it, '..', symlinks on the way (put there after the check too), other
 * kinds of files and hard links are refused (EINVAL naming local:) and
 * the file outside is neither read, emptied, grown nor deleted. */
static void test_confined_local(const char *dir)
{
    char out[256], path[512], local[256], name[6000];
    const char *bad[] = { "%s", "%s/local/../outside", "%s/local/./inst/c",
                          "%s/local/inst//c", "%s/local/", "%s/localx/c",
                          "%s/local/link", "%s/local/uplink/outside",
                          "%s/local/inst/../../outside", "%s/local/fifo",
                          "%s/local/inst", "%s/local/hard", "/etc/passwd" };
    struct stat st;
    size_t i;

    snprintf(out, sizeof(out), "%s/outside", dir);
    snprintf(local, sizeof(local), "%s/local", dir);
    write_secret(out);
    snprintf(path, sizeof(path), "%s/inst", local);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/link", local);
    CHECK(symlink("../outside", path) == 0);
    snprintf(path, sizeof(path), "%s/uplink", local);
    CHECK(symlink("..", path) == 0);
    snprintf(path, sizeof(path), "%s/fifo", local);
    CHECK(mkfifo(path, 0600) == 0);
    snprintf(path, sizeof(path), "%s/hard", local);
    CHECK(link(out, path) == 0);

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *r;

        snprintf(path, sizeof(path), bad[i], i == 0 ? out : dir);
        r = create_at(path, " adopt=1");
        if (!starts(r, "ERR EINVAL local: ")) {
            fprintf(stderr, "%s: %s\n", path, r);
        }
        CHECK(starts(r, "ERR EINVAL local: "));
        CHECK(starts(create_at(path, ""), "ERR EINVAL local: "));
    }
    CHECK(strstr(create_at(out, ""), "must name a file under "));
    CHECK(strstr(create_at("/etc/passwd", ""), "must name a file under "));
    snprintf(path, sizeof(path), "%s/local/../outside", dir);
    CHECK(strstr(create_at(path, ""), "'.' and '..' are refused"));
    snprintf(path, sizeof(path), "%s/local/link", dir);
    CHECK(strstr(create_at(path, " adopt=1"), "is a symlink"));
    snprintf(path, sizeof(path), "%s/local/uplink/outside", dir);
    CHECK(strstr(create_at(path, ""), "'uplink' in "));
    snprintf(path, sizeof(path), "%s/local/fifo", dir);
    CHECK(strstr(create_at(path, ""), "not a regular file"));
    snprintf(path, sizeof(path), "%s/local/hard", dir);
    CHECK(strstr(create_at(path, " adopt=1"), "has other hard links"));
    /* A name longer than NAME_MAX, a path longer than PATH_MAX. */
    memset(name, 'a', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    snprintf(path, sizeof(path), "%s/local/%.300s", dir, name);
    CHECK(starts(create_at(path, ""), "ERR EINVAL local: a name longer"));
    snprintf(name, sizeof(name), "%s/local/", dir);
    for (i = strlen(name); i + 2 < sizeof(name); i += 2) {
        memcpy(name + i, "a/", 2);
    }
    name[i] = 'a';
    name[i + 1] = '\0';
    CHECK(starts(create_at(name, ""), "ERR EINVAL local: "));
    CHECK(strcmp(call("EXPORT_LIST"), "OK grants=") == 0);
    CHECK(still_secret(out));
    snprintf(path, sizeof(path), "%s/local/hard", dir);
    CHECK(stat(path, &st) == 0 && st.st_nlink == 2);

    /* A file of its own below the directory: made, adopted (emptied) and
     * deleted. */
    snprintf(path, sizeof(path), "%s/local/inst/copy", dir);
    CHECK(starts(create_at(path, ""), "OK name=memagg-swap-" GRANT));
    CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
          (st.st_mode & 0777) == 0600 && st.st_size == 262144);
    CHECK(strcmp(call("EXPORT_DROP grant=" GRANT), "OK") == 0);
    write_secret(path);
    CHECK(starts(create_at(path, " adopt=1"), "OK name=memagg-swap-"
                 GRANT));
    CHECK(stat(path, &st) == 0 && st.st_size == 262144 && st.st_blocks == 0);
    CHECK(strcmp(call("EXPORT_DROP grant=" GRANT " delete=1"), "OK") == 0);
    CHECK(access(path, F_OK) != 0);

    /* Its name turned into a symlink to the file outside while it was
     * served: EXPORT_DROP delete=1 removes neither. */
    CHECK(starts(create_at(path, ""), "OK name=memagg-swap-" GRANT));
    snprintf(name, sizeof(name), "%s/local/inst/moved", dir);
    CHECK(rename(path, name) == 0);
    CHECK(symlink("../../outside", path) == 0);
    CHECK(strcmp(call("EXPORT_DROP grant=" GRANT " delete=1"), "OK") == 0);
    CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(still_secret(out));
    CHECK(access(name, F_OK) == 0);
}

/* The page_key= of the .conf at path into hex (65 bytes); 1 when found. */
static int conf_key(const char *path, char *hex)
{
    char text[4096], *k;
    FILE *f = fopen(path, "r");
    int ok;

    if (!f) {
        return 0;
    }
    ok = fgets(text, sizeof(text), f) != NULL;
    fclose(f);
    k = ok ? strstr(text, " page_key=") : NULL;
    if (!k || strlen(k) < 10 + 64) {
        return 0;
    }
    memcpy(hex, k + 10, 64);
    hex[64] = '\0';
    return 1;
}

/* The page key handoff of a live migration through the control verbs:
 * the source's sealed export and the destination's adopted one (two
 * registries, as on two hosts). */
static void test_key_verbs(const char *dir)
{
    char err[SD_ERRLEN], line[1024], src_dir[256], dst_dir[256];
    char offer[65], wrapped[2 * SD_KW_BLOB_LEN + 1], key_src[65], key_dst[65];
    struct sd_exports *src, *dst, *saved = ctx.exports;
    const char *r;
    char was;

    snprintf(src_dir, sizeof(src_dir), "%s/src", dir);
    snprintf(dst_dir, sizeof(dst_dir), "%s/dst", dir);
    CHECK(sd_exports_new(src_dir, src_dir, (uid_t)-1, (gid_t)-1, &src, err,
                         sizeof(err)) == 0);
    CHECK(sd_exports_new(dst_dir, dst_dir, (uid_t)-1, (gid_t)-1, &dst, err,
                         sizeof(err)) == 0);

    ctx.exports = src;
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=262144 slab_size=65536 local=%s/local/copy slabs= seal=1 "
             "page_key=" KEY, src_dir);
    CHECK(starts(call(line), "ERR EINVAL page_key: EXPORT_CREATE takes no "
                 "such argument"));
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=262144 slab_size=65536 local=%s/local/copy slabs= seal=1",
             src_dir);
    r = call(line);
    CHECK(starts(r, "OK name=") && !strstr(r, "key_offer="));
    r = call("EXPORT_DESCRIBE grant=" GRANT);
    CHECK(strstr(r, " seal=1") && !strstr(r, "page_key"));
    CHECK(strstr(call("EXPORT_STATS grant=" GRANT),
                 " auth_failures=0 sealed=1 key_pending=0"));

    ctx.exports = dst;
    snprintf(line, sizeof(line), "EXPORT_CREATE grant=" GRANT " key=" KEY
             " size=262144 slab_size=65536 local=%s/local/copy "
             "slabs=0-3@tcp://127.0.0.1:1@0@0 adopt=1 seal=1", dst_dir);
    r = call(line);
    CHECK(starts(r, "OK name=") && strstr(r, " key_offer="));
    snprintf(offer, sizeof(offer), "%s",
             strstr(r, " key_offer=") ? strstr(r, " key_offer=") + 11 : "");
    CHECK(strlen(offer) == 64);
    CHECK(strstr(call("EXPORT_STATS grant=" GRANT), " key_pending=1"));
    /* The destination has no key to hand over yet. */
    snprintf(line, sizeof(line), "EXPORT_KEY_WRAP grant=" GRANT " offer=%s",
             offer);
    CHECK(starts(call(line), "ERR ENOKEY grant:"));

    ctx.exports = src;
    CHECK(starts(call("EXPORT_KEY_WRAP grant=" GRANT " offer=12"),
                 "ERR EINVAL offer:"));
    CHECK(starts(call("EXPORT_KEY_WRAP grant=" GRANT " offer=" KEY " x=1"),
                 "ERR EINVAL x:"));
    CHECK(starts(call("EXPORT_KEY_WRAP grant=" OTHER " offer=" KEY),
                 "ERR ENOENT grant:"));
    /* All zeros: a low-order point, no shared secret. */
    CHECK(starts(call("EXPORT_KEY_WRAP grant=" GRANT " offer=0000000000000"
                      "000000000000000000000000000000000000000000000000000"),
                 "ERR EINVAL offer:"));
    r = call(line);
    CHECK(starts(r, "OK wrapped="));
    snprintf(wrapped, sizeof(wrapped), "%s", starts(r, "OK wrapped=") ?
             r + 11 : "");
    CHECK(strlen(wrapped) == 2 * SD_KW_BLOB_LEN);

    ctx.exports = dst;
    CHECK(starts(call("EXPORT_KEY_INSTALL grant=" GRANT " wrapped=zz"),
                 "ERR EINVAL wrapped:"));
    /* An altered blob does not open. */
    was = wrapped[100];
    wrapped[100] = was == '0' ? '1' : '0';
    snprintf(line, sizeof(line), "EXPORT_KEY_INSTALL grant=" GRANT
             " wrapped=%s", wrapped);
    CHECK(starts(call(line), "ERR EBADMSG wrapped:"));
    wrapped[100] = was;
    snprintf(line, sizeof(line), "EXPORT_KEY_INSTALL grant=" GRANT
             " wrapped=%s", wrapped);
    CHECK(strcmp(call(line), "OK") == 0);
    CHECK(strstr(call("EXPORT_STATS grant=" GRANT), " key_pending=0"));
    CHECK(starts(call(line), "ERR EALREADY grant:"));
    snprintf(line, sizeof(line), "EXPORT_KEY_INSTALL grant=" OTHER
             " wrapped=%s", wrapped);
    CHECK(starts(call(line), "ERR ENOENT grant:"));
    CHECK(!strstr(call("EXPORT_DESCRIBE grant=" GRANT), "page_key"));

    /* Both .conf files hold the same key now. */
    snprintf(line, sizeof(line), "%s/exports/" GRANT ".conf", src_dir);
    CHECK(conf_key(line, key_src));
    snprintf(line, sizeof(line), "%s/exports/" GRANT ".conf", dst_dir);
    CHECK(conf_key(line, key_dst));
    CHECK(strcmp(key_src, key_dst) == 0);

    CHECK(strcmp(call("EXPORT_DROP grant=" GRANT " delete=1"), "OK") == 0);
    ctx.exports = src;
    CHECK(strcmp(call("EXPORT_DROP grant=" GRANT " delete=1"), "OK") == 0);
    sd_exports_free(src);
    sd_exports_free(dst);
    ctx.exports = saved;
}

static void test_socket(const char *dir)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    struct sd_control *c;
    char err[SD_ERRLEN], buf[512];
    ssize_t n;
    int fd;

    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/control.sock", dir);
    CHECK(sd_control_start(addr.sun_path, &ctx, &c, err, sizeof(err)) == 0);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
    /* Two requests in one write: two replies, in order. */
    CHECK(write(fd, "PING\nEXPORT_LIST\n", 17) == 17);
    n = 0;
    while (n < (ssize_t)sizeof(buf) - 1 &&
           !(memchr(buf, '\n', (size_t)n) &&
             memchr(memchr(buf, '\n', (size_t)n) + 1, '\n',
                    (size_t)(n - ((char *)memchr(buf, '\n', (size_t)n) -
                                  buf + 1))))) {
        ssize_t got = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n);

        if (got <= 0) {
            break;
        }
        n += got;
    }
    buf[n] = '\0';
    CHECK(starts(buf, "OK version=1 ") && strstr(buf, "\nOK grants=\n"));
    close(fd);
    sd_control_stop(c);
    CHECK(access(addr.sun_path, F_OK) != 0);
}

static void test_main_options(void)
{
    char *bad1[] = { "memagg-swapd", "--frobnicate", NULL };
    char *bad2[] = { "memagg-swapd", "--capacity-mb", "lots", NULL };
    char *bad3[] = { "memagg-swapd", "--transport", "carrier-pigeon", NULL };
    char *bad4[] = { "memagg-swapd", "--listen", "http://x", NULL };
    char *bad5[] = { "memagg-swapd", "--socket-user", "no-such-user-x",
                     NULL };
    char *bad6[] = { "memagg-swapd", "--control", NULL };
    char *bad7[] = { "memagg-swapd", "--socket-group", "no-such-group-x",
                     NULL };
    /* The donor port's bounds: out of range, or per peer above the
     * total. */
    char *bad8[] = { "memagg-swapd", "--max-connections", "0", NULL };
    char *bad9[] = { "memagg-swapd", "--max-connections", "8",
                     "--max-connections-per-peer", "9", NULL };
    char *bad10[] = { "memagg-swapd", "--idle-timeout", "-1", NULL };
    char *bad11[] = { "memagg-swapd", "--read-timeout", "3601", NULL };

    CHECK(sd_main(2, bad1) == 2);
    CHECK(sd_main(3, bad2) == 2);
    CHECK(sd_main(3, bad3) == 2);
    CHECK(sd_main(3, bad4) == 2);
    CHECK(sd_main(3, bad5) == 2);
    CHECK(sd_main(2, bad6) == 2);
    CHECK(sd_main(3, bad7) == 2);
    CHECK(sd_main(3, bad8) == 2);
    CHECK(sd_main(5, bad9) == 2);
    CHECK(sd_main(3, bad10) == 2);
    CHECK(sd_main(3, bad11) == 2);
}

int main(void)
{
    char dir[64];

    if (scratch_dir_make(dir, sizeof(dir), "/tmp/sd-control-test-XXXXXX")) {
        return 2;
    }
    sd_log_level = LOG_WARNING;
    test_parse_line();
    test_verbs(dir);
    test_confined_local(dir);
    test_socket(dir);
    test_key_verbs(dir);
    test_main_options();
    sd_exports_free(ctx.exports);
    sd_store_free(ctx.store);
    scratch_dir_remove(dir);
    return check_summary();
}
