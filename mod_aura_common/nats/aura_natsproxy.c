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
 * Every request has its own reply inbox (aura_inbox.c: a token on the
 * child's one reply subscription, for as long as r->pool lives), because
 * a reply may be a stream of messages (aura_stream.c) and nats.c's own
 * request call only ever returns the first one.  A plain reply is
 * handled whole, as one message; a reply that opens a stream hands over
 * to aura_stream.c.  The connection sends as soon as possible
 * (aura_nats.c), so a publish is on the wire when it returns: no flush,
 * no round trip to the server before the reply.
 *
 * Right before the request goes out, the service's breaker is asked
 * (aura_breaker.c): open, the client gets 503 breaker-open and the
 * service is not touched.  The outcome is the breaker's evidence
 * (verdict() below).  No responders is the one outcome that proves the
 * request reached nobody, so it alone is sent again (AuraRetries, with
 * backoff, inside the route's budget and a retry budget shared by all
 * children); everything else is final.
 *
 * A client that has gone (aura_gone.c) is looked for before the
 * request is sent, before each retry and at every slice of the wait
 * (AURA_GONE_SLICE): a request that reached its worker after its client left
 * is never sent, and a wait whose client left ends at once, freeing the
 * worker; either way there is no verdict (the hold is released with
 * r->pool, DESIGN.md section 8) and a late reply is dropped by the
 * inbox (aura_inbox.c), counted.
 *
 * A request that finds the connection lost while nats.c reconnects (a
 * node of the cluster went away) waits for the reconnect, for at most
 * AURA_NATS_RECONNECT_GRACE after the loss and within its budget, then
 * goes out on the new connection; a publish nats.c refused while
 * reconnecting (it buffers nothing, aura_nats.c) never left, and is
 * sent again the same way.  A request already sent when the connection
 * dropped is not: a responder may have received it.
 *
 * Status mapping (docs/envelope.md): no responders 503, timeout 504,
 * malformed reply 502, NATS connection down 503, breaker open 503.  A
 * timed-out request is never replayed: the service may have run it.
 */
#include "core/aura_module.h"
#include "auth/aura_jwks.h"
#include "core/aura_config.h"
#include "core/aura_request.h"
#include "http/aura_route.h"
#include "nats/aura_envelope.h"
#include "nats/aura_inbox.h"
#include "nats/aura_nats.h"
#include "nats/aura_nats_auth.h"
#include "nats/aura_natsproxy.h"
#include "nats/aura_stream.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_bulkhead.h"
#include "resilience/aura_gone.h"
#include "resilience/aura_resilience_conf.h"
#include "shm/aura_shm.h"
#include "trace/aura_tracing.h"

#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"
#include "apr_atomic.h"

#include <nats/nats.h>

/* Where a client was found gone (attempt()'s *gone). */
#define AURA_GONE_BEFORE_SEND 1
#define AURA_GONE_WAITING     2

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

/* The path as the client sent it, still percent-encoded (httpd decodes
 * r->uri and r->parsed_uri.path in place), so a service sees the
 * client's own escapes ("%3F", "%25").  aura_request_path_check refused
 * at post_read_request every raw path whose one decoding is not r->uri
 * ("%2F", dot-segments, "//"): decoded once, this is the path the rules
 * authorized (docs/envelope.md, "One path"). */
static const char *raw_path(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);

    return rq && rq->raw_path && *rq->raw_path ? rq->raw_path : r->uri;
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

static int send_reply(request_rec *r, natsMsg *reply, aura_inbox_t *inbox,
                      const char *subject, aura_breaker_hold_t *hold,
                      aura_cap_hold_t *slot)
{
    aura_envelope_reply_t out;
    const apr_array_header_t *arr;
    const apr_table_entry_t *e;
    apr_bucket_brigade *bb;
    aura_stream_mark_e mark;
    const char *why;
    int i;

    mark = aura_stream_mark(reply, &why);
    if (mark == AURA_STREAM_END) {
        why = "Aura-Stream: end without a stream";
    }
    if ((mark == AURA_STREAM_INVALID || mark == AURA_STREAM_END)
        || aura_envelope_decode(r->pool, reply, &out, &why) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00023)
                      "malformed reply on %s: %s", subject, why);
        aura_breaker_verdict(hold, 0);
        return refuse(r, HTTP_BAD_GATEWAY, "upstream-error",
                      "the service sent a malformed reply");
    }
    /* A stream is judged by its first message: the status it chose. */
    aura_breaker_verdict(hold, aura_breaker_status_ok(out.status));
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
    if (mark == AURA_STREAM_BEGIN) {
        return aura_stream_relay(r, inbox, reply, out.body, out.body_len,
                                 subject, slot);
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

/* aura_nats_await_reconnect() for r, which stops waiting when its
 * client is gone. */
static int client_gone(void *r)
{
    return aura_client_gone(r);
}

static int await_reconnect(request_rec *r, apr_time_t deadline,
                           int refused, apr_uint32_t seen)
{
    apr_time_t start = apr_time_now();

    if (!aura_nats_await_reconnect(deadline, refused, seen, client_gone, r)) {
        return 0;
    }
    if (apr_time_now() - start >= apr_time_from_msec(5)) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(01361)
                      "waited %" APR_TIME_T_FMT " ms for the NATS "
                      "reconnect", apr_time_as_msec(apr_time_now() - start));
    }
    return 1;
}

