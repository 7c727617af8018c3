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
 * Exports: one per grant this host consumes.  An export is a disk of size
 * bytes cut into slabs of slab_size; slab i lives on a donor (endpoint,
 * address, rkey) or, once degraded or reclaimed, in the local durability
 * copy only.  Every write goes to the local copy and to the donor; a page
 * never written reads as zeros without asking anyone.
 *
 * The table in <state-dir>/exports/<uuid>.conf is durable (fsync of the
 * file and of its directory) before the export's socket is handed out,
 * and again before any write that skipped a donor (its slab degraded or
 * reclaimed) is answered: a memagg-swapd restarted after a crash never
 * reads a page from a donor that missed its last write.  Written pages
 * are the local copy's data extents, in the page cache before the reply,
 * so a crash of the process loses none of them.
 *
 * A write the local copy cannot take (its device failed or filled) stands
 * when its slab is on a donor: the slab turns stale (the table on disk
 * says so before the reply; EXPORT_DESCRIBE and the .conf list it in
 * stale_slabs=), is read from its donor from then on, after a restart too,
 * and may not leave it (reclaim and promotion refuse it with -EBUSY);
 * should the donor fail too, its reads and writes fail with NBD_EIO.  A
 * write to a local slab the copy cannot take fails.
 *
 * An adopted export (EXPORT_CREATE adopt=1, the destination of a live
 * migration) takes over a table whose pages are on the donors while its
 * local copy starts empty: every page counts as written and is read from
 * its donor until a background rebuild has copied it (or found it zero),
 * then the export is an ordinary one.  The rebuild never puts a donor's
 * page over one the guest wrote here since the adoption.  It starts only
 * when EXPORT_REBUILD asks (the migration's finish, once the guest runs
 * here): run during the migration, it would compete with the copy of the
 * guest's memory and slow it down.
 *
 * A sealed export (EXPORT_CREATE seal=1) encrypts and authenticates every
 * page it sends to a donor with its page key (see seal.h); the local copy
 * keeps plaintext.  It addresses whole pages only (NBD minimum block size
 * 4096; other requests fail with NBD_EINVAL).  A page read from a donor
 * that does not open counts in auth_failures and is read from the local
 * copy, or fails with NBD_EIO when the copy lacks it (adoption).  The key
 * is drawn by swapd when the export is made and kept in the .conf only
 * (mode 0600, directory 0700); EXPORT_DESCRIBE shows seal=1, never the
 * key.  An adopted sealed export waits for its key: the migration's
 * source wraps it for this host's offer (sd_exports_key_wrap,
 * sd_exports_key_install); until then its donor reads and writes fail
 * with NBD_EIO.
 */
#ifndef MEMAGG_SWAPD_EXPORT_H
#define MEMAGG_SWAPD_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "export_spec.h"
#include "ledger.h"
#include "keywrap.h"
#include "swapd.h"

#define SD_GHOST_RING (1U << 20)        /* events kept per export */
#define SD_GHOST_DEFAULT_MAX 65536U

struct sd_export_stats {
    uint64_t reads, writes, read_bytes, write_bytes;
    uint64_t remote_read_bytes;     /* of pages read from donors */
    uint64_t remote_write_bytes;    /* written to them, promotions too */
    uint64_t zero_reads, local_reads, remote_errors;
    uint32_t degraded_slabs, clients;
    uint32_t stale_slabs;       /* slabs whose local copy missed writes
                                 * (its device failed or filled) */
    uint64_t lat_p50_us, lat_p99_us;
    uint64_t read_lat_p50_us, read_lat_p99_us; /* reads alone */
    uint64_t rebuild_left;      /* pages an adopted export's rebuild has
                                 * still to go through (all of them while
                                 * it waits for EXPORT_REBUILD); 0 when
                                 * none */
    uint64_t stored_pages;      /* pages that count as written now */
    uint64_t auth_failures;     /* sealed: pages from donors that did not
                                 * open */
    uint64_t frame_auth_failures;   /* donor replies whose frame failed
                                     * authentication (frame_auth.h) */
    uint32_t sealed;            /* 1 when its pages are sealed */
    uint32_t key_pending;       /* 1 while it waits for its page key */
    struct sd_export_tier tiers[SD_TIERS];
};

/* All exports of this host, their peers (donor connections) and where
 * their files live. */
struct sd_exports;

int sd_exports_new(const char *state_dir, const char *export_dir,
                   uid_t sock_uid, gid_t sock_gid, struct sd_exports **out,
                   char *err, size_t errlen);
/* Re-create the exports persisted in <state-dir>/exports; returns how many
 * (those that fail are logged and skipped). */
int sd_exports_restore(struct sd_exports *xs);
/* Stop every export (NBD clients are disconnected; nothing on disk is
 * removed) and close the peers. */
void sd_exports_free(struct sd_exports *xs);

/* Create and persist the export of spec (taken over, even on failure):
 * its socket path goes into sock.  -EEXIST when the grant has one.  With
 * spec->adopt the local copy is emptied first; its rebuild waits for
 * sd_exports_rebuild. */
