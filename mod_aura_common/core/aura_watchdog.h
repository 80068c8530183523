/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_watchdog.h: a periodic callback on mod_watchdog (aura_watchdog.c).
 */
#ifndef AURA_WATCHDOG_H
#define AURA_WATCHDOG_H

#include "aura.h"
#include "mod_watchdog.h"

/* From post_config: cb every interval, in one child at a time
 * (singleton) or in every child.  APR_ENOTIMPL when mod_watchdog is not
 * loaded (the caller says what is then lost), else mod_watchdog's
 * status. */
apr_status_t aura_watchdog_every(apr_pool_t *pconf, server_rec *s,
                                 const char *name, int singleton,
                                 apr_interval_time_t interval,
                                 ap_watchdog_callback_fn_t *cb);

#endif /* AURA_WATCHDOG_H */
