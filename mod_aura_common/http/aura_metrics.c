/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_metrics.c: the "aura-metrics" handler (SetHandler aura-metrics on
 * /metrics of both planes): the shared segment's tables in Prometheus
 * text exposition format 0.0.4, summed across all children by
 * construction (every child counts into the same words).
 *
 * It answers only to its own bearer token (AuraMetricsTokenFile): no
 * API key, no JWT parsing (DESIGN.md section 8); the comparison takes
 * the same time whatever the guess.  Without a token configured the
 * handler refuses (403): metrics name services and projects' traffic.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "http/aura_metrics.h"
#include "limit/aura_gcra_table.h"
#include "resilience/aura_breaker_fsm.h"
#include "resilience/aura_bulkhead.h"
#include "resilience/aura_streamend.h"
#include "resilience/aura_streams.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"

#include "http_protocol.h"
#include "apr_strings.h"
#include "apr_atomic.h"

#define HANDLER "aura-metrics"

static const char *const class_names[AURA_STATUS_CLASSES] = {
    "1xx", "2xx", "3xx", "4xx", "5xx"
};

/* Equal length and bytes, in time that depends on the length only. */
static int token_equal(const char *a, const char *b)
{
    apr_size_t la = strlen(a), lb = strlen(b), i;
    unsigned char diff = la != lb;

    for (i = 0; i < la; i++) {
        diff |= (unsigned char)a[i] ^ (unsigned char)b[i % (lb ? lb : 1)];
    }
    return !diff;
}

static int authorized(request_rec *r, const char *token)
{
    const char *auth = apr_table_get(r->headers_in, "Authorization");

    return auth && !strncasecmp(auth, "Bearer ", 7)
           && token_equal(auth + 7, token);
}

