/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_request.h: the request state (aura_request.c).  aura_request_t
 * (aura.h) is what the plane modules see; the part only mod_aura_common
 * reads hangs off it here, so that no stage hands another a string in
 * r->notes: the route's decision, the problem a stage refused with, the
 * store's Retry-After, the armed upgrade.
 */
#ifndef AURA_REQUEST_H
#define AURA_REQUEST_H

#include "aura.h"

/** Where the routing stage sent a request (aura_route.c decides, once). */
typedef enum {
    AURA_ROUTE_NONE = 0,    /**< not a service Location */
    AURA_ROUTE_NATS,        /**< the NATS handler (aura_natsproxy.c) */
    AURA_ROUTE_DB_PENDING,  /**< /v1/db: NATS unless the project's topology,
                                 known once authenticated, says otherwise */
    AURA_ROUTE_HTTP,        /**< mod_proxy, to the Location's upstream */
    AURA_ROUTE_DB_TARGET    /**< mod_proxy, to a dedicated PostgREST */
} aura_route_e;

/** The routing stage's decision. */
typedef struct aura_route_t {
    aura_route_e kind;
    /** The request it was made for: an internal redirect (which shares
     *  the state) is routed on its own. */
    const request_rec *r;
    /** HTTP and DB_TARGET: the upstream's origin (scheme://host[:port],
     *  ws(s):// for an upgrade), the pooled worker's name. */
    const char *origin;
    /** HTTP and DB_TARGET: the upstream I/O timeout (the worker's). */
    apr_interval_time_t budget;
    /** DB_TARGET: the target, whose own breaker guards it. */
    const char *target;
} aura_route_t;

/** What mod_aura_common keeps of a request besides aura_request_t. */
/** The credential a request was admitted with (issue #32 point 3),
 *  kept for a stream that must end with it (aura_streamend.c).  Strings
 *  live in r->pool. */
typedef struct {
    char key_hash[65];        /**< the key store's SHA-256; "" no key */
    const char *key_actor;    /**< key:<hash prefix>, NULL no key */
    const char *key_project;
    apr_time_t key_expires;   /**< 0: none */
    const char *token_sub;    /**< NULL: no verified token */
    apr_time_t token_exp;
    const char *token_claims; /**< the token's payload JSON */
    const char *token_scope;  /**< its revocation scope (aura_revoke.h) */
} aura_cred_t;

typedef struct aura_request_private_t {
    aura_route_t route;
    /** The problem a stage refused with (aura_problem_note()), and the
     *  request_rec it was noted on: an ErrorDocument's redirect starts
     *  without one, as its notes did. */
    const request_rec *problem_of;
    const char *problem_type;
    const char *problem_detail;
    /** Seconds until the store's breaker admits a probe (aura_db.c). */
    const char *store_retry_after;
    /** The request_rec whose WebSocket upgrade response is armed with
     *  the gateway's headers (aura_headers.c): once, however many
     *  times mod_proxy tries. */
    const request_rec *upgrade_armed_for;
    /** The HTTP path's breaker hold and cap slot (aura_httpproxy.c),
     *  taken in fixups and given back once mod_proxy is done; here
     *  rather than in r->pool's user data, which is a hash to make and
     *  search on every request. */
    struct aura_breaker_hold_t *http_hold;
    struct aura_cap_hold_t *http_slot;
    /** Whether httpd hands this HTTP/1.1 request over to HTTP/2 as
     *  stream 1 (aura_h2c.c), decided once for the request_rec h2c_of. */
    const request_rec *h2c_of;
    int h2c;
    /** Whether the verified bearer token may go on to the service: the
     *  plane's policy said so (aura_token_policy_t.forward), read by
     *  aura_forward_credentials() on the headers that leave. */
    int token_travels;
    /** The spans of a sampled request (trace/aura_span.h), the server
     *  span first; NULL when tracing is off or the request unsampled. */
    struct aura_spanset_t *spans;
    /** The HTTP path's upstream span (aura_httpproxy.c): its index + 1,
     *  0 none. */
    int http_span;
    /** The key and the token r was admitted with (aura_keystore.c and
     *  aura_jwks.c set them; aura_streamend.c reads them). */
    aura_cred_t cred;
    /** The HTTP path's watch of a stream's credential
     *  (aura_streamend.c), taken when mod_proxy connects, released by
     *  request_status() or with r->pool. */
    struct aura_streamend_t *http_watch;
} aura_request_private_t;

/** A new state for r, set in its request_config; never NULL. */
aura_request_t *aura_request_make(request_rec *r);
/** The private part of r's state; NULL when no plane took r in. */
aura_request_private_t *aura_request_private(request_rec *r);
/** r's route, NULL unless the routing stage decided one for this very
 *  request_rec. */
const aura_route_t *aura_request_route(request_rec *r);
/** The problem noted on this very request_rec: type NULL when none. */
const char *aura_request_problem(request_rec *r, const char **detail);

#endif /* AURA_REQUEST_H */
