/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_httpproxy.c: the HTTP path (DESIGN.md section 3).  A Location
 * whose AuraService names an http(s):// upstream is handed to Apache's
 * mod_proxy, not to a client of our own: mod_proxy_http streams bodies
 * both ways, tunnels WebSocket upgrades and passes SSE on as it comes.
 *
 *   translate_name  aura_route_claim() -> aura_http_claim(): the request
 *                   becomes a reverse-proxy request for the upstream URL
 *                   (exactly what ProxyPass does), its route (request
 *                   state) saying which origin and which budget; a
 *                   WebSocket upgrade goes to ws(s)://
 *   fixups          aura_route_fixups() (the /v1/db router may turn a
 *                   NATS request into one of these) -> aura_http_fixups():
 *                   the verified identity replaces whatever the client
 *                   sent in the gateway's namespace, and the breaker of
 *                   the service (or of the dedicated target) is asked
 *   proxy fixups    mod_proxy's hook, on the upstream request's headers
 *                   after hop-by-hop processing: the identity again, so
 *                   that no Connection token and no module removes it
 *   mod_proxy       mod_aura_proxy picks a pooled worker per (origin,
 *                   budget) for the request (pre_request hook)
 *   request_status  the outcome feeds the breaker (DESIGN.md section 8);
 *                   mod_proxy's 502 for a response timeout becomes the
 *                   client's 504 upstream-timeout
 *
 * mod_proxy's own hooks used here (fixups, create_req, request_status)
 * are optional hooks: nothing links against mod_proxy.so, and the load
 * order does not matter.  Choosing the worker needs mod_proxy's
 * pre_request hook, an ordinary one, hence the small mod_aura_proxy
 * loaded after mod_proxy.
 */
#include "core/aura_module.h"
#include "auth/aura_jwks.h"
#include "core/aura_config.h"
#include "core/aura_request.h"
#include "http/aura_headers.h"
#include "http/aura_httpproxy.h"
#include "http/aura_origin.h"
#include "nats/aura_envelope.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_bulkhead.h"
#include "resilience/aura_gone.h"
#include "resilience/aura_streamend.h"
#include "resilience/aura_streams.h"
#include "shm/aura_shm.h"
#include "trace/aura_tracing.h"

#include "http_core.h"
#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"
#include "apr_lib.h"
#include "mod_proxy.h"

/* A request the routing stage sent through mod_proxy. */
static int is_ours(request_rec *r)
{
    return r->proxyreq == PROXYREQ_REVERSE
           && aura_upstream_origin(r) != NULL;
}

/* The path after the Location's prefix, for a <Location> with a plain
 * prefix, and the "/" to put before it; the whole path otherwise
 * (LocationMatch, or no match), with "". */
static const char *path_rest(const request_rec *r, const aura_dir_conf_t *d,
                             const char **sep)
{
    const char *rest;

    *sep = "";
    if (!d->location || strncmp(r->uri, d->location, d->location_len)) {
        return r->uri;
    }
    /* "/v1/storage" and "/v1/storage/" map alike: one slash between. */
    for (rest = r->uri + d->location_len; *rest == '/'; rest++) {
        continue;
    }
    *sep = "/";
    return rest;
}

static int wants_websocket(const request_rec *r)
{
    const char *up = apr_table_get(r->headers_in, "Upgrade");

    return up && ap_find_token(r->pool, up, "websocket");
}

/* Point r at url through mod_proxy; route (its origin and budget, read
 * by mod_aura_proxy for the pooled worker) is r's, in its state. */
/* r goes to mod_proxy, as a reverse proxy request for filename
 * ("proxy:" and the URL). */
static void to_proxy(request_rec *r, const char *filename)
{
    r->filename = (char *)filename;
    r->handler = "proxy-server";
    r->proxyreq = PROXYREQ_REVERSE;
}

void aura_http_target(request_rec *r, aura_route_t *route, const char *url)
{
    if (wants_websocket(r)) {
        url = aura_ws_url(r->pool, url);
        route->origin = aura_ws_url(r->pool, route->origin);
    }
    to_proxy(r, apr_pstrcat(r->pool, "proxy:", url, NULL));
}

/* The upstream I/O timeout of a route: its budget, or on a streaming
 * Location its idle timeout when one is set (a whole-response budget
 * would kill a healthy stream). */
