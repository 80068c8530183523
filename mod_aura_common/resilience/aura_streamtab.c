/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_streamtab.c: the records of the open streams (see
 * aura_streamtab.h for the admission protocol and why it never exceeds
 * a cap).  Every change of an owner word is a compare-and-swap (lock
 * cmpxchg: a full barrier on this platform, valid across processes);
 * the other words of a record are written only by the thread that
 * holds it as CLAIMING, before it publishes it.
 */
#include "resilience/aura_streamtab.h"

#include "apr_atomic.h"

#include <string.h>

static int published(const aura_stream_rec_t *r, apr_uint64_t *owner)
{
    *owner = apr_atomic_read64((volatile apr_uint64_t *)&r->owner);
    return *owner && !(*owner & AURA_STREAM_CLAIMING);
}

apr_uint64_t aura_stream_count(const aura_stream_rec_t *recs,
                               apr_uint64_t n, apr_uint64_t addr,
                               apr_uint64_t actor)
{
    apr_uint64_t i, c = 0, owner;

    for (i = 0; i < n; i++) {
        if (!published(&recs[i], &owner)) {
            continue;
        }
        if (addr ? recs[i].addr == addr : recs[i].actor == actor) {
            c++;
        }
    }
    return c;
}

aura_stream_e aura_stream_claim(aura_stream_rec_t *recs, apr_uint64_t n,
                                apr_uint64_t owner, apr_uint64_t addr,
                                apr_uint64_t actor, apr_uint64_t what,
                                const char *prefix, apr_uint64_t addr_cap,
                                apr_uint64_t actor_cap, apr_uint64_t *idx,
                                apr_uint64_t *count)
{
    apr_uint64_t i, claiming = owner | AURA_STREAM_CLAIMING, c;
    aura_stream_rec_t *r = NULL;
    size_t len;

    *count = 0;
    for (i = 0; i < n; i++) {
        if (!apr_atomic_read64(&recs[i].owner)
            && apr_atomic_cas64(&recs[i].owner, claiming, 0) == 0) {
            r = &recs[i];
            break;
        }
    }
    if (!r) {
        return AURA_STREAM_TABLE_FULL;
    }
    r->addr = addr;
    r->actor = actor;
    r->what = what;
    len = strlen(prefix);
    if (len >= sizeof(r->prefix)) {
        len = sizeof(r->prefix) - 1;
    }
    memcpy(r->prefix, prefix, len);
    r->prefix[len] = '\0';
    /* Published before counting: see aura_streamtab.h. */
    apr_atomic_cas64(&r->owner, owner, claiming);
    c = aura_stream_count(recs, n, addr, 0);
    *count = c;
    if (addr_cap && c > addr_cap) {
        aura_stream_release(recs, i, owner);
        return AURA_STREAM_OVER_ADDRESS;
    }
    if (actor && actor_cap) {
        apr_uint64_t a = aura_stream_count(recs, n, 0, actor);

        if (a > actor_cap) {
            *count = a;
            aura_stream_release(recs, i, owner);
            return AURA_STREAM_OVER_ACTOR;
        }
    }
    *idx = i;
    return AURA_STREAM_ADMITTED;
}

int aura_stream_release(aura_stream_rec_t *recs, apr_uint64_t idx,
                        apr_uint64_t owner)
{
    return apr_atomic_cas64(&recs[idx].owner, 0, owner) == owner;
}

apr_uint64_t aura_stream_reclaim(aura_stream_rec_t *recs, apr_uint64_t n,
                                 apr_uint64_t owner)
{
    apr_uint64_t i, freed = 0;

    for (i = 0; i < n; i++) {
        apr_uint64_t o = apr_atomic_read64(&recs[i].owner);

        if ((o & ~AURA_STREAM_CLAIMING) == owner && o
            && apr_atomic_cas64(&recs[i].owner, 0, o) == o) {
            freed++;
        }
    }
    return freed;
}
