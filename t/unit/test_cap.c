/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_cap.c: the arithmetic of the in-flight caps (aura_cap.c):
 * parsing AuraServiceMaxInFlight / AuraPlaneMaxInFlight, what "auto"
 * and a percentage mean for a number of workers, taking below the cap
 * and giving back without wrapping below zero (issue #16, point 1: a
 * give after the parent reclaimed a dead child's slots must not turn
 * the counter into 2^64 - 1, which would refuse the service for ever).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "apr_atomic.h"
#include "resilience/aura_cap.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_parse(void **state)
{
    static const struct {
        const char *arg;
        int ok;
        int enc;
    } rows[] = {
        { "off", 1, AURA_CAP_OFF },
        { "OFF", 1, AURA_CAP_OFF },
        { "auto", 1, AURA_CAP_AUTO },
        { "1", 1, 1 },
        { "24", 1, 24 },
        { "1000000", 1, 1000000 },
        { "50%", 1, AURA_CAP_PCT(50) },
        { "1%", 1, AURA_CAP_PCT(1) },
        { "100%", 1, AURA_CAP_PCT(100) },
        { "0", 0, 0 },
        { "-3", 0, 0 },
        { "1000001", 0, 0 },
        { "0%", 0, 0 },
        { "101%", 0, 0 },
        { "10%%", 0, 0 },
        { "12x", 0, 0 },
        { "", 0, 0 },
        { "99999999999999999999", 0, 0 },
    };
    apr_size_t i;

    (void)state;
    for (i = 0; i < N(rows); i++) {
        int enc = 12345;
        const char *why = aura_cap_parse(rows[i].arg, &enc);

        if (rows[i].ok) {
            assert_null(why);
            assert_int_equal(enc, rows[i].enc);
        }
        else {
            assert_non_null(why);
        }
    }
}

static void test_resolve(void **state)
{
    (void)state;
    /* The instance: 20 workers. */
    assert_int_equal(aura_cap_resolve(AURA_CAP_AUTO, 20, 50), 10);
    assert_int_equal(aura_cap_resolve(-1 /* unset */, 20, 70), 14);
    assert_int_equal(aura_cap_resolve(AURA_CAP_AUTO, 20, 20), 4);
    assert_int_equal(aura_cap_resolve(AURA_CAP_PCT(25), 20, 50), 5);
    assert_int_equal(aura_cap_resolve(AURA_CAP_PCT(100), 20, 50), 20);
    /* Never 0 (that would refuse everything): at least 1. */
    assert_int_equal(aura_cap_resolve(AURA_CAP_PCT(1), 20, 50), 1);
    assert_int_equal(aura_cap_resolve(AURA_CAP_AUTO, 1, 20), 1);
    /* Numbers are numbers, whatever the workers. */
    assert_int_equal(aura_cap_resolve(3, 20, 50), 3);
    assert_int_equal(aura_cap_resolve(3, 0, 50), 3);
    /* off, and percentages of an unknown count: no cap. */
    assert_int_equal(aura_cap_resolve(AURA_CAP_OFF, 20, 50), 0);
    assert_int_equal(aura_cap_resolve(AURA_CAP_AUTO, 0, 50), 0);
    assert_int_equal(aura_cap_resolve(AURA_CAP_PCT(30), 0, 50), 0);
}

static void test_take_give(void **state)
{
    volatile apr_uint64_t c = 0;
    int i;

    (void)state;
    for (i = 0; i < 3; i++) {
        assert_true(aura_cap_take(&c, 3));
    }
    assert_false(aura_cap_take(&c, 3));
    assert_int_equal(c, 3);
    assert_int_equal(aura_cap_give(&c, 1), 1);
    assert_true(aura_cap_take(&c, 3));
    /* No cap: always taken. */
    assert_true(aura_cap_take(&c, 0));
    assert_int_equal(c, 4);
    /* A reclaim gave more back than is there: never below zero. */
    assert_int_equal(aura_cap_give(&c, 10), 4);
    assert_int_equal(c, 0);
    assert_int_equal(aura_cap_give(&c, 1), 0);
    assert_int_equal(c, 0);
}

/* A child's holding after the parent emptied it: the late drop says so
 * (0), and the holding stays at zero. */
static void test_drop(void **state)
{
    volatile apr_uint64_t h = 2;

    (void)state;
    assert_true(aura_cap_drop(&h));
    assert_true(aura_cap_drop(&h));
    assert_false(aura_cap_drop(&h));
    assert_int_equal(h, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_take_give),
        cmocka_unit_test(test_drop),
    };

    return cmocka_run_group_tests_name("cap", tests, NULL, NULL);
}
