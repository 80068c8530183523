/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_cap.c: the arithmetic of the in-flight caps (see aura_cap.h).
 * Counters live in the shared segment: every change is an atomic
 * operation (lock cmpxchg / lock xadd on this platform, valid across
 * processes), never a read-modify-write in two steps.
 */
#include "resilience/aura_cap.h"

#include "apr_atomic.h"
#include "apr_lib.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>

#define CAP_FORMS "a number of requests between 1 and 1000000, a " \
                  "percentage of the workers between 1% and 100%, auto " \
                  "or off"

const char *aura_cap_parse(const char *arg, int *out)
{
    char *end;
    long v;

    if (!strcasecmp(arg, "off")) {
        *out = AURA_CAP_OFF;
        return NULL;
    }
    if (!strcasecmp(arg, "auto")) {
        *out = AURA_CAP_AUTO;
        return NULL;
    }
    if (!apr_isdigit(*arg)) {
        return CAP_FORMS;
    }
    errno = 0;
    v = strtol(arg, &end, 10);
    if (errno) {
        return CAP_FORMS;
    }
    if (end[0] == '%' && end[1] == '\0') {
        if (v < 1 || v > 100) {
            return CAP_FORMS;
        }
        *out = AURA_CAP_PCT((int)v);
        return NULL;
    }
    if (*end || v < 1 || v > AURA_CAP_MAX) {
        return CAP_FORMS;
    }
    *out = (int)v;
    return NULL;
}

apr_uint64_t aura_cap_resolve(int enc, apr_uint64_t workers,
                              unsigned int auto_pct)
{
    apr_uint64_t pct, cap;

    if (enc > 0) {
        return (apr_uint64_t)enc;
    }
    if (enc == AURA_CAP_OFF) {
        return 0;
    }
    pct = enc <= AURA_CAP_PCT(1) ? (apr_uint64_t)(-enc - AURA_CAP_PCT_BASE)
                                 : auto_pct;
    if (!workers || !pct) {
        return 0;
    }
    /* Rounded down, but never 0: a cap of 0 would refuse everything. */
    cap = workers * pct / 100;
    return cap ? cap : 1;
}

int aura_cap_take(volatile apr_uint64_t *c, apr_uint64_t cap)
{
    apr_uint64_t now;

    if (!cap) {
        apr_atomic_inc64(c);
        return 1;
    }
    do {
        now = apr_atomic_read64(c);
        if (now >= cap) {
            return 0;
        }
    } while (apr_atomic_cas64(c, now + 1, now) != now);
    return 1;
}

apr_uint64_t aura_cap_give(volatile apr_uint64_t *c, apr_uint64_t n)
{
    apr_uint64_t now, sub;

    do {
        now = apr_atomic_read64(c);
        sub = now < n ? now : n;
        if (!sub) {
            return 0;
        }
    } while (apr_atomic_cas64(c, now - sub, now) != now);
    return sub;
}

int aura_cap_drop(volatile apr_uint64_t *h)
{
    return aura_cap_give(h, 1) == 1;
}
