/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_layout.c: the layout fingerprint of the shared segment (see
 * aura_layout.h).
 */
#include "shm/aura_layout.h"

#include <string.h>

#define FNV_PRIME APR_UINT64_C(0x100000001b3)

static apr_uint64_t mix_bytes(apr_uint64_t h, const unsigned char *p,
                              apr_size_t n)
{
    apr_size_t i;

    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

apr_uint64_t aura_layout_mix(apr_uint64_t h, apr_uint64_t v)
{
    unsigned char b[8];
    int i;

    /* Little-endian whatever the host: the same table, the same hash. */
    for (i = 0; i < 8; i++) {
        b[i] = (unsigned char)(v >> (8 * i));
    }
    return mix_bytes(h, b, sizeof(b));
}

apr_uint64_t aura_layout_mix_str(apr_uint64_t h, const char *s)
{
    apr_size_t n = strlen(s);

    return mix_bytes(aura_layout_mix(h, n), (const unsigned char *)s, n);
}

apr_uint64_t aura_layout_fingerprint(const aura_layout_row_t *rows,
                                     apr_size_t n)
{
    apr_uint64_t h = aura_layout_mix(AURA_LAYOUT_INIT, n);
    apr_size_t i;

    for (i = 0; i < n; i++) {
        h = aura_layout_mix(h, rows[i].kind);
        h = aura_layout_mix(h, rows[i].offset);
        h = aura_layout_mix(h, rows[i].size);
    }
    return h;
}
