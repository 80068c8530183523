/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_limiter.c: the shared GCRA table (aura_gcra_table.c) and the keyed
 * hash that indexes it (aura_siphash.c): reference vectors, exact
 * admission, take-over only of slots at full credit, fail-open when a
 * set is full, and exactness under threads racing on one key; the
 * once-per-interval gate of the rate-limited log lines (aura_clock.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "limit/aura_gcra_table.h"
#include "core/aura_clock.h"
#include "core/aura_siphash.h"

#include "apr_time.h"

#define S  APR_UINT64_C(1000000000)
#define MS APR_UINT64_C(1000000)

/* The reference implementation's vectors: key 00..0f, message 00..len-1. */
static void test_siphash_vectors(void **state)
{
    static const struct {
        apr_size_t len;
        apr_uint64_t tag;
    } rows[] = {
        { 0, APR_UINT64_C(0x726fdb47dd0e0e31) },
        { 1, APR_UINT64_C(0x74f839c593dc67fd) },
        { 8, APR_UINT64_C(0x93f5f5799a932462) },
        { 15, APR_UINT64_C(0xa129ca6149be45e5) },  /* the paper's example */
    };
    unsigned char key[16], msg[64];
    size_t i;

    (void)state;
    for (i = 0; i < 16; i++) {
        key[i] = (unsigned char)i;
    }
    for (i = 0; i < sizeof(msg); i++) {
        msg[i] = (unsigned char)i;
    }
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_true(aura_siphash24(key, msg, rows[i].len) == rows[i].tag);
    }
    /* Another key, another tag. */
    key[0] ^= 1;
    assert_true(aura_siphash24(key, msg, 15)
                != APR_UINT64_C(0xa129ca6149be45e5));
}

static void test_sets(void **state)
{
    (void)state;
    assert_true(aura_limiter_sets(0) == 1);
    assert_true(aura_limiter_sets(8) == 1);
    assert_true(aura_limiter_sets(9) == 2);
    assert_true(aura_limiter_sets(65536) == 8192);
    assert_true(aura_limiter_sets(65537) == 16384);
}

/* Exactly the burst at one instant, then the steady rate. */
static void test_exact(void **state)
{
    aura_limiter_slot_t slots[4 * AURA_LIMITER_WAYS];
    aura_gcra_t g;
    aura_gcra_result_t r;
    apr_uint64_t now = 1000 * S;
    int i, admitted = 0;

    (void)state;
    memset(slots, 0, sizeof(slots));
    assert_int_equal(aura_gcra_init(&g, 10, 1, 5), APR_SUCCESS);
    for (i = 0; i < 20; i++) {
        if (aura_limiter_take(slots, 4, 42, &g, now, &r)
            == AURA_LIMIT_ADMITTED) {
            admitted++;
        }
    }
    assert_int_equal(admitted, 5);
    assert_int_equal(aura_limiter_take(slots, 4, 42, &g, now, &r),
                     AURA_LIMIT_REFUSED);
    assert_true(r.retry_after == 100 * MS);
    /* Another key has its own bucket. */
    assert_int_equal(aura_limiter_take(slots, 4, 43, &g, now, &r),
                     AURA_LIMIT_ADMITTED);
    assert_true(r.remaining == 4);
    /* One interval later, one more. */
    now += 100 * MS;
    assert_int_equal(aura_limiter_take(slots, 4, 42, &g, now, &r),
                     AURA_LIMIT_ADMITTED);
    assert_int_equal(aura_limiter_take(slots, 4, 42, &g, now, &r),
                     AURA_LIMIT_REFUSED);
    /* Key 0 is remapped, never confused with a free slot. */
    assert_int_equal(aura_limiter_take(slots, 4, 0, &g, now, &r),
                     AURA_LIMIT_ADMITTED);
}

/* One set: keys 8 apart land in set 0 of a one-set table. */
static void test_full_and_takeover(void **state)
{
    aura_limiter_slot_t slots[AURA_LIMITER_WAYS];
    aura_gcra_t g;
    aura_gcra_result_t r;
    apr_uint64_t now = 1000 * S, k;

    (void)state;
    memset(slots, 0, sizeof(slots));
    assert_int_equal(aura_gcra_init(&g, 10, 1, 2), APR_SUCCESS);
    /* Fill the set; key 1 is limited (its TAT runs 200 ms ahead). */
    for (k = 1; k <= AURA_LIMITER_WAYS; k++) {
        assert_int_equal(aura_limiter_take(slots, 1, k, &g, now, &r),
                         AURA_LIMIT_ADMITTED);
    }
    assert_int_equal(aura_limiter_take(slots, 1, 1, &g, now, &r),
                     AURA_LIMIT_ADMITTED);
    assert_int_equal(aura_limiter_take(slots, 1, 1, &g, now, &r),
                     AURA_LIMIT_REFUSED);
    /* Every slot holds state: a ninth key is admitted without any. */
    assert_int_equal(aura_limiter_take(slots, 1, 100, &g, now, &r),
                     AURA_LIMIT_FULL);
    assert_true(r.admitted);
    /* 150 ms on, keys 2..8 are at full credit again, key 1 is not: new
     * keys take the idle slots, never key 1's. */
    now += 150 * MS;
    for (k = 100; k < 100 + AURA_LIMITER_WAYS - 1; k++) {
        assert_int_equal(aura_limiter_take(slots, 1, k, &g, now, &r),
                         AURA_LIMIT_ADMITTED);
    }
    assert_int_equal(aura_limiter_take(slots, 1, 200, &g, now, &r),
                     AURA_LIMIT_FULL);
    /* Key 1 kept its state: one credit back after 150 ms, not two. */
    assert_int_equal(aura_limiter_take(slots, 1, 1, &g, now, &r),
                     AURA_LIMIT_ADMITTED);
    assert_int_equal(aura_limiter_take(slots, 1, 1, &g, now, &r),
                     AURA_LIMIT_REFUSED);
    /* A taken-over slot gives the new key a full bucket. */
    now += 1 * S;
    assert_int_equal(aura_limiter_take(slots, 1, 300, &g, now, &r),
                     AURA_LIMIT_ADMITTED);
    assert_true(r.remaining == 1);
}

