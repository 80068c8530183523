/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keyauth.c: the route's AuraPublic, AuraStreaming and
 * AuraForwardToken, and the apikey query parameters, in every spelling,
 * taken out of the URL on every plane (a key must never travel further
 * than the gateway); the API key door itself, which key is accepted
 * from where, is
 * mod_aura_data's (data_apikey.c), on top of aura_key_lookup
 * (aura_keystore.c).
 */
#include "core/aura_module.h"
#include "auth/aura_apikey.h"
#include "auth/aura_keyauth.h"
#include "auth/aura_keylife.h"
#include "core/aura_config.h"
#include "http/aura_accesslog.h"

#include "http_protocol.h"
#include "apr_strings.h"

AURA_DECLARE(int) aura_route_public(request_rec *r)
{
    return aura_dir_conf(r)->public_route == 1;
}

AURA_DECLARE(int) aura_route_streaming(request_rec *r)
{
    return aura_dir_conf(r)->streaming == 1;
}

/* Unset, the /v1/db router's Locations keep the token: a dedicated
 * PostgREST (and aura-db for the others) takes the user's role from it
 * (DESIGN.md section 3).  Everywhere else a service has the identity
 * headers, and a token it could replay is one it should not hold
 * (DESIGN.md section 10). */
AURA_DECLARE(int) aura_route_forward_token(request_rec *r)
{
    const aura_dir_conf_t *d = aura_dir_conf(r);

    if (d->forward_token != AURA_UNSET) {
        return d->forward_token == 1;
    }
    return d->db_router == 1;
}

/* The Location's service is AuraService's first word as the config
 * holds it (an index into aura_service_names); its group, AuraKeyScope,
 * merged like any per-directory setting (a nested Location inherits
 * it).  Whether a refusal is 403 is the plane's policy. */
AURA_DECLARE(int) aura_key_in_scope(request_rec *r,
                                    const aura_key_identity_t *id)
{
    const aura_dir_conf_t *d = aura_dir_conf(r);
    const char *service = d->service >= 0 && d->service < AURA_SVC_COUNT
                          ? aura_service_names[d->service] : NULL;

    return aura_key_scope_allows(id->scopes, service, d->key_scope);
}

/* From post_read_request, on every plane: every key parameter (apikey
 * in any spelling, aura_apikey_param_name) leaves the query string, and
 * the request line and the unparsed URI lose every credential-looking
 * value (aura_redact.c), before anything can log or forward them.  The
 * rest of r->args is forwarded as it came (a password-reset token is the
 * auth service's business) and is hidden only when the request is
 * logged (aura_redact_log_transaction).  Which key counts, and whether
 * two are one too many, is the data plane's door (data_apikey.c): the
 * management plane reads no key, and forwards none. */
void aura_take_query_key(request_rec *r, aura_request_t *rq)
{
    apr_array_header_t *keys = NULL;
    const char *rest = r->args;
    int n;

    aura_redact_request(r);
    n = aura_apikey_from_query(r->pool, r->args, &keys, &rest);
    if (!n) {
        return;
    }
    rq->query_keys = keys;
    if (n == 1) {
        const char *only = APR_ARRAY_IDX(keys, 0, const char *);

        /* One that does not decode: a key no lookup can find. */
        rq->query_key = only ? only : "";
    }
    r->args = (char *)rest;
    r->parsed_uri.query = (char *)rest;
}
