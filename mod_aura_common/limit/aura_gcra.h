/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_gcra.h: the Generic Cell Rate Algorithm (the token-bucket
 * equivalent the governor crate uses) as pure arithmetic on one 64-bit
 * word per key, the theoretical arrival time (TAT), so that the shared
 * table can update it with one compare-and-swap.  No httpd.h: cmocka
 * links it as it is.  Times are nanoseconds on the caller's clock.
 */
#ifndef AURA_GCRA_H
#define AURA_GCRA_H

#include "apr.h"
#include "apr_errno.h"

/** A limit: `rate` requests per `period_s` seconds, `burst` at once. */
typedef struct {
    apr_uint64_t interval;   /**< T: ns between two requests at the rate */
    apr_uint64_t tolerance;  /**< tau = T * burst: how far ahead TAT may run */
    apr_uint64_t burst;
} aura_gcra_t;

/** The outcome of one request. */
typedef struct {
    int admitted;
    apr_uint64_t tat;          /**< the TAT to store (unchanged if refused) */
    apr_uint64_t retry_after;  /**< ns until a request would be admitted */
    apr_uint64_t remaining;    /**< requests still admissible right now */
    apr_uint64_t reset;        /**< ns until the bucket is full again */
} aura_gcra_result_t;

/**
 * Set up a limit.
 * @param rate requests per period (>= 1)
 * @param period_s the period in seconds (>= 1)
 * @param burst requests admitted at once from an idle key (>= 1)
 * @return APR_SUCCESS, or APR_EINVAL when a value is out of range or the
 *         interval would round to zero (more than 1e9 requests a second)
 */
apr_status_t aura_gcra_init(aura_gcra_t *g, apr_uint64_t rate,
                            apr_uint64_t period_s, apr_uint64_t burst);

/**
 * Decide one request.
 * @param g the limit
 * @param now the clock, ns
 * @param tat the stored TAT (0 for a key never seen)
 * @param out the decision; out->tat is what to store when admitted
 *
 * A TAT further ahead than any admission can leave it (now + tolerance)
 * means the clock went backwards: it is clamped there, so a clock step
 * never locks a key out for longer than one interval, and never grants
 * more than the burst.
 */
void aura_gcra_decide(const aura_gcra_t *g, apr_uint64_t now,
                      apr_uint64_t tat, aura_gcra_result_t *out);

#endif /* AURA_GCRA_H */
