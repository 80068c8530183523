/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_streams.c: the long-lived budget (issue #28, point 2: "streams do
 * not take what other requests need"; docs/resilience.md, "Streams have
 * a budget of their own").
 *
 * A long-lived request (an SSE or any response of an AuraStreaming On
 * Location, a WebSocket tunnel, a streamed NATS reply) holds a worker
 * thread and an upstream for minutes or hours.  Counted among the short
 * requests' in-flight slots (aura_bulkhead.c), ten streams bought with
 * the public anon key filled the service's cap, and fourteen the data
 * plane's: every caller of every service got 503.  So a long-lived
 * request takes, instead of its service's in-flight slot:
 *
 *   - a record of the open streams (aura_streamtab.h) under two caps
 *     per principal: its client address (AuraStreamMaxPerAddress, IPv6
 *     by AuraRateLimitIPv6Prefix) and its actor, the API key or the
 *     user within the project (AuraStreamMaxPerActor).  Past either:
 *     429 stream-limit.  Checked first: a visitor who has his share is
 *     refused without touching any shared budget;
 *   - a slot of its plane's in-flight cap, as before: that cap is not a
 *     bulkhead of short requests but the plane's share of the workers
 *     (a stream holds a worker too), which keeps the other plane's
 *     share and the 10 % reserve for /health intact;
 *   - a slot of the plane's stream budget (AuraStreamMaxOpen; auto:
 *     half of the plane's share of the workers, 35 % on the data plane)
 *     and one of its service's (AuraServiceMaxStreams; auto: 25 %).
 *     Past either: 503 stream-saturated.  Since the stream budget is
 *     half the plane's share, the plane's short requests always keep
 *     the other half, whatever the streams do.
 *
 * When it is known: at fixups on the HTTP path for a streaming Location
 * or a WebSocket upgrade (aura_httpproxy.c), before anything is sent;
 * on a NATS route only when the reply says "Aura-Stream: begin"
 * (aura_stream.c): until then the request is a short one, and at begin
 * it converts (record and budget taken, then its service's in-flight
 * slot given back; refused, the stream is cancelled and the client gets
 * the 429 or 503 instead of the service's status).  A response of any
 * other HTTP route that is still being sent AuraStreamAfter after its
 * request arrived (a large download to a slow reader) converts the same
 * way, from an output filter (aura_httpproxy.c): past its principal's
 * cap it is ended there, past a budget it keeps its short slot.
 *
 * Everything is given back by aura_cap_leave() or r->pool's cleanup (the
 * hold of aura_bulkhead.c), and the counters and records of a killed
 * child by the parent, with its other holdings (the per-child records
 * of aura_bulkhead.c; the stream records carry the child's pid).
 * Lock-free: atomics only, no I/O while counting; logged after.
 */
#include "core/aura_clock.h"
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "limit/aura_connlimit.h"
#include "limit/aura_limit.h"
#include "limit/aura_limit_conf.h"
#include "resilience/aura_bulkhead.h"
#include "resilience/aura_cap.h"
#include "resilience/aura_streams.h"
#include "resilience/aura_streamtab.h"
#include "shm/aura_shm.h"

#include "http_protocol.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include <jansson.h>
#include <unistd.h>

/* Seconds between two log lines about one refusing cap. */
#define LOG_INTERVAL 10
/* A stream slot frees when a stream ends: rarely within a second. */
#define RETRY_AFTER  "5"

/* "auto", in percent of the instance's workers (the planes': in
 * core/aura_plane.h). */
#define AUTO_SERVICE_PCT 25
#define AUTO_ADDRESS_PCT 5
#define AUTO_ACTOR_PCT   10


static apr_uint64_t plane_streams_cap(const server_rec *s,
                                      aura_plane_e plane)
{
    return aura_cap_resolve(aura_server_conf(s)->stream_max_open,
                            aura_cap_workers(),
                            aura_plane_info(plane)->stream_auto_pct);
}

/* ---- refusals ---------------------------------------------------------- */

/* Whether this caller writes the log line of *logged now (at most one
 * per LOG_INTERVAL across the instance). */
static int log_due(volatile apr_uint64_t *logged)
{
    return aura_log_due(logged, LOG_INTERVAL);
}

/* 503 stream-saturated: the budget of counter idx (a service's or a
 * plane's) is full. */
static int refuse_budget(request_rec *r, aura_cap_shm_t *cap, int idx,
                         apr_uint64_t limit)
{
    int svc = idx < AURA_SVC_COUNT;
    const char *what = aura_cap_what(r->pool, idx);

    apr_atomic_inc64(&cap->stream_refused[idx]);
    if (log_due(&cap->stream_logged[idx])) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(01601)
                      "%s has %" APR_UINT64_T_FMT " streams open, its "
                      "budget (%s); refused with 503 stream-saturated (%"
                      APR_UINT64_T_FMT " so far; logged at most every "
                      "%d s)", what, limit,
                      svc ? "AuraServiceMaxStreams" : "AuraStreamMaxOpen",
                      apr_atomic_read64(&cap->stream_refused[idx]),
                      LOG_INTERVAL);
    }
    apr_table_setn(r->err_headers_out, "Retry-After", RETRY_AFTER);
    aura_problem_note(r, "stream-saturated",
                      apr_psprintf(r->pool, "%s has as many streams open as "
                                   "the gateway allows (%" APR_UINT64_T_FMT
                                   "); try again later", what, limit));
    return HTTP_SERVICE_UNAVAILABLE;
}

