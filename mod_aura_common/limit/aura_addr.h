/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_addr.h: a client address as the limiters see it (aura_addr.c),
 * pure logic (APR only, no httpd.h: cmocka links it as it is).
 *
 * One host usually holds a whole IPv6 /64 (and often a /48), so an IPv6
 * address is cut to a prefix before anything counts by it; an
 * IPv4-mapped address (an IPv4 client on a dual-stack listener) is the
 * IPv4 address, so that one client is one key whichever socket it came
 * in on.
 */
#ifndef AURA_ADDR_H
#define AURA_ADDR_H

#include "apr_network_io.h"

/* Longest output of aura_address_bytes() and aura_address_hex(). */
#define AURA_ADDR_BYTES_MAX 17
#define AURA_ADDR_HEX_MAX   (2 * 16 + 2 + 1)

/**
 * An address as prefix bytes: family (4 or 6), then the address
 * cut to its leading v4_bits (IPv4, and IPv4-mapped IPv6) or v6_bits.
 * @param family 4 or 6
 * @param addr 4 or 16 bytes
 * @param out 17 bytes (zeroed beyond the address)
 * @param bits set to the width used
 * @return the number of meaningful bytes of out (5 or 17)
 */
apr_size_t aura_prefix_bytes(int family, const unsigned char *addr,
                             int v4_bits, int v6_bits, unsigned char *out,
                             int *bits);

/**
 * The text of a holder, "192.0.2.7/32" or "2001:db8:1::/48".
 * @return buf, or "?" when prefix is neither family
 */
const char *aura_prefix_text(const unsigned char *prefix, int bits,
                             char *buf, apr_size_t len);

/**
 * The client address as key bytes: family (4 or 6; 0 without an
 * address), then the address (IPv4, an IPv4-mapped IPv6 address as
 * IPv4, IPv6 cut to its leading v6_prefix bits, the rest zero).
 * @param sa the address, or NULL
 * @param v6_prefix 1..128
 * @param out AURA_ADDR_BYTES_MAX bytes
 * @return the length written
 */
apr_size_t aura_address_bytes(const apr_sockaddr_t *sa, int v6_prefix,
                              unsigned char *out);

/**
 * The same, as text that names the prefix without the bits it drops and
 * is the same on every instance: "4:" and 8 hex digits, or "6:" and the
 * hex digits of the whole bytes of the prefix (v6_prefix / 8 rounded up:
 * 16 for a /64); "-" without an address.  Used where a key must be
 * shared across instances (the anonymous quota in Redis), so it is not
 * keyed with the segment's secret.
 * @param out AURA_ADDR_HEX_MAX bytes
 * @return out
 */
char *aura_address_hex(const apr_sockaddr_t *sa, int v6_prefix, char *out);

#endif /* AURA_ADDR_H */
