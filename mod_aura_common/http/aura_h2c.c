/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_h2c.c: the HTTP/1.1 request of an "Upgrade: h2c" connection.
 *
 * httpd's core honours the upgrade in its handler hook (REALLY_FIRST):
 * it answers 101, and mod_http2 replays the same request, its headers
 * as they are at that moment, as stream 1 of the new HTTP/2 session,
 * which then goes through every hook again on its own.  Run on both,
 * the plane's policy would authenticate and count the request twice,
 * and the first pass removes the credentials before the replay copies
 * them: stream 1 came back 401 missing-key.  So the policy runs once,
 * on stream 1: the HTTP/1.1 request that httpd is about to hand over is
 * left alone by the access checks (aura_request_h2c(), asked by the
 * planes' access_checker_ex), by the routing stage's fixups (no breaker
 * hold, no cap slot, no identity header) and by the metrics.
 *
 * The decision is httpd's own: the same tests as core_upgrade_handler,
 * and ap_select_protocol() with the request's final per-directory
 * configuration (H2Upgrade may be set per Location).  Should anything
 * between the access check and the handler change its mind, the request
 * reaches the handler unauthenticated: a handler ordered right after
 * core's refuses it there (500, AURA01421), so a request that skipped
 * the policy is never served on HTTP/1.1.  Only h2c is trusted this
 * way: mod_http2 is the module known to replay the request through the
 * whole cycle; an upgrade to anything else keeps the HTTP/1.1 policy.
 */
#include "core/aura_module.h"
#include "core/aura_request.h"
#include "http/aura_h2c.h"

#include "http_core.h"
#include "http_protocol.h"
#include "http_request.h"

#define AURA_H2C "h2c"

/* core_upgrade_handler's tests, in its order. */
static int h2c_will_switch(request_rec *r)
{
    conn_rec *c = r->connection;
    apr_array_header_t *offers = NULL;
    const char *upgrade, *proto;

    if (c->master) {
        return 0;
    }
    upgrade = apr_table_get(r->headers_in, "Upgrade");
    if (!upgrade || !*upgrade
        || !ap_find_token(r->pool, apr_table_get(r->headers_in,
                                                 "Connection"), "upgrade")
        || ap_parse_token_list_strict(r->pool, upgrade, &offers, 0)
        || !offers || offers->nelts == 0) {
        return 0;
    }
    proto = ap_select_protocol(c, r, NULL, offers);
    return proto && !strcmp(proto, AURA_H2C)
           && strcmp(proto, ap_get_protocol(c));
}

AURA_DECLARE(int) aura_request_h2c(request_rec *r)
{
    aura_request_private_t *p = aura_request_private(r);

    if (!p || !ap_is_initial_req(r)) {
        return 0;
    }
    /* Decided once, at the first access check (the Location's
     * configuration is known by then), for the fixups and the handler
     * to read the same answer. */
    if (p->h2c_of != r) {
        p->h2c_of = r;
        p->h2c = h2c_will_switch(r);
        if (p->h2c) {
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(01420)
                          "Upgrade: h2c: the policy runs on HTTP/2 "
                          "stream 1, not on this request");
        }
    }
    return p->h2c;
}

/* Right after core_upgrade_handler: a request the access checks left
 * to stream 1 has no business being served here. */
static int h2c_handler(request_rec *r)
{
    aura_request_private_t *p = aura_request_private(r);

    if (!p || p->h2c_of != r || !p->h2c) {
        return DECLINED;
    }
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(01421)
                  "Upgrade: h2c was expected but httpd did not switch: "
                  "refused, the request was not authenticated");
    return HTTP_INTERNAL_SERVER_ERROR;
}

void aura_h2c_register(void)
{
    static const char *const after_core[] = { "core.c", NULL };

    ap_hook_handler(h2c_handler, after_core, NULL, APR_HOOK_REALLY_FIRST);
}
