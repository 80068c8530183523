/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_stream.c: streamed NATS replies (docs/envelope.md, "Streamed
 * replies").  A reply carrying "Aura-Stream: begin" opens a stream on
 * the request's own inbox: the begin message gave the status and the
 * headers (aura_natsproxy.c applied them), later messages carry Aura-Seq
 * 1, 2, ... and body bytes, the last one "Aura-Stream: end".
 *
 * Memory is bounded by flow control, not by the body: each message is
 * passed down the output filters with a FLUSH (so it is on the socket,
 * not in a filter), only then acknowledged on its reply subject, and
 * only then destroyed.  The service keeps at most a window of
 * unacknowledged messages, so what this child holds for one stream is
 * that window of messages in its inbox (aura_inbox.c), never more than
 * the inbox's limits; a service that ignores the window overflows them
 * and the stream aborts.
 * Nothing per message is allocated from r->pool: the brigade is reused,
 * the buckets point into the message, and the message's pool cleanup is
 * run (not just killed) as soon as it is acknowledged.
 *
 * Once the headers are out the status cannot change: a gap in Aura-Seq,
 * a malformed message, the idle budget running out (the Location's
 * AuraTimeout between two messages) or a NATS failure aborts the
 * response the way mod_proxy does for a backend that broke mid-body
 * (an error bucket: no last chunk, the connection is closed), and is
 * logged with its own tag.  A client that went away, or a failure to
 * ack, stops the stream too.  Either way the gateway tells the service
 * with "Aura-Stream: cancel" on the last reply subject it saw, and the
 * inbox goes with r->pool: what still arrives for it is dropped.
 *
 * Acknowledgements and cancels go only where the gateway allows: a
 * service names the reply subject of each message, and the gateway
 * publishes there with its own credentials, so a subject outside the
 * Location's AuraStreamAckPrefix (by default _INBOX., the inbox
 * namespace) or inside the gateway's own reply inbox refuses the
 * stream (aura_subject.c): before the begin message is relayed it is a
 * 502, after it an abort; either way logged once (AURA00500) and
 * counted.  Nothing is ever published on such a subject.
 *
 * Runs on the request's worker thread only; the connection is the
 * child's shared one (nats.c locks internally).
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "http/aura_route_conf.h"
#include "nats/aura_inbox.h"
#include "nats/aura_nats.h"
#include "nats/aura_stream.h"
#include "nats/aura_subject.h"
#include "resilience/aura_gone.h"
#include "resilience/aura_streamend.h"
#include "resilience/aura_streams.h"
#include "shm/aura_shm.h"
#include "nats/aura_envelope.h"

#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"
#include "apr_lib.h"

#include <nats/nats.h>
#include <stdlib.h>

#define AURA_HDR_STREAM "Aura-Stream"
#define AURA_HDR_SEQ    "Aura-Seq"

typedef struct {
    request_rec *r;
    natsConnection *nc;
    aura_inbox_t *inbox;
    apr_bucket_brigade *bb;
    const char *subject;
    const char *ack_prefix;       /* AuraStreamAckPrefix */
    apr_off_t bytes;              /* body bytes handed to the client */
    apr_int64_t messages;         /* stream messages received */
    aura_streamend_t *watch;      /* its credential's (aura_streamend.c) */
    /* The reply subject of the last message received, where a cancel
     * goes; a fixed buffer, so a long stream allocates nothing. */
    char last_reply[512];
} stream_t;

/* The values of a header whose name matches case-insensitively (nats.c
 * matches names exactly; the envelope does not).  Returns how many
 * values there are over all spellings, and the first one in *value. */
static int header_ci(natsMsg *m, const char *name, const char **value)
{
    const char **keys = NULL;
    int count = 0, i, n = 0;

    *value = NULL;
    if (natsMsgHeader_Keys(m, &keys, &count) != NATS_OK) {
        return 0;
    }
    for (i = 0; i < count; i++) {
        const char **values = NULL;
        int k = 0;

        if (strcasecmp(keys[i], name)
            || natsMsgHeader_Values(m, keys[i], &values, &k) != NATS_OK) {
            continue;
        }
        if (!n && k) {
            /* Points into the message, which outlives the caller's use. */
            *value = values[0];
        }
        n += k;
        free((void *)values);
    }
    free((void *)keys);
    return n;
}

