/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_audit.c: the audit log's record line, chain hash and tail
 * reading (aura_audit_record.c), table-driven where it fits.  The golden
 * line is the format docs/audit.md describes and
 * build/aura-audit-verify reads: a change to it is a change of format.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "apr_general.h"
#include "apr_strings.h"

#include "aura_unit.h"
#include "audit/aura_audit_record.h"

/* 2026-12-05T22:30:01.123Z */
#define T0 (APR_INT64_C(1796509801) * APR_USEC_PER_SEC + 123456)

static aura_audit_fields_t sample(void)
{
    aura_audit_fields_t f;

    memset(&f, 0, sizeof(f));
    f.seq = 1;
    f.prev = AURA_AUDIT_GENESIS;
    f.time = T0;
    f.instance = "gw-1";
    f.request_id = "r-1";
    f.actor = "user-admin";
    f.role = "admin";
    f.org = "org-test";
    f.project = "proj-a";
    f.target = "proj-a";
    f.client = "127.0.0.1";
    f.action = "request";
    f.method = "POST";
    f.route = "/v1/projects/";
    f.service = "control";
    f.path = "/v1/projects/proj-a/keys/rotate";
    f.status = 200;
    f.authorized = 1;
    f.outcome = "executed";
    return f;
}

static void test_line(void **state)
{
    apr_pool_t *p = *state;
    aura_audit_fields_t f = sample();

    assert_string_equal(aura_audit_line(p, &f),
        "{\"seq\":1,\"prev\":\"" AURA_AUDIT_GENESIS "\","
        "\"time\":\"2026-12-05T22:30:01.123Z\",\"instance\":\"gw-1\","
        "\"request_id\":\"r-1\",\"actor\":\"user-admin\","
        "\"role\":\"admin\",\"org\":\"org-test\",\"project\":\"proj-a\","
        "\"target\":\"proj-a\",\"client\":\"127.0.0.1\","
        "\"action\":\"request\",\"method\":\"POST\","
        "\"route\":\"/v1/projects/\",\"service\":\"control\","
        "\"path\":\"/v1/projects/proj-a/keys/rotate\",\"status\":200,"
        "\"problem\":null,\"authorized\":true,\"outcome\":\"executed\"}");
}

static void test_nulls(void **state)
{
    apr_pool_t *p = *state;
    aura_audit_fields_t f = sample();
    const char *l;

    f.role = NULL;
    f.org = NULL;
    f.project = NULL;
    f.service = NULL;
    f.status = 0;
    f.problem = "forbidden";
    f.authorized = 0;
    f.outcome = "refused";
    l = aura_audit_line(p, &f);
    assert_non_null(strstr(l, "\"role\":null,\"org\":null,"
                              "\"project\":null,"));
    assert_non_null(strstr(l, "\"service\":null,"));
    assert_non_null(strstr(l, "\"status\":null,\"problem\":\"forbidden\","
                              "\"authorized\":false,"
                              "\"outcome\":\"refused\"}"));
}

static void test_escaping(void **state)
{
    static const struct {
        const char *in;
        const char *out;
    } rows[] = {
        { "plain", "\"plain\"" },
        { "a\"b", "\"a\\\"b\"" },
        { "a\\b", "\"a\\\\b\"" },
        { "a\nb\r\t", "\"a\\u000ab\\u000d\\u0009\"" },
        { "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
        { "caf\xc3\xa9", "\"caf\\u00c3\\u00a9\"" },   /* bytes, not chars */
        { "", "\"\"" },
    };
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        aura_audit_fields_t f = sample();
        const char *l, *want;

        f.actor = rows[i].in;
        l = aura_audit_line(p, &f);
        want = apr_pstrcat(p, "\"actor\":", rows[i].out, ",\"role\"", NULL);
        assert_non_null(strstr(l, want));
        assert_null(strchr(l, '\n'));
    }
}

static void test_hash(void **state)
{
    char h[AURA_AUDIT_HASH_HEX + 1];

    (void)state;
    aura_audit_hash("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223"
                           "b00361a396177a9cb410ff61f20015ad");
    aura_audit_hash("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb924"
                           "27ae41e4649b934ca495991b7852b855");
}

/* Three chained records: the tail of the file is the third's seq and
 * hash, each prev is the hash of the line before. */
