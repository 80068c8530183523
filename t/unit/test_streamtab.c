/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_streamtab.c: the records of the open streams (aura_streamtab.c),
 * the accounting behind AuraStreamMaxPerAddress and AuraStreamMaxPerActor
 * (issue #28, point 2: streams do not take what other requests need):
 * caps per address and per actor, records given back, the records of a
 * dead child freed by pid, a full table refusing, and threads racing for
 * the last place never exceeding a cap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "apr_atomic.h"
#include "resilience/aura_streamtab.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* A sequence of claims and releases on a table of 8 records; each row
 * names the caller, its address and actor, and what must happen.
 * Regression rows of issue #28 (point 2): one visitor with the anon key
 * from several addresses gets its address's share from each, and no
 * more than its actor's share in all. */
static void test_caps(void **state)
{
    static const struct {
        const char *what;
        int release;            /* 0 claim; else release row release-1 */
        apr_uint64_t owner, addr, actor, addr_cap, actor_cap;
        aura_stream_e want;
        apr_uint64_t count;
    } rows[] = {
        { "a1 anon 1", 0, 100, 1, 7, 2, 3, AURA_STREAM_ADMITTED, 1 },
        { "a1 anon 2", 0, 100, 1, 7, 2, 3, AURA_STREAM_ADMITTED, 2 },
        { "#28: a1 anon 3, the address's cap", 0, 101, 1, 7, 2, 3,
          AURA_STREAM_OVER_ADDRESS, 3 },
        { "a2 anon 1", 0, 101, 2, 7, 2, 3, AURA_STREAM_ADMITTED, 1 },
        { "#28: a3 anon, the actor's cap", 0, 101, 3, 7, 2, 3,
          AURA_STREAM_OVER_ACTOR, 4 },
        { "a3 another actor", 0, 101, 3, 8, 2, 3, AURA_STREAM_ADMITTED, 1 },
        { "a3 no actor (public)", 0, 101, 3, 0, 2, 3,
          AURA_STREAM_ADMITTED, 2 },
        { "a1 uncapped", 0, 100, 1, 9, 0, 0, AURA_STREAM_ADMITTED, 3 },
        /* One of a1's anon streams ends: a3 anon now fits the actor
         * cap, not its address's. */
        { "release a1 anon 1", 1, 100, 0, 0, 0, 0, 0, 0 },
        { "a3 anon: address cap", 0, 101, 3, 7, 2, 3,
          AURA_STREAM_OVER_ADDRESS, 3 },
        { "a4 anon after the release", 0, 101, 4, 7, 2, 3,
          AURA_STREAM_ADMITTED, 1 },
    };
    aura_stream_rec_t recs[8];
    apr_uint64_t idx[N(rows)];
    apr_size_t i;

    (void)state;
    memset(recs, 0, sizeof(recs));
    for (i = 0; i < N(rows); i++) {
        apr_uint64_t count = 99;
        aura_stream_e e;

        if (rows[i].release) {
            assert_true(aura_stream_release(recs, idx[rows[i].release - 1],
                                            rows[i].owner));
            continue;
        }
        e = aura_stream_claim(recs, N(recs), rows[i].owner, rows[i].addr,
                              rows[i].actor, 0, "127.0.0.1/32",
                              rows[i].addr_cap, rows[i].actor_cap, &idx[i],
                              &count);
        if (e != rows[i].want || count != rows[i].count) {
            fail_msg("%s: %d (count %d), expected %d (count %d)",
                     rows[i].what, (int)e, (int)count, (int)rows[i].want,
                     (int)rows[i].count);
        }
    }
    assert_int_equal(aura_stream_count(recs, N(recs), 0, 7), 3);
    assert_int_equal(aura_stream_count(recs, N(recs), 1, 0), 2);
}

/* A refused claim leaves nothing behind; a full table refuses; a dead
 * owner's records (published or half-written) are freed by pid, and its
 * late release after that does nothing. */
static void test_full_and_reclaim(void **state)
{
    aura_stream_rec_t recs[4];
    apr_uint64_t idx, count, i;

    (void)state;
    memset(recs, 0, sizeof(recs));
    for (i = 0; i < 3; i++) {
        assert_int_equal(aura_stream_claim(recs, 4, 200, 5, 0, 0, "p", 0, 0,
                                           &idx, &count),
                         AURA_STREAM_ADMITTED);
    }
    assert_int_equal(aura_stream_claim(recs, 4, 300, 5, 0, 0, "p", 3, 0,
                                       &idx, &count),
                     AURA_STREAM_OVER_ADDRESS);
    assert_int_equal(aura_stream_count(recs, 4, 5, 0), 3);
    assert_int_equal(aura_stream_claim(recs, 4, 300, 6, 0, 0, "p", 0, 0,
                                       &idx, &count),
                     AURA_STREAM_ADMITTED);
    assert_int_equal(aura_stream_claim(recs, 4, 300, 6, 0, 0, "p", 0, 0,
                                       &idx, &count),
                     AURA_STREAM_TABLE_FULL);
    /* Child 200 dies; one of its records was still being written. */
    recs[0].owner = 200 | AURA_STREAM_CLAIMING;
    assert_int_equal(aura_stream_reclaim(recs, 4, 200), 3);
    assert_int_equal(aura_stream_count(recs, 4, 5, 0), 0);
    assert_false(aura_stream_release(recs, 1, 200));
    assert_int_equal(aura_stream_reclaim(recs, 4, 200), 0);
    /* The other child's record is untouched. */
    assert_int_equal(aura_stream_count(recs, 4, 6, 0), 1);
    assert_true(aura_stream_release(recs, 3, 300));
}

/* A long prefix is cut to fit, terminated. */
static void test_prefix(void **state)
{
    aura_stream_rec_t recs[1];
    apr_uint64_t idx, count;
    char longp[100];

    (void)state;
    memset(recs, 0, sizeof(recs));
    memset(longp, 'x', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    assert_int_equal(aura_stream_claim(recs, 1, 1, 1, 0, 0, longp, 0, 0,
                                       &idx, &count),
                     AURA_STREAM_ADMITTED);
    assert_int_equal(strlen(recs[0].prefix), AURA_STREAM_PREFIX_LEN - 1);
}

/* Threads racing for the same address and actor: at no moment more
 * than the cap are admitted (a refused claim's record may be seen for
 * a moment before it is taken back; it was never admitted). */
#define RACERS 8
#define ROUNDS 20000
#define RACE_CAP 3
static aura_stream_rec_t race[64];
static volatile apr_uint64_t over, admitted;

static void *racer(void *arg)
{
    apr_uint64_t me = (apr_uint64_t)(size_t)arg, idx, count;
    int i;

    for (i = 0; i < ROUNDS; i++) {
        if (aura_stream_claim(race, N(race), me, 42, 9, 0, "p", RACE_CAP,
                              RACE_CAP, &idx, &count)
            != AURA_STREAM_ADMITTED) {
            continue;
        }
        if (apr_atomic_inc64(&admitted) + 1 > RACE_CAP) {
            apr_atomic_inc64(&over);
        }
        apr_atomic_dec64(&admitted);
        aura_stream_release(race, idx, me);
    }
    return NULL;
}

static void test_race(void **state)
{
    pthread_t t[RACERS];
    int i;

    (void)state;
    for (i = 0; i < RACERS; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, racer,
                                        (void *)(size_t)(1000 + i)), 0);
    }
    for (i = 0; i < RACERS; i++) {
        pthread_join(t[i], NULL);
    }
    assert_int_equal(over, 0);
    assert_int_equal(admitted, 0);
    assert_int_equal(aura_stream_count(race, N(race), 42, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_full_and_reclaim),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_race),
    };

    return cmocka_run_group_tests_name("streamtab", tests, NULL, NULL);
}
