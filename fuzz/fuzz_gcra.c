/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_gcra.c: libFuzzer harness for the GCRA arithmetic
 * (mod_aura_common/limit/aura_gcra.c).
 *
 * aura-fuzz: -max_len=512
 *
 * Input: rate, period_s, burst, the stored TAT and the first clock
 * reading (8 bytes each, little-endian), a byte of flags, then steps of
 * 3 bytes: a clock advance (2 bytes) and its unit (the low 2 bits of the
 * third: ns, us, ms, s).  Flags bit 0 lets the clock step backwards too
 * (the third byte's bit 7).  The first reading is kept below 2^62 ns
 * (146 years of clock); the stored TAT is anything (a corrupt word).
 *
 * Invariants: aura_gcra_init accepts exactly the documented ranges and
 * keeps tolerance = interval * burst; each decision is consistent (an
 * admission stores max(TAT, now) + interval, at most tolerance ahead, a
 * refusal stores the TAT clamped to now + tolerance and says when to
 * retry, within one interval; remaining < burst; no arithmetic wraps);
 * with a clock that never goes back, the admissions over [t0, tN] are
 * at most burst + (tN - t0) / interval.
 */
#include "aura_fuzz.h"

#include "limit/aura_gcra.h"

#define NS_PER_S 1000000000ULL
#define MAX_TOLERANCE (NS_PER_S * 86400)
#define CLOCK_MAX (1ULL << 62)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void check_init(const aura_gcra_t *g, apr_status_t rv,
                       uint64_t rate, uint64_t period, uint64_t burst)
{
    int valid = rate && period && burst && period <= 86400;
    uint64_t interval = valid ? period * NS_PER_S / rate : 0;

    valid = valid && interval && burst <= MAX_TOLERANCE / interval;
    AURA_FUZZ_ASSERT((rv == APR_SUCCESS) == valid);
    if (valid) {
        AURA_FUZZ_ASSERT(g->interval == interval);
        AURA_FUZZ_ASSERT(g->burst == burst);
        AURA_FUZZ_ASSERT(g->tolerance == interval * burst);
        AURA_FUZZ_ASSERT(g->tolerance <= MAX_TOLERANCE);
    }
}

static void check_decision(const aura_gcra_t *g, uint64_t now, uint64_t tat,
                           const aura_gcra_result_t *r)
{
    uint64_t clamped = tat > now + g->tolerance ? now + g->tolerance : tat;
    uint64_t base = clamped > now ? clamped : now;

    if (r->admitted) {
        AURA_FUZZ_ASSERT(r->tat == base + g->interval);
        AURA_FUZZ_ASSERT(r->tat > now);
        AURA_FUZZ_ASSERT(r->tat - now <= g->tolerance);
        AURA_FUZZ_ASSERT(r->retry_after == 0);
        AURA_FUZZ_ASSERT(r->remaining < g->burst);
        AURA_FUZZ_ASSERT(r->reset == r->tat - now);
    }
    else {
        AURA_FUZZ_ASSERT(r->admitted == 0);
        AURA_FUZZ_ASSERT(r->tat == clamped);
        AURA_FUZZ_ASSERT(r->retry_after > 0);
        AURA_FUZZ_ASSERT(r->retry_after <= g->interval);
        AURA_FUZZ_ASSERT(r->remaining == 0);
        AURA_FUZZ_ASSERT(r->reset <= g->tolerance);
        /* Refused only when admitting would run past the tolerance. */
        AURA_FUZZ_ASSERT(base + g->interval - now > g->tolerance);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t units[] = { 1, 1000, 1000000, NS_PER_S };
    uint64_t rate, period, burst, tat, now, t0, admitted = 0;
    unsigned int flags;
    int monotonic = 1;
    aura_gcra_t g;
    apr_status_t rv;

    rate = aura_fuzz_u64(&data, &size);
    period = aura_fuzz_u64(&data, &size);
    burst = aura_fuzz_u64(&data, &size);
    tat = aura_fuzz_u64(&data, &size);
    now = aura_fuzz_u64(&data, &size) % CLOCK_MAX;
    flags = aura_fuzz_byte(&data, &size);

    memset(&g, 0, sizeof(g));
    rv = aura_gcra_init(&g, rate, period, burst);
    check_init(&g, rv, rate, period, burst);
    if (rv != APR_SUCCESS) {
        /* The likely configurations too, so the decisions get fuzzed
         * whatever the first 24 bytes are. */
        rate = rate % 1000 + 1;
        period = period % 3600 + 1;
        burst = burst % 100 + 1;
        rv = aura_gcra_init(&g, rate, period, burst);
        check_init(&g, rv, rate, period, burst);
        if (rv != APR_SUCCESS) {
            return 0;
        }
    }
    t0 = now;
    for (;;) {
        aura_gcra_result_t r;

        memset(&r, 0x5a, sizeof(r));
        aura_gcra_decide(&g, now, tat, &r);
        check_decision(&g, now, tat, &r);
        if (r.admitted) {
            admitted++;
            if (monotonic) {
                AURA_FUZZ_ASSERT(admitted
                                 <= g.burst + (now - t0) / g.interval);
            }
        }
        tat = r.tat;
        if (size < 3) {
            break;
        }
        {
            uint64_t step = aura_fuzz_byte(&data, &size);
            unsigned int u;

            step |= (uint64_t)aura_fuzz_byte(&data, &size) << 8;
            u = aura_fuzz_byte(&data, &size);
            step *= units[u & 3];
            if ((flags & 1) && (u & 0x80)) {
                monotonic = 0;
                now = step > now ? 0 : now - step;
            }
            else {
                now += step;
                if (now >= CLOCK_MAX) {
                    break;
                }
            }
        }
    }
    return 0;
}
