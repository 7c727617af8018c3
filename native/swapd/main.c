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
 * memagg-swapd's main: options, the donor service, the exports and the
 * control socket, then wait for SIGTERM/SIGINT and stop cleanly.
 *
 * Signals are blocked before any thread starts (threads inherit the mask)
 * and taken with sigwait here, so no handler runs inside a lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "control.h"
#include "endpoint.h"
#include "export.h"
#include "store.h"
#include "transport.h"
#include "util.h"

#define EXIT_USAGE 2

struct options {
    const char *control;
    const char *export_dir;
    const char *state_dir;
    const char *listen;
    const char *advertise;
    uint64_t capacity_mb;
    const char *transport;
    const char *fabric_provider;    /* NULL: the default's */
    uid_t uid;
    gid_t gid;
    int log_level;
    struct sd_limits_conf limits;
};

static const char usage[] =
    "usage: memagg-swapd [--control PATH] [--export-dir DIR] "
    "[--state-dir DIR]\n"
    "                    [--listen tcp://HOST:PORT] "
    "[--advertise tcp://HOST:PORT]\n"
    "                    [--capacity-mb MB] [--transport auto|tcp|rdma]\n"
    "                    [--fabric-provider NAME]\n"
    "                    [--socket-user USER] [--socket-group GROUP]\n"
    "                    [--max-connections N] "
    "[--max-connections-per-peer N]\n"
    "                    [--idle-timeout S] [--read-timeout S]\n"
    "                    [--log-level debug|info|warning|error]\n"
    "\n"
    "Serves this host's VMs' remote-swap disks over NBD (one unix socket "
    "per\nexport in --export-dir) and lends up to --capacity-mb of memory "
    "to other\nhosts' VMs on --listen.\n"
    "\n"
    "  --control PATH       control socket "
    "(default /run/memagg/swapd/control.sock)\n"
    "  --export-dir DIR     per-export NBD sockets "
    "(default /run/memagg/swapd/exports)\n"
    "  --state-dir DIR      export tables and local copies "
    "(default /var/lib/memagg/swapd)\n"
    "  --listen ENDPOINT    donor service (default tcp://0.0.0.0:7450; "
    "port 0: any)\n"
    "  --advertise ENDPOINT endpoint put in slab tables (default: --listen's,"
    "\n                       127.0.0.1 for 0.0.0.0)\n"
    "  --capacity-mb MB     memory this host may lend (default 0: none)\n"
    "  --transport T        auto (rdma when libfabric offers an RDMA NIC's "
    "provider,\n"
    "                       verbs or efa, or --fabric-provider is given; "
    "else tcp),\n"
    "                       tcp, rdma (libfabric, one-sided; rdma:// "
    "endpoints)\n"
    "  --fabric-provider NAME\n"
    "                       libfabric provider of rdma (default: the first "
    "of verbs,\n"
    "                       efa, tcp that fi_getinfo offers with FI_RMA)\n"
    "  --socket-user USER   owner of the export sockets (QEMU's user; "
    "needs root)\n"
    "  --socket-group GROUP group of the export sockets, mode 0660: one "
    "QEMU's\n"
    "                       user is in and memagg-swapd's user too "
    "(no root needed)\n"
    "  --max-connections N  connections the donor service holds "
    "(default 256)\n"
    "  --max-connections-per-peer N\n"
    "                       of them from one address (default 32)\n"
    "  --idle-timeout S     close a connection that sent nothing for S "
    "seconds\n"
    "                       before a frame of it was accepted "
    "(default 300)\n"
    "  --read-timeout S     close a connection whose frame is not whole S "
    "seconds\n"
    "                       after its first byte (default 10)\n"
    "  --log-level LEVEL    debug, info (default), warning, error\n";

static int bad(const char *opt, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One line naming the option and the fix. */
static int bad(const char *opt, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "memagg-swapd: error: %s: %s\n", opt, msg);
    return EXIT_USAGE;
}

/* Whether this process may give its sockets group gid without CAP_CHOWN:
 * only a group it is in. */