/* 429 stream-limit (the address or the actor has its share), or 503
 * stream-saturated (no free record). */
static int refuse_limit(request_rec *r, aura_cap_shm_t *cap, aura_stream_e e,
                        apr_uint64_t count, apr_uint64_t limit,
                        const char *prefix)
{
    aura_request_t *rq = aura_request_get(r);
    int address = e == AURA_STREAM_OVER_ADDRESS;

    apr_atomic_inc64(&cap->limited[e]);
    if (e == AURA_STREAM_TABLE_FULL) {
        if (log_due(&cap->limited_logged[e])) {
            ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(01602)
                          "no free record of the open streams (one per "
                          "thread, ServerLimit x ThreadLimit): refused with "
                          "503 stream-saturated (%" APR_UINT64_T_FMT " so "
                          "far; logged at most every %d s)",
                          apr_atomic_read64(&cap->limited[e]), LOG_INTERVAL);
        }
        apr_table_setn(r->err_headers_out, "Retry-After", RETRY_AFTER);
        aura_problem_note(r, "stream-saturated", "the gateway has as many "
                          "streams open as it has workers; try again later");
        return HTTP_SERVICE_UNAVAILABLE;
    }
    if (log_due(&cap->limited_logged[e])) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(01603)
                      "stream refused with 429 stream-limit: %s %s has %"
                      APR_UINT64_T_FMT " streams open, its cap (%s %"
                      APR_UINT64_T_FMT "; %" APR_UINT64_T_FMT " refused "
                      "by it so far; logged at most every %d s)",
                      address ? "address" : "actor",
                      address ? prefix
                              : apr_pstrcat(r->pool, rq->project
                                            ? rq->project : "-", "/",
                                            rq->actor, NULL),
                      count - 1, address ? "AuraStreamMaxPerAddress"
                                         : "AuraStreamMaxPerActor",
                      limit, apr_atomic_read64(&cap->limited[e]),
                      LOG_INTERVAL);
    }
    apr_table_setn(r->err_headers_out, "Retry-After", RETRY_AFTER);
    aura_problem_note(r, "stream-limit",
                      apr_psprintf(r->pool, "%s has as many streams open as "
                                   "the gateway allows one (%"
                                   APR_UINT64_T_FMT "); close one, or try "
                                   "again later", address
                                   ? "this client address" : "this API key "
                                   "or user", limit));
    return HTTP_TOO_MANY_REQUESTS;
}

