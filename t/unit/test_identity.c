/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_identity.c: what may become identity and the one accepted form of
 * Authorization (aura_identity.c), table-driven.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
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

/* A user's actor never reads as a key's (issue #29 point 6). */
static const struct {
    const char *s;
    apr_size_t len;             /* 0: strlen(s) */
    int want;
} reserved_cases[] = {
    { "key:0123456789abcdef", 0, 1 },   /* a key's actor, exactly */
    { "key:", 0, 1 },
    { "key:anything at all", 0, 1 },
    { "KEY:0123456789abcdef", 0, 1 },   /* any case */
    { "Key:x", 0, 1 },
    { "kEy:x", 0, 1 },
    { "key", 0, 0 },
    { "key-1", 0, 0 },
    { "keys:1", 0, 0 },
    { "key;x", 0, 0 },
    { " key:x", 0, 0 },
    { "monkey:1", 0, 0 },
    { "user:key:1", 0, 0 },
    { "k\xc3\xa9y:x", 0, 0 },
    { "key:x", 3, 0 },                  /* only "key" counted */
    { "key:x", 4, 1 },
    { "", 0, 0 },
    { NULL, 4, 0 },
};

static void test_actor_reserved(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(reserved_cases) / sizeof(reserved_cases[0]);
         i++) {
        const char *s = reserved_cases[i].s;
        apr_size_t len = reserved_cases[i].len ? reserved_cases[i].len
                                               : (s ? strlen(s) : 0);
        int got = aura_identity_actor_reserved(s, len);

        if (got != reserved_cases[i].want) {
            print_error("row %zu \"%s\": expected %d, got %d\n", i,
                        s ? s : "(null)", reserved_cases[i].want, got);
        }
        assert_int_equal(got, reserved_cases[i].want);
    }
    /* What the key store builds is in the namespace. */
    assert_true(aura_identity_actor_reserved(AURA_KEY_ACTOR_PREFIX
                                             "0123456789abcdef",
                                             sizeof(AURA_KEY_ACTOR_PREFIX)
                                             - 1 + AURA_KEY_ACTOR_HEX));
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
        cmocka_unit_test(test_actor_reserved),
        cmocka_unit_test(test_authz),
    };

    return cmocka_run_group_tests_name("identity", tests, NULL, NULL);
}
