/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_conntable.c: the per-address connection counts and the journals
 * of the children (see aura_conntable.h).  Lock-free: every change is a
 * compare-and-swap of one 64-bit word.
 */
#include "limit/aura_conntable.h"

#include "apr_atomic.h"

#define TAG_OF(w)   ((w) >> AURA_CONN_COUNT_BITS)
#define COUNT_OF(w) ((w) & AURA_CONN_COUNT_MASK)

apr_uint64_t aura_conn_sets(apr_uint64_t entries)
{
    apr_uint64_t sets = 1;

    while (sets * AURA_CONN_WAYS < entries) {
        sets <<= 1;
    }
    return sets;
}

/* One attempt: find tag in the set and count in (or refuse), else take
 * a free slot.  APR_EAGAIN when a compare-and-swap lost a race (the
 * caller tries again), APR_ENOSPC when every slot holds a count. */
static apr_status_t try_enter(aura_conn_slot_t *set, apr_uint64_t tag,
                              apr_uint64_t cap, int *i_out,
                              apr_uint64_t *count, int *refused)
{
    int i, free_i = -1, rank = 0;

    *refused = 0;
    for (i = 0; i < AURA_CONN_WAYS; i++) {
        apr_uint64_t w = apr_atomic_read64(&set[i].word);

        if (COUNT_OF(w) && TAG_OF(w) == tag) {
            *i_out = i;
            if (COUNT_OF(w) >= cap || COUNT_OF(w) == AURA_CONN_COUNT_MASK) {
                *count = COUNT_OF(w);
                *refused = 1;
                return APR_SUCCESS;
            }
            if (apr_atomic_cas64(&set[i].word, w + 1, w) != w) {
                return APR_EAGAIN;
            }
            *count = COUNT_OF(w) + 1;
            return APR_SUCCESS;
        }
        /* A free slot: the one this tag emptied (its log stamp is
         * still there) before one never used, before one another tag
         * emptied (its owner may come back to it). */
        if (!COUNT_OF(w)) {
            int r = TAG_OF(w) == tag ? 3 : w == 0 ? 2 : 1;

            if (r > rank) {
                rank = r;
                free_i = i;
            }
        }
    }
    if (free_i < 0) {
        return APR_ENOSPC;
    }
    {
        apr_uint64_t w = apr_atomic_read64(&set[free_i].word);

        /* Taken meanwhile (by this tag or another): look again, so that
         * one tag never ends up counted in two slots. */
        if (COUNT_OF(w)
            || apr_atomic_cas64(&set[free_i].word,
                                (tag << AURA_CONN_COUNT_BITS) | 1, w) != w) {
            return APR_EAGAIN;
        }
        /* A new address: its first refusal is logged, whatever the
         * slot's last holder was told.  The same address back in the
         * slot it emptied (its tag stays in an empty word) keeps its
         * stamp: going empty and full again is no reason to log more
         * than once a minute. */
        if (TAG_OF(w) != tag) {
            apr_atomic_set64(&set[free_i].logged, 0);
        }
    }
    *i_out = free_i;
    *count = 1;
    return APR_SUCCESS;
}

aura_conn_e aura_conn_enter(aura_conn_slot_t *slots, apr_uint64_t sets,
                            apr_uint64_t hash, apr_uint64_t cap,
                            apr_uint64_t *slot, apr_uint64_t *count)
{
    apr_uint64_t base = (hash & (sets - 1)) * AURA_CONN_WAYS;
    apr_uint64_t tag = TAG_OF(hash);
    apr_status_t rv = APR_EAGAIN;
    int i = 0, refused = 0, tries;

    /* Each lost race means another connection changed the set: a few
     * rounds settle it; losing them all is treated as a full set. */
    for (tries = 0; rv == APR_EAGAIN && tries < 16; tries++) {
        rv = try_enter(slots + base, tag, cap ? cap : 1, &i, count,
                       &refused);
    }
    if (rv != APR_SUCCESS) {
        *count = 0;
        return AURA_CONN_FULL;
    }
    *slot = base + (apr_uint64_t)i;
    return refused ? AURA_CONN_REFUSED : AURA_CONN_ADMITTED;
}

apr_uint64_t aura_conn_leave(aura_conn_slot_t *slots, apr_uint64_t slot)
{
    for (;;) {
        apr_uint64_t w = apr_atomic_read64(&slots[slot].word);

        if (!COUNT_OF(w)) {
            return 0;
        }
        if (apr_atomic_cas64(&slots[slot].word, w - 1, w) == w) {
            return COUNT_OF(w) - 1;
        }
    }
}

apr_status_t aura_conn_journal_claim(aura_conn_journal_t *j,
                                     apr_uint64_t owner)
{
    return apr_atomic_cas64(&j->owner, owner, 0) == 0 ? APR_SUCCESS
                                                      : APR_EBUSY;
}

apr_status_t aura_conn_reclaim(aura_conn_journal_t *j,
                               apr_uint32_t records, apr_uint64_t owner,
                               aura_conn_slot_t *slots, apr_uint64_t nslots,
                               apr_uint64_t *n)
{
    volatile apr_uint32_t *rec = AURA_CONN_RECORDS(j);
    apr_uint32_t i;

    *n = 0;
    if (!owner || owner == AURA_CONN_RECLAIMING
        || apr_atomic_cas64(&j->owner, AURA_CONN_RECLAIMING, owner)
           != owner) {
        return APR_EBUSY;
    }
    for (i = 0; i < records; i++) {
        apr_uint32_t r = rec[i];

        if (r && r <= nslots) {
            aura_conn_leave(slots, r - 1);
            ++*n;
        }
        rec[i] = 0;
    }
    apr_atomic_add64(&j->reclaimed, *n);
    apr_atomic_set64(&j->owner, 0);
    return APR_SUCCESS;
}

void aura_conn_census(aura_conn_slot_t *slots, apr_uint64_t sets,
                      aura_conn_census_t *out)
{
    apr_uint64_t i;

    out->used = out->connections = out->largest = 0;
    for (i = 0; i < sets * AURA_CONN_WAYS; i++) {
        apr_uint64_t c = COUNT_OF(apr_atomic_read64(&slots[i].word));

        if (c) {
            out->used++;
            out->connections += c;
            if (c > out->largest) {
                out->largest = c;
            }
        }
    }
}
