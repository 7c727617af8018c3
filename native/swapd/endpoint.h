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
 * Resolving an endpoint's host and port, for both transports (the parser,
 * sd_endpoint_parse, is in transport.h).
 */
#ifndef MEMAGG_SWAPD_ENDPOINT_H
#define MEMAGG_SWAPD_ENDPOINT_H

#include <netdb.h>
#include <stddef.h>
#include <stdint.h>

/* The IPv4 stream addresses of host:port (passive: to listen on) into
 * *res, for freeaddrinfo; 0, or -EHOSTUNREACH (-ENOMEM when out of
 * memory) with the reason in err. */
int sd_endpoint_resolve(const char *host, uint16_t port, int passive,
                        struct addrinfo **res, char *err, size_t errlen);

/* 1 when host (NULL too) names every interface: 0.0.0.0, :: or [::]. */
int sd_endpoint_wildcard(const char *host);

#endif
