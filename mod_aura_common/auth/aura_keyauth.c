/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keyauth.c: the route's AuraPublic and AuraStreaming, and the
 * apikey query parameter taken out of the URL on every plane (a key
 * must never travel further than the gateway); the API key door itself,
 * which key is accepted from where, is mod_aura_data's (data_apikey.c),
 * on top of aura_key_lookup (aura_keystore.c).
 */
#include "core/aura_module.h"
#include "auth/aura_apikey.h"
#include "auth/aura_identity.h"
#include "auth/aura_keyauth.h"
#include "core/aura_config.h"
#include "http/aura_accesslog.h"
#include "store/aura_db.h"
#include "auth/aura_apikey.h"
#include "auth/aura_identity.h"

#include "http_protocol.h"
#include "apr_strings.h"

#include <libpq-fe.h>

AURA_DECLARE(int) aura_route_public(request_rec *r)
{
    return aura_dir_conf(r)->public_route == 1;
}

AURA_DECLARE(int) aura_route_streaming(request_rec *r)
{
    return aura_dir_conf(r)->streaming == 1;
}

/* From post_read_request, on every plane: the key leaves the query
 * string, and the request line and the unparsed URI lose every
 * credential-looking value (aura_redact.c), before anything can log or
 * forward them.  The rest of r->args is forwarded as it came (a
 * password-reset token is the auth service's business) and is hidden
 * only when the request is logged (aura_redact_log_transaction). */
void aura_take_query_key(request_rec *r, aura_request_t *rq)
{
    const char *key = NULL, *rest = r->args;

    aura_redact_request(r);
    if (!r->args || !ap_strstr_c(r->args, AURA_APIKEY_PARAM)) {
        return;
    }
    if (aura_apikey_from_query(r->pool, r->args, &key, &rest)
        != APR_SUCCESS) {
        /* Ambiguous (two keys, bad escape): keep none of them, and make
         * sure authentication refuses the request. */
        key = "";
    }
    rq->query_key = key;
    r->args = (char *)rest;
    r->parsed_uri.query = (char *)rest;
}

static int refuse(request_rec *r, int status, const char *type,
                  const char *detail)
{
    aura_problem_note(r, type, detail);
    return status;
}

/* ---- Management plane: console token, then membership ------------- */

static const char *const role_names[] = { NULL, "member", "admin", "owner" };

static int role_rank(const char *role)
{
    int i;

    for (i = AURA_ROLE_MEMBER; i <= AURA_ROLE_OWNER; i++) {
        if (role && !strcmp(role, role_names[i])) {
            return i;
        }
    }
    return 0;
}

/* The id that follows prefix in the (decoded) path, up to the next '/'. */
static const char *path_id(request_rec *r, const char *prefix)
{
    apr_size_t plen = strlen(prefix), n = 0;
    const char *s;

    if (strncmp(r->uri, prefix, plen)) {
        return NULL;
    }
    s = r->uri + plen;
    while (s[n] && s[n] != '/') {
        n++;
    }
    return n ? apr_pstrndup(r->pool, s, n) : NULL;
}

/* The same rule as the key store's ids (aura_identity.h): what the
 * data plane would accept as Aura-Project, the management plane accepts
 * as a project or org named in a request. */
static int id_ok(const char *id)
{
    return aura_identity_id_ok(id, AURA_ID_MAX);
}

/* The organization role of user in the org or the project's org; the
 * project's org goes to *org.  APR_NOTFOUND: no membership (or no such
 * project: the same answer, so existence does not leak). */
static apr_status_t lookup_role(request_rec *r, aura_scope_e scope,
                                const char *id, const char *user,
                                const char **org, const char **role)
{
    const char *params[2] = { id, user };
    PGresult *res;
    apr_status_t rv;

    if (scope == AURA_SCOPE_ORG_PATH) {
        rv = aura_db_query(r, AURA_DB_ORG_ROLE, params, &res);
        if (rv == APR_SUCCESS && PQntuples(res) == 1) {
            *org = id;
            *role = apr_pstrdup(r->pool, PQgetvalue(res, 0, 0));
            return APR_SUCCESS;
        }
        return rv == APR_SUCCESS ? APR_NOTFOUND : rv;
    }
    rv = aura_db_query(r, AURA_DB_PROJECT_ROLE, params, &res);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, 1)) {
        return APR_NOTFOUND;
    }
    *org = apr_pstrdup(r->pool, PQgetvalue(res, 0, 0));
    *role = apr_pstrdup(r->pool, PQgetvalue(res, 0, 1));
    return APR_SUCCESS;
}

static const aura_token_policy_t console_tokens = {
    AURA_CONSOLE_AUDIENCE, NULL, 0, NULL
};

AURA_DECLARE(int) aura_auth_console(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);
    const aura_dir_conf_t *d = aura_dir_conf(r);
    aura_scope_e scope = d->scope != AURA_UNSET ? (aura_scope_e)d->scope
                                                : AURA_SCOPE_PROJECT_HEADER;
    int need = d->require_role != AURA_UNSET ? d->require_role
                                             : AURA_ROLE_MEMBER;
    const char *id, *org = NULL, *role = NULL;
    apr_status_t rv;
    int rc;

    if (!rq) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    /* API keys do not exist here: never forwarded, never looked at. */
    apr_table_unset(r->headers_in, "apikey");
    apr_table_unset(r->headers_in, "X-API-Key");
    /* Console tokens only: aud exactly aurabase-control (or an array
     * whose only member it is), whatever else is set. */
    rc = aura_auth_bearer(r, &console_tokens);
    if (rc == DECLINED) {
        apr_table_setn(r->err_headers_out, "WWW-Authenticate", "Bearer");
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-token",
                      "a console token is required");
    }
    if (rc != OK) {
        return rc;
    }
    switch (scope) {
    case AURA_SCOPE_PROJECT_PATH:
        id = path_id(r, "/v1/projects/");
        break;
    case AURA_SCOPE_ORG_PATH:
        id = path_id(r, "/v1/orgs/");
        break;
    default:
        id = apr_table_get(r->headers_in, "X-Project-Id");
        break;
    }
    if (!id_ok(id)) {
        return refuse(r, HTTP_BAD_REQUEST, "invalid-request",
                      scope == AURA_SCOPE_PROJECT_HEADER
                          ? "X-Project-Id is required (1 to 64 of "
                            "[A-Za-z0-9._-])"
                          : "the path does not name a valid project or "
                            "organization");
    }
    /* Uncached on purpose: a member removed from the org is refused on
     * the very next request. */
    rv = lookup_role(r, scope, id, rq->actor, &org, &role);
    if (rv == APR_NOTFOUND || (rv == APR_SUCCESS && !role_rank(role))) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00043)
                      "%s is not a member of the organization of %s",
                      rq->actor, id);
        return refuse(r, HTTP_FORBIDDEN, "forbidden",
                      "not a member of the organization concerned");
    }
    if (rv != APR_SUCCESS) {
        apr_table_setn(r->err_headers_out, "Retry-After",
                       aura_db_retry_after(r));
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "store-unavailable",
                      "membership cannot be checked right now");
    }
    if (role_rank(role) < need) {
        return refuse(r, HTTP_FORBIDDEN, "forbidden",
                      apr_psprintf(r->pool, "this operation needs the %s "
                                   "role or above", role_names[need]));
    }
    rq->org = org;
    rq->project = scope == AURA_SCOPE_ORG_PATH ? NULL : id;
    rq->role = role;
    rq->key_role = NULL;
    /* The claim is now verified: the header may travel as a hint, but
     * the identity headers are what services trust. */
    return OK;
}
