/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_console_gate.c: who may use the operator's console, and which
 * requests may change something through it.
 *
 * The operator's credential is httpd's own authentication of the
 * console's Location (AuthType Basic with a bcrypt htpasswd file, a
 * client certificate through mod_ssl's SSLUserName, any authn
 * provider), and Require decides who.  Why not a console role or a
 * token of our own: a console role lives in the tenants' Postgres
 * membership tables, where one wrong row makes a tenant an operator; a
 * token file would be one more secret format beside the ones operators
 * already protect server-status and balancer-manager with, and a
 * browser cannot present a bearer token on a page load.  httpd's
 * authentication is a separate credential store tenants never reach,
 * a browser speaks it natively, and its failures are the operator's
 * familiar ones.  The handler refuses to answer at all when nothing
 * authenticated the request (r->user unset): a console mounted without
 * AuthType/Require shows nothing, rather than everything.
 *
 * Those credentials are ambient: a browser sends them with any request
 * to the site, a page of another site's included.  So a mutation
 * (anything but GET) must also show it comes from the console itself:
 * the X-Aura-CSRF header (another origin can only send a custom header
 * after a CORS preflight, which the console never answers for it), and
 * when the browser says where the request comes from (Origin,
 * Sec-Fetch-Site), that place must be this origin.
 */
#include "core/aura_module.h"
#include "console/aura_console.h"

#include "http_core.h"
#include "http_protocol.h"
#include "apr_strings.h"

int aura_console_operator(request_rec *r)
{
    if (r->user && *r->user) {
        return OK;
    }
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(02050)
                  "operator console: %s was not "
                  "authenticated by httpd (its Location needs AuthType and "
                  "Require, docs/console.md): refused",
                  ap_escape_logitem(r->pool, r->uri));
    aura_problem_note(r, "operator-required",
                      "the operator console needs httpd's authentication "
                      "of its Location");
    return HTTP_FORBIDDEN;
}

/* scheme://host[:port] of this request, as a browser would write it in
 * Origin: the Host header the client sent. */
static const char *own_origin(request_rec *r)
{
    const char *host = apr_table_get(r->headers_in, "Host");

    if (!host && r->hostname) {
        host = r->hostname;
    }
    return host ? apr_pstrcat(r->pool, ap_http_scheme(r), "://", host,
                              NULL)
                : NULL;
}

static int refuse(request_rec *r, const char *why)
{
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(02051)
                  "operator console: %s %s by %s refused: %s",
                  r->method, ap_escape_logitem(r->pool, r->uri),
                  ap_escape_logitem(r->pool, r->user), why);
    aura_problem_note(r, "cross-site-request", why);
    return HTTP_FORBIDDEN;
}

int aura_console_mutation_ok(request_rec *r)
{
    const char *csrf = apr_table_get(r->headers_in,
                                     AURA_CONSOLE_CSRF_HEADER);
    const char *origin = apr_table_get(r->headers_in, "Origin");
    const char *site = apr_table_get(r->headers_in, "Sec-Fetch-Site");
    const char *own;

    if (!csrf || strcmp(csrf, "1")) {
        return refuse(r, "a change needs the header "
                         AURA_CONSOLE_CSRF_HEADER ": 1");
    }
    if (origin) {
        own = own_origin(r);
        if (!own || strcasecmp(origin, own)) {
            return refuse(r, "the request comes from another origin");
        }
    }
    if (site && strcmp(site, "same-origin") && strcmp(site, "none")) {
        return refuse(r, "the request comes from another site");
    }
    return OK;
}

void aura_console_headers(request_rec *r)
{
    apr_table_t *h = r->err_headers_out;

    apr_table_setn(h, "Cache-Control", "no-store");
    apr_table_setn(h, "X-Content-Type-Options", "nosniff");
    apr_table_setn(h, "X-Frame-Options", "DENY");
    apr_table_setn(h, "Referrer-Policy", "no-referrer");
    /* The page's script and style are its own files, never inline. */
    apr_table_setn(h, "Content-Security-Policy",
                   "default-src 'none'; script-src 'self'; "
                   "style-src 'self'; img-src 'self'; connect-src 'self'; "
                   "frame-ancestors 'none'; base-uri 'none'; "
                   "form-action 'self'");
}
