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
 */
#include "aura_private.h"
#include "aura_trace.h"

#include "apr_lib.h"
#include "apr_strings.h"

#define REQID_MAX 128

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
    /* Unpredictability is not needed, uniqueness is: the insecure
     * generator never blocks and is cheap. */
    ap_random_insecure_bytes(rnd, sizeof(rnd));
    id = apr_palloc(r->pool, 2 * sizeof(rnd) + 1);
    for (i = 0; i < (int)sizeof(rnd); i++) {
        id[2 * i] = "0123456789abcdef"[rnd[i] >> 4];
        id[2 * i + 1] = "0123456789abcdef"[rnd[i] & 0x0f];
    }
    id[2 * sizeof(rnd)] = '\0';
    return id;
}

const char *aura_trace_begin(request_rec *r)
{
    aura_traceparent_t t;
    unsigned char rnd[24];
    char value[AURA_TRACEPARENT_LEN + 1];

    ap_random_insecure_bytes(rnd, sizeof(rnd));
    if (!aura_traceparent_parse(apr_table_get(r->headers_in, "traceparent"),
                                &t)) {
        aura_trace_hex_id(rnd, 16, t.trace_id);
        t.flags = 0x01;
        apr_table_unset(r->headers_in, "tracestate");
    }
    aura_trace_hex_id(rnd + 16, 8, t.parent_id);
    aura_traceparent_format(&t, value);
    apr_table_set(r->headers_in, "traceparent", value);
    return apr_pstrdup(r->pool, t.trace_id);
}