/* Publishes msg; refused because nats.c was reconnecting (nothing left
 * this process), once more after the reconnect. */
static natsStatus publish(request_rec *r, natsConnection *nc, natsMsg *msg,
                          aura_inbox_t *inbox, apr_time_t deadline)
{
    apr_uint32_t seen;
    natsStatus s;

    if (!aura_nats_connected() && !await_reconnect(r, deadline, 0, 0)) {
        return NATS_CONNECTION_DISCONNECTED;
    }
    seen = aura_nats_losses();
    aura_inbox_sending(inbox);
    s = natsConnection_PublishMsg(nc, msg);
    if ((s == NATS_INSUFFICIENT_BUFFER || s == NATS_CONNECTION_DISCONNECTED)
        && await_reconnect(r, deadline, 1, seen)) {
        aura_inbox_sending(inbox);
        s = natsConnection_PublishMsg(nc, msg);
    }
    return s;
}

/* One attempt: publishes msg and waits for the first reply on inbox
 * until deadline; the reply belongs to r->pool.  Returns the nats.c
 * status (NATS_NO_RESPONDERS comes back as nats-server's status message);
 * *bus_failed when the publish failed, i.e. the request never left;
 * *gone (AURA_GONE_WAITING) when the client left during the wait. */
static natsStatus attempt(request_rec *r, natsConnection *nc, natsMsg *msg,
                          aura_inbox_t *inbox, apr_time_t deadline,
                          natsMsg **reply, int *bus_failed, int *gone)
{
    natsStatus s;

    *reply = NULL;
    *bus_failed = 0;
    /* The client was looked at right before: by the handler before the
     * first send, by sleep_unless_gone() before a retry.  While nats.c
     * reconnects it refuses the publish (it buffers nothing): publish()
     * waits for the reconnect and sends it then. */
    s = publish(r, nc, msg, inbox, deadline);
    if (s != NATS_OK) {
        *bus_failed = 1;
        return s;
    }
    s = aura_inbox_next_unless_gone(r, inbox, deadline, reply, gone);
    if (*gone) {
        *gone = AURA_GONE_WAITING;
    }
    if (s == NATS_OK) {
        apr_pool_cleanup_register(r->pool, *reply, aura_nats_msg_cleanup,
                                  apr_pool_cleanup_null);
    }
    return s;
}

/* attempt() as a span of its own under the request's client span
 * (retries show one each): an error when nobody answered. */
