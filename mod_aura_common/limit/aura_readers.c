/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_readers.c: the records of the connections reading their first
 * request, and the choice of whom to shed (see aura_readers.h).
 * Lock-free: a record's state changes by compare-and-swap of its word.
 */
#include "limit/aura_readers.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include <stdlib.h>
#include <string.h>

/* A record is 128 bytes: two cache lines, 64-byte aligned in a journal. */
typedef char reader_size_check[sizeof(aura_conn_reader_t) == 128 ? 1 : -1];

#define SEQ_ONE APR_UINT64_C(4)

apr_uint64_t aura_reader_claim(aura_conn_reader_t *r,
                               const aura_conn_reader_t *from)
{
    apr_uint64_t w = apr_atomic_read64(&r->word);
    apr_uint64_t now = ((w & ~APR_UINT64_C(3)) + SEQ_ONE)
                       | AURA_READER_READING;

    r->listener = from->listener;
    r->holder = from->holder;
    r->since = from->since;
    apr_atomic_set64(&r->deadline, from->deadline);
    r->cap = from->cap;
    r->port = from->port;
    r->bits = from->bits;
    r->h2 = from->h2;
    memcpy(r->prefix, from->prefix, sizeof(r->prefix));
    memcpy(r->local, from->local, sizeof(r->local));
    /* The fields before the word (a lock-prefixed exchange on this
     * platform, a full barrier): a shedder that sees READING sees them. */
    apr_atomic_xchg64(&r->word, now);
    return now;
}

int aura_reader_release(aura_conn_reader_t *r)
{
    for (;;) {
        apr_uint64_t w = apr_atomic_read64(&r->word);

        if (apr_atomic_cas64(&r->word, w & ~APR_UINT64_C(3), w) == w) {
            return (int)AURA_READER_STATE(w);
        }
    }
}

apr_status_t aura_reader_shed(aura_conn_reader_t *r, apr_uint64_t seen)
{
    if (AURA_READER_STATE(seen) != AURA_READER_READING) {
        return APR_EBUSY;
    }
    return apr_atomic_cas64(&r->word,
                            (seen & ~APR_UINT64_C(3)) | AURA_READER_SHED,
                            seen) == seen ? APR_SUCCESS : APR_EBUSY;
}

apr_size_t aura_readers_collect(aura_conn_reader_t *r, apr_size_t n,
                                apr_uint64_t listener, apr_uint64_t base,
                                aura_reader_view_t *out, apr_size_t room)
{
    apr_size_t i, k = 0;

    for (i = 0; i < n && k < room; i++) {
        apr_uint64_t w = apr_atomic_read64(&r[i].word);

        if (AURA_READER_STATE(w) != AURA_READER_READING
            || r[i].listener != listener) {
            continue;
        }
        out[k].holder = r[i].holder;
        out[k].since = r[i].since;
        out[k].word = w;
        out[k].index = base + i;
        /* Claimed again while we read it: skip, it is someone new. */
        if (apr_atomic_read64(&r[i].word) == w) {
            k++;
        }
    }
    return k;
}

/* By holder, then oldest first. */
static int by_holder(const void *a, const void *b)
{
    const aura_reader_view_t *x = a, *y = b;

    if (x->holder != y->holder) {
        return x->holder < y->holder ? -1 : 1;
    }
    if (x->since != y->since) {
        return x->since < y->since ? -1 : 1;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

aura_readers_pick_e aura_readers_pick(aura_reader_view_t *v, apr_size_t n,
                                      apr_uint64_t newcomer,
                                      aura_readers_choice_t *out)
{
    apr_size_t i, run, best = 0;

    out->victim = 0;
    out->top = out->mine = out->holders = 0;
    if (!n) {
        return AURA_READERS_REFUSE;
    }
    qsort(v, n, sizeof(*v), by_holder);
    /* Each run is one holder, its oldest reader first. */
    for (i = 0; i < n; i += run) {
        for (run = 1; i + run < n && v[i + run].holder == v[i].holder;
             run++) {
            continue;
        }
        out->holders++;
        if (v[i].holder == newcomer) {
            out->mine = run;
        }
        if (run > out->top || (run == out->top && v[i].since < v[best].since)) {
            out->top = run;
            best = i;
        }
    }
    /* A holder without a reader always gets one; a holder with some
     * only when it stays below the victim's holder after the swap, so
     * that two large holders never shed each other in turn (each shed
     * holds a worker until its child closes it). */
    if (out->mine && out->mine + 1 >= out->top) {
        return AURA_READERS_REFUSE;
    }
    out->victim = best;
    return AURA_READERS_SHED;
}
