/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_otlp.c: a request's spans (aura_span.c) and their OTLP/JSON
 * encoding (aura_otlp.c): the ExportTraceServiceRequest a batch makes
 * parses, and holds what the OTLP specification says (hex ids,
 * nanosecond strings, kinds, attributes, status); a full set records
 * nothing more; the sampler: parent-based for a trusted parent, a
 * ratio on the id otherwise, keyed when the client chose the id.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "aura_unit.h"
#include "apr_strings.h"
#include "trace/aura_otlp.h"
#include "trace/aura_span.h"

#define TRACE "4bf92f3577b34da6a3ce929d0e0e4736"
#define PARENT "00f067aa0ba902b7"

/* A batch of the given fragments, parsed. */
static json_t *batch(apr_pool_t *p, const char *frag)
{
    apr_array_header_t *res = apr_array_make(p, 4, sizeof(const char *));
    const char *head, *doc;
    json_error_t err;
    json_t *j;

    APR_ARRAY_PUSH(res, const char *) = "service.name";
    APR_ARRAY_PUSH(res, const char *) = "mod_aura";
    APR_ARRAY_PUSH(res, const char *) = "deployment.environment";
    APR_ARRAY_PUSH(res, const char *) = "test";
    head = aura_otlp_head(p, res, "1.2.3");
    assert_non_null(head);
    doc = apr_pstrcat(p, head, frag, AURA_OTLP_TAIL, NULL);
    j = json_loads(doc, 0, &err);
    if (!j) {
        fail_msg("not JSON: %s: %s", err.text, doc);
    }
    return j;
}

static json_t *spans_of(json_t *doc)
{
    json_t *rs = json_array_get(json_object_get(doc, "resourceSpans"), 0);
    json_t *ss = json_array_get(json_object_get(rs, "scopeSpans"), 0);

    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(ss, "scope"), "name")),
                        "mod_aura");
    return json_object_get(ss, "spans");
}

static json_t *attr(json_t *span, const char *key)
{
    json_t *a = json_object_get(span, "attributes"), *e;
    size_t i;

    json_array_foreach(a, i, e) {
        if (!strcmp(json_string_value(json_object_get(e, "key")), key)) {
            return json_object_get(e, "value");
        }
    }
    return NULL;
}

static void test_encode(void **state)
{
    apr_pool_t *p = *state;
    aura_spanset_t *set = aura_spanset_make(p, TRACE, PARENT);
    int srv, st, cl;
    apr_size_t len;
    char *frag;
    json_t *doc, *spans, *s0, *s1, *s2, *res;

    srv = aura_span_start(set, "GET /v1/functions/", "1111111111111111",
                          -1, AURA_SPAN_SERVER, 1000000);
    st = aura_span_start(set, "aura.key.lookup", "2222222222222222", srv,
                         AURA_SPAN_INTERNAL, 1000100);
    aura_span_end(set, st, 1000200, AURA_SPAN_UNSET, NULL);
    cl = aura_span_start(set, "request aura.x", "3333333333333333", srv,
                         AURA_SPAN_CLIENT, 1000300);
    aura_span_attr_str(set, srv, "http.request.method", "GET");
    aura_span_attr_int(set, srv, "http.response.status_code", 503);
    aura_span_attr_int(set, srv, "negative", -42);
    aura_span_attr_int(set, srv, "zero", 0);
    aura_span_attr_bool(set, cl, "aura.retried", 1);
    aura_span_attr_str(set, srv, "user_agent.original", "caf\xc3\xa9\n");
    aura_span_attr_str(set, srv, "skipped", NULL);
    aura_span_attr_str(set, srv, "quoted", "a\"b\\c");
    aura_span_end(set, srv, 1000900, AURA_SPAN_ERROR, "upstream-error");
    aura_spanset_close(set, 1000800);

    frag = aura_otlp_spans(set, &len);
    assert_non_null(frag);
    assert_int_equal(strlen(frag), len);
    doc = batch(p, frag);
    free(frag);
    res = json_object_get(json_object_get(json_array_get(
              json_object_get(doc, "resourceSpans"), 0), "resource"),
              "attributes");
    assert_int_equal(json_array_size(res), 2);
    spans = spans_of(doc);
    assert_int_equal(json_array_size(spans), 3);
    s0 = json_array_get(spans, 0);
    s1 = json_array_get(spans, 1);
    s2 = json_array_get(spans, 2);
    assert_string_equal(json_string_value(json_object_get(s0, "traceId")),
                        TRACE);
    assert_string_equal(json_string_value(json_object_get(s0, "spanId")),
                        "1111111111111111");
    assert_string_equal(json_string_value(json_object_get(s0,
                            "parentSpanId")), PARENT);
    assert_string_equal(json_string_value(json_object_get(s1,
                            "parentSpanId")), "1111111111111111");
    assert_int_equal(json_integer_value(json_object_get(s0, "kind")), 2);
    assert_int_equal(json_integer_value(json_object_get(s1, "kind")), 1);
    assert_int_equal(json_integer_value(json_object_get(s2, "kind")), 3);
    assert_string_equal(json_string_value(json_object_get(s0,
                            "startTimeUnixNano")), "1000000000");
    assert_string_equal(json_string_value(json_object_get(s0,
                            "endTimeUnixNano")), "1000900000");
    /* Closed with the request: the open client span ends then. */
    assert_string_equal(json_string_value(json_object_get(s2,
                            "endTimeUnixNano")), "1000800000");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(
                         s0, "status"), "code")), 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(
                            s0, "status"), "message")), "upstream-error");
    assert_null(json_object_get(s1, "status"));
    assert_string_equal(json_string_value(json_object_get(
                            attr(s0, "http.request.method"), "stringValue")),
                        "GET");
    assert_string_equal(json_string_value(json_object_get(
                            attr(s0, "http.response.status_code"),
                            "intValue")), "503");
    assert_string_equal(json_string_value(json_object_get(
                            attr(s0, "negative"), "intValue")), "-42");
    assert_string_equal(json_string_value(json_object_get(
                            attr(s0, "zero"), "intValue")), "0");
    assert_true(json_is_true(json_object_get(attr(s2, "aura.retried"),
                                             "boolValue")));
    /* Not UTF-8 or not printable: '?' each byte. */
    assert_string_equal(json_string_value(json_object_get(
                            attr(s0, "user_agent.original"), "stringValue")),
                        "caf???");
    assert_null(attr(s0, "skipped"));
    /* Escaped, and back as they were. */
    assert_string_equal(json_string_value(json_object_get(
                            attr(s0, "quoted"), "stringValue")), "a\"b\\c");
    json_decref(doc);
}

