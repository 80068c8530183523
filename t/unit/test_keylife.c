/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_keylife.c: an API key's expiry and scopes (aura_keylife.c),
 * table-driven (issue #32 point 1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "auth/aura_keylife.h"

static void test_expired(void **state)
{
    (void)state;
    assert_false(aura_key_expired(0, 0));
    assert_false(aura_key_expired(0, APR_INT64_MAX));
    assert_false(aura_key_expired(1000, 999));
    /* At the instant itself the key is over: expires_at is the first
     * moment it no longer works. */
    assert_true(aura_key_expired(1000, 1000));
    assert_true(aura_key_expired(1000, 1001));
    assert_true(aura_key_expired(1, APR_INT64_MAX));
}

static const struct {
    const char *list;
    long count;
    int ok;
} scopes_rows[] = {
    { "", 0, 1 },                  /* a key that may call nothing */
    { "db", 1, 1 },
    { "db,storage", 2, 1 },
    { "db,reports.v2,A_b-c", 3, 1 },
    { "db,storage", 1, 0 },        /* one element "db,storage": refused,
                                      it would widen the key */
    { "db", 2, 0 },
    { "", 1, 0 },                  /* one empty (or NULL) element */
    { "db,", 2, 0 },
    { ",db", 2, 0 },
    { "db,,x", 3, 0 },
    { "d b", 1, 0 },
    { "db\n", 1, 0 },
    { "db/x", 1, 0 },
    { "db", -1, 0 },
    { "x", 0, 0 },
};

static void test_scopes_ok(void **state)
{
    char big[AURA_KEY_SCOPES_MAX + 2];
    char name[AURA_KEY_SCOPE_MAX + 2];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(scopes_rows) / sizeof(scopes_rows[0]); i++) {
        if (aura_key_scopes_ok(scopes_rows[i].list, scopes_rows[i].count)
            != scopes_rows[i].ok) {
            fail_msg("'%s' (%ld): want %d", scopes_rows[i].list,
                     scopes_rows[i].count, scopes_rows[i].ok);
        }
    }
    assert_false(aura_key_scopes_ok(NULL, 0));
    memset(name, 'a', sizeof(name));
    assert_true(aura_key_scope_name_ok(name, AURA_KEY_SCOPE_MAX));
    assert_false(aura_key_scope_name_ok(name, AURA_KEY_SCOPE_MAX + 1));
    /* A list longer than the cache holds: refused whole, never cut. */
    memset(big, 'a', sizeof(big));
    for (i = 60; i < sizeof(big) - 1; i += 61) {
        big[i] = ',';
    }
    big[AURA_KEY_SCOPES_MAX + 1] = '\0';
    assert_false(aura_key_scopes_ok(big, 5));
    big[AURA_KEY_SCOPES_MAX] = '\0';
    assert_true(aura_key_scopes_ok(big, 5));
}

static const struct {
    const char *scopes;
    const char *service;
    const char *group;
    int allows;
} allow_rows[] = {
    { NULL, "db", NULL, 1 },            /* no scopes: every service */
    { NULL, NULL, NULL, 1 },
    { "db", "db", NULL, 1 },
    { "db,storage", "storage", NULL, 1 },
    { "db", "functions", NULL, 0 },
    { "", "db", NULL, 0 },              /* empty list: nothing */
    { "db", NULL, NULL, 0 },            /* no service, no group: closed */
    { "reports", "functions", "reports", 1 },
    { "reports", "functions", NULL, 0 },
    { "functions", "functions", "reports", 1 },
    /* Exact names, never prefixes or parts. */
    { "d", "db", NULL, 0 },
    { "dbx", "db", NULL, 0 },
    { "xdb", "db", NULL, 0 },
    { "db", "d", NULL, 0 },
    { "db,st", "storage", NULL, 0 },
    { "db", "", "", 0 },
    { "DB", "db", NULL, 0 },
};

static void test_allows(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(allow_rows) / sizeof(allow_rows[0]); i++) {
        if (aura_key_scope_allows(allow_rows[i].scopes,
                                  allow_rows[i].service,
                                  allow_rows[i].group)
            != allow_rows[i].allows) {
            fail_msg("scopes '%s', service '%s', group '%s': want %d",
                     allow_rows[i].scopes ? allow_rows[i].scopes : "(null)",
                     allow_rows[i].service ? allow_rows[i].service
                                           : "(null)",
                     allow_rows[i].group ? allow_rows[i].group : "(null)",
                     allow_rows[i].allows);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expired),
        cmocka_unit_test(test_scopes_ok),
        cmocka_unit_test(test_allows),
    };

    return cmocka_run_group_tests_name("keylife", tests, NULL, NULL);
}
