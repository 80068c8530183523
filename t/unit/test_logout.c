/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_logout.c: the claims of an OpenID Connect back-channel
 * logout_token (aura_logout_token.c), after its signature, iss, aud and
 * times were verified: events, jti, sub and/or sid, no nonce.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "apr_general.h"
#include "apr_strings.h"

#include "aura_unit.h"
#include "auth/aura_logout_token.h"

#define EV "{\"" AURA_LOGOUT_EVENT "\":{}}"

typedef struct {
    const char *json;
    int ok;
} case_t;

static const case_t cases[] = {
    { "{\"iat\":100,\"jti\":\"j\",\"sid\":\"s\",\"events\":" EV "}", 1 },
    { "{\"iat\":100,\"jti\":\"j\",\"sub\":\"u\",\"events\":" EV "}", 1 },
    { "{\"iat\":100,\"jti\":\"j\",\"sub\":\"u\",\"sid\":\"s\","
      "\"events\":" EV "}", 1 },
    /* nonce, in any form */
    { "{\"iat\":100,\"jti\":\"j\",\"sid\":\"s\",\"nonce\":\"n\","
      "\"events\":" EV "}", 0 },
    { "{\"iat\":100,\"jti\":\"j\",\"sid\":\"s\",\"nonce\":null,"
      "\"events\":" EV "}", 0 },
    /* events */
    { "{\"iat\":100,\"jti\":\"j\",\"sid\":\"s\"}", 0 },
    { "{\"iat\":100,\"jti\":\"j\",\"sid\":\"s\",\"events\":{}}", 0 },
    { "{\"iat\":100,\"jti\":\"j\",\"sid\":\"s\",\"events\":"
      "{\"" AURA_LOGOUT_EVENT "\":true}}", 0 },
    { "{\"iat\":100,\"jti\":\"j\",\"sid\":\"s\",\"events\":"
      "[\"" AURA_LOGOUT_EVENT "\"]}", 0 },
    /* jti */
    { "{\"iat\":100,\"sid\":\"s\",\"events\":" EV "}", 0 },
    { "{\"iat\":100,\"jti\":\"\",\"sid\":\"s\",\"events\":" EV "}", 0 },
    { "{\"iat\":100,\"jti\":7,\"sid\":\"s\",\"events\":" EV "}", 0 },
    /* iat */
    { "{\"jti\":\"j\",\"sid\":\"s\",\"events\":" EV "}", 0 },
    { "{\"iat\":\"100\",\"jti\":\"j\",\"sid\":\"s\",\"events\":" EV "}", 0 },
    /* sub, sid */
    { "{\"iat\":100,\"jti\":\"j\",\"events\":" EV "}", 0 },
    { "{\"iat\":100,\"jti\":\"j\",\"sid\":\"\",\"events\":" EV "}", 0 },
    { "{\"iat\":100,\"jti\":\"j\",\"sub\":\"a b\",\"events\":" EV "}", 0 },
    { "{\"iat\":100,\"jti\":\"j\",\"sub\":\"a\\u0000b\",\"events\":" EV "}",
      0 },
    { "{\"iat\":100,\"jti\":\"j\",\"sub\":1,\"sid\":\"s\",\"events\":" EV
      "}", 0 },
    /* no object */
    { "[]", 0 },
    { "", 0 },
};

static void test_cases(void **state)
{
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        aura_logout_claims_t c;
        const char *err = aura_logout_token_check(p, cases[i].json, 160,
                                                  &c);

        if (cases[i].ok != !err) {
            fail_msg("case %zu (%s): %s", i, cases[i].json,
                     err ? err : "accepted");
        }
    }
}

static void test_fields(void **state)
{
    apr_pool_t *p = *state;
    aura_logout_claims_t c;

    assert_null(aura_logout_token_check(
        p, "{\"iat\":1796509801.5,\"jti\":\"j-1\",\"sub\":\"u:1\","
        "\"sid\":\"s-1\",\"events\":" EV "}", 160, &c));
    assert_string_equal(c.jti, "j-1");
    assert_string_equal(c.sub, "u:1");
    assert_string_equal(c.sid, "s-1");
    assert_int_equal(c.iat, 1796509801);
    /* Too long for the bound: refused. */
    assert_non_null(aura_logout_token_check(
        p, "{\"iat\":1,\"jti\":\"j\",\"sid\":\"0123456789\",\"events\":"
        EV "}", 9, &c));
    assert_null(c.sid);
    assert_non_null(aura_logout_token_check(p, NULL, 160, &c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cases, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_fields, pool_setup,
                                        pool_teardown),
    };
    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests_name("logout", tests, NULL, NULL);
    apr_terminate();
    return rc;
}
