/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_dbrouter.h: the /v1/db router stage (aura_dbrouter.c).
 */
#ifndef AURA_DBROUTER_H
#define AURA_DBROUTER_H

#include "aura.h"

/* aura_dbrouter.c: where a /v1/db request (AuraDBRouter On, an
 * authenticated request on its NATS route) goes.  OK with *target NULL:
 * it stays on NATS; OK with *target (the dedicated PostgREST's origin)
 * and *url (the request's URL there); else an error status with the
 * problem noted.  The routing stage (aura_route.c) applies it. */
int aura_db_route(request_rec *r, const char **target, const char **url);
void aura_dbrouter_child_init(apr_pool_t *pchild, server_rec *s);
/* Remember that a Location has an HTTP upstream (check_config). */

#endif /* AURA_DBROUTER_H */
