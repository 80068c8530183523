/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_quota_share.c: the actor quota's local record (see aura_quota_share.h).
 */
#include "limit/aura_quota_share.h"

#include "apr_atomic.h"

#include <stddef.h>
#include <string.h>

#define WIN_MASK    APR_UINT64_C(0xffffffff)
#define CLAIM_BIT   (APR_UINT64_C(1) << 31)

static apr_uint64_t pack(apr_uint64_t window, apr_uint64_t low)
{
    return ((window & WIN_MASK) << 32) | (low & WIN_MASK);
}

static apr_uint64_t win_of(apr_uint64_t word)
{
    return word >> 32;
}

/* a later than b, on 32-bit window numbers that may wrap. */
static int later(apr_uint64_t a, apr_uint64_t b)
{
    return (apr_int32_t)(apr_uint32_t)((a - b) & WIN_MASK) > 0;
}

static apr_uint64_t clamp(apr_int64_t n)
{
    return n <= 0 ? 0 : (apr_uint64_t)n > AURA_FALLBACK_COUNT_MAX
                        ? AURA_FALLBACK_COUNT_MAX : (apr_uint64_t)n;
}

apr_int64_t aura_fallback_budget(apr_int64_t limit, apr_int64_t instances,
                                 apr_int64_t seen)
{
    apr_int64_t n = instances > 0 ? instances : 1;

    if (seen <= 0) {
        return limit / n > 0 ? limit / n : 1;
    }
    return seen >= limit ? 0 : (limit - seen) / n;
}

static aura_fallback_slot_t *find(aura_fallback_slot_t *set,
                                  apr_uint64_t key)
{
    int i;

    for (i = 0; i < AURA_LIMITER_WAYS; i++) {
        if (apr_atomic_read64(&set[i].key) == key) {
            return &set[i];
        }
    }
    return NULL;
}

/* No requests admitted locally and not yet handed over: the record
 * holds only Redis's last count, a hint that is cheap to lose (the
 * actor then gets a whole share in the window Redis dies in, as before
 * 0.5.0). */
static int weak(aura_fallback_slot_t *r)
{
    return (apr_atomic_read64(&r->local) & WIN_MASK) == 0;
}

/* A record for a key not in the set: the first never-used one, else the
 * one lapsed longest, else the weak one kept longest ago.  NULL when
 * every record holds local admissions still live (*full) or another
 * request took the one we chose. */
static aura_fallback_slot_t *claim(aura_fallback_slot_t *set,
                                   apr_uint64_t key, apr_uint64_t now,
                                   int *full)
{
    aura_fallback_slot_t *victim = NULL, *soft = NULL;
    apr_uint64_t victim_until = 0, soft_until = 0, old;
    int i;

    *full = 0;
    for (i = 0; i < AURA_LIMITER_WAYS; i++) {
        apr_uint64_t k = apr_atomic_read64(&set[i].key);
        apr_uint64_t until = apr_atomic_read64(&set[i].until);

        if (!k) {
            victim = &set[i];
            break;
        }
        if (until <= now && (!victim || until < victim_until)) {
            victim = &set[i];
            victim_until = until;
        }
        else if (until > now && weak(&set[i])
                 && (!soft || until < soft_until)) {
            soft = &set[i];
            soft_until = until;
        }
    }
    if (!victim) {
        victim = soft;
    }
    if (!victim) {
        *full = 1;
        return NULL;
    }
    old = apr_atomic_read64(&victim->key);
    if (old == key) {
        return victim;
    }
    if ((!old || apr_atomic_read64(&victim->until) <= now || weak(victim))
        && apr_atomic_cas64(&victim->key, key, old) == old) {
        /* The words are the previous key's (possibly of another window
         * length, whose numbers mean something else): a new key starts
         * with none.  A request of the previous key racing with this
         * may have counted one local admission here: it is lost with
         * the record, the one imprecision of a take-over. */
        apr_atomic_set64(&victim->seen, 0);
        apr_atomic_set64(&victim->local, 0);
        return victim;
    }
    return NULL;
}

aura_fallback_slot_t *aura_fallback_slot(aura_fallback_slot_t *slots,
                                         apr_uint64_t sets, apr_uint64_t key,
                                         apr_uint64_t now,
                                         apr_uint64_t keep_ns)
{
    aura_fallback_slot_t *set, *slot = NULL;
    apr_uint64_t until, want = now + keep_ns;
    int full, tries;

    key = key ? key : 1;
    set = slots + (key & (sets - 1)) * AURA_LIMITER_WAYS;
    for (tries = 0; !slot && tries < 4; tries++) {
        slot = find(set, key);
        if (!slot) {
            slot = claim(set, key, now, &full);
            if (full) {
                return NULL;
            }
        }
    }
    if (!slot) {
        return NULL;
    }
    while ((until = apr_atomic_read64(&slot->until)) < want
           && apr_atomic_cas64(&slot->until, want, until) != until) {
        continue;
    }
    return slot;
}

