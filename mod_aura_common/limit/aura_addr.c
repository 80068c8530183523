/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_addr.c: a client address as the limiters see it (aura_addr.h):
 * the per-address rate limit, the connection caps, the reading budget's
 * holders and the stream caps key it with the segment's secret
 * (aura_limiter_key.c), the anonymous quota names it in Redis as text,
 * the logs and /health as a prefix.
 */
#include "limit/aura_addr.h"

#include "apr_strings.h"

#include <arpa/inet.h>
#include <string.h>
#include <netinet/in.h>

apr_size_t aura_prefix_bytes(int family, const unsigned char *addr,
                             int v4_bits, int v6_bits, unsigned char *out,
                             int *bits)
{
    static const unsigned char mapped[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
    };
    int i, width, n;

    memset(out, 0, 17);
    if (family == 6 && !memcmp(addr, mapped, sizeof(mapped))) {
        family = 4;
        addr += 12;
    }
    if (family == 6) {
        out[0] = 6;
        width = v6_bits < 0 ? 0 : v6_bits > 128 ? 128 : v6_bits;
        n = 16;
    }
    else {
        out[0] = 4;
        width = v4_bits < 0 ? 0 : v4_bits > 32 ? 32 : v4_bits;
        n = 4;
    }
    for (i = 0; i < n; i++) {
        int keep = width - 8 * i;

        out[1 + i] = keep >= 8 ? addr[i]
                     : keep <= 0 ? 0
                     : (unsigned char)(addr[i] & (0xff << (8 - keep)));
    }
    *bits = width;
    return (apr_size_t)(1 + n);
}

const char *aura_prefix_text(const unsigned char *prefix, int bits,
                             char *buf, apr_size_t len)
{
    char ip[64];
    int af;

    if (prefix[0] == 4) {
        af = AF_INET;
    }
    else if (prefix[0] == 6) {
        af = AF_INET6;
    }
    else {
        return "?";
    }
    if (inet_ntop(af, prefix + 1, ip, sizeof(ip)) == NULL) {
        return "?";
    }
    apr_snprintf(buf, len, "%s/%d", ip, bits);
    return buf;
}

apr_size_t aura_address_bytes(const apr_sockaddr_t *sa, int v6_prefix,
                              unsigned char *out)
{
    unsigned char b[AURA_ADDR_BYTES_MAX];
    apr_size_t n;
    int bits;

    if (!sa) {
        out[0] = 0;
        return 1;
    }
#if APR_HAVE_IPV6
    if (sa->family == AF_INET6) {
        n = aura_prefix_bytes(6, sa->sa.sin6.sin6_addr.s6_addr, 32,
                              v6_prefix, b, &bits);
    }
    else
#endif
    {
        n = aura_prefix_bytes(4, (const unsigned char *)&sa->sa.sin.sin_addr,
                              32, v6_prefix, b, &bits);
    }
    memcpy(out, b, n);
    return n;
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