/* A new trace: no parentSpanId at all; a long value is cut. */
static void test_root_and_cut(void **state)
{
    apr_pool_t *p = *state;
    aura_spanset_t *set = aura_spanset_make(p, TRACE, NULL);
    char big[1000];
    apr_size_t len;
    char *frag;
    json_t *doc, *s0;
    int i;

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    i = aura_span_start(set, "GET", "1111111111111111", -1,
                        AURA_SPAN_SERVER, 5);
    aura_span_attr_str(set, i, "url.path", big);
    aura_span_end(set, i, 3, AURA_SPAN_OK, "ignored");
    frag = aura_otlp_spans(set, &len);
    doc = batch(p, frag);
    free(frag);
    s0 = json_array_get(spans_of(doc), 0);
    assert_null(json_object_get(s0, "parentSpanId"));
    /* The clock stepped back: the end is the start. */
    assert_string_equal(json_string_value(json_object_get(s0,
                            "endTimeUnixNano")), "5000");
    assert_null(json_object_get(json_object_get(s0, "status"), "message"));
    assert_int_equal(strlen(json_string_value(json_object_get(
                         attr(s0, "url.path"), "stringValue"))),
                     AURA_SPAN_VALUE_MAX);
    json_decref(doc);
}

/* Full: nothing more recorded, counted; an empty set encodes to NULL;
 * a discarded last span leaves with its attributes. */
static void test_bounds(void **state)
{
    apr_pool_t *p = *state;
    aura_spanset_t *set = aura_spanset_make(p, TRACE, NULL);
    apr_size_t len;
    int i, last;

    assert_null(aura_otlp_spans(set, &len));
    for (i = 0; i < AURA_SPAN_MAX; i++) {
        assert_int_equal(aura_span_start(set, "s", "1111111111111111", 0,
                                         AURA_SPAN_INTERNAL, 1), i);
    }
    assert_int_equal(aura_span_start(set, "s", "1111111111111111", 0,
                                     AURA_SPAN_INTERNAL, 1), -1);
    assert_int_equal(set->lost, 1);
    for (i = 0; i < AURA_SPAN_ATTR_MAX + 2; i++) {
        aura_span_attr_int(set, 0, "k", i);
    }
    assert_int_equal(set->nattrs, AURA_SPAN_ATTR_MAX);
    assert_int_equal(set->lost, 3);
    aura_span_attr_int(set, -1, "k", 1);
    aura_span_end(set, -1, 2, AURA_SPAN_OK, NULL);

    set = aura_spanset_make(p, TRACE, NULL);
    aura_span_start(set, "a", "1111111111111111", -1, AURA_SPAN_SERVER, 1);
    last = aura_span_start(set, "b", "2222222222222222", 0,
                           AURA_SPAN_INTERNAL, 2);
    aura_span_attr_int(set, last, "k", 1);
    aura_span_discard(set, last, 3);
    assert_int_equal(set->n, 1);
    assert_int_equal(set->nattrs, 0);
    /* Not the last one: ended instead. */
    aura_span_start(set, "b", "2222222222222222", 0, AURA_SPAN_INTERNAL, 2);
    aura_span_start(set, "c", "3333333333333333", 0, AURA_SPAN_INTERNAL, 2);
    aura_span_discard(set, 1, 4);
    assert_int_equal(set->n, 3);
    assert_int_equal(set->spans[1].end, 4);
}

