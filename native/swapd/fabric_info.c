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
 * The fabric transport's provider and the libfabric plumbing both of its
 * sides share.
 *
 * Provider: sd_fabric_select picks, among what fi_getinfo offers with
 * FI_RMA on FI_EP_RDM (tcp shows as "tcp;ofi_rxm", verbs as
 * "verbs;ofi_rxm", efa and shm as themselves), the one configured, or else
 * the first of verbs, efa and tcp.  Both sides ask for the memory modes
 * every RDMA NIC's provider needs (FI_MR_LOCAL, FI_MR_VIRT_ADDR,
 * FI_MR_ALLOCATED, FI_MR_PROV_KEY) and a thread-safe domain: submit()
 * posts from the callers' threads while one thread per endpoint reads its
 * completions.
 *
 * Waiting: tcp's completion queues have wait fds; shm's have none
 * (fi_cq_open says ENOSYS) and are polled.  Either way the waiting thread
 * reads the queue again, which is what progresses a provider of manual
 * progress (both of them, and rxm over verbs).
 */
#define _GNU_SOURCE             /* ppoll */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_errno.h>

#include "endpoint.h"
#include "fabric_internal.h"
#include "transport.h"

#define OFFERED_LEN 160         /* with the words around it, in SD_ERRLEN */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char chosen[64];         /* the full name; "" until a choice */
static char unavailable[SD_ERRLEN];     /* why, after a failed choice */

static struct fi_info *hints_new(const char *prov)
{
    struct fi_info *h = fi_allocinfo();

    if (!h) {
        return NULL;
    }
    h->caps = FI_RMA;
    h->ep_attr->type = FI_EP_RDM;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
                              FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->domain_attr->threading = FI_THREAD_SAFE;
    if (prov && !(h->fabric_attr->prov_name = strdup(prov))) {
        fi_freeinfo(h);
        return NULL;
    }
    return h;
}

/* Whether a provider's full name (a core one, maybe under utility ones:
 * "tcp;ofi_rxm") is want's. */
static int is_provider(const char *full, const char *want)
{
    size_t n = strlen(want);

    return strncmp(full, want, n) == 0 && (full[n] == '\0' ||
                                           full[n] == ';');
}

int sd_fabric_select(const char *name, char *prov, size_t provlen,
                     int *hardware, char *why, size_t whylen)
{
    static const char *const defaults[] = { "verbs", "efa", "tcp" };
    const char *const *want = name ? &name : defaults;
    size_t nwant = name ? 1 : sizeof(defaults) / sizeof(defaults[0]);
    char offered[OFFERED_LEN] = "";
    struct fi_info *h = hints_new(NULL), *list = NULL, *i;
    const char *found = NULL;
    size_t w, used = 0;
    int rc;

    rc = h ? fi_getinfo(SD_FABRIC_API, NULL, NULL, 0, h, &list) : -FI_ENOMEM;
    fi_freeinfo(h);
    for (i = rc == 0 ? list : NULL; i; i = i->next) {
        const char *p = i->fabric_attr->prov_name;

        if (!strstr(offered, p) && used < sizeof(offered)) {
            used += (size_t)snprintf(offered + used, sizeof(offered) - used,
                                     "%s%s", used ? ", " : "", p);
        }
    }
    for (w = 0; w < nwant && !found; w++) {
        for (i = list; i && !found; i = i->next) {
            if (is_provider(i->fabric_attr->prov_name, want[w])) {
                found = i->fabric_attr->prov_name;
                *hardware = strcmp(want[w], "verbs") == 0 ||
                            strcmp(want[w], "efa") == 0;
            }
        }
    }
    pthread_mutex_lock(&lock);
    if (found) {
        snprintf(chosen, sizeof(chosen), "%s", found);
        snprintf(prov, provlen, "%s", found);
        rc = 0;
    } else {
        chosen[0] = '\0';
        snprintf(unavailable, sizeof(unavailable), "%s offered with FI_RMA "
                 "on FI_EP_RDM (fi_getinfo offers: %s)", name ?
                 "that provider is not" : "none of verbs, efa, tcp is",
                 offered[0] ? offered : rc == 0 ? "none" : fi_strerror(-rc));
        snprintf(why, whylen, "%s", unavailable);
        rc = -ENODEV;
    }
    pthread_mutex_unlock(&lock);
    fi_freeinfo(list);
    return rc;
}

/* The chosen provider into prov (the default's when none was chosen): 0,
 * or -ENODEV with err. */
