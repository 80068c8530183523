/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_addr.c: a client address as the limiters see it (aura_addr.h):
 * the per-address rate limit and connection caps key it with the
 * segment's secret (aura_limiter_key.c), the anonymous quota names it in
 * Redis as text.
 */
#include "limit/aura_addr.h"

#include <string.h>
#include <netinet/in.h>

apr_size_t aura_address_bytes(const apr_sockaddr_t *sa, int v6_prefix,
                              unsigned char *out)
{
    if (!sa) {
        out[0] = 0;
        return 1;
    }
#if APR_HAVE_IPV6
    if (sa->family == AF_INET6) {
        const unsigned char *a = sa->sa.sin6.sin6_addr.s6_addr;
        int i;

        if (IN6_IS_ADDR_V4MAPPED(&sa->sa.sin6.sin6_addr)) {
            out[0] = 4;
            memcpy(out + 1, a + 12, 4);
            return 5;
        }
        out[0] = 6;
        for (i = 0; i < 16; i++) {
            int keep = v6_prefix - 8 * i;

            out[1 + i] = keep >= 8 ? a[i]
                         : keep <= 0 ? 0
                         : (unsigned char)(a[i] & (0xff << (8 - keep)));
        }
        return 17;
    }
#endif
    out[0] = 4;
    memcpy(out + 1, &sa->sa.sin.sin_addr, 4);
    return 5;
}

char *aura_address_hex(const apr_sockaddr_t *sa, int v6_prefix, char *out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[AURA_ADDR_BYTES_MAX];
    apr_size_t n = aura_address_bytes(sa, v6_prefix, b), i, used;
    char *o = out;

    if (b[0] == 0) {
        return strcpy(out, "-");
    }
    /* The bytes the prefix reaches into: the zeroed rest says nothing,
     * and leaving it out keeps keys short. */
    used = b[0] == 4 ? 4 : (apr_size_t)(v6_prefix + 7) / 8;
    if (used > n - 1) {
        used = n - 1;
    }
    *o++ = (char)('0' + b[0]);
    *o++ = ':';
    for (i = 1; i <= used; i++) {
        *o++ = hex[b[i] >> 4];
        *o++ = hex[b[i] & 0xf];
    }
    *o = '\0';
    return out;
}