aura_stream_mark_e aura_stream_mark(struct __natsMsg *m, const char **why)
{
    const char *v;
    int n = header_ci(m, AURA_HDR_STREAM, &v);

    *why = NULL;
    if (n == 0) {
        return AURA_STREAM_NONE;
    }
    if (n > 1) {
        *why = "more than one Aura-Stream header";
        return AURA_STREAM_INVALID;
    }
    if (!strcasecmp(v, "begin")) {
        return AURA_STREAM_BEGIN;
    }
    if (!strcasecmp(v, "end")) {
        return AURA_STREAM_END;
    }
    *why = "Aura-Stream is neither begin nor end";
    return AURA_STREAM_INVALID;
}

/* Aura-Seq: one value, 1 to 18 decimal digits, above zero; else 0. */
static apr_int64_t parse_seq(natsMsg *m)
{
    const char *v, *c;
    apr_int64_t seq = 0;

    if (header_ci(m, AURA_HDR_SEQ, &v) != 1 || !*v || strlen(v) > 18) {
        return 0;
    }
    for (c = v; *c; c++) {
        if (!apr_isdigit(*c)) {
            return 0;
        }
        seq = seq * 10 + (*c - '0');
    }
    return seq;
}

/* Whether the gateway may publish on m's reply subject (a message
 * without one asks for no acknowledgement); when not, it is logged and
 * counted, and the caller stops the stream without a word to it. */
static int reply_allowed(stream_t *st, natsMsg *m, apr_int64_t n)
{
    const char *reply = natsMsg_GetReply(m), *why;

    if (!reply || !*reply) {
        return 1;
    }
    why = aura_subject_ack_refused(reply, st->ack_prefix,
                                   aura_inbox_prefix());
    if (!why) {
        return 1;
    }
    aura_count(AURA_CTR_STREAM_ACK_REFUSED);
    /* The subject is the service's: cut and cleaned for the log. */
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, st->r, AURA_LOGNO(00500)
                  "stream on %s refused at message %" APR_INT64_T_FMT
                  " (0 = begin): its acknowledgement subject '%s' is %s "
                  "(AuraStreamAckPrefix %s); nothing published there",
                  st->subject, n,
                  ap_escape_logitem(st->r->pool,
                                    apr_pstrndup(st->r->pool, reply, 128)),
                  why, st->ack_prefix);
    return 0;
}

static void remember_reply(stream_t *st, natsMsg *m)
{
    const char *reply = natsMsg_GetReply(m);

    /* Too long for the buffer: no cancel rather than a wrong subject. */
    if (!reply || strlen(reply) >= sizeof(st->last_reply)) {
        st->last_reply[0] = '\0';
        return;
    }
    memcpy(st->last_reply, reply, strlen(reply) + 1);
}

/* The acknowledgement: an empty message on the message's reply subject.
 * A message without one asked for no flow control. */
static natsStatus ack(stream_t *st, natsMsg *m)
{
    const char *reply = natsMsg_GetReply(m);

    if (!reply || !*reply) {
        return NATS_OK;
    }
    return natsConnection_Publish(st->nc, reply, NULL, 0);
}

/* Best effort: tells the service to stop sending at once, instead of
 * waiting out its own acknowledgement timeout. */
static void cancel(stream_t *st)
{
    natsMsg *m = NULL;

    if (!st->last_reply[0]
        || natsMsg_Create(&m, st->last_reply, NULL, NULL, 0) != NATS_OK) {
        return;
    }
    if (natsMsgHeader_Set(m, AURA_HDR_STREAM, "cancel") == NATS_OK) {
        (void)natsConnection_PublishMsg(st->nc, m);
    }
    aura_nats_msg_release(m);
    st->last_reply[0] = '\0';
}

