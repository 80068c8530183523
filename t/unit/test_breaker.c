/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_breaker.c: the circuit-breaker state machine (aura_breaker_fsm.c):
 * conf bounds, the zero word, opening at the threshold, refusals while
 * open, the probe handout in half-open, probe verdicts, released probes,
 * late verdicts, the 32-bit clock wrapping, saturation, and threads
 * racing on one word (each transition reported exactly once, never more
 * probes than allowed).  Issue #16: the period-aware tickets (verdicts of
 * an older period dropped) and the probe holder records (a probe lost
 * with its process taken over, once).  `now` is an argument and
 * liveness a stub: no test waits or kills.  cmocka's
 * assertions are not thread-safe, so worker threads only count and the
 * main thread asserts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>

#include "apr_atomic.h"

#include "resilience/aura_breaker_fsm.h"

/* A breaker that is open since `at` (threshold 1: one failure). */
static void open_at(volatile apr_uint64_t *w, const aura_breaker_conf_t *c,
                    apr_uint32_t at)
{
    aura_breaker_conf_t one = *c;

    one.threshold = 1;
    assert_int_equal(aura_breaker_failure(w, &one, AURA_BRK_PASS, at),
                     AURA_BRK_TO_OPEN);
}

static void expect_state(apr_uint64_t w, aura_breaker_state_e st,
                         apr_uint32_t failures, apr_uint32_t in_flight)
{
    apr_uint32_t f = 12345, n = 12345;

    assert_int_equal(aura_breaker_state(w, &f, &n), st);
    assert_int_equal(f, failures);
    assert_int_equal(n, in_flight);
}

static void test_conf_init(void **state)
{
    static const struct {
        apr_uint32_t threshold, cooldown, probes;
        apr_status_t rv;
    } rows[] = {
        { 5, 30000, 1, APR_SUCCESS },
        { 1, 1, 1, APR_SUCCESS },                           /* minima */
        { AURA_BRK_MAX_FAILURES, AURA_BRK_MAX_COOLDOWN, 255, APR_SUCCESS },
        { 0, 1000, 1, APR_EINVAL },
        { AURA_BRK_MAX_FAILURES + 1, 1000, 1, APR_EINVAL }, /* 22 bits */
        { 5, 0, 1, APR_EINVAL },
        { 5, 0x80000000U, 1, APR_EINVAL },                  /* >= 2^31 */
        { 5, 0xffffffffU, 1, APR_EINVAL },
        { 5, 1000, 0, APR_EINVAL },
        { 5, 1000, 256, APR_EINVAL },                       /* 8 bits */
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        aura_breaker_conf_t c = { 7, 7, 7, 7 };

        assert_int_equal(aura_breaker_conf_init(&c, rows[i].threshold,
                                                rows[i].cooldown,
                                                rows[i].probes), rows[i].rv);
        if (rows[i].rv == APR_SUCCESS) {
            assert_int_equal(c.threshold, rows[i].threshold);
            assert_int_equal(c.cooldown_ms, rows[i].cooldown);
            assert_int_equal(c.probes, rows[i].probes);
        }
        else {
            assert_int_equal(c.threshold, 7);   /* untouched */
        }
    }
}

/* A zero-filled segment is a closed breaker; closed admits without
 * writing the word, and a success with no failures writes nothing. */
static void test_zero_word(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    aura_breaker_change_e ch = AURA_BRK_TO_OPEN;
    apr_uint32_t retry = 99;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 3, 1000, 1), APR_SUCCESS);
    expect_state(w, AURA_BRK_CLOSED, 0, 0);
    assert_int_equal(aura_breaker_since(w), 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 42, &ch, &retry),
                     AURA_BRK_PASS);
    assert_int_equal(ch, AURA_BRK_SAME);
    assert_int_equal(retry, 0);
    assert_true(w == 0);
    assert_int_equal(aura_breaker_success(&w, &c, AURA_BRK_PASS, 43),
                     AURA_BRK_SAME);
    assert_true(w == 0);
    /* The outputs are optional. */
    assert_int_equal(aura_breaker_acquire(&w, &c, 44, NULL, NULL),
                     AURA_BRK_PASS);
}

/* threshold - 1 failures keep it closed, a success resets the count,
 * the threshold-th consecutive failure opens it. */
static void test_threshold(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    apr_uint32_t i;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 3, 1000, 1), APR_SUCCESS);
    for (i = 0; i < 2; i++) {
        assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PASS, 100),
                         AURA_BRK_SAME);
    }
    expect_state(w, AURA_BRK_CLOSED, 2, 0);
    assert_int_equal(aura_breaker_success(&w, &c, AURA_BRK_PASS, 101),
                     AURA_BRK_SAME);
    expect_state(w, AURA_BRK_CLOSED, 0, 0);
    for (i = 0; i < 2; i++) {
        assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PASS, 102),
                         AURA_BRK_SAME);
    }
    expect_state(w, AURA_BRK_CLOSED, 2, 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 103, NULL, NULL),
                     AURA_BRK_PASS);
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PASS, 104),
                     AURA_BRK_TO_OPEN);
    expect_state(w, AURA_BRK_OPEN, 3, 0);
    assert_int_equal(aura_breaker_since(w), 104);

    /* Threshold 1: the first failure opens it. */
    w = 0;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 1), APR_SUCCESS);
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PASS, 5),
                     AURA_BRK_TO_OPEN);
}

