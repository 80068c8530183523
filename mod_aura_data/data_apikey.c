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
 *
 * The door also reads the one Authorization bearer as far as keys go
 * (issue #30): stock SDKs send the project key as "Authorization: Bearer
 * <key>" too when nobody is signed in.  Exactly the presented key there
 * is no user token (the header goes, the request is the key's); another
 * key there is refused (bearer-key-mismatch); any other bearer is left
 * to aura_auth_bearer, which verifies it as a token.
 *
 * A key's lifecycle (issue #32): a key past its expiry is refused with
 * 401 key-expired, told apart from an unknown key on purpose: only the
 * holder of the exact key can get that answer (keys are 128-bit random
 * strings, nobody enumerates them), and it tells a client whose key was
 * rotated what to do.  A key whose scopes do not name the Location's
 * service or group is refused with 403 key-out-of-scope: it did
 * authenticate, it may not go there.
 */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "apr_strings.h"

#include "aura.h"
#include "apr_time.h"
#include "auth/aura_apikey.h"
#include "auth/aura_identity.h"
#include "data_apikey.h"

APLOG_USE_MODULE(aura_data);

static int refuse(request_rec *r, int status, const char *type,
                  const char *detail)
{
    aura_problem_note(r, type, detail);
    return status;
}

/* The query keys looked up for a service_role key, at most: enough for
 * any honest mistake, and an attacker's extra ones cost nothing (the
 * request is refused as ambiguous without them). */
#define DATA_QUERY_LOOKUPS 4

/* A service_role key in the URL is refused wherever it comes, even
 * next to a header key that would have been used instead, or hidden
 * among other key parameters: the key has leaked into logs and Referers,
 * and only a refusal (and the warning) tells its owner to rotate it. */
static int refuse_url_service_key(request_rec *r,
                                  const aura_key_identity_t *id)
{
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00042)
                  "service_role key of project %s sent in a URL: "
                  "refused (%s); rotate it", id->project, id->actor);
    return refuse(r, HTTP_UNAUTHORIZED, "key-not-allowed-in-query",
                  "a service_role key is never accepted in a URL");
}

/* Each distinct well-formed query key, up to DATA_QUERY_LOOKUPS, is
 * looked up (junk costs nothing); OK, or the refusal of the first
 * service_role one.  An unknown key or a store that cannot answer here
 * is left to the rest of the door. */
static int refuse_service_keys_in_query(request_rec *r,
                                        const apr_array_header_t *keys)
{
    int i, j, looked = 0;

    for (i = 0; keys && i < keys->nelts && looked < DATA_QUERY_LOOKUPS;
         i++) {
        const char *k = APR_ARRAY_IDX(keys, i, const char *);
        aura_key_identity_t qid;
        int seen = 0;

        for (j = 0; j < i && !seen; j++) {
            const char *e = APR_ARRAY_IDX(keys, j, const char *);

            seen = e && k && !strcmp(e, k);
        }
        if (seen || !aura_apikey_well_formed(k)) {
            continue;
        }
        looked++;
        if (aura_key_lookup(r, k, &qid) == APR_SUCCESS
            && !strcmp(qid.key_role, "service_role")) {
            return refuse_url_service_key(r, &qid);
        }
    }
    return OK;
}

/* Two keys where one is read: which one would a service, a log reader
 * or the next gateway take?  Refused, never guessed (issue #29 point 5:
 * a second ?apikey= used to switch the service_role check off). */
static int refuse_ambiguous(request_rec *r, const char *what)
{
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(01750)
                  "ambiguous API key refused: %s", what);
    return refuse(r, HTTP_UNAUTHORIZED, "ambiguous-key",
                  apr_pstrcat(r->pool, "ambiguous API key: ", what,
                              "; send exactly one key, in the apikey "
                              "header", NULL));
}

/* The header key: every apikey and X-API-Key header must say the same.
 * key is NULL when there is none; agree 0 when they disagree, or when a
 * value is a list: httpd joins a repeated header's values with ", ",
 * and a key never holds a comma. */
typedef struct {
    const char *key;
    int agree;
} header_keys_t;

static int header_key_one(void *rec, const char *name, const char *value)
{
    header_keys_t *h = rec;

    (void)name;
    if (strchr(value, ',')) {
        h->agree = 0;
        return 0;
    }
    if (!h->key) {
        h->key = value;
    }
    else if (strcmp(h->key, value)) {
        h->agree = 0;
        return 0;
    }
    return 1;
}

static int count_one(void *rec, const char *name, const char *value)
{
    (void)name; (void)value;
    (*(int *)rec)++;
    return 1;
}

/* The bearer of the request's one well-formed "Authorization: Bearer",
 * or NULL: none, or one aura_auth_bearer refuses as malformed anyway
 * (two headers, another scheme), which the key rules leave to it. */
static const char *one_bearer(request_rec *r)
{
    const char *token;
    int n = 0;

    apr_table_do(count_one, &n, r->headers_in, "Authorization", NULL);
    if (n != 1 || aura_authz_parse(apr_table_get(r->headers_in,
                                                 "Authorization"),
                                   &token) != AURA_AUTHZ_BEARER) {
        return NULL;
    }
    return token;
}

