/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_db.h: the per-child Postgres pool and the statements the gateway
 * runs (aura_db.c).
 */
#ifndef AURA_DB_H
#define AURA_DB_H

#include "aura.h"

/* Postgres statements (aura_db.c). */
typedef enum {
    AURA_DB_KEY_LOOKUP = 0,
    AURA_DB_PROJECT_ROLE,
    AURA_DB_ORG_ROLE,
    AURA_DB_PROJECT_TOPOLOGY,
    AURA_DB_KEY_TOUCH,
    AURA_DB_STMT_COUNT
} aura_db_stmt_e;

/* aura_db.c: the per-child Postgres pool. */
struct pg_result;
void aura_db_child_init(apr_pool_t *pchild, server_rec *s);
int aura_db_configured(void);
/* APR_SUCCESS; APR_ENOTIMPL without AuraDBParams; APR_EAGAIN when the
 * key store's breaker is open (nothing was tried); APR_TIMEUP when no
 * answer came within AuraDBTimeout (connect, wait or statement);
 * APR_EGENERAL when Postgres answered with an error. */
apr_status_t aura_db_query(request_rec *r, aura_db_stmt_e id,
                           const char *const *params,
                           struct pg_result **out);
/* The same outside any request (the keys' last-used flush, a thread of
 * the child): the deadline is AuraDBTimeout, the key store's breaker is
 * neither asked nor fed (no request waits on this), failures are not
 * logged here (the caller says what was lost).  *out is cleared with
 * p.  APR_SUCCESS; APR_ENOTIMPL without AuraDBParams; APR_TIMEUP;
 * APR_EGENERAL. */
apr_status_t aura_db_query_bg(server_rec *s, apr_pool_t *p,
                              aura_db_stmt_e id, const char *const *params,
                              struct pg_result **out);
/* aura_store_retry_after (aura.h): the Retry-After of a 503
 * store-unavailable after aura_db_query() failed for r: the breaker's
 * cooldown left, else "1". */

#endif /* AURA_DB_H */