/* Hands bytes to the client: data, FLUSH (so no filter keeps them and
 * the ack that follows is true), and EOS after the last message.  The
 * bucket is transient: a filter that must keep the bytes copies them. */
static apr_status_t pass(stream_t *st, const char *data, apr_size_t len,
                         int last)
{
    request_rec *r = st->r;
    apr_bucket_brigade *bb = st->bb;
    apr_status_t rv;

    if (len) {
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_transient_create(
            data, len, bb->bucket_alloc));
    }
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_flush_create(bb->bucket_alloc));
    if (last) {
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    }
    rv = ap_pass_brigade(r->output_filters, bb);
    apr_brigade_cleanup(bb);
    if (rv == APR_SUCCESS && r->connection->aborted) {
        rv = APR_ECONNABORTED;
    }
    if (rv == APR_SUCCESS) {
        st->bytes += len;
    }
    return rv;
}

/* The client went away (or its connection failed): stop. */
static int client_gone(stream_t *st, apr_status_t rv)
{
    cancel(st);
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, rv, st->r, AURA_LOGNO(00064)
                  "client went away after %" APR_OFF_T_FMT " bytes of the "
                  "stream on %s: stream cancelled", st->bytes, st->subject);
    return OK;
}

/* Ends a response whose headers are out: an error bucket (no last chunk,
 * connection closed, as mod_proxy's ap_proxy_backend_broke) and EOS.
 * The caller has logged why. */
static int abort_stream(stream_t *st)
{
    request_rec *r = st->r;
    apr_bucket_brigade *bb = st->bb;

    cancel(st);
    r->no_cache = 1;
    if (r->main) {
        r->main->no_cache = 1;
    }
    apr_brigade_cleanup(bb);
    APR_BRIGADE_INSERT_TAIL(bb, ap_bucket_error_create(
        HTTP_BAD_GATEWAY, NULL, r->pool, bb->bucket_alloc));
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(bb->bucket_alloc));
    (void)ap_pass_brigade(r->output_filters, bb);
    apr_brigade_cleanup(bb);
    return OK;
}

static int wait_failed(stream_t *st, natsStatus s, apr_interval_time_t idle)
{
    if (s == NATS_TIMEOUT) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, st->r, AURA_LOGNO(00061)
                      "stream on %s aborted after %" APR_OFF_T_FMT
                      " bytes: no message within the idle budget of %"
                      APR_TIME_T_FMT " ms", st->subject, st->bytes,
                      apr_time_as_msec(idle));
    }
    else {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, st->r, AURA_LOGNO(00063)
                      "stream on %s aborted after %" APR_OFF_T_FMT
                      " bytes: %s%s", st->subject, st->bytes,
                      natsStatus_GetText(s),
                      s == NATS_SLOW_CONSUMER
                          ? " (the service ignored the flow-control window)"
                          : "");
    }
    return abort_stream(st);
}

/* The stream has lasted its maximum duration (AuraStreamMaxDuration, an
 * hour unless the Location says otherwise): the gateway ends it as the
 * HTTP path does (the client sees the body end without its last chunk;
 * an EventSource reconnects), and the service is told to stop. */
static int cut_stream(stream_t *st, apr_interval_time_t max)
{
    aura_stream_count_cut(0);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, st->r, AURA_LOGNO(01600)
                  "stream on %s ended after %" APR_OFF_T_FMT " bytes: its "
                  "maximum duration of %" APR_TIME_T_FMT " ms is over "
                  "(AuraStreamMaxDuration)", st->subject, st->bytes,
                  apr_time_as_msec(max));
    return abort_stream(st);
}

/* The credential the stream was admitted with died (the watch of this
 * child said why, counted and logged it): the service is told to stop,
 * as for a client gone, and the client sees the end the HTTP path gives
 * (aura_httpproxy.c): an SSE stream ends cleanly after a final event
 * "aura-stream-end" naming the reason; any other body is aborted (no
 * last chunk), as at its maximum duration. */