static apr_interval_time_t io_timeout(const aura_dir_conf_t *d)
{
    if (d->streaming == 1 && d->stream_idle != AURA_UNSET) {
        return d->stream_idle;
    }
    return aura_route_timeout(d);
}

/* The Location's upstream was put together when AuraService was read
 * (aura_http_upstream_t): only the request's own path is added here. */
int aura_http_claim(request_rec *r, const aura_dir_conf_t *d,
                    aura_route_t *route)
{
    const aura_http_upstream_t *u = d->http;
    int ws = wants_websocket(r);
    const char *sep, *rest = path_rest(r, d, &sep);

    route->origin = ws ? u->ws_origin : u->origin;
    route->budget = io_timeout(d);
    to_proxy(r, apr_pstrcat(r->pool, ws ? u->ws_filename : u->filename,
                            sep, rest, NULL));
    return OK;
}

/* The identity headers of a request, in the order they are added.  The
 * names are these arrays' own addresses, so that proxy_fixups() can tell
 * the entries set here from any other spelling by address. */
static const char hdr_request_id[] = AURA_HDR_REQUEST_ID;
static const char hdr_x_request_id[] = "X-Request-Id";
static const char hdr_plane[] = AURA_HDR_PLANE;
static const char hdr_project[] = AURA_HDR_PROJECT;
static const char hdr_org[] = AURA_HDR_ORG;
static const char hdr_role[] = AURA_HDR_ROLE;
static const char hdr_key_role[] = AURA_HDR_KEY_ROLE;
static const char hdr_actor[] = AURA_HDR_ACTOR;
static const char hdr_traceparent[] = AURA_HDR_TRACEPARENT;
static const char hdr_tracestate[] = AURA_HDR_TRACESTATE;
static const char hdr_x_project_id[] = "X-Project-Id";

#define IDENTITY_MAX 11
typedef struct {
    const char *name;
    const char *value;
} identity_t;

static int identity_of(const aura_request_t *rq, identity_t *id)
{
    int n = 0;

#define IDENTITY(h, v) if (v) { id[n].name = h; id[n].value = v; n++; }
    IDENTITY(hdr_request_id, rq->request_id);
    IDENTITY(hdr_x_request_id, rq->request_id);
    IDENTITY(hdr_plane, aura_plane_name(rq->plane));
    IDENTITY(hdr_project, rq->project);
    IDENTITY(hdr_org, rq->org);
    IDENTITY(hdr_role, rq->role);
    IDENTITY(hdr_key_role, rq->key_role);
    IDENTITY(hdr_actor, rq->actor);
    IDENTITY(hdr_traceparent, rq->traceparent);
    IDENTITY(hdr_tracestate, rq->tracestate);
    /* The project verified, never the client's claim (AuraScope may
     * have read the project from the path, or none: an org). */
    IDENTITY(hdr_x_project_id, rq->project);
#undef IDENTITY
    return n;
}

static void set_identity(request_rec *r, const identity_t *id, int n)
{
    apr_table_t *t = r->headers_in;
    int i;

    aura_unset_owned(r->pool, t);
    aura_forward_credentials(r, t);
    /* Nothing of the namespace is left: added, not set, since set would
     * compare each name with every other that begins with "Aura" (one
     * checksum for all of them in an apr table). */
    for (i = 0; i < n; i++) {
        apr_table_addn(t, id[i].name, id[i].value);
    }
}

/* Whether the only headers of the gateway's namespace in r->headers_in
 * are the entries set_identity() added, untouched and in order: an apr
 * table's copy keeps the very name and value pointers, and anything that
 * removed, replaced or added such a header since breaks the match. */
static int identity_intact(request_rec *r, const identity_t *id, int n)
{
    const apr_array_header_t *a = apr_table_elts(r->headers_in);
    const apr_table_entry_t *e = (const apr_table_entry_t *)a->elts;
    int i, k = 0;

    for (i = 0; i < a->nelts; i++) {
        /* Ours are known by address, without reading their names. */
        if (k < n && e[i].key == id[k].name) {
            if (e[i].val != id[k].value) {
                return 0;
            }
            k++;
        }
        else if (aura_envelope_own_header(e[i].key)) {
            return 0;
        }
    }
    return k == n;
}

