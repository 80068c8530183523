/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_natsproxy.c: the handler of NATS-routed Locations.  One HTTP
 * request becomes one NATS request on the Location's subject
 * (aura_envelope.c builds it), the reply becomes the HTTP response.
 *
 * The body is read whole before anything is sent: a NATS message is one
 * frame, and its size is bounded by the server's max_payload, so memory
 * per request is bounded by that (1 MiB by default).  A body that could
 * never fit is refused with 413 before it is read (aura_route_claim()
 * checks the declared length even earlier, before authentication).
 *
 * Status mapping (docs/envelope.md): no responders 503, timeout 504,
 * malformed reply 502, NATS connection down 503.  A timed-out request is
 * never replayed: the service may have run it.
 */
#include "aura_private.h"
#include "aura_envelope.h"

#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"

#include <nats/nats.h>

static apr_status_t msg_cleanup(void *m)
{
    natsMsg_Destroy(m);
    return APR_SUCCESS;
}

/* Reads the whole body, dechunked, refusing more than limit bytes.
 * LimitRequestBody and client errors arrive as error statuses. */
static int read_body(request_rec *r, apr_int64_t limit, const char **body,
                     apr_size_t *len)
{
    apr_bucket_brigade *bb, *all;
    apr_off_t total = 0;
    int seen_eos = 0;
    char *flat;
    apr_size_t flat_len;

    bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    all = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    while (!seen_eos) {
        apr_bucket *e;
        apr_status_t rv = ap_get_brigade(r->input_filters, bb,
                                         AP_MODE_READBYTES, APR_BLOCK_READ,
                                         HUGE_STRING_LEN);
        if (rv != APR_SUCCESS) {
            apr_brigade_cleanup(bb);
            return ap_map_http_request_error(rv, HTTP_BAD_REQUEST);
        }
        while (!APR_BRIGADE_EMPTY(bb)) {
            e = APR_BRIGADE_FIRST(bb);
            if (APR_BUCKET_IS_EOS(e)) {
                seen_eos = 1;
            }
            if (APR_BUCKET_IS_METADATA(e)) {
                apr_bucket_delete(e);
                continue;
            }
            total += e->length;
            if (total > limit) {
                apr_brigade_cleanup(bb);
                return aura_too_large(r, limit);
            }
            rv = apr_bucket_setaside(e, r->pool);
            if (rv != APR_SUCCESS) {
                return HTTP_INTERNAL_SERVER_ERROR;
            }
            APR_BUCKET_REMOVE(e);
            APR_BRIGADE_INSERT_TAIL(all, e);
        }
    }
    if (apr_brigade_pflatten(all, &flat, &flat_len, r->pool)
        != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    apr_brigade_destroy(all);
    *body = flat;
    *len = flat_len;
    return OK;
}

/* The path as the client sent it, still percent-encoded: httpd decodes
 * r->uri and r->parsed_uri.path in place, and a service must see "%2F"
 * apart from "/". */
static const char *raw_path(request_rec *r)
{
    apr_uri_t uri;

    if (r->unparsed_uri
        && apr_uri_parse(r->pool, r->unparsed_uri, &uri) == APR_SUCCESS
        && uri.path) {
        return uri.path;
    }
    return r->uri;
}

static int refuse(request_rec *r, int status, const char *type,
                  const char *detail)
{
    aura_problem_note(r, type, detail);
    return status;
}

/* Maps the outcome of the NATS request to the client's error. */
static int request_failed(request_rec *r, natsStatus s, const char *subject,
                          apr_int64_t limit)
{
    switch (s) {
    case NATS_NO_RESPONDERS:
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00020)
                      "no responders on %s", subject);
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "no-upstream",
                      "no service instance is listening");
    case NATS_TIMEOUT:
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00021)
                      "no reply on %s within the route budget of %"
                      APR_TIME_T_FMT " ms (not replayed)", subject,
                      apr_time_as_msec(aura_route_timeout(aura_dir_conf(r))));
        return refuse(r, HTTP_GATEWAY_TIME_OUT, "upstream-timeout",
                      "the service did not answer within the route's "
                      "budget");
    case NATS_MAX_PAYLOAD:
        return aura_too_large(r, limit);
    default:
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00022)
                      "NATS request on %s failed: %s", subject,
                      natsStatus_GetText(s));
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "upstream-error",
                      "the message bus is unavailable");
    }
}

