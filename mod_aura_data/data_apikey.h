/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * data_apikey.h: the data plane's API key door (data_apikey.c).
 */
#ifndef DATA_APIKEY_H
#define DATA_APIKEY_H

#include "httpd.h"

/**
 * Authenticate the request's API key (apikey or X-API-Key header; the
 * apikey query parameter only when allow_query and never for a
 * service_role key).  On success the key's project, org, plan, role and
 * actor are set in the request state, and the key headers are removed
 * from r->headers_in so nothing forwards them.  An Authorization bearer
 * that is exactly the presented key is removed too (no user token: stock
 * SDKs send the key there when nobody is signed in); one that is another
 * key is refused.
 * @param r the request (aura_request_begin() already called)
 * @param allow_query whether a key from the query string is acceptable
 *        (the Location streams: AuraStreaming On)
 * @return OK; 401 (missing-key, invalid-key, key-expired,
 *         key-not-allowed-in-query, ambiguous-key, bearer-key-mismatch),
 *         403 (key-out-of-scope) or 503 (store-unavailable) with the
 *         problem noted.
 */
int data_auth_apikey(request_rec *r, int allow_query);

#endif /* DATA_APIKEY_H */
