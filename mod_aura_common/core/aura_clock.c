/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_clock.c: the monotonic clock every table of the shared segment
 * counts in (limiters, breakers, the connection table), and the rounding
 * their answers need.  Pure: it calls nothing of mod_aura_common.
 */
#include "core/aura_clock.h"

#include "apr_atomic.h"
#include "apr_time.h"

#include <time.h>

#define NS_PER_S  APR_UINT64_C(1000000000)

/* CLOCK_MONOTONIC is one clock for every process of the machine, and
 * does not jump when the wall clock is set. */
apr_uint64_t aura_clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (apr_uint64_t)ts.tv_sec * NS_PER_S + (apr_uint64_t)ts.tv_nsec;
}

apr_uint64_t aura_ceil_div(apr_uint64_t a, apr_uint64_t b)
{
    return (a + b - 1) / b;
}

int aura_log_due(volatile apr_uint64_t *last, apr_uint64_t interval_s)
{
    apr_uint64_t now = (apr_uint64_t)apr_time_sec(apr_time_now());
    apr_uint64_t was = apr_atomic_read64(last);

    return (!was || now - was >= interval_s)
           && apr_atomic_cas64(last, now, was) == was;
}