static int send_reply(request_rec *r, natsMsg *reply, const char *subject)
{
    aura_envelope_reply_t out;
    const apr_array_header_t *arr;
    const apr_table_entry_t *e;
    apr_bucket_brigade *bb;
    const char *why;
    int i;

    if (aura_envelope_decode(r->pool, reply, &out, &why) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00023)
                      "malformed reply on %s: %s", subject, why);
        return refuse(r, HTTP_BAD_GATEWAY, "upstream-error",
                      "the service sent a malformed reply");
    }
    r->status = out.status;
    /* httpd sends "500 Internal Server Error" for a status it has no
     * reason phrase for (418, 451...): give it one. */
    r->status_line = ap_get_status_line_ex(r->pool, out.status);
    arr = apr_table_elts(out.headers);
    e = (const apr_table_entry_t *)arr->elts;
    for (i = 0; i < arr->nelts; i++) {
        if (!strcasecmp(e[i].key, "Content-Type")) {
            ap_set_content_type(r, apr_pstrdup(r->pool, e[i].val));
        }
        else {
            apr_table_add(r->headers_out, e[i].key, e[i].val);
        }
    }
    bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    if (out.body_len && !AP_STATUS_IS_HEADER_ONLY(out.status)) {
        /* Transient: the bytes live in the reply, destroyed with r->pool;
         * a filter that keeps them sets them aside (copies). */
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_transient_create(
            out.body, out.body_len, bb->bucket_alloc));
    }
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    return ap_pass_brigade_fchk(r, bb, AURA_LOGNO(00024)
                                "sending the reply to the client failed");
}

int aura_natsproxy_handler(request_rec *r)
{
    aura_dir_conf_t *d;
    aura_request_t *rq;
    aura_envelope_req_t in;
    natsConnection *nc;
    natsMsg *msg = NULL, *reply = NULL;
    natsStatus s;
    apr_int64_t limit;
    int rc;

    if (!r->handler || strcmp(r->handler, AURA_HANDLER_SERVICE)
        || !aura_request_get(r)) {
        return DECLINED;
    }
    d = aura_dir_conf(r);
    if (d->service == AURA_UNSET) {
        return DECLINED;
    }
    if (d->upstream_kind != AURA_UPSTREAM_NATS) {
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "no-upstream",
                      "HTTP upstreams are not available in this version");
    }
    nc = aura_nats_conn();
    if (!aura_nats_connected()) {
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "upstream-error",
                      "the message bus is unavailable");
    }
    limit = natsConnection_GetMaxPayload(nc);
    if (aura_declared_length(r) > limit) {
        return aura_too_large(r, limit);
    }
    memset(&in, 0, sizeof(in));
    rc = read_body(r, limit, &in.body, &in.body_len);
    if (rc != OK) {
        return rc;
    }
    in.method = r->method;
    in.path = raw_path(r);
    in.query = r->args;
    rq = aura_request_get(r);
    in.request_id = rq->request_id;
    in.plane = aura_plane_name(rq->plane);
    in.headers = r->headers_in;
    in.project = rq->project;
    in.org = rq->org;
    in.role = rq->role;
    in.key_role = rq->key_role;
    in.actor = rq->actor;

    s = aura_envelope_encode(r->pool, d->upstream, &in, &msg);
    if (s != NATS_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00025)
                      "cannot build the NATS message: %s",
                      natsStatus_GetText(s));
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    apr_pool_cleanup_register(r->pool, msg, msg_cleanup,
                              apr_pool_cleanup_null);
    s = natsConnection_RequestMsg(&reply, nc, msg,
                                  apr_time_as_msec(aura_route_timeout(d)));
    if (s != NATS_OK) {
        return request_failed(r, s, d->upstream, limit);
    }
    apr_pool_cleanup_register(r->pool, reply, msg_cleanup,
                              apr_pool_cleanup_null);
    return send_reply(r, reply, d->upstream);
}