/* While open: DENY with the cooldown left, and the word untouched. */
static void test_open_deny(void **state)
{
    static const struct {
        apr_uint32_t at, retry;
    } rows[] = {
        { 10000, 1000 },        /* the instant it opened */
        { 10001, 999 },
        { 10500, 500 },
        { 10999, 1 },           /* 1 ms short */
    };
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    apr_uint64_t before;
    size_t i;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 2, 1000, 1), APR_SUCCESS);
    open_at(&w, &c, 10000);
    before = w;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        aura_breaker_change_e ch = AURA_BRK_TO_CLOSED;
        apr_uint32_t retry = 0;

        assert_int_equal(aura_breaker_acquire(&w, &c, rows[i].at, &ch,
                                              &retry), AURA_BRK_DENY);
        assert_int_equal(ch, AURA_BRK_SAME);
        assert_int_equal(retry, rows[i].retry);
        assert_true(w == before);
    }
    /* DENY tickets' verdicts and release are no-ops. */
    assert_int_equal(aura_breaker_success(&w, &c, AURA_BRK_DENY, 10100),
                     AURA_BRK_SAME);
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_DENY, 10100),
                     AURA_BRK_SAME);
    aura_breaker_release(&w, AURA_BRK_DENY);
    aura_breaker_release(&w, AURA_BRK_PASS);
    assert_true(w == before);
}

/* After the cooldown, exactly one caller moves it to half-open; with
 * probes=1 the next one is refused with a positive retry-after. */
static void test_half_open_once(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    aura_breaker_change_e ch;
    apr_uint32_t retry;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 2, 1000, 1), APR_SUCCESS);
    open_at(&w, &c, 10000);
    assert_int_equal(aura_breaker_acquire(&w, &c, 11000, &ch, &retry),
                     AURA_BRK_PROBE);
    assert_int_equal(ch, AURA_BRK_TO_HALF_OPEN);
    assert_int_equal(retry, 0);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 1);
    assert_int_equal(aura_breaker_since(w), 11000);
    assert_int_equal(aura_breaker_acquire(&w, &c, 11001, &ch, &retry),
                     AURA_BRK_DENY);
    assert_int_equal(ch, AURA_BRK_SAME);
    assert_int_equal(retry, 1000);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 1);
}

/* probes=3: exactly three PROBEs, one of them reporting TO_HALF_OPEN. */
static void test_probes_three(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    aura_breaker_change_e ch;
    int i, probes = 0, changes = 0;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 2, 1000, 3), APR_SUCCESS);
    open_at(&w, &c, 0);
    for (i = 0; i < 10; i++) {
        if (aura_breaker_acquire(&w, &c, 5000 + i, &ch, NULL)
            == AURA_BRK_PROBE) {
            probes++;
        }
        if (ch == AURA_BRK_TO_HALF_OPEN) {
            changes++;
        }
    }
    assert_int_equal(probes, 3);
    assert_int_equal(changes, 1);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 3);
}

/* A probe's success closes it; the other probes' verdicts and releases
 * then find it closed and change nothing. */
static void test_probe_success(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    apr_uint64_t closed;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 2, 1000, 3), APR_SUCCESS);
    open_at(&w, &c, 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1000, NULL, NULL),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1001, NULL, NULL),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1002, NULL, NULL),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_success(&w, &c, AURA_BRK_PROBE, 1100),
                     AURA_BRK_TO_CLOSED);
    expect_state(w, AURA_BRK_CLOSED, 0, 0);
    closed = w;
    assert_int_equal(aura_breaker_success(&w, &c, AURA_BRK_PROBE, 1101),
                     AURA_BRK_SAME);
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PROBE, 1102),
                     AURA_BRK_SAME);
    aura_breaker_release(&w, AURA_BRK_PROBE);
    assert_true(w == closed);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1200, NULL, NULL),
                     AURA_BRK_PASS);
    /* Closed again, it counts failures from zero. */
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PASS, 1300),
                     AURA_BRK_SAME);
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PASS, 1301),
                     AURA_BRK_TO_OPEN);
}

/* A probe's failure reopens it and restarts the cooldown from then. */
static void test_probe_failure(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    aura_breaker_change_e ch;
    apr_uint32_t retry;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 2), APR_SUCCESS);
    open_at(&w, &c, 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1000, NULL, NULL),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1000, NULL, NULL),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PROBE, 1500),
                     AURA_BRK_TO_OPEN);
    expect_state(w, AURA_BRK_OPEN, 2, 0);
    assert_int_equal(aura_breaker_since(w), 1500);
    /* The second probe's late verdict changes nothing. */
    assert_int_equal(aura_breaker_success(&w, &c, AURA_BRK_PROBE, 1501),
                     AURA_BRK_SAME);
    expect_state(w, AURA_BRK_OPEN, 2, 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 2499, &ch, &retry),
                     AURA_BRK_DENY);
    assert_int_equal(retry, 1);
    assert_int_equal(aura_breaker_acquire(&w, &c, 2500, &ch, &retry),
                     AURA_BRK_PROBE);
    assert_int_equal(ch, AURA_BRK_TO_HALF_OPEN);
}

