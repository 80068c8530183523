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
 * Data plane CORS is "*" without credentials: the answer never depends
 * on the Origin, so no Vary is needed.  The management plane answers
 * only origins of its allow-list (AuraCORSAllowOrigin), echoing the
 * origin, with Vary: Origin; a preflight from anywhere else is refused
 * (403).  Preflights are answered from quick_handler, before any
 * credential or limiter.
 */
#include "aura_private.h"

#include "http_protocol.h"
#include "util_filter.h"
#include "apr_strings.h"

#define FILTER_NAME "AURA_HEADERS"
#define NOTE_PREFLIGHT "aura-preflight"

static ap_filter_rec_t *headers_filter;

static const char *const default_security[][2] = {
    { "Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'" },
    { "X-Content-Type-Options", "nosniff" },
    { "Referrer-Policy", "no-referrer" },
    { "X-Frame-Options", "DENY" },
    { NULL, NULL }
};

static const char *conf_or(const char *v, const char *def)
{
    return v ? v : def;
}

/* Drops every Access-Control-* header a service sent. */
static int drop_cors(void *data, const char *key, const char *val)
{
    apr_array_header_t *names = data;

    (void)val;
    if ((key[0] == 'A' || key[0] == 'a')
        && !strncasecmp(key, "Access-Control-", 15)) {
        APR_ARRAY_PUSH(names, const char *) = key;
    }
    return 1;
}

static void unset_cors(request_rec *r, apr_table_t *t)
{
    apr_array_header_t *names = apr_array_make(r->pool, 4,
                                               sizeof(const char *));
    int i;

    apr_table_do(drop_cors, names, t, NULL);
    for (i = 0; i < names->nelts; i++) {
        apr_table_unset(t, APR_ARRAY_IDX(names, i, const char *));
    }
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

static void set_security(request_rec *r)
{
    const aura_dir_conf_t *d = aura_dir_conf(r);
    const apr_table_t *over = d->security_headers;
    int i;

    for (i = 0; default_security[i][0]; i++) {
        const char *v = over ? apr_table_get(over, default_security[i][0])
                             : NULL;

        v = v ? v : default_security[i][1];
        set_header(r, default_security[i][0], strcasecmp(v, "off") ? v
                                                                    : NULL);
    }
    /* HSTS only when asked for: a plane may be plain HTTP behind TLS. */
    if (over) {
        const char *v = apr_table_get(over, "Strict-Transport-Security");

        if (v && strcasecmp(v, "off")) {
            set_header(r, "Strict-Transport-Security", v);
        }
    }
}

/* The request's Origin when the management plane lists it, else NULL. */
static const char *allowed_origin(request_rec *r)
{
    const apr_array_header_t *list = aura_server_conf(r->server)->cors_origins;
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
    if (!rq) {
        return;
    }
    if (rq->plane == AURA_PLANE_MGMT) {
        /* The answer depends on the Origin: caches must know. */
        apr_table_mergen(r->headers_out, "Vary", "Origin");
        origin = allowed_origin(r);
        if (!origin) {
            return;
        }
        apr_table_setn(r->headers_out, "Access-Control-Allow-Origin", origin);
    }
    else {
        apr_table_setn(r->headers_out, "Access-Control-Allow-Origin", "*");
    }
    apr_table_setn(r->headers_out, "Access-Control-Expose-Headers",
                   conf_or(c->cors_expose, AURA_DEFAULT_CORS_EXPOSE));
    if (apr_table_get(r->notes, NOTE_PREFLIGHT)) {
        apr_table_setn(r->headers_out, "Access-Control-Allow-Methods",
                       conf_or(c->cors_methods, AURA_DEFAULT_CORS_METHODS));
        apr_table_setn(r->headers_out, "Access-Control-Allow-Headers",
                       conf_or(c->cors_headers, AURA_DEFAULT_CORS_HEADERS));
        apr_table_setn(r->headers_out, "Access-Control-Max-Age",
                       apr_itoa(r->pool, c->cors_max_age != AURA_UNSET
                                         ? c->cors_max_age
                                         : AURA_DEFAULT_CORS_MAX_AGE));
    }
}

static apr_status_t headers_out_filter(ap_filter_t *f,
                                       apr_bucket_brigade *bb)
{
    set_security(f->r);
    set_cors(f->r);
    ap_remove_output_filter(f);
    return ap_pass_brigade(f->next, bb);
}

void aura_headers_register(void)
{
    headers_filter = ap_register_output_filter(FILTER_NAME,
                                               headers_out_filter, NULL,
                                               AP_FTYPE_CONTENT_SET);
}

void aura_insert_headers_filter(request_rec *r)
{
    if (aura_request_get(r)) {
        ap_add_output_filter_handle(headers_filter, NULL, r, r->connection);
    }
}

AURA_DECLARE(int) aura_cors_preflight(request_rec *r)
{
    if (r->method_number != M_OPTIONS
        || !apr_table_get(r->headers_in, "Origin")
        || !apr_table_get(r->headers_in, "Access-Control-Request-Method")
        || !aura_request_get(r)) {
        return DECLINED;
    }
    if (aura_request_get(r)->plane == AURA_PLANE_MGMT && !allowed_origin(r)) {
        aura_problem_note(r, "forbidden", "this origin is not allowed");
        return HTTP_FORBIDDEN;
    }
    apr_table_setn(r->notes, NOTE_PREFLIGHT, "1");
    return HTTP_NO_CONTENT;
}
