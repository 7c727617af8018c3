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
 * For the TCP transport's tests: raw connections that speak the frame
 * protocol by hand (frame.h, frame_auth.h) on either side -- a consumer
 * that can send what the real one never would, and a fake donor that
 * answers the HELLO and then whatever the test makes it.
 */
#ifndef MEMAGG_SWAPD_TESTS_RAW_PEER_H
#define MEMAGG_SWAPD_TESTS_RAW_PEER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "frame_auth.h"
#include "transport.h"

/* 1 when the peer ends fd's stream within ms (what it sends before the end
 * is read and dropped), 0 when it is still open then. */
static inline int ends_within(int fd, int ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    char sink[4096];

    while (poll(&pfd, 1, ms) == 1) {
        if (recv(fd, sink, sizeof(sink), 0) <= 0) {
            return 1;
        }
    }
    return 0;
}

/* The donor server's counts now. */
static inline struct sd_tcp_server_stats stats_of(struct sd_server *srv)
{
    struct sd_tcp_server_stats st;

    sd_tcp_server_stats(srv, &st);
    return st;
}

/* A raw connection to the donor on port from source address
 * 127.0.0.<host> (the caps count by source address). */
static inline int raw_connect(uint16_t port, int host)
{
    struct sockaddr_in src = { .sin_family = AF_INET };
    struct sockaddr_in dst = { .sin_family = AF_INET };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    src.sin_addr.s_addr = htonl(0x7f000000U | (uint32_t)host);
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    dst.sin_port = htons(port);
    if (fd < 0 || bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
        connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
        perror("raw connect");
        exit(2);
    }
    return fd;
}

struct raw {
    int fd;
    struct sd_fauth_conn fa;
    uint64_t tx_seq, rx_seq;
};

/* The consumer's HELLO on fd, offering macs: 0, or -1 when the donor did
 * not answer with one of them. */
static inline int raw_hello(struct raw *r, int fd, uint8_t macs)
{
    uint8_t msg[SD_FRAME_HDR_LEN];
    const char *why;

    memset(r, 0, sizeof(*r));
    r->fd = fd;
    if (sd_fauth_nonce(r->fa.nonce_c) < 0) {
        return -1;
    }
    sd_hello_encode(0, macs, r->fa.nonce_c, msg);
    if (send(fd, msg, sizeof(msg), MSG_NOSIGNAL) != (ssize_t)sizeof(msg) ||
        recv(fd, msg, sizeof(msg), MSG_WAITALL) != (ssize_t)sizeof(msg) ||
        sd_hello_parse(msg, sizeof(msg), 1, &r->fa.mac, r->fa.nonce_d,
                       &why) < 0 || !(r->fa.mac & macs)) {
        return -1;
    }
    return 0;
}

/* The donor's side of the HELLO on fd, choosing mac when the consumer
 * offers it: 0 or -1. */
static inline int raw_answer_hello(struct raw *r, int fd, uint8_t mac)
{
    uint8_t msg[SD_FRAME_HDR_LEN], macs;
    const char *why;

    memset(r, 0, sizeof(*r));
    r->fd = fd;
    if (recv(fd, msg, sizeof(msg), MSG_WAITALL) != (ssize_t)sizeof(msg) ||
        sd_hello_parse(msg, sizeof(msg), 0, &macs, r->fa.nonce_c,
                       &why) < 0 || !(macs & mac) ||
        sd_fauth_nonce(r->fa.nonce_d) < 0) {
        return -1;
    }
    r->fa.mac = mac;
    sd_hello_encode(1, mac, r->fa.nonce_d, msg);
    return send(fd, msg, sizeof(msg), MSG_NOSIGNAL) == (ssize_t)sizeof(msg) ?
           0 : -1;
}

/* Encode f, numbered next on r in direction dir, signed with the key of
 * its grant derived from key, with payload[0..plen) (the payload tag is
 * left zero when payload is NULL), into hdr. */
static inline void raw_sign(struct raw *r, struct sd_frame *f, const uint8_t *key,
                     enum sd_fauth_dir dir, const void *payload, size_t plen,
                     uint8_t hdr[SD_FRAME_HDR_LEN])
{
    struct sd_fauth_key k;

    f->seq = ++r->tx_seq;
    if (sd_fauth_derive(&r->fa, key, f->grant, dir, &k) < 0) {
        abort();
    }
    if (payload && sd_fauth_payload_tag(&k, f->seq, payload, plen, NULL, 0,
                                        f->ptag) < 0) {
        abort();
    }
    sd_frame_encode(f, hdr);
    if (sd_fauth_sign(&k, f->seq, hdr) < 0) {
        abort();
    }
}

/* A fake donor: accepts one connection on a listening socket in a thread
 * of its own and answers its HELLO (so that connect() returns). */
struct fake_donor {
    int lfd;
    struct raw r;
    int ok;
    pthread_t thread;
};

static inline void *fake_donor_main(void *arg)
{
    struct fake_donor *d = arg;
    int fd = accept(d->lfd, NULL, NULL);

    d->ok = fd >= 0 && raw_answer_hello(&d->r, fd, SD_FAUTH_HMAC) == 0;
    if (!d->ok && fd >= 0) {
        d->r.fd = fd;
    }
    return NULL;
}

static inline void fake_donor_start(struct fake_donor *d, int lfd)
{
    memset(d, 0, sizeof(*d));
    d->lfd = lfd;
    if (pthread_create(&d->thread, NULL, fake_donor_main, d) != 0) {
        abort();
    }
}

/* Its end of the connection once the HELLO is answered. */
static inline int fake_donor_join(struct fake_donor *d)
{
    pthread_join(d->thread, NULL);
    return d->r.fd;
}

#endif