/* A released probe lets another in; releasing twice never underflows. */
static void test_release(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    aura_breaker_change_e ch;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 1), APR_SUCCESS);
    open_at(&w, &c, 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1000, NULL, NULL),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1001, NULL, NULL),
                     AURA_BRK_DENY);
    aura_breaker_release(&w, AURA_BRK_PROBE);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1002, &ch, NULL),
                     AURA_BRK_PROBE);
    assert_int_equal(ch, AURA_BRK_SAME);        /* already half-open */
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 1);
    aura_breaker_release(&w, AURA_BRK_PROBE);
    aura_breaker_release(&w, AURA_BRK_PROBE);   /* one too many */
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 0);
}

/* A probe whose process died never gets a verdict: after probe_ttl_ms
 * the next request gets a new probe, and only one. */
static void test_probe_ttl(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 1), APR_SUCCESS);
    assert_int_equal(c.probe_ttl_ms, 0);
    c.probe_ttl_ms = 5000;
    open_at(&w, &c, 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1000, NULL, NULL),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_acquire(&w, &c, 5999, NULL, NULL),
                     AURA_BRK_DENY);
    assert_int_equal(aura_breaker_acquire(&w, &c, 6000, NULL, NULL),
                     AURA_BRK_PROBE);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 1);
    assert_int_equal(aura_breaker_acquire(&w, &c, 6001, NULL, NULL),
                     AURA_BRK_DENY);
    /* Without a ttl, never. */
    c.probe_ttl_ms = 0;
    assert_int_equal(aura_breaker_acquire(&w, &c, 900000, NULL, NULL),
                     AURA_BRK_DENY);
}

/* PASS verdicts of requests admitted before it opened change nothing:
 * no count, no cooldown restart, no in-flight change in half-open. */
static void test_late_pass(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    aura_breaker_ticket_e t[4];
    apr_uint64_t before;
    int i;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 2, 1000, 2), APR_SUCCESS);
    for (i = 0; i < 4; i++) {
        t[i] = aura_breaker_acquire(&w, &c, 100, NULL, NULL);
        assert_int_equal(t[i], AURA_BRK_PASS);
    }
    assert_int_equal(aura_breaker_failure(&w, &c, t[0], 200),
                     AURA_BRK_SAME);
    assert_int_equal(aura_breaker_failure(&w, &c, t[1], 200),
                     AURA_BRK_TO_OPEN);
    before = w;
    assert_int_equal(aura_breaker_failure(&w, &c, t[2], 700),
                     AURA_BRK_SAME);
    assert_int_equal(aura_breaker_success(&w, &c, t[3], 700),
                     AURA_BRK_SAME);
    assert_true(w == before);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1200, NULL, NULL),
                     AURA_BRK_PROBE);
    before = w;
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PASS, 1300),
                     AURA_BRK_SAME);
    assert_int_equal(aura_breaker_success(&w, &c, AURA_BRK_PASS, 1300),
                     AURA_BRK_SAME);
    assert_true(w == before);
    expect_state(w, AURA_BRK_HALF_OPEN, 2, 1);
}

/* now_ms wraps modulo 2^32 during the cooldown. */
static void test_clock_wrap(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    aura_breaker_change_e ch;
    apr_uint32_t retry, opened = 0xffffff00U;   /* 256 ms before wrap */

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 1), APR_SUCCESS);
    open_at(&w, &c, opened);
    assert_int_equal(aura_breaker_acquire(&w, &c, 0xffffffffU, NULL,
                                          &retry), AURA_BRK_DENY);
    assert_int_equal(retry, 1000 - 255);
    assert_int_equal(aura_breaker_acquire(&w, &c, 0, NULL, &retry),
                     AURA_BRK_DENY);
    assert_int_equal(retry, 1000 - 256);
    assert_int_equal(aura_breaker_acquire(&w, &c, 743, NULL, &retry),
                     AURA_BRK_DENY);                /* 999 ms elapsed */
    assert_int_equal(retry, 1);
    assert_int_equal(aura_breaker_acquire(&w, &c, 744, &ch, &retry),
                     AURA_BRK_PROBE);
    assert_int_equal(ch, AURA_BRK_TO_HALF_OPEN);
    /* The probe fails just after the wrap: the cooldown restarts. */
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PROBE, 800),
                     AURA_BRK_TO_OPEN);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1799, NULL, &retry),
                     AURA_BRK_DENY);
    assert_int_equal(retry, 1);
}

