/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_identity.c: what may become identity and the one accepted form of
 * Authorization (aura_identity.c), table-driven.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "auth/aura_identity.h"

static void test_text_ok(void **state)
{
    char big[AURA_SUB_MAX + 2];
    char c;

    (void)state;
    assert_true(aura_identity_text_ok("user-1", 6, AURA_SUB_MAX));
    assert_true(aura_identity_text_ok("ünïcode ok", strlen("ünïcode ok"),
                                      AURA_SUB_MAX));
    assert_false(aura_identity_text_ok(NULL, 0, AURA_SUB_MAX));
    assert_false(aura_identity_text_ok("", 0, AURA_SUB_MAX));
    /* A NUL inside, as JSON "\u0000" gives: seen by the length. */
    assert_false(aura_identity_text_ok("a\0b", 3, AURA_SUB_MAX));
    assert_false(aura_identity_text_ok("a\rb", 3, AURA_SUB_MAX));
    assert_false(aura_identity_text_ok("a\nb", 3, AURA_SUB_MAX));
    assert_false(aura_identity_text_ok("a\tb", 3, AURA_SUB_MAX));
    assert_false(aura_identity_text_ok("a\x7f" "b", 3, AURA_SUB_MAX));
    for (c = 1; c < 0x20; c++) {
        char s[3] = { 'x', c, 'y' };

        assert_false(aura_identity_text_ok(s, 3, AURA_SUB_MAX));
    }
    memset(big, 'a', sizeof(big));
    assert_true(aura_identity_text_ok(big, AURA_SUB_MAX, AURA_SUB_MAX));
    assert_false(aura_identity_text_ok(big, AURA_SUB_MAX + 1, AURA_SUB_MAX));
}

static void test_id_ok(void **state)
{
    char id[AURA_ID_MAX + 2];

    (void)state;
    assert_true(aura_identity_id_ok("proj-a", AURA_ID_MAX));
    assert_true(aura_identity_id_ok("A.b_c-9", AURA_ID_MAX));
    assert_false(aura_identity_id_ok("", AURA_ID_MAX));
    assert_false(aura_identity_id_ok(NULL, AURA_ID_MAX));
    assert_false(aura_identity_id_ok("proj a", AURA_ID_MAX));
    assert_false(aura_identity_id_ok("proj/a", AURA_ID_MAX));
    assert_false(aura_identity_id_ok("proj\r\n", AURA_ID_MAX));
    memset(id, 'p', AURA_ID_MAX);
    id[AURA_ID_MAX] = '\0';
    assert_true(aura_identity_id_ok(id, AURA_ID_MAX));
    id[AURA_ID_MAX] = 'q';
    id[AURA_ID_MAX + 1] = '\0';
    assert_false(aura_identity_id_ok(id, AURA_ID_MAX));
}

static void test_authz(void **state)
{
    static const struct {
        const char *in;
        aura_authz_e kind;
        const char *token;
    } rows[] = {
        { "Bearer abc.def.ghi", AURA_AUTHZ_BEARER, "abc.def.ghi" },
        { "bearer abc", AURA_AUTHZ_BEARER, "abc" },
        { "BEARER   abc", AURA_AUTHZ_BEARER, "abc" },
        { "Bearer a-b_c~d+e/f==", AURA_AUTHZ_BEARER, "a-b_c~d+e/f==" },
        { "", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer ", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer\tabc", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer \tabc", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer,abc", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer abc,", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer abc, Basic dXNlcjpwdw==", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer abc, Bearer def", AURA_AUTHZ_MALFORMED, NULL },
        { "Basic dXNlcjpwdw==, Bearer abc", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer abc def", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer abc ", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer a=b", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer =abc", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearerabc", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer: abc", AURA_AUTHZ_MALFORMED, NULL },
        { "abc.def.ghi", AURA_AUTHZ_MALFORMED, NULL },
        { "JWT abc.def.ghi", AURA_AUTHZ_MALFORMED, NULL },
        { "Basic dXNlcjpwdw==", AURA_AUTHZ_MALFORMED, NULL },
        { " Bearer abc", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer \"abc\"", AURA_AUTHZ_MALFORMED, NULL },
        { "Bearer abc\r\n", AURA_AUTHZ_MALFORMED, NULL },
    };
    const char *token;
    size_t i;

    (void)state;
    assert_int_equal(aura_authz_parse(NULL, &token), AURA_AUTHZ_NONE);
    assert_null(token);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        aura_authz_e kind = aura_authz_parse(rows[i].in, &token);

        if (kind != rows[i].kind) {
            fail_msg("'%s': got %d, want %d", rows[i].in, kind,
                     rows[i].kind);
        }
        if (rows[i].token) {
            assert_string_equal(token, rows[i].token);
        }
        else {
            assert_null(token);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_ok),
        cmocka_unit_test(test_id_ok),
        cmocka_unit_test(test_authz),
    };

    return cmocka_run_group_tests_name("identity", tests, NULL, NULL);
}
