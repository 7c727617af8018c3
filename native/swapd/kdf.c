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

#include <errno.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "kdf.h"

int sd_hkdf_sha256(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt,
                   size_t salt_len, const uint8_t *info, size_t info_len,
                   uint8_t *out, size_t out_len)
{
    char digest[] = "SHA256";
    OSSL_PARAM params[5];
    EVP_KDF *kdf;
    EVP_KDF_CTX *kctx;
    int rc = -EIO;

    /* OSSL_PARAM takes non-const pointers; nothing writes through them. */
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                                 digest, 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                                  (void *)ikm, ikm_len);
    params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                                  (void *)salt, salt_len);
    params[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
                                                  (void *)info, info_len);
    params[4] = OSSL_PARAM_construct_end();
    kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
    kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    if (kctx && EVP_KDF_derive(kctx, out, out_len, params) == 1) {
        rc = 0;
    } else {
        ERR_clear_error();
    }
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);
    return rc;
}
