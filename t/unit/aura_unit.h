/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_unit.h: what the cmocka tests share: one APR pool per test,
 * handed to the test through cmocka's state.
 */
#ifndef AURA_UNIT_H
#define AURA_UNIT_H

#include "apr_pools.h"

#include <stddef.h>

static inline int pool_setup(void **state)
{
    apr_pool_t *p = NULL;

    if (apr_pool_create(&p, NULL) != APR_SUCCESS) {
        return -1;
    }
    *state = p;
    return 0;
}

static inline int pool_teardown(void **state)
{
    apr_pool_destroy((apr_pool_t *)*state);
    *state = NULL;
    return 0;
}

/* data in unpadded base64url, in p: the tests' JWT and JWK parts. */
static inline const char *b64url(apr_pool_t *p, const void *data, size_t len)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const unsigned char *d = data;
    char *out = apr_palloc(p, len / 3 * 4 + 5);
    size_t i, o = 0;

    for (i = 0; i + 2 < len; i += 3) {
        out[o++] = alphabet[d[i] >> 2];
        out[o++] = alphabet[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        out[o++] = alphabet[((d[i + 1] & 0xf) << 2) | (d[i + 2] >> 6)];
        out[o++] = alphabet[d[i + 2] & 0x3f];
    }
    if (len - i == 1) {
        out[o++] = alphabet[d[i] >> 2];
        out[o++] = alphabet[(d[i] & 3) << 4];
    }
    else if (len - i == 2) {
        out[o++] = alphabet[d[i] >> 2];
        out[o++] = alphabet[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        out[o++] = alphabet[(d[i + 1] & 0xf) << 2];
    }
    out[o] = '\0';
    return out;
}

#endif /* AURA_UNIT_H */
