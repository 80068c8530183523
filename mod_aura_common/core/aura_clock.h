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

#endif /* AURA_CLOCK_H */