static int in_group(gid_t gid)
{
    gid_t groups[NGROUPS_MAX];
    int i, n;

    if (geteuid() == 0 || getegid() == gid) {
        return 1;
    }
    n = getgroups(NGROUPS_MAX, groups);
    for (i = 0; i < n; i++) {
        if (groups[i] == gid) {
            return 1;
        }
    }
    return 0;
}

/* 0 when parsed; EXIT_USAGE after saying why; -1 for --help. */
static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        { "control", required_argument, NULL, 'c' },
        { "export-dir", required_argument, NULL, 'e' },
        { "state-dir", required_argument, NULL, 's' },
        { "listen", required_argument, NULL, 'l' },
        { "advertise", required_argument, NULL, 'a' },
        { "capacity-mb", required_argument, NULL, 'm' },
        { "transport", required_argument, NULL, 't' },
        { "fabric-provider", required_argument, NULL, 'F' },
        { "socket-user", required_argument, NULL, 'u' },
        { "socket-group", required_argument, NULL, 'g' },
        { "log-level", required_argument, NULL, 'v' },
        { "max-connections", required_argument, NULL, 'C' },
        { "max-connections-per-peer", required_argument, NULL, 'P' },
        { "idle-timeout", required_argument, NULL, 'I' },
        { "read-timeout", required_argument, NULL, 'R' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const struct sd_limits_conf limits = SD_LIMITS_DEFAULT;
    char err[SD_ERRLEN];
    int c, group_given = 0;

    memset(o, 0, sizeof(*o));
    o->limits = limits;
    o->control = "/run/memagg/swapd/control.sock";
    o->export_dir = "/run/memagg/swapd/exports";
    o->state_dir = "/var/lib/memagg/swapd";
    o->listen = "tcp://0.0.0.0:7450";
    o->transport = "auto";
    o->uid = (uid_t)-1;
    o->gid = (gid_t)-1;
    o->log_level = LOG_INFO;

    optind = 0;         /* a full rescan: run() may be called again */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            o->control = optarg;
            break;
        case 'e':
            o->export_dir = optarg;
            break;
        case 's':
            o->state_dir = optarg;
            break;
        case 'l':
            o->listen = optarg;
            break;
        case 'a':
            o->advertise = optarg;
            break;
        case 'm':
            if (sd_parse_u64(optarg, strlen(optarg), 1ULL << 40,
                             &o->capacity_mb)) {
                return bad("--capacity-mb", "must be a whole number of MiB "
                           ">= 0, not '%s'", optarg);
            }
            break;
        case 't':
            if (strcmp(optarg, "auto") && strcmp(optarg, "tcp") &&
                strcmp(optarg, "rdma")) {
                return bad("--transport", "must be auto, tcp or rdma, not "
                           "'%s'", optarg);
            }
            o->transport = optarg;
            break;
        case 'F':
            if (!optarg[0] || strlen(optarg) > 31 ||
                strspn(optarg, "abcdefghijklmnopqrstuvwxyz0123456789_;-") !=
                strlen(optarg)) {
                return bad("--fabric-provider", "must be a libfabric "
                           "provider's name (e.g. verbs, efa, tcp, shm), not "
                           "'%s'", optarg);
            }
            o->fabric_provider = optarg;
            break;
        case 'u': {
            struct passwd *pw = getpwnam(optarg);

            if (!pw) {
                return bad("--socket-user", "no user '%s' on this host; "
                           "give QEMU's user (e.g. libvirt-qemu)", optarg);
            }
            o->uid = pw->pw_uid;
            if (!group_given) {
                o->gid = pw->pw_gid;
            }
            break;
        }
        case 'g': {
            struct group *gr = getgrnam(optarg);

            if (!gr) {
                return bad("--socket-group", "no group '%s' on this host; "
                           "give a group QEMU's user is in (e.g. "
                           "libvirt-qemu)", optarg);
            }
            if (!in_group(gr->gr_gid)) {
                return bad("--socket-group", "memagg-swapd's user is not "
                           "in group '%s'; add it to the group or start "
                           "memagg-swapd with that group", optarg);
            }
            o->gid = gr->gr_gid;
            group_given = 1;
            break;
        }
        case 'v':
            if (strcmp(optarg, "debug") == 0) {
                o->log_level = LOG_DEBUG;
            } else if (strcmp(optarg, "info") == 0) {
                o->log_level = LOG_INFO;
            } else if (strcmp(optarg, "warning") == 0) {
                o->log_level = LOG_WARNING;
            } else if (strcmp(optarg, "error") == 0) {
                o->log_level = LOG_ERR;
            } else {
                return bad("--log-level", "must be debug, info, warning or "
                           "error, not '%s'", optarg);
            }
            break;
        case 'C':
        case 'P':
        case 'I':
        case 'R': {
            unsigned *field = c == 'C' ? &o->limits.max_conns :
                              c == 'P' ? &o->limits.max_conns_per_peer :
                              c == 'I' ? &o->limits.idle_timeout_s :
                                         &o->limits.read_timeout_s;
            const char *name = c == 'C' ? "--max-connections" :
                               c == 'P' ? "--max-connections-per-peer" :
                               c == 'I' ? "--idle-timeout" :
                                          "--read-timeout";
            uint64_t v;

            if (sd_parse_u64(optarg, strlen(optarg), UINT32_MAX, &v)) {
                return bad(name, "must be a whole number, not '%s'", optarg);
            }
            *field = (unsigned)v;
            break;
        }
        case 'h':
            fputs(usage, stdout);
            return -1;
        case ':':
            return bad(argv[optind - 1], "needs a value; see "
                       "memagg-swapd --help");
        default:
            return bad(argv[optind - 1], "unknown option; see "
                       "memagg-swapd --help");
        }
    }
    if (optind < argc) {
        return bad(argv[optind], "unexpected argument; memagg-swapd takes "
                   "only options (see --help)");
    }
    if (sd_limits_conf_check(&o->limits, err, sizeof(err)) < 0) {
        fprintf(stderr, "memagg-swapd: error: %s\n", err);
        return EXIT_USAGE;
    }
    return 0;
}

