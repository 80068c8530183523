/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_gcra.c: GCRA arithmetic (see aura_gcra.h).  Integer nanoseconds,
 * no floats; every product is checked against overflow at init, so
 * decide() can add and compare freely: tolerance + interval stays far
 * below 2^63 and TATs are clock readings plus at most that.
 */
#include "limit/aura_gcra.h"

#define NS_PER_S APR_UINT64_C(1000000000)
/* A day of tolerance at most: more is a configuration mistake, and the
 * bound keeps every sum below 2^63 for centuries of clock values. */
#define MAX_TOLERANCE (NS_PER_S * 86400)

apr_status_t aura_gcra_init(aura_gcra_t *g, apr_uint64_t rate,
                            apr_uint64_t period_s, apr_uint64_t burst)
{
    apr_uint64_t interval;

    if (!rate || !period_s || !burst || period_s > 86400) {
        return APR_EINVAL;
    }
    interval = period_s * NS_PER_S / rate;
    if (!interval || burst > MAX_TOLERANCE / interval) {
        return APR_EINVAL;
    }
    g->interval = interval;
    g->tolerance = interval * burst;
    g->burst = burst;
    return APR_SUCCESS;
}

void aura_gcra_decide(const aura_gcra_t *g, apr_uint64_t now,
                      apr_uint64_t tat, aura_gcra_result_t *out)
{
    apr_uint64_t next, ahead;

    /* The clock went backwards (or the TAT is corrupt): clamp. */
    if (tat > now + g->tolerance) {
        tat = now + g->tolerance;
    }
    next = (tat > now ? tat : now) + g->interval;
    ahead = next - now;                 /* > 0: interval >= 1 */
    if (ahead > g->tolerance) {
        out->admitted = 0;
        out->tat = tat;
        out->retry_after = ahead - g->tolerance;
        out->remaining = 0;
        out->reset = tat > now ? tat - now : 0;
        return;
    }
    out->admitted = 1;
    out->tat = next;
    out->retry_after = 0;
    out->remaining = (g->tolerance - ahead) / g->interval;
    out->reset = ahead;
}
