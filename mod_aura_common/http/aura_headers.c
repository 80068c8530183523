/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_headers.c: the headers the gateway owns on every response of a
 * plane, errors and proxied responses included: CORS and the security
 * headers.  An output filter (as mod_headers does with its FIXUP_HEADERS
 * filters) inserted both by insert_filter and by insert_error_filter
 * sets them when the response headers are final: whatever a service
 * sent under these names is replaced, so a client never sees two
 * Access-Control-Allow-Origin headers (fatal for browsers), and an
 * Access-Control-Allow-Credentials from a service never leaks out.
 *
 * CORS follows the rule the plane module put in the request state
 * (aura_cors_policy_t): any origin is "*" without credentials, where the
 * answer never depends on the Origin, so no Vary is needed (the data
 * plane's); an allow-list answers only its origins, echoing the origin,
 * with Vary: Origin, and a preflight from anywhere else is refused (403)
 * (the management plane's, AuraCORSAllowOrigin).  No rule, no CORS
 * headers.  Preflights are answered from quick_handler, before any
 * credential or limiter.
 *
 * The gateway's namespace (aura_envelope_own_header(): aura-*,
 * X-Request-Id, X-Project-Id, traceparent, tracestate, any spelling) is
 * the gateway's on responses too: whatever a service sent under such a
 * name is dropped, and X-Request-Id is the gateway's alone.  So are the
 * headers only the gateway sets (aura_envelope_response_owned(): the
 * security headers, RateLimit and RateLimit-Policy, and those that act
 * on the whole host or site, Strict-Transport-Security above all): a
 * service's never reach the client, whether the gateway sends its own
 * or none.
 *
 * A 101 Switching Protocols (a WebSocket through mod_proxy) is written by
 * mod_proxy_http with ap_send_interim_response(), straight to the
 * connection's filters: no request filter sees it, and r->headers_out
 * then holds only what the upstream sent.  For those a connection
 * filter, armed right before mod_proxy writes the upstream request,
 * rewrites the 101's head (see the end of this file).
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_request.h"
#include "http/aura_headers.h"
#include "http/aura_headers_conf.h"
#include "console/aura_console.h"
#include "nats/aura_envelope.h"

#include "http_protocol.h"
#include "http_request.h"
#include "util_filter.h"
#include "apr_strings.h"

#define FILTER_NAME "AURA_HEADERS"
#define UPGRADE_FILTER_NAME "AURA_UPGRADE"

static ap_filter_rec_t *headers_filter;
static ap_filter_rec_t *upgrade_filter;

/* The headers filter's context on an error response httpd makes (any
 * non-NULL address; the filter keeps no state). */
static char error_path_mark;
#define ERROR_PATH ((void *)&error_path_mark)

/* The values of the four security headers set by default, by index of
 * aura_security_header_names (Strict-Transport-Security, the last, is
 * off unless configured). */
static const char *const default_security[] = {
    "default-src 'none'; frame-ancestors 'none'", "nosniff", "no-referrer",
    "DENY"
};

static int is_cors_name(const char *key)
{
    return (key[0] == 'A' || key[0] == 'a')
           && !strncasecmp(key, "Access-Control-", 15);
}

/* Drops every Access-Control-* header a service sent. */
static void unset_cors(request_rec *r, apr_table_t *t)
{
    aura_table_unset_if(r->pool, t, is_cors_name);
}

static void set_header(request_rec *r, const char *name, const char *value)
{
    apr_table_unset(r->err_headers_out, name);
    if (value) {
        apr_table_setn(r->headers_out, name, value);
    }
    else {
        apr_table_unset(r->headers_out, name);
    }
}

/* The value of security header i of r's Location (i past the defaults:
 * HSTS, only when asked for, since a plane may be plain HTTP behind
 * TLS); NULL when it is off. */
#define HSTS_INDEX (AURA_SECURITY_HEADERS - 1)
static const char *security_name(apr_size_t i)
{
    return aura_security_header_names[i];
}

static const char *security_value(request_rec *r, apr_size_t i)
{
    const char *v = aura_dir_conf(r)->security_headers[i];

    if (!v) {
        return i < HSTS_INDEX ? default_security[i] : NULL;
    }
    return v == aura_security_off ? NULL : v;
}

/* Each header is the gateway's value, or none: HSTS too when it is off
 * (its default), since a service's Strict-Transport-Security with
 * includeSubDomains would pin every host of the domain to HTTPS. */
static void set_security(request_rec *r)
{
    apr_size_t i;

    for (i = 0; i <= HSTS_INDEX; i++) {
        /* The operator's console sets its own CSP, X-Frame-Options,
         * nosniff and Referrer-Policy (aura_console_headers): the
         * plane's default CSP, default-src 'none', would forbid the
         * page its own style and script.  HSTS still applies. */
        if (i < HSTS_INDEX && r->handler
            && !strcmp(r->handler, AURA_HANDLER_CONSOLE)) {
            continue;
        }
        set_header(r, security_name(i), security_value(r, i));
    }
}

/* Whether t's one header of the gateway's namespace is the X-Request-Id
 * aura_request_begin() set (its value, by address): the usual case,
 * where removing and setting it again would change nothing. */
static int only_own_request_id(const apr_table_t *t, const char *id)
{
    const apr_array_header_t *a = apr_table_elts(t);
    const apr_table_entry_t *e = (const apr_table_entry_t *)a->elts;
    int i, found = 0;

    for (i = 0; i < a->nelts; i++) {
        if (!aura_envelope_own_header(e[i].key)) {
            continue;
        }
        if (found || e[i].val != id || strcasecmp(e[i].key, "X-Request-Id")) {
            return 0;
        }
        found = 1;
    }
    return found;
}

/* A service cannot add a second X-Request-Id, nor anything else of the
 * gateway's namespace (DESIGN.md section 9), nor a header only the
 * gateway sets (aura_envelope_response_owned(): its rate limits, the
 * host-wide ones).  What the handler put in headers_out is the service's
 * or the upstream's; the gateway's own (RateLimit of the actor quota)
 * wait in err_headers_out.  On an error response httpd made
 * (error_path), headers_out is what err_headers_out held, the gateway's:
 * kept. */
static void set_owned(request_rec *r, int error_path)
{
    aura_request_t *rq = aura_request_get(r);

    aura_unset_owned(r->pool, r->headers_out);
    if (!error_path) {
        aura_table_unset_if(r->pool, r->headers_out,
                            aura_envelope_response_owned);
    }
    if (rq && only_own_request_id(r->err_headers_out, rq->request_id)) {
        return;
    }
    aura_unset_owned(r->pool, r->err_headers_out);
    if (rq) {
        apr_table_setn(r->err_headers_out, "X-Request-Id", rq->request_id);
    }
}

/* The request's Origin when the policy's allow-list has it, else NULL. */
static const char *allowed_origin(request_rec *r,
                                  const aura_cors_policy_t *policy)
{
    const apr_array_header_t *list = policy->origins;
    const char *origin = apr_table_get(r->headers_in, "Origin");
    int i;

    for (i = 0; origin && list && i < list->nelts; i++) {
        if (!strcasecmp(origin, APR_ARRAY_IDX(list, i, const char *))) {
            return origin;
        }
    }
    return NULL;
}

static void set_cors(request_rec *r)
{
    const aura_server_conf_t *c = aura_server_conf(r->server);
    aura_request_t *rq = aura_request_get(r);
    const char *origin;

    unset_cors(r, r->headers_out);
    unset_cors(r, r->err_headers_out);
    if (!rq || !rq->cors) {
        return;
    }
    if (!rq->cors->any_origin) {
        /* The answer depends on the Origin: caches must know. */
        apr_table_mergen(r->headers_out, "Vary", "Origin");
        origin = allowed_origin(r, rq->cors);
        if (!origin) {
            return;
        }
        apr_table_setn(r->headers_out, "Access-Control-Allow-Origin", origin);
    }
    else {
        apr_table_setn(r->headers_out, "Access-Control-Allow-Origin", "*");
    }
    apr_table_setn(r->headers_out, "Access-Control-Expose-Headers",
                   aura_conf_cors_expose(c));
    if (rq->cors_preflight) {
        apr_table_setn(r->headers_out, "Access-Control-Allow-Methods",
                       aura_conf_cors_methods(c));
        apr_table_setn(r->headers_out, "Access-Control-Allow-Headers",
                       aura_conf_cors_headers(c));
        apr_table_setn(r->headers_out, "Access-Control-Max-Age",
                       apr_itoa(r->pool, aura_conf_cors_max_age(c)));
    }
}

static apr_status_t headers_out_filter(ap_filter_t *f,
                                       apr_bucket_brigade *bb)
{
    set_owned(f->r, f->ctx == ERROR_PATH);
    set_security(f->r);
    set_cors(f->r);
    ap_remove_output_filter(f);
    return ap_pass_brigade(f->next, bb);
}

/* ---- the 101 of an upgrade ---------------------------------------------
 * The connection filter holds the bytes of the next response head (up to
 * UPGRADE_HEAD_MAX) until its blank line.  A "101" head is rewritten: the
 * upstream's lines in the gateway's namespace or under a security header
 * name are dropped, the gateway's lines added; a 101 head too long to
 * hold closes the connection (AURA00200).  Any other head (the upstream
 * refused the upgrade, or mod_proxy answers an error) passes unchanged:
 * it went through AURA_HEADERS already.  Either way the filter removes
 * itself after that one head.
 *
 * A connection filter outlives the request, so nothing of r->pool is
 * kept: the state is the connection's, made once (the 32 KiB buffer
 * too, however many requests of the connection arm it), the gateway's
 * lines live in a subpool cleared at each arming, and what is sent is a
 * heap copy.  Memory per connection stays bounded. */
#define UPGRADE_HEAD_MAX 32768
#define UPGRADE_CTX_KEY "aura-upgrade-ctx"

typedef struct {
    apr_pool_t *pool;           /* cleared at each arming */
    const char *lines;          /* "Name: value\r\n"..., the gateway's */
    char *buf;                  /* the head so far */
    apr_size_t len;
    int complete;               /* buf ends with the blank line */
    int in_chain;               /* the filter is on the connection */
    apr_bucket_brigade *held;   /* metadata met before the head's end */
} upgrade_ctx_t;

/* The names the gateway sets on a 101 itself: the security headers. */
static const char *const *upgrade_replaced(apr_pool_t *p)
{
    const char **names = apr_palloc(p, (HSTS_INDEX + 2) * sizeof(*names));
    apr_size_t i;

    for (i = 0; i <= HSTS_INDEX; i++) {
        names[i] = security_name(i);
    }
    names[i] = NULL;
    return names;
}

/* The 101 head in buf[0..len) (blank line included) with the gateway's
 * lines (aura_envelope_upgrade_head()); any other head as it is. */
static char *upgrade_head(apr_pool_t *p, const upgrade_ctx_t *ctx,
                          apr_size_t *out_len)
{
    return aura_envelope_upgrade_head(p, ctx->buf, ctx->len, ctx->lines,
                                      upgrade_replaced(p), out_len);
}

/* Sends the held head (rewritten when it is a whole 101) before what is
 * left of bb, and leaves the connection. */
static apr_status_t upgrade_release(ap_filter_t *f, apr_bucket_brigade *bb)
{
    upgrade_ctx_t *ctx = f->ctx;
    apr_size_t len = ctx->len;
    char *head = ctx->buf;

    ctx->in_chain = 0;
    if (ctx->complete) {
        head = upgrade_head(ctx->pool, ctx, &len);
    }
    else if (len >= 13 && !strncmp(head, "HTTP/1.1 101 ", 13)) {
        /* Refused rather than passed with the upstream's X-Request-Id
         * and without the gateway's headers. */
        ap_log_cerror(APLOG_MARK, APLOG_ERR, 0, f->c, AURA_LOGNO(00200)
                      "the upstream's 101 head is over %d bytes or not "
                      "text: connection closed", UPGRADE_HEAD_MAX);
        apr_brigade_cleanup(bb);
        apr_brigade_cleanup(ctx->held);
        ctx->len = 0;
        ap_remove_output_filter(f);
        f->c->aborted = 1;
        return APR_ECONNABORTED;
    }
    APR_BRIGADE_PREPEND(bb, ctx->held);
    if (len) {
        /* A copy: the buffer is the next arming's. */
        APR_BRIGADE_INSERT_HEAD(bb, apr_bucket_heap_create(
            head, len, NULL, f->c->bucket_alloc));
    }
    ap_remove_output_filter(f);
    return ap_pass_brigade(f->next, bb);
}

/* Takes the first bucket of bb into the head; returns 1 when the head is
 * complete (the bytes after it stay in bb), -1 to give up. */
static int upgrade_take(upgrade_ctx_t *ctx, apr_bucket_brigade *bb)
{
    apr_bucket *e = APR_BRIGADE_FIRST(bb);
    const char *data, *blank;
    apr_size_t n, from, used;

    if (apr_bucket_read(e, &data, &n, APR_BLOCK_READ) != APR_SUCCESS) {
        return -1;
    }
    used = n < UPGRADE_HEAD_MAX - ctx->len ? n : UPGRADE_HEAD_MAX - ctx->len;
    from = ctx->len > 3 ? ctx->len - 3 : 0;
    memcpy(ctx->buf + ctx->len, data, used);
    ctx->len += used;
    ctx->buf[ctx->len] = '\0';
    blank = strstr(ctx->buf + from, "\r\n\r\n");
    if (blank) {
        /* Only the bytes up to the blank line are the head's. */
        used -= ctx->len - (apr_size_t)(blank + 4 - ctx->buf);
        ctx->len = blank + 4 - ctx->buf;
    }
    else if (used < n || memchr(data, '\0', used)) {
        ctx->len -= used;
        return -1;          /* too long, or not a text head */
    }
    if (used < n) {
        apr_bucket_split(e, used);
    }
    apr_bucket_delete(e);
    return blank ? 1 : 0;
}

static apr_status_t upgrade_out_filter(ap_filter_t *f,
                                       apr_bucket_brigade *bb)
{
    upgrade_ctx_t *ctx = f->ctx;

    while (!APR_BRIGADE_EMPTY(bb)) {
        apr_bucket *e = APR_BRIGADE_FIRST(bb);
        int done;

        if (AP_BUCKET_IS_EOR(e) || APR_BUCKET_IS_EOS(e)) {
            return upgrade_release(f, bb);
        }
        if (APR_BUCKET_IS_METADATA(e)) {
            APR_BUCKET_REMOVE(e);
            APR_BRIGADE_INSERT_TAIL(ctx->held, e);
            continue;
        }
        done = upgrade_take(ctx, bb);
        if (done) {
            ctx->complete = done > 0;
            return upgrade_release(f, bb);
        }
    }
    return APR_SUCCESS;
}

/* The connection's upgrade state, made on its first arming. */
static upgrade_ctx_t *upgrade_ctx(conn_rec *c)
{
    upgrade_ctx_t *ctx = NULL;

    apr_pool_userdata_get((void **)&ctx, UPGRADE_CTX_KEY, c->pool);
    if (!ctx) {
        ctx = apr_pcalloc(c->pool, sizeof(*ctx));
        if (apr_pool_create(&ctx->pool, c->pool) != APR_SUCCESS) {
            return NULL;
        }
        ctx->buf = apr_palloc(c->pool, UPGRADE_HEAD_MAX + 1);
        ctx->held = apr_brigade_create(c->pool, c->bucket_alloc);
        apr_pool_userdata_setn(ctx, UPGRADE_CTX_KEY, NULL, c->pool);
    }
    return ctx;
}

void aura_headers_arm_upgrade(request_rec *r)
{
    conn_rec *c = r->connection;
    aura_request_t *rq = aura_request_get(r);
    aura_request_private_t *p = rq ? rq->priv : NULL;
    upgrade_ctx_t *ctx;
    const char *lines;
    apr_size_t i;

    /* Once per request (mod_proxy may try several times).  HTTP/1.1,
     * or an HTTP/2 stream: mod_http2 (H2WebSockets on) turns an RFC 8441
     * extended CONNECT into an HTTP/1.1 upgrade on the stream's
     * secondary connection, and turns the 101 head that goes through
     * this filter there into the stream's 200 (docs/http2.md). */
    if (!rq || (!c->master && r->proto_num != HTTP_VERSION(1, 1))
        || p->upgrade_armed_for == r) {
        return;
    }
    p->upgrade_armed_for = r;
    ctx = upgrade_ctx(c);
    if (!ctx) {
        return;
    }
    apr_pool_clear(ctx->pool);
    lines = apr_pstrcat(ctx->pool, "X-Request-Id: ", rq->request_id,
                        "\r\n", NULL);
    for (i = 0; i <= HSTS_INDEX; i++) {
        const char *v = security_value(r, i);

        if (v) {
            lines = apr_pstrcat(ctx->pool, lines, security_name(i), ": ",
                                v, "\r\n", NULL);
        }
    }
    ctx->lines = lines;
    ctx->len = 0;
    ctx->complete = 0;
    apr_brigade_cleanup(ctx->held);
    if (!ctx->in_chain) {
        ctx->in_chain = 1;
        ap_add_output_filter_handle(upgrade_filter, ctx, NULL, c);
    }
}

void aura_headers_register(void)
{
    headers_filter = ap_register_output_filter(FILTER_NAME,
                                               headers_out_filter, NULL,
                                               AP_FTYPE_CONTENT_SET);
    /* Before TLS (AP_FTYPE_CONNECTION + 5): it reads the head in clear. */
    upgrade_filter = ap_register_output_filter(UPGRADE_FILTER_NAME,
                                               upgrade_out_filter, NULL,
                                               AP_FTYPE_CONNECTION);
}

void aura_insert_headers_filter(request_rec *r)
{
    if (aura_request_get(r)) {
        ap_add_output_filter_handle(headers_filter, NULL, r, r->connection);
    }
}

/* ap_send_error_response() drops every request filter, runs this, then
 * makes err_headers_out the response's headers: the filter must know
 * that what it finds in headers_out then is no service's. */
void aura_insert_headers_error_filter(request_rec *r)
{
    if (aura_request_get(r)) {
        ap_add_output_filter_handle(headers_filter, ERROR_PATH, r,
                                    r->connection);
    }
}

AURA_DECLARE(int) aura_cors_preflight(request_rec *r)
{
    aura_request_t *rq;

    if (r->method_number != M_OPTIONS
        || !apr_table_get(r->headers_in, "Origin")
        || !apr_table_get(r->headers_in, "Access-Control-Request-Method")
        || !(rq = aura_request_get(r)) || !rq->cors) {
        return DECLINED;
    }
    if (!rq->cors->any_origin && !allowed_origin(r, rq->cors)) {
        aura_problem_note(r, "forbidden", "this origin is not allowed");
        return HTTP_FORBIDDEN;
    }
    rq->cors_preflight = 1;
    return HTTP_NO_CONTENT;
}