/* 32 bits of clock cannot tell "read just before it opened" from
 * "opened 2^32 ms ago".  A reading up to one cooldown early is a racing
 * caller: full cooldown.  Beyond that it is elapsed time modulo 2^32. */
static void test_clock_early(void **state)
{
    static const struct {
        apr_uint32_t now;
        aura_breaker_ticket_e t;
        apr_uint32_t retry;
    } rows[] = {
        { 4990, AURA_BRK_DENY, 1000 },          /* read 10 ms early */
        { 4000, AURA_BRK_DENY, 1000 },          /* a full cooldown early */
        { 3999, AURA_BRK_PROBE, 0 },            /* idle ~49.7 days */
        { 5000 + 0xffffffffU, AURA_BRK_DENY, 1000 },    /* 1 ms early */
        { 5010, AURA_BRK_DENY, 990 },           /* also idle 2^32 + 10 */
    };
    aura_breaker_conf_t c;
    size_t i;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 1), APR_SUCCESS);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        volatile apr_uint64_t w = 0;
        apr_uint32_t retry = 12345;

        open_at(&w, &c, 5000);
        assert_int_equal(aura_breaker_acquire(&w, &c, rows[i].now, NULL,
                                              &retry), rows[i].t);
        assert_int_equal(retry, rows[i].retry);
    }
}

/* The largest threshold opens at its count; failures then saturate and
 * never spill into the clock bits. */
static void test_saturation(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    apr_uint32_t i;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, AURA_BRK_MAX_FAILURES, 1,
                                            AURA_BRK_MAX_PROBES),
                     APR_SUCCESS);
    for (i = 1; i < AURA_BRK_MAX_FAILURES; i++) {
        aura_breaker_failure(&w, &c, AURA_BRK_PASS, 7);
    }
    expect_state(w, AURA_BRK_CLOSED, AURA_BRK_MAX_FAILURES - 1, 0);
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PASS, 7),
                     AURA_BRK_TO_OPEN);
    for (i = 0; i < AURA_BRK_MAX_PROBES; i++) {
        assert_int_equal(aura_breaker_acquire(&w, &c, 8, NULL, NULL),
                         AURA_BRK_PROBE);
    }
    assert_int_equal(aura_breaker_acquire(&w, &c, 8, NULL, NULL),
                     AURA_BRK_DENY);
    expect_state(w, AURA_BRK_HALF_OPEN, AURA_BRK_MAX_FAILURES, 255);
    assert_int_equal(aura_breaker_since(w), 8);
    assert_int_equal(aura_breaker_failure(&w, &c, AURA_BRK_PROBE, 9),
                     AURA_BRK_TO_OPEN);
    expect_state(w, AURA_BRK_OPEN, AURA_BRK_MAX_FAILURES, 0);
    assert_int_equal(aura_breaker_since(w), 9);
}

/* The unused state value 3 reads as open and is repaired by the next
 * transition. */
static void test_corrupt_state(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = (APR_UINT64_C(100) << 32) | 3;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 1), APR_SUCCESS);
    expect_state(w, AURA_BRK_OPEN, 0, 0);
    assert_int_equal(aura_breaker_acquire(&w, &c, 500, NULL, NULL),
                     AURA_BRK_DENY);
    assert_int_equal(aura_breaker_acquire(&w, &c, 1100, NULL, NULL),
                     AURA_BRK_PROBE);
    expect_state(w, AURA_BRK_HALF_OPEN, 0, 1);
}

/* Threads. */

#define NTHREADS 4
#define NCALLS   10000

typedef struct {
    volatile apr_uint64_t *w;
    const aura_breaker_conf_t *c;
    pthread_barrier_t *start;
    int mode;                   /* 0 acquire, 1 failure, 2 probe churn */
    apr_uint32_t now;
    int probes, to_half_open, to_open, bad;
} worker_t;

static void *worker(void *arg)
{
    worker_t *k = arg;
    aura_breaker_change_e ch;
    apr_uint32_t n;
    int i;

    pthread_barrier_wait(k->start);
    for (i = 0; i < NCALLS; i++) {
        if (k->mode == 1) {
            if (aura_breaker_failure(k->w, k->c, AURA_BRK_PASS, k->now)
                == AURA_BRK_TO_OPEN) {
                k->to_open++;
            }
            continue;
        }
        if (aura_breaker_acquire(k->w, k->c, k->now, &ch, NULL)
            == AURA_BRK_PROBE) {
            k->probes++;
            if (k->mode == 2) {
                /* Never more probes out than allowed, seen from inside. */
                aura_breaker_state(apr_atomic_read64(k->w), NULL, &n);
                if (n > k->c->probes) {
                    k->bad++;
                }
                aura_breaker_release(k->w, AURA_BRK_PROBE);
            }
        }
        if (ch == AURA_BRK_TO_HALF_OPEN) {
            k->to_half_open++;
        }
    }
    return NULL;
}

