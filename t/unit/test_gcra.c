/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_gcra.c: GCRA arithmetic (aura_gcra.c): init bounds, the burst from
 * an idle key, the steady rate, retry-after and remaining, and the clock
 * edge cases (a key never seen, time standing still, the clock stepping
 * backwards).  `now` is an argument: no test waits.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "limit/aura_gcra.h"

#define S  APR_UINT64_C(1000000000)
#define MS APR_UINT64_C(1000000)

static void test_init(void **state)
{
    static const struct {
        apr_uint64_t rate, period, burst;
        apr_status_t rv;
        apr_uint64_t interval, tolerance;
    } rows[] = {
        { 100, 1, 1000, APR_SUCCESS, 10 * MS, 10 * S },   /* the defaults */
        { 1, 1, 1, APR_SUCCESS, S, S },
        { 3, 1, 1, APR_SUCCESS, 333333333, 333333333 },  /* rounds down */
        { 60, 60, 10, APR_SUCCESS, S, 10 * S },          /* per minute */
        { 1000000000, 1, 1, APR_SUCCESS, 1, 1 },
        { 2000000000, 1, 1, APR_EINVAL, 0, 0 },          /* T rounds to 0 */
        { 0, 1, 1, APR_EINVAL, 0, 0 },
        { 1, 0, 1, APR_EINVAL, 0, 0 },
        { 1, 1, 0, APR_EINVAL, 0, 0 },
        { 1, 86401, 1, APR_EINVAL, 0, 0 },                /* period > 1 day */
        { 1, 1, 86401, APR_EINVAL, 0, 0 },                /* tau > 1 day */
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        aura_gcra_t g = { 0, 0, 0 };

        assert_int_equal(aura_gcra_init(&g, rows[i].rate, rows[i].period,
                                        rows[i].burst), rows[i].rv);
        if (rows[i].rv == APR_SUCCESS) {
            assert_true(g.interval == rows[i].interval);
            assert_true(g.tolerance == rows[i].tolerance);
        }
    }
}

/* From an idle key, exactly `burst` requests at one instant, then the
 * next is refused with retry-after one interval. */
static void test_burst(void **state)
{
    aura_gcra_t g;
    aura_gcra_result_t r;
    apr_uint64_t now = 1700000000 * S, tat = 0, i;

    (void)state;
    assert_int_equal(aura_gcra_init(&g, 10, 1, 5), APR_SUCCESS);
    for (i = 0; i < 5; i++) {
        aura_gcra_decide(&g, now, tat, &r);
        assert_true(r.admitted);
        assert_true(r.remaining == 4 - i);
        tat = r.tat;
    }
    aura_gcra_decide(&g, now, tat, &r);
    assert_false(r.admitted);
    assert_true(r.tat == tat);              /* a refusal changes nothing */
    assert_true(r.retry_after == 100 * MS);
    assert_true(r.remaining == 0);
    assert_true(r.reset == 500 * MS);
    /* One interval later, exactly one more. */
    aura_gcra_decide(&g, now + 100 * MS, tat, &r);
    assert_true(r.admitted);
    aura_gcra_decide(&g, now + 100 * MS, r.tat, &r);
    assert_false(r.admitted);
    /* Just short of the interval: still refused, by 1 ns. */
    aura_gcra_decide(&g, now + 100 * MS - 1, tat, &r);
    assert_false(r.admitted);
    assert_true(r.retry_after == 1);
}

/* Offered twice the rate for ten seconds after the burst: admitted is
 * burst + rate * seconds, exactly. */
static void test_steady(void **state)
{
    aura_gcra_t g;
    aura_gcra_result_t r;
    apr_uint64_t start = 5 * S, t, tat = 0, admitted = 0;

    (void)state;
    assert_int_equal(aura_gcra_init(&g, 100, 1, 20), APR_SUCCESS);
    for (t = start; t <= start + 10 * S; t += 5 * MS) {
        aura_gcra_decide(&g, t, tat, &r);
        if (r.admitted) {
            admitted++;
            tat = r.tat;
        }
    }
    assert_true(admitted == 20 + 100 * 10);
}

/* An idle key refills fully, never beyond the burst. */
static void test_idle(void **state)
{
    aura_gcra_t g;
    aura_gcra_result_t r;
    apr_uint64_t now = 10 * S;

    (void)state;
    assert_int_equal(aura_gcra_init(&g, 1, 1, 3), APR_SUCCESS);
    aura_gcra_decide(&g, now, now + 2 * S, &r);      /* 1 left */
    assert_true(r.admitted && r.remaining == 0);
    aura_gcra_decide(&g, now + 3600 * S, r.tat, &r); /* an hour later */
    assert_true(r.admitted && r.remaining == 2);
}

/* Clock edge cases. */
static void test_clock(void **state)
{
    aura_gcra_t g;
    aura_gcra_result_t r;

    (void)state;
    assert_int_equal(aura_gcra_init(&g, 10, 1, 2), APR_SUCCESS);
    /* now = 0 and a key never seen. */
    aura_gcra_decide(&g, 0, 0, &r);
    assert_true(r.admitted && r.tat == 100 * MS);
    /* The clock stepped back an hour: the TAT is clamped to now + tau,
     * so the key is refused for one interval, not for an hour... */
    aura_gcra_decide(&g, 100 * S, 3700 * S, &r);
    assert_false(r.admitted);
    assert_true(r.retry_after == 100 * MS);
    assert_true(r.tat == 100 * S + 200 * MS);
    /* ...and admitted again one interval later. */
    aura_gcra_decide(&g, 100 * S + 100 * MS, r.tat, &r);
    assert_true(r.admitted);
    /* A corrupt, huge TAT behaves the same. */
    aura_gcra_decide(&g, 100 * S, APR_UINT64_C(0xffffffffffffffff), &r);
    assert_false(r.admitted);
    assert_true(r.retry_after == 100 * MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_burst),
        cmocka_unit_test(test_steady),
        cmocka_unit_test(test_idle),
        cmocka_unit_test(test_clock),
    };

    return cmocka_run_group_tests_name("gcra", tests, NULL, NULL);
}
