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

/* Endpoints "scheme://host:port": which transport, where. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "endpoint.h"
#include "transport.h"

static int host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

int sd_endpoint_parse(const char *endpoint, const struct sd_transport **t,
                      char *host, size_t hostlen, uint16_t *port)
{
    static const struct sd_transport *const transports[] = {
        &sd_tcp_transport, &sd_fabric_transport,
    };
    const char *sep, *h, *colon, *p;
    size_t i, scheme_len, host_len;
    unsigned long v = 0;

    sep = strstr(endpoint, "://");
    if (!sep || sep == endpoint) {
        return -EINVAL;
    }
    scheme_len = (size_t)(sep - endpoint);
    *t = NULL;
    for (i = 0; i < sizeof(transports) / sizeof(transports[0]); i++) {
        if (strlen(transports[i]->scheme) == scheme_len &&
            memcmp(transports[i]->scheme, endpoint, scheme_len) == 0) {
            *t = transports[i];
        }
    }
    if (!*t) {
        return -EPROTONOSUPPORT;
    }

    /* IPv4 addresses and host names: the port follows the last colon. */
    h = sep + 3;
    colon = strrchr(h, ':');
    if (!colon || colon == h) {
        return -EINVAL;
    }
    host_len = (size_t)(colon - h);
    if (host_len >= hostlen) {
        return -EINVAL;
    }
    for (p = h; p < colon; p++) {
        if (!host_char(*p)) {
            return -EINVAL;
        }
    }
    p = colon + 1;
    if (*p == '\0' || strlen(p) > 5) {
        return -EINVAL;
    }
    for (; *p; p++) {
        if (*p < '0' || *p > '9') {
            return -EINVAL;
        }
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v == 0 || v > 65535) {
        return -EINVAL;
    }
    memcpy(host, h, host_len);
    host[host_len] = '\0';
    *port = (uint16_t)v;
    return 0;
}

int sd_endpoint_wildcard(const char *host)
{
    return !host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ||
           strcmp(host, "[::]") == 0;
}

int sd_endpoint_resolve(const char *host, uint16_t port, int passive,
                        struct addrinfo **res, char *err, size_t errlen)
{
    struct addrinfo hints = {
        .ai_family = AF_INET,
        .ai_socktype = SOCK_STREAM,
        .ai_flags = passive ? AI_PASSIVE : 0,
    };
    char service[8];
    int rc;

    snprintf(service, sizeof(service), "%u", port);
    rc = getaddrinfo(host, service, &hints, res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host,
                 gai_strerror(rc));
        return rc == EAI_MEMORY ? -ENOMEM : -EHOSTUNREACH;
    }
    return 0;
}
