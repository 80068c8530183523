/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_siphash.c: SipHash-2-4, written from the paper's description
 * (2 compression rounds per 8-byte word, 4 finalization rounds).  Bytes
 * are read little-endian one at a time, so the result is the same on
 * every architecture and alignment does not matter.
 */
#include "aura_siphash.h"

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static apr_uint64_t load_le64(const unsigned char *p)
{
    apr_uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

typedef struct {
    apr_uint64_t v0, v1, v2, v3;
} sip_state_t;

static void sip_round(sip_state_t *s)
{
    s->v0 += s->v1;
    s->v1 = ROTL(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = ROTL(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = ROTL(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = ROTL(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = ROTL(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = ROTL(s->v2, 32);
}

static void sip_absorb(sip_state_t *s, apr_uint64_t m)
{
    s->v3 ^= m;
    sip_round(s);
    sip_round(s);
    s->v0 ^= m;
}

apr_uint64_t aura_siphash24(const unsigned char key[AURA_SIPHASH_KEY_LEN],
                            const void *data, apr_size_t len)
{
    const unsigned char *in = data;
    apr_uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    apr_uint64_t last = (apr_uint64_t)(len & 0xff) << 56;
    sip_state_t s;
    apr_size_t i, tail = len & 7;

    s.v0 = k0 ^ APR_UINT64_C(0x736f6d6570736575);
    s.v1 = k1 ^ APR_UINT64_C(0x646f72616e646f6d);
    s.v2 = k0 ^ APR_UINT64_C(0x6c7967656e657261);
    s.v3 = k1 ^ APR_UINT64_C(0x7465646279746573);
    for (i = 0; i + 8 <= len; i += 8) {
        sip_absorb(&s, load_le64(in + i));
    }
    /* The final word: the tail bytes, and the length in the top byte. */
    while (tail--) {
        last |= (apr_uint64_t)in[i + tail] << (8 * tail);
    }
    sip_absorb(&s, last);
    s.v2 ^= 0xff;
    sip_round(&s);
    sip_round(&s);
    sip_round(&s);
    sip_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