/* Runs NTHREADS workers in `mode` on *w and sums their counts into *sum. */
static void run_threads(volatile apr_uint64_t *w,
                        const aura_breaker_conf_t *c, int mode,
                        apr_uint32_t now, worker_t *sum)
{
    pthread_t tid[NTHREADS];
    worker_t k[NTHREADS];
    pthread_barrier_t start;
    int i;

    assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (i = 0; i < NTHREADS; i++) {
        k[i] = (worker_t){ w, c, &start, mode, now, 0, 0, 0, 0 };
        assert_int_equal(pthread_create(&tid[i], NULL, worker, &k[i]), 0);
    }
    *sum = (worker_t){ w, c, NULL, mode, now, 0, 0, 0, 0 };
    for (i = 0; i < NTHREADS; i++) {
        assert_int_equal(pthread_join(tid[i], NULL), 0);
        sum->probes += k[i].probes;
        sum->to_half_open += k[i].to_half_open;
        sum->to_open += k[i].to_open;
        sum->bad += k[i].bad;
    }
    pthread_barrier_destroy(&start);
}

/* 4 x 10000 acquires racing on an open word whose cooldown is over,
 * probes=2, no verdicts: one TO_HALF_OPEN and exactly 2 PROBEs. */
static void test_threads_acquire(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    worker_t sum;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 2), APR_SUCCESS);
    open_at(&w, &c, 0);
    run_threads(&w, &c, 0, 1000, &sum);
    assert_int_equal(sum.to_half_open, 1);
    assert_int_equal(sum.probes, 2);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 2);
}

/* Concurrent failures while closed: TO_OPEN exactly once, and no
 * increment lost (a threshold of all 40000 failures is still reached). */
static void test_threads_failure(void **state)
{
    static const apr_uint32_t thresholds[] = {
        1, 1000, NTHREADS * NCALLS
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(thresholds) / sizeof(thresholds[0]); i++) {
        aura_breaker_conf_t c;
        volatile apr_uint64_t w = 0;
        apr_uint32_t failures;
        worker_t sum;

        assert_int_equal(aura_breaker_conf_init(&c, thresholds[i], 1000, 1),
                         APR_SUCCESS);
        run_threads(&w, &c, 1, 77, &sum);
        assert_int_equal(sum.to_open, 1);
        assert_int_equal(aura_breaker_state(w, &failures, NULL),
                         AURA_BRK_OPEN);
        assert_int_equal(failures, thresholds[i]);
        assert_int_equal(aura_breaker_since(w), 77);
    }
}

/* Probes taken and released as fast as possible: the in-flight count
 * never exceeds the bound and ends at zero. */
static void test_threads_churn(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0;
    worker_t sum;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 3), APR_SUCCESS);
    open_at(&w, &c, 0);
    run_threads(&w, &c, 2, 1000, &sum);
    assert_int_equal(sum.to_half_open, 1);
    assert_int_equal(sum.bad, 0);
    assert_true(sum.probes > 0);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 0);
}

/* ---- issue #16: periods and holders ---------------------------------- */

/* A liveness stub: pids in dead[] are dead; may also run a hook (a
 * concurrent verdict) the first time it is asked. */
typedef struct {
    apr_uint32_t dead[8];
    int ndead;
    int calls;
    void (*hook)(void *);
    void *hook_arg;
} stub_t;

static int stub_alive(apr_uint32_t pid, void *baton)
{
    stub_t *st = baton;
    int i;

    if (st->calls++ == 0 && st->hook) {
        st->hook(st->hook_arg);
    }
    for (i = 0; i < st->ndead; i++) {
        if (st->dead[i] == pid) {
            return 0;
        }
    }
    return 1;
}

static aura_breaker_who_t who_of(apr_uint32_t pid, apr_uint32_t hold_ms,
                                 stub_t *st)
{
    aura_breaker_who_t w = { pid, hold_ms, stub_alive, st };

    return w;
}

static int holders_of(volatile apr_uint64_t *w, volatile apr_uint64_t *hs,
                      apr_uint32_t *pids)
{
    int i, n = 0;

    for (i = 0; i < AURA_BRK_HOLDERS; i++) {
        if (aura_breaker_holder(hs[i], aura_breaker_since(*w), &pids[n],
                                NULL)) {
            n++;
        }
    }
    return n;
}

/* Issue #16: late failures of requests admitted before the breaker
 * opened arrive after it closed again: they do not count against the
 * new closed period (it used to be left one failure from opening).  A
 * late success of the old period is dropped too. */
