/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_problem.c: every error response of an aura VirtualHost is an RFC
 * 9457 application/problem+json body.  Hooks record why they refuse with
 * aura_problem_note() and return the status; httpd then builds its error
 * response (ap_send_error_response) and this filter, inserted by
 * insert_error_filter, replaces httpd's HTML with the problem document.
 * Going through httpd's own error path keeps everything else it does on
 * errors (err_headers_out only, Allow on 405, the request body
 * discarded, the access log) and covers errors httpd raises itself in
 * these VirtualHosts (404, 405, LimitRequestBody's 413) too.  Errors
 * raised before post_read_request (a malformed request line) never see
 * a plane and keep httpd's page: docs/envelope.md says so.
 */
#include "core/aura_module.h"
#include "core/aura_request.h"
#include "http/aura_problem.h"

#include "http_protocol.h"
#include "util_filter.h"
#include "apr_strings.h"

#include <jansson.h>
#include <stdlib.h>

#define FILTER_NAME "AURA_PROBLEM"

static ap_filter_rec_t *problem_filter;

AURA_DECLARE(void) aura_problem_note(request_rec *r, const char *type,
                                     const char *detail)
{
    aura_request_private_t *p = aura_request_private(r);

    /* Only a plane's requests get a problem body, or a log field. */
    if (p) {
        p->problem_of = r;
        p->problem_type = type;
        p->problem_detail = apr_pstrdup(r->pool, detail ? detail : "");
    }
}

/* What httpd refused on its own, in the few words DESIGN.md section 8
 * has for it; otherwise about:blank, i.e. "the status says it all". */
static const char *default_type(int status)
{
    switch (status) {
    case HTTP_REQUEST_ENTITY_TOO_LARGE:
        return "payload-too-large";
    case HTTP_BAD_REQUEST:
        return "invalid-request";
    default:
        return NULL;
    }
}

static const char *problem_json(request_rec *r)
{
    const char *detail;
    const char *type = aura_request_problem(r, &detail);
    const char *line = ap_get_status_line(r->status);
    aura_request_t *rq = aura_request_get(r);
    json_t *o = json_object();
    char *text, *out;

    if (!type) {
        type = default_type(r->status);
    }
    json_object_set_new(o, "type", json_string(
        type ? apr_pstrcat(r->pool, "/problems/", type, NULL)
             : "about:blank"));
    json_object_set_new(o, "title", json_string(line && strlen(line) > 4
                                                ? line + 4 : "Error"));
    json_object_set_new(o, "status", json_integer(r->status));
    if (detail && *detail) {
        json_object_set_new(o, "detail", json_string(detail));
    }
    if (rq && rq->request_id) {
        json_object_set_new(o, "request_id", json_string(rq->request_id));
    }
    text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    out = apr_pstrcat(r->pool, text ? text : "{}", "\n", NULL);
    free(text);
    return out;
}

/* Swallows httpd's error page and sends the problem document with the
 * EOS that ends it. */
static apr_status_t problem_out_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    apr_bucket *e;

    if (!f->ctx) {
        f->ctx = (void *)problem_json(r);
        ap_set_content_type(r, "application/problem+json");
        r->content_languages = NULL;
        apr_table_unset(r->headers_out, "Content-Length");
    }
    for (e = APR_BRIGADE_FIRST(bb); e != APR_BRIGADE_SENTINEL(bb);
         e = APR_BUCKET_NEXT(e)) {
        if (APR_BUCKET_IS_EOS(e)) {
            const char *body = f->ctx;
            apr_bucket *b;

            while (APR_BRIGADE_FIRST(bb) != e) {
                apr_bucket_delete(APR_BRIGADE_FIRST(bb));
            }
            if (!r->header_only) {
                b = apr_bucket_pool_create(body, strlen(body), r->pool,
                                           bb->bucket_alloc);
                APR_BUCKET_INSERT_BEFORE(e, b);
            }
            ap_remove_output_filter(f);
            return ap_pass_brigade(f->next, bb);
        }
    }
    apr_brigade_cleanup(bb);
    return APR_SUCCESS;
}

void aura_problem_register(void)
{
    problem_filter = ap_register_output_filter(FILTER_NAME,
                                               problem_out_filter, NULL,
                                               AP_FTYPE_CONTENT_SET);
}

void aura_insert_problem_filter(request_rec *r)
{
    /* Error responses only: a 204 preflight or a 304 has no body. */
    if (r->status >= 400 && aura_request_get(r)) {
        ap_add_output_filter_handle(problem_filter, NULL, r, r->connection);
    }
}
