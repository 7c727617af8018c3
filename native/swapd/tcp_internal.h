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

/* Internal to the TCP transport: what its consumer side (tcp.c) and its
 * donor side (tcp_donor.c) share. */
#ifndef MEMAGG_SWAPD_TCP_INTERNAL_H
#define MEMAGG_SWAPD_TCP_INTERNAL_H

#include <netdb.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "swapd.h"

struct sd_limits_conf;
struct sd_server;
struct sd_store;

/* Both sides read frames in batches of up to this many bytes. */
#define SD_TCP_RX_BUF_LEN (256 * 1024)

/* Send every byte of iov[0..n), retrying short writes; 0 or -errno
 * (-ETIMEDOUT when SO_SNDTIMEO ran out). */
int sd_tcp_send_all(int fd, struct iovec *iov, int n);

/* setsockopt of an int, or of a timeout in microseconds; tuning only, so
 * a failure is logged at debug level and ignored. */
void sd_tcp_sockopt(int fd, int level, int name, int value);
void sd_tcp_timeout(int fd, int name, uint64_t us);

/* Resolve host:port and open a TCP socket for it: the socket, with *res
 * to free, or -errno with the reason in err. */
int sd_tcp_socket(const char *host, uint16_t port, int passive,
                  struct addrinfo **res, char *err, size_t errlen);

/*
 * What a donor port answers KEY frames with: the fabric transport's
 * handshake (fabric_donor.c).  fill writes the SD_FRAME_KEY_LEN bytes of
 * the reply's payload (fabric_key.h) for grant, whose key the frame proved
 * (key): 0, or -errno as the reply's status.  It runs on connection
 * threads, several at once.  stop runs once every connection thread is
 * joined, as the port stops.
 */
struct sd_key_service {
    int (*fill)(void *ctx, const uint8_t grant[SD_UUID_LEN],
                const uint8_t key[SD_KEY_LEN], uint8_t *out);
    void (*stop)(void *ctx);
    void *ctx;
};

/* sd_tcp_server_start with a key service (keys NULL: none).  When it
 * fails, keys->stop is not called. */
int sd_tcp_server_start_keys(struct sd_store *store, const char *host,
                             uint16_t port,
                             const struct sd_limits_conf *limits,
                             const struct sd_key_service *keys,
                             struct sd_server **out, char *err,
                             size_t errlen);

#endif
