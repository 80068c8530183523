/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_fleet.c: the fleet view's pure logic (aura_fleet_snap.c): a
 * snapshot's decoding with bounds (hostile input from NATS), its
 * encoding within a size (trimmed, never cut), the subject token of an
 * instance name, the changes between two snapshots, and the live /
 * stale / gone decision.  Table-driven where it fits.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apr_general.h"
#include "apr_strings.h"

#include <jansson.h>

#include "aura_unit.h"
#include "fleet/aura_fleet_snap.h"

#define GOOD_HEAD "{\"fleet\":1,\"instance\":\"gw-1\",\"epoch\":\"0a1b\"," \
                  "\"seq\":7,\"sent\":1796509801000000,\"interval_ms\":200"

static const char good[] =
    GOOD_HEAD ",\"nats_server\":\"nats://127.0.0.1:4222 NABC\","
    "\"actor_quota\":{\"redis\":true,\"fallback\":true},"
    "\"breakers\":{\"db\":{\"state\":\"open\",\"failures\":5},"
    "\"auth\":{\"state\":\"closed\"},\"targets\":{\"x\":{\"state\":"
    "\"open\"}}}}";

static void test_decode_good(void **state)
{
    aura_fleet_digest_t d;
    const char *why = NULL;
    json_t *doc = NULL;

    (void)state;
    assert_int_equal(aura_fleet_decode(good, strlen(good), &d, &doc, &why),
                     APR_SUCCESS);
    assert_non_null(doc);
    json_decref(doc);
    assert_string_equal(d.instance, "gw-1");
    assert_string_equal(d.epoch, "0a1b");
    assert_int_equal(d.seq, 7);
    assert_int_equal(d.interval, 200000);
    assert_int_equal(d.fallback, 1);
    assert_string_equal(d.node, "nats://127.0.0.1:4222 NABC");
    /* The targets are not digested. */
    assert_int_equal(d.nbreakers, 2);
}

typedef struct {
    const char *name;
    const char *json;
} bad_case_t;

static const bad_case_t bad_cases[] = {
    { "not json", "{\"fleet\":1," },
    { "array", "[1,2]" },
    { "no format", "{\"instance\":\"a\"}" },
    { "format 2", "{\"fleet\":2,\"instance\":\"gw-1\",\"epoch\":\"0a\","
                  "\"seq\":1,\"sent\":1,\"interval_ms\":200}" },
    { "no name", "{\"fleet\":1,\"epoch\":\"0a\",\"seq\":1,\"sent\":1,"
                 "\"interval_ms\":200}" },
    { "empty name", "{\"fleet\":1,\"instance\":\"\",\"epoch\":\"0a\","
                    "\"seq\":1,\"sent\":1,\"interval_ms\":200}" },
    { "control char in name", "{\"fleet\":1,\"instance\":\"a\\u0007b\","
                              "\"epoch\":\"0a\",\"seq\":1,\"sent\":1,"
                              "\"interval_ms\":200}" },
    { "name too long", "{\"fleet\":1,\"instance\":\"0123456789012345678901"
                       "234567890123456789012345678901234567890123\","
                       "\"epoch\":\"0a\",\"seq\":1,\"sent\":1,"
                       "\"interval_ms\":200}" },
    { "epoch not hex", "{\"fleet\":1,\"instance\":\"a\",\"epoch\":\"<b>\","
                       "\"seq\":1,\"sent\":1,\"interval_ms\":200}" },
    { "negative seq", "{\"fleet\":1,\"instance\":\"a\",\"epoch\":\"0a\","
                      "\"seq\":-1,\"sent\":1,\"interval_ms\":200}" },
    { "interval 0", "{\"fleet\":1,\"instance\":\"a\",\"epoch\":\"0a\","
                    "\"seq\":1,\"sent\":1,\"interval_ms\":0}" },
    { "duplicate key", "{\"fleet\":1,\"instance\":\"a\",\"instance\":\"b\","
                       "\"epoch\":\"0a\",\"seq\":1,\"sent\":1,"
                       "\"interval_ms\":200}" },
    { "breaker state unknown", GOOD_HEAD ",\"breakers\":{\"db\":{\"state\":"
                               "\"exploded\"}}}" },
    { "breakers not object", GOOD_HEAD ",\"breakers\":[1]}" },
    { "node not string", GOOD_HEAD ",\"nats_server\":5}" },
};

static void test_decode_bad(void **state)
{
    aura_fleet_digest_t d;
    const char *why;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        why = NULL;
        if (aura_fleet_decode(bad_cases[i].json, strlen(bad_cases[i].json),
                              &d, NULL, &why) != APR_EINVAL || !why) {
            fail_msg("case '%s' was accepted", bad_cases[i].name);
        }
        /* Nothing of a refused snapshot is left in the digest. */
        assert_string_equal(d.instance, "");
    }
}

