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
 * A minimal NBD client for the swapd tests: the fixed newstyle handshake
 * with NBD_OPT_GO, requests, and simple replies.  Aborts the test program
 * on protocol surprises (exit 2), which the tests count as failures.
 */
#ifndef MEMAGG_SWAPD_TEST_NBD_CLIENT_H
#define MEMAGG_SWAPD_TEST_NBD_CLIENT_H

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nbd.h"
#include "util.h"

static void tc_die(const char *what)
{
    fprintf(stderr, "nbd test client: %s\n", what);
    exit(2);
}

static void tc_send(int fd, const void *buf, size_t len)
{
    if (send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
        tc_die("send");
    }
}

static int tc_connect(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
        tc_die("connect");
    }
    return fd;
}

/* Read the greeting and send the client flags. */
static void tc_greet(int fd)
{
    uint8_t greet[18];
    uint32_t flags = htobe32(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
    uint64_t magic;

    if (sd_read_full(fd, greet, sizeof(greet))) {
        tc_die("greeting");
    }
    memcpy(&magic, greet, 8);
    if (be64toh(magic) != NBD_MAGIC) {
        tc_die("greeting magic");
    }
    tc_send(fd, &flags, 4);
}

static void tc_option(int fd, uint32_t opt, const void *data, uint32_t len)
{
    uint8_t hdr[16];
    uint64_t magic = htobe64(NBD_IHAVEOPT);
    uint32_t o = htobe32(opt), l = htobe32(len);

    memcpy(hdr, &magic, 8);
    memcpy(hdr + 8, &o, 4);
    memcpy(hdr + 12, &l, 4);
    tc_send(fd, hdr, 16);
    if (len) {
        tc_send(fd, data, len);
    }
}

/* One option reply: its type; its data (up to cap) in data, length in
 * *len. */
static uint32_t tc_opt_reply(int fd, void *data, uint32_t cap, uint32_t *len)
{
    uint8_t hdr[20];
    uint32_t type, l;

    if (sd_read_full(fd, hdr, sizeof(hdr))) {
        tc_die("option reply");
    }
    memcpy(&type, hdr + 12, 4);
    memcpy(&l, hdr + 16, 4);
    type = be32toh(type);
    l = be32toh(l);
    if (l > cap || (l && sd_read_full(fd, data, l))) {
        tc_die("option reply data");
    }
    if (len) {
        *len = l;
    }
    return type;
}

/* The minimum block size the last tc_go was told (1 when not told). */
static uint32_t tc_min_block;

/* NBD_OPT_GO for name: the export size, or exit. */
static uint64_t tc_go(int fd, const char *name)
{
    uint8_t data[512], info[64];
    uint32_t n = (uint32_t)strlen(name), nl = htobe32(n), len;
    uint16_t zero = 0;
    uint64_t size = 0;

    memcpy(data, &nl, 4);
    memcpy(data + 4, name, n);
    memcpy(data + 4 + n, &zero, 2);
    tc_option(fd, NBD_OPT_GO, data, n + 6);
    tc_min_block = 1;
    for (;;) {
        uint32_t type = tc_opt_reply(fd, info, sizeof(info), &len);

        if (type == NBD_REP_ACK) {
            return size;
        }
        if (type != NBD_REP_INFO) {
            tc_die("GO refused");
        }
        if (len == 12 && info[0] == 0 && info[1] == NBD_INFO_EXPORT) {
            memcpy(&size, info + 2, 8);
            size = be64toh(size);
        }
        if (len == 14 && info[0] == 0 && info[1] == NBD_INFO_BLOCK_SIZE) {
            memcpy(&tc_min_block, info + 2, 4);
            tc_min_block = be32toh(tc_min_block);
        }
    }
}

/* The 28 bytes of a request into req. */
static void tc_encode_request(uint8_t *req, uint16_t flags, uint16_t type,
                              uint64_t handle, uint64_t offset, uint32_t len)
{
    uint32_t magic = htobe32(NBD_REQUEST_MAGIC), l = htobe32(len);
    uint16_t f = htobe16(flags), t = htobe16(type);
    uint64_t h = htobe64(handle), o = htobe64(offset);

    memcpy(req, &magic, 4);
    memcpy(req + 4, &f, 2);
    memcpy(req + 6, &t, 2);
    memcpy(req + 8, &h, 8);
    memcpy(req + 16, &o, 8);
    memcpy(req + 24, &l, 4);
}

static void tc_request(int fd, uint16_t type, uint64_t handle,
                       uint64_t offset, uint32_t len, const void *payload)
{
    uint8_t req[28];

    tc_encode_request(req, 0, type, handle, offset, len);
    tc_send(fd, req, 28);
    if (payload && len) {
        tc_send(fd, payload, len);
    }
}

/* A simple reply's error; its handle in *handle.  -1 at end of stream. */
static int tc_reply(int fd, uint64_t *handle)
{
    uint8_t hdr[16];
    uint32_t magic, error;

    if (sd_read_full(fd, hdr, 16)) {
        return -1;
    }
    memcpy(&magic, hdr, 4);
    memcpy(&error, hdr + 4, 4);
    memcpy(handle, hdr + 8, 8);
    *handle = be64toh(*handle);
    if (be32toh(magic) != NBD_SIMPLE_REPLY_MAGIC) {
        tc_die("reply magic");
    }
    return (int)be32toh(error);
}

/* Synchronous READ/WRITE: the error (0 ok), data read into buf. */
static int tc_io(int fd, uint16_t type, uint64_t offset, uint32_t len,
                 void *buf)
{
    uint64_t handle;
    int err;

    tc_request(fd, type, 0x1234, offset, len,
               type == NBD_CMD_WRITE ? buf : NULL);
    err = tc_reply(fd, &handle);
    if (err == 0 && type == NBD_CMD_READ && sd_read_full(fd, buf, len)) {
        tc_die("read data");
    }
    return err;
}

#endif
