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
 *
 * The *_held functions add, on the same discipline, the period check of
 * the verdicts and the probe holder records (one CAS per record change,
 * never a lock; the liveness of a holder is the caller's function).
 */
#include "apr_atomic.h"

#include <string.h>

#include "resilience/aura_breaker_fsm.h"

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
            /* No verdict for this long since half-open began: the
             * probes out were lost with their process (those with a
             * holder record are recovered sooner, by
             * aura_breaker_acquire_held()).  Without this the breaker
             * would refuse everything until httpd is stopped (the
             * segment survives restarts).  A new round (a new period:
             * the lost probes' verdicts no longer count), one probe. */
            if (c->probe_ttl_ms && now - f->since >= c->probe_ttl_ms
                && now - f->since < 0x80000000U) {
                f->in_flight = 1;
                f->since = now;
                return AURA_BRK_PROBE;
            }
            /* No time says when a probe returns, and its verdict may
             * come at any moment: then the breaker is closed (asking
             * again succeeds) or open (the answer says the real
             * cooldown).  A second is cheap for both sides; telling the
             * whole cooldown (issue #16: 30 s each time while a lost
             * probe kept it full) was not the real remaining time. */
            *retry = c->cooldown_ms < 1000 ? c->cooldown_ms : 1000;
            return AURA_BRK_DENY;
        }
        /* since stays the period's start: it names the period. */
        f->in_flight++;
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

/* The CAS loop of acquire; *f is left with the fields of the word as
 * this call left it (or found it, on PASS and DENY). */
static aura_breaker_ticket_e acquire_core(volatile apr_uint64_t *word,
                                          const aura_breaker_conf_t *c,
                                          apr_uint32_t now,
                                          aura_breaker_change_e *ch,
                                          apr_uint32_t *retry, fields_t *f)
{
    apr_uint64_t old = apr_atomic_read64(word), next, seen;
    aura_breaker_ticket_e t;

    for (;;) {
        unpack(old, f);
        t = acquire_step(f, c, now, ch, retry);
        next = pack(f);
        if (t != AURA_BRK_PROBE || next == old) {
            if (t == AURA_BRK_DENY) {
                unpack(old, f);         /* the step may have edited it */
            }
            return t;                   /* nothing to write */
        }
        seen = apr_atomic_cas64(word, next, old);
        if (seen == old) {
            return t;
        }
        old = seen;                     /* lost: decide again on theirs */
    }
}

