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
 * libFuzzer harness: the NBD wire parsers, and whole server sessions.  The
 * input is the client's byte stream to sd_nbd_serve_fd over a socketpair
 * (after a valid handshake when the first byte is odd, so requests are
 * reached often) against a 64 KiB memory disk.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nbd.h"

#define DISK 65536

static uint8_t disk[DISK];

static void mem_submit_one(void *ctx, struct sd_nbd_io *io)
{
    (void)ctx;
    /* A zero-length request has no buffer, and memcpy may not get NULL. */
    if (io->len && io->type == NBD_CMD_READ) {
        memcpy(io->buf, disk + io->offset, io->len);
    } else if (io->len && io->type == NBD_CMD_WRITE) {
        memcpy(disk + io->offset, io->buf, io->len);
    }
    io->done(io, 0);
}

static void mem_submit(void *ctx, struct sd_nbd_io **ios, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        mem_submit_one(ctx, ios[i]);
    }
}

static const struct sd_nbd_backend backend = {
    .name = "memagg-swap-fuzz", .size = DISK, .submit = mem_submit,
};

/* Client flags (fixed newstyle, no zeroes), then NBD_OPT_GO for "". */
static const uint8_t handshake[] = {
    0, 0, 0, 3,
    'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T', 0, 0, 0, 7, 0, 0, 0, 6,
    0, 0, 0, 0, 0, 0,
};

struct feed {
    int fd;
    const uint8_t *data;
    size_t size;
};

static void *writer(void *arg)
{
    struct feed *f = arg;

    if (f->size && (f->data[0] & 1)) {
        if (send(f->fd, handshake, sizeof(handshake), MSG_NOSIGNAL) < 0) {
            return NULL;
        }
    }
    if (f->size) {
        /* The server may close early: a failed send is fine. */
        (void)!send(f->fd, f->data + 1, f->size - 1, MSG_NOSIGNAL);
    }
    shutdown(f->fd, SHUT_WR);
    return NULL;
}

static void *reader(void *arg)
{
    char buf[65536];
    int fd = *(int *)arg;

    while (recv(fd, buf, sizeof(buf), 0) > 0) {
        continue;
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sd_nbd_info_request info;
    struct sd_nbd_request req;
    struct sd_nbd_verdict v;
    pthread_t w, r;
    struct feed f;
    uint32_t opt, len;
    int sv[2];

    if (size >= SD_NBD_REQUEST_SIZE && sd_nbd_parse_request(data, &req) == 0) {
        sd_nbd_check_request(&req, DISK, &v);
    }
    if (size >= SD_NBD_OPT_HEADER_SIZE) {
        sd_nbd_parse_option(data, &opt, &len);
    }
    if (size <= UINT32_MAX) {
        sd_nbd_parse_info(data, (uint32_t)size, &info);
    }

    if (size > (1 << 16) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        return 0;
    }
    f.fd = sv[0];
    f.data = data;
    f.size = size;
    pthread_create(&w, NULL, writer, &f);
    pthread_create(&r, NULL, reader, &sv[0]);
    sd_nbd_serve_fd(sv[1], &backend);       /* closes sv[1] */
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    close(sv[0]);
    return 0;
}
