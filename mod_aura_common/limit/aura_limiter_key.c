/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_limiter_key.c: the keyed hash that names an entry of a shared
 * table (a zone's address, an actor's quota, a dedicated target's
 * breaker), under the segment's secret so that a client cannot aim at a
 * slot.  Shared by both rate-limit stages and the breakers.
 */
#include "core/aura_siphash.h"
#include "limit/aura_limit.h"
#include "shm/aura_shm.h"

#define MAX_KEY AURA_LIMITER_KEY_MAX

/* Keyed hash of a stage tag, a name and some bytes; 0 when they do not
 * fit in MAX_KEY together (nothing is written then: the name may be an
 * actor's, i.e. a client's, and cutting it would merge two actors). */
apr_uint64_t aura_limiter_key(const char *tag, const char *name,
                                const unsigned char *bytes, apr_size_t n)
{
    unsigned char buf[MAX_KEY];
    apr_size_t t = strlen(tag) + 1, m = strlen(name) + 1;
    apr_uint64_t key;

    if (t > sizeof(buf) || m > sizeof(buf) - t
        || n > sizeof(buf) - t - m) {
        return 0;
    }
    memcpy(buf, tag, t);
    memcpy(buf + t, name, m);
    if (n) {
        memcpy(buf + t + m, bytes, n);
    }
    key = aura_siphash24(aura_shm_hash_key(), buf, t + m + n);
    return key ? key : 1;   /* 0 means "does not fit" only */
}