int sd_exports_create(struct sd_exports *xs, struct sd_export_spec *spec,
                      char *sock, size_t socklen, char *err, size_t errlen);
/* The export's table as EXPORT_CREATE arguments (malloc'd). */
int sd_exports_describe(struct sd_exports *xs,
                        const uint8_t grant[SD_UUID_LEN], char **text);
/* Start the rebuild of an adopted export's local copy (EXPORT_REBUILD),
 * saying so in its .conf first; *left is its rebuild_left (pages).  0 and
 * nothing changed when the rebuild runs or is done already, or when the
 * export is not adopted; -ENOENT when grant has no export; -errno with err
 * when the .conf cannot be written or the thread cannot start (the
 * rebuild still waits). */
int sd_exports_rebuild(struct sd_exports *xs,
                       const uint8_t grant[SD_UUID_LEN], uint64_t *left,
                       char *err, size_t errlen);
/* Serve slabs idx[0..n) (n == 0: all) from the local copy from now on;
 * *done counts those that were not already local.  -EBUSY (nothing
 * changed) when one of them is not rebuilt yet in an adopted export
 * (its rebuild waiting or running): its donor still holds pages the local
 * copy lacks.  -errno with err when the table saying so cannot be saved:
 * a restart would read the slabs from their donors, which must keep
 * them. */
int sd_exports_reclaim(struct sd_exports *xs,
                       const uint8_t grant[SD_UUID_LEN],
                       const uint32_t *idx, size_t n, uint32_t *done,
                       char *err, size_t errlen);
/* Move slab (served from the local copy) to the donor at endpoint, into
 * the slab at addr it has prepared for the grant (GRANT_ALLOC there),
 * while the guest runs: its written pages are copied there (sealed when
 * the export is), writes to it wait only while the last few are, reads
 * never; the table saying the slab is on the donor is saved before any
 * write goes there.  *copied counts the pages copied.  -EALREADY: the slab
 * is on a donor; -EBUSY: an adopted export still being rebuilt, or
 * another promotion of this export running; -ENOKEY: the export waits for
 * its page key; -EINVAL: no such slab or endpoint; -errno of the donor's
 * write (the slab stays local: the caller frees the donor's slab). */
int sd_exports_promote(struct sd_exports *xs,
                       const uint8_t grant[SD_UUID_LEN], uint32_t slab,
                       const char *endpoint, uint64_t addr,
                       uint64_t *copied, char *err, size_t errlen);
/* Page key handoff for a live migration (sealed exports; see keywrap.h).
 * The destination's adopted export makes an ephemeral X25519 offer when
 * it is created or restored without its key; the source wraps its key
 * for that offer; the destination installs it.  The key itself never
 * leaves the two swapds in clear. */

/* The public key of the offer of grant's export, which waits for its key.
 * -ENOENT: no export; -EINVAL: not sealed; -EALREADY: it has its key. */
int sd_exports_key_offer(struct sd_exports *xs,
                         const uint8_t grant[SD_UUID_LEN],
                         uint8_t pub[SD_KW_PUB_LEN]);
/* Wrap the page key of grant's export for the offer pub into blob.
 * -ENOENT: no export; -EINVAL with err: not sealed, or pub is not a usable
 * X25519 public key; -ENOKEY with err: the export waits for its key
 * itself; -EIO: OpenSSL failed. */
int sd_exports_key_wrap(struct sd_exports *xs,
                        const uint8_t grant[SD_UUID_LEN],
                        const uint8_t pub[SD_KW_PUB_LEN],
                        uint8_t blob[SD_KW_BLOB_LEN], char *err,
                        size_t errlen);
/* Install the page key blob wraps for this export's offer: saved in the
 * .conf (fsync) before it is used and before this returns 0; the offer's
 * private key is forgotten then.  -ENOENT: no export; -EALREADY: it has
 * its key; -EBADMSG with err: the blob does not open with the offer;
 * -EINVAL with err: not sealed; -errno with err: the .conf cannot be
 * written (the export still waits). */
int sd_exports_key_install(struct sd_exports *xs,
                           const uint8_t grant[SD_UUID_LEN],
                           const uint8_t blob[SD_KW_BLOB_LEN], char *err,
                           size_t errlen);

/* Stop serving grant (its rebuild, if any, stops too); the local copy is
 * removed with delete_local.  Nothing on the donors is freed: that is
 * GRANT_FREE's, when the grant is released. */
int sd_exports_drop(struct sd_exports *xs, const uint8_t grant[SD_UUID_LEN],
                    int delete_local);
/* "uuid,uuid,..." (malloc'd; "" when none). */
int sd_exports_list(struct sd_exports *xs, char **text);
int sd_exports_stats(struct sd_exports *xs,
                     const uint8_t grant[SD_UUID_LEN],
                     struct sd_export_stats *out);
int sd_exports_ghost(struct sd_exports *xs,
                     const uint8_t grant[SD_UUID_LEN], size_t max,
                     char **events, uint64_t *dropped);

#endif
