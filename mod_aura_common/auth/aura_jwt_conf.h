/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_jwt_conf.h: the bearer-token verification directives
 * (aura_jwt_conf.c): key sources, algorithms, claims checked; their
 * defaults and the getters that apply them (aura_jwks.c builds each
 * server's verification state from them).
 */
#ifndef AURA_JWT_CONF_H
#define AURA_JWT_CONF_H

#include "auth/aura_jwt.h"
#include "core/aura_config.h"

#define AURA_DEFAULT_JWT_ALGS       "RS256 ES256"
#define AURA_DEFAULT_JWT_LEEWAY     apr_time_from_sec(60)
#define AURA_DEFAULT_JWKS_REFRESH   apr_time_from_sec(30)
/* A day: longer than the access tokens of the usual identity providers
 * (an hour), so that turning the check on breaks none of them. */
#define AURA_DEFAULT_TOKEN_MAX_LIFE apr_time_from_sec(86400)
/* AuraJWTLeeway's largest value (aura_set_jwt_time). */
#define AURA_JWT_LEEWAY_MAX         apr_time_from_sec(3600)

static APR_INLINE apr_interval_time_t
aura_conf_jwt_leeway(const aura_server_conf_t *c)
{
    return c->jwt_leeway != AURA_UNSET ? c->jwt_leeway
                                       : AURA_DEFAULT_JWT_LEEWAY;
}

/* 0: the verifier's own limit. */
static APR_INLINE apr_size_t aura_conf_jwt_max_len(const aura_server_conf_t *c)
{
    return c->jwt_max_len != AURA_UNSET ? (apr_size_t)c->jwt_max_len : 0;
}

static APR_INLINE apr_interval_time_t
aura_conf_token_max_life(const aura_server_conf_t *c)
{
    return c->token_max_life != AURA_UNSET ? c->token_max_life
                                           : AURA_DEFAULT_TOKEN_MAX_LIFE;
}

static APR_INLINE apr_interval_time_t
aura_conf_jwks_refresh(const aura_server_conf_t *c)
{
    return c->jwks_refresh != AURA_UNSET ? c->jwks_refresh
                                         : AURA_DEFAULT_JWKS_REFRESH;
}

/* The algorithms as aura_jwt_parse_algs() gives them. */
static APR_INLINE unsigned int aura_conf_jwt_algs(const aura_server_conf_t *c)
{
    const char *err = NULL;

    return c->jwt_algs ? c->jwt_algs
                       : aura_jwt_parse_algs(AURA_DEFAULT_JWT_ALGS, &err);
}

const char *aura_set_jwt_key_file(cmd_parms *cmd, void *dummy,
                                  const char *path, const char *kid);
const char *aura_set_jwt_secret_file(cmd_parms *cmd, void *dummy,
                                     const char *path, const char *kid);
const char *aura_set_jwks_subject(cmd_parms *cmd, void *dummy,
                                  const char *subject);
const char *aura_set_jwt_algs(cmd_parms *cmd, void *dummy,
                              const char *args);
const char *aura_set_jwt_time(cmd_parms *cmd, void *dummy,
                              const char *arg);
const char *aura_set_jwt_string(cmd_parms *cmd, void *dummy,
                                const char *arg);
const char *aura_set_jwt_max_len(cmd_parms *cmd, void *dummy,
                                 const char *arg);
const char *aura_set_token_max_life(cmd_parms *cmd, void *dummy,
                                    const char *arg);

/* The command table's entries (mod_aura_common.c assembles the table). */
#define AURA_JWT_DIRECTIVES \
    AP_INIT_TAKE12("AuraJWTKeyFile", aura_set_jwt_key_file, NULL, RSRC_CONF, \
                   "A JWKS document or a PEM public key (or certificate) " \
                   "for bearer tokens, and its kid"), \
    AP_INIT_TAKE12("AuraJWTSecretFile", aura_set_jwt_secret_file, NULL, \
                   RSRC_CONF, \
                   "A file holding an HS256 secret (32 bytes at least), " \
                   "and its kid"), \
    AP_INIT_TAKE1("AuraJWKSSubject", aura_set_jwks_subject, NULL, RSRC_CONF, \
                  "NATS subject of the identity service's JWKS, fetched " \
                  "on first use and on an unknown kid"), \
    AP_INIT_RAW_ARGS("AuraJWTAlgorithms", aura_set_jwt_algs, NULL, RSRC_CONF, \
                     "Algorithms bearer tokens may use: RS256 ES256 HS256"), \
    AP_INIT_TAKE1("AuraJWTLeeway", aura_set_jwt_time, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, jwt_leeway), \
                  RSRC_CONF, "Clock skew allowed on exp, nbf and iat"), \
    AP_INIT_TAKE1("AuraJWTIssuer", aura_set_jwt_string, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, jwt_issuer), \
                  RSRC_CONF, "The iss a bearer token must carry"), \
    AP_INIT_TAKE1("AuraJWTMaxLength", aura_set_jwt_max_len, NULL, RSRC_CONF, \
                  "Longest bearer token accepted, in bytes"), \
    AP_INIT_TAKE1("AuraTokenMaxLifetime", aura_set_token_max_life, NULL, \
                  RSRC_CONF, \
                  "Longest lifetime (exp - iat) a token may have; tokens " \
                  "without iat are refused"), \
    AP_INIT_TAKE1("AuraJWKSRefreshInterval", aura_set_jwt_time, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, jwks_refresh), \
                  RSRC_CONF, \
                  "Least time between two JWKS refreshes on unknown kids, " \
                  "across all children")

#endif /* AURA_JWT_CONF_H */