static natsStatus traced_attempt(request_rec *r, int client, int n,
                                 natsConnection *nc, natsMsg *msg,
                                 aura_inbox_t *inbox, apr_time_t deadline,
                                 natsMsg **reply, int *bus_failed, int *gone)
{
    int span = aura_tracing_start(r, client, "attempt", AURA_SPAN_INTERNAL,
                                  NULL);
    natsStatus s;

    aura_tracing_attr_int(r, span, "aura.attempt", n);
    s = attempt(r, nc, msg, inbox, deadline, reply, bus_failed, gone);
    aura_tracing_end(r, span, s == NATS_OK ? AURA_SPAN_UNSET
                                           : AURA_SPAN_ERROR,
                     natsStatus_GetText(s));
    return s;
}

/* Sleeps for wait, in slices; 1 (at once) when the client is gone. */
static int sleep_unless_gone(request_rec *r, apr_interval_time_t wait)
{
    apr_time_t end = apr_time_now() + wait;

    for (;;) {
        apr_time_t now = apr_time_now();

        if (aura_client_gone(r)) {
            return 1;
        }
        if (now >= end) {
            return 0;
        }
        apr_sleep(end - now > AURA_GONE_SLICE ? AURA_GONE_SLICE
                                              : end - now);
    }
}

/* ---- retries: only on proof of non-delivery ------------------------
 * No responders means the server had nobody to give the request to:
 * sending it again cannot run it twice.  Retries back off (25 ms,
 * doubling, at most 1 s), stay inside the route's budget, and, across
 * all children, may be at most AURA_RETRY_BUDGET_PERCENT of the requests
 * waiting on an upstream (at least AURA_RETRY_BUDGET_MIN), so that
 * retries never multiply an outage. */
#define RETRY_FIRST_WAIT apr_time_from_msec(25)
#define RETRY_MAX_WAIT   apr_time_from_sec(1)

static apr_status_t gauge_down(void *gauge)
{
    apr_atomic_dec64(gauge);
    return APR_SUCCESS;
}

/* Counts r among the requests waiting on an upstream, until r->pool
 * goes. */
static void count_active(request_rec *r)
{
    volatile apr_uint64_t *active = aura_shm_flag(AURA_FLAG_ACTIVE);

    if (active) {
        apr_atomic_inc64(active);
        apr_pool_cleanup_register(r->pool, (void *)active, gauge_down,
                                  apr_pool_cleanup_null);
    }
}

/* Takes a place in the shared retry budget; 0 when it is spent. */
static int retry_budget_take(void)
{
    volatile apr_uint64_t *active = aura_shm_flag(AURA_FLAG_ACTIVE);
    volatile apr_uint64_t *retrying = aura_shm_flag(AURA_FLAG_RETRYING);
    apr_uint64_t allowed, now;

    if (!active || !retrying) {
        return 0;
    }
    allowed = apr_atomic_read64(active) * AURA_RETRY_BUDGET_PERCENT / 100;
    if (allowed < AURA_RETRY_BUDGET_MIN) {
        allowed = AURA_RETRY_BUDGET_MIN;
    }
    do {
        now = apr_atomic_read64(retrying);
        if (now >= allowed) {
            return 0;
        }
    } while (apr_atomic_cas64(retrying, now + 1, now) != now);
    return 1;
}

static void retry_budget_give(void)
{
    apr_atomic_dec64(aura_shm_flag(AURA_FLAG_RETRYING));
}

/* Sends out until a reply, a failure other than no responders, no
 * retry is left (attempts, budget of the route, budget of retries), or
 * the client is gone (*gone, see attempt()). */