void aura_fallback_seen(aura_fallback_slot_t *s, apr_uint64_t window,
                        apr_int64_t count)
{
    apr_uint64_t old, w = window & WIN_MASK, c = clamp(count);

    /* Local admissions of a window before the previous one can no
     * longer be handed over (the script keeps two windows) nor decide
     * anything: dropped, so that the record is a mere hint again, which
     * a newcomer may take over (claim()). */
    old = apr_atomic_read64(&s->local);
    if ((old & WIN_MASK) && !(old & CLAIM_BIT)
        && win_of(old) != w && win_of(old) != ((window - 1) & WIN_MASK)
        && !later(win_of(old), w)) {
        apr_atomic_cas64(&s->local, 0, old);
    }
    for (;;) {
        old = apr_atomic_read64(&s->seen);
        if (old && win_of(old) == w ? (old & WIN_MASK) >= c
                                    : old && later(win_of(old), w)) {
            return;
        }
        if (apr_atomic_cas64(&s->seen, pack(w, c), old) == old) {
            return;
        }
    }
}

apr_int64_t aura_fallback_seen_count(aura_fallback_slot_t *s,
                                     apr_uint64_t window)
{
    apr_uint64_t word = apr_atomic_read64(&s->seen);

    return word && win_of(word) == (window & WIN_MASK)
           ? (apr_int64_t)(word & WIN_MASK) : 0;
}

void aura_fallback_take(aura_fallback_slot_t *s, apr_int64_t limit,
                        apr_int64_t instances, apr_uint64_t window,
                        aura_fallback_result_t *out)
{
    apr_uint64_t old, w, claimed, count;

    memset(out, 0, sizeof(*out));
    for (;;) {
        old = apr_atomic_read64(&s->local);
        w = window & WIN_MASK;
        claimed = 0;
        count = 0;
        /* A record ahead of the clock (the wall clock stepped back)
         * keeps its window: counting on in it never admits more. */
        if (old && (win_of(old) == w || later(win_of(old), w))) {
            w = win_of(old);
            claimed = old & CLAIM_BIT;
            count = old & (CLAIM_BIT - 1);
        }
        out->budget = aura_fallback_budget(limit, instances,
                                           aura_fallback_seen_count(s, w));
        if ((apr_int64_t)count + 1 > out->budget
            || count >= AURA_FALLBACK_COUNT_MAX) {
            out->admitted = 0;
            out->used = (apr_int64_t)count;
            return;
        }
        if (apr_atomic_cas64(&s->local, pack(w, claimed | (count + 1)), old)
            == old) {
            out->admitted = 1;
            out->used = (apr_int64_t)count + 1;
            return;
        }
    }
}

apr_int64_t aura_fallback_claim(aura_fallback_slot_t *s, apr_uint64_t window,
                                apr_uint64_t *claimed_window)
{
    apr_uint64_t old, w, count;

    for (;;) {
        old = apr_atomic_read64(&s->local);
        w = win_of(old);
        count = old & (CLAIM_BIT - 1);
        if (!count || (old & CLAIM_BIT)) {
            return 0;
        }
        if (w == (window & WIN_MASK)) {
            *claimed_window = window;
        }
        else if (w == ((window - 1) & WIN_MASK)) {
            *claimed_window = window - 1;
        }
        else {
            return 0;   /* older: neither of the script's windows */
        }
        if (apr_atomic_cas64(&s->local, old | CLAIM_BIT, old) == old) {
            return (apr_int64_t)count;
        }
    }
}

void aura_fallback_settle(aura_fallback_slot_t *s, apr_uint64_t window,
                          apr_int64_t count, int reported)
{
    apr_uint64_t old, left;

    for (;;) {
        old = apr_atomic_read64(&s->local);
        if (win_of(old) != (window & WIN_MASK) || !(old & CLAIM_BIT)) {
            return;     /* a new window began: no claim is left on it */
        }
        left = old & (CLAIM_BIT - 1);
        if (reported) {
            left -= (apr_uint64_t)count < left ? (apr_uint64_t)count : left;
        }
        if (apr_atomic_cas64(&s->local, pack(window, left), old) == old) {
            return;
        }
    }
}

apr_status_t aura_fallback_validate(aura_fallback_slot_t *slots,
                                    apr_uint64_t sets, apr_uint64_t now,
                                    aura_limiter_census_t *out)
{
    return aura_table_census(slots, sizeof(*slots),
                             offsetof(aura_fallback_slot_t, key),
                             offsetof(aura_fallback_slot_t, until),
                             sets, now, out);
}