/* mkdir -p of path's parent directory. */
static void make_parent(const char *path)
{
    char buf[PATH_MAX], *p;

    snprintf(buf, sizeof(buf), "%s", path);
    for (p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    }
}

/* "unavailable:no_RDMA_device_(...)": control replies have no spaces. */
static void rdma_words(int ret, const char *why, char *out, size_t len)
{
    char *p;

    if (ret == 0) {
        snprintf(out, len, "available");
        return;
    }
    snprintf(out, len, "unavailable:%s", why[0] ? why : strerror(-ret));
    for (p = out; *p; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n') {
            *p = '_';
        }
    }
}

static int run(struct options *o, const sigset_t *sigs)
{
    char err[SD_ERRLEN] = "", why[SD_ERRLEN] = "", rdma[SD_ERRLEN + 16];
    char prov[64] = "none";
    char host[256], adv_host[256], endpoint[300];
    const struct sd_transport *listen_t, *t;
    struct sd_control *control = NULL;
    struct sd_exports *exports = NULL;
    struct sd_server *server = NULL;
    struct sd_store *store = NULL;
    struct sd_control_ctx ctx;
    uint16_t port, adv_port;
    int ret, probe, hardware = 0, sig, status = 1;

    sd_log_level = o->log_level;
    if (sd_endpoint_parse(o->listen, &listen_t, host, sizeof(host), &port)) {
        return bad("--listen", "'%s' must be tcp://HOST:PORT (or "
                   "rdma://HOST:PORT)", o->listen);
    }
    if (o->advertise &&
        sd_endpoint_parse(o->advertise, &t, adv_host, sizeof(adv_host),
                          &adv_port)) {
        return bad("--advertise", "'%s' must be tcp://HOST:PORT (or "
                   "rdma://HOST:PORT)", o->advertise);
    }

    /* The provider of rdma:// (this host's donor service, and its
     * connections to other hosts' rdma:// donors). */
    probe = sd_fabric_select(o->fabric_provider, prov, sizeof(prov),
                             &hardware, why, sizeof(why));
    if (probe && o->fabric_provider) {
        return bad("--fabric-provider", "'%s' cannot be used here: %s; "
                   "set [swapd] fabric_provider to a provider fi_info -l "
                   "lists, or leave it unset", o->fabric_provider, why);
    }
    rdma_words(probe, why, rdma, sizeof(rdma));
    if (strcmp(o->transport, "rdma") == 0) {
        if (probe) {
            return bad("--transport", "rdma is unavailable here (%s); use "
                       "auto or tcp", why);
        }
        t = &sd_fabric_transport;
    } else if (strcmp(o->transport, "tcp") == 0) {
        t = &sd_tcp_transport;
    } else if (probe == 0 && (hardware || o->fabric_provider)) {
        t = &sd_fabric_transport;
        sd_log(LOG_INFO, "transport rdma: libfabric provider %s", prov);
    } else if (probe) {
        t = &sd_tcp_transport;
        sd_log(LOG_INFO, "transport tcp: rdma is unavailable: %s", why);
    } else {
        t = &sd_tcp_transport;
        sd_log(LOG_INFO, "transport tcp: libfabric offers %s, not an RDMA "
               "NIC's provider (verbs, efa); --fabric-provider or "
               "--transport rdma would use it", prov);
    }
    if (probe) {
        snprintf(prov, sizeof(prov), "none");
    }
    (void)listen_t;     /* the scheme of --listen only names the address */

    ret = sd_store_new(o->capacity_mb << 20, &store);
    if (ret) {
        sd_log(LOG_ERR, "cannot make the donor store: %s", strerror(-ret));
        goto out;
    }
    ret = t == &sd_fabric_transport ?
          sd_fabric_server_start(store, host, port, &o->limits, &server, err,
                                 sizeof(err)) :
          sd_tcp_server_start(store, host, port, &o->limits, &server, err,
                              sizeof(err));
    if (ret) {
        sd_log(LOG_ERR, "--listen: cannot serve donors on %s: %s", o->listen,
               err[0] ? err : strerror(-ret));
        status = EXIT_USAGE;
        goto out;
    }
    if (o->advertise) {
        snprintf(endpoint, sizeof(endpoint), "%s", o->advertise);
    } else {
        snprintf(endpoint, sizeof(endpoint), "%s://%s:%u", t->scheme,
                 sd_endpoint_wildcard(host) ? "127.0.0.1" : host,
                 sd_server_port(server));
    }

    ret = sd_exports_new(o->state_dir, o->export_dir, o->uid, o->gid,
                         &exports, err, sizeof(err));
    if (ret) {
        sd_log(LOG_ERR, "%s", err);
        status = EXIT_USAGE;
        goto out;
    }
    sd_exports_restore(exports);

    ctx.store = store;
    ctx.exports = exports;
    ctx.transport = t->scheme;
    ctx.rdma = rdma;
    ctx.fabric = prov;
    ctx.endpoint = endpoint;
    ctx.tcp_server = server;
    make_parent(o->control);
    ret = sd_control_start(o->control, &ctx, &control, err, sizeof(err));
    if (ret) {
        sd_log(LOG_ERR, "%s", err);
        status = EXIT_USAGE;
        goto out;
    }
    sd_log(LOG_INFO, "ready: control %s, exports in %s, donor %s "
           "(capacity %llu MiB), transport %s", o->control, o->export_dir,
           endpoint, (unsigned long long)o->capacity_mb, t->scheme);

    for (;;) {
        if (sigwait(sigs, &sig) == 0 && (sig == SIGTERM || sig == SIGINT)) {
            break;
        }
    }
    sd_log(LOG_INFO, "stopping (%s)", strsignal(sig));
    status = 0;

out:
    /* Control first (no new exports), then the exports (their clients and
     * donor connections), then the donor service and its memory. */
    sd_control_stop(control);
    sd_exports_free(exports);
    if (server) {
        sd_server_stop(server);
    }
    if (store) {
        sd_store_free(store);
    }
    if (status == 0) {
        sd_log(LOG_INFO, "stopped");
    }
    return status;
}

int sd_main(int argc, char **argv)
{
    struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;
    sigset_t sigs, old_mask;
    struct options o;
    int ret;

    ret = parse_options(argc, argv, &o);
    if (ret) {
        return ret < 0 ? 0 : ret;
    }
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, &old_mask);
    /* A peer that hangs up is an error to handle, not a reason to die. */
    sigaction(SIGPIPE, &ign, &old_pipe);
    ret = run(&o, &sigs);
    sigaction(SIGPIPE, &old_pipe, NULL);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    return ret;
}
