/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_siphash.c: SipHash-2-4, written from the paper's description
 * (2 compression rounds per 8-byte word, 4 finalization rounds).  Words
 * are read little-endian at any alignment, so the result is the same on
 * every architecture.
 */
#include "core/aura_siphash.h"

#include <string.h>

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

/* One SipRound on the four state words, kept in locals (registers):
 * through a struct pointer and a call per round, a short input cost
 * three times the instructions. */
#define SIPROUND(v0, v1, v2, v3)                                     \
    do {                                                             \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);    \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                       \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                       \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);    \
    } while (0)

/* A little-endian word at any alignment: memcpy compiles to one load. */
static APR_INLINE apr_uint64_t load_le64(const unsigned char *p)
{
    apr_uint64_t v;

    memcpy(&v, p, sizeof(v));
#if APR_IS_BIGENDIAN
    v = __builtin_bswap64(v);
#endif
    return v;
}

apr_uint64_t aura_siphash24(const unsigned char key[AURA_SIPHASH_KEY_LEN],
                            const void *data, apr_size_t len)
{
    const unsigned char *in = data;
    apr_uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    apr_uint64_t last = (apr_uint64_t)(len & 0xff) << 56;
    apr_uint64_t v0 = k0 ^ APR_UINT64_C(0x736f6d6570736575);
    apr_uint64_t v1 = k1 ^ APR_UINT64_C(0x646f72616e646f6d);
    apr_uint64_t v2 = k0 ^ APR_UINT64_C(0x6c7967656e657261);
    apr_uint64_t v3 = k1 ^ APR_UINT64_C(0x7465646279746573);
    apr_size_t i, tail = len & 7;

    for (i = 0; i + 8 <= len; i += 8) {
        apr_uint64_t m = load_le64(in + i);

        v3 ^= m;
        SIPROUND(v0, v1, v2, v3);
        SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    /* The final word: the tail bytes, and the length in the top byte. */
    while (tail--) {
        last |= (apr_uint64_t)in[i + tail] << (8 * tail);
    }
    v3 ^= last;
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}
