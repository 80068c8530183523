/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_watchdog.c: periodic work on mod_watchdog's threads (the target
 * breaker sweep, the inboxes' late-reply sweep) instead of threads of
 * our own.  mod_watchdog is static in Debian's apache2; elsewhere it
 * may be missing, and each caller says what it loses then.
 */
#include "core/aura_module.h"
#include "core/aura_watchdog.h"

apr_status_t aura_watchdog_every(apr_pool_t *pconf, server_rec *s,
                                 const char *name, int singleton,
                                 apr_interval_time_t interval,
                                 ap_watchdog_callback_fn_t *cb)
{
    APR_OPTIONAL_FN_TYPE(ap_watchdog_get_instance) *get =
        APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_get_instance);
    APR_OPTIONAL_FN_TYPE(ap_watchdog_register_callback) *reg =
        APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_register_callback);
    ap_watchdog_t *wd;
    apr_status_t rv;

    if (!get || !reg) {
        return APR_ENOTIMPL;
    }
    /* parent 0: the instance runs in the children. */
    rv = get(&wd, name, 0, singleton, pconf);
    return rv == APR_SUCCESS ? reg(wd, interval, s, cb) : rv;
}
