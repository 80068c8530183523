/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_mutex.h: a global mutex made once for the life of the httpd
 * parent (aura_mutex.c), for the locks that the children of two
 * generations, which overlap during a graceful restart, must share.
 */
#ifndef AURA_MUTEX_H
#define AURA_MUTEX_H

#include "aura.h"
#include "apr_global_mutex.h"

/**
 * The mutex of this Mutex type, kept in httpd's retained data under
 * key: made on the first start (in s->process->pool), the same one on
 * every restart.  The caller logs a failure with its own tag.
 */
apr_status_t aura_retained_mutex(server_rec *s, const char *key,
                                 const char *type,
                                 apr_global_mutex_t **mutex);

#endif /* AURA_MUTEX_H */
