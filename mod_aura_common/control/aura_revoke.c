/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_revoke.c: a verified token against the revocations in force.
 *
 * Why after the signature and claims checks and not before: a
 * revocation names a sub, sid or jti, which only a verified token
 * vouches for (an unverified one could name anybody's).  Its cost on
 * every request with a token: one atomic read when no revocation is in
 * force; else the payload's sid, jti and iat read again (jansson, the
 * payload is at most the token's length) and three lookups in the
 * child's hash index.  Never Postgres, never NATS.
 */
#include "core/aura_module.h"
#include "control/aura_revoke.h"
#include "control/aura_revoke_index.h"
#include "control/aura_control.h"

#include "apr_strings.h"

#include <jansson.h>

int aura_revoked(apr_pool_t *p, const char *scope, const char *sub,
                 const char *sid, const char *jti, apr_int64_t iat)
{
    return aura_control_revoked(p, scope, sub, sid, jti, iat);
}

const char *aura_revoke_scope(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);

    if (!rq) {
        return NULL;
    }
    return rq->plane == AURA_PLANE_MGMT ? AURA_REVOKE_SCOPE_MGMT
                                        : rq->project;
}

/* A string claim, copied into p; NULL when absent or no string. */
static const char *str_claim(apr_pool_t *p, json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);

    return json_is_string(v) ? apr_pstrdup(p, json_string_value(v)) : NULL;
}

static int refuse_revoked(request_rec *r, int what)
{
    apr_table_setn(r->err_headers_out, "WWW-Authenticate",
                   "Bearer error=\"invalid_token\"");
    aura_problem_note(r, "token-revoked", apr_pstrcat(
        r->pool, "this token was revoked (its ",
        aura_revoke_name((aura_revoke_e)what), "); sign in again", NULL));
    return HTTP_UNAUTHORIZED;
}

int aura_revoked_claims(apr_pool_t *p, const char *scope, const char *sub,
                        const char *claims_json)
{
    const char *sid, *jti;
    apr_int64_t iat = -1;
    json_t *o, *v;

    if (!aura_control_revocations() || !scope || !claims_json) {
        return 0;
    }
    /* The verifier read these already; it keeps only what every caller
     * needs, so the three are read again, and only here. */
    o = json_loads(claims_json, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return 0;
    }
    sid = str_claim(p, o, "sid");
    jti = str_claim(p, o, "jti");
    v = json_object_get(o, "iat");
    if (json_is_number(v) && json_number_value(v) >= 0) {
        iat = (apr_int64_t)json_number_value(v);
    }
    json_decref(o);
    return aura_revoked(p, scope, sub, sid, jti, iat);
}

int aura_revoke_check(request_rec *r, const aura_jwt_claims_t *claims)
{
    const char *scope;
    int what;

    if (!aura_control_revocations() || !claims->claims_json) {
        return OK;
    }
    scope = aura_revoke_scope(r);
    what = aura_revoked_claims(r->pool, scope, claims->sub,
                               claims->claims_json);
    if (!what) {
        return OK;
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(02500)
                  "bearer token refused: revoked by its %s (scope %s)",
                  aura_revoke_name((aura_revoke_e)what), scope);
    return refuse_revoked(r, what);
}