/* mod_proxy's own fixups hook, run inside ap_proxy_create_hdrbrgd() on
 * the copy of r->headers_in that becomes the upstream request, after
 * ap_proxy_clear_connection() removed the headers the client's
 * Connection header names and right before the headers are written
 * (httpd 2.4 proxy_util.c).  Set here, last of that hook, the identity
 * is what the upstream gets whatever the client listed in Connection
 * (Connection: close, Aura-Role would otherwise remove ours) and
 * whatever module edited the request headers since our fixups.  Usually
 * nothing did: the copy still holds what aura_http_fixups() set, which
 * is then checked, not removed and added again. */
static int proxy_fixups(request_rec *r)
{
    identity_t id[IDENTITY_MAX];
    int n;

    if (!is_ours(r)) {
        return DECLINED;
    }
    n = identity_of(aura_request_get(r), id);
    if (identity_intact(r, id, n)) {
        aura_forward_credentials(r, r->headers_in);
    }
    else {
        set_identity(r, id, n);
    }
    /* Not wants_websocket(): this copy has lost its Upgrade header by
     * now; aura_http_target() chose a ws(s):// URL for an upgrade. */
    if (r->filename && !strncasecmp(r->filename, "proxy:ws", 8)) {
        aura_headers_arm_upgrade(r);
    }
    return OK;
}

/* The upstream call's span (OpenTelemetry's HTTP client conventions:
 * named by the method), ended by request_status() or with the request.
 * Its id is the parent id of the traceparent the upstream receives. */
static void http_span_start(request_rec *r, const aura_route_t *route)
{
    aura_request_private_t *p = aura_request_private(r);
    int span = aura_tracing_start(r, 0, r->method_number != M_INVALID
                                        ? r->method : "_OTHER",
                                  AURA_SPAN_CLIENT,
                                  aura_tracing_client_id(r));

    aura_tracing_attr_str(r, span, "http.request.method", r->method);
    aura_tracing_attr_str(r, span, "aura.upstream.origin", route->origin);
    p->http_span = span + 1;
}

static void http_span_end(request_rec *r, aura_request_private_t *p,
                          int status)
{
    int span = p->http_span - 1;

    if (span < 0) {
        return;
    }
    p->http_span = 0;
    if (status == OK) {
        aura_tracing_attr_int(r, span, "http.response.status_code",
                              r->status);
    }
    /* Client spans: 4xx is an error too (the conventions). */
    aura_tracing_end(r, span, (status == OK || status == DONE)
                              && r->status < 400 ? AURA_SPAN_UNSET
                                                 : AURA_SPAN_ERROR,
                     p->problem_type);
}

/* Right before mod_proxy contacts the upstream (aura_route_fixups, once
 * the route is final): identity, breaker, and a slot of the service and
 * plane caps (aura_bulkhead.c), given back by request_status() once
 * mod_proxy is done, or with r->pool. */
int aura_http_fixups(request_rec *r, const aura_route_t *route)
{
    aura_breaker_hold_t *hold = NULL;
    const aura_dir_conf_t *d = aura_dir_conf(r);
    aura_cap_hold_t *slot = NULL;
    aura_request_private_t *p = aura_request_private(r);
    identity_t id[IDENTITY_MAX];
    int identity_n, rc;

    /* A request that waited for a worker after its client left is not
     * sent (DESIGN.md section 9), and takes no probe.  Once mod_proxy
     * has sent it, it waits on the upstream alone: see
     * docs/resilience.md. */
    if (aura_client_gone(r)) {
        return aura_client_abandoned(r, "before-send", d->upstream);
    }
    identity_n = identity_of(aura_request_get(r), id);
    set_identity(r, id, identity_n);
    /* A dedicated PostgREST has a breaker of its own: one dead target
     * leaves the others alone. */
    rc = aura_breaker_enter(r, d->service, route->target, &hold);
    if (rc != OK) {
        return rc;
    }
    p->http_hold = hold;
    /* A dedicated target counts against the db service's cap: the
     * targets share its slots (docs/resilience.md).  A stream (any
     * response of a streaming Location, a WebSocket tunnel) takes the
     * long-lived budget instead (aura_streams.c). */
    if (d->streaming == 1 || wants_websocket(r)) {
        rc = aura_stream_enter(r, d->service, &slot);
        /* The stream's upstream connection is its own, never pooled:
         * the stream's watch may shut its socket down when the
         * credential dies (aura_streamend.c). */
        apr_table_setn(r->subprocess_env, "proxy-nokeepalive", "1");
    }
    else {
        rc = aura_cap_enter(r, d->service, &slot);
    }
    if (rc != OK) {
        return rc;
    }
    p->http_slot = slot;
    http_span_start(r, route);
    return DECLINED;
}

