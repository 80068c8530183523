/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_fallback.c: the actor quota's local record (aura_quota_share.c):
 * the budget arithmetic, counting on from Redis's last count in the
 * window Redis dies in, the claim and settlement of a hand-over, the
 * table's take-over rule, and exactness under threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "limit/aura_quota_share.h"

#define S APR_UINT64_C(1000000000)
#define W APR_UINT64_C(880000000)      /* some window number */

static void test_budget(void **state)
{
    static const struct {
        apr_int64_t limit, instances, seen, budget;
    } rows[] = {
        { 600, 2, 0, 300 },     /* nothing seen: the share */
        { 600, 2, 200, 200 },   /* (600 - 200) / 2 */
        { 600, 2, 201, 199 },   /* floored */
        { 600, 2, 599, 0 },     /* issue #16: not a full bucket on top */
        { 600, 2, 600, 0 },
        { 600, 2, 900, 0 },     /* a hand-over can overshoot: never < 0 */
        { 600, 1, 599, 1 },
        { 6, 2, 0, 3 },
        { 1, 2, 0, 1 },         /* the share is at least 1 */
        { 1, 2, 1, 0 },
        { 60, 0, 0, 60 },       /* instances < 1 reads as 1 */
        { 1000000000, 3, 0, 333333333 },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_int_equal(aura_fallback_budget(rows[i].limit,
                                              rows[i].instances,
                                              rows[i].seen),
                         rows[i].budget);
    }
}

static int admit_all(aura_fallback_slot_t *s, apr_int64_t limit,
                     apr_int64_t instances, apr_uint64_t window, int tries)
{
    aura_fallback_result_t res;
    int n = 0;

    while (tries-- > 0) {
        aura_fallback_take(s, limit, instances, window, &res);
        n += res.admitted;
    }
    return n;
}

/* Issue #16: two instances, 600 per window.  Redis had counted 598 in
 * the window when it died (the last answers each instance got: 590 and
 * 598); today's bucket admitted 300 more per instance.  Now each counts
 * on from its own last count, and the next window starts at the share. */
static void test_failure_window(void **state)
{
    aura_fallback_slot_t a, b;

    (void)state;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    aura_fallback_seen(&a, W, 590);
    aura_fallback_seen(&b, W, 598);
    assert_int_equal(admit_all(&a, 600, 2, W, 50), 5);
    assert_int_equal(admit_all(&b, 600, 2, W, 50), 1);
    /* 598 + 5 + 1: over by 4, the 8 requests instance a had not seen,
     * halved. */
    assert_int_equal(admit_all(&a, 600, 2, W + 1, 500), 300);
    assert_int_equal(admit_all(&b, 600, 2, W + 1, 500), 300);

    /* Mid-window: 200 counted, 400 left, 200 each. */
    memset(&a, 0, sizeof(a));
    aura_fallback_seen(&a, W, 200);
    assert_int_equal(admit_all(&a, 600, 2, W, 500), 200);
}

static void test_seen(void **state)
{
    aura_fallback_slot_t s;

    (void)state;
    memset(&s, 0, sizeof(s));
    assert_int_equal(aura_fallback_seen_count(&s, W), 0);
    aura_fallback_seen(&s, W, 10);
    aura_fallback_seen(&s, W, 7);           /* an older answer, late */
    assert_int_equal(aura_fallback_seen_count(&s, W), 10);
    aura_fallback_seen(&s, W - 1, 50);      /* of an older window */
    assert_int_equal(aura_fallback_seen_count(&s, W), 10);
    assert_int_equal(aura_fallback_seen_count(&s, W - 1), 0);
    aura_fallback_seen(&s, W + 1, 3);
    assert_int_equal(aura_fallback_seen_count(&s, W + 1), 3);
    assert_int_equal(aura_fallback_seen_count(&s, W), 0);
    /* Window numbers compare on 32 bits, across the wrap. */
    memset(&s, 0, sizeof(s));
    aura_fallback_seen(&s, APR_UINT64_C(0xffffffff), 4);
    aura_fallback_seen(&s, APR_UINT64_C(0x100000000), 2);
    assert_int_equal(aura_fallback_seen_count(&s, APR_UINT64_C(0x100000000)),
                     2);
    aura_fallback_seen(&s, APR_UINT64_C(0xffffffff), 9);    /* older */
    assert_int_equal(aura_fallback_seen_count(&s, APR_UINT64_C(0x100000000)),
                     2);
}

