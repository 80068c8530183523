/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_breaker_fsm.c: the circuit-breaker state machine (see
 * aura_breaker_fsm.h)
 * on one shared 64-bit word.  Each public function is a CAS loop around a
 * pure step on the unpacked fields: read, compute the next word, and
 * write it only if it differs, so the hot paths (acquire while closed, a
 * success while closed with no failures) never write the shared cache
 * line.  A lost CAS retries with the value that beat it, so exactly one
 * caller makes each transition and only that caller reports it.  No
 * locks, no allocation: safe in any process or thread.
 */
#include "apr_atomic.h"

#include "aura_breaker_fsm.h"

#define ST_SHIFT        0
#define ST_MASK         APR_UINT64_C(0x3)
#define INFLIGHT_SHIFT  2
#define INFLIGHT_MASK   APR_UINT64_C(0xff)
#define FAILURES_SHIFT  10
#define FAILURES_MASK   APR_UINT64_C(0x3fffff)
#define SINCE_SHIFT     32
#define SINCE_MASK      APR_UINT64_C(0xffffffff)

typedef struct {
    aura_breaker_state_e st;
    apr_uint32_t in_flight;
    apr_uint32_t failures;
    apr_uint32_t since;
} fields_t;

static void unpack(apr_uint64_t w, fields_t *f)
{
    apr_uint32_t st = (apr_uint32_t)((w >> ST_SHIFT) & ST_MASK);

    /* 3 is never written; should a corrupt word hold it, treat it as
     * open: the worst outcome is one cooldown of refusals, after which
     * the next transition writes a valid state. */
    f->st = st == AURA_BRK_CLOSED ? AURA_BRK_CLOSED
          : st == AURA_BRK_HALF_OPEN ? AURA_BRK_HALF_OPEN
          : AURA_BRK_OPEN;
    f->in_flight = (apr_uint32_t)((w >> INFLIGHT_SHIFT) & INFLIGHT_MASK);
    f->failures = (apr_uint32_t)((w >> FAILURES_SHIFT) & FAILURES_MASK);
    f->since = (apr_uint32_t)((w >> SINCE_SHIFT) & SINCE_MASK);
}

static apr_uint64_t pack(const fields_t *f)
{
    return ((apr_uint64_t)f->st & ST_MASK) << ST_SHIFT
         | ((apr_uint64_t)f->in_flight & INFLIGHT_MASK) << INFLIGHT_SHIFT
         | ((apr_uint64_t)f->failures & FAILURES_MASK) << FAILURES_SHIFT
         | ((apr_uint64_t)f->since & SINCE_MASK) << SINCE_SHIFT;
}

static apr_uint32_t failures_inc(apr_uint32_t n)
{
    return n < AURA_BRK_MAX_FAILURES ? n + 1 : n;
}

/* Ms of cooldown left for a breaker opened at `opened`.  With 32 bits of
 * clock, "now is 5 ms before opened" and "opened 2^32 - 5 ms ago" look
 * the same.  The first happens whenever a caller read its clock just
 * before another process opened the breaker; the second only after
 * ~49.7 idle days.  So a reading up to one cooldown early means "just
 * opened" (cooldown < 2^31 keeps that window apart from the elapsed
 * one), and the idle case waits at most one cooldown more. */
static apr_uint32_t cooldown_left(apr_uint32_t opened, apr_uint32_t now,
                                  apr_uint32_t cooldown)
{
    apr_uint32_t elapsed = now - opened;
    apr_uint32_t early = opened - now;

    if (early != 0 && early <= cooldown) {
        return cooldown;
    }
    return elapsed < cooldown ? cooldown - elapsed : 0;
}

apr_status_t aura_breaker_conf_init(aura_breaker_conf_t *c,
                                    apr_uint32_t threshold,
                                    apr_uint32_t cooldown_ms,
                                    apr_uint32_t probes)
{
    if (threshold < 1 || threshold > AURA_BRK_MAX_FAILURES
        || cooldown_ms < 1 || cooldown_ms > AURA_BRK_MAX_COOLDOWN
        || probes < 1 || probes > AURA_BRK_MAX_PROBES) {
        return APR_EINVAL;
    }
    c->threshold = threshold;
    c->cooldown_ms = cooldown_ms;
    c->probes = probes;
    c->probe_ttl_ms = 0;
    return APR_SUCCESS;
}

/* One acquire decision on the unpacked word: fills *f with the next
 * fields (ignored on DENY), *change and *retry. */
static aura_breaker_ticket_e acquire_step(fields_t *f,
                                          const aura_breaker_conf_t *c,
                                          apr_uint32_t now,
                                          aura_breaker_change_e *change,
                                          apr_uint32_t *retry)
{
    apr_uint32_t left;

    *change = AURA_BRK_SAME;
    *retry = 0;
    switch (f->st) {
    case AURA_BRK_CLOSED:
        return AURA_BRK_PASS;
    case AURA_BRK_HALF_OPEN:
        if (f->in_flight >= c->probes) {
            /* Probes out for longer than any request may last were lost
             * with their process: without this the breaker would refuse
             * everything until httpd is stopped (the segment survives
             * restarts).  One new probe, counted alone. */
            if (c->probe_ttl_ms && now - f->since >= c->probe_ttl_ms
                && now - f->since < 0x80000000U) {
                f->in_flight = 1;
                f->since = now;
                return AURA_BRK_PROBE;
            }
            /* No time says when a probe returns: ask again after a
             * cooldown, the pace the operator chose for retries. */
            *retry = c->cooldown_ms;
            return AURA_BRK_DENY;
        }
        f->in_flight++;
        f->since = now;
        return AURA_BRK_PROBE;
    default:
        left = cooldown_left(f->since, now, c->cooldown_ms);
        if (left) {
            *retry = left;
            return AURA_BRK_DENY;
        }
        f->st = AURA_BRK_HALF_OPEN;
        f->in_flight = 1;
        f->since = now;
        *change = AURA_BRK_TO_HALF_OPEN;
        return AURA_BRK_PROBE;
    }
}