static natsStatus send_with_retries(request_rec *r, int client,
                                    natsConnection *nc, natsMsg *out,
                                    aura_inbox_t *inbox, apr_time_t deadline,
                                    natsMsg **reply, int *bus_failed,
                                    int *gone)
{
    const aura_dir_conf_t *d = aura_dir_conf(r);
    int retries = aura_conf_retries(d);
    apr_interval_time_t wait = RETRY_FIRST_WAIT;
    natsStatus s;
    int n;

    s = traced_attempt(r, client, 1, nc, out, inbox, deadline, reply,
                       bus_failed, gone);
    for (n = 0; !*gone && s == NATS_NO_RESPONDERS && n < retries; n++) {
        if (apr_time_now() + wait >= deadline || !retry_budget_take()) {
            break;
        }
        if (sleep_unless_gone(r, wait)) {
            /* Nobody received the earlier sends: this one is not sent. */
            retry_budget_give();
            *gone = AURA_GONE_BEFORE_SEND;
            break;
        }
        aura_count(AURA_CTR_NATS_RETRIES);
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00093)
                      "no responders on %s: retry %d of %d",
                      natsMsg_GetSubject(out), n + 1, retries);
        s = traced_attempt(r, client, n + 2, nc, out, inbox, deadline, reply,
                           bus_failed, gone);
        retry_budget_give();
        wait = wait * 2 > RETRY_MAX_WAIT ? RETRY_MAX_WAIT : wait * 2;
    }
    return s;
}

/* The breaker's verdict on a request that got no reply (DESIGN.md
 * section 8): a timeout, or no responders once the retries are spent, is
 * the service's failure.  The bus itself failing (disconnected, a
 * publish or flush refused or not acknowledged) says nothing about the
 * service and gives none: the hold is released with r->pool.  A reply's
 * verdict is send_reply()'s, once it is decoded. */
static void verdict_no_reply(aura_breaker_hold_t *hold, natsStatus s,
                             int bus_failed)
{
    if (bus_failed) {
        return;
    }
    if (s == NATS_TIMEOUT) {
        aura_count(AURA_CTR_NATS_TIMEOUTS);
        aura_breaker_verdict(hold, 0);
    }
    else if (s == NATS_NO_RESPONDERS) {
        aura_count(AURA_CTR_NATS_NO_RESPONDERS);
        aura_breaker_verdict(hold, 0);
    }
}

/* The envelope of r for subject, with a reply inbox of its own: OK, or
 * the status to answer with (the problem noted). */
static int make_message(request_rec *r, const char *subject,
                        apr_int64_t limit, aura_inbox_t **inbox,
                        natsMsg **msg)
{
    aura_request_t *rq = aura_request_get(r);
    aura_envelope_req_t in;
    natsStatus s;
    int rc;

    memset(&in, 0, sizeof(in));
    rc = read_body(r, limit, &in.body, &in.body_len);
    if (rc != OK) {
        return rc;
    }
    in.method = r->method;
    in.path = raw_path(r);
    in.query = r->args;
    in.request_id = rq->request_id;
    in.plane = aura_plane_name(rq->plane);
    aura_forward_credentials(r, r->headers_in);
    in.headers = r->headers_in;
    in.project = rq->project;
    in.org = rq->org;
    in.role = rq->role;
    in.key_role = rq->key_role;
    in.actor = rq->actor;
    in.traceparent = rq->traceparent;
    in.tracestate = rq->tracestate;
    s = aura_inbox_open(r->pool, inbox);
    if (s != NATS_OK) {
        return request_failed(r, s, subject, limit);
    }
    in.reply = aura_inbox_subject(*inbox);
    s = aura_envelope_encode(r->pool, subject, &in, msg);
    if (s != NATS_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00025)
                      "cannot build the NATS message: %s",
                      natsStatus_GetText(s));
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    apr_pool_cleanup_register(r->pool, *msg, aura_nats_msg_cleanup,
                              apr_pool_cleanup_null);
    return OK;
}

/* Sends msg under the service's breaker and in-flight cap, then relays
 * the reply; the status of the answer. */
