/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keyauth.c: API key authentication, shared by the planes that use it.
 * The key comes from the apikey or X-API-Key header; from the query only
 * where the plane allows it (streaming Locations: browsers cannot set
 * headers on WebSocket/EventSource) and never for a service_role key,
 * which must not travel where URLs go (access logs, traces, Referer).
 * The key value never appears in a log line: requests are logged with
 * the key's project and a hash prefix.
 */
#include "core/aura_module.h"
#include "auth/aura_apikey.h"
#include "auth/aura_identity.h"
#include "auth/aura_keyauth.h"
#include "auth/aura_keystore.h"
#include "core/aura_config.h"
#include "http/aura_accesslog.h"
#include "store/aura_db.h"
#include "auth/aura_apikey.h"
#include "auth/aura_identity.h"

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

/* A service_role key in the URL is refused wherever it comes, even
 * next to a header key that would have been used instead: the key has
 * leaked into logs and Referers, and only a refusal (and the warning)
 * tells its owner to rotate it.  Looked up only when well-formed (junk
 * costs nothing); an unknown or ordinary query key next to a header key
 * is left alone, as before.  OK, or the refusal's status. */
static int refuse_url_service_key(request_rec *r,
                                  const aura_key_identity_t *id)
{
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00042)
                  "service_role key of project %s sent in a URL: "
                  "refused (%s); rotate it", id->project, id->actor);
    return refuse(r, HTTP_UNAUTHORIZED, "key-not-allowed-in-query",
                  "a service_role key is never accepted in a URL");
}

static int refuse_service_key_in_query(request_rec *r, const char *qkey)
{
    aura_key_identity_t qid;

    if (!aura_apikey_well_formed(qkey)
        || aura_keystore_lookup(r, qkey, &qid) != APR_SUCCESS
        || strcmp(qid.key_role, "service_role")) {
        return OK;
    }
    return refuse_url_service_key(r, &qid);
}

AURA_DECLARE(int) aura_auth_apikey(request_rec *r, int allow_query)
{
    aura_request_t *rq = aura_request_get(r);
    const char *key = apr_table_get(r->headers_in, "apikey");
    const char *alt = apr_table_get(r->headers_in, "X-API-Key");
    aura_key_identity_t id;
    int from_query = 0;
    apr_status_t rv;

    if (!rq) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    /* Two different keys in one request: ambiguous, refuse. */
    if (key && alt && strcmp(key, alt)) {
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-key",
                      "apikey and X-API-Key disagree");
    }
    key = key ? key : alt;
    if (key && rq->query_key) {
        int rc = refuse_service_key_in_query(r, rq->query_key);

        if (rc != OK) {
            return rc;
        }
    }
    if (!key && rq->query_key) {
        if (!allow_query) {
            ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00040)
                          "API key in the query string refused: not a "
                          "streaming route");
            return refuse(r, HTTP_UNAUTHORIZED, "key-not-allowed-in-query",
                          "an API key in the URL is accepted only on "
                          "streaming routes; send the apikey header");
        }
        key = rq->query_key;
        from_query = 1;
    }
    if (!key) {
        return refuse(r, HTTP_UNAUTHORIZED, "missing-key",
                      "an API key is required (apikey header)");
    }
    if (!aura_apikey_well_formed(key)) {
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-key",
                      "the API key is not valid");
    }
    rv = aura_keystore_lookup(r, key, &id);
    if (rv == APR_NOTFOUND) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00041)
                      "unknown or revoked API key %s", id.actor);
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-key",
                      "the API key is not valid");
    }
    if (rv == APR_EINVAL) {
        /* The row is unusable (logged by the key store): to the client,
         * the key does not work, as if unknown. */
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-key",
                      "the API key is not valid");
    }
    if (rv != APR_SUCCESS) {
        apr_table_setn(r->err_headers_out, "Retry-After",
                       aura_db_retry_after(r));
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "store-unavailable",
                      "the key store is unavailable");
    }
    if (from_query && !strcmp(id.key_role, "service_role")) {
        return refuse_url_service_key(r, &id);
    }
    rq->project = id.project;
    rq->org = id.org;
    rq->plan = id.plan;
    rq->key_role = id.key_role;
    rq->role = id.key_role;
    rq->actor = id.actor;
    /* Nothing downstream may see the key. */
    apr_table_unset(r->headers_in, "apikey");
    apr_table_unset(r->headers_in, "X-API-Key");
    return OK;
}
