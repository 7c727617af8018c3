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
 * The fabric transport's donor side (sd_fabric_server_start).
 *
 * One RDM endpoint serves every consumer.  Each grant's two regions (its
 * slabs, their seals) are registered with the domain through the store's
 * hook (donor.h) for remote reads and writes: consumers read and write
 * them with one-sided operations, and this side posts nothing.  Where the
 * provider lets the application choose keys (no FI_MR_PROV_KEY), each
 * registration gets a fresh random 64-bit key, so that keys cannot be
 * guessed; a region is deregistered before its memory is unmapped, so an
 * access with the key of a freed grant is refused by the provider.
 *
 * Keys are handed out only over the handshake: the TCP donor port
 * (tcp_donor.c, with its connection limits and deadlines) answers a KEY
 * frame -- authenticated with keys derived from the grant's secret
 * (frame_auth.h), so only a holder of the secret gets an answer -- with
 * the grant's regions, keys and this endpoint's address (fabric_key.h),
 * encrypted for that connection only.
 *
 * A thread reads the endpoint's completion queue: nothing completes here,
 * but providers of manual progress (tcp, shm) serve remote operations and
 * accept connections only while someone does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <syslog.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "donor.h"
#include "fabric_internal.h"
#include "fabric_key.h"
#include "store.h"
#include "tcp_internal.h"
#include "transport.h"
#include "util.h"

#define CQ_SIZE 64
#define TICK_US 100000          /* how often the thread looks at stop */
#define POLL_US 200             /* a polled provider's progress interval */
#define KEY_TRIES 8             /* random keys tried against collisions */

struct fabric_donor {
    struct sd_store *store;
    struct sd_fabric_ep f;      /* fabric, domain, endpoint, queue */
    int stop_fd;                /* an eventfd: stop */
    pthread_t thread;
    int thread_started;
    int hooked;
    int virt_addr;              /* RMA addresses are virtual ones */
    int prov_key;               /* the provider chooses keys */
    struct sd_fkey self;        /* provider and address, for replies */
};

static int donor_reg(void *ctx, void *addr, size_t len, uint64_t *key,
                     void **handle)
{
    struct fabric_donor *d = ctx;
    struct fid_mr *mr;
    uint64_t want = 0;
    int rc, tries = 0;

    do {
        if (!d->prov_key &&
            RAND_bytes((unsigned char *)&want, sizeof(want)) != 1) {
            return -EIO;
        }
        rc = fi_mr_reg(d->f.domain, addr, len,
                       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, want, 0, &mr,
                       NULL);
        /* A key already in use: draw again. */
    } while (rc == -FI_ENOKEY && !d->prov_key && ++tries < KEY_TRIES);
    if (rc < 0) {
        sd_log(LOG_WARNING, "fabric: cannot register %zu bytes: %s", len,
               fi_strerror(-rc));
        return sd_fabric_errno(rc);
    }
    *key = fi_mr_key(mr);
    *handle = mr;
    return 0;
}

static void donor_dereg(void *ctx, void *handle)
{
    struct fid_mr *mr = handle;

    (void)ctx;
    fi_close(&mr->fid);
}

/* The key service: a KEY frame that proved grant's secret (key). */
static int donor_fill(void *ctx, const uint8_t grant[SD_UUID_LEN],
                      const uint8_t key[SD_KEY_LEN], uint8_t *out)
{
    struct fabric_donor *d = ctx;
    struct sd_store_region r;
    struct sd_fkey k = d->self;
    int rc = sd_store_region(d->store, grant, key, &r);

    if (rc < 0) {
        return rc;
    }
    k.key = r.key;
    k.base = r.base;
    k.len = r.len;
    k.target = d->virt_addr ? r.base : 0;
    k.seals_key = r.seals_key;
    k.seals_target = d->virt_addr ? r.seals : 0;
    k.seals_len = r.seals_len;
    sd_fkey_encode(&k, out);
    return 0;
}