/* ---- the record of a stream -------------------------------------------- */

/* Dead children holding records of the key that refused (any record
 * when the table is full): given back, so that one more try is worth
 * it.  Whether anything came back. */
static int reclaim_holders(request_rec *r, aura_stream_rec_t *recs,
                           apr_uint64_t n, aura_stream_e e,
                           apr_uint64_t addr, apr_uint64_t actor)
{
    apr_uint64_t i, me = (apr_uint64_t)getpid();
    int any = 0;

    for (i = 0; i < n; i++) {
        apr_uint64_t owner = apr_atomic_read64(&recs[i].owner)
                             & ~AURA_STREAM_CLAIMING;

        if (!owner || owner == me
            || (e == AURA_STREAM_OVER_ADDRESS && recs[i].addr != addr)
            || (e == AURA_STREAM_OVER_ACTOR && recs[i].actor != actor)) {
            continue;
        }
        any |= aura_cap_reclaim_pid(r->server, owner);
    }
    return any;
}

static int take_record(request_rec *r, aura_cap_shm_t *cap,
                       aura_cap_hold_t *h, int service)
{
    const aura_dir_conf_t *d = aura_dir_conf(r);
    aura_request_t *rq = aura_request_get(r);
    int v6 = aura_conf_ipv6_prefix(aura_server_conf(r->server));
    apr_uint64_t n, idx = 0, count = 0, addr, actor = 0, what;
    apr_uint64_t acap, kcap, w = aura_cap_workers();
    aura_stream_rec_t *recs = aura_shm_streams(&n);
    unsigned char bytes[AURA_ADDR_BYTES_MAX];
    char text[64];
    apr_size_t nb;
    const char *prefix;
    aura_stream_e e;
    int attempt;

    if (!recs) {
        return OK;
    }
    nb = aura_address_bytes(r->useragent_addr, v6, bytes);
    addr = aura_limiter_key("stream-address", "", bytes, nb);
    if (rq->actor) {
        /* 0 when too long for a key: no actor cap then (the actor quota
         * refused such an id long before). */
        actor = aura_limiter_key("stream-actor",
                                 rq->project ? rq->project : "",
                                 (const unsigned char *)rq->actor,
                                 strlen(rq->actor));
    }
    prefix = apr_pstrdup(r->pool, aura_prefix_text(bytes, nb == 5 ? 32 : v6,
                                                   text, sizeof(text)));
    what = ((apr_uint64_t)service << 32)
           | ((apr_uint64_t)apr_time_sec(apr_time_now()) & 0xffffffffu);
    acap = aura_cap_resolve(d->stream_per_address, w, AUTO_ADDRESS_PCT);
    kcap = aura_cap_resolve(d->stream_per_actor, w, AUTO_ACTOR_PCT);
    for (attempt = 0; ; attempt++) {
        e = aura_stream_claim(recs, n, (apr_uint64_t)getpid(), addr, actor,
                              what, prefix, acap, kcap, &idx, &count);
        if (e == AURA_STREAM_ADMITTED) {
            aura_cap_hold_set_record(h, idx);
            return OK;
        }
        /* A child killed while holding streams of this key keeps them
         * until the parent reaps it: taken back now if it is dead. */
        if (attempt || !reclaim_holders(r, recs, n, e, addr, actor)) {
            break;
        }
    }
    return refuse_limit(r, cap, e, count,
                        e == AURA_STREAM_OVER_ADDRESS ? acap : kcap, prefix);
}