static void family(request_rec *r, const char *name, const char *type,
                   const char *help)
{
    ap_rprintf(r, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(request_rec *r, const char *name, const char *help,
                    const char *labels, apr_uint64_t v)
{
    family(r, name, "counter", help);
    ap_rprintf(r, "%s%s %" APR_UINT64_T_FMT "\n", name, labels, v);
}

static void traffic(request_rec *r)
{
    aura_traffic_t t;
    int p, s, c, b;

    aura_shm_traffic(&t);
    family(r, "aura_requests_total", "counter",
           "Requests answered, by plane, service and status class.");
    for (p = 0; p < AURA_PLANES; p++) {
        for (s = 0; s <= AURA_SVC_COUNT; s++) {
            for (c = 0; c < AURA_STATUS_CLASSES; c++) {
                if (t.requests[p][s][c]) {
                    ap_rprintf(r, "aura_requests_total{plane=\"%s\","
                               "service=\"%s\",class=\"%s\"} %"
                               APR_UINT64_T_FMT "\n", aura_plane_at(p)->name,
                               s < AURA_SVC_COUNT ? aura_service_names[s]
                                                  : "none",
                               class_names[c], t.requests[p][s][c]);
                }
            }
        }
    }
    family(r, "aura_request_duration_seconds", "histogram",
           "Time from the request line to the access log line.");
    for (p = 0; p < AURA_PLANES; p++) {
        apr_uint64_t cumulative = 0;

        for (b = 0; b < AURA_LATENCY_BUCKETS; b++) {
            cumulative += t.latency[p][b];
            if (b < AURA_LATENCY_BUCKETS - 1) {
                ap_rprintf(r, "aura_request_duration_seconds_bucket{plane="
                           "\"%s\",le=\"%g\"} %" APR_UINT64_T_FMT "\n",
                           aura_plane_at(p)->name, aura_latency_bounds[b],
                           cumulative);
            }
            else {
                ap_rprintf(r, "aura_request_duration_seconds_bucket{plane="
                           "\"%s\",le=\"+Inf\"} %" APR_UINT64_T_FMT "\n",
                           aura_plane_at(p)->name, cumulative);
            }
        }
        ap_rprintf(r, "aura_request_duration_seconds_sum{plane=\"%s\"} "
                   "%.6f\n", aura_plane_at(p)->name,
                   (double)t.latency_sum_us[p] / APR_USEC_PER_SEC);
        ap_rprintf(r, "aura_request_duration_seconds_count{plane=\"%s\"} %"
                   APR_UINT64_T_FMT "\n", aura_plane_at(p)->name, cumulative);
    }
}

static void breakers(request_rec *r)
{
    int s;

    family(r, "aura_breaker_state", "gauge",
           "Circuit breaker of each service, and of the key store "
           "(service=\"store\"): 0 closed, 1 open, 2 half-open.");
    for (s = 0; s < AURA_SVC_COUNT; s++) {
        volatile apr_uint64_t *w = aura_shm_breaker(1 + s);

        ap_rprintf(r, "aura_breaker_state{service=\"%s\"} %d\n",
                   aura_service_names[s],
                   w ? (int)aura_breaker_state(apr_atomic_read64(w), NULL,
                                               NULL) : 0);
    }
    if (aura_db_configured()) {
        volatile apr_uint64_t *w = aura_shm_breaker(AURA_BREAKER_STORE);

        ap_rprintf(r, "aura_breaker_state{service=\"store\"} %d\n",
                   w ? (int)aura_breaker_state(apr_atomic_read64(w), NULL,
                                               NULL) : 0);
    }
    family(r, "aura_breaker_transitions_total", "counter",
           "Breaker state changes (services and dedicated targets), by the "
           "state entered.");
    ap_rprintf(r, "aura_breaker_transitions_total{to=\"open\"} %"
               APR_UINT64_T_FMT "\naura_breaker_transitions_total{to=\""
               "half-open\"} %" APR_UINT64_T_FMT "\n"
               "aura_breaker_transitions_total{to=\"closed\"} %"
               APR_UINT64_T_FMT "\n",
               aura_shm_counter(AURA_CTR_BREAKER_OPENED),
               aura_shm_counter(AURA_CTR_BREAKER_HALF_OPENED),
               aura_shm_counter(AURA_CTR_BREAKER_CLOSED));
    counter(r, "aura_breaker_rejections_total", "Requests refused with 503 "
            "breaker-open.", "", aura_shm_counter(AURA_CTR_BREAKER_REJECTED));
    counter(r, "aura_breaker_probe_recovered_total", "Half-open probes "
            "taken over from a holder that died or outlived its budget.",
            "", aura_shm_counter(AURA_CTR_BREAKER_PROBE_RECOVERED));
}

static void two(request_rec *r, const char *name, const char *type,
                const char *help, const char *label, const char *a,
                aura_counter_e ca, const char *b, aura_counter_e cb)
{
    family(r, name, type, help);
    ap_rprintf(r, "%s{%s=\"%s\"} %" APR_UINT64_T_FMT "\n%s{%s=\"%s\"} %"
               APR_UINT64_T_FMT "\n", name, label, a, aura_shm_counter(ca),
               name, label, b, aura_shm_counter(cb));
}

/* One series per rate-limit table: each zone has its own, and the actor
 * quota's local fallback one more (stage="actor"). */
static void tables(request_rec *r)
{
    aura_limiter_slot_t *slots;
    aura_shm_table_t *t;
    apr_uint64_t sets;
    int n;

    family(r, "aura_limiter_table_full_total", "counter",
           "Requests admitted for want of a free entry in a rate-limit "
           "table, by table.");
    for (n = 1; (t = aura_shm_table(n, &slots, &sets)); n++) {
        if (n == AURA_TABLE_ACTOR) {
            ap_rprintf(r, "aura_limiter_table_full_total{stage=\"actor\"} %"
                       APR_UINT64_T_FMT "\n", apr_atomic_read64(&t->full));
        }
        else {
            ap_rprintf(r, "aura_limiter_table_full_total{stage=\"ip\","
                       "zone=\"%s\"} %" APR_UINT64_T_FMT "\n", t->name,
                       apr_atomic_read64(&t->full));
        }
    }
    family(r, "aura_limiter_zone_rejections_total", "counter",
           "Requests refused with 429 by stage 1, by zone.");
    for (n = AURA_TABLE_ACTOR + 1; (t = aura_shm_table(n, &slots, &sets));
         n++) {
        ap_rprintf(r, "aura_limiter_zone_rejections_total{zone=\"%s\"} %"
                   APR_UINT64_T_FMT "\n", t->name,
                   apr_atomic_read64(&t->rejected));
    }
}

static void policy(request_rec *r)
{
    volatile apr_uint64_t *down = aura_shm_flag(AURA_FLAG_REDIS_DOWN);

    two(r, "aura_limiter_rejections_total", "counter",
        "Requests refused with 429, by stage.", "stage", "ip",
        AURA_CTR_IP_REJECTED, "actor", AURA_CTR_ACTOR_REJECTED);
    tables(r);
    two(r, "aura_actor_quota_decisions_total", "counter",
        "Actor quota decisions, by who made them.", "by", "redis",
        AURA_CTR_ACTOR_REDIS, "fallback", AURA_CTR_ACTOR_FALLBACK);
    ap_rprintf(r, "aura_actor_quota_decisions_total{by=\"lease\"} %"
               APR_UINT64_T_FMT "\n", aura_shm_counter(AURA_CTR_ACTOR_LEASE));
    counter(r, "aura_anon_quota_rejections_total", "Anonymous requests "
            "(the anon key, no user token) refused by the actor quota.", "",
            aura_shm_counter(AURA_CTR_ANON_REJECTED));
    counter(r, "aura_redis_errors_total", "Failed Redis calls.", "",
            aura_shm_counter(AURA_CTR_REDIS_ERRORS));
    family(r, "aura_redis_fallback", "gauge",
           "1 while actor quotas are enforced locally (Redis down).");
    ap_rprintf(r, "aura_redis_fallback %d\n",
               down && apr_atomic_read64(down) ? 1 : 0);
    counter(r, "aura_jwt_verifications_total", "Bearer token signatures "
            "checked.", "", aura_shm_counter(AURA_CTR_JWT_VERIFY));
    two(r, "aura_key_cache_lookups_total", "counter",
        "API key lookups, by where the answer came from.", "result", "hit",
        AURA_CTR_KEY_HITS, "miss", AURA_CTR_KEY_MISSES);
    two(r, "aura_key_last_used_total", "counter", "API keys whose "
        "last-used time the batch writer wrote, or dropped because the "
        "key store did not take the batch (AuraKeyLastUsedInterval).",
        "result", "written", AURA_CTR_KEY_USED_WRITTEN, "lost",
        AURA_CTR_KEY_USED_LOST);
}

static void upstreams(request_rec *r)
{
    counter(r, "aura_nats_retries_total", "NATS requests sent again after "
            "no responders.", "", aura_shm_counter(AURA_CTR_NATS_RETRIES));
    counter(r, "aura_nats_no_responders_total", "NATS requests that ended "
            "without responders.", "",
            aura_shm_counter(AURA_CTR_NATS_NO_RESPONDERS));
    counter(r, "aura_nats_timeouts_total", "NATS requests whose budget ran "
            "out.", "", aura_shm_counter(AURA_CTR_NATS_TIMEOUTS));
    counter(r, "aura_http_timeouts_total", "HTTP upstream requests whose "
            "budget ran out.", "", aura_shm_counter(AURA_CTR_HTTP_TIMEOUTS));
    counter(r, "aura_stream_ack_refused_total", "Streamed replies aborted "
            "because the service named an acknowledgement subject outside "
            "AuraStreamAckPrefix.", "",
            aura_shm_counter(AURA_CTR_STREAM_ACK_REFUSED));
    counter(r, "aura_connections_refused_total", "Connections closed at "
            "once: their address had AuraMaxConnectionsPerAddress open.", "",
            aura_shm_counter(AURA_CTR_CONN_REFUSED));
    counter(r, "aura_connections_busy_total", "Connections closed at once: "
            "their listener had AuraMaxReadingConnections reading and their "
            "address prefix held as many of them as any other.", "",
            aura_shm_counter(AURA_CTR_CONN_BUSY));
    counter(r, "aura_connections_shed_total", "Connections still sending "
            "their first request closed to admit a newcomer: the oldest of "
            "the address prefix holding the most of AuraMaxReadingConnections.",
            "", aura_shm_counter(AURA_CTR_CONN_SHED));
    counter(r, "aura_connections_h2_preface_timeout_total", "HTTP/2 "
            "connections closed: no preface and SETTINGS within "
            "AuraH2PrefaceTimeout.", "",
            aura_shm_counter(AURA_CTR_CONN_PREFACE_TIMEOUT));
    counter(r, "aura_connection_table_full_total", "Connections admitted "
            "without a per-address count: no free entry in the table.", "",
            aura_shm_counter(AURA_CTR_CONN_TABLE_FULL));
    counter(r, "aura_connections_reclaimed_total", "Connections counted "
            "out for a child process that exited without doing it.", "",
            aura_shm_counter(AURA_CTR_CONN_RECLAIMED));
    two(r, "aura_requests_abandoned_total", "counter",
        "Requests given up because their client closed the connection, by "
        "stage: before they were sent (never sent) or while their reply "
        "was awaited.", "stage", "before_send", AURA_CTR_GONE_BEFORE_SEND,
        "waiting", AURA_CTR_GONE_WAITING);
    counter(r, "aura_late_replies_dropped_total", "NATS replies dropped "
            "because their request no longer waited (budget spent, client "
            "gone, stream ended).", "",
            aura_shm_counter(AURA_CTR_LATE_REPLIES));
    family(r, "aura_db_routes_total", "counter",
           "Decisions of the /v1/db router.");
    ap_rprintf(r, "aura_db_routes_total{to=\"nats\"} %" APR_UINT64_T_FMT
               "\naura_db_routes_total{to=\"http\"} %" APR_UINT64_T_FMT
               "\naura_db_routes_total{to=\"unresolved\"} %"
               APR_UINT64_T_FMT "\n", aura_shm_counter(AURA_CTR_DB_NATS),
               aura_shm_counter(AURA_CTR_DB_HTTP),
               aura_shm_counter(AURA_CTR_DB_UNRESOLVED));
}

/* Spans (trace/aura_exporter.c): recorded = exported + dropped +
 * queued, once every child's exporter is idle. */
static void tracing(request_rec *r)
{
    volatile apr_uint64_t *queued = aura_shm_flag(AURA_FLAG_TRACE_QUEUED);

    counter(r, "aura_trace_spans_recorded_total", "Spans of sampled "
            "requests handed to the exporter.", "",
            aura_shm_counter(AURA_CTR_SPANS_RECORDED));
    counter(r, "aura_trace_spans_exported_total", "Spans a collector "
            "accepted.", "", aura_shm_counter(AURA_CTR_SPANS_EXPORTED));
    two(r, "aura_trace_spans_dropped_total", "counter", "Spans dropped, "
        "by reason: the exporter's queue was full, or their batch was not "
        "accepted.", "reason", "queue_full", AURA_CTR_SPANS_DROPPED_QUEUE,
        "export_failed", AURA_CTR_SPANS_DROPPED_EXPORT);
    counter(r, "aura_trace_export_failures_total", "Batches a collector "
            "did not accept (no answer in time, not 2xx).", "",
            aura_shm_counter(AURA_CTR_TRACE_EXPORT_FAILURES));
    family(r, "aura_trace_spans_queued", "gauge",
           "Spans waiting in the exporters' queues or being posted.");
    ap_rprintf(r, "aura_trace_spans_queued %" APR_UINT64_T_FMT "\n",
               queued ? apr_atomic_read64(queued) : 0);
}

int aura_metrics_handler(request_rec *r)
{
    const char *token;

    if (!r->handler || strcmp(r->handler, HANDLER)) {
        return DECLINED;
    }
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    token = aura_server_conf(r->server)->metrics_token;
    if (!token) {
        aura_problem_note(r, "forbidden", "metrics are off here: no "
                          "AuraMetricsTokenFile");
        return HTTP_FORBIDDEN;
    }
    if (!authorized(r, token)) {
        apr_table_setn(r->err_headers_out, "WWW-Authenticate", "Bearer");
        aura_problem_note(r, "invalid-token", "the metrics token is "
                          "required");
        return HTTP_UNAUTHORIZED;
    }
    ap_set_content_type(r, "text/plain; version=0.0.4; charset=utf-8");
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    if (r->header_only) {
        return OK;
    }
    traffic(r);
    policy(r);
    breakers(r);
    aura_cap_metrics(r);
    aura_stream_metrics(r);
    aura_streamend_metrics(r);
    upstreams(r);
    tracing(r);
    return OK;
}

/* AuraMetricsTokenFile: read once, at config time; the token is never
 * logged.  At least 16 characters, printable, one line. */
const char *aura_set_metrics_token(cmd_parms *cmd, void *dummy,
                                   const char *path)
{
    const char *file = ap_server_root_relative(cmd->temp_pool, path);
    apr_file_t *f;
    char buf[512];
    apr_size_t n = sizeof(buf) - 1, i;

    (void)dummy;
    if (!file || apr_file_open(&f, file, APR_READ, 0, cmd->temp_pool)
                 != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: cannot read '%s'",
                            cmd->cmd->name, path);
    }
    if (apr_file_read(f, buf, &n) != APR_SUCCESS) {
        n = 0;
    }
    apr_file_close(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'
                 || buf[n - 1] == ' ')) {
        buf[--n] = '\0';
    }
    for (i = 0; i < n; i++) {
        if (buf[i] <= ' ' || buf[i] > '~') {
            n = 0;
        }
    }
    if (n < 16) {
        return apr_psprintf(cmd->pool, "%s: '%s' must hold one token of 16 "
                            "to 511 printable characters", cmd->cmd->name,
                            path);
    }
    aura_cmd_server_conf(cmd)->metrics_token = apr_pstrdup(cmd->pool, buf);
    return NULL;
}
