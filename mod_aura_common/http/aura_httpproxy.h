/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_httpproxy.h: the HTTP path through mod_proxy (aura_httpproxy.c).
 */
#ifndef AURA_HTTPPROXY_H
#define AURA_HTTPPROXY_H

#include "aura.h"
#include "core/aura_config.h"

/* aura_httpproxy.c: the HTTP path through mod_proxy. */
#define AURA_NOTE_TARGET "aura-db-target"   /* a dedicated PostgREST */
int aura_http_claim(request_rec *r, const aura_dir_conf_t *d);
void aura_http_target(request_rec *r, const char *origin, const char *url,
                      apr_interval_time_t budget);
int aura_http_fixups(request_rec *r);
void aura_http_register(void);
void aura_http_insert_filter(request_rec *r);
/* Removes every header of the gateway's namespace (any spelling,
 * aura_envelope_own_header()) from t. */
void aura_unset_owned(apr_pool_t *p, apr_table_t *t);

#endif /* AURA_HTTPPROXY_H */
