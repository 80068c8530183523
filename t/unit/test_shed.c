/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_shed.c: the traffic classes of the in-flight caps (aura_shed.c):
 * the class of each verified role, the slots each class may fill (the
 * reserves above it), AuraShedding's parsing and its refusals.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "resilience/aura_shed.h"

static void test_class_of(void **state)
{
    (void)state;
    assert_int_equal(aura_class_of("service_role", 0), AURA_CLASS_SERVICE);
    assert_int_equal(aura_class_of("authenticated", 0), AURA_CLASS_USER);
    assert_int_equal(aura_class_of("anon", 0), AURA_CLASS_ANON);
    assert_int_equal(aura_class_of(NULL, 0), AURA_CLASS_PUBLIC);
    /* An unknown role is never more trusted than anon. */
    assert_int_equal(aura_class_of("superuser", 0), AURA_CLASS_ANON);
    /* The console is never shed by the data plane's load. */
    assert_int_equal(aura_class_of("member", 1), AURA_CLASS_SERVICE);
    assert_int_equal(aura_class_of(NULL, 1), AURA_CLASS_SERVICE);
    assert_string_equal(aura_class_name(AURA_CLASS_ANON), "anon");
    assert_string_equal(aura_class_name(AURA_CLASS_PUBLIC), "public");
}

static void test_limits(void **state)
{
    const aura_shed_conf_t *d = &aura_shed_default;

    (void)state;
    /* A cap of 20: public 10, anon 14, users 17, service_role all 20. */
    assert_int_equal(aura_class_limit(20, d, AURA_CLASS_PUBLIC), 10);
    assert_int_equal(aura_class_limit(20, d, AURA_CLASS_ANON), 14);
    assert_int_equal(aura_class_limit(20, d, AURA_CLASS_USER), 17);
    assert_int_equal(aura_class_limit(20, d, AURA_CLASS_SERVICE), 20);
    /* Rounding never shuts a class out. */
    assert_int_equal(aura_class_limit(1, d, AURA_CLASS_PUBLIC), 1);
    /* No cap stays no cap. */
    assert_int_equal(aura_class_limit(0, d, AURA_CLASS_PUBLIC), 0);
    /* Off: every class the whole cap. */
    assert_int_equal(aura_class_limit(20, &aura_shed_off, AURA_CLASS_PUBLIC),
                     20);
    /* Monotonic: a more trusted class never gets fewer slots. */
    {
        apr_uint64_t cap;
        int c;

        for (cap = 1; cap < 500; cap++) {
            for (c = AURA_CLASS_USER; c < AURA_CLASS_COUNT; c++) {
                assert_true(aura_class_limit(cap, d, (aura_class_e)c)
                            <= aura_class_limit(cap, d,
                                                (aura_class_e)(c - 1)));
            }
        }
    }
}

static const char *parse(const char *line, aura_shed_conf_t *out)
{
    static char err[200];
    char buf[200], *argv[8], *tok, *save = NULL;
    int argc = 0;

    strcpy(buf, line);
    for (tok = strtok_r(buf, " ", &save); tok && argc < 8;
         tok = strtok_r(NULL, " ", &save)) {
        argv[argc++] = tok;
    }
    return aura_shed_parse(argc, argv, out, err, sizeof(err));
}

static void test_parse(void **state)
{
    aura_shed_conf_t c;

    (void)state;
    assert_null(parse("off", &c));
    assert_int_equal(c.pct[AURA_CLASS_PUBLIC], 100);
    assert_null(parse("OFF", &c));
    assert_null(parse("anon=60%", &c));
    assert_int_equal(c.pct[AURA_CLASS_ANON], 60);
    assert_int_equal(c.pct[AURA_CLASS_PUBLIC], 50);
    assert_int_equal(c.pct[AURA_CLASS_USER], 85);
    assert_int_equal(c.pct[AURA_CLASS_SERVICE], 100);
    assert_null(parse("public=10% anon=20% authenticated=100%", &c));
    assert_int_equal(c.pct[AURA_CLASS_PUBLIC], 10);
    assert_int_equal(c.pct[AURA_CLASS_USER], 100);

    assert_non_null(parse("anon=0%", &c));
    assert_non_null(parse("anon=101%", &c));
    assert_non_null(parse("anon=70", &c));
    assert_non_null(parse("anon=", &c));
    assert_non_null(parse("service_role=50%", &c));
    assert_non_null(parse("guest=50%", &c));
    assert_non_null(parse("off anon=50%", &c));
    /* A less trusted class cannot get more than a more trusted one. */
    assert_non_null(parse("anon=90%", &c));
    assert_non_null(strstr(parse("public=80% anon=60%", &c),
                           "cannot get more"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_class_of),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_parse),
    };

    return cmocka_run_group_tests_name("shed", tests, NULL, NULL);
}
