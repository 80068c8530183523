/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_route.c: what the plane modules call to take a request in: the
 * per-request state (plane, request id), and the routing stage.  A
 * claimed request skips the file system entirely (like mod_proxy's
 * proxy: URLs): there is no file behind a service route, and a
 * <Directory> section must not apply to it.
 *
 * The routing stage decides where a service Location's request goes,
 * once, and records it in the request state (aura_route_t): NATS or
 * the Location's HTTP upstream at translate_name (aura_route_claim);
 * for the /v1/db router (AuraDBRouter On), whose answer depends on the
 * authenticated project, NATS is refined at fixups into a dedicated
 * PostgREST target, or a refusal (aura_route_fixups).  The NATS
 * handler, the HTTP path's hooks and mod_aura_proxy
 * (aura_upstream_origin) read that decision; none decides again.
 */
#include "core/aura_module.h"
#include "auth/aura_keyauth.h"
#include "core/aura_config.h"
#include "core/aura_path.h"
#include "core/aura_reqid.h"
#include "core/aura_request.h"
#include "http/aura_dbrouter.h"
#include "http/aura_httpproxy.h"
#include "http/aura_route.h"
#include "nats/aura_nats.h"
#include "shm/aura_shm.h"

#include "http_core.h"
#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"
#include "apr_uri.h"

#define FILENAME_PREFIX "aura:"

/* The path of the request target as sent.  Not r->parsed_uri.path:
 * ap_parse_uri strips leading slashes before parsing ("//v1/x" would be
 * "/v1/x" there), and httpd decodes and normalizes it in place later. */
static const char *raw_path(request_rec *r)
{
    const char *u = r->unparsed_uri;
    apr_uri_t uri;

    if (!u || r->method_number == M_CONNECT || !strcmp(u, "*")) {
        return NULL;
    }
    if (u[0] == '/') {
        return apr_pstrmemdup(r->pool, u, strcspn(u, "?#"));
    }
    /* absolute-form, "http://host/path?query"; "http://host" has no
     * path, which httpd takes as "/".  Anything else stays as sent, and
     * aura_path_check refuses it (it does not start with "/"). */
    if (apr_uri_parse(r->pool, u, &uri) == APR_SUCCESS && uri.scheme) {
        return uri.path ? uri.path : "";
    }
    return apr_pstrmemdup(r->pool, u, strcspn(u, "?#"));
}

AURA_DECLARE(aura_request_t *) aura_request_begin(request_rec *r,
                                                  aura_plane_e plane)
{
    aura_request_t *rq = aura_request_get(r);

    if (rq) {
        return rq;
    }
    rq = aura_request_make(r);
    rq->plane = plane;
    rq->start = r->request_time;
    rq->request_id = aura_reqid_pick(r);
    aura_trace_begin(r, rq);
    /* For ErrorLogFormat's %{aura-request-id}n: every error log line of
     * the request can carry it (docs/logging.md). */
    apr_table_setn(r->notes, "aura-request-id", rq->request_id);
    rq->raw_path = raw_path(r);
    aura_take_query_key(r, rq);
    /* err_headers_out: on every response, errors included. */
    apr_table_setn(r->err_headers_out, "X-Request-Id", rq->request_id);
    aura_count(AURA_CTR_REQUESTS);
    return rq;
}

AURA_DECLARE(int) aura_request_path_check_ex(request_rec *r, int flags)
{
    aura_request_t *rq = aura_request_get(r);
    const char *raw = rq ? rq->raw_path : NULL;
    const char *why = NULL;
    apr_status_t rv;

    /* Internal redirects carry a path from the configuration; "OPTIONS *"
     * and CONNECT have none. */
    if (!ap_is_initial_req(r) || !raw) {
        return DECLINED;
    }
    /* An absolute-form target without a path ("http://host") is "/"
     * to httpd. */
    if (!*raw) {
        return DECLINED;
    }
    rv = aura_path_check(raw, strlen(raw),
                         (flags & AURA_REQUEST_PATH_PARAMS)
                         ? AURA_PATH_ALLOW_PARAMS : 0, &why);
    if (rv == APR_SUCCESS) {
        return DECLINED;
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00400)
                  "path refused: %s", why);
    if (rv == AURA_PATH_EPARAMS) {
        aura_problem_note(r, "path-parameters", "path refused: a ';' "
                          "(raw or %3B) in a segment, which some services "
                          "drop and the rules keep; send the path without "
                          "';parameters' (docs/envelope.md, \"One path\")");
    }
    else {
        aura_problem_note(r, "invalid-request", apr_pstrcat(r->pool,
                          "path refused (", why, "): send it in its "
                          "normalized form (docs/envelope.md)", NULL));
    }
    return HTTP_BAD_REQUEST;
}

