/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_gcra_table.h: the per-key GCRA table of the rate limiter, as pure
 * logic on a caller-supplied array (the shared segment in httpd, plain
 * memory in the unit tests).
 *
 * The table is set-associative: a key's keyed hash picks one set of
 * AURA_LIMITER_WAYS slots, and the key may live in any slot of that
 * set.  Memory is fixed at sets * ways * 16 bytes whatever the traffic:
 * an attacker cycling source addresses cannot grow it, and because a
 * slot is only ever taken over when its key is at full credit (its TAT
 * is in the past, so it carries no state worth keeping), cycling cannot
 * reset a limited client either.  When a set has no free slot and no
 * slot at full credit, the request is admitted without state
 * (AURA_LIMIT_FULL): fail-open, which the caller counts and logs.
 *
 * Lock-free: a slot is (key, tat), each word updated by compare-and-swap.
 * Taking a slot over swaps its key only; the TAT left there is in the
 * past, which is exactly a new key's state.  The one imprecision is a
 * race between a take-over and a request of the evicted key in flight:
 * that request's interval may be charged to the new key, once.
 */
#ifndef AURA_LIMITER_H
#define AURA_LIMITER_H

#include "limit/aura_gcra.h"

#define AURA_LIMITER_WAYS 8

typedef struct {
    volatile apr_uint64_t key;   /* keyed hash of the key; 0: never used */
    volatile apr_uint64_t tat;   /* GCRA theoretical arrival time, ns */
} aura_limiter_slot_t;

typedef enum {
    AURA_LIMIT_ADMITTED = 0,
    AURA_LIMIT_REFUSED,
    AURA_LIMIT_FULL              /* no slot: admitted, stateless */
} aura_limit_e;

/**
 * Number of sets for at least entries slots: a power of two, >= 1.
 */
apr_uint64_t aura_limiter_sets(apr_uint64_t entries);

/**
 * Decide one request of key.
 * @param slots sets * AURA_LIMITER_WAYS slots, zero-filled at creation
 * @param sets a power of two (aura_limiter_sets())
 * @param key the key's keyed hash (0 is remapped: it marks free slots)
 * @param g the limit
 * @param now the clock in ns (monotonic, shared by all callers)
 * @param out the GCRA decision (admitted with remaining = 0 for FULL)
 */
aura_limit_e aura_limiter_take(aura_limiter_slot_t *slots,
                               apr_uint64_t sets, apr_uint64_t key,
                               const aura_gcra_t *g, apr_uint64_t now,
                               aura_gcra_result_t *out);

/** What a walk of a table found (aura_limiter_validate()). */
typedef struct {
    apr_uint64_t used;        /**< slots holding a key */
    apr_uint64_t limited;     /**< of which not at full credit (TAT ahead) */
    apr_uint64_t misplaced;   /**< keys in a set their hash does not pick */
    apr_uint64_t duplicates;  /**< a key held twice in its set */
} aura_limiter_census_t;

/**
 * Walk a whole table and check what aura_limiter_take() guarantees:
 * each key sits in the set its hash picks.  A key held twice in its set
 * is counted, not an error: two requests of one new key may each claim
 * a slot at the same instant (the second copy goes idle and is taken
 * over like any slot at full credit).  Reads with atomic loads, takes no
 * lock: under traffic the census is a snapshot, never a torn word.
 * @param slots the table
 * @param sets its number of sets
 * @param now the clock in ns (to tell limited keys from idle ones)
 * @param out the census
 * @return APR_SUCCESS; APR_EINVAL when sets is not a power of two;
 *         APR_EGENERAL when a key is misplaced (the table is corrupt)
 */
apr_status_t aura_limiter_validate(aura_limiter_slot_t *slots,
                                   apr_uint64_t sets, apr_uint64_t now,
                                   aura_limiter_census_t *out);

/**
 * The census of any table laid out like the limiter's (sets of
 * AURA_LIMITER_WAYS fixed-size slots whose 64-bit key picks the set),
 * as aura_limiter_validate() describes it; a slot is "limited" while
 * its 64-bit word at until_off is past now.  The actor fallback's table
 * (aura_quota_share.h) is walked by it too.
 */
apr_status_t aura_table_census(const void *slots, apr_size_t slot_size,
                               apr_size_t key_off, apr_size_t until_off,
                               apr_uint64_t sets, apr_uint64_t now,
                               aura_limiter_census_t *out);

#endif /* AURA_LIMITER_H */
