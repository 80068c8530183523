/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_gcra_table.c: the set-associative GCRA table (see aura_gcra_table.h).
 */
#include "limit/aura_gcra_table.h"

#include "apr_atomic.h"

#include <stddef.h>
#include <string.h>

apr_uint64_t aura_limiter_sets(apr_uint64_t entries)
{
    apr_uint64_t sets = 1;

    while (sets * AURA_LIMITER_WAYS < entries) {
        sets <<= 1;
    }
    return sets;
}

static aura_limiter_slot_t *find(aura_limiter_slot_t *set, apr_uint64_t key)
{
    int i;

    for (i = 0; i < AURA_LIMITER_WAYS; i++) {
        if (apr_atomic_read64(&set[i].key) == key) {
            return &set[i];
        }
    }
    return NULL;
}

/* A slot for a key not in the set: the first never-used one, else the
 * one idle longest among those at full credit.  NULL when every slot
 * holds state (the set is full) or another request took the slot we
 * chose (the caller looks again). */
static aura_limiter_slot_t *claim(aura_limiter_slot_t *set,
                                  apr_uint64_t key, apr_uint64_t now,
                                  int *full)
{
    aura_limiter_slot_t *victim = NULL;
    apr_uint64_t victim_tat = 0, old;
    int i;

    *full = 0;
    for (i = 0; i < AURA_LIMITER_WAYS; i++) {
        apr_uint64_t k = apr_atomic_read64(&set[i].key);
        apr_uint64_t tat = apr_atomic_read64(&set[i].tat);

        if (!k) {
            victim = &set[i];
            break;
        }
        if (tat <= now && (!victim || tat < victim_tat)) {
            victim = &set[i];
            victim_tat = tat;
        }
    }
    if (!victim) {
        *full = 1;
        return NULL;
    }
    old = apr_atomic_read64(&victim->key);
    if (old == key) {
        return victim;
    }
    if ((!old || apr_atomic_read64(&victim->tat) <= now)
        && apr_atomic_cas64(&victim->key, key, old) == old) {
        return victim;
    }
    return NULL;
}

aura_limit_e aura_limiter_take(aura_limiter_slot_t *slots,
                               apr_uint64_t sets, apr_uint64_t key,
                               const aura_gcra_t *g, apr_uint64_t now,
                               aura_gcra_result_t *out)
{
    aura_limiter_slot_t *set, *slot;
    int full, tries;

    key = key ? key : 1;
    set = slots + (key & (sets - 1)) * AURA_LIMITER_WAYS;
    /* A few rounds settle any race for a slot; losing all of them means
     * the set is being churned, which is the same as full. */
    for (tries = 0, slot = NULL; !slot && tries < 4; tries++) {
        slot = find(set, key);
        if (!slot) {
            slot = claim(set, key, now, &full);
            if (full) {
                break;
            }
        }
    }
    if (!slot) {
        out->admitted = 1;
        out->tat = 0;
        out->retry_after = 0;
        out->remaining = 0;
        out->reset = 0;
        return AURA_LIMIT_FULL;
    }
    for (;;) {
        apr_uint64_t tat = apr_atomic_read64(&slot->tat);

        aura_gcra_decide(g, now, tat, out);
        if (!out->admitted) {
            return AURA_LIMIT_REFUSED;
        }
        if (apr_atomic_cas64(&slot->tat, out->tat, tat) == tat) {
            return AURA_LIMIT_ADMITTED;
        }
    }
}

apr_status_t aura_table_census(const void *slots, apr_size_t slot_size,
                               apr_size_t key_off, apr_size_t until_off,
                               apr_uint64_t sets, apr_uint64_t now,
                               aura_limiter_census_t *out)
{
    const char *base = slots;
    apr_uint64_t s;
    int i, j;

#define WORD(w, off) ((volatile apr_uint64_t *)(void *)((char *)(w) + (off)))
#define SLOT(s, i) (base + ((s) * AURA_LIMITER_WAYS + (i)) * slot_size)
    memset(out, 0, sizeof(*out));
    if (!sets || (sets & (sets - 1))) {
        return APR_EINVAL;
    }
    for (s = 0; s < sets; s++) {
        for (i = 0; i < AURA_LIMITER_WAYS; i++) {
            apr_uint64_t k = apr_atomic_read64(WORD(SLOT(s, i), key_off));

            if (!k) {
                continue;
            }
            out->used++;
            if (apr_atomic_read64(WORD(SLOT(s, i), until_off)) > now) {
                out->limited++;
            }
            if ((k & (sets - 1)) != s) {
                out->misplaced++;
            }
            for (j = 0; j < i; j++) {
                if (apr_atomic_read64(WORD(SLOT(s, j), key_off)) == k) {
                    out->duplicates++;
                    break;
                }
            }
        }
    }
#undef SLOT
#undef WORD
    return out->misplaced ? APR_EGENERAL : APR_SUCCESS;
}

apr_status_t aura_limiter_validate(aura_limiter_slot_t *slots,
                                   apr_uint64_t sets, apr_uint64_t now,
                                   aura_limiter_census_t *out)
{
    return aura_table_census(slots, sizeof(*slots),
                             offsetof(aura_limiter_slot_t, key),
                             offsetof(aura_limiter_slot_t, tat),
                             sets, now, out);
}