/* The missing-key refusal; its detail says where the key went when the
 * one bearer looks like one.  A key only in Authorization is not taken
 * for the apikey header: where tokens travel on (AuraForwardToken, the
 * db router) the key would travel with them, and the door would have
 * two places to read a key from.  Stock SDKs always send apikey. */
static int refuse_missing(request_rec *r)
{
    if (aura_apikey_shaped(one_bearer(r))) {
        return refuse(r, HTTP_UNAUTHORIZED, "missing-key",
                      "an API key is required in the apikey header; "
                      "the Authorization bearer looks like an API key, "
                      "and Authorization is read only for user tokens");
    }
    return refuse(r, HTTP_UNAUTHORIZED, "missing-key",
                  "an API key is required (apikey header)");
}

/* The SDK rule, once the key is known good: OK, with Authorization gone
 * when it was only the key again; 401 bearer-key-mismatch when it is
 * another key (which key would the request be?  Never guessed, and
 * never taken for a malformed token either: the client's mistake gets
 * its own name).  Any other bearer stays for aura_auth_bearer. */
static int bearer_vs_key(request_rec *r, const char *key,
                         const aura_key_identity_t *id)
{
    switch (aura_apikey_bearer_kind(one_bearer(r), key)) {
    case AURA_BEARER_SAME_KEY:
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(01850)
                      "Authorization bearer is the request's API key "
                      "(%s): no user token", id->actor);
        apr_table_unset(r->headers_in, "Authorization");
        return OK;
    case AURA_BEARER_OTHER_KEY:
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(01851)
                      "Authorization bearer is an API key other than the "
                      "request's (%s of project %s): refused", id->actor,
                      id->project);
        apr_table_unset(r->headers_in, "Authorization");
        apr_table_setn(r->err_headers_out, "WWW-Authenticate",
                       "Bearer error=\"invalid_token\"");
        return refuse(r, HTTP_UNAUTHORIZED, "bearer-key-mismatch",
                      "the Authorization bearer is an API key, and not "
                      "the one in the apikey header; send a user token "
                      "there, or the same key, or no Authorization");
    default:
        return OK;
    }
}

/* Which key the request presents: *key and *from_query set, OK; or the
 * refusal's status (a service_role key in the URL, keys that disagree
 * or too many, a query key where none is allowed, no key at all). */
static int presented_key(request_rec *r, const aura_request_t *rq,
                         int allow_query, const char **key, int *from_query)
{
    header_keys_t h = { NULL, 1 };
    int nq = rq->query_keys ? rq->query_keys->nelts : 0, rc;

    *key = NULL;
    *from_query = 0;
    apr_table_do(header_key_one, &h, r->headers_in, "apikey", "X-API-Key",
                 NULL);
    /* A leaked service_role key first: whatever else is wrong, its
     * owner must hear that it leaked. */
    rc = refuse_service_keys_in_query(r, rq->query_keys);
    if (rc != OK) {
        return rc;
    }
    if (!h.agree) {
        return refuse_ambiguous(r, "more than one key in the apikey and "
                                "X-API-Key headers");
    }
    if (nq > 1) {
        return refuse_ambiguous(r, apr_psprintf(r->pool, "%d apikey "
                                "parameters in the query", nq));
    }
    *key = h.key;
    if (*key && rq->query_key && strcmp(*key, rq->query_key)) {
        return refuse_ambiguous(r, "the apikey query parameter and the "
                                "header key differ");
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
        return refuse_missing(r);
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
    /* An incident control may block this key: decided before the
     * lookup, so a blocked key costs no key store query. */
    rc = aura_control_key(r, key);
    if (rc != OK) {
        return rc;
    }
    rv = aura_key_lookup(r, key, &id);
    if (rv == APR_NOTFOUND) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00041)
                      "unknown or revoked API key %s", id.actor);
        return refuse(r, HTTP_UNAUTHORIZED, "invalid-key",
                      "the API key is not valid");
    }
    if (rv == AURA_KEY_EXPIRED) {
        char when[APR_RFC822_DATE_LEN];

        apr_rfc822_date(when, id.expires_at);
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(02404)
                      "API key %s of project %s expired at %s: refused",
                      id.actor, id.project, when);
        return refuse(r, HTTP_UNAUTHORIZED, "key-expired",
                      "the API key has expired; use the project's current "
                      "key");
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
    rc = bearer_vs_key(r, key, &id);
    if (rc != OK) {
        return rc;
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
    /* After the identity is set: the refusal's log and audit record say
     * whose key went where it may not. */
    if (!aura_key_in_scope(r, &id)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(02405)
                      "API key %s of project %s is not scoped for %s "
                      "(its scopes: %s): refused", id.actor, id.project,
                      r->uri, *id.scopes ? id.scopes : "none");
        return refuse(r, HTTP_FORBIDDEN, "key-out-of-scope",
                      "the API key's scopes do not include this service");
    }
    return OK;
}
