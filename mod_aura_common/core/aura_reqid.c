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
 * its own.
 *
 * The random bytes of both (40 a request) come from SipHash-2-4 of a
 * per-child counter under a per-child random key: a PRF, so they are as
 * unpredictable as the key, and unique within the child by the counter.
 * httpd's ap_random_insecure_bytes() was 6 % of the instructions of a
 * request: a SHA-256 based generator behind a process-wide mutex.
 */
#include "core/aura_module.h"
#include "core/aura_reqid.h"
#include "core/aura_siphash.h"
#include "core/aura_trace.h"

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
    aura_traceparent_t t;
    unsigned char rnd[16];
    char *value = apr_palloc(r->pool, AURA_TRACEPARENT_LEN + 1);

    rq->tracestate = NULL;
    if (!aura_traceparent_parse(apr_table_get(r->headers_in, "traceparent"),
                                &t)) {
        random_bytes(rnd, 16);
        aura_trace_hex_id(rnd, 16, t.trace_id);
        t.flags = 0x01;
    }
    else {
        /* Repeated lines form one list (W3C trace context 3.3.1.1). */
        rq->tracestate = apr_table_getm(r->pool, r->headers_in, "tracestate");
    }
    random_bytes(rnd, 8);
    aura_trace_hex_id(rnd, 8, t.parent_id);
    aura_traceparent_format(&t, value);
    rq->traceparent = value;
    /* The trace id is characters 3 to 34 of the value. */
    rq->trace_id = apr_pstrmemdup(r->pool, value + 3, 32);
}