static void test_chain(void **state)
{
    apr_pool_t *p = *state;
    char h[AURA_AUDIT_HASH_HEX + 1], got[AURA_AUDIT_HASH_HEX + 1];
    const char *file = "", *prev = AURA_AUDIT_GENESIS, *l = NULL;
    apr_uint64_t seq = 0, i;

    for (i = 1; i <= 3; i++) {
        aura_audit_fields_t f = sample();

        f.seq = i;
        f.prev = prev;
        l = aura_audit_line(p, &f);
        aura_audit_hash(l, strlen(l), h);
        prev = apr_pstrdup(p, h);
        file = apr_pstrcat(p, file, l, "\n", NULL);
    }
    assert_int_equal(aura_audit_tail(file, strlen(file), 1, &seq, got),
                     APR_SUCCESS);
    assert_int_equal(seq, 3);
    assert_string_equal(got, prev);
    /* A tail read from the middle of the file finds the same head. */
    assert_int_equal(aura_audit_tail(file + 10, strlen(file) - 10, 0, &seq,
                                     got), APR_SUCCESS);
    assert_int_equal(seq, 3);
    assert_string_equal(got, prev);
    /* The hash covers every byte: one changed byte changes it. */
    aura_audit_hash(l, strlen(l), h);
    {
        char *edited = apr_pstrdup(p, l);

        edited[strlen(edited) - 3] ^= 1;
        aura_audit_hash(edited, strlen(edited), got);
        assert_string_not_equal(got, h);
    }
}

static void test_tail(void **state)
{
    static const struct {
        const char *buf;
        int whole;
        apr_status_t rv;
        apr_uint64_t seq;
    } rows[] = {
        { "", 1, APR_NOTFOUND, 0 },
        { "{\"seq\":7,\"prev\":\"x\"}\n", 1, APR_SUCCESS, 7 },
        { "{\"seq\":1,\"a\":1}\n{\"seq\":12,\"a\":2}\n", 1, APR_SUCCESS,
          12 },
        /* cut short: no newline at the end */
        { "{\"seq\":1,\"a\":1}\n{\"seq\":2,\"a\"", 1, APR_EINVAL, 0 },
        /* a line that starts before the buffer */
        { "seq\":2,\"a\":2}\n", 0, APR_EINVAL, 0 },
        { "{\"seq\":2,\"a\":2}\n", 0, APR_EINVAL, 0 },
        { "junk\n", 1, APR_EINVAL, 0 },
        { "{\"seq\":0,\"a\":1}\n", 1, APR_EINVAL, 0 },
        { "{\"seq\":01,\"a\":1}\n", 1, APR_EINVAL, 0 },
        { "{\"seq\":-1,\"a\":1}\n", 1, APR_EINVAL, 0 },
        { "{\"seq\":3}\n", 1, APR_EINVAL, 0 },
        { "{\"seq\":99999999999999999999,\"a\":1}\n", 1, APR_EINVAL, 0 },
        { "\n", 1, APR_EINVAL, 0 },
    };
    char h[AURA_AUDIT_HASH_HEX + 1];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        apr_uint64_t seq = 0;

        assert_int_equal(aura_audit_tail(rows[i].buf, strlen(rows[i].buf),
                                         rows[i].whole, &seq, h),
                         rows[i].rv);
        if (rows[i].rv == APR_SUCCESS) {
            assert_int_equal(seq, rows[i].seq);
            assert_int_equal(strlen(h), AURA_AUDIT_HASH_HEX);
        }
    }
}

static void test_outcome(void **state)
{
    static const struct {
        const char *problem;
        const char *outcome;
    } rows[] = {
        { NULL, "executed" },
        { "upstream-timeout", "unknown" },
        { "upstream-error", "unknown" },
        { "forbidden", "refused" },
        { "actor-quota", "refused" },
        { "breaker-open", "refused" },
        { "no-upstream", "refused" },        /* proven never delivered */
        { "store-unavailable", "refused" },
        { "invalid-request", "refused" },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_string_equal(aura_audit_outcome(rows[i].problem),
                            rows[i].outcome);
    }
}

static void test_time(void **state)
{
    apr_pool_t *p = *state;

    assert_string_equal(aura_audit_time(p, T0),
                        "2026-12-05T22:30:01.123Z");
    assert_string_equal(aura_audit_time(p, 0), "1970-01-01T00:00:00.000Z");
    assert_string_equal(aura_audit_time(p, APR_USEC_PER_SEC - 1),
                        "1970-01-01T00:00:00.999Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_line, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_nulls, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_escaping, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_hash),
        cmocka_unit_test_setup_teardown(test_chain, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_tail),
        cmocka_unit_test(test_outcome),
        cmocka_unit_test_setup_teardown(test_time, pool_setup,
                                        pool_teardown),
    };
    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests_name("audit", tests, NULL, NULL);
    apr_terminate();
    return rc;
}