/* After mod_proxy's attempt(s): the breaker's verdict, and the client's
 * error in our words.  *status is mod_proxy's outcome: OK (the upstream
 * answered, r->status is its status), 503 (it could not connect), 502
 * (a broken or timed-out response: the note proxy_timedout says which),
 * 504 (sending the body timed out), DONE (the client went away, or the
 * upstream broke the body off after the headers). */
static int request_status(int *status, request_rec *r)
{
    aura_request_private_t *p;
    aura_breaker_hold_t *hold;

    if (!is_ours(r)) {
        return DECLINED;
    }
    p = aura_request_private(r);
    hold = p->http_hold;
    /* mod_proxy is done with the upstream (and with this worker). */
    aura_cap_leave(p->http_slot);
    aura_streamend_unwatch(p->http_watch);
    p->http_watch = NULL;
    switch (*status) {
    case OK:
        aura_breaker_verdict(hold, aura_breaker_status_ok(r->status));
        break;
    case DONE:
        /* After a WebSocket tunnel: the upstream took the upgrade, and
         * a session that ends is no failure.  Otherwise the upstream broke
         * the body off, unless the client left (that says nothing). */
        if (r->status == HTTP_SWITCHING_PROTOCOLS) {
            aura_breaker_verdict(hold, 1);
        }
        else if (!r->connection->aborted) {
            aura_breaker_verdict(hold, 0);
        }
        else if (r->eos_sent) {
            /* The whole answer went down the filters (EOS passed) before
             * the connection was seen aborted: on HTTP/2 mod_http2 marks
             * the stream's connection so once the client has it, and
             * mod_proxy then says DONE.  The upstream answered: its
             * status is the verdict, or a probe is given back unjudged
             * and failures are never counted. */
            aura_breaker_verdict(hold, aura_breaker_status_ok(r->status));
        }
        break;
    case HTTP_BAD_GATEWAY:
        aura_breaker_verdict(hold, 0);
        if (apr_table_get(r->notes, "proxy_timedout")) {
            *status = HTTP_GATEWAY_TIME_OUT;
            aura_count(AURA_CTR_HTTP_TIMEOUTS);
            aura_problem_note(r, "upstream-timeout", "the service did not "
                              "answer within the route's budget");
        }
        else {
            aura_problem_note(r, "upstream-error", "the service's answer "
                              "was broken off or malformed");
        }
        break;
    case HTTP_SERVICE_UNAVAILABLE:
        aura_breaker_verdict(hold, 0);
        aura_problem_note(r, "upstream-error",
                          "the service cannot be reached");
        break;
    case HTTP_GATEWAY_TIME_OUT:
        aura_breaker_verdict(hold, 0);
        aura_count(AURA_CTR_HTTP_TIMEOUTS);
        aura_problem_note(r, "upstream-timeout", "the service did not take "
                          "the request within the route's budget");
        break;
    default:
        break;      /* refused before contacting it: released */
    }
    http_span_end(r, p, *status);
    return OK;
}

/* ---- streaming timeouts ------------------------------------------------
 * mod_proxy has one timeout per worker, applied to every read of the
 * upstream: on a streaming Location that is the idle timeout (above).
 * The first-byte timeout is the backend socket's timeout from the moment
 * mod_proxy made the backend request (its create_req hook) until the
 * first response bytes pass our output filter, which puts the idle
 * timeout back.  The maximum duration is checked by that filter on every
 * piece of the body: it ends the response, logged.  A WebSocket tunnel
 * writes straight to the connection, past request filters: there only
 * the idle timeout holds (docs/http-upstreams.md). */

#define STREAM_KEY "aura-http-stream"
#define STREAM_FILTER "AURA_STREAM"

