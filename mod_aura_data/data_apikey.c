/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * data_apikey.c: the data plane's API key door.  The key comes from the
 * apikey or X-API-Key header; from the query (taken out of the URL by
 * mod_aura_common, aura_request_t.query_key) only on streaming
 * Locations, where browsers cannot set headers on WebSocket/EventSource,
 * and never for a service_role key, which must not travel where URLs go
 * (access logs, traces, Referer).  The key value never appears in a log
 * line: requests are logged with the key's project and a hash prefix.
 * The mechanism is mod_aura_common's: the key's form (aura_apikey.h,
 * linked from libaura_pure.a) and the store lookup (aura_key_lookup).
 */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "apr_strings.h"

#include "aura.h"
#include "auth/aura_apikey.h"
#include "data_apikey.h"

APLOG_USE_MODULE(aura_data);

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
        || aura_key_lookup(r, qkey, &qid) != APR_SUCCESS
        || strcmp(qid.key_role, "service_role")) {
        return OK;
    }
    return refuse_url_service_key(r, &qid);
}

/* Which key the request presents: *key and *from_query set, OK; or the
 * refusal's status (two header keys that disagree, a query key where
 * none is allowed, a service_role key in the URL, no key at all). */
static int presented_key(request_rec *r, const aura_request_t *rq,
                         int allow_query, const char **key, int *from_query)
{
    const char *hdr = apr_table_get(r->headers_in, "apikey");
    const char *alt = apr_table_get(r->headers_in, "X-API-Key");

    *from_query = 0;
    /* Two different keys in one request: ambiguous, refuse. */
    if (hdr && alt && strcmp(hdr, alt)) {
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-key",
                      "apikey and X-API-Key disagree");
    }
    *key = hdr ? hdr : alt;
    if (*key && rq->query_key) {
        return refuse_service_key_in_query(r, rq->query_key);
    }
    if (!*key && rq->query_key) {
        if (!allow_query) {
            ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00040)
                          "API key in the query string refused: not a "
                          "streaming route");
            return refuse(r, HTTP_UNAUTHORIZED, "key-not-allowed-in-query",
                          "an API key in the URL is accepted only on "
                          "streaming routes; send the apikey header");
        }
        *key = rq->query_key;
        *from_query = 1;
    }
    if (!*key) {
        return refuse(r, HTTP_UNAUTHORIZED, "missing-key",
                      "an API key is required (apikey header)");
    }
    return OK;
}

int data_auth_apikey(request_rec *r, int allow_query)
{
    aura_request_t *rq = aura_request_get(r);
    aura_key_identity_t id;
    const char *key;
    int from_query, rc;
    apr_status_t rv;

    if (!rq) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    rc = presented_key(r, rq, allow_query, &key, &from_query);
    if (rc != OK) {
        return rc;
    }
    if (!aura_apikey_well_formed(key)) {
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-key",
                      "the API key is not valid");
    }
    rv = aura_key_lookup(r, key, &id);
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
                       aura_store_retry_after(r));
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
