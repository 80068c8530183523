/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_tracing.c: the spans of a sampled request, recorded by the stages
 * that cost time (docs/tracing.md lists them) into its set
 * (trace/aura_span.h), made by aura_trace_begin() with the server span
 * first.  At log_transaction the server span gets its name and
 * attributes after the OpenTelemetry HTTP server conventions, plus the
 * gateway's (plane, service, key role, the problem it refused with),
 * and the set goes, encoded once, to the child's exporter.
 *
 * The request pool holds everything; the worker serving the request is
 * the only one to touch it.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_reqid.h"
#include "core/aura_request.h"
#include "core/aura_trace.h"
#include "shm/aura_shm.h"
#include "trace/aura_exporter.h"
#include "trace/aura_otlp.h"
#include "trace/aura_tracing.h"

#include "http_core.h"
#include "http_protocol.h"
#include "apr_strings.h"

#include <stdlib.h>

static aura_spanset_t *spans_of(request_rec *r)
{
    aura_request_private_t *p = aura_request_private(r);

    return p ? p->spans : NULL;
}

int aura_tracing_start(request_rec *r, int parent, const char *name,
                       aura_span_kind_e kind, const char *id)
{
    aura_spanset_t *set = spans_of(r);
    unsigned char rnd[8];
    char own[17];

    if (!set) {
        return -1;
    }
    if (!id) {
        aura_reqid_random(rnd, sizeof(rnd));
        aura_trace_hex_id(rnd, sizeof(rnd), own);
        id = own;
    }
    return aura_span_start(set, name, id, parent, kind, apr_time_now());
}

int aura_tracing_stage(request_rec *r, const char *name)
{
    return aura_tracing_start(r, 0, name, AURA_SPAN_INTERNAL, NULL);
}

void aura_tracing_end(request_rec *r, int span, int status,
                      const char *message)
{
    aura_spanset_t *set;

    if (span >= 0 && (set = spans_of(r))) {
        aura_span_end(set, span, apr_time_now(), status, message);
    }
}

void aura_tracing_stage_end(request_rec *r, int span, int rc)
{
    aura_request_private_t *p;

    if (span < 0) {
        return;
    }
    if (rc == OK || rc == DECLINED) {
        aura_tracing_end(r, span, AURA_SPAN_UNSET, NULL);
        return;
    }
    p = aura_request_private(r);
    aura_tracing_end(r, span, AURA_SPAN_ERROR,
                     p && p->problem_type ? p->problem_type
                                          : ap_get_status_line(rc));
}

void aura_tracing_discard(request_rec *r, int span)
{
    aura_spanset_t *set;

    if (span >= 0 && (set = spans_of(r))) {
        aura_span_discard(set, span, apr_time_now());
    }
}

void aura_tracing_attr_str(request_rec *r, int span, const char *key,
                           const char *value)
{
    aura_spanset_t *set;

    if (span >= 0 && (set = spans_of(r))) {
        aura_span_attr_str(set, span, key, value);
    }
}

void aura_tracing_attr_int(request_rec *r, int span, const char *key,
                           apr_int64_t value)
{
    aura_spanset_t *set;

    if (span >= 0 && (set = spans_of(r))) {
        aura_span_attr_int(set, span, key, value);
    }
}

const char *aura_tracing_client_id(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);

    /* "00-<32 hex>-<16 hex>-<2 hex>": the span id from offset 36. */
    return rq && rq->traceparent ? rq->traceparent + 36 : NULL;
}

static const char *protocol_version(const request_rec *r)
{
    switch (r->proto_num) {
    case HTTP_VERSION(2, 0):
        return "2";
    case HTTP_VERSION(1, 1):
        return "1.1";
    case HTTP_VERSION(1, 0):
        return "1.0";
    default:
        return NULL;
    }
}

/* The HTTP server conventions' attributes, then the gateway's. */
static void server_attributes(request_rec *r, aura_spanset_t *set,
                              const request_rec *last, const char *method)
{
    aura_request_t *rq = aura_request_get(r);
    const aura_dir_conf_t *d = aura_dir_conf(r);

    aura_span_attr_str(set, 0, "http.request.method", method);
    if (strcmp(method, r->method)) {
        aura_span_attr_str(set, 0, "http.request.method_original",
                           r->method);
    }
    aura_span_attr_str(set, 0, "url.path", rq->raw_path ? rq->raw_path
                                                        : r->uri);
    aura_span_attr_str(set, 0, "url.scheme", ap_http_scheme(r));
    aura_span_attr_str(set, 0, "http.route", d->location);
    aura_span_attr_int(set, 0, "http.response.status_code", last->status);
    aura_span_attr_str(set, 0, "server.address", r->hostname
                                                 ? r->hostname
                                                 : r->server->server_hostname);
    aura_span_attr_int(set, 0, "server.port", ap_get_server_port(r));
    aura_span_attr_str(set, 0, "client.address", r->useragent_ip);
    aura_span_attr_str(set, 0, "user_agent.original",
                       apr_table_get(r->headers_in, "User-Agent"));
    aura_span_attr_str(set, 0, "network.protocol.version",
                       protocol_version(r));
    aura_span_attr_str(set, 0, "aura.plane", aura_plane_name(rq->plane));
    if (d->service != AURA_UNSET) {
        aura_span_attr_str(set, 0, "aura.service",
                           aura_service_names[d->service]);
    }
    aura_span_attr_str(set, 0, "aura.key.role", rq->key_role);
    aura_span_attr_str(set, 0, "aura.problem.type", rq->priv->problem_type);
    aura_span_attr_str(set, 0, "aura.request.id", rq->request_id);
}

void aura_tracing_finish(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);
    const request_rec *last = r;
    const aura_dir_conf_t *d;
    aura_spanset_t *set;
    apr_time_t now = apr_time_now();
    const char *method;
    apr_size_t len;
    char *json;
    int n;

    if (!rq || !(set = rq->priv->spans)) {
        return;
    }
    rq->priv->spans = NULL;
    while (last->next) {
        last = last->next;
    }
    d = aura_dir_conf(r);
    /* OpenTelemetry: a method outside the known set is _OTHER in names
     * and http.request.method (its own spelling in _original). */
    method = r->method_number != M_INVALID ? r->method : "_OTHER";
    set->spans[0].name = d->location
                         ? apr_pstrcat(r->pool, method, " ", d->location,
                                       NULL)
                         : method;
    server_attributes(r, set, last, method);
    /* The conventions: a server span is an error for 5xx only. */
    aura_span_end(set, 0, now, last->status >= 500 ? AURA_SPAN_ERROR
                                                   : AURA_SPAN_UNSET,
                  rq->priv->problem_type);
    aura_spanset_close(set, now);
    n = set->n;
    aura_count_n(AURA_CTR_SPANS_RECORDED, (apr_uint64_t)n);
    json = aura_otlp_spans(set, &len);
    if (!json) {
        aura_count_n(AURA_CTR_SPANS_DROPPED_QUEUE, (apr_uint64_t)n);
        return;
    }
    aura_exporter_enqueue(json, len, n);
}