/* The plane's and the service's stream budgets into h. */
static int take_budget(request_rec *r, aura_cap_shm_t *cap,
                       aura_cap_hold_t *h, int service)
{
    aura_request_t *rq = aura_request_get(r);
    int pidx = aura_cap_plane_index(rq->plane);
    apr_uint64_t pcap = plane_streams_cap(r->server, rq->plane);
    apr_uint64_t scap = aura_cap_resolve(aura_dir_conf(r)->max_streams,
                                         aura_cap_workers(),
                                         AUTO_SERVICE_PCT);

    int rc;

    /* Each class fills only its share of a budget (AuraShedding), as of
     * the in-flight caps: the public anon key cannot take the streams a
     * service_role backend needs. */
    rc = aura_cap_take_class(r, h, AURA_CAP_COUNTERS + pidx, pcap);
    if (rc == DECLINED) {
        return refuse_budget(r, cap, pidx, pcap);
    }
    if (rc != OK) {
        return rc;
    }
    rc = aura_cap_take_class(r, h, AURA_CAP_COUNTERS + service, scap);
    if (rc == DECLINED) {
        return refuse_budget(r, cap, service, scap);
    }
    return rc;
}

int aura_stream_enter(request_rec *r, int service, aura_cap_hold_t **out)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    aura_request_t *rq = aura_request_get(r);
    aura_cap_hold_t *h;
    int rc;

    *out = NULL;
    if (!cap || !rq || service < 0 || service >= AURA_SVC_COUNT) {
        return OK;
    }
    h = aura_cap_hold_make(r);
    /* The principal's share first: past it, no shared budget is
     * touched; then the plane's workers; then the stream budgets. */
    rc = take_record(r, cap, h, service);
    if (rc == OK) {
        rc = aura_cap_enter_plane(r, h);
    }
    if (rc == OK) {
        rc = take_budget(r, cap, h, service);
    }
    if (rc != OK) {
        aura_cap_leave(h);
        return rc;
    }
    *out = h;
    return OK;
}

int aura_stream_convert(request_rec *r, int service, aura_cap_hold_t *h,
                        int late)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    int rc;

    /* Nothing to convert once the request gave its slots back (what
     * would be taken now would never be given back). */
    if (!cap || aura_cap_hold_done(h) || service < 0
        || service >= AURA_SVC_COUNT) {
        return OK;
    }
    rc = take_record(r, cap, h, service);
    if (rc == OK) {
        rc = take_budget(r, cap, h, service);
    }
    if (rc != OK) {
        /* What this call took goes back now: the caller may go on with
         * the short slots (a late conversion refused by a budget). */
        aura_cap_hold_give(h, AURA_CAP_COUNTERS + aura_cap_plane_index(
                                  aura_request_get(r)->plane));
        aura_cap_hold_give(h, AURA_CAP_COUNTERS + service);
        aura_cap_hold_drop_record(h);
        return rc;
    }
    /* From now on a stream: its short slot is for the short requests. */
    aura_cap_hold_give(h, service);
    apr_atomic_inc64(late ? &cap->late : &cap->converted);
    return OK;
}

void aura_stream_count_cut(int late)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);

    if (cap) {
        apr_atomic_inc64(late ? &cap->late_cut : &cap->cut);
    }
}

apr_interval_time_t aura_stream_after(const aura_dir_conf_t *d)
{
    return d->stream_after != AURA_UNSET ? d->stream_after
                                         : AURA_STREAM_AFTER_DEFAULT;
}

apr_interval_time_t aura_stream_max_duration(const aura_dir_conf_t *d)
{
    return d->stream_max != AURA_UNSET ? d->stream_max
                                       : AURA_STREAM_MAX_DEFAULT;
}

/* ---- what operators see ------------------------------------------------ */

static const char *const limit_names[] = { "", "address", "actor",
                                           "table_full" };

/* /health with AuraHealthDetail On: "streams" {services, planes (open),
 * refused (503 stream-saturated by budget), limited (429 by cap, and
 * table_full), holders {by_address: prefix -> n, by_actor: keyed hash
 * -> n}, auto (the caps auto means), records, converted, cut, late,
 * late_cut, reclaimed}.  Never a key: an actor is shown by its keyed hash. */
