/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_control.c: the incident controls' records (aura_control_record.c):
 * the canonical form of targets and values, ttl parsing, the JSON form
 * on NATS and its decoding of hostile input, the merge rule, and the
 * matching of addresses and paths.  Table-driven where it fits.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "apr_general.h"
#include "apr_strings.h"

#include "aura_unit.h"
#include "control/aura_control_record.h"

#define T0 (APR_INT64_C(1796509801) * APR_USEC_PER_SEC)

typedef struct {
    const char *kind, *target, *value;
    const char *ctarget, *cvalue;   /* NULL: refused */
} canon_case_t;

static const canon_case_t canon_cases[] = {
    { "maintenance", "/v1/storage/", "", "/v1/storage/", "" },
    { "maintenance", "/v1/storage/", "120", "/v1/storage/", "120" },
    { "maintenance", "/v1/storage/", "0", NULL, NULL },
    { "maintenance", "/v1/storage/", "86401", NULL, NULL },
    { "maintenance", "v1/storage", "", NULL, NULL },
    { "maintenance", "/v1/a b", "", NULL, NULL },
    { "maintenance", "/v1/a?x=1", "", NULL, NULL },
    { "block", "addr:192.0.2.7", "", "addr:192.0.2.7/32", "" },
    { "block", "addr:192.0.2.7/24", "", "addr:192.0.2.0/24", "" },
    { "block", "addr:2001:db8::1/32", "", "addr:2001:db8::/32", "" },
    { "block", "addr:::ffff:192.0.2.9", "", "addr:192.0.2.9/32", "" },
    { "block", "addr:192.0.2.7/33", "", NULL, NULL },
    { "block", "addr:192.0.2/24", "", NULL, NULL },
    { "block", "addr:999.0.2.7", "", NULL, NULL },
    { "block", "addr:2001:db8::/129", "", NULL, NULL },
    { "block", "addr:192.0.2.7/024", "", NULL, NULL },
    { "block", "addr:", "", NULL, NULL },
    { "block", "key:0123456789ABCDEF", "", "key:0123456789abcdef", "" },
    { "block", "key:0123456789abcde", "", NULL, NULL },
    { "block", "key:0123456789abcdeg", "", NULL, NULL },
    { "block", "actor:user-1", "", "actor:user-1", "" },
    { "block", "actor:", "", NULL, NULL },
    { "block", "actor:a b", "", NULL, NULL },
    { "block", "user-1", "", NULL, NULL },
    { "block", "addr:192.0.2.7", "x", NULL, NULL },
    { "drain", "storage", "", "storage", "" },
    { "drain", "Storage", "", NULL, NULL },
    { "drain", "storage", "1", NULL, NULL },
    { "breaker", "functions", "open", "functions", "open" },
    { "breaker", "functions", "closed", "functions", "closed" },
    { "breaker", "functions", "half", NULL, NULL },
    { "rate", "default", "10r/s", "default", "10r/s" },
    { "rate", "tight", "1r/m", "tight", "1r/m" },
    { "rate", "tight", "0r/s", NULL, NULL },
    { "rate", "tight", "10r/h", NULL, NULL },
    { "rate", "tight", "10", NULL, NULL },
    { "rate", "tight", "1000001r/s", NULL, NULL },
    { "rate", "no zone", "1r/s", NULL, NULL },
    { "quota", "pro", "100", "pro", "100" },
    { "quota", "pro", "0", "pro", "0" },
    { "quota", "pro", "-1", NULL, NULL },
    { "quota", "pro", "", NULL, NULL },
    { "quota", "pro/x", "5", NULL, NULL },
    { "nonsense", "x", "", NULL, NULL },
};

static void test_canon(void **state)
{
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(canon_cases) / sizeof(canon_cases[0]); i++) {
        const canon_case_t *c = &canon_cases[i];
        char ct[AURA_CONTROL_TARGET_MAX + 1], cv[AURA_CONTROL_VALUE_MAX + 1];
        const char *err = aura_control_canon(p, aura_control_kind_of(c->kind),
                                             c->target, c->value, ct, cv);

        if (!c->ctarget) {
            if (!err) {
                fail_msg("case %zu (%s %s %s): accepted", i, c->kind,
                         c->target, c->value);
            }
            continue;
        }
        if (err) {
            fail_msg("case %zu (%s %s): %s", i, c->kind, c->target, err);
        }
        assert_string_equal(ct, c->ctarget);
        assert_string_equal(cv, c->cvalue);
    }
}

static void test_ttl(void **state)
{
    static const struct { const char *text; apr_time_t secs; } ok[] = {
        { "1", 1 }, { "90", 90 }, { "2s", 2 }, { "10m", 600 },
        { "2h", 7200 }, { "7d", 7 * 86400 }, { "604800", 604800 },
    };
    static const char *const bad[] = {
        "", "0", "0s", "-1", "8d", "604801", "1.5h", "10x", "m", "01m",
        "9999999999", " 1", "1 ",
    };
    apr_interval_time_t t;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(aura_control_ttl(ok[i].text, &t), APR_SUCCESS);
        assert_int_equal(t, apr_time_from_sec(ok[i].secs));
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (aura_control_ttl(bad[i], &t) == APR_SUCCESS) {
            fail_msg("ttl '%s' accepted", bad[i]);
        }
    }
}

