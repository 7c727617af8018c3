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
 * Tests of the RDMA transport where it can run here: a host without an
 * RDMA device (these machines have none; a fake cannot stand in for a
 * NIC).  probe(), connect() and the donor server each fail with -ENODEV
 * and say why, and leave the store as it was.  On a host with a device the
 * no-device checks are skipped and say so.
 * Prints "N passed, N failed".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "check.h"
#include "store.h"
#include "transport.h"

#define REASON "no RDMA device (ibv_get_device_list found none)"

static void test_no_device(void)
{
    const struct sd_transport *t = &sd_rdma_transport;
    struct sd_store *store;
    struct sd_server *srv = NULL;
    struct sd_peer *peer = NULL;
    struct sd_store_stats st;
    uint8_t grant[SD_UUID_LEN] = { 1 }, key[SD_KEY_LEN] = { 2 };
    uint32_t idx[] = { 0 }, rkey = 99;
    uint64_t addr;
    size_t done;
    char err[SD_ERRLEN] = "";

    CHECK(strcmp(t->scheme, "rdma") == 0);
    CHECK(t->probe(err, sizeof(err)) == -ENODEV);
    CHECK(strcmp(err, REASON) == 0);

    err[0] = '\0';
    CHECK(t->connect("127.0.0.1", 7451, &peer, err, sizeof(err)) == -ENODEV);
    CHECK(peer == NULL);
    CHECK(strcmp(err, REASON) == 0);

    CHECK(sd_store_new(1 << 20, &store) == 0);
    err[0] = '\0';
    CHECK(sd_rdma_server_start(store, "127.0.0.1", 0, &srv, err,
                               sizeof(err)) == -ENODEV);
    CHECK(srv == NULL);
    CHECK(strcmp(err, REASON) == 0);
    /* The store has no registration hook: grants get no rkey and work. */
    CHECK(sd_store_alloc(store, grant, key, 65536, idx, 1, &addr, &done,
                         &rkey) == 0);
    CHECK(done == 1 && rkey == 0);
    CHECK(sd_store_access(store, SD_OP_WRITE, grant, key, 0, 0, "x", 1,
                          NULL) == 0);
    sd_store_stats(store, &st);
    CHECK(st.grants == 1 && st.refused == 0);
    sd_store_free(store);
}

int main(void)
{
    const struct sd_transport *t;
    char host[64], why[SD_ERRLEN];
    uint16_t port;

    sd_log_level = LOG_WARNING;
    CHECK(sd_endpoint_parse("rdma://10.0.0.2:7451", &t, host, sizeof(host),
                            &port) == 0);
    CHECK(t == &sd_rdma_transport && port == 7451);
    if (sd_rdma_transport.probe(why, sizeof(why)) == 0) {
        printf("an RDMA device is present (%s): no-device tests skipped\n",
               why);
    } else {
        test_no_device();
    }
    return check_summary();
}
