/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_jwks.h: JWT keys per VirtualHost, bearer-token authentication and
 * what the forwarding paths may pass on of it (aura_jwks.c).
 */
#ifndef AURA_JWKS_H
#define AURA_JWKS_H

#include "aura.h"
#include "core/aura_config.h"
#include "auth/aura_jwt.h"

/* aura_jwks.c: JWT keys per VirtualHost, refreshed across children. */
const char *aura_jwks_read_source(cmd_parms *cmd, aura_jwt_source_t *src);
apr_status_t aura_jwks_post_config(apr_pool_t *pconf, server_rec *s);
void aura_jwks_child_init(apr_pool_t *pchild, server_rec *s);

/**
 * The token horizon: the longest any token this httpd accepts can be
 * accepted after its iat, AuraTokenMaxLifetime + 2 x AuraJWTLeeway
 * (exp may lie the leeway beyond the lifetime, and a token is accepted
 * until the leeway after its exp), the largest of the VirtualHosts that
 * take tokens; the defaults' when none does.  Set in post_config, read
 * only afterwards (a revocation's expiry, aura_revoke_expiry()).
 */
apr_interval_time_t aura_token_horizon(void);

/* The forwarding paths: Authorization leaves headers unless
 * aura_auth_bearer() verified r's token under a plane policy that lets
 * it travel (aura_token_policy_t.forward). */
void aura_forward_credentials(request_rec *r, apr_table_t *headers);

/**
 * Verify a token other than a bearer credential (an OpenID Connect
 * logout_token) with r's VirtualHost's keys, algorithms and leeway, by
 * the same code as every token: the issuer must be exactly issuer, the
 * audience (a string, or an array containing it) audience; sub is not
 * required; typ may be absent, "JWT" or the explicit type typ (NULL:
 * none).  UNKNOWN_KID when the VirtualHost has no keys.
 */
aura_jwt_result_e aura_jwks_verify(request_rec *r, const char *typ,
                                   const char *issuer,
                                   const char *audience, const char *token,
                                   aura_jwt_claims_t *claims);

#endif /* AURA_JWKS_H */