static void test_clock_back(void **state)
{
    aura_fallback_slot_t s;

    (void)state;
    memset(&s, 0, sizeof(s));
    assert_int_equal(admit_all(&s, 10, 1, W, 20), 10);
    /* The wall clock stepped back a window: counting goes on in the
     * record's window, never a fresh budget. */
    assert_int_equal(admit_all(&s, 10, 1, W - 1, 20), 0);
    assert_int_equal(admit_all(&s, 10, 1, W + 1, 20), 10);
}

static void test_claim_settle(void **state)
{
    aura_fallback_slot_t s;
    aura_fallback_result_t res;
    apr_uint64_t cw = 0;

    (void)state;
    memset(&s, 0, sizeof(s));
    assert_int_equal(aura_fallback_claim(&s, W, &cw), 0);   /* nothing */
    assert_int_equal(admit_all(&s, 600, 2, W, 7), 7);
    assert_int_equal(aura_fallback_claim(&s, W, &cw), 7);
    assert_true(cw == W);
    /* One claim at a time: another thread reports nothing. */
    assert_int_equal(aura_fallback_claim(&s, W, &cw), 0);
    /* Decisions during the call still count (7 + 1 of 300). */
    aura_fallback_take(&s, 600, 2, W, &res);
    assert_true(res.admitted && res.used == 8);
    /* The call failed: all 8 stay unreported, and can be claimed. */
    aura_fallback_settle(&s, W, 7, 0);
    assert_int_equal(aura_fallback_claim(&s, W, &cw), 8);
    /* Redis counted them: none left; Redis's count takes over. */
    aura_fallback_settle(&s, W, 8, 1);
    aura_fallback_seen(&s, W, 250);
    assert_int_equal(aura_fallback_claim(&s, W, &cw), 0);
    aura_fallback_take(&s, 600, 2, W, &res);
    assert_true(res.admitted && res.used == 1 && res.budget == 175);

    /* Redis's answer for a window two after the local admissions: they
     * can no longer be handed over, and are dropped; those of the
     * previous window are kept. */
    memset(&s, 0, sizeof(s));
    assert_int_equal(admit_all(&s, 600, 2, W, 3), 3);
    aura_fallback_seen(&s, W + 1, 10);
    assert_int_equal(aura_fallback_claim(&s, W + 1, &cw), 3);
    aura_fallback_settle(&s, W, 3, 0);
    aura_fallback_seen(&s, W + 2, 10);
    assert_int_equal(aura_fallback_claim(&s, W + 1, &cw), 0);
    assert_true(s.local == 0);

    /* The previous window's unreported requests are claimed as such. */
    memset(&s, 0, sizeof(s));
    assert_int_equal(admit_all(&s, 600, 2, W, 3), 3);
    assert_int_equal(aura_fallback_claim(&s, W + 1, &cw), 3);
    assert_true(cw == W);
    aura_fallback_settle(&s, W, 3, 1);
    /* Older than that: neither of Redis's two windows, dropped. */
    assert_int_equal(admit_all(&s, 600, 2, W, 3), 3);
    assert_int_equal(aura_fallback_claim(&s, W + 2, &cw), 0);

    /* A new window during the call: the settlement leaves it alone. */
    memset(&s, 0, sizeof(s));
    assert_int_equal(admit_all(&s, 600, 2, W, 4), 4);
    assert_int_equal(aura_fallback_claim(&s, W, &cw), 4);
    assert_int_equal(admit_all(&s, 600, 2, W + 1, 2), 2);
    aura_fallback_settle(&s, W, 4, 1);
    assert_int_equal(aura_fallback_claim(&s, W + 1, &cw), 2);
    assert_true(cw == W + 1);
}