static aura_control_t sample(apr_pool_t *p)
{
    aura_control_t c;
    char cv[AURA_CONTROL_VALUE_MAX + 1];

    memset(&c, 0, sizeof(c));
    c.kind = AURA_CONTROL_BLOCK;
    assert_null(aura_control_canon(p, AURA_CONTROL_BLOCK, "addr:10.1.2.3/8",
                                   "", c.target, cv));
    aura_control_id(AURA_CONTROL_BLOCK, c.target, c.id);
    c.updated = T0;
    c.expires = T0 + apr_time_from_sec(600);
    strcpy(c.by, "ops");
    strcpy(c.reason, "scanner \"x\"");
    return c;
}

static void test_roundtrip(void **state)
{
    apr_pool_t *p = *state;
    aura_control_t c = sample(p), d;
    const char *line = aura_control_encode(p, &c);

    assert_non_null(line);
    assert_string_equal(c.target, "addr:10.0.0.0/8");
    assert_null(aura_control_decode(p, line, strlen(line), &d));
    assert_int_equal(memcmp(&c, &d, sizeof(c)), 0);
    c.lifted = 1;
    line = aura_control_encode(p, &c);
    assert_null(aura_control_decode(p, line, strlen(line), &d));
    assert_int_equal(d.lifted, 1);
}

/* Hostile messages on the subject: each is refused, none crashes. */
static void test_decode_hostile(void **state)
{
    apr_pool_t *p = *state;
    aura_control_t c = sample(p), d;
    const char *good = aura_control_encode(p, &c);
    char *big = apr_palloc(p, AURA_CONTROL_WIRE_MAX + 2);
    const char *cases[] = {
        "", "garbage", "[]", "{}", "null", "{\"v\":1}",
        "\xff\xfe{", "{\"v\":2}",
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    };
    size_t i, n = 8;

    /* Each field broken in turn, from the good line. */
    cases[n++] = apr_pstrcat(p, "{\"v\":1,", good + 1, NULL);  /* dup */
    {
        char *s = apr_pstrdup(p, good);
        char *at = strstr(s, "10.0.0.0/8");

        memcpy(at, "10.0.0.1/8", 10);   /* not canonical */
        cases[n++] = s;
    }
    {
        char *s = apr_pstrdup(p, good);
        char *at = strstr(s, "\"id\":\"") + 6;

        *at = *at == 'a' ? 'b' : 'a';   /* another id */
        cases[n++] = s;
    }
    {
        aura_control_t e = c;

        e.expires = e.updated + AURA_CONTROL_TTL_MAX + 1;
        cases[n++] = aura_control_encode(p, &e);
    }
    {
        aura_control_t e = c;

        strcpy(e.reason, "line\nbreak");
        cases[n++] = aura_control_encode(p, &e);
    }
    {
        char *s = apr_pstrdup(p, good);
        char *at = strstr(s, "\"block\"");

        memcpy(at, "\"blockx", 7);
        cases[n++] = s;
    }
    memset(big, ' ', AURA_CONTROL_WIRE_MAX + 1);
    big[AURA_CONTROL_WIRE_MAX + 1] = '\0';
    memcpy(big, good, strlen(good));
    cases[n++] = big;
    for (i = 0; i < n; i++) {
        if (!aura_control_decode(p, cases[i], strlen(cases[i]), &d)) {
            fail_msg("hostile case %zu accepted: %s", i, cases[i]);
        }
    }
    /* Bytes past the length given are not read. */
    assert_non_null(aura_control_decode(p, good, strlen(good) - 1, &d));
}

static void test_newer(void **state)
{
    apr_pool_t *p = *state;
    aura_control_t a = sample(p), b = a;

    assert_int_equal(aura_control_newer(&a, &b), 0);      /* equal */
    b.updated++;
    assert_int_equal(aura_control_newer(&b, &a), 1);
    assert_int_equal(aura_control_newer(&a, &b), 0);
    /* A late copy never brings a lifted control back. */
    b = a;
    b.lifted = 1;
    b.updated = a.updated + 1;
    assert_int_equal(aura_control_newer(&a, &b), 0);
    /* Same revision: the tombstone wins, whatever the order. */
    b.updated = a.updated;
    assert_int_equal(aura_control_newer(&b, &a), 1);
    assert_int_equal(aura_control_newer(&a, &b), 0);
    /* Same revision, then the later expiry; then the bytes. */
    b = a;
    b.expires++;
    assert_int_equal(aura_control_newer(&b, &a), 1);
    assert_int_equal(aura_control_newer(&a, &b), 0);
    b = a;
    strcpy(b.by, "ops2");
    assert_int_equal(aura_control_newer(&b, &a)
                     + aura_control_newer(&a, &b), 1);
}

