/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_status_text.h: the words of mod_aura's section of server-status
 * in its machine format (?auto, docs/status.md) as pure logic (APR
 * only, no httpd.h: cmocka links it as it is).  A ?auto line is
 * "Key: value"; a key's suffix can come from the configuration (a
 * rate-limit zone's name, a target's name), so these functions keep
 * every line one line with one colon-separated key, whatever a name
 * holds.
 */
#ifndef AURA_STATUS_TEXT_H
#define AURA_STATUS_TEXT_H

#include "apr_pools.h"

/**
 * A name made fit for a key suffix: ASCII letters, digits, '_', '-' and
 * '.' kept, every other byte '_'; "" becomes "_".
 * @return s itself when it is fit already, else a copy from p
 */
const char *aura_status_key(apr_pool_t *p, const char *s);

/**
 * A value made fit for one line: each control byte (below 0x20, and
 * 0x7f) a space.  NULL becomes "-".
 * @return s itself when it is fit already, else a copy from p
 */
const char *aura_status_value(apr_pool_t *p, const char *s);

/* What aura_status_fill() writes for a cap that is not a number. */
#define AURA_STATUS_CAP_OFF   (-1)   /* the cap is off: "off" */
#define AURA_STATUS_CAP_NONE  (-2)   /* nothing routes to it: "-" */

/**
 * "<used>/<cap>": the in-flight count against its cap, "3/10", "3/off",
 * "0/-".
 * @param cap the cap (> 0), AURA_STATUS_CAP_OFF or AURA_STATUS_CAP_NONE
 */
const char *aura_status_fill(apr_pool_t *p, apr_int64_t used,
                             apr_int64_t cap);

#endif /* AURA_STATUS_TEXT_H */
