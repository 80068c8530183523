/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_jwks.h: JWT keys per VirtualHost, bearer-token authentication and
 * what the forwarding paths may pass on of it (aura_jwks.c).
 */
#ifndef AURA_JWKS_H
#define AURA_JWKS_H

#include "aura.h"
#include "core/aura_config.h"

/* aura_jwks.c: JWT keys per VirtualHost, refreshed across children. */
const char *aura_jwks_read_source(cmd_parms *cmd, aura_jwt_source_t *src);
apr_status_t aura_jwks_post_config(apr_pool_t *pconf, server_rec *s);
void aura_jwks_child_init(apr_pool_t *pchild, server_rec *s);

/* The forwarding paths: Authorization leaves headers unless
 * aura_auth_bearer() verified r's token under a plane policy that lets
 * it travel (aura_token_policy_t.forward). */
void aura_forward_credentials(request_rec *r, apr_table_t *headers);

#endif /* AURA_JWKS_H */
