/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_auth.c: API key authentication, shared by the planes that use it.
 * The key comes from the apikey or X-API-Key header; from the query only
 * where the plane allows it (streaming Locations: browsers cannot set
 * headers on WebSocket/EventSource) and never for a service_role key,
 * which must not travel where URLs go (access logs, traces, Referer).
 * The key value never appears in a log line: requests are logged with
 * the key's project and a hash prefix.
 */
#include "aura_private.h"
#include "aura_apikey.h"

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
 * string and the request line before anything can log or forward them. */
void aura_take_query_key(request_rec *r, aura_request_t *rq)
{
    const char *key = NULL, *rest = r->args;

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
    r->the_request = (char *)aura_apikey_redact(r->pool, r->the_request);
    r->unparsed_uri = (char *)aura_apikey_redact(r->pool, r->unparsed_uri);
}

static int refuse(request_rec *r, int status, const char *type,
                  const char *detail)
{
    aura_problem_note(r, type, detail);
    return status;
}

/* A stable actor for keys: never the key, a prefix of its hash. */
static const char *key_actor(request_rec *r, const char *key)
{
    char hash[65];

    aura_apikey_hash(key, hash);
    return apr_pstrcat(r->pool, "key:", apr_pstrndup(r->pool, hash, 16),
                       NULL);
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
                      "unknown or revoked API key %s", key_actor(r, key));
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-key",
                      "the API key is not valid");
    }
    if (rv != APR_SUCCESS) {
        apr_table_setn(r->err_headers_out, "Retry-After", "1");
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "store-unavailable",
                      "the key store is unavailable");
    }
    if (from_query && !strcmp(id.key_role, "service_role")) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00042)
                      "service_role key of project %s sent in a URL: "
                      "refused (%s); rotate it", id.project,
                      key_actor(r, key));
        return refuse(r, HTTP_UNAUTHORIZED, "key-not-allowed-in-query",
                      "a service_role key is never accepted in a URL");
    }
    rq->project = id.project;
    rq->org = id.org;
    rq->plan = id.plan;
    rq->key_role = id.key_role;
    rq->role = id.key_role;
    rq->actor = key_actor(r, key);
    /* Nothing downstream may see the key. */
    apr_table_unset(r->headers_in, "apikey");
    apr_table_unset(r->headers_in, "X-API-Key");
    return OK;
}