static void test_table(void **state)
{
    aura_fallback_slot_t slots[2 * AURA_LIMITER_WAYS], *a, *s;
    aura_fallback_result_t res;
    aura_limiter_census_t c;
    apr_uint64_t k;

    (void)state;
    memset(slots, 0, sizeof(slots));
    /* Keys 2, 4, ... all pick set 0 of 2; each admits one locally. */
    a = aura_fallback_slot(slots, 2, 2, 10 * S, 4 * S);
    assert_non_null(a);
    aura_fallback_seen(a, W, 5);
    aura_fallback_take(a, 600, 2, W, &res);
    assert_true(aura_fallback_slot(slots, 2, 2, 11 * S, 4 * S) == a);
    for (k = 4; k < 2 + 2 * AURA_LIMITER_WAYS; k += 2) {
        s = aura_fallback_slot(slots, 2, k, 11 * S, 4 * S);
        assert_non_null(s);
        aura_fallback_take(s, 600, 2, W, &res);
    }
    /* The set is full of local admissions still live: no record for a
     * newcomer, and none of them lost. */
    assert_null(aura_fallback_slot(slots, 2, 100, 12 * S, 4 * S));
    assert_true(aura_fallback_slot(slots, 2, 2, 12 * S, 4 * S) == a);
    assert_int_equal(aura_fallback_seen_count(a, W), 5);

    /* Key 6 handed its admissions over: only Redis's count is left, a
     * hint, and the newcomer may take its record before any lapses. */
    s = aura_fallback_slot(slots, 2, 6, 12 * S, 4 * S);
    assert_int_equal(aura_fallback_claim(s, W, &k), 1);
    aura_fallback_settle(s, W, 1, 1);
    aura_fallback_seen(s, W, 9);
    assert_true(aura_fallback_slot(slots, 2, 100, 13 * S, 4 * S) == s);
    assert_int_equal(aura_fallback_seen_count(s, W), 0);
    /* Key 6 again: the only weak record is the newcomer's (hints
     * displace hints; local admissions stay). */
    assert_true(aura_fallback_slot(slots, 2, 6, 13 * S, 4 * S) == s);
    assert_true(aura_fallback_slot(slots, 2, 2, 13 * S, 4 * S) == a);

    /* Every record kept until 16 or 17 s: at 18 s any may go, and the
     * newcomer starts with none of its state. */
    s = aura_fallback_slot(slots, 2, 102, 18 * S, 4 * S);
    assert_non_null(s);
    assert_int_equal(aura_fallback_seen_count(s, W), 0);
    assert_int_equal(aura_fallback_validate(slots, 2, 18 * S, &c),
                     APR_SUCCESS);
    assert_int_equal(c.used, AURA_LIMITER_WAYS);
    assert_int_equal(c.limited, 1);
    assert_int_equal(c.misplaced, 0);
    /* A key in the wrong set is found. */
    slots[AURA_LIMITER_WAYS].key = 6;
    assert_int_equal(aura_fallback_validate(slots, 2, 18 * S, &c),
                     APR_EGENERAL);
    assert_int_equal(aura_fallback_validate(slots, 3, 0, &c), APR_EINVAL);
}

typedef struct {
    aura_fallback_slot_t *s;
    int admitted;
} racer_t;

static void *racer(void *arg)
{
    racer_t *rc = arg;
    aura_fallback_result_t res;
    int i;

    for (i = 0; i < 5000; i++) {
        aura_fallback_take(rc->s, 4000, 2, W, &res);
        rc->admitted += res.admitted;
    }
    return NULL;
}

static void test_threads(void **state)
{
    aura_fallback_slot_t s;
    racer_t rc[4];
    pthread_t th[4];
    int i, total = 0;

    (void)state;
    memset(&s, 0, sizeof(s));
    aura_fallback_seen(&s, W, 2000);        /* budget (4000 - 2000) / 2 */
    memset(rc, 0, sizeof(rc));
    for (i = 0; i < 4; i++) {
        rc[i].s = &s;
        assert_int_equal(pthread_create(&th[i], NULL, racer, &rc[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += rc[i].admitted;
    }
    assert_int_equal(total, 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_failure_window),
        cmocka_unit_test(test_seen),
        cmocka_unit_test(test_clock_back),
        cmocka_unit_test(test_claim_settle),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_threads),
    };

    return cmocka_run_group_tests_name("fallback", tests, NULL, NULL);
}