static void test_held_late_failures(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0, hs[AURA_BRK_HOLDERS] = { 0 };
    aura_breaker_grant_t old[3], probe, fresh, fresh2;
    stub_t st = { { 0 }, 0, 0, NULL, NULL };
    aura_breaker_who_t me = who_of(10, 5000, &st);
    apr_uint32_t failures;
    int i;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 2, 1000, 1), APR_SUCCESS);
    for (i = 0; i < 3; i++) {
        assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 100, &me,
                                                   &old[i]), AURA_BRK_PASS);
        assert_int_equal(old[i].period, 0);
    }
    /* Two fresh failures open it. */
    for (i = 0; i < 2; i++) {
        aura_breaker_grant_t g;

        aura_breaker_acquire_held(&w, hs, &c, 200, &me, &g);
        assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &g, 0, 210),
                         i ? AURA_BRK_TO_OPEN : AURA_BRK_SAME);
    }
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1210, &me,
                                               &probe), AURA_BRK_PROBE);
    assert_int_equal(probe.change, AURA_BRK_TO_HALF_OPEN);
    assert_int_equal(probe.period, 1210);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &probe, 1, 1300),
                     AURA_BRK_TO_CLOSED);
    /* The old requests' 504s come in now. */
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &old[0], 0, 1400),
                     AURA_BRK_SAME);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &old[1], 0, 1400),
                     AURA_BRK_SAME);
    expect_state(w, AURA_BRK_CLOSED, 0, 0);
    /* The new period counts its own failures: one is not enough... */
    aura_breaker_acquire_held(&w, hs, &c, 1500, &me, &fresh);
    assert_int_equal(fresh.period, 1300);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &fresh, 0, 1510),
                     AURA_BRK_SAME);
    aura_breaker_state(w, &failures, NULL);
    assert_int_equal(failures, 1);
    /* ...and an old success does not reset them. */
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &old[2], 1, 1520),
                     AURA_BRK_SAME);
    expect_state(w, AURA_BRK_CLOSED, 1, 0);
    aura_breaker_acquire_held(&w, hs, &c, 1600, &me, &fresh2);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &fresh2, 0, 1610),
                     AURA_BRK_TO_OPEN);
    /* The plain API stays period-blind (the Redis breaker's). */
    w = 0;
    for (i = 0; i < 2; i++) {
        aura_breaker_failure(&w, &c, AURA_BRK_PASS, 10);
    }
    aura_breaker_acquire(&w, &c, 1010, NULL, NULL);
    aura_breaker_success(&w, &c, AURA_BRK_PROBE, 1020);
    aura_breaker_failure(&w, &c, AURA_BRK_PASS, 1030);
    expect_state(w, AURA_BRK_CLOSED, 1, 0);
}

/* Issue #16: a probe of an earlier half-open round (probes=2: the other
 * one failed and reopened it) neither decides nor frees a slot of the
 * next round. */
static void test_held_late_probe(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0, hs[AURA_BRK_HOLDERS] = { 0 };
    aura_breaker_grant_t a, b, n;
    stub_t st = { { 0 }, 0, 0, NULL, NULL };
    aura_breaker_who_t me = who_of(10, 5000, &st);
    apr_uint32_t pids[AURA_BRK_HOLDERS];

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 2), APR_SUCCESS);
    open_at(&w, &c, 0);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1000, &me, &a),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1001, &me, &b),
                     AURA_BRK_PROBE);
    assert_int_equal(a.holder, 0);
    assert_int_equal(b.holder, 1);
    assert_int_equal(aura_breaker_since(w), 1000);  /* the round's start */
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &a, 0, 1100),
                     AURA_BRK_TO_OPEN);
    assert_true(hs[0] == 0 && hs[1] == 0);          /* the round's records */
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 2100, &me, &n),
                     AURA_BRK_PROBE);
    assert_int_equal(n.change, AURA_BRK_TO_HALF_OPEN);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &b, 1, 2150),
                     AURA_BRK_SAME);
    aura_breaker_release_held(&w, hs, &b);
    expect_state(w, AURA_BRK_HALF_OPEN, 2, 1);
    assert_int_equal(holders_of(&w, hs, pids), 1);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &n, 1, 2200),
                     AURA_BRK_TO_CLOSED);
}

/* Issue #16: the child holding the only probe is killed.  The next
 * request finds its holder dead, takes the probe over (once; the count
 * unchanged), and its success closes the breaker.  The dead holder's
 * verdict or release, should they ever come, are not its to give. */
static void test_held_dead_holder(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0, hs[AURA_BRK_HOLDERS] = { 0 };
    aura_breaker_grant_t lost, denied, g, again;
    stub_t st = { { 0 }, 0, 0, NULL, NULL };
    aura_breaker_who_t a = who_of(4242, 30000, &st);
    aura_breaker_who_t b = who_of(4343, 30000, &st);
    apr_uint32_t pids[AURA_BRK_HOLDERS];

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 30000, 1), APR_SUCCESS);
    c.probe_ttl_ms = 400000;
    open_at(&w, &c, 0);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 30000, &a, &lost),
                     AURA_BRK_PROBE);
    assert_int_equal(lost.holder, 0);
    assert_int_equal(holders_of(&w, hs, pids), 1);
    assert_int_equal(pids[0], 4242);
    /* Alive: refused, told to come back in a second, not the cooldown. */
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 30500, &b,
                                               &denied), AURA_BRK_DENY);
    assert_int_equal(denied.retry_after_ms, 1000);
    assert_false(denied.took_over);
    /* SIGKILL. */
    st.dead[st.ndead++] = 4242;
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 31000, &b, &g),
                     AURA_BRK_PROBE);
    assert_true(g.took_over);
    assert_int_equal(g.lost_pid, 4242);
    assert_int_equal(g.change, AURA_BRK_SAME);
    assert_int_equal(g.period, 30000);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 1);
    assert_int_equal(holders_of(&w, hs, pids), 1);
    assert_int_equal(pids[0], 4343);
    /* Taken once: the next caller is refused. */
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 31001, &a,
                                               &again), AURA_BRK_DENY);
    aura_breaker_release_held(&w, hs, &lost);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &lost, 0, 31002),
                     AURA_BRK_SAME);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 1);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &g, 1, 31100),
                     AURA_BRK_TO_CLOSED);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 31200, &a,
                                               &again), AURA_BRK_PASS);
}