typedef struct {
    apr_socket_t *sock;         /* the backend's, while first byte awaited */
    apr_interval_time_t idle;
    int answered;
    int cut;
} stream_ctx_t;

static ap_filter_rec_t *stream_filter;

static int streaming_route(request_rec *r)
{
    return is_ours(r) && aura_dir_conf(r)->streaming == 1;
}

static void watch_stream(request_rec *r, request_rec *rp);

static int create_req(request_rec *r, request_rec *rp)
{
    const aura_dir_conf_t *d;
    stream_ctx_t *ctx = NULL;

    if (is_ours(r) && (streaming_route(r) || wants_websocket(r))) {
        watch_stream(r, rp);
    }
    if (!streaming_route(r)) {
        return OK;
    }
    d = aura_dir_conf(r);
    apr_pool_userdata_get((void **)&ctx, STREAM_KEY, r->pool);
    /* A tunnel's 101 never passes the filter that would restore the idle
     * timeout: upgrades keep the worker's (idle) timeout throughout. */
    if (!ctx || d->stream_first_byte == AURA_UNSET || wants_websocket(r)) {
        return OK;
    }
    ctx->sock = ap_get_conn_socket(rp->connection);
    ctx->idle = io_timeout(d);
    apr_socket_timeout_set(ctx->sock, d->stream_first_byte);
    return OK;
}

/* ---- streams that end with their credential --------------------------
 * The watch (aura_streamend.c) shuts the upstream's socket down when
 * the credential dies; mod_proxy, waiting on it, wakes up on this very
 * thread and ends the response (EOF: it finishes it; a broken chunked
 * body: an error bucket and EOS).  Here the end becomes the client's:
 *   - an SSE stream (text/event-stream) ends cleanly: whatever was read
 *     before, then a final event "aura-stream-end" whose data is the
 *     reason, then the last chunk (the error bucket is dropped, so the
 *     chunk filter writes it); an EventSource sees the event, then the
 *     end, and reconnects with its credential: refused if dead;
 *   - another streaming response is aborted as at its maximum duration
 *     (no last chunk: the client knows it was cut short);
 *   - a WebSocket tunnel bypasses the request's filters: an input
 *     filter on the upstream connection (the tunnel reads through it)
 *     puts a close frame 1008 (policy violation) after the last whole
 *     frame, then says EOF; the tunnel half-closes the client side, the
 *     client answers the close, and both connections close. */

#define WS_END_FILTER "AURA_WS_END"

typedef struct {
    aura_streamend_t *watch;
    aura_ws_tracker_t tracker;
    int untrackable;           /* framing not followed: no close frame */
    int closed;                /* the close frame is out: EOF from now */
} ws_end_ctx_t;

static ap_filter_rec_t *ws_end_filter;

static void track_brigade(ws_end_ctx_t *ctx, apr_bucket_brigade *bb)
{
    apr_bucket *b;

    for (b = APR_BRIGADE_FIRST(bb);
         b != APR_BRIGADE_SENTINEL(bb) && !ctx->untrackable;
         b = APR_BUCKET_NEXT(b)) {
        const char *data;
        apr_size_t len;

        if (APR_BUCKET_IS_METADATA(b)) {
            continue;
        }
        if (apr_bucket_read(b, &data, &len, APR_BLOCK_READ) != APR_SUCCESS
            || aura_ws_track(&ctx->tracker, (const unsigned char *)data,
                             len) != 0) {
            ctx->untrackable = 1;
        }
    }
}

