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

#endif
