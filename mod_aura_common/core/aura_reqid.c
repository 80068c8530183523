/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_reqid.c: the request id and the trace context.
 *
 * The request id.  An inbound X-Request-Id is kept when it
 * is well-formed (1 to 128 characters of [A-Za-z0-9._:+/=-]: what UUIDs,
 * ULIDs and base64 ids use) so a trace can cross several gateways;
 * anything else is replaced, because the id is copied into log lines and
 * upstream headers and must not carry an attacker's bytes there.
 *
 * The trace context (W3C traceparent / tracestate): a valid inbound
 * traceparent keeps its trace id and flags, anything else starts a new
 * trace (and its tracestate, which belongs to another trace, is
 * dropped).  Either way the gateway is the parent of what it sends
 * upstream: the traceparent forwarded on both paths carries a span id of
 * its own, the id of the span of the upstream call (trace/aura_tracing.c)
 * when the request is traced.
 *
 * With tracing on (AuraTraceEndpoint), the sampling decision is made
 * here, once: an inbound traceparent's sampled flag when its client is
 * one AuraTraceTrustParent names; from anyone else (the default) the
 * flag is ignored and AuraTraceSampleRatio decides on a keyed hash of
 * the trace id the client chose (aura_trace_sampled()), so that no
 * client makes its requests traced, nor fills the export queue other
 * tenants' spans need; a new trace: the ratio on its id.  The forwarded
 * flags say the decision.  The client's trace id is kept either way:
 * the trace stays continuous for whoever collects it.  mod_remoteip, when
 * loaded, has set the client address before this runs (the planes order
 * their post_read_request after its).
 * A sampled request gets its set of spans and its server span now; an
 * unsampled one costs nothing more than its ids.  With tracing off the
 * flags are forwarded as they came (a new trace: sampled), as before.
 *
 * The random bytes of both (40 a request) come from SipHash-2-4 of a
 * per-child counter under a per-child random key: a PRF, so they are as
 * unpredictable as the key, and unique within the child by the counter.
 * httpd's ap_random_insecure_bytes() was 6 % of the instructions of a
 * request: a SHA-256 based generator behind a process-wide mutex.
 */
#include "core/aura_module.h"
#include "core/aura_reqid.h"
#include "core/aura_request.h"
#include "core/aura_siphash.h"
#include "core/aura_trace.h"
#include "shm/aura_shm.h"
#include "trace/aura_span.h"
#include "trace/aura_trace_conf.h"

#include "apr_atomic.h"
#include "apr_lib.h"
#include "apr_strings.h"

#define REQID_MAX 128

/* Per child: the key is drawn in child_init, before any request. */
static unsigned char random_key[AURA_SIPHASH_KEY_LEN];
static volatile apr_uint64_t random_counter;

void aura_reqid_child_init(void)
{
    ap_random_insecure_bytes(random_key, sizeof(random_key));
}

/* n bytes (a multiple of 8) of the child's generator. */
static void random_bytes(unsigned char *out, apr_size_t n)
{
    apr_size_t i;

    for (i = 0; i + 8 <= n; i += 8) {
        apr_uint64_t c = apr_atomic_inc64(&random_counter);
        apr_uint64_t v = aura_siphash24(random_key, &c, sizeof(c));

        memcpy(out + i, &v, 8);
    }
}

void aura_reqid_random(unsigned char *out, apr_size_t n)
{
    random_bytes(out, n);
}

/* The sampled request's spans, its server span started: named and
 * given its attributes at the end (aura_tracing_end()). */
static void spans_begin(request_rec *r, aura_request_t *rq,
                        const aura_traceparent_t *t, const char *remote)
{
    aura_spanset_t *set = aura_spanset_make(r->pool, t->trace_id, remote);
    unsigned char rnd[8];
    char id[17];

    random_bytes(rnd, 8);
    aura_trace_hex_id(rnd, 8, id);
    aura_span_start(set, NULL, id, -1, AURA_SPAN_SERVER, r->request_time);
    rq->priv->spans = set;
}

/* The sampling decision (tracing on); see the file's comment. */
static int decide(request_rec *r, const aura_trace_conf_t *tc,
                  const aura_traceparent_t *t, int inbound)
{
    aura_parent_e parent = AURA_PARENT_NONE;
    int sampled;

    if (inbound) {
        parent = aura_trace_trusts_parent(r->server, r->useragent_addr)
                 ? AURA_PARENT_TRUSTED : AURA_PARENT_UNTRUSTED;
    }
    sampled = aura_trace_sampled(t->trace_id, parent, t->flags,
                                 (apr_uint32_t)aura_trace_conf_ratio(tc),
                                 aura_shm_hash_key());
    if (parent == AURA_PARENT_UNTRUSTED && (t->flags & 0x01u)
        && APLOGrdebug(r)) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(02100)
                      "traceparent from %s, not trusted by "
                      "AuraTraceTrustParent: its sampled flag ignored, "
                      "the ratio says %s", r->useragent_ip,
                      sampled ? "sampled" : "not sampled");
    }
    return sampled;
}

static int reqid_char(char c)
{
    return apr_isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-'
           || c == '+' || c == '/' || c == '=';
}

static int reqid_ok(const char *id)
{
    apr_size_t n = 0;

    for (; id[n]; n++) {
        if (n >= REQID_MAX || !reqid_char(id[n])) {
            return 0;
        }
    }
    return n > 0;
}

const char *aura_reqid_pick(request_rec *r)
{
    const char *in = apr_table_get(r->headers_in, "X-Request-Id");
    unsigned char rnd[16];
    char *id;
    int i;

    if (in && reqid_ok(in)) {
        return in;
    }
    random_bytes(rnd, sizeof(rnd));
    id = apr_palloc(r->pool, 2 * sizeof(rnd) + 1);
    for (i = 0; i < (int)sizeof(rnd); i++) {
        id[2 * i] = "0123456789abcdef"[rnd[i] >> 4];
        id[2 * i + 1] = "0123456789abcdef"[rnd[i] & 0x0f];
    }
    id[2 * sizeof(rnd)] = '\0';
    return id;
}

void aura_trace_begin(request_rec *r, aura_request_t *rq)
{
    const aura_trace_conf_t *tc = aura_trace_conf(r->server);
    aura_traceparent_t t;
    unsigned char rnd[16];
    char *value = apr_palloc(r->pool, AURA_TRACEPARENT_LEN + 1);
    char remote[17];
    int inbound, sampled = 0;

    rq->tracestate = NULL;
    inbound = aura_traceparent_parse(apr_table_get(r->headers_in,
                                                   "traceparent"), &t);
    if (!inbound) {
        random_bytes(rnd, 16);
        aura_trace_hex_id(rnd, 16, t.trace_id);
        t.flags = 0x01;
    }
    else {
        /* Repeated lines form one list (W3C trace context 3.3.1.1). */
        rq->tracestate = apr_table_getm(r->pool, r->headers_in, "tracestate");
        memcpy(remote, t.parent_id, sizeof(remote));
    }
    if (tc) {
        sampled = decide(r, tc, &t, inbound);
        t.flags = (t.flags & ~0x01u) | (sampled ? 0x01u : 0);
    }
    random_bytes(rnd, 8);
    aura_trace_hex_id(rnd, 8, t.parent_id);
    if (sampled) {
        spans_begin(r, rq, &t, inbound ? remote : NULL);
    }
    aura_traceparent_format(&t, value);
    rq->traceparent = value;
    /* The trace id is characters 3 to 34 of the value. */
    rq->trace_id = apr_pstrmemdup(r->pool, value + 3, 32);
}
