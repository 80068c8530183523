/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_breaker.c: libFuzzer harness for the circuit-breaker state
 * machine (mod_aura_common/resilience/aura_breaker_fsm.c).
 *
 * aura-fuzz: -max_len=512
 *
 * Input: threshold, cooldown, probes and probe TTL (4 bytes each,
 * little-endian; values out of range are folded into it after
 * aura_breaker_conf_init was checked on them), the first clock reading
 * (4 bytes), then operations of 3 bytes: what (low 2 bits: acquire,
 * success, failure, release; the other bits pick one of the tickets
 * held), and a clock advance in ms (2 bytes; the clock wraps modulo
 * 2^32 as the real one does).
 *
 * Invariants: the state is never the unused value 3; probes in flight
 * only in half-open, never more than allowed nor more than the probe
 * tickets held; closed means fewer failures than the threshold; acquire
 * passes exactly when closed (without writing the word), denies with a
 * retry of 1 ms to one cooldown, and moves open to half-open only once
 * the cooldown is over; a PASS failure that reaches the threshold opens
 * the breaker and says so; a probe's verdict closes or reopens it; a
 * reported transition is the one the word shows.
 */
#include "aura_fuzz.h"

#include "resilience/aura_breaker_fsm.h"

#define MAX_TICKETS 32

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();       /* apr_atomic_*64 */
    return 0;
}

static uint32_t u32(const uint8_t **d, size_t *n)
{
    uint32_t v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        v |= (uint32_t)aura_fuzz_byte(d, n) << (8 * i);
    }
    return v;
}