static void test_active(void **state)
{
    apr_pool_t *p = *state;
    aura_control_t c = sample(p);

    assert_int_equal(aura_control_active(&c, T0), 1);
    assert_int_equal(aura_control_active(&c, c.expires), 0);
    c.lifted = 1;
    assert_int_equal(aura_control_active(&c, T0), 0);
}

static void test_net(void **state)
{
    static const struct {
        const char *net;
        int family;
        unsigned char addr[16];
        int match;
    } cases[] = {
        { "192.0.2.0/24", 4, { 192, 0, 2, 77 }, 1 },
        { "192.0.2.0/24", 4, { 192, 0, 3, 1 }, 0 },
        { "192.0.2.7", 4, { 192, 0, 2, 7 }, 1 },
        { "192.0.2.7", 4, { 192, 0, 2, 8 }, 0 },
        { "10.0.0.0/7", 4, { 11, 255, 0, 1 }, 1 },
        { "10.0.0.0/7", 4, { 12, 0, 0, 1 }, 0 },
        { "0.0.0.0/0", 4, { 1, 2, 3, 4 }, 1 },
        /* An IPv4 client on a dual-stack socket. */
        { "192.0.2.0/24", 6, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                               192, 0, 2, 9 }, 1 },
        { "2001:db8::/32", 6, { 0x20, 0x01, 0x0d, 0xb8, 1, 2 }, 1 },
        { "2001:db8::/32", 6, { 0x20, 0x01, 0x0d, 0xb9 }, 0 },
        { "2001:db8::/32", 4, { 0x20, 0x01, 0x0d, 0xb8 }, 0 },
        { "::1", 6, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 1 },
    };
    aura_control_net_t n;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(aura_control_net_parse(cases[i].net, &n),
                         APR_SUCCESS);
        if (aura_control_net_match(&n, cases[i].family, cases[i].addr)
            != cases[i].match) {
            fail_msg("net case %zu (%s)", i, cases[i].net);
        }
    }
    assert_int_equal(aura_control_net_parse("192.0.2.1/", &n), APR_EINVAL);
    assert_int_equal(aura_control_net_parse("/24", &n), APR_EINVAL);
    assert_int_equal(aura_control_net_parse("host.example", &n), APR_EINVAL);
}

static void test_path(void **state)
{
    (void)state;
    assert_int_equal(aura_control_path_match("/v1/storage/", "/v1/storage/x"),
                     1);
    assert_int_equal(aura_control_path_match("/v1/storage/", "/v1/storage"),
                     0);
    assert_int_equal(aura_control_path_match("/v1/storage", "/v1/storage"),
                     1);
    assert_int_equal(aura_control_path_match("/v1/storage", "/v1/storage/a"),
                     1);
    assert_int_equal(aura_control_path_match("/v1/storage", "/v1/storagex"),
                     0);
    assert_int_equal(aura_control_path_match("/", "/anything"), 1);
    assert_int_equal(aura_control_path_match("/v1/Storage", "/v1/storage"),
                     0);
}

static void test_rate(void **state)
{
    apr_uint64_t rate, period;

    (void)state;
    assert_int_equal(aura_control_rate_value("10r/s", &rate, &period),
                     APR_SUCCESS);
    assert_int_equal(rate, 10);
    assert_int_equal(period, 1);
    assert_int_equal(aura_control_rate_value("30r/m", &rate, &period),
                     APR_SUCCESS);
    assert_int_equal(period, 60);
    assert_int_equal(aura_control_rate_value("r/m", &rate, &period),
                     APR_EINVAL);
    /* 30 r/m is below 1 r/s; 60 r/m is not; 59 r/m is. */
    assert_int_equal(aura_control_rate_below(30, 60, 1, 1), 1);
    assert_int_equal(aura_control_rate_below(60, 60, 1, 1), 0);
    assert_int_equal(aura_control_rate_below(59, 60, 1, 1), 1);
    assert_int_equal(aura_control_rate_below(2, 1, 100, 60), 0);
}

static void test_id(void **state)
{
    char a[AURA_CONTROL_ID_HEX + 1], b[AURA_CONTROL_ID_HEX + 1];

    (void)state;
    aura_control_id(AURA_CONTROL_DRAIN, "storage", a);
    aura_control_id(AURA_CONTROL_DRAIN, "storage", b);
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), AURA_CONTROL_ID_HEX);
    aura_control_id(AURA_CONTROL_BREAKER, "storage", b);
    assert_string_not_equal(a, b);
    assert_string_equal(aura_control_kind_name(AURA_CONTROL_DRAIN), "drain");
    assert_null(aura_control_kind_name(AURA_CONTROL_KINDS));
    assert_int_equal(aura_control_kind_of("maintenance"),
                     AURA_CONTROL_MAINTENANCE);
    assert_int_equal(aura_control_kind_of("rate"), AURA_CONTROL_RATE);
    assert_int_equal(aura_control_kind_of("bogus"), AURA_CONTROL_FREE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_canon, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_ttl),
        cmocka_unit_test_setup_teardown(test_roundtrip, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_decode_hostile, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_newer, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_active, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_net),
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_rate),
        cmocka_unit_test(test_id),
    };
    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests_name("control", tests, NULL, NULL);
    apr_terminate();
    return rc;
}