void aura_stream_describe(json_t *obj)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, nrec = 0, i, w = aura_cap_workers();
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    aura_stream_rec_t *recs = aura_shm_streams(&nrec);
    json_t *o, *svc, *planes, *refused, *limited, *by_addr, *by_actor, *a;
    int c;

    if (!cap || !recs) {
        return;
    }
    o = json_object();
    svc = json_object();
    planes = json_object();
    refused = json_object();
    for (c = 0; c < AURA_CAP_COUNTERS; c++) {
        json_object_set_new(c < AURA_SVC_COUNT ? svc : planes,
                            aura_cap_counter_name(c), json_integer((json_int_t)
                            apr_atomic_read64(&cap->streams[c])));
        json_object_set_new(refused, aura_cap_counter_name(c), json_integer(
            (json_int_t)apr_atomic_read64(&cap->stream_refused[c])));
    }
    limited = json_object();
    for (c = AURA_STREAM_OVER_ADDRESS; c <= AURA_STREAM_TABLE_FULL; c++) {
        json_object_set_new(limited, limit_names[c], json_integer(
            (json_int_t)apr_atomic_read64(&cap->limited[c])));
    }
    by_addr = json_object();
    by_actor = json_object();
    for (i = 0; i < nrec; i++) {
        apr_uint64_t owner = apr_atomic_read64(&recs[i].owner);
        char prefix[AURA_STREAM_PREFIX_LEN], hash[24];
        json_t *v;

        if (!owner || (owner & AURA_STREAM_CLAIMING)) {
            continue;
        }
        memcpy(prefix, recs[i].prefix, sizeof(prefix));
        prefix[sizeof(prefix) - 1] = '\0';
        v = json_object_get(by_addr, prefix);
        json_object_set_new(by_addr, prefix, json_integer(
                            v ? json_integer_value(v) + 1 : 1));
        if (recs[i].actor) {
            apr_snprintf(hash, sizeof(hash), "%016" APR_UINT64_T_HEX_FMT,
                         recs[i].actor);
            v = json_object_get(by_actor, hash);
            json_object_set_new(by_actor, hash, json_integer(
                                v ? json_integer_value(v) + 1 : 1));
        }
    }
    a = json_object();
    json_object_set_new(a, "data", json_integer((json_int_t)aura_cap_resolve(
        AURA_CAP_AUTO, w, AURA_STREAM_AUTO_DATA_PCT)));
    json_object_set_new(a, "management", json_integer((json_int_t)
        aura_cap_resolve(AURA_CAP_AUTO, w, AURA_STREAM_AUTO_MGMT_PCT)));
    json_object_set_new(a, "service", json_integer((json_int_t)
        aura_cap_resolve(AURA_CAP_AUTO, w, AUTO_SERVICE_PCT)));
    json_object_set_new(a, "per_address", json_integer((json_int_t)
        aura_cap_resolve(AURA_CAP_AUTO, w, AUTO_ADDRESS_PCT)));
    json_object_set_new(a, "per_actor", json_integer((json_int_t)
        aura_cap_resolve(AURA_CAP_AUTO, w, AUTO_ACTOR_PCT)));
    json_object_set_new(o, "services", svc);
    json_object_set_new(o, "planes", planes);
    json_object_set_new(o, "refused", refused);
    json_object_set_new(o, "limited", limited);
    json_object_set_new(o, "by_address", by_addr);
    json_object_set_new(o, "by_actor", by_actor);
    json_object_set_new(o, "auto", a);
    json_object_set_new(o, "records", json_integer((json_int_t)nrec));
    json_object_set_new(o, "converted", json_integer((json_int_t)
                        apr_atomic_read64(&cap->converted)));
    json_object_set_new(o, "cut", json_integer((json_int_t)
                        apr_atomic_read64(&cap->cut)));
    json_object_set_new(o, "late", json_integer((json_int_t)
                        apr_atomic_read64(&cap->late)));
    json_object_set_new(o, "late_cut", json_integer((json_int_t)
                        apr_atomic_read64(&cap->late_cut)));
    json_object_set_new(o, "reclaimed", json_integer((json_int_t)
                        apr_atomic_read64(&cap->recs_reclaimed)));
    json_object_set_new(obj, "streams", o);
}

