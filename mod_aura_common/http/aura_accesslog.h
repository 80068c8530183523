/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_accesslog.h: the access log's fields and the traffic tables
 * (aura_accesslog.c).
 */
#ifndef AURA_ACCESSLOG_H
#define AURA_ACCESSLOG_H

#include "aura.h"

/* aura_accesslog.c: %{name}^au for mod_log_config, the traffic tables. */
void aura_accesslog_pre_config(apr_pool_t *pconf);
int aura_accesslog_check(apr_pool_t *ptemp);
int aura_log_transaction(request_rec *r);
/* aura_redact.c's rule on the request line and the unparsed URI. */
void aura_redact_request(request_rec *r);
/* The same on the query string, right before mod_log_config. */
int aura_redact_log_transaction(request_rec *r);

#endif /* AURA_ACCESSLOG_H */