static void *donor_progress(void *arg)
{
    struct fabric_donor *d = arg;
    struct fi_cq_entry entries[16];
    uint64_t stop;

    for (;;) {
        ssize_t n = fi_cq_read(d->f.cq, entries, 16);

        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry e = { 0 };

            fi_cq_readerr(d->f.cq, &e, 0);
            sd_log(LOG_DEBUG, "fabric: donor endpoint: %s",
                   fi_strerror(e.err));
        }
        if (n > 0 || n == -FI_EAVAIL) {
            continue;
        }
        /* stop_fd is read only once it is readable: a read per wakeup
         * would be a syscall per message served. */
        if (sd_fabric_wait(d->f.fabric, d->f.cq, d->f.cqfd, d->stop_fd,
                           TICK_US, POLL_US) &&
            read(d->stop_fd, &stop, sizeof(stop)) == sizeof(stop)) {
            return NULL;
        }
    }
}

static void donor_free(struct fabric_donor *d)
{
    uint64_t one = 1;

    if (d->thread_started) {
        if (write(d->stop_fd, &one, sizeof(one)) != sizeof(one)) {
            sd_log(LOG_WARNING, "fabric: cannot wake the donor's thread");
        }
        pthread_join(d->thread, NULL);
    }
    /* Every region deregistered before the domain goes. */
    if (d->hooked) {
        sd_store_set_mr_hook(d->store, NULL);
    }
    sd_fabric_ep_close(&d->f);
    if (d->stop_fd >= 0) {
        close(d->stop_fd);
    }
    free(d);
}

static void donor_stop(void *ctx)
{
    donor_free(ctx);
}

/* Fabric, domain and endpoint on host's interface, and this endpoint's
 * provider and address for the replies: 0, or -errno with err. */
static int donor_open(struct fabric_donor *d, const char *host, char *err,
                      size_t errlen)
{
    size_t alen = sizeof(d->self.addr);
    int rc;

    rc = sd_fabric_getinfo(host, 1, &d->f.info, err, errlen);
    if (rc < 0) {
        return rc;
    }
    d->virt_addr = !!(d->f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
    d->prov_key = !!(d->f.info->domain_attr->mr_mode & FI_MR_PROV_KEY);
    snprintf(d->self.prov, sizeof(d->self.prov), "%s",
             d->f.info->fabric_attr->prov_name);
    rc = sd_fabric_ep_open(&d->f, 0, CQ_SIZE, err, errlen);
    if (rc < 0) {
        return rc;
    }
    rc = fi_getname(&d->f.ep->fid, d->self.addr, &alen);
    d->self.addr_len = alen;
    if (rc < 0) {
        snprintf(err, errlen, "fi_getname (%s): %s", d->self.prov,
                 fi_strerror(-rc));
        return sd_fabric_errno(rc);
    }
    return 0;
}

int sd_fabric_server_start(struct sd_store *store, const char *host,
                           uint16_t port, const struct sd_limits_conf *limits,
                           struct sd_server **out, char *err, size_t errlen)
{
    struct fabric_donor *d = calloc(1, sizeof(*d));
    struct sd_store_mr_hook hook = { donor_reg, donor_dereg, NULL };
    struct sd_key_service keys = { donor_fill, donor_stop, NULL };
    int rc;

    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    d->store = store;
    d->f.cqfd = -1;
    d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    rc = d->stop_fd < 0 ? -errno : donor_open(d, host, err, errlen);
    if (d->stop_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(-rc));
    }
    if (rc == 0) {
        hook.ctx = d;
        rc = sd_store_set_mr_hook(store, &hook);
        d->hooked = rc == 0;
        if (rc < 0) {
            snprintf(err, errlen, "registering the grants' memory: %s",
                     strerror(-rc));
        }
    }
    if (rc == 0) {
        rc = -pthread_create(&d->thread, NULL, donor_progress, d);
        d->thread_started = rc == 0;
        if (rc < 0) {
            snprintf(err, errlen, "pthread_create: %s", strerror(-rc));
        }
    }
    if (rc == 0) {
        keys.ctx = d;
        rc = sd_tcp_server_start_keys(store, host, port, limits, &keys, out,
                                      err, errlen);
    }
    if (rc < 0) {
        donor_free(d);
        return rc;
    }
    sd_log(LOG_INFO, "donor service on rdma://%s:%u: provider %s, memory "
           "keys %s", host, (*out)->port, d->self.prov,
           d->prov_key ? "chosen by the provider" : "drawn at random");
    if (strcmp(d->self.prov, "shm") == 0) {
        sd_log(LOG_WARNING, "fabric: provider shm does not check memory "
               "keys (its peers copy with process_vm_writev): for one-host "
               "tests only");
    }
    return 0;
}