/* /metrics: the gauges and the refusals. */
void aura_stream_metrics(request_rec *r)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    int c;

    if (!cap) {
        return;
    }
    aura_cap_series(r, "aura_streams_open", "gauge", "Long-lived requests "
                    "(streams) the instance has open, by service and by "
                    "plane.", cap->streams);
    aura_cap_series(r, "aura_stream_saturated_total", "counter", "Streams "
                    "refused with 503 stream-saturated, by the budget that "
                    "refused them.", cap->stream_refused);
    ap_rputs("# HELP aura_stream_limited_total Streams refused with 429 "
             "stream-limit by the cap that refused them (address, actor), "
             "or with 503 for want of a record (table_full).\n"
             "# TYPE aura_stream_limited_total counter\n", r);
    for (c = AURA_STREAM_OVER_ADDRESS; c <= AURA_STREAM_TABLE_FULL; c++) {
        ap_rprintf(r, "aura_stream_limited_total{cap=\"%s\"} %"
                   APR_UINT64_T_FMT "\n", limit_names[c],
                   apr_atomic_read64(&cap->limited[c]));
    }
    ap_rprintf(r, "# HELP aura_streams_converted_total NATS replies that "
               "became streams (Aura-Stream: begin) and moved to the "
               "long-lived budget.\n"
               "# TYPE aura_streams_converted_total counter\n"
               "aura_streams_converted_total %" APR_UINT64_T_FMT "\n"
               "# HELP aura_streams_cut_total Streamed NATS replies ended "
               "at their maximum duration (AuraStreamMaxDuration).\n"
               "# TYPE aura_streams_cut_total counter\n"
               "aura_streams_cut_total %" APR_UINT64_T_FMT "\n"
               "# HELP aura_streams_late_total HTTP responses still being "
               "sent after AuraStreamAfter, moved to the long-lived "
               "budget.\n# TYPE aura_streams_late_total counter\n"
               "aura_streams_late_total %" APR_UINT64_T_FMT "\n"
               "# HELP aura_streams_late_cut_total HTTP responses still "
               "being sent after AuraStreamAfter whose address or actor "
               "had its share of streams: ended.\n"
               "# TYPE aura_streams_late_cut_total counter\n"
               "aura_streams_late_cut_total %" APR_UINT64_T_FMT "\n",
               apr_atomic_read64(&cap->converted),
               apr_atomic_read64(&cap->cut), apr_atomic_read64(&cap->late),
               apr_atomic_read64(&cap->late_cut));
}

/* ---- directives -------------------------------------------------------- */

static const char *parse(cmd_parms *cmd, const char *arg, int *v)
{
    const char *why = aura_cap_parse(arg, v);

    return why ? apr_psprintf(cmd->pool, "%s: '%s' is not %s",
                              cmd->cmd->name, arg, why)
               : NULL;
}

/* AuraStreamMaxOpen: per VirtualHost, against its plane's budget. */
const char *aura_set_stream_max_open(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    (void)dummy;
    return parse(cmd, arg, &aura_cmd_server_conf(cmd)->stream_max_open);
}

const char *aura_set_max_streams(cmd_parms *cmd, void *dirv,
                                 const char *arg)
{
    return parse(cmd, arg, &((aura_dir_conf_t *)dirv)->max_streams);
}

const char *aura_set_stream_per_address(cmd_parms *cmd, void *dirv,
                                        const char *arg)
{
    return parse(cmd, arg, &((aura_dir_conf_t *)dirv)->stream_per_address);
}

const char *aura_set_stream_per_actor(cmd_parms *cmd, void *dirv,
                                      const char *arg)
{
    return parse(cmd, arg, &((aura_dir_conf_t *)dirv)->stream_per_actor);
}