static int cred_ended(stream_t *st)
{
    request_rec *r = st->r;
    const char *ev;
    int reason = aura_streamend_reason(st->watch);

    r->connection->keepalive = AP_CONN_CLOSE;
    if (!aura_streamend_is_sse(r)) {
        return abort_stream(st);
    }
    cancel(st);
    ev = apr_pstrcat(r->pool, AURA_STREAMEND_SSE_EVENT,
                     aura_end_reason_name(reason), "\n\n", NULL);
    (void)pass(st, ev, strlen(ev), 1);
    return OK;
}

/* The next message, by until; with a watch, in slices of
 * AURA_STREAMEND_TICK so that a dead credential ends a silent stream
 * within a second of the watcher's verdict (*ended set). */
static natsStatus wait_next(stream_t *st, apr_time_t until, natsMsg **m,
                            int *gone, int *ended)
{
    for (;;) {
        apr_time_t now = apr_time_now();
        apr_time_t slice = st->watch && until - now > AURA_STREAMEND_TICK
                           ? now + AURA_STREAMEND_TICK : until;
        natsStatus s;

        if (aura_streamend_reason(st->watch)) {
            *ended = 1;
            return NATS_TIMEOUT;
        }
        s = aura_inbox_next_unless_gone(st->r, st->inbox, slice, m, gone);
        if (s != NATS_TIMEOUT || *gone || slice >= until) {
            return s;
        }
    }
}

/* Checks one message after begin; returns 1 when it is the last one,
 * 0 for a middle one, -1 when the stream must abort (logged). */
static int check_message(stream_t *st, natsMsg *m, apr_int64_t expected)
{
    const char *why;
    aura_stream_mark_e mark = aura_stream_mark(m, &why);
    apr_int64_t seq;

    if (mark == AURA_STREAM_BEGIN) {
        why = "a second Aura-Stream: begin";
    }
    if (mark == AURA_STREAM_INVALID || mark == AURA_STREAM_BEGIN
        || !(seq = parse_seq(m))) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, st->r, AURA_LOGNO(00062)
                      "stream on %s aborted after %" APR_OFF_T_FMT
                      " bytes: malformed message %" APR_INT64_T_FMT ": %s",
                      st->subject, st->bytes, expected,
                      why ? why : "no valid Aura-Seq (1, 2, ...)");
        return -1;
    }
    if (seq != expected) {
        /* A service that skipped one; the inbox's drops (reported by
         * the wait right after them) are counted here too. */
        apr_int64_t dropped = aura_inbox_dropped(st->inbox);

        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, st->r, AURA_LOGNO(00060)
                      "stream on %s aborted after %" APR_OFF_T_FMT
                      " bytes: gap in Aura-Seq, %" APR_INT64_T_FMT
                      " arrived where %" APR_INT64_T_FMT " was expected "
                      "(%" APR_INT64_T_FMT " messages over the gateway's "
                      "pending limit)", st->subject, st->bytes, seq,
                      expected, dropped);
        return -1;
    }
    return mark == AURA_STREAM_END;
}

/* The messages after begin, the first acknowledgement's status s: each
 * becomes the response's next bytes until the end message.  Returns
 * the handler's status. */