static const unsigned char KEY[16] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
    0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f
};

static void test_sampler(void **state)
{
    static const struct {
        const char *trace;
        aura_parent_e parent;
        unsigned int flags;
        apr_uint32_t ppm;
        int sampled;
    } rows[] = {
        /* a trusted parent: the flag decides, whatever the ratio */
        { TRACE, AURA_PARENT_TRUSTED, 0x01, 0, 1 },
        { TRACE, AURA_PARENT_TRUSTED, 0x00, AURA_SAMPLE_ONE, 0 },
        { TRACE, AURA_PARENT_TRUSTED, 0x03, 0, 1 },
        /* an untrusted one (issue #30 follow-up): the flag is ignored,
         * ratio 0 samples nothing and 1 everything */
        { TRACE, AURA_PARENT_UNTRUSTED, 0x01, 0, 0 },
        { TRACE, AURA_PARENT_UNTRUSTED, 0xff, 0, 0 },
        { TRACE, AURA_PARENT_UNTRUSTED, 0x01, AURA_SAMPLE_ONE, 1 },
        { TRACE, AURA_PARENT_UNTRUSTED, 0x00, AURA_SAMPLE_ONE, 1 },
        /* ids the unkeyed ratio samples at 1 ppm: not for an untrusted
         * client (their keyed hashes fall far outside 1 ppm) */
        { "ffffffffffffffff0000000000000001", AURA_PARENT_UNTRUSTED, 0x01,
          1, 0 },
        { "00000000000000000000000000000001", AURA_PARENT_UNTRUSTED, 0x01,
          1, 0 },
        /* no parent: the ratio on the low 64 bits of the id */
        { TRACE, AURA_PARENT_NONE, 0, AURA_SAMPLE_ONE, 1 },
        { TRACE, AURA_PARENT_NONE, 0, 0, 0 },
        { "ffffffffffffffff0000000000000001", AURA_PARENT_NONE, 0, 1, 1 },
        { "00000000000000000000000000000001", AURA_PARENT_NONE, 0, 1, 1 },
        { "0000000000000000fffffffffffffffe", AURA_PARENT_NONE, 0, 999999,
          0 },
        { "00000000000000007fffffffffffffff", AURA_PARENT_NONE, 0, 500000,
          0 },
        { "00000000000000007fffffff00000000", AURA_PARENT_NONE, 0, 500000,
          1 },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (aura_trace_sampled(rows[i].trace, rows[i].parent,
                               rows[i].flags, rows[i].ppm, KEY)
            != rows[i].sampled) {
            fail_msg("row %zu", i);
        }
    }
    /* Without the segment's key an untrusted parent is never sampled. */
    assert_int_equal(aura_trace_sampled(TRACE, AURA_PARENT_UNTRUSTED, 0x01,
                                        AURA_SAMPLE_ONE, NULL), 0);
}

/* The ids an attacker would craft, the ones the unkeyed ratio always
 * samples (low 64 bits near 0): at 1 %, the keyed decision takes about
 * 1 % of them, not all; and it is not the unkeyed decision, which a
 * client could compute. */
static void test_keyed(void **state)
{
    char id[33];
    int i, plain = 0, keyed = 0, differ = 0;

    (void)state;
    for (i = 0; i < 10000; i++) {
        int a, b;

        apr_snprintf(id, sizeof(id), "%016x%016x", (unsigned)i * 7919u,
                     (unsigned)i);
        a = aura_trace_sampled(id, AURA_PARENT_NONE, 0, 10000, KEY);
        b = aura_trace_sampled(id, AURA_PARENT_UNTRUSTED, 0x01, 10000, KEY);
        plain += a;
        keyed += b;
        differ += a != b;
    }
    assert_int_equal(plain, 10000);
    assert_in_range(keyed, 50, 200);
    assert_int_equal(differ, 10000 - keyed);
}

/* Over many ids the ratio holds (ids of a counter's SipHash are
 * uniform; here a simple LCG stands in), for the gateway's own ids and,
 * keyed, for a client's. */
static void test_ratio(void **state)
{
    apr_uint64_t x = 12345;
    char id[33];
    int i, n = 0, u = 0;

    (void)state;
    for (i = 0; i < 100000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        apr_snprintf(id, sizeof(id), "%016" APR_UINT64_T_HEX_FMT "%016"
                     APR_UINT64_T_HEX_FMT, x, x);
        n += aura_trace_sampled(id, AURA_PARENT_NONE, 0, 250000, KEY);
        u += aura_trace_sampled(id, AURA_PARENT_UNTRUSTED, 0x01, 250000,
                                KEY);
    }
    assert_in_range(n, 24000, 26000);
    assert_in_range(u, 24000, 26000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_encode, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_root_and_cut, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_bounds, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_sampler),
        cmocka_unit_test(test_keyed),
        cmocka_unit_test(test_ratio),
    };

    apr_initialize();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
