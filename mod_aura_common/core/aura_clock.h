/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_clock.h: the shared monotonic clock (aura_clock.c).  No httpd.h:
 * cmocka links it as it is.
 */
#ifndef AURA_CLOCK_H
#define AURA_CLOCK_H

#include "apr.h"

/* Nanoseconds on CLOCK_MONOTONIC: the same clock in every process. */
apr_uint64_t aura_clock_ns(void);
/* a / b rounded up (b > 0). */
apr_uint64_t aura_ceil_div(apr_uint64_t a, apr_uint64_t b);
/* Whether the caller writes a rate-limited log line now: *last holds the
 * wall-clock second of the last one (0: never), shared by every child
 * and thread; at most one caller per interval_s wins, by
 * compare-and-swap, and it alone logs.  Every "logged at most once a
 * minute" line of the gateway goes through here. */
int aura_log_due(volatile apr_uint64_t *last, apr_uint64_t interval_s);

#endif /* AURA_CLOCK_H */
