/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_revoke.c: token revocations (aura_revoke_index.c): the canonical
 * form of their targets and values (also as incident controls of kind
 * revoke), the per-child hash index (bounded, later times win, expiry),
 * and the matching of a token's sub, sid, jti and iat in a scope.
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
#include "control/aura_revoke_index.h"

#define NOW (APR_INT64_C(1796509801) * APR_USEC_PER_SEC)
#define LATER (NOW + apr_time_from_sec(3600))

typedef struct {
    const char *target, *value;
    int ok;
} canon_case_t;

static const canon_case_t canon_cases[] = {
    { "sub:proj-a:user-1", "1796509801", 1 },
    { "sid:proj-a:s-1", "1", 1 },
    { "jti:mgmt:a:b:c", "253402300799", 1 },     /* the id may hold ':' */
    { "sub:proj-a:user-1", "253402300800", 0 },  /* beyond year 9999 */
    { "sub:proj-a:user-1", "0", 0 },
    { "sub:proj-a:user-1", "017", 0 },
    { "sub:proj-a:user-1", "", 0 },
    { "sub:proj-a:user-1", "12s", 0 },
    { "sub:proj-a:user-1", "-5", 0 },
    { "sub:proj-a:", "5", 0 },                   /* no id */
    { "sub::user-1", "5", 0 },                   /* no scope */
    { "sub:user-1", "5", 0 },                    /* no scope at all */
    { "sub:proj-a:user 1", "5", 0 },             /* a space */
    { "sub:proj-a:user\x01", "5", 0 },
    { "aud:proj-a:x", "5", 0 },
    { "SUB:proj-a:x", "5", 0 },
    { "", "5", 0 },
};

static void test_canon(void **state)
{
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(canon_cases) / sizeof(canon_cases[0]); i++) {
        const canon_case_t *c = &canon_cases[i];
        char ct[AURA_CONTROL_TARGET_MAX + 1], cv[AURA_CONTROL_VALUE_MAX + 1];
        const char *err = aura_control_canon(p, AURA_CONTROL_REVOKE,
                                             c->target, c->value, ct, cv);

        if (c->ok) {
            assert_null(err);
            assert_string_equal(ct, c->target);
            assert_string_equal(cv, c->value);
        }
        else {
            assert_non_null(err);
        }
    }
    assert_int_equal(aura_control_kind_of("revoke"), AURA_CONTROL_REVOKE);
    assert_string_equal(aura_control_kind_name(AURA_CONTROL_REVOKE),
                        "revoke");
}

/* A revocation survives its trip on NATS. */
static void test_wire(void **state)
{
    apr_pool_t *p = *state;
    aura_control_t c, d;
    char *text;

    memset(&c, 0, sizeof(c));
    c.kind = AURA_CONTROL_REVOKE;
    strcpy(c.target, "sid:proj-a:s-1");
    strcpy(c.value, "1796509801");
    strcpy(c.by, "ops");
    c.updated = NOW;
    c.expires = LATER;
    aura_control_id(AURA_CONTROL_REVOKE, c.target, c.id);
    text = aura_control_encode(p, &c);
    assert_non_null(text);
    assert_null(aura_control_decode(p, text, strlen(text), &d));
    assert_int_equal(memcmp(&c, &d, sizeof(c)), 0);
    /* A revocation may outlive the 7 days of the other controls, up to
     * AURA_REVOKE_TTL_MAX (issue #32: held until its tokens expire). */
    c.expires = NOW + AURA_CONTROL_TTL_MAX + apr_time_from_sec(3 * 3600);
    text = aura_control_encode(p, &c);
    assert_null(aura_control_decode(p, text, strlen(text), &d));
    c.expires = NOW + AURA_REVOKE_TTL_MAX;
    text = aura_control_encode(p, &c);
    assert_null(aura_control_decode(p, text, strlen(text), &d));
    c.expires = NOW + AURA_REVOKE_TTL_MAX + 1;
    text = aura_control_encode(p, &c);
    assert_non_null(aura_control_decode(p, text, strlen(text), &d));
}

/* A revocation ends only when every token it names has died. */
typedef struct {
    const char *name;
    apr_int64_t before;             /* seconds */
    long horizon_s, ttl_s;          /* ttl 0: none */
    apr_time_t want;
} expiry_case_t;