/* The validator: a census of what take() left, and a key planted in a
 * set its hash does not pick is corruption (issue #15, point 8: each
 * zone's table is walked by it). */
static void test_validate(void **state)
{
    aura_limiter_slot_t slots[4 * AURA_LIMITER_WAYS];
    aura_limiter_census_t c;
    aura_gcra_t g;
    aura_gcra_result_t r;
    apr_uint64_t now = 1000 * S, k;

    (void)state;
    memset(slots, 0, sizeof(slots));
    assert_int_equal(aura_gcra_init(&g, 1, 60, 5), APR_SUCCESS);
    assert_int_equal(aura_limiter_validate(slots, 4, now, &c), APR_SUCCESS);
    assert_true(c.used == 0 && c.limited == 0);
    /* Fill the table: 32 keys, 8 per set, each limited for a minute. */
    for (k = 1; k <= 64 && c.used < 4 * AURA_LIMITER_WAYS; k++) {
        aura_limiter_take(slots, 4, k, &g, now, &r);
        assert_int_equal(aura_limiter_validate(slots, 4, now, &c),
                         APR_SUCCESS);
    }
    assert_true(c.used == 4 * AURA_LIMITER_WAYS);
    assert_true(c.limited == 4 * AURA_LIMITER_WAYS);
    assert_true(c.misplaced == 0 && c.duplicates == 0);
    assert_int_equal(aura_limiter_take(slots, 4, 1000, &g, now, &r),
                     AURA_LIMIT_FULL);
    /* A minute on, nobody is limited any more; all still held. */
    assert_int_equal(aura_limiter_validate(slots, 4, now + 61 * S, &c),
                     APR_SUCCESS);
    assert_true(c.used == 4 * AURA_LIMITER_WAYS && c.limited == 0);
    /* Duplicates are counted, not an error (a benign race of take()). */
    slots[1].key = slots[0].key;
    assert_int_equal(aura_limiter_validate(slots, 4, now, &c), APR_SUCCESS);
    assert_true(c.duplicates == 1);
    /* Key 6 belongs to set 2: found in set 0, the table is corrupt. */
    slots[2].key = 6;
    assert_int_equal(aura_limiter_validate(slots, 4, now, &c), APR_EGENERAL);
    assert_true(c.misplaced == 1);
    /* Sets must be a power of two. */
    assert_int_equal(aura_limiter_validate(slots, 3, now, &c), APR_EINVAL);
    assert_int_equal(aura_limiter_validate(slots, 0, now, &c), APR_EINVAL);
}

typedef struct {
    aura_limiter_slot_t *slots;
    const aura_gcra_t *g;
    apr_uint64_t now;
    int admitted;
} race_t;

static void *racer(void *arg)
{
    race_t *r = arg;
    aura_gcra_result_t res;
    int i;

    for (i = 0; i < 20000; i++) {
        if (aura_limiter_take(r->slots, 2, 7, r->g, r->now, &res)
            == AURA_LIMIT_ADMITTED) {
            r->admitted++;
        }
    }
    return NULL;
}

/* Four threads on one key at one instant: exactly the burst in total,
 * whoever wins each race. */
static void test_threads(void **state)
{
    aura_limiter_slot_t slots[2 * AURA_LIMITER_WAYS];
    aura_gcra_t g;
    pthread_t th[4];
    race_t rc[4];
    int i, total = 0;

    (void)state;
    memset(slots, 0, sizeof(slots));
    assert_int_equal(aura_gcra_init(&g, 100, 1, 1000), APR_SUCCESS);
    for (i = 0; i < 4; i++) {
        rc[i].slots = slots;
        rc[i].g = &g;
        rc[i].now = 5000 * S;
        rc[i].admitted = 0;
        assert_int_equal(pthread_create(&th[i], NULL, racer, &rc[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += rc[i].admitted;
    }
    assert_int_equal(total, 1000);
    /* The race left the table consistent: key 7 in its set (1 of 2). */
    {
        aura_limiter_census_t c;

        assert_int_equal(aura_limiter_validate(slots, 2, 5000 * S, &c),
                         APR_SUCCESS);
        assert_true(c.used >= 1 && c.misplaced == 0);
    }
}

/* The rate-limited log lines: the first caller logs, the next one
 * within the interval does not, one after it does again. */
static void test_log_due(void **state)
{
    volatile apr_uint64_t last = 0;
    apr_uint64_t now = (apr_uint64_t)apr_time_sec(apr_time_now());

    (void)state;
    assert_true(aura_log_due(&last, 60));
    assert_true(last >= now);
    assert_false(aura_log_due(&last, 60));
    /* Half an interval ago: not yet; more than one ago: again. */
    last = (apr_uint64_t)apr_time_sec(apr_time_now()) - 30;
    assert_false(aura_log_due(&last, 60));
    last = (apr_uint64_t)apr_time_sec(apr_time_now()) - 61;
    assert_true(aura_log_due(&last, 60));
    assert_false(aura_log_due(&last, 60));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siphash_vectors),
        cmocka_unit_test(test_sets),
        cmocka_unit_test(test_exact),
        cmocka_unit_test(test_full_and_takeover),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_log_due),
    };

    return cmocka_run_group_tests_name("limiter", tests, NULL, NULL);
}
