/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_headers_conf.h: the directives of the response headers the gateway
 * sets (aura_headers_conf.c): what a CORS answer allows and exposes, the
 * security headers; their defaults and the getters that apply them.
 */
#ifndef AURA_HEADERS_CONF_H
#define AURA_HEADERS_CONF_H

#include "core/aura_config.h"

#define AURA_DEFAULT_CORS_METHODS \
    "GET, POST, PUT, PATCH, DELETE, OPTIONS"
#define AURA_DEFAULT_CORS_HEADERS \
    "apikey, x-api-key, authorization, content-type, x-request-id, " \
    "traceparent, tracestate, prefer, range, x-client-info, x-project-id"
#define AURA_DEFAULT_CORS_EXPOSE \
    "X-Request-Id, Retry-After, RateLimit, RateLimit-Policy, Content-Range"
#define AURA_DEFAULT_CORS_MAX_AGE      600

static APR_INLINE const char *
aura_conf_cors_methods(const aura_server_conf_t *c)
{
    return c->cors_methods ? c->cors_methods : AURA_DEFAULT_CORS_METHODS;
}

static APR_INLINE const char *
aura_conf_cors_headers(const aura_server_conf_t *c)
{
    return c->cors_headers ? c->cors_headers : AURA_DEFAULT_CORS_HEADERS;
}

static APR_INLINE const char *
aura_conf_cors_expose(const aura_server_conf_t *c)
{
    return c->cors_expose ? c->cors_expose : AURA_DEFAULT_CORS_EXPOSE;
}

static APR_INLINE int aura_conf_cors_max_age(const aura_server_conf_t *c)
{
    return c->cors_max_age != AURA_UNSET ? c->cors_max_age
                                         : AURA_DEFAULT_CORS_MAX_AGE;
}

const char *aura_set_cors_list(cmd_parms *cmd, void *dummy,
                               const char *arg);
const char *aura_set_cors_max_age(cmd_parms *cmd, void *dummy,
                                  const char *arg);
const char *aura_set_security_header(cmd_parms *cmd, void *dirv,
                                     const char *name, const char *value);

/* The command table's entries (mod_aura_common.c assembles the table). */
#define AURA_HEADERS_DIRECTIVES \
    AP_INIT_TAKE1("AuraCORSAllowMethods", aura_set_cors_list, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, cors_methods), \
                  RSRC_CONF, "Methods a CORS preflight allows"), \
    AP_INIT_TAKE1("AuraCORSAllowHeaders", aura_set_cors_list, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, cors_headers), \
                  RSRC_CONF, "Request headers a CORS preflight allows"), \
    AP_INIT_TAKE1("AuraCORSExposeHeaders", aura_set_cors_list, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, cors_expose), \
                  RSRC_CONF, "Response headers browsers may read"), \
    AP_INIT_TAKE1("AuraCORSMaxAge", aura_set_cors_max_age, NULL, RSRC_CONF, \
                  "Seconds a browser may cache a preflight answer"), \
    AP_INIT_TAKE2("AuraSecurityHeader", aura_set_security_header, NULL, \
                  RSRC_CONF | ACCESS_CONF, \
                  "Value of a security header on every response, or off")

#endif /* AURA_HEADERS_CONF_H */
