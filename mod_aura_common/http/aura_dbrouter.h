/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_dbrouter.h: the /v1/db router stage (aura_dbrouter.c).
 */
#ifndef AURA_DBROUTER_H
#define AURA_DBROUTER_H

#include "aura.h"

/* aura_dbrouter.c: /v1/db (AuraDBRouter On).  OK: nothing to do or
 * decided (the request may now be a proxy request); else an error
 * status with the problem noted. */
int aura_db_route(request_rec *r);
void aura_dbrouter_child_init(apr_pool_t *pchild, server_rec *s);
/* Remember that a Location has an HTTP upstream (check_config). */
void aura_set_service_seen(cmd_parms *cmd);

#endif /* AURA_DBROUTER_H */