static apr_status_t ws_end_in_filter(ap_filter_t *f, apr_bucket_brigade *bb,
                                     ap_input_mode_t mode,
                                     apr_read_type_e block,
                                     apr_off_t readbytes)
{
    ws_end_ctx_t *ctx = f->ctx;
    apr_status_t rv;
    int reason;

    if (ctx->closed) {
        return APR_EOF;
    }
    rv = ap_get_brigade(f->next, bb, mode, block, readbytes);
    if (rv == APR_SUCCESS) {
        track_brigade(ctx, bb);
    }
    reason = aura_streamend_reason(ctx->watch);
    if (!reason) {
        return rv;
    }
    if (rv == APR_SUCCESS && !APR_BRIGADE_EMPTY(bb)
        && !aura_ws_at_boundary(&ctx->tracker)) {
        return rv;             /* the frame in flight goes first */
    }
    ctx->closed = 1;
    if (ctx->untrackable || !aura_ws_at_boundary(&ctx->tracker)) {
        /* A frame broken off: no frame of ours inside it, only EOF. */
        return APR_SUCCESS == rv && !APR_BRIGADE_EMPTY(bb) ? rv : APR_EOF;
    }
    {
        unsigned char frame[AURA_WS_CLOSE_MAX];
        apr_size_t n = aura_ws_close_frame(frame, AURA_WS_CLOSE_POLICY,
                                           aura_end_reason_name(reason));

        if (rv != APR_SUCCESS) {
            apr_brigade_cleanup(bb);
        }
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_heap_create(
            (const char *)frame, n, NULL, bb->bucket_alloc));
    }
    return APR_SUCCESS;
}

/* mod_proxy is about to read the upstream's answer (its create_req
 * hook): the connection is known, the stream is watched from now on. */
static void watch_stream(request_rec *r, request_rec *rp)
{
    aura_request_private_t *p = aura_request_private(r);
    apr_socket_t *sock = ap_get_conn_socket(rp->connection);
    int ws = wants_websocket(r);
    ws_end_ctx_t *ctx;

    if (!p) {
        return;
    }
    /* A retry on another connection: the earlier watch is over. */
    aura_streamend_unwatch(p->http_watch);
    /* WebSocket: the read side only, so that the client's close frame
     * still reaches the service (which learns the session is over). */
    p->http_watch = aura_streamend_watch(r, ws ? "websocket" : "http",
                                         sock, ws ? APR_SHUTDOWN_READ
                                                  : APR_SHUTDOWN_READWRITE);
    if (!ws || !p->http_watch) {
        return;
    }
    ctx = apr_pcalloc(r->pool, sizeof(*ctx));
    ctx->watch = p->http_watch;
    /* The upstream connection is never pooled (proxy-nokeepalive, set
     * at fixups): the filter goes with it, never seen by another
     * request. */
    ap_add_input_filter_handle(ws_end_filter, ctx, NULL, rp->connection);
}

/* The credential died: the end of an HTTP stream as the client sees it
 * (above). */
static apr_status_t cred_end(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    int sse = aura_streamend_is_sse(r);
    apr_bucket *b, *next;

    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
         b = next) {
        next = APR_BUCKET_NEXT(b);
        if (AP_BUCKET_IS_ERROR(b) && sse) {
            apr_bucket_delete(b);
        }
        else if (APR_BUCKET_IS_EOS(b)) {
            if (sse) {
                const char *ev = apr_pstrcat(r->pool,
                    AURA_STREAMEND_SSE_EVENT,
                    aura_end_reason_name(aura_streamend_reason(
                        aura_request_private(r)->http_watch)),
                    "\n\n", NULL);

                APR_BUCKET_INSERT_BEFORE(b, apr_bucket_pool_create(
                    ev, strlen(ev), r->pool, bb->bucket_alloc));
            }
            else {
                APR_BUCKET_INSERT_BEFORE(b, ap_bucket_error_create(
                    HTTP_BAD_GATEWAY, NULL, r->pool, bb->bucket_alloc));
            }
            r->connection->keepalive = AP_CONN_CLOSE;
            ap_remove_output_filter(f);
            break;
        }
    }
    return ap_pass_brigade(f->next, bb);
}

static apr_status_t stream_out_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    stream_ctx_t *ctx = f->ctx;
    request_rec *r = f->r;
    apr_interval_time_t max = aura_stream_max_duration(aura_dir_conf(r));

    if (!ctx->answered) {
        aura_breaker_hold_t *hold = aura_request_private(r)->http_hold;

        /* The upstream answered.  A stream may last hours: its verdict
         * is its status, now, not when it ends (a probe is not held for
         * the length of a stream). */
        ctx->answered = 1;
        aura_breaker_verdict(hold, aura_breaker_status_ok(r->status));
        if (ctx->sock) {
            /* From now on, silences are idle time. */
            apr_socket_timeout_set(ctx->sock, ctx->idle);
            ctx->sock = NULL;
        }
    }
    if (aura_streamend_reason(aura_request_private(r)->http_watch)) {
        return cred_end(f, bb);
    }
    if (!ctx->cut && apr_time_now() - r->request_time > max) {
        ctx->cut = 1;
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00123)
                      "stream ended after %" APR_TIME_T_FMT " ms "
                      "(AuraStreamMaxDuration)", apr_time_as_msec(max));
        r->connection->aborted = 1;
    }
    if (ctx->cut) {
        apr_brigade_cleanup(bb);
        return APR_ECONNABORTED;
    }
    return ap_pass_brigade(f->next, bb);
}

