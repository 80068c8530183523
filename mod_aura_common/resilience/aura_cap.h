/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_cap.h: the arithmetic of the in-flight caps (AuraServiceMaxInFlight,
 * AuraPlaneMaxInFlight) as pure logic (APR only, no httpd.h: cmocka links
 * it as it is).  aura_bulkhead.c keeps the counters in the shared
 * segment and decides with these functions.
 *
 * A cap is configured as a number, a percentage of the instance's
 * workers, "auto" (a percentage chosen per kind of cap) or "off"; it is
 * stored in one int (encoding below) so that the ordinary merge of
 * AURA_UNSET works.  A counter is taken only below its cap, by
 * compare-and-swap, and given back without ever going below zero: a
 * late give after a reclaim (a dead process's slots were already
 * subtracted) must not wrap the counter around.
 */
#ifndef AURA_CAP_H
#define AURA_CAP_H

#include "apr.h"

/* Encoded settings; AURA_UNSET (-1) is "not set here". */
#define AURA_CAP_OFF      0          /* no cap */
#define AURA_CAP_AUTO     (-2)       /* the kind's default percentage */
#define AURA_CAP_PCT_BASE 100        /* p % is stored as -(100 + p) */
#define AURA_CAP_PCT(p)   (-(AURA_CAP_PCT_BASE + (p)))
#define AURA_CAP_MAX      1000000    /* the largest absolute cap */

/**
 * Parse "off", "auto", "<n>" (1..AURA_CAP_MAX) or "<p>%" (1..100).
 * @param arg the directive's argument
 * @param out the encoded setting
 * @return NULL, or why arg is refused (a static string)
 */
const char *aura_cap_parse(const char *arg, int *out);

/**
 * The cap an encoded setting means for an instance of workers threads.
 * @param enc an encoded setting; AURA_UNSET counts as AURA_CAP_AUTO
 * @param workers the instance's workers (MaxRequestWorkers); 0 unknown
 * @param auto_pct what "auto" means, in percent of the workers
 * @return the cap (at least 1), or 0 for no cap (off, or a percentage
 *         of an unknown number of workers)
 */
apr_uint64_t aura_cap_resolve(int enc, apr_uint64_t workers,
                              unsigned int auto_pct);

/**
 * Take one unit of counter c if it is below cap (0: no cap).
 * @return 1 taken, 0 refused (c unchanged)
 */
int aura_cap_take(volatile apr_uint64_t *c, apr_uint64_t cap);

/**
 * Give n units back to counter c, never below zero.
 * @return the units actually subtracted
 */
apr_uint64_t aura_cap_give(volatile apr_uint64_t *c, apr_uint64_t n);

/**
 * Give one unit back to a per-process holding h if it holds any.
 * @return 1 when one was given back, 0 when h was already 0 (reclaimed)
 */
int aura_cap_drop(volatile apr_uint64_t *h);

#endif /* AURA_CAP_H */
