/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_status_text.c: the words of server-status's ?auto lines
 * (aura_status_text.c): a name from the configuration can never add a
 * line or a colon to a key, a value never a line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "apr_general.h"

#include "http/aura_status_text.h"
#include "aura_unit.h"

static void test_key(void **state)
{
    apr_pool_t *p = *state;
    static const char *const fit = "zone-1.a_B";

    assert_ptr_equal(aura_status_key(p, fit), fit);
    assert_string_equal(aura_status_key(p, "a b:c\nd"), "a_b_c_d");
    assert_string_equal(aura_status_key(p, "db.example:5432"),
                        "db.example_5432");
    assert_string_equal(aura_status_key(p, "\xc3\xa9"), "__");
    assert_string_equal(aura_status_key(p, ""), "_");
    assert_string_equal(aura_status_key(p, NULL), "_");
}

static void test_value(void **state)
{
    apr_pool_t *p = *state;
    static const char *const fit = "nats://127.0.0.1:4222 NABC";

    assert_ptr_equal(aura_status_value(p, fit), fit);
    assert_string_equal(aura_status_value(p, "a\r\nAuraX: 1"),
                        "a  AuraX: 1");
    assert_string_equal(aura_status_value(p, "t\tx\x7f"), "t x ");
    assert_string_equal(aura_status_value(p, NULL), "-");
}

static void test_fill(void **state)
{
    apr_pool_t *p = *state;

    assert_string_equal(aura_status_fill(p, 3, 10), "3/10");
    assert_string_equal(aura_status_fill(p, 0, AURA_STATUS_CAP_OFF),
                        "0/off");
    assert_string_equal(aura_status_fill(p, 2, AURA_STATUS_CAP_NONE),
                        "2/-");
    assert_string_equal(aura_status_fill(p, 0, 0), "0/-");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_key, pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_value, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_fill, pool_setup,
                                        pool_teardown),
    };

    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests_name("status_text", tests, NULL, NULL);
    apr_terminate();
    return rc;
}