/* ---- responses that turn out long-lived ------------------------------
 * A response of a route without AuraStreaming On that is still being
 * sent AuraStreamAfter (10 s by default) after its request arrived (a
 * large download read slowly, a body that trickles) is a stream after
 * all: this filter, at the first piece of the body past that time,
 * moves it from its service's in-flight slot to the long-lived budget
 * (aura_stream_convert()).  When its client's address or actor already
 * has its share of streams, the response is ended there (its status is
 * out: the body ends early and the connection closes), as a stream
 * would have been refused: otherwise a few slow readers per address
 * would hold the short slots again.  When a budget (shared with
 * everyone's streams) is full instead, it keeps its short slot: a
 * client is not cut for others' streams. */

#define SLOW_FILTER "AURA_SLOW"

typedef struct {
    int decided;
    int cut;
} slow_ctx_t;

static ap_filter_rec_t *slow_filter;

static apr_status_t slow_out_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    slow_ctx_t *ctx = f->ctx;
    request_rec *r = f->r;
    const aura_dir_conf_t *d = aura_dir_conf(r);
    apr_interval_time_t after = aura_stream_after(d);

    if (ctx->cut) {
        apr_brigade_cleanup(bb);
        return APR_ECONNABORTED;
    }
    if (!ctx->decided && apr_time_now() - r->request_time >= after) {
        aura_cap_hold_t *slot = aura_request_private(r)->http_slot;

        ctx->decided = 1;
        if (aura_stream_convert(r, d->service, slot, 1)
            == HTTP_TOO_MANY_REQUESTS) {
            ctx->cut = 1;
            aura_stream_count_cut(1);
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(01604)
                          "response ended: still being sent after %"
                          APR_TIME_T_FMT " ms (AuraStreamAfter), and its "
                          "client's address or actor has its share of "
                          "streams", apr_time_as_msec(after));
            r->connection->aborted = 1;
            apr_brigade_cleanup(bb);
            return APR_ECONNABORTED;
        }
    }
    if (ctx->decided) {
        ap_remove_output_filter(f);
    }
    return ap_pass_brigade(f->next, bb);
}

void aura_http_insert_filter(request_rec *r)
{
    stream_ctx_t *ctx;

    if (!ap_is_initial_req(r) || !is_ours(r)) {
        return;
    }
    if (!streaming_route(r)) {
        /* A tunnel took the long-lived budget at fixups already. */
        if (!wants_websocket(r)) {
            ap_add_output_filter_handle(slow_filter,
                                        apr_pcalloc(r->pool,
                                                    sizeof(slow_ctx_t)),
                                        r, r->connection);
        }
        return;
    }
    ctx = apr_pcalloc(r->pool, sizeof(*ctx));
    apr_pool_userdata_setn(ctx, STREAM_KEY, NULL, r->pool);
    ap_add_output_filter_handle(stream_filter, ctx, r, r->connection);
}

void aura_http_register(void)
{
    APR_OPTIONAL_HOOK(proxy, request_status, request_status, NULL, NULL,
                      APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(proxy, create_req, create_req, NULL, NULL,
                      APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(proxy, fixups, proxy_fixups, NULL, NULL,
                      APR_HOOK_REALLY_LAST);
    stream_filter = ap_register_output_filter(STREAM_FILTER,
                                              stream_out_filter, NULL,
                                              AP_FTYPE_CONTENT_SET);
    slow_filter = ap_register_output_filter(SLOW_FILTER, slow_out_filter,
                                            NULL, AP_FTYPE_CONTENT_SET);
    ws_end_filter = ap_register_input_filter(WS_END_FILTER,
                                             ws_end_in_filter, NULL,
                                             AP_FTYPE_CONNECTION);
}