aura_breaker_ticket_e aura_breaker_acquire(volatile apr_uint64_t *word,
                                           const aura_breaker_conf_t *c,
                                           apr_uint32_t now_ms,
                                           aura_breaker_change_e *change,
                                           apr_uint32_t *retry_after_ms)
{
    apr_uint64_t old = apr_atomic_read64(word), next, seen;
    aura_breaker_change_e ch;
    aura_breaker_ticket_e t;
    apr_uint32_t retry;
    fields_t f;

    for (;;) {
        unpack(old, &f);
        t = acquire_step(&f, c, now_ms, &ch, &retry);
        next = pack(&f);
        if (t != AURA_BRK_PROBE || next == old) {
            break;                      /* nothing to write */
        }
        seen = apr_atomic_cas64(word, next, old);
        if (seen == old) {
            break;
        }
        old = seen;                     /* lost: decide again on theirs */
    }
    if (change) {
        *change = ch;
    }
    if (retry_after_ms) {
        *retry_after_ms = retry;
    }
    return t;
}

/* One verdict on the unpacked word: fills *f with the next fields and
 * returns the transition.  Verdicts whose ticket no longer matches the
 * state (admitted before it moved on) leave *f as it is. */
static aura_breaker_change_e verdict_step(fields_t *f,
                                          const aura_breaker_conf_t *c,
                                          aura_breaker_ticket_e t,
                                          apr_uint32_t now, int ok)
{
    if (t == AURA_BRK_PASS && f->st == AURA_BRK_CLOSED) {
        if (ok) {
            f->failures = 0;
            return AURA_BRK_SAME;
        }
        f->failures = failures_inc(f->failures);
        if (f->failures < c->threshold) {
            return AURA_BRK_SAME;
        }
        f->st = AURA_BRK_OPEN;
        f->since = now;
        return AURA_BRK_TO_OPEN;
    }
    if (t == AURA_BRK_PROBE && f->st == AURA_BRK_HALF_OPEN) {
        /* The first verdict decides; the other probes' verdicts then
         * find the state moved on and change nothing. */
        f->in_flight = 0;
        f->since = now;
        if (ok) {
            f->st = AURA_BRK_CLOSED;
            f->failures = 0;
            return AURA_BRK_TO_CLOSED;
        }
        f->st = AURA_BRK_OPEN;
        f->failures = failures_inc(f->failures);
        return AURA_BRK_TO_OPEN;
    }
    return AURA_BRK_SAME;
}

static aura_breaker_change_e verdict(volatile apr_uint64_t *word,
                                     const aura_breaker_conf_t *c,
                                     aura_breaker_ticket_e t,
                                     apr_uint32_t now, int ok)
{
    apr_uint64_t old, next, seen;
    aura_breaker_change_e ch;
    fields_t f;

    if (t != AURA_BRK_PASS && t != AURA_BRK_PROBE) {
        return AURA_BRK_SAME;           /* DENY: nothing was sent */
    }
    old = apr_atomic_read64(word);
    for (;;) {
        unpack(old, &f);
        ch = verdict_step(&f, c, t, now, ok);
        next = pack(&f);
        if (next == old) {
            return AURA_BRK_SAME;       /* e.g. success with 0 failures */
        }
        seen = apr_atomic_cas64(word, next, old);
        if (seen == old) {
            return ch;
        }
        old = seen;
    }
}

aura_breaker_change_e aura_breaker_success(volatile apr_uint64_t *word,
                                           const aura_breaker_conf_t *c,
                                           aura_breaker_ticket_e t,
                                           apr_uint32_t now_ms)
{
    return verdict(word, c, t, now_ms, 1);
}

aura_breaker_change_e aura_breaker_failure(volatile apr_uint64_t *word,
                                           const aura_breaker_conf_t *c,
                                           aura_breaker_ticket_e t,
                                           apr_uint32_t now_ms)
{
    return verdict(word, c, t, now_ms, 0);
}

void aura_breaker_release(volatile apr_uint64_t *word,
                          aura_breaker_ticket_e t)
{
    apr_uint64_t old, seen;
    fields_t f;

    if (t != AURA_BRK_PROBE) {
        return;
    }
    old = apr_atomic_read64(word);
    for (;;) {
        unpack(old, &f);
        /* Closed or reopened since: the verdict of another probe already
         * zeroed the count; never let it underflow. */
        if (f.st != AURA_BRK_HALF_OPEN || f.in_flight == 0) {
            return;
        }
        f.in_flight--;
        seen = apr_atomic_cas64(word, pack(&f), old);
        if (seen == old) {
            return;
        }
        old = seen;
    }
}

aura_breaker_state_e aura_breaker_state(apr_uint64_t word,
                                        apr_uint32_t *failures,
                                        apr_uint32_t *in_flight)
{
    fields_t f;

    unpack(word, &f);
    if (failures) {
        *failures = f.failures;
    }
    if (in_flight) {
        *in_flight = f.in_flight;
    }
    return f.st;
}

apr_uint32_t aura_breaker_since(apr_uint64_t word)
{
    return (apr_uint32_t)((word >> SINCE_SHIFT) & SINCE_MASK);
}
