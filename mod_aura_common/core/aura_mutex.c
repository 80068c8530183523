/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_mutex.c: global mutexes made once per httpd parent (aura_mutex.h):
 * the audit chain's, the incident controls', the fleet view's.
 */
#include "core/aura_mutex.h"

#include "util_mutex.h"

typedef struct {
    apr_global_mutex_t *mutex;
} retained_mutex_t;

apr_status_t aura_retained_mutex(server_rec *s, const char *key,
                                 const char *type,
                                 apr_global_mutex_t **mutex)
{
    retained_mutex_t *ret = ap_retained_data_get(key);
    apr_status_t rv;

    if (!ret) {
        ret = ap_retained_data_create(key, sizeof(*ret));
    }
    if (!ret->mutex) {
        rv = ap_global_mutex_create(&ret->mutex, NULL, type, NULL, s,
                                    s->process->pool, 0);
        if (rv != APR_SUCCESS) {
            ret->mutex = NULL;
            return rv;
        }
    }
    *mutex = ret->mutex;
    return APR_SUCCESS;
}