AURA_DECLARE(int) aura_request_path_check(request_rec *r)
{
    return aura_request_path_check_ex(r, 0);
}

apr_off_t aura_declared_length(request_rec *r)
{
    const char *cl = apr_table_get(r->headers_in, "Content-Length");
    apr_off_t len;

    if (!cl || apr_strtoff(&len, cl, NULL, 10) != APR_SUCCESS || len < 0) {
        return -1;
    }
    return len;
}

AURA_DECLARE(int) aura_route_claim(request_rec *r)
{
    aura_dir_conf_t *d = aura_dir_conf(r);
    aura_request_private_t *p = aura_request_private(r);
    apr_int64_t limit;

    if (d->service == AURA_UNSET || !p) {
        return DECLINED;
    }
    /* A redirect's route replaces the original's: each is its own. */
    memset(&p->route, 0, sizeof(p->route));
    p->route.r = r;
    if (d->upstream_kind == AURA_UPSTREAM_HTTP) {
        p->route.kind = AURA_ROUTE_HTTP;
        return aura_http_claim(r, d, &p->route);
    }
    p->route.kind = AURA_ROUTE_NATS;
    r->handler = AURA_HANDLER_SERVICE;
    r->filename = apr_pstrcat(r->pool, FILENAME_PREFIX,
                              aura_service_names[d->service], NULL);
    /* A declared body the bus can never carry is refused now, before
     * authentication and before a byte of it is read. */
    limit = aura_nats_max_payload();
    if (d->upstream_kind == AURA_UPSTREAM_NATS && limit > 0
        && aura_declared_length(r) > limit) {
        return aura_too_large(r, limit);
    }
    return OK;
}

/* /v1/db: the project's topology may send a NATS route to a dedicated
 * PostgREST (or refuse it).  Only a request still on its way to the
 * NATS handler: another module may have taken it since the claim. */
static int route_db(request_rec *r, aura_route_t *route)
{
    const char *target = NULL, *url = NULL;
    int rc;

    if (route->kind != AURA_ROUTE_NATS || aura_dir_conf(r)->db_router != 1
        || r->proxyreq || !r->handler
        || strcmp(r->handler, AURA_HANDLER_SERVICE)) {
        return OK;
    }
    rc = aura_db_route(r, &target, &url);
    if (rc != OK || !target) {
        return rc;
    }
    route->kind = AURA_ROUTE_DB_TARGET;
    route->origin = target;
    route->target = target;
    route->budget = aura_route_timeout(aura_dir_conf(r));
    aura_http_target(r, route, url);
    return OK;
}

/* fixups, first and before mod_proxy's own (which canonicalize the URL
 * the /v1/db router may just have set): the route's last decision, then
 * the HTTP path's checks right before mod_proxy contacts the upstream. */
int aura_route_fixups(request_rec *r)
{
    aura_request_private_t *p = aura_request_private(r);
    int rc;

    /* An Upgrade: h2c request leaves all of it to its stream 1
     * (aura_h2c.c): no breaker hold, no cap slot for the 101. */
    if (!ap_is_initial_req(r) || !p || p->route.r != r
        || (p->h2c_of == r && p->h2c)) {
        return DECLINED;
    }
    rc = route_db(r, &p->route);
    if (rc != OK) {
        return rc;
    }
    if ((p->route.kind == AURA_ROUTE_HTTP
         || p->route.kind == AURA_ROUTE_DB_TARGET)
        && r->proxyreq == PROXYREQ_REVERSE) {
        return aura_http_fixups(r, &p->route);
    }
    return DECLINED;
}

int aura_too_large(request_rec *r, apr_int64_t limit)
{
    aura_problem_note(r, "payload-too-large", apr_psprintf(r->pool,
                      "the request body exceeds the %" APR_INT64_T_FMT
                      " bytes a message to the service can carry", limit));
    return HTTP_REQUEST_ENTITY_TOO_LARGE;
}

int aura_map_to_storage(request_rec *r)
{
    if (r->handler && !strcmp(r->handler, AURA_HANDLER_SERVICE)
        && r->filename && !strncmp(r->filename, FILENAME_PREFIX,
                                   sizeof(FILENAME_PREFIX) - 1)) {
        return OK;
    }
    return DECLINED;
}
