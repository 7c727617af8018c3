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
 * libFuzzer harness: the page key wrapping's untrusted inputs, a wrapped
 * blob (EXPORT_KEY_INSTALL) and a destination's public key (key_offer=).
 * The input is a grant uuid then a blob, zero-padded; the blob is opened
 * as it is and with its version byte set right, and must be refused with
 * -EBADMSG (nobody forges a GCM tag by fuzzing).  The input's first 32
 * bytes, as a public key, must wrap or be refused with -EINVAL.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keywrap.h"

static struct sd_kw_offer *offer;

static void must_not_open(const uint8_t *grant, const uint8_t *blob)
{
    uint8_t key[SD_KEY_LEN];

    if (sd_kw_unwrap(offer, grant, blob, key) != -EBADMSG) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t in[SD_UUID_LEN + SD_KW_BLOB_LEN] = {0};
    uint8_t pub[SD_KW_PUB_LEN], key[SD_KEY_LEN] = {0};
    uint8_t *grant = in, *blob = in + SD_UUID_LEN;
    int rc;

    if (!offer && sd_kw_offer_new(&offer, pub) < 0) {
        abort();
    }
    memcpy(in, data, size < sizeof(in) ? size : sizeof(in));
    must_not_open(grant, blob);
    blob[0] = SD_KW_VERSION;
    must_not_open(grant, blob);

    rc = sd_kw_wrap(grant, key, in, blob);
    if (rc != 0 && rc != -EINVAL) {
        abort();
    }
    return 0;
}