aura_breaker_ticket_e aura_breaker_acquire(volatile apr_uint64_t *word,
                                           const aura_breaker_conf_t *c,
                                           apr_uint32_t now_ms,
                                           aura_breaker_change_e *change,
                                           apr_uint32_t *retry_after_ms)
{
    aura_breaker_change_e ch;
    aura_breaker_ticket_e t;
    apr_uint32_t retry;
    fields_t f;

    t = acquire_core(word, c, now_ms, &ch, &retry, &f);
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

/* period: the since_ms of the period the ticket was granted in, or
 * NULL for the period-blind verdicts of the plain API. */
static aura_breaker_change_e verdict(volatile apr_uint64_t *word,
                                     const aura_breaker_conf_t *c,
                                     aura_breaker_ticket_e t,
                                     const apr_uint32_t *period,
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
        if (period && f.since != *period) {
            return AURA_BRK_SAME;       /* another period: no evidence */
        }
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
    return verdict(word, c, t, NULL, now_ms, 1);
}

aura_breaker_change_e aura_breaker_failure(volatile apr_uint64_t *word,
                                           const aura_breaker_conf_t *c,
                                           aura_breaker_ticket_e t,
                                           apr_uint32_t now_ms)
{
    return verdict(word, c, t, NULL, now_ms, 0);
}

static void release(volatile apr_uint64_t *word, aura_breaker_ticket_e t,
                    const apr_uint32_t *period)
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
         * zeroed the count; never let it underflow.  Another round of
         * half-open: its count is not this probe's. */
        if (f.st != AURA_BRK_HALF_OPEN || f.in_flight == 0
            || (period && f.since != *period)) {
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

void aura_breaker_release(volatile apr_uint64_t *word,
                          aura_breaker_ticket_e t)
{
    release(word, t, NULL);
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

/* ---- holder records (see the header) -------------------------------- */

#define TAG_MASK        APR_UINT64_C(0x3ff)
#define PID_SHIFT       10
#define PID_MASK        APR_UINT64_C(0x3fffff)
#define DEADLINE_SHIFT  32
/* Deadlines are compared as a signed 32-bit difference. */
#define MAX_HOLD_MS     0x7fffffffU

/* The record of pid holding a probe of period until deadline; 0 when
 * pid cannot be recorded (0, or wider than 22 bits). */
static apr_uint64_t holder_pack(apr_uint32_t period, apr_uint32_t pid,
                                apr_uint32_t deadline)
{
    if (pid == 0 || pid > PID_MASK) {
        return 0;
    }
    return (apr_uint64_t)deadline << DEADLINE_SHIFT
         | (apr_uint64_t)pid << PID_SHIFT
         | ((apr_uint64_t)period & TAG_MASK);
}

int aura_breaker_holder(apr_uint64_t rec, apr_uint32_t period,
                        apr_uint32_t *pid, apr_uint32_t *deadline_ms)
{
    apr_uint32_t p = (apr_uint32_t)((rec >> PID_SHIFT) & PID_MASK);

    if (!p || (rec & TAG_MASK) != ((apr_uint64_t)period & TAG_MASK)) {
        return 0;
    }
    if (pid) {
        *pid = p;
    }
    if (deadline_ms) {
        *deadline_ms = (apr_uint32_t)(rec >> DEADLINE_SHIFT);
    }
    return 1;
}

/* A record for a probe just granted: a free one, or one left by another
 * period (its probe's verdict no longer counts anyway).  -1: all hold
 * probes of this period. */
static int hold(volatile apr_uint64_t *holders, apr_uint32_t period,
                apr_uint64_t mine)
{
    int i;

    for (i = 0; i < AURA_BRK_HOLDERS; i++) {
        apr_uint64_t rec = apr_atomic_read64(&holders[i]);

        if (!aura_breaker_holder(rec, period, NULL, NULL)
            && apr_atomic_cas64(&holders[i], mine, rec) == rec) {
            return i;
        }
    }
    return -1;
}

/* Half-open is full: the first record of this period whose holder is
 * dead or past its deadline becomes mine.  Its index, or -1. */
static int take_over(volatile apr_uint64_t *holders, apr_uint32_t period,
                     apr_uint32_t now, const aura_breaker_who_t *who,
                     apr_uint64_t mine, apr_uint32_t *lost_pid)
{
    int i;

    for (i = 0; i < AURA_BRK_HOLDERS; i++) {
        apr_uint64_t rec = apr_atomic_read64(&holders[i]);
        apr_uint32_t pid, deadline;
        int stale;

        if (!aura_breaker_holder(rec, period, &pid, &deadline)) {
            continue;
        }
        stale = (apr_int32_t)(now - deadline) >= 0;
        if (!stale && (!who->alive || who->alive(pid, who->baton))) {
            continue;
        }
        if (apr_atomic_cas64(&holders[i], mine, rec) == rec) {
            *lost_pid = pid;
            return i;
        }
    }
    return -1;
}

aura_breaker_ticket_e aura_breaker_acquire_held(volatile apr_uint64_t *word,
                                                volatile apr_uint64_t *holders,
                                                const aura_breaker_conf_t *c,
                                                apr_uint32_t now_ms,
                                                const aura_breaker_who_t *who,
                                                aura_breaker_grant_t *g)
{
    apr_uint32_t hold_ms = who->hold_ms < MAX_HOLD_MS ? who->hold_ms
                                                       : MAX_HOLD_MS;
    int tries;

    for (tries = 0; ; tries++) {
        apr_uint64_t mine;
        fields_t f;
        int i;

        memset(g, 0, sizeof(*g));
        g->holder = -1;
        g->ticket = acquire_core(word, c, now_ms, &g->change,
                                 &g->retry_after_ms, &f);
        g->period = f.since;
        if (g->ticket == AURA_BRK_PASS || !holders) {
            return g->ticket;
        }
        mine = holder_pack(f.since, who->pid, now_ms + hold_ms);
        if (g->ticket == AURA_BRK_PROBE) {
            /* Its process may die between the two CASes: that probe is
             * left to the probe-timeout, as one beyond the records. */
            if (mine && (i = hold(holders, f.since, mine)) >= 0) {
                g->holder = i;
                g->mine = mine;
            }
            return g->ticket;
        }
        if (f.st != AURA_BRK_HALF_OPEN || !mine
            || (i = take_over(holders, f.since, now_ms, who, mine,
                              &g->lost_pid)) < 0) {
            return g->ticket;           /* DENY */
        }
        /* The lost probe is mine if its round is still on; if another
         * probe's verdict ended it meanwhile, give the record back and
         * decide again on the new state. */
        unpack(apr_atomic_read64(word), &f);
        if (f.st == AURA_BRK_HALF_OPEN && f.since == g->period) {
            g->ticket = AURA_BRK_PROBE;
            g->retry_after_ms = 0;
            g->holder = i;
            g->mine = mine;
            g->took_over = 1;
            return g->ticket;
        }
        apr_atomic_cas64(&holders[i], 0, mine);
        if (tries == 2) {
            /* Rounds ending faster than this caller can look: refuse
             * once rather than loop. */
            memset(g, 0, sizeof(*g));
            g->holder = -1;
            g->retry_after_ms = c->cooldown_ms < 1000 ? c->cooldown_ms
                                                      : 1000;
            return AURA_BRK_DENY;
        }
    }
}

/* Clear g's record if it is still g's: 1, the ticket is still its
 * holder's (or has no record); 0, it was taken over. */
static int unhold(volatile apr_uint64_t *holders,
                  const aura_breaker_grant_t *g)
{
    if (!holders || g->ticket != AURA_BRK_PROBE || g->holder < 0
        || g->holder >= AURA_BRK_HOLDERS) {
        return 1;
    }
    return apr_atomic_cas64(&holders[g->holder], 0, g->mine) == g->mine;
}

/* A probe's verdict ended the round: the records of that round go (their
 * probes' verdicts no longer count), so that a new round never mistakes
 * them for its own. */
static void clear_period(volatile apr_uint64_t *holders,
                         apr_uint32_t period)
{
    int i;

    for (i = 0; i < AURA_BRK_HOLDERS; i++) {
        apr_uint64_t rec = apr_atomic_read64(&holders[i]);

        if (aura_breaker_holder(rec, period, NULL, NULL)) {
            apr_atomic_cas64(&holders[i], 0, rec);
        }
    }
}

aura_breaker_change_e aura_breaker_verdict_held(volatile apr_uint64_t *word,
                                                volatile apr_uint64_t *holders,
                                                const aura_breaker_conf_t *c,
                                                const aura_breaker_grant_t *g,
                                                int ok, apr_uint32_t now_ms)
{
    aura_breaker_change_e ch;

    if (!unhold(holders, g)) {
        return AURA_BRK_SAME;           /* taken over: not mine to say */
    }
    ch = verdict(word, c, g->ticket, &g->period, now_ms, ok);
    if (ch != AURA_BRK_SAME && g->ticket == AURA_BRK_PROBE && holders) {
        clear_period(holders, g->period);
    }
    return ch;
}

void aura_breaker_release_held(volatile apr_uint64_t *word,
                               volatile apr_uint64_t *holders,
                               const aura_breaker_grant_t *g)
{
    if (unhold(holders, g)) {
        release(word, g->ticket, &g->period);
    }
}