#define NOW_S APR_INT64_C(1796509801)

static const expiry_case_t expiry_cases[] = {
    { "now, a day's horizon", NOW_S, 86400, 0,
      apr_time_from_sec(NOW_S + 1 + 86400) },
    { "an hour ago, 4 s horizon: past", NOW_S - 3600, 4, 0,
      apr_time_from_sec(NOW_S - 3600 + 1 + 4) },
    { "a shorter ttl does not cut it", NOW_S, 86400, 60,
      apr_time_from_sec(NOW_S + 1 + 86400) },
    { "a longer ttl lengthens it", NOW_S, 60, 86400,
      NOW + apr_time_from_sec(86400) },
    { "an old time with a ttl: the ttl", 1, 86400, 600,
      NOW + apr_time_from_sec(600) },
    { "7 days and twice an hour's leeway, 300 s ahead: within the cap",
      NOW_S + 300, 7 * 86400 + 7200, 0,
      apr_time_from_sec(NOW_S + 300 + 1 + 7 * 86400 + 7200) },
};

static void test_expiry(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(expiry_cases) / sizeof(expiry_cases[0]); i++) {
        const expiry_case_t *c = &expiry_cases[i];
        apr_time_t got = aura_revoke_expiry(c->before,
                                            apr_time_from_sec(c->horizon_s),
                                            apr_time_from_sec(c->ttl_s),
                                            NOW);

        if (got != c->want) {
            fail_msg("row %zu \"%s\": %" APR_TIME_T_FMT " != %"
                     APR_TIME_T_FMT, i, c->name, got, c->want);
        }
        assert_true(got <= NOW + AURA_REVOKE_TTL_MAX);
    }
    /* The largest horizon from a logout_token's iat an hour ahead (the
     * largest leeway) stays under the cap too. */
    assert_true(aura_revoke_expiry(NOW_S + 3600,
                                   apr_time_from_sec(7 * 86400 + 7200), 0,
                                   NOW)
                <= NOW + AURA_REVOKE_TTL_MAX);
}

static void test_target(void **state)
{
    apr_pool_t *p = *state;

    assert_string_equal(aura_revoke_target(p, AURA_REVOKE_SUB, "proj-a",
                                           "u:1"), "sub:proj-a:u:1");
    assert_string_equal(aura_revoke_target(p, AURA_REVOKE_JTI, "mgmt",
                                           "j"), "jti:mgmt:j");
    /* A scope with ':' would read two ways: none. */
    assert_null(aura_revoke_target(p, AURA_REVOKE_SUB, "a:b", "c"));
    assert_null(aura_revoke_target(p, AURA_REVOKE_SUB, "", "c"));
    assert_null(aura_revoke_target(p, AURA_REVOKE_SUB, NULL, "c"));
    assert_null(aura_revoke_target(p, AURA_REVOKE_SID, "a", ""));
    assert_null(aura_revoke_target(p, AURA_REVOKE_SID, "a", NULL));
    assert_null(aura_revoke_target(p, AURA_REVOKE_NONE, "a", "b"));
    assert_int_equal(aura_revoke_kind_of("sid:a:b"), AURA_REVOKE_SID);
    assert_int_equal(aura_revoke_kind_of("sidx:a:b"), AURA_REVOKE_NONE);
}