static int relay_rest(stream_t *st, apr_interval_time_t idle, natsStatus s)
{
    request_rec *r = st->r;
    apr_interval_time_t max = aura_stream_max_duration(aura_dir_conf(r));
    apr_time_t end = r->request_time + max;
    apr_int64_t expected;
    apr_status_t rv;

    for (expected = 1; s == NATS_OK; expected++) {
        apr_time_t now = apr_time_now();
        natsMsg *m = NULL;
        int last, gone = 0, ended = 0;

        if (now >= end) {
            return cut_stream(st, max);
        }
        s = wait_next(st, now + idle < end ? now + idle : end, &m, &gone,
                      &ended);
        if (ended) {
            return cred_ended(st);
        }
        if (gone) {
            /* Between two messages of a slow stream: cancelled now, not
             * at the next write nor after the idle budget. */
            r->connection->aborted = 1;
            aura_count(AURA_CTR_GONE_WAITING);
            return client_gone(st, APR_ECONNABORTED);
        }
        if (s == NATS_TIMEOUT && apr_time_now() >= end) {
            return cut_stream(st, max);
        }
        if (s != NATS_OK) {
            return wait_failed(st, s, idle);
        }
        apr_pool_cleanup_register(r->pool, m, aura_nats_msg_cleanup,
                                  apr_pool_cleanup_null);
        st->messages++;
        if (!reply_allowed(st, m, expected)) {
            /* The cancel goes to the last allowed subject, if any. */
            return abort_stream(st);
        }
        remember_reply(st, m);
        last = check_message(st, m, expected);
        if (last < 0) {
            return abort_stream(st);
        }
        rv = pass(st, natsMsg_GetData(m),
                  (apr_size_t)natsMsg_GetDataLength(m), last);
        if (rv != APR_SUCCESS) {
            return client_gone(st, rv);
        }
        s = ack(st, m);
        /* Run, not kill: the message is freed now, not with r->pool. */
        apr_pool_cleanup_run(r->pool, m, aura_nats_msg_cleanup);
        if (last) {
            /* The response is complete even if the last ack was lost. */
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00065)
                          "stream on %s complete: %" APR_INT64_T_FMT
                          " messages after begin, %" APR_OFF_T_FMT
                          " bytes", st->subject, st->messages, st->bytes);
            return OK;
        }
    }
    /* An acknowledgement could not be published. */
    return wait_failed(st, s, idle);
}

int aura_stream_relay(request_rec *r, aura_inbox_t *inbox,
                      struct __natsMsg *begin, const char *body,
                      apr_size_t body_len, const char *subject,
                      aura_cap_hold_t *slot)
{
    apr_interval_time_t idle = aura_route_timeout(aura_dir_conf(r));
    apr_status_t rv;
    stream_t st;
    int rc;

    memset(&st, 0, sizeof(st));
    st.r = r;
    st.nc = aura_nats_conn();
    st.inbox = inbox;
    st.subject = subject;
    st.ack_prefix = aura_conf_stream_ack_prefix(aura_dir_conf(r));
    st.bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    if (!reply_allowed(&st, begin, 0)) {
        /* Nothing is out yet: the client gets a 502, not the service's
         * status (its headers are dropped with the error response). */
        r->status_line = NULL;
        aura_problem_note(r, "upstream-error", "the service sent a "
                          "malformed reply");
        return HTTP_BAD_GATEWAY;
    }
    remember_reply(&st, begin);

    if (r->header_only || AP_STATUS_IS_HEADER_ONLY(r->status)) {
        /* No body will be sent: headers only, and the service stops. */
        cancel(&st);
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00066)
                      "stream on %s not relayed: the response has no body "
                      "(HEAD, 204 or 304); stream cancelled", subject);
        (void)pass(&st, NULL, 0, 1);
        return OK;
    }
    /* A stream from now on: the long-lived budget instead of the
     * service's in-flight slot (aura_streams.c).  Refused, nothing is
     * out yet: the service is told to stop, and the client gets the
     * refusal instead of the service's status and headers. */
    rc = aura_stream_convert(r, aura_dir_conf(r)->service, slot, 0);
    if (rc != OK) {
        cancel(&st);
        r->status_line = NULL;
        apr_table_clear(r->headers_out);
        return rc;
    }
    /* From now on the stream ends with its credential. */
    st.watch = aura_streamend_watch(r, "nats", NULL, 0);
    /* Headers now, with the begin message's bytes if any. */
    rv = pass(&st, body, body_len, 0);
    if (rv != APR_SUCCESS) {
        return client_gone(&st, rv);
    }
    return relay_rest(&st, idle, ack(&st, begin));
}