static int exchange(request_rec *r, const aura_dir_conf_t *d,
                    natsConnection *nc, natsMsg *msg, aura_inbox_t *inbox,
                    apr_int64_t limit)
{
    apr_time_t deadline = apr_time_now() + aura_route_timeout(d);
    natsMsg *reply = NULL;
    aura_breaker_hold_t *hold = NULL;
    aura_cap_hold_t *slot = NULL;
    int bus_failed = 0, gone = 0;
    natsStatus s;
    int rc, client;

    /* A request that waited for a worker after its client left takes no
     * probe of the breaker either. */
    if (aura_client_gone(r)) {
        return aura_client_abandoned(r, "before-send", d->upstream);
    }
    /* Right before the network call: an open breaker leaves the service
     * untouched. */
    rc = aura_breaker_enter(r, d->service, NULL, &hold);
    if (rc != OK) {
        return rc;
    }
    /* Then a slot of the service and of the plane (aura_bulkhead.c):
     * past the cap, 503 service-saturated at once, nothing sent. */
    rc = aura_cap_enter(r, d->service, &slot);
    if (rc != OK) {
        return rc;
    }
    count_active(r);
    /* The upstream call's span: its id is the parent id of the
     * traceparent the service receives, so the service's span is its
     * child.  It ends with the handler (the reply relayed), or with the
     * request. */
    client = aura_tracing_start(r, 0, apr_pstrcat(r->pool, "send ",
                                                  d->upstream, NULL),
                                AURA_SPAN_CLIENT, aura_tracing_client_id(r));
    aura_tracing_attr_str(r, client, "messaging.system", "nats");
    aura_tracing_attr_str(r, client, "messaging.operation.type", "send");
    aura_tracing_attr_str(r, client, "messaging.destination.name",
                          d->upstream);
    s = send_with_retries(r, client, nc, msg, inbox, deadline, &reply,
                          &bus_failed, &gone);
    if (gone) {
        /* No verdict: the hold goes back with r->pool (DESIGN.md
         * section 8, "client went away"). */
        aura_cap_leave(slot);
        return aura_client_abandoned(r, gone == AURA_GONE_WAITING
                                        ? "waiting" : "before-send",
                                     d->upstream);
    }
    if (s != NATS_OK) {
        aura_cap_leave(slot);
        verdict_no_reply(hold, s, bus_failed);
        rc = request_failed(r, s, d->upstream, limit);
        aura_tracing_stage_end(r, client, rc);
        return rc;
    }
    /* Held while the reply is relayed: a stream keeps the service (and
     * this worker) busy until it ends, on the long-lived budget from its
     * begin message on (aura_stream_relay()).  Given back when the
     * handler returns, not with r->pool, which may outlive the worker
     * while the MPM finishes writing to a slow client. */
    rc = send_reply(r, reply, inbox, d->upstream, hold, slot);
    aura_cap_leave(slot);
    aura_tracing_stage_end(r, client, rc);
    return rc;
}

int aura_natsproxy_handler(request_rec *r)
{
    const aura_route_t *route = aura_request_route(r);
    aura_dir_conf_t *d;
    aura_inbox_t *inbox = NULL;
    natsMsg *msg = NULL;
    apr_int64_t limit;
    int rc;

    /* The routing stage's decision (aura_route.c): HTTP routes are
     * mod_proxy's (aura_httpproxy.c). */
    if (!r->handler || strcmp(r->handler, AURA_HANDLER_SERVICE) || !route
        || route->kind != AURA_ROUTE_NATS) {
        return DECLINED;
    }
    d = aura_dir_conf(r);
    if (d->service == AURA_UNSET) {
        return DECLINED;
    }
    if (!aura_nats_connected()
        && !await_reconnect(r, apr_time_now() + aura_route_timeout(d), 0,
                            0)) {
        /* A refused TLS handshake or credentials: the log says which. */
        aura_nats_report(r->server, aura_nats_conn(), NATS_OK);
        return refuse(r, HTTP_SERVICE_UNAVAILABLE, "upstream-error",
                      "the message bus is unavailable");
    }
    limit = aura_nats_max_payload();
    if (aura_declared_length(r) > limit) {
        return aura_too_large(r, limit);
    }
    rc = make_message(r, d->upstream, limit, &inbox, &msg);
    if (rc != OK) {
        return rc;
    }
    return exchange(r, d, aura_nats_conn(), msg, inbox, limit);
}