static int chosen_provider(char *prov, size_t provlen, char *err,
                           size_t errlen)
{
    int hw, rc = 0;

    pthread_mutex_lock(&lock);
    if (!chosen[0] && !unavailable[0]) {
        pthread_mutex_unlock(&lock);
        rc = sd_fabric_select(NULL, prov, provlen, &hw, err, errlen);
        pthread_mutex_lock(&lock);
    }
    if (chosen[0]) {
        snprintf(prov, provlen, "%s", chosen);
    } else {
        snprintf(err, errlen, "%s", unavailable);
        rc = -ENODEV;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int sd_fabric_probe(char *why, size_t len)
{
    return chosen_provider(why, len, why, len);
}

int sd_fabric_getinfo(const char *host, int source, struct fi_info **out,
                      char *err, size_t errlen)
{
    char prov[64];
    struct fi_info *h, *list = NULL, *near = NULL;
    int rc = chosen_provider(prov, sizeof(prov), err, errlen);

    if (rc < 0) {
        return rc;
    }
    h = hints_new(prov);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    rc = fi_getinfo(SD_FABRIC_API, NULL, NULL, 0, h, &list);
    /* Socket addresses: the interface of host (a donor's endpoint listens
     * there; a consumer's reaches it).  Other formats (shm's names,
     * efa's GIDs) have nothing to say about an IP host. */
    if (rc == 0 && !sd_endpoint_wildcard(host) &&
        (list->addr_format == FI_SOCKADDR ||
         list->addr_format == FI_SOCKADDR_IN ||
         list->addr_format == FI_SOCKADDR_IN6)) {
        rc = fi_getinfo(SD_FABRIC_API, host, NULL, source ? FI_SOURCE : 0, h,
                        &near);
        if (rc < 0) {
            snprintf(err, errlen, "provider %s has no interface %s %s: %s",
                     prov, source ? "at" : "toward", host, fi_strerror(-rc));
        }
    } else if (rc < 0) {
        snprintf(err, errlen, "fi_getinfo(%s): %s", prov, fi_strerror(-rc));
    }
    fi_freeinfo(h);
    if (rc == 0) {
        struct fi_info *use = near ? near : list;

        *out = fi_dupinfo(use);
        if (!*out) {
            snprintf(err, errlen, "out of memory");
            rc = -FI_ENOMEM;
        }
    }
    fi_freeinfo(list);
    fi_freeinfo(near);
    return rc < 0 ? sd_fabric_errno(rc) : 0;
}

int sd_fabric_ep_open(struct sd_fabric_ep *e, size_t av_count,
                      size_t cq_size, char *err, size_t errlen)
{
    struct fi_av_attr av = { .type = FI_AV_TABLE, .count = av_count };
    const char *what = "fi_fabric";
    int rc = fi_fabric(e->info->fabric_attr, &e->fabric, NULL);

    if (rc == 0) {
        what = "fi_domain";
        rc = fi_domain(e->fabric, e->info, &e->domain, NULL);
    }
    if (rc == 0) {
        what = "fi_av_open";
        rc = fi_av_open(e->domain, &av, &e->av, NULL);
    }
    if (rc == 0) {
        what = "fi_cq_open";
        rc = sd_fabric_cq_open(e->domain, cq_size, &e->cq, &e->cqfd);
    }
    if (rc == 0) {
        what = "fi_endpoint";
        rc = fi_endpoint(e->domain, e->info, &e->ep, NULL);
    }
    if (rc == 0) {
        what = "fi_ep_bind";
        rc = fi_ep_bind(e->ep, &e->av->fid, 0);
    }
    if (rc == 0) {
        rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
    }
    if (rc == 0) {
        what = "fi_enable";
        rc = fi_enable(e->ep);
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s (%s): %s", what,
                 e->info->fabric_attr->prov_name, fi_strerror(-rc));
        return sd_fabric_errno(rc);
    }
    return 0;
}

void sd_fabric_ep_close(struct sd_fabric_ep *e)
{
    if (e->ep) {
        fi_close(&e->ep->fid);
    }
    if (e->cq) {
        fi_close(&e->cq->fid);
    }
    if (e->av) {
        fi_close(&e->av->fid);
    }
    if (e->domain) {
        fi_close(&e->domain->fid);
    }
    if (e->fabric) {
        fi_close(&e->fabric->fid);
    }
    fi_freeinfo(e->info);
    e->info = NULL;
}

int sd_fabric_cq_open(struct fid_domain *domain, size_t size,
                      struct fid_cq **cq, int *fd)
{
    struct fi_cq_attr attr = {
        .size = size, .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_FD,
    };
    int rc = fi_cq_open(domain, &attr, cq, NULL);

    if (rc == 0 && fi_control(&(*cq)->fid, FI_GETWAIT, fd) == 0) {
        return 0;
    }
    if (rc == 0) {
        fi_close(&(*cq)->fid);
    }
    *fd = -1;
    attr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(domain, &attr, cq, NULL);
    return rc < 0 ? sd_fabric_errno(rc) : 0;
}

int sd_fabric_wait(struct fid_fabric *fabric, struct fid_cq *cq, int cqfd,
                   int wake, uint64_t timeout_us, uint64_t poll_us)
{
    struct pollfd pfd[2];
    struct timespec ts;
    nfds_t n = 0;

    if (cq && cqfd >= 0) {
        struct fid *f = &cq->fid;

        /* Not now: something is there to read (or to progress). */
        if (fi_trywait(fabric, &f, 1) != 0) {
            return 0;
        }
        pfd[n++] = (struct pollfd){ .fd = cqfd, .events = POLLIN };
    } else if (cq && timeout_us > poll_us) {
        timeout_us = poll_us;
    }
    if (wake >= 0) {
        pfd[n++] = (struct pollfd){ .fd = wake, .events = POLLIN };
    }
    ts.tv_sec = (time_t)(timeout_us / 1000000);
    ts.tv_nsec = (long)(timeout_us % 1000000) * 1000;
    return wake >= 0 && ppoll(pfd, n, &ts, NULL) > 0 &&
           (pfd[n - 1].revents & POLLIN);
}

int sd_fabric_errno(int err)
{
    switch (err < 0 ? -err : err) {
    case 0:
        return 0;
    case FI_EACCES:
    case FI_EPERM:
    case FI_EKEYREJECTED:
        return -EACCES;
    case FI_ENOTCONN:
    case FI_ECONNRESET:
    case FI_ECONNREFUSED:
    case FI_ECONNABORTED:
    case FI_EHOSTUNREACH:
    case FI_ESHUTDOWN:
    case EPIPE:
        return -ECONNRESET;
    case FI_ETIMEDOUT:
        return -ETIMEDOUT;
    case FI_ENOMEM:
        return -ENOMEM;
    case FI_ENODATA:
    case FI_ENOSYS:
        return -ENODEV;
    default:
        return -EIO;
    }
}