static void test_index(void **state)
{
    apr_pool_t *p = *state;
    aura_revoke_index_t *ix = aura_revoke_index_make(p, 4);
    apr_int64_t before = 0;

    assert_false(aura_revoke_index_find(ix, "sub:a:x", NOW, &before));
    assert_true(aura_revoke_index_add(ix, "sub:a:x", 100, LATER));
    assert_true(aura_revoke_index_find(ix, "sub:a:x", NOW, &before));
    assert_int_equal(before, 100);
    /* The same target again: the later time and expiry win. */
    assert_true(aura_revoke_index_add(ix, "sub:a:x", 50, LATER));
    assert_true(aura_revoke_index_add(ix, "sub:a:x", 200, NOW + 1));
    assert_true(aura_revoke_index_find(ix, "sub:a:x", NOW, &before));
    assert_int_equal(before, 200);
    assert_int_equal(aura_revoke_index_count(ix), 1);
    /* Expired: not found. */
    assert_false(aura_revoke_index_find(ix, "sub:a:x", LATER, &before));
    /* Bounded: 4 in all, the fifth refused. */
    assert_true(aura_revoke_index_add(ix, "sub:a:y", 1, LATER));
    assert_true(aura_revoke_index_add(ix, "sub:a:z", 1, LATER));
    assert_true(aura_revoke_index_add(ix, "sub:b:x", 1, LATER));
    assert_false(aura_revoke_index_add(ix, "sub:c:x", 1, LATER));
    assert_false(aura_revoke_index_find(ix, "sub:c:x", NOW, &before));
    assert_true(aura_revoke_index_find(ix, "sub:b:x", NOW, &before));
    aura_revoke_index_clear(ix);
    assert_int_equal(aura_revoke_index_count(ix), 0);
    assert_false(aura_revoke_index_find(ix, "sub:a:x", NOW, &before));
}

/* Many: every one found, none that was not added. */
static void test_index_many(void **state)
{
    apr_pool_t *p = *state;
    aura_revoke_index_t *ix = aura_revoke_index_make(p, 10000);
    apr_int64_t before;
    int i;

    for (i = 0; i < 10000; i++) {
        assert_true(aura_revoke_index_add(
            ix, apr_psprintf(p, "sub:proj-a:user-%d", i), i + 1, LATER));
    }
    for (i = 0; i < 10000; i++) {
        assert_true(aura_revoke_index_find(
            ix, apr_psprintf(p, "sub:proj-a:user-%d", i), NOW, &before));
        assert_int_equal(before, i + 1);
        assert_false(aura_revoke_index_find(
            ix, apr_psprintf(p, "sub:proj-b:user-%d", i), NOW, &before));
    }
}

static void test_match(void **state)
{
    apr_pool_t *p = *state;
    aura_revoke_index_t *ix = aura_revoke_index_make(p, 8);

    aura_revoke_index_add(ix, "sub:proj-a:alice", 1000, LATER);
    aura_revoke_index_add(ix, "sid:proj-a:s-1", 1000, LATER);
    aura_revoke_index_add(ix, "jti:mgmt:j-1", 1000, LATER);

    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "alice", NULL,
                                       NULL, 999, NOW), AURA_REVOKE_SUB);
    /* At the time: revoked; after it: not. */
    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "alice", NULL,
                                       NULL, 1000, NOW), AURA_REVOKE_SUB);
    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "alice", NULL,
                                       NULL, 1001, NOW), AURA_REVOKE_NONE);
    /* No iat: fail closed. */
    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "alice", NULL,
                                       NULL, -1, NOW), AURA_REVOKE_SUB);
    /* Another scope, another sub. */
    assert_int_equal(aura_revoke_match(ix, p, "proj-b", "alice", NULL,
                                       NULL, 1, NOW), AURA_REVOKE_NONE);
    assert_int_equal(aura_revoke_match(ix, p, "mgmt", "alice", NULL,
                                       NULL, 1, NOW), AURA_REVOKE_NONE);
    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "bob", NULL,
                                       NULL, 1, NOW), AURA_REVOKE_NONE);
    /* By session and by token id. */
    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "bob", "s-1",
                                       NULL, 1, NOW), AURA_REVOKE_SID);
    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "bob", "s-2",
                                       NULL, 1, NOW), AURA_REVOKE_NONE);
    assert_int_equal(aura_revoke_match(ix, p, "mgmt", "bob", NULL,
                                       "j-1", 1, NOW), AURA_REVOKE_JTI);
    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "bob", NULL,
                                       "j-1", 1, NOW), AURA_REVOKE_NONE);
    /* No scope: nothing to look up. */
    assert_int_equal(aura_revoke_match(ix, p, NULL, "alice", NULL,
                                       NULL, 1, NOW), AURA_REVOKE_NONE);
    /* Expired. */
    assert_int_equal(aura_revoke_match(ix, p, "proj-a", "alice", NULL,
                                       NULL, 1, LATER), AURA_REVOKE_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_canon, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_wire, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_target, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_index, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_index_many, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_match, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_expiry),
    };

    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests_name("revoke", tests, NULL, NULL);
    apr_terminate();
    return rc;
}