/* Too many breakers, a too-long snapshot, a deep nesting: dropped. */
static void test_decode_bounds(void **state)
{
    apr_pool_t *p = *state;
    aura_fleet_digest_t d;
    const char *why, *doc;
    char *big;
    int i;

    doc = GOOD_HEAD ",\"breakers\":{";
    for (i = 0; i <= AURA_FLEET_BREAKERS; i++) {
        doc = apr_psprintf(p, "%s%s\"b%d\":{\"state\":\"open\"}", doc,
                           i ? "," : "", i);
    }
    doc = apr_pstrcat(p, doc, "}}", NULL);
    assert_int_equal(aura_fleet_decode(doc, strlen(doc), &d, NULL, &why),
                     APR_EINVAL);
    assert_string_equal(why, "too many breakers");

    big = apr_palloc(p, AURA_FLEET_SNAPSHOT_MAX + 2);
    memset(big, ' ', AURA_FLEET_SNAPSHOT_MAX + 1);
    memcpy(big, good, strlen(good));
    assert_int_equal(aura_fleet_decode(big, AURA_FLEET_SNAPSHOT_MAX + 1, &d,
                                       NULL, &why), APR_EINVAL);
    assert_string_equal(why, "larger than 16 KiB");
    /* The same within the bound (trailing white space) is fine. */
    assert_int_equal(aura_fleet_decode(big, AURA_FLEET_SNAPSHOT_MAX, &d,
                                       NULL, &why), APR_SUCCESS);

    memset(big, '[', 5000);
    assert_int_equal(aura_fleet_decode(big, 5000, &d, NULL, &why),
                     APR_EINVAL);
    assert_int_equal(aura_fleet_decode("", 0, &d, NULL, &why), APR_EINVAL);
    assert_int_equal(aura_fleet_decode(NULL, 10, &d, NULL, &why), APR_EINVAL);
}

/* Markup in a name is a valid name: it is escaped where shown. */
static void test_decode_markup_name(void **state)
{
    const char *doc = "{\"fleet\":1,\"instance\":\"<script>x</script>\","
                      "\"epoch\":\"0a\",\"seq\":1,\"sent\":1,"
                      "\"interval_ms\":200}";
    aura_fleet_digest_t d;
    const char *why;

    (void)state;
    assert_int_equal(aura_fleet_decode(doc, strlen(doc), &d, NULL, &why),
                     APR_SUCCESS);
    assert_string_equal(d.instance, "<script>x</script>");
}

static void test_token(void **state)
{
    apr_pool_t *p = *state;
    static const struct { const char *name, *token; } cases[] = {
        { "gw-1", "gw-1" },
        { "gw.eu west", "gw%2Eeu%20west" },
        { "a*>b", "a%2A%3Eb" },
        { "<x>", "%3Cx%3E" },
        { "é", "%C3%A9" },
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_string_equal(aura_fleet_token(p, cases[i].name),
                            cases[i].token);
        assert_true(aura_fleet_token_matches(cases[i].token, cases[i].name));
    }
    assert_false(aura_fleet_token_matches("gw-2", "gw-1"));
    assert_false(aura_fleet_token_matches("gw-1x", "gw-1"));
    assert_false(aura_fleet_token_matches("gw", "gw-1"));
    assert_false(aura_fleet_token_matches("gw.eu", "gw.eu"));
    assert_false(aura_fleet_token_matches("%2", "."));
    assert_true(aura_fleet_name_ok("gw-1"));
    assert_false(aura_fleet_name_ok(""));
    assert_false(aura_fleet_name_ok("a\nb"));
}

/* Trimmed in the documented order, listed in "trimmed"; NULL when even
 * the rest does not fit. */
static void test_encode(void **state)
{
    json_t *doc = json_loads(good, 0, NULL);
    apr_size_t len, full;
    char *text, pad[3000];

    (void)state;
    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    json_object_set_new(doc, "connections", json_string(pad));
    json_object_set_new(json_object_get(doc, "breakers"), "targets",
                        json_string(pad));
    text = aura_fleet_encode(doc, 100000, &len);
    assert_non_null(text);
    full = len;
    free(text);
    assert_null(json_object_get(doc, "trimmed"));

    text = aura_fleet_encode(doc, full - 2000, &len);
    assert_non_null(text);
    assert_true(len <= full - 2000);
    assert_non_null(strstr(text, "\"trimmed\":[\"breakers.targets\"]"));
    assert_non_null(strstr(text, "\"connections\""));
    free(text);

    text = aura_fleet_encode(doc, 1000, &len);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"breakers.targets\",\"connections\""));
    assert_true(len <= 1000);
    free(text);

    assert_null(aura_fleet_encode(doc, 50, &len));
    json_decref(doc);
}