/* Issue #16: a living holder keeps its probe until its deadline (the
 * route's budget plus a margin, hold_ms here), then loses it; no
 * liveness function means only the deadline counts. */
static void test_held_stale_holder(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0, hs[AURA_BRK_HOLDERS] = { 0 };
    aura_breaker_grant_t slow, g;
    stub_t st = { { 0 }, 0, 0, NULL, NULL };
    aura_breaker_who_t a = who_of(7, 2000, &st);
    aura_breaker_who_t b = { 8, 2000, NULL, NULL };

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 1), APR_SUCCESS);
    open_at(&w, &c, 0);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1000, &a, &slow),
                     AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 2999, &b, &g),
                     AURA_BRK_DENY);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 3000, &b, &g),
                     AURA_BRK_PROBE);
    assert_true(g.took_over);
    assert_int_equal(g.lost_pid, 7);
    /* The slow one answers at last: its verdict is no longer its own. */
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &slow, 0, 3100),
                     AURA_BRK_SAME);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 1);
    assert_int_equal(st.calls, 0);      /* alive() only for this period */
}

/* More probes than records, and a pid too wide to record: those probes
 * work as before (verdict, release) and are left to the probe-timeout;
 * a record left by an older round is reused. */
static void test_held_unrecorded(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0, hs[AURA_BRK_HOLDERS] = { 0 };
    aura_breaker_grant_t g[6], wide, x;
    stub_t st = { { 0 }, 0, 0, NULL, NULL };
    aura_breaker_who_t me = who_of(10, 5000, &st);
    aura_breaker_who_t big = who_of(1U << 22, 5000, &st);
    int i;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 7), APR_SUCCESS);
    open_at(&w, &c, 0);
    for (i = 0; i < 6; i++) {
        assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1000 + i, &me,
                                                   &g[i]), AURA_BRK_PROBE);
        assert_int_equal(g[i].holder, i < AURA_BRK_HOLDERS ? i : -1);
    }
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1010, &big,
                                               &wide), AURA_BRK_PROBE);
    assert_int_equal(wide.holder, -1);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 7);
    aura_breaker_release_held(&w, hs, &g[5]);
    aura_breaker_release_held(&w, hs, &wide);
    aura_breaker_release_held(&w, hs, &g[0]);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 4);
    assert_true(hs[0] == 0);
    /* A stale record of another round (here: a forged tag) is free. */
    hs[0] = (APR_UINT64_C(99) << 32) | (APR_UINT64_C(5) << 10) | 0x3ff;
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1020, &me, &x),
                     AURA_BRK_PROBE);
    assert_int_equal(x.holder, 0);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &g[5], 1, 1030),
                     AURA_BRK_TO_CLOSED);   /* unrecorded: still decides */
}

/* The probe-timeout (the last resort for unrecorded probes) starts a new
 * round: the lost round's verdicts no longer count. */
static void test_held_ttl_round(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0, hs[AURA_BRK_HOLDERS] = { 0 };
    aura_breaker_grant_t lost, g;
    aura_breaker_who_t big = { 1U << 23, 1000, NULL, NULL };

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 1), APR_SUCCESS);
    c.probe_ttl_ms = 5000;
    open_at(&w, &c, 0);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1000, &big,
                                               &lost), AURA_BRK_PROBE);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 5999, &big, &g),
                     AURA_BRK_DENY);
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 6000, &big, &g),
                     AURA_BRK_PROBE);
    assert_int_equal(g.period, 6000);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &lost, 0, 6001),
                     AURA_BRK_SAME);
    aura_breaker_release_held(&w, hs, &lost);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 1);
    assert_int_equal(aura_breaker_verdict_held(&w, hs, &c, &g, 1, 6002),
                     AURA_BRK_TO_CLOSED);
}

/* The round ends (another probe's failure, its records not yet
 * cleared) between the look at the records and the take-over: the
 * record goes back and the caller is decided again on the reopened
 * breaker. */
typedef struct {
    volatile apr_uint64_t *w, *hs;
    const aura_breaker_conf_t *c;
    aura_breaker_grant_t *g;
} race_t;

static void end_round(void *arg)
{
    race_t *r = arg;

    (void)r->hs;
    (void)r->g;
    aura_breaker_failure(r->w, r->c, AURA_BRK_PROBE, 1500);
}

