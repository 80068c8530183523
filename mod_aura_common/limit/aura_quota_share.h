/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_quota_share.h: the actor quota's local record, per instance, as pure
 * logic on a caller-supplied array (the shared segment in httpd, plain
 * memory in the unit tests).
 *
 * Why a record and not a token bucket: while Redis answers, the record
 * keeps, per actor, the last count Redis gave for its current window.
 * When Redis goes away, the instance goes on counting in the same
 * window from there instead of from a full bucket: its budget for the
 * rest of that window is (limit - seen) / instances, where seen is the
 * count Redis last gave it (0 for a window Redis never counted, which
 * makes the budget limit / instances, the instance's share).  The
 * requests it admits locally are kept as "unreported"; the first call
 * to Redis afterwards hands them over (the script adds them to the
 * window's count, see aura_quota_script.h), so Redis's count does not
 * ignore what was admitted during the outage.
 *
 * Windows are numbered as the script numbers them: floor(ms since the
 * epoch / window ms), on the gateway's clock here and on Redis's there,
 * which NTP keeps within milliseconds of each other.  A record keeps
 * one window of each kind (32 low bits of its number: equality is all
 * that is compared); an older one reads as 0.
 *
 * The table is set-associative like aura_gcra_table.h (a key's keyed hash
 * picks a set of AURA_LIMITER_WAYS records).  Every actor decided by
 * Redis has a record, so the table is also a cache: a record is taken
 * over once its state has lapsed (two windows after its last update),
 * else, the oldest first, one that holds only Redis's count (no local
 * admissions: a hint, cheap to lose).  A record with local admissions
 * still live is never taken over; when a set has only such records the
 * caller admits without state.
 *
 * Lock-free: each word changes by compare-and-swap.  The "seen" and
 * "local" words are read separately, so a decision racing with a Redis
 * answer may use the older count: it admits at most one request too
 * many, and only at the instant Redis dies or returns.
 */
#ifndef AURA_FALLBACK_H
#define AURA_FALLBACK_H

#include "limit/aura_gcra_table.h"

typedef struct {
    volatile apr_uint64_t key;    /* keyed hash of actor and quota; 0: free */
    volatile apr_uint64_t until;  /* ns: the state lapses then (evictable) */
    volatile apr_uint64_t seen;   /* window (32) | Redis's count (32) */
    volatile apr_uint64_t local;  /* window (32) | claimed (1) | count (31) */
} aura_fallback_slot_t;

/* Counts saturate here: a quota is at most 10^9 (AuraActorQuota). */
#define AURA_FALLBACK_COUNT_MAX APR_UINT64_C(0x7fffffff)

/** One local decision (aura_fallback_take()). */
typedef struct {
    int admitted;
    apr_int64_t budget;   /**< what the instance may admit in the window */
    apr_int64_t used;     /**< of which admitted (this one included) */
} aura_fallback_result_t;

/**
 * What an instance may admit locally in a window.
 * @param limit the quota (>= 1)
 * @param instances AuraInstances (>= 1)
 * @param seen Redis's last count for this window, 0 when none
 * @return floor((limit - seen) / instances), not below 0; when nothing
 *         was seen, limit / instances and at least 1 (the share)
 */
apr_int64_t aura_fallback_budget(apr_int64_t limit, apr_int64_t instances,
                                 apr_int64_t seen);

/**
 * The record of key, found or taken over, and kept for keep_ns more.
 * @param slots sets * AURA_LIMITER_WAYS records, zero-filled at creation
 * @param sets a power of two
 * @param key the keyed hash (0 is remapped: it marks free records)
 * @param now monotonic clock, ns
 * @param keep_ns how long its state matters (two windows)
 * @return the record; NULL when every record of the set holds local
 *         admissions still live (the caller admits without state)
 */
aura_fallback_slot_t *aura_fallback_slot(aura_fallback_slot_t *slots,
                                         apr_uint64_t sets, apr_uint64_t key,
                                         apr_uint64_t now,
                                         apr_uint64_t keep_ns);

/**
 * Remember Redis's count for a window: a later window replaces an
 * earlier one, a higher count a lower one (answers may arrive out of
 * order across threads); a window older than the recorded one is
 * ignored.  Local admissions of a window before the previous one are
 * dropped: they can no longer be handed over.
 */
void aura_fallback_seen(aura_fallback_slot_t *s, apr_uint64_t window,
                        apr_int64_t count);

/** Redis's last count for window, 0 when the record is of another. */
apr_int64_t aura_fallback_seen_count(aura_fallback_slot_t *s,
                                     apr_uint64_t window);

/**
 * Decide one request locally in window: admitted iff the requests this
 * instance admitted locally in the window stay within
 * aura_fallback_budget(limit, instances, seen).  Counted when admitted.
 */
void aura_fallback_take(aura_fallback_slot_t *s, apr_int64_t limit,
                        apr_int64_t instances, apr_uint64_t window,
                        aura_fallback_result_t *out);

/**
 * Claim the unreported local admissions for a hand-over to Redis: those
 * of window or of the window before (the script adds them to the one of
 * its two windows they belong to).  At most one caller holds a claim.
 * @param s the record
 * @param window the current window
 * @param claimed_window set to the window the count belongs to
 * @return the count claimed (0: nothing to report, or claimed already)
 */
apr_int64_t aura_fallback_claim(aura_fallback_slot_t *s, apr_uint64_t window,
                                apr_uint64_t *claimed_window);

/**
 * End a claim: when Redis counted the claimed requests (reported), they
 * are no longer unreported; otherwise they stay, for the next call.
 * Requests admitted locally since the claim stay unreported either way.
 */
void aura_fallback_settle(aura_fallback_slot_t *s, apr_uint64_t window,
                          apr_int64_t count, int reported);

/**
 * Walk a whole table: keys in the set their hash picks (as
 * aura_limiter_validate(); limited = records whose state is live).
 */
apr_status_t aura_fallback_validate(aura_fallback_slot_t *slots,
                                    apr_uint64_t sets, apr_uint64_t now,
                                    aura_limiter_census_t *out);

#endif /* AURA_FALLBACK_H */