static aura_fleet_digest_t digest(const char *epoch, const char *node,
                                  int fallback, const char *db_state)
{
    aura_fleet_digest_t d;

    memset(&d, 0, sizeof(d));
    strcpy(d.instance, "gw-1");
    strcpy(d.epoch, epoch);
    strcpy(d.node, node);
    d.fallback = (apr_uint32_t)fallback;
    d.interval = 200000;
    strcpy(d.breakers[0].name, "auth");
    d.breakers[0].state = AURA_FLEET_BRK_CLOSED;
    d.nbreakers = 1;
    if (db_state) {
        strcpy(d.breakers[1].name, "db");
        d.breakers[1].state = !strcmp(db_state, "open")
                              ? AURA_FLEET_BRK_OPEN
                              : !strcmp(db_state, "half-open")
                                ? AURA_FLEET_BRK_HALF_OPEN
                                : AURA_FLEET_BRK_CLOSED;
        d.nbreakers = 2;
    }
    return d;
}

static void test_diff(void **state)
{
    aura_fleet_event_t ev[16];
    aura_fleet_digest_t a = digest("0a", "n1", 0, "closed");
    aura_fleet_digest_t b = digest("0a", "n1", 0, "open");
    aura_fleet_digest_t c = digest("0a", "n2", 1, NULL);
    aura_fleet_digest_t e = digest("0b", "n2", 1, NULL);
    char node[300];
    int n;

    (void)state;
    /* Nothing changed: nothing to say. */
    assert_int_equal(aura_fleet_diff(&a, &a, 5, ev, 16), 0);
    /* First sight: appeared, plus what is already wrong. */
    n = aura_fleet_diff(NULL, &b, 5, ev, 16);
    assert_int_equal(n, 2);
    assert_int_equal(ev[0].kind, AURA_FLEET_EV_APPEARED);
    assert_int_equal(ev[1].kind, AURA_FLEET_EV_BREAKER);
    assert_string_equal(ev[1].what, "db");
    /* A breaker opens. */
    n = aura_fleet_diff(&a, &b, 5, ev, 16);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, AURA_FLEET_EV_BREAKER);
    assert_string_equal(ev[0].instance, "gw-1");
    assert_string_equal(ev[0].from, "closed");
    assert_string_equal(ev[0].to, "open");
    assert_int_equal(ev[0].time, 5);
    /* The open breaker vanishes (counts as closed), the fallback is
     * entered, the node changes. */
    n = aura_fleet_diff(&b, &c, 5, ev, 16);
    assert_int_equal(n, 3);
    assert_int_equal(ev[0].kind, AURA_FLEET_EV_BREAKER);
    assert_string_equal(ev[0].to, "closed");
    assert_int_equal(ev[1].kind, AURA_FLEET_EV_FALLBACK_ENTERED);
    assert_int_equal(ev[2].kind, AURA_FLEET_EV_NODE);
    assert_string_equal(ev[2].from, "n1");
    assert_string_equal(ev[2].to, "n2");
    /* Another epoch: restarted. */
    n = aura_fleet_diff(&c, &e, 5, ev, 16);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, AURA_FLEET_EV_RESTARTED);
    n = aura_fleet_diff(&e, &a, 5, ev, 16);
    assert_int_equal(n, 3);
    assert_int_equal(ev[1].kind, AURA_FLEET_EV_FALLBACK_LEFT);
    /* Bounded by max. */
    assert_int_equal(aura_fleet_diff(&b, &c, 5, ev, 2), 2);
    /* A long node is cut at a character's boundary: still UTF-8. */
    memset(node, 0, sizeof(node));
    for (n = 0; n < 95; n++) {
        memcpy(node + 2 * n, "\xc3\xa9", 2);
    }
    strcpy(c.node, "x");
    memcpy(e.node, node, 189);
    e.node[189] = '\0';
    strcpy(e.epoch, c.epoch);
    n = aura_fleet_diff(&c, &e, 5, ev, 16);
    assert_int_equal(ev[n - 1].kind, AURA_FLEET_EV_NODE);
    assert_true(strlen(ev[n - 1].to) % 2 == 0);
    assert_true(strlen(ev[n - 1].to) < AURA_FLEET_EV_TEXT);
}

static void test_liveness(void **state)
{
    static const struct {
        apr_time_t age;
        aura_fleet_liveness_e want;
    } cases[] = {
        { 0, AURA_FLEET_LIVE },
        { 599999, AURA_FLEET_LIVE },
        { 600000, AURA_FLEET_LIVE },      /* exactly 3 intervals */
        { 600001, AURA_FLEET_STALE },
        { 3000000, AURA_FLEET_STALE },
        { 3000001, AURA_FLEET_GONE },
        { -5, AURA_FLEET_LIVE },          /* a clock step back */
    };
    apr_time_t now = APR_INT64_C(1796509801000000);
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(aura_fleet_liveness(now, now - cases[i].age, 200000,
                                             3000000), cases[i].want);
    }
    assert_string_equal(aura_fleet_liveness_name(AURA_FLEET_STALE), "stale");
    assert_string_equal(aura_fleet_event_name(AURA_FLEET_EV_BACK), "back");
    assert_string_equal(aura_fleet_event_name(99), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_good),
        cmocka_unit_test(test_decode_bad),
        cmocka_unit_test_setup_teardown(test_decode_bounds, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_decode_markup_name),
        cmocka_unit_test_setup_teardown(test_token, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_liveness),
    };
    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    apr_terminate();
    return rc;
}
