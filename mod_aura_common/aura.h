/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura.h: the API mod_aura_common exports to the plane modules
 * (mod_aura_data, mod_aura_mgmt), in the way mod_proxy.h exports its API
 * to mod_proxy_http.  The plane modules link against these symbols at
 * load time, so mod_aura_common must be loaded first; they also retrieve
 * the optional function aura_common_api_version() in post_config and
 * refuse to start if its major number differs from AURA_API_MAJOR.
 *
 * Change list (newest last; bump AURA_API_MINOR for additions and
 * AURA_API_MAJOR for anything that breaks a plane module built earlier):
 *   2026-12-02  1.0  first API: planes, request setup, route claim,
 *                    problem notes, NATS state.
 *   2026-12-02  1.1  identity in aura_request_t; aura_auth_apikey,
 *                    aura_auth_bearer, aura_route_public,
 *                    aura_route_streaming, aura_cors_preflight.
 *   2026-12-02  1.2  aura_auth_console.
 *   2026-12-02  1.3  aura_limit_ip, aura_limit_actor.
 *   2026-12-02  1.4  AURA_NOTE_ORIGIN, AURA_NOTE_BUDGET (mod_aura_proxy).
 *   2026-12-02  1.5  aura_request_t.trace_id.
 *   2026-12-03  1.6  aura_request_path_check, aura_request_t.raw_path.
 *   2026-12-03  1.7  aura_request_t.traceparent, .tracestate.
 *   2026-12-03  1.8  aura_cors_policy_t, aura_request_t.cors: the plane
 *                    says which origins its CORS answers serve.
 *   2026-12-03  2.0  aura_auth_bearer takes the plane's
 *                    aura_token_policy_t (the console audience, the
 *                    project claim): mod_aura_common no longer decides
 *                    them by plane.
 *                    aura_auth_apikey leaves (mod_aura_data's door):
 *                    aura_key_identity_t, aura_key_lookup and
 *                    aura_store_retry_after (2.1) are the mechanism
 *                    it uses;
 *                    aura_limit_actor takes the caller's quota id;
 *                    aura_token_policy_t.audience, .audience_any (the
 *                    data plane's AuraJWTAudience, AuraJWTAudienceMatch).
 *                    aura_auth_console leaves: the console policy is
 *                    mod_aura_mgmt's own.
 *   2026-12-03  2.1  aura_store_member_role, aura_store_retry_after,
 *                    aura_keys_rotation_watch (for mod_aura_mgmt);
 *                    aura_request_t.cors_preflight.
 *   2026-12-03  2.2  aura_request_t.priv; aura_upstream_origin,
 *                    aura_upstream_budget replace the notes
 *                    AURA_NOTE_ORIGIN, AURA_NOTE_BUDGET (no longer set).
 *   2026-12-03  2.3  aura_request_h2c: the access checks leave an
 *                    Upgrade: h2c request to its HTTP/2 stream 1.
 *   2026-12-05  2.4  aura_client_prefix: the client address as the
 *                    limiters count it, for the anonymous quota's id.
 *   2026-12-06  2.5  aura_request_path_check refuses ";parameters";
 *                    aura_request_path_check_ex with
 *                    AURA_REQUEST_PATH_PARAMS admits them (the data
 *                    plane's AuraPathParams allow).
 *                    aura_request_t.query_keys: every key parameter of
 *                    the query, in any spelling; query_key is set only
 *                    when there is exactly one.
 *                    aura_token_policy_t.forward: whether a verified
 *                    token may go on to the service (0, the console's:
 *                    never); aura_route_forward_token (AuraForwardToken).
 *   2026-12-06  2.7  aura_control_key: the incident controls' key block
 *                    (the data plane's key door asks it).
 *   2026-12-06  2.8  aura_key_identity_t.expires_at, .scopes (issue
 *                    #32); aura_key_lookup answers AURA_KEY_EXPIRED
 *                    for a key past its expiry; aura_key_in_scope.
 */
#ifndef AURA_H
#define AURA_H

#include "httpd.h"
#include "http_config.h"
#include "apr_optional.h"
#include "http_log.h"

/**
 * @defgroup MOD_AURA mod_aura_common API
 * @{
 */

#define AURA_API_MAJOR 2
#define AURA_API_MINOR 8

/* The export trio, as mod_proxy.h, mod_dbd.h and mod_watchdog.h spell it.
 * The modules are built with -fvisibility=hidden: only what carries
 * AURA_DECLARE leaves mod_aura_common.so. */
#if !defined(WIN32)
#define AURA_DECLARE(type)        __attribute__((visibility("default"))) type
#define AURA_DECLARE_NONSTD(type) __attribute__((visibility("default"))) type
#define AURA_DECLARE_DATA         __attribute__((visibility("default")))
#else
#define AURA_DECLARE(type)        __declspec(dllexport) type __stdcall
#define AURA_DECLARE_NONSTD(type) __declspec(dllexport) type
#define AURA_DECLARE_DATA         __declspec(dllexport)
#endif

/* Every log line at DEBUG or above starts with its own tag, unique across
 * the three modules (build/check-log-tags enforces it; docs/errors.md
 * explains each one). */
#define AURA_LOGNO(n) "AURA" #n ": "

/** Which plane a VirtualHost serves (directive AuraPlane). */
typedef enum {
    AURA_PLANE_NONE = 0,   /**< not an aura VirtualHost: decline all */
    AURA_PLANE_DATA,       /**< public data plane (mod_aura_data) */
    AURA_PLANE_MGMT        /**< management plane (mod_aura_mgmt) */
} aura_plane_e;

/** A plane's CORS rule (the plane module owns it; mod_aura_common applies
 *  it to every response and preflight of the request).  Methods, headers,
 *  exposed headers and max-age come from AuraCORSAllow* of the
 *  VirtualHost, whatever the plane. */
typedef struct aura_cors_policy_t {
    /** 1: every origin, answered with "*" (no Vary: Origin). */
    int any_origin;
    /** Otherwise the origins answered, echoed with Vary: Origin and
     *  compared case-insensitively (const char *); NULL or empty: none.
     *  A preflight from another origin is refused (403 forbidden). */
    const apr_array_header_t *origins;
} aura_cors_policy_t;

/** Per-request state shared by the hooks of both planes. Lives in
 *  r->pool; found through aura_request_get(). Fields only grow at the
 *  end. */
typedef struct aura_request_t {
    aura_plane_e plane;
    /** X-Request-Id: the client's when well-formed, else generated. */
    const char *request_id;
    /** Start of the request, for durations. */
    apr_time_t start;
    /* 1.1: the verified identity, NULL until authentication set it.
     * Forwarded as Aura-Project, Aura-Org, Aura-Role, Aura-Key-Role,
     * Aura-Actor; a client can never set any of them. */
    const char *project;
    const char *org;
    const char *plan;
    const char *key_role;   /**< anon | service_role (from the key store) */
    const char *role;       /**< data: anon | authenticated | service_role;
                                 management: owner | admin | member */
    const char *actor;      /**< the JWT's sub, else key:<hash prefix> */
    /** The apikey query parameter, taken out of r->args and redacted from
     *  the request line; only streaming Locations may use it.  Since
     *  2.5: set only when the query had exactly one key parameter (any
     *  spelling, query_keys), "" when its value does not decode. */
    const char *query_key;
    /* 1.5: the W3C trace id (32 hex): the client's when its traceparent
     * was valid, else a new trace's. */
    const char *trace_id;
    /* 1.6: the path as the client sent it (still percent-encoded, no
     * query), taken by aura_request_begin before anything rewrites the
     * request line; NULL for "*" and CONNECT.  Forwarded as Aura-Path;
     * aura_request_path_check admits it only when its one decoding is
     * r->uri. */
    const char *raw_path;
    /* 1.7: the trace context the gateway forwards on both paths: its own
     * traceparent (its span as parent), and the client's tracestate when
     * its traceparent was valid (else NULL).  Kept here because every
     * client header of these names is dropped before forwarding. */
    const char *traceparent;
    const char *tracestate;
    /* 1.8: the plane's CORS rule for this request, set by the plane
     * module right after aura_request_begin(); NULL: no CORS headers,
     * and aura_cors_preflight() declines. */
    const aura_cors_policy_t *cors;
    /* 2.1: 1 when aura_cors_preflight() answered the request: the CORS
     * headers then include the preflight's.  mod_aura_common's own. */
    int cors_preflight;
    /* 2.2: what only mod_aura_common reads (the route, the problem
     * noted): core/aura_request.h; opaque to the plane modules. */
    struct aura_request_private_t *priv;
    /* 2.5: every key parameter the query had (apikey in any spelling,
     * case or encoding: aura_apikey_param_name), all taken out of r->args
     * before anything forwards it: their values (const char *), decoded,
     * in order, NULL for one that does not decode.  NULL when there was
     * none.  More than one is ambiguous: the data plane refuses it. */
    const apr_array_header_t *query_keys;
} aura_request_t;

/**
 * Optional function registered by mod_aura_common.
 * @return (AURA_API_MAJOR << 16) | AURA_API_MINOR of the loaded module.
 */
APR_DECLARE_OPTIONAL_FN(int, aura_common_api_version, (void));

/**
 * The plane a server (VirtualHost) serves.
 * @param s the request's server (r->server)
 * @return AURA_PLANE_NONE unless AuraPlane names a plane for it.
 */
AURA_DECLARE(aura_plane_e) aura_server_plane(const server_rec *s);

/**
 * The plane's name as it travels in Aura-Plane ("data", "management").
 * @return a static string; "none" for AURA_PLANE_NONE.
 */
AURA_DECLARE(const char *) aura_plane_name(aura_plane_e plane);

/**
 * Set up the per-request state: request id (kept from X-Request-Id when
 * well-formed, else generated) returned in X-Request-Id on every
 * response, errors included.  Call from post_read_request, for initial
 * requests only; internal redirects find the state of r->prev.
 * @param r the request
 * @param plane the caller's plane
 * @return the state, allocated from r->pool; never NULL.
 */
AURA_DECLARE(aura_request_t *) aura_request_begin(request_rec *r,
                                                  aura_plane_e plane);

/**
 * Refuse a raw request path that httpd's normalization would change
 * (dot-segments, encoded dot-segments, encoded slashes or backslashes,
 * control characters, invalid escapes, empty segments: aura_path.h), or
 * that holds a ";" (raw or %3B: segment parameters, which some services
 * drop and httpd's rules keep), so that the path every rule decides on
 * is the path a service receives (docs/envelope.md, "One path").  Call
 * from post_read_request after aura_request_begin(), and return what it
 * returns.
 * @param r the request
 * @return DECLINED when the path is acceptable (or the request is not an
 *         initial one), HTTP_BAD_REQUEST otherwise (problem
 *         path-parameters for a ";" in an otherwise normal path,
 *         invalid-request for the rest).
 */
AURA_DECLARE(int) aura_request_path_check(request_rec *r);

/** aura_request_path_check_ex: admit ";parameters" (a plane whose
 *  services all take ";" as a character of a name). */
#define AURA_REQUEST_PATH_PARAMS 0x1

/**
 * aura_request_path_check with flags (2.5).
 * @param r the request
 * @param flags 0 (as aura_request_path_check) or
 *        AURA_REQUEST_PATH_PARAMS
 * @return as aura_request_path_check
 */
AURA_DECLARE(int) aura_request_path_check_ex(request_rec *r, int flags);

/**
 * The state made by aura_request_begin() for this request or the request
 * it was redirected from.
 * @return NULL when no plane module claimed the request.
 */
AURA_DECLARE(aura_request_t *) aura_request_get(request_rec *r);

/**
 * Whether httpd is about to turn this HTTP/1.1 request into stream 1 of
 * an HTTP/2 connection (Upgrade: h2c that mod_http2 takes): the stream
 * goes through every hook again, credentials and all, so the plane's
 * access checks must leave this one alone and let the stream be
 * authenticated and counted, once (docs/http2.md).  Call from
 * access_checker_ex; decided once per request.  Should httpd not switch
 * after all, the request is refused (500) before any handler serves it.
 * @param r the request (aura_request_begin() already called)
 * @return 1 to skip the policy, 0 otherwise
 */
AURA_DECLARE(int) aura_request_h2c(request_rec *r);

/**
 * Claim a request whose Location names a service (AuraService): from
 * translate_name, run before mod_proxy and mod_rewrite.  Sets the
 * handler that proxies it, and refuses a declared body the NATS server
 * could never carry (413) before anything else reads it.
 * @param r the request (aura_request_begin() already called)
 * @return OK when claimed, DECLINED when the Location has no service, or
 *         an HTTP error status.
 */
AURA_DECLARE(int) aura_route_claim(request_rec *r);

/**
 * Record why the gateway refuses a request, for the problem+json body
 * (RFC 9457) that replaces httpd's error page.  Call it, then return the
 * status from the hook.
 * @param r the request
 * @param type one of the problem types of DESIGN.md section 8, without
 *        the "/problems/" prefix (e.g. "no-upstream"); a static string
 * @param detail human-readable text; never a secret; copied
 */
AURA_DECLARE(void) aura_problem_note(request_rec *r, const char *type,
                                     const char *detail);

/**
 * Whether this child's NATS connection is up right now.
 * @return 1 when connected, 0 otherwise (connecting, reconnecting,
 *         closed, or not opened in this process).
 */
AURA_DECLARE(int) aura_nats_connected(void);

/**
 * For the plane modules' post_config: refuse to start unless a
 * compatible mod_aura_common is loaded.  Inline, so it works exactly
 * when mod_aura_common is missing.
 * @param s the main server
 * @param plane_module the caller's name, for the message
 * @return OK, or HTTP_INTERNAL_SERVER_ERROR after logging why
 */
static APR_INLINE int aura_api_check(server_rec *s, const char *plane_module)
{
    APR_OPTIONAL_FN_TYPE(aura_common_api_version) *version =
        APR_RETRIEVE_OPTIONAL_FN(aura_common_api_version);

    if (!version || (version() >> 16) != AURA_API_MAJOR) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
                     AURA_LOGNO(00100) "%s needs mod_aura_common API %d.x, "
                     "found %s: load mod_aura_common first, from the same "
                     "build", plane_module, AURA_API_MAJOR,
                     version ? "another major version" : "none");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return OK;
}

/**
 * Whether the Location needs no credential (AuraPublic On).
 */
AURA_DECLARE(int) aura_route_public(request_rec *r);

/**
 * Whether the Location streams (AuraStreaming On): WebSocket or SSE,
 * where browsers cannot set headers, so ?apikey= is accepted there.
 */
AURA_DECLARE(int) aura_route_streaming(request_rec *r);

/**
 * Whether the Location lets a user's verified bearer token go on to its
 * service (AuraForwardToken; unset: On where AuraDBRouter is On, whose
 * PostgREST and aura-db take the user's role from the token, Off
 * elsewhere).  The plane decides whether to honour it (the data plane
 * does, through aura_token_policy_t.forward; the management plane never
 * forwards a console token).
 */
AURA_DECLARE(int) aura_route_forward_token(request_rec *r);

/** What the key store says about an API key (aura_key_lookup). */
typedef struct aura_key_identity_t {
    const char *project;
    const char *org;
    const char *plan;
    const char *key_role;   /**< anon | service_role */
    const char *actor;      /**< key:<hash prefix>, never the key; set
                                 whatever the answer, for the logs */
    /** 2.7: when the key stops working (µs since the epoch, the key
     *  store's expires_at); 0 when it has no expiry. */
    apr_time_t expires_at;
    /** 2.7: the services and Location groups the key may call, joined
     *  by ','; NULL when it has no scopes (every service). */
    const char *scopes;
} aura_key_identity_t;

/** aura_key_lookup: the key exists but is past its expires_at. */
#define AURA_KEY_EXPIRED (APR_OS_START_USERERR + 3200)

/**
 * Look an API key up in the key store (Postgres), through this child's
 * cache (AuraKeyCacheTTL, AuraKeyCacheStaleMax).  The key must be
 * well-formed (aura_apikey.h): junk is refused by the caller unlooked.
 * @param r the request
 * @param key the key
 * @param id set to the key's identity; id->actor in every case
 * @return APR_SUCCESS; APR_NOTFOUND for an unknown or revoked key;
 *         AURA_KEY_EXPIRED for a key past its expiry (id filled: the
 *         refusal may name the project), decided on every use, cached
 *         or not, so the key stops at that instant on every child;
 *         APR_EINVAL when its row cannot be an identity (logged);
 *         another error when the store cannot say (then answer 503 with
 *         aura_store_retry_after()).
 */
AURA_DECLARE(apr_status_t) aura_key_lookup(request_rec *r, const char *key,
                                           aura_key_identity_t *id);

/**
 * Whether a key's scopes admit the request's Location: they name its
 * service (AuraService's first word) or its group (AuraKeyScope).  A
 * key without scopes is admitted everywhere; a scoped key on a Location
 * that has neither is not (fail closed).
 * @param r the request, its Location's configuration merged
 * @param id a key aura_key_lookup() answered APR_SUCCESS for
 * @return 1 when admitted, 0 when not
 */
AURA_DECLARE(int) aura_key_in_scope(request_rec *r,
                                    const aura_key_identity_t *id);

/** What a plane asks of a bearer token on top of the VirtualHost's
 *  AuraJWT* keys and settings (algorithms, leeway, issuer, length). */
typedef struct aura_token_policy_t {
    /** Non-NULL: aud must be exactly this (or an array whose only member
     *  it is), whatever audience and audience_any say. */
    const char *audience_exact;
    /** Non-NULL: the token must carry this claim, equal to the project
     *  already in the request state (the API key's). */
    const char *project_claim;
    /** With audience_exact NULL, audience set: 1, an aud array that
     *  contains it among others is accepted; 0, every member must be it
     *  (OpenID Connect). */
    int audience_any;
    /** With audience_exact NULL: non-NULL, aud must be this string (an
     *  array: as audience_any says); NULL, aud is not checked. */
    const char *audience;
    /** 2.5: 1, the verified token goes on to the service as
     *  "Authorization: Bearer <token>"; 0 (what a plane that does not
     *  set it gets), it stays at the gateway: Authorization is removed
     *  once verified, and the service has the identity headers. */
    int forward;
} aura_token_policy_t;

/**
 * Verify an "Authorization: Bearer" token against the VirtualHost's
 * AuraJWT* keys and settings and the plane's policy.  On success sets
 * the actor (sub), role "authenticated" and r->user.
 * @param r the request
 * @param policy the plane's demands; never NULL
 * @return DECLINED when there is no bearer token; OK; 401 (invalid-token)
 *         with the problem noted: an invalid token is never a silent
 *         downgrade to anonymous.
 */
AURA_DECLARE(int) aura_auth_bearer(request_rec *r,
                                   const aura_token_policy_t *policy);

/** What a membership lookup names: a project (its organization's
 *  membership counts) or an organization. */
typedef enum {
    AURA_MEMBER_OF_PROJECT = 1,
    AURA_MEMBER_OF_ORG
} aura_member_of_e;

/**
 * The organization role of a user, from the key store (Postgres), on
 * every call, uncached: a member removed from the organization is
 * refused on the very next request.
 * @param r the request (its pool holds the results)
 * @param of whether id is a project or an organization
 * @param id the project or organization id
 * @param user the user (a console token's sub)
 * @param org set to the organization (id itself for AURA_MEMBER_OF_ORG)
 * @param role set to the role as stored (e.g. "member", "admin")
 * @return APR_SUCCESS; APR_NOTFOUND when the user is not a member (or
 *         there is no such project: the same answer, so existence does
 *         not leak); anything else when the store cannot answer (answer
 *         503 store-unavailable with aura_store_retry_after()).
 */
AURA_DECLARE(apr_status_t) aura_store_member_role(request_rec *r,
                                                  aura_member_of_e of,
                                                  const char *id,
                                                  const char *user,
                                                  const char **org,
                                                  const char **role);

/**
 * The Retry-After of a 503 store-unavailable after a key store lookup
 * failed for r: the store breaker's cooldown left, else "1".
 * @return a string in r->pool (or static)
 */
AURA_DECLARE(const char *) aura_store_retry_after(request_rec *r);

/**
 * Mark the request as a key rotation: when its answer has a 2xx status
 * and the request state names a project, the project id is published
 * on AuraKeyInvalidationSubject before the client sees the answer, and
 * every child of every instance drops that project's cached keys.  Call
 * from insert_filter.
 * @param r the request; nothing happens unless a plane took it in
 */
AURA_DECLARE(void) aura_keys_rotation_watch(request_rec *r);

/**
 * Answer a CORS preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) before anything else runs: no
 * credential, no limiter.  Call from quick_handler, after setting the
 * request state's cors policy.
 * @return HTTP_NO_CONTENT (the CORS headers are added by the response
 *         filter), 403 (forbidden) when the policy does not answer the
 *         origin, or DECLINED when the request is not a preflight or
 *         the plane has no CORS policy.
 */
AURA_DECLARE(int) aura_cors_preflight(request_rec *r);

/**
 * Stage 1 of rate limiting: the client address's zone (AuraRateLimit,
 * else the "default" zone), before any credential is looked at.  Call
 * first thing in access_checker_ex, for initial requests only.
 * @return OK, or 429 (ip-rate-limit) with Retry-After and RateLimit
 *         headers and the problem noted.
 */
AURA_DECLARE(int) aura_limit_ip(request_rec *r);

/**
 * The client address as the limiters count it (r->useragent_addr, so
 * mod_remoteip's client when it set one): "4:" and the IPv4 address in
 * hex, or "6:" and the hex of an IPv6 address's leading
 * AuraRateLimitIPv6Prefix bits; the same on every instance, so that a
 * quota id built from it is shared through Redis.
 * @return a string in r->pool
 */
AURA_DECLARE(const char *) aura_client_prefix(request_rec *r);

/**
 * Stage 2: the authenticated actor's quota (AuraActorQuota, or the
 * project plan's AuraPlanQuota), shared through Redis, else this
 * instance's share.  Call right after authentication succeeded.
 * @param r the request
 * @param id the quota's id, built by the plane from the verified
 *        identity (two actors must never share one); NULL: no actor
 *        (public routes), the request passes
 * @return OK (RateLimit headers set), or 429 (actor-quota).
 */
AURA_DECLARE(int) aura_limit_actor(request_rec *r, const char *id);

/**
 * The HTTP upstream the routing stage sent this request to (at
 * translate_name, or the /v1/db router at fixups), for mod_aura_proxy's
 * pooled worker: its origin, scheme://host[:port] (ws:// or wss:// for a
 * WebSocket upgrade).
 * @return NULL unless r goes to an HTTP upstream through mod_proxy.
 */
AURA_DECLARE(const char *) aura_upstream_origin(request_rec *r);

/**
 * The route's budget for that upstream: the worker's I/O timeout.
 * @return the budget; 0 when aura_upstream_origin(r) is NULL.
 */
AURA_DECLARE(apr_interval_time_t) aura_upstream_budget(request_rec *r);

/** What an audit record says about an action, besides who, when, from
 *  where and the request id, which aura_audit_write() takes from the
 *  request (docs/audit.md).  Fields only grow at the end. */
typedef struct aura_audit_entry_t {
    /** "request" for a request sent to a service; an incident control
     *  names itself (e.g. "breaker.force-open").  Never NULL. */
    const char *action;
    /** What the action concerns when the identity does not say it: the
     *  project or organization a refused request named, a control's
     *  service or address; NULL none. */
    const char *target;
    const char *method;
    /** The Location that matched; NULL none. */
    const char *route;
    /** The AuraService of that Location; NULL none. */
    const char *service;
    /** The path as the client sent it, never the query. */
    const char *path;
    /** The final HTTP status; 0 none. */
    int status;
    /** The problem type the gateway refused with; NULL none. */
    const char *problem;
    /** 1 when the plane's authorization let the action through. */
    int authorized;
    /** "executed", "refused" or "unknown" (docs/audit.md). */
    const char *outcome;
} aura_audit_entry_t;

/**
 * Fill an audit entry from a finished request: method, route, service,
 * path, final status (of the last request of an internal redirect
 * chain), the problem noted, and the outcome that follows from it;
 * action "request", target NULL, authorized 0 (the plane decides).  Call
 * from log_transaction.
 * @param r the request log_transaction was called with
 * @param e the entry to fill
 * @return 1 when r is a request to record (initial, taken in by a
 *         plane, not the 101 of an Upgrade: h2c, whose stream 1 is
 *         recorded instead); 0 otherwise, e untouched
 */
AURA_DECLARE(int) aura_audit_entry_from(request_rec *r,
                                        aura_audit_entry_t *e);

/**
 * Append one record to the audit log (AuraAuditLog): the entry, with
 * the request's verified identity (actor, role, org, project), its
 * arrival time, client address and request id, chained to the record
 * before (its SHA-256) under the aura-audit mutex, and synced to disk
 * before the lock is released.  Exactly one record per call: call it
 * once per action.
 * @param r the request that carried the action (its pool is used)
 * @param e what to record
 * @return APR_SUCCESS; APR_NOTFOUND when no AuraAuditLog is set;
 *         another error when the record could not be written (logged
 *         with the record itself)
 */
AURA_DECLARE(apr_status_t) aura_audit_write(request_rec *r,
                                            const aura_audit_entry_t *e);

/**
 * The incident controls' block of an API key (docs/console.md): call it
 * once the key is parsed, before it is looked up, so that a blocked key
 * costs no key store query.  The key is named as the logs name it,
 * key:<hash prefix>; it is hashed only while some control is in force.
 * @param r the request
 * @param key the key as presented
 * @return OK, or HTTP_FORBIDDEN with the problem "blocked" noted
 */
AURA_DECLARE(int) aura_control_key(request_rec *r, const char *key);

/** @} */
#endif /* AURA_H */