static void check_word(apr_uint64_t w, const aura_breaker_conf_t *c,
                       int probes_held)
{
    apr_uint32_t failures, in_flight;
    aura_breaker_state_e st = aura_breaker_state(w, &failures, &in_flight);

    AURA_FUZZ_ASSERT((w & 3) != 3);
    AURA_FUZZ_ASSERT(st == AURA_BRK_CLOSED || st == AURA_BRK_OPEN
                     || st == AURA_BRK_HALF_OPEN);
    AURA_FUZZ_ASSERT(failures <= AURA_BRK_MAX_FAILURES);
    AURA_FUZZ_ASSERT(in_flight <= c->probes);
    AURA_FUZZ_ASSERT((int)in_flight <= probes_held);
    if (st != AURA_BRK_HALF_OPEN) {
        AURA_FUZZ_ASSERT(in_flight == 0);
    }
    if (st == AURA_BRK_CLOSED) {
        AURA_FUZZ_ASSERT(failures < c->threshold);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    aura_breaker_ticket_e tickets[MAX_TICKETS];
    volatile apr_uint64_t word = 0;
    aura_breaker_conf_t c;
    uint32_t threshold, cooldown, probes, ttl, now;
    int held = 0, probes_held = 0;
    apr_status_t rv;

    threshold = u32(&data, &size);
    cooldown = u32(&data, &size);
    probes = u32(&data, &size);
    ttl = u32(&data, &size);
    now = u32(&data, &size);

    rv = aura_breaker_conf_init(&c, threshold, cooldown, probes);
    AURA_FUZZ_ASSERT((rv == APR_SUCCESS)
                     == (threshold >= 1 && threshold <= AURA_BRK_MAX_FAILURES
                         && cooldown >= 1 && cooldown <= AURA_BRK_MAX_COOLDOWN
                         && probes >= 1 && probes <= AURA_BRK_MAX_PROBES));
    if (rv != APR_SUCCESS) {
        /* Small values reach every state quickly. */
        threshold = threshold % 8 + 1;
        cooldown = cooldown % 5000 + 1;
        probes = probes % 4 + 1;
        AURA_FUZZ_ASSERT(aura_breaker_conf_init(&c, threshold, cooldown,
                                                probes) == APR_SUCCESS);
    }
    c.probe_ttl_ms = ttl & 1 ? 0 : ttl % 60000;

    while (size >= 3) {
        unsigned int op = aura_fuzz_byte(&data, &size);
        uint32_t adv = aura_fuzz_byte(&data, &size);
        apr_uint64_t before = word, after;
        apr_uint32_t f0, in0, f1, in1, retry = 12345;
        aura_breaker_state_e s0, s1;
        aura_breaker_change_e ch = (aura_breaker_change_e)99;

        adv |= (uint32_t)aura_fuzz_byte(&data, &size) << 8;
        now += adv;
        s0 = aura_breaker_state(before, &f0, &in0);

        if ((op & 3) == 0) {
            aura_breaker_ticket_e t;

            t = aura_breaker_acquire(&word, &c, now, &ch, &retry);
            after = word;
            s1 = aura_breaker_state(after, &f1, &in1);
            AURA_FUZZ_ASSERT(t == AURA_BRK_DENY || t == AURA_BRK_PASS
                             || t == AURA_BRK_PROBE);
            AURA_FUZZ_ASSERT(t == AURA_BRK_DENY ? retry >= 1
                             && retry <= c.cooldown_ms : retry == 0);
            AURA_FUZZ_ASSERT((t == AURA_BRK_PASS) == (s0 == AURA_BRK_CLOSED));
            if (t != AURA_BRK_PROBE) {
                AURA_FUZZ_ASSERT(after == before);
                AURA_FUZZ_ASSERT(ch == AURA_BRK_SAME);
            }
            else {
                AURA_FUZZ_ASSERT(s1 == AURA_BRK_HALF_OPEN);
                AURA_FUZZ_ASSERT(in1 >= 1);
                /* since is the last transition (issue #16): a probe
                 * moves it only when it opens half-open or, past the
                 * probe timeout, starts a new round of probes. */
                AURA_FUZZ_ASSERT(s0 == AURA_BRK_OPEN
                                 ? aura_breaker_since(after) == now
                                 : aura_breaker_since(after)
                                       == aura_breaker_since(before)
                                   || (aura_breaker_since(after) == now
                                       && in1 == 1));
                if (s0 == AURA_BRK_OPEN) {
                    AURA_FUZZ_ASSERT(ch == AURA_BRK_TO_HALF_OPEN && in1 == 1);
                    /* Only after the cooldown (or a reading from so far
                     * ahead that it wrapped: see aura_breaker_fsm.h). */
                    AURA_FUZZ_ASSERT(now - aura_breaker_since(before)
                                     >= c.cooldown_ms);
                }
                else {
                    AURA_FUZZ_ASSERT(ch == AURA_BRK_SAME);
                    AURA_FUZZ_ASSERT(in1 == in0 + 1 || in1 == 1);
                }
            }
            if (t != AURA_BRK_DENY) {
                if (held == MAX_TICKETS) {
                    /* The oldest goes back without a verdict. */
                    aura_breaker_release(&word, tickets[0]);
                    probes_held -= tickets[0] == AURA_BRK_PROBE;
                    memmove(tickets, tickets + 1,
                            sizeof(tickets[0]) * (MAX_TICKETS - 1));
                    held--;
                }
                tickets[held++] = t;
                probes_held += t == AURA_BRK_PROBE;
            }
        }
        else if (held) {
            int k = (int)(op >> 2) % held;
            aura_breaker_ticket_e t = tickets[k];

            if ((op & 3) == 3) {
                aura_breaker_release(&word, t);
                ch = AURA_BRK_SAME;
            }
            else if ((op & 3) == 1) {
                ch = aura_breaker_success(&word, &c, t, now);
            }
            else {
                ch = aura_breaker_failure(&word, &c, t, now);
            }
            after = word;
            s1 = aura_breaker_state(after, &f1, &in1);
            memmove(tickets + k, tickets + k + 1,
                    sizeof(tickets[0]) * (size_t)(held - k - 1));
            held--;
            probes_held -= t == AURA_BRK_PROBE;
            switch (ch) {
            case AURA_BRK_TO_OPEN:
                AURA_FUZZ_ASSERT((op & 3) == 2 && s1 == AURA_BRK_OPEN);
                AURA_FUZZ_ASSERT(aura_breaker_since(after) == now);
                break;
            case AURA_BRK_TO_CLOSED:
                AURA_FUZZ_ASSERT((op & 3) == 1 && t == AURA_BRK_PROBE);
                AURA_FUZZ_ASSERT(s0 == AURA_BRK_HALF_OPEN);
                AURA_FUZZ_ASSERT(s1 == AURA_BRK_CLOSED && f1 == 0);
                break;
            case AURA_BRK_SAME:
                AURA_FUZZ_ASSERT(s1 == s0);
                break;
            default:
                AURA_FUZZ_ASSERT(0);
            }
            if (t == AURA_BRK_PASS && s0 == AURA_BRK_CLOSED
                && (op & 3) == 2) {
                /* A failure counts; the threshold opens. */
                if (f0 + 1 >= c.threshold) {
                    AURA_FUZZ_ASSERT(ch == AURA_BRK_TO_OPEN);
                }
                else {
                    AURA_FUZZ_ASSERT(s1 == AURA_BRK_CLOSED && f1 == f0 + 1);
                }
            }
            if (t == AURA_BRK_PROBE && s0 == AURA_BRK_HALF_OPEN
                && (op & 3) != 3) {
                AURA_FUZZ_ASSERT(ch == ((op & 3) == 1 ? AURA_BRK_TO_CLOSED
                                                      : AURA_BRK_TO_OPEN));
            }
        }
        check_word(word, &c, probes_held);
    }
    return 0;
}
