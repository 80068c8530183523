/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mgmt_console.c: the management plane's door.  A console token only
 * (its audience pinned, whatever AuraJWTAudience says), the project or
 * organization the request concerns (AuraScope), and the token
 * subject's role there, looked up in Postgres on every request through
 * mod_aura_common's store, never read from the token; below
 * AuraRequireRole is refused.  API keys do not exist on this plane.
 * Nothing of the console's credentials goes on to a service: not the
 * token, not a cookie.
 */
#include "mgmt.h"

#include "auth/aura_identity.h"

#include "apr_strings.h"

static int refuse(request_rec *r, int status, const char *type,
                  const char *detail)
{
    aura_problem_note(r, type, detail);
    return status;
}

static int role_rank(const char *role)
{
    int i;

    for (i = MGMT_ROLE_MEMBER; i <= MGMT_ROLE_OWNER; i++) {
        if (role && !strcmp(role, aura_mgmt_role_name(i))) {
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

/* The project or organization the request names, as AuraScope says;
 * NULL when it names none. */
static const char *scope_id(request_rec *r, mgmt_scope_e scope)
{
    switch (scope) {
    case MGMT_SCOPE_PROJECT_PATH:
        return path_id(r, "/v1/projects/");
    case MGMT_SCOPE_ORG_PATH:
        return path_id(r, "/v1/orgs/");
    default:
        return apr_table_get(r->headers_in, "X-Project-Id");
    }
}

const char *aura_mgmt_target(request_rec *r)
{
    const char *id = scope_id(r, aura_mgmt_scope(aura_mgmt_dir_conf(r)));

    return id_ok(id) ? id : NULL;
}

/* forward 0: a console token never leaves the gateway, whatever
 * AuraForwardToken says.  A service that held an owner's token could
 * replay it here (POST .../keys/rotate); it has Aura-Actor, Aura-Role
 * and Aura-Org instead (DESIGN.md section 10). */
static const aura_token_policy_t console_tokens = {
    MGMT_CONSOLE_AUDIENCE, NULL, 0, NULL, 0
};

/* Console tokens only: aud exactly aurabase-control (or an array whose
 * only member it is), whatever else is set.  OK, or the refusal. */
static int console_token(request_rec *r)
{
    int rc = aura_auth_bearer(r, &console_tokens);

    if (rc == DECLINED) {
        apr_table_setn(r->err_headers_out, "WWW-Authenticate", "Bearer");
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-token",
                      "a console token is required");
    }
    return rc;
}

/* OK with org, project, role and actor set; 400 invalid-request (no or
 * bad id), 401 invalid-token, 403 forbidden (not a member, or below
 * AuraRequireRole), 503 store-unavailable. */
int aura_mgmt_auth_console(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);
    const mgmt_dir_conf_t *d = aura_mgmt_dir_conf(r);
    mgmt_scope_e scope = aura_mgmt_scope(d);
    int need = aura_mgmt_required_role(d);
    const char *id, *org = NULL, *role = NULL;
    apr_status_t rv;
    int rc;

    if (!rq) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    /* API keys do not exist here: never forwarded, never looked at.
     * Nor cookies: the console's one credential is its token, and a
     * console served from this plane's site would have the browser
     * add its own session cookie to every request. */
    apr_table_unset(r->headers_in, "apikey");
    apr_table_unset(r->headers_in, "X-API-Key");
    apr_table_unset(r->headers_in, "Cookie");
    rc = console_token(r);
    if (rc != OK) {
        return rc;
    }
    id = scope_id(r, scope);
    if (!id_ok(id)) {
        return refuse(r, HTTP_BAD_REQUEST, "invalid-request",
                      scope == MGMT_SCOPE_PROJECT_HEADER
                          ? "X-Project-Id is required (1 to 64 of "
                            "[A-Za-z0-9._-])"
                          : "the path does not name a valid project or "
                            "organization");
    }
    /* Uncached on purpose: a member removed from the org is refused on
     * the very next request. */
    rv = aura_store_member_role(r, scope == MGMT_SCOPE_ORG_PATH
                                   ? AURA_MEMBER_OF_ORG
                                   : AURA_MEMBER_OF_PROJECT,
                                id, rq->actor, &org, &role);
    if (rv == APR_NOTFOUND || (rv == APR_SUCCESS && !role_rank(role))) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00043)
                      "%s is not a member of the organization of %s",
                      rq->actor, id);
        return refuse(r, HTTP_FORBIDDEN, "forbidden",
                      "not a member of the organization concerned");
    }
    if (rv != APR_SUCCESS) {
        apr_table_setn(r->err_headers_out, "Retry-After",
                       aura_store_retry_after(r));
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "store-unavailable",
                      "membership cannot be checked right now");
    }
    if (role_rank(role) < need) {
        return refuse(r, HTTP_FORBIDDEN, "forbidden",
                      apr_psprintf(r->pool, "this operation needs the %s "
                                   "role or above",
                                   aura_mgmt_role_name(need)));
    }
    rq->org = org;
    rq->project = scope == MGMT_SCOPE_ORG_PATH ? NULL : id;
    rq->role = role;
    rq->key_role = NULL;
    /* The claim is now verified: the header may travel as a hint, but
     * the identity headers are what services trust. */
    return OK;
}