static void test_held_round_ends(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0, hs[AURA_BRK_HOLDERS] = { 0 };
    aura_breaker_grant_t dead, other, g;
    stub_t st = { { 1 }, 1, 0, NULL, NULL };
    aura_breaker_who_t d = { 1, 60000, NULL, NULL };
    aura_breaker_who_t o = { 2, 60000, NULL, NULL };
    aura_breaker_who_t me = who_of(3, 60000, &st);
    race_t r = { &w, hs, &c, &other };
    int i;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 2), APR_SUCCESS);
    open_at(&w, &c, 0);
    aura_breaker_acquire_held(&w, hs, &c, 1000, &d, &dead);
    aura_breaker_acquire_held(&w, hs, &c, 1000, &o, &other);
    st.hook = end_round;
    st.hook_arg = &r;
    assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1600, &me, &g),
                     AURA_BRK_DENY);
    assert_int_equal(g.retry_after_ms, 900);    /* the cooldown left */
    assert_false(g.took_over);
    expect_state(w, AURA_BRK_OPEN, 2, 0);
    assert_int_equal(st.calls, 1);
    assert_true(hs[0] == 0);                    /* given back */
    for (i = 2; i < AURA_BRK_HOLDERS; i++) {
        assert_true(hs[i] == 0);
    }
}

/* Threads racing to take over the probes of four dead holders: each is
 * taken exactly once. */
typedef struct {
    volatile apr_uint64_t *w, *hs;
    const aura_breaker_conf_t *c;
    pthread_barrier_t *start;
    apr_uint32_t pid;
    int took;
} taker_t;

static int dead_below_100(apr_uint32_t pid, void *baton)
{
    (void)baton;
    return pid >= 100;
}

static void *taker(void *arg)
{
    taker_t *k = arg;
    aura_breaker_who_t me = { k->pid, 60000, dead_below_100, NULL };
    int i;

    pthread_barrier_wait(k->start);
    for (i = 0; i < NCALLS; i++) {
        aura_breaker_grant_t g;

        if (aura_breaker_acquire_held(k->w, k->hs, k->c, 2000, &me, &g)
            == AURA_BRK_PROBE && g.took_over) {
            k->took++;
        }
    }
    return NULL;
}

static void test_threads_take_over(void **state)
{
    aura_breaker_conf_t c;
    volatile apr_uint64_t w = 0, hs[AURA_BRK_HOLDERS] = { 0 };
    pthread_t tid[NTHREADS];
    taker_t k[NTHREADS];
    pthread_barrier_t start;
    apr_uint32_t pids[AURA_BRK_HOLDERS];
    int i, took = 0;

    (void)state;
    assert_int_equal(aura_breaker_conf_init(&c, 1, 1000, 4), APR_SUCCESS);
    open_at(&w, &c, 0);
    for (i = 0; i < 4; i++) {
        aura_breaker_who_t d = { 1 + i, 60000, NULL, NULL };
        aura_breaker_grant_t g;

        assert_int_equal(aura_breaker_acquire_held(&w, hs, &c, 1000, &d, &g),
                         AURA_BRK_PROBE);
    }
    assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (i = 0; i < NTHREADS; i++) {
        k[i] = (taker_t){ &w, hs, &c, &start, 100 + i, 0 };
        assert_int_equal(pthread_create(&tid[i], NULL, taker, &k[i]), 0);
    }
    for (i = 0; i < NTHREADS; i++) {
        assert_int_equal(pthread_join(tid[i], NULL), 0);
        took += k[i].took;
    }
    pthread_barrier_destroy(&start);
    assert_int_equal(took, 4);
    expect_state(w, AURA_BRK_HALF_OPEN, 1, 4);
    assert_int_equal(holders_of(&w, hs, pids), 4);
    for (i = 0; i < 4; i++) {
        assert_true(pids[i] >= 100);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_init),
        cmocka_unit_test(test_zero_word),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_open_deny),
        cmocka_unit_test(test_half_open_once),
        cmocka_unit_test(test_probes_three),
        cmocka_unit_test(test_probe_success),
        cmocka_unit_test(test_probe_failure),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_probe_ttl),
        cmocka_unit_test(test_late_pass),
        cmocka_unit_test(test_clock_wrap),
        cmocka_unit_test(test_clock_early),
        cmocka_unit_test(test_saturation),
        cmocka_unit_test(test_corrupt_state),
        cmocka_unit_test(test_threads_acquire),
        cmocka_unit_test(test_threads_failure),
        cmocka_unit_test(test_threads_churn),
        cmocka_unit_test(test_held_late_failures),
        cmocka_unit_test(test_held_late_probe),
        cmocka_unit_test(test_held_dead_holder),
        cmocka_unit_test(test_held_stale_holder),
        cmocka_unit_test(test_held_unrecorded),
        cmocka_unit_test(test_held_ttl_round),
        cmocka_unit_test(test_held_round_ends),
        cmocka_unit_test(test_threads_take_over),
    };

    return cmocka_run_group_tests_name("breaker", tests, NULL, NULL);
}
