/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_readers.c: the reading connections' records and the choice of
 * whom to shed when a listener's reading budget is full
 * (aura_readers.c; issue #28, point 3): holders by address prefix (one
 * IPv6 /48 is one holder whatever its /64s), the largest holder's
 * oldest reader shed, the newcomer refused only when its own holder
 * has readers and would not stay below the largest after the swap, and
 * a record claimed again never shed
 * by a shedder that saw its previous connection.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "limit/aura_readers.h"

static void test_prefix_v4(void **state)
{
    unsigned char a[4] = { 192, 0, 2, 7 }, out[17];
    char buf[64];
    int bits = -1;

    (void)state;
    assert_int_equal(aura_prefix_bytes(4, a, 32, 48, out, &bits), 5);
    assert_int_equal(bits, 32);
    assert_int_equal(out[0], 4);
    assert_memory_equal(out + 1, a, 4);
    assert_string_equal(aura_prefix_text(out, bits, buf, sizeof(buf)),
                        "192.0.2.7/32");
    assert_int_equal(aura_prefix_bytes(4, a, 24, 48, out, &bits), 5);
    assert_string_equal(aura_prefix_text(out, bits, buf, sizeof(buf)),
                        "192.0.2.0/24");
}

/* An IPv4-mapped IPv6 address is its IPv4 address. */
static void test_prefix_mapped(void **state)
{
    unsigned char m[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                            127, 0, 0, 2 };
    unsigned char v4[4] = { 127, 0, 0, 2 }, a[17], b[17];
    int bits;

    (void)state;
    assert_int_equal(aura_prefix_bytes(6, m, 32, 48, a, &bits), 5);
    assert_int_equal(bits, 32);
    aura_prefix_bytes(4, v4, 32, 48, b, &bits);
    assert_memory_equal(a, b, 17);
}

/* Issue #28: one IPv6 host has any number of /64s; at /48 they are one
 * holder, a neighbouring /48 is another. */
static void test_prefix_v6(void **state)
{
    unsigned char x[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 1,
                            1, 2, 3, 4, 5, 6, 7, 8 };
    unsigned char y[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0xff, 0xfe,
                            9, 9, 9, 9, 9, 9, 9, 9 };
    unsigned char z[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 1,
                            1, 2, 3, 4, 5, 6, 7, 8 };
    unsigned char a[17], b[17], c[17];
    char buf[64];
    int bits;

    (void)state;
    assert_int_equal(aura_prefix_bytes(6, x, 32, 48, a, &bits), 17);
    assert_int_equal(bits, 48);
    aura_prefix_bytes(6, y, 32, 48, b, &bits);
    aura_prefix_bytes(6, z, 32, 48, c, &bits);
    assert_memory_equal(a, b, 17);
    assert_memory_not_equal(a, c, 17);
    assert_string_equal(aura_prefix_text(a, bits, buf, sizeof(buf)),
                        "2001:db8:1::/48");
    /* At /64 they are two holders; an odd width cuts inside a byte. */
    aura_prefix_bytes(6, x, 32, 64, a, &bits);
    aura_prefix_bytes(6, y, 32, 64, b, &bits);
    assert_memory_not_equal(a, b, 17);
    aura_prefix_bytes(6, y, 32, 52, b, &bits);
    assert_int_equal(b[7], 0xf0);
    assert_int_equal(b[8], 0);
    assert_string_equal(aura_prefix_text(b, bits, buf, sizeof(buf)),
                        "2001:db8:1:f000::/52");
}

/* A pick case: readers as (holder, since), the newcomer, the expected
 * decision and, for SHED, the victim's (holder, since). */
typedef struct {
    const char *name;
    const char *readers;            /* "A1 B2 ...": holder letter, since */
    char newcomer;
    aura_readers_pick_e want;
    char victim_holder;
    int victim_since;
} pick_case_t;

static const pick_case_t picks[] = {
    { "empty: nothing to shed", "", 'L', AURA_READERS_REFUSE, 0, 0 },
    /* #28 figure: 3 addresses x 4 fill a budget of 12. */
    { "3 x 4, a newcomer: the oldest of the largest",
      "A5 A6 A7 A8 B2 B3 B9 B10 C4 C11 C12 C13", 'L',
      AURA_READERS_SHED, 'B', 2 },
    { "3 x 4, one of the 3 again: refused",
      "A5 A6 A7 A8 B2 B3 B9 B10 C4 C11 C12 C13", 'A',
      AURA_READERS_REFUSE, 0, 0 },
    { "one holder has all: a newcomer sheds its oldest",
      "A9 A3 A7 A8 A4 A5", 'L', AURA_READERS_SHED, 'A', 3 },
    { "one holder has all: it is refused", "A9 A3 A7 A8 A4 A5", 'A',
      AURA_READERS_REFUSE, 0, 0 },
    { "a holder two below the largest sheds the largest",
      "A1 A2 A3 A4 A5 B6 B7 B8", 'B', AURA_READERS_SHED, 'A', 1 },
    { "one below the largest: refused, no shedding in turn",
      "A1 A2 A3 A4 A5 B6 B7 B8 B9", 'B', AURA_READERS_REFUSE, 0, 0 },
    { "after a shed: 3 4 4, the one at 3 is refused",
      "A1 A2 A3 B4 B5 B6 B7 C8 C9 C10 C11 L12", 'A',
      AURA_READERS_REFUSE, 0, 0 },
    { "a legitimate reader already in, still below: sheds",
      "A1 A2 A3 L4", 'L', AURA_READERS_SHED, 'A', 1 },
    { "many holders of one each: the oldest reader",
      "A7 B3 C9 D2 E8 F6", 'L', AURA_READERS_SHED, 'D', 2 },
    { "many holders of one, the newcomer one of them: refused",
      "A7 B3 C9 D2 E8 F6", 'C', AURA_READERS_REFUSE, 0, 0 },
    { "tie between two largest: the older one",
      "A5 A6 B4 B9 C1", 'L', AURA_READERS_SHED, 'B', 4 },
};

static apr_size_t parse(const char *s, aura_reader_view_t *v)
{
    apr_size_t n = 0;

    while (*s) {
        char *end;

        if (*s == ' ') {
            s++;
            continue;
        }
        v[n].holder = (apr_uint64_t)(unsigned char)*s * 1000003u;
        v[n].since = strtoull(s + 1, &end, 10);
        v[n].word = 1;
        v[n].index = n;
        n++;
        s = end;
    }
    return n;
}

static void test_pick(void **state)
{
    apr_size_t k;

    (void)state;
    for (k = 0; k < sizeof(picks) / sizeof(picks[0]); k++) {
        const pick_case_t *c = &picks[k];
        aura_reader_view_t v[32];
        aura_readers_choice_t ch;
        apr_size_t n = parse(c->readers, v);
        aura_readers_pick_e got;

        got = aura_readers_pick(v, n, (apr_uint64_t)(unsigned char)
                                      c->newcomer * 1000003u, &ch);
        if (got != c->want) {
            fail_msg("%s: decision %d, want %d", c->name, got, c->want);
        }
        if (got == AURA_READERS_SHED
            && (v[ch.victim].holder != (apr_uint64_t)(unsigned char)
                                       c->victim_holder * 1000003u
                || v[ch.victim].since != (apr_uint64_t)c->victim_since)) {
            fail_msg("%s: shed (%c, %llu), want (%c, %d)", c->name,
                     (char)(v[ch.victim].holder / 1000003u),
                     (unsigned long long)v[ch.victim].since,
                     c->victim_holder, c->victim_since);
        }
    }
}

static aura_conn_reader_t sample(apr_uint64_t listener, apr_uint64_t holder,
                                 apr_uint64_t since)
{
    aura_conn_reader_t r;

    memset(&r, 0, sizeof(r));
    r.listener = listener;
    r.holder = holder;
    r.since = since;
    return r;
}

/* Collect skips free, shed and other listeners' records; a shedder that
 * saw a record before it was freed and claimed again loses. */
static void test_records(void **state)
{
    aura_conn_reader_t r[6], s;
    aura_reader_view_t v[6];
    apr_uint64_t w[6];
    int i;

    (void)state;
    memset(r, 0, sizeof(r));
    for (i = 0; i < 5; i++) {
        s = sample(i == 4 ? 8 : 7, 100 + i, 10 + i);
        w[i] = aura_reader_claim(&r[i], &s);
        assert_int_equal(AURA_READER_STATE(w[i]), AURA_READER_READING);
    }
    assert_int_equal(aura_reader_shed(&r[1], w[1]), APR_SUCCESS);
    assert_int_equal(aura_reader_shed(&r[1], w[1]), APR_EBUSY);
    assert_int_equal(aura_readers_collect(r, 6, 7, 40, v, 6), 3);
    assert_true(v[0].index == 40 && v[1].index == 42 && v[2].index == 43);
    assert_true(v[1].holder == 102 && v[1].since == 12);
    assert_int_equal(aura_readers_collect(r, 6, 7, 0, v, 2), 2);
    /* The shed one's owner learns it was shed. */
    assert_int_equal(aura_reader_release(&r[1]), AURA_READER_SHED);
    assert_int_equal(aura_reader_release(&r[0]), AURA_READER_READING);
    /* r[2] seen, then freed and claimed for another connection. */
    assert_int_equal(aura_reader_release(&r[2]), AURA_READER_READING);
    s = sample(7, 555, 99);
    assert_true(aura_reader_claim(&r[2], &s) != w[2]);
    assert_int_equal(aura_reader_shed(&r[2], w[2]), APR_EBUSY);
    assert_int_equal(aura_readers_collect(r, 6, 7, 0, v, 6), 2);
}

/* Threads racing as children do: each owner claims and releases its
 * own records over and over, shedders collect and shed whatever they
 * see.  Every successful shed is learnt by exactly one release of its
 * owner (never lost on a record claimed again, never counted twice). */
#define OWNERS  3
#define PER     8
#define ROUNDS  20000

static aura_conn_reader_t race[OWNERS * PER];
static volatile int racing;

typedef struct {
    int id;
    unsigned long n;                /* releases that found SHED, or sheds */
} racer_t;

static void *owner(void *arg)
{
    racer_t *o = arg;
    int round, i;

    for (round = 0; round < ROUNDS; round++) {
        for (i = 0; i < PER; i++) {
            aura_conn_reader_t me;

            memset(&me, 0, sizeof(me));
            me.listener = 7;
            me.holder = (apr_uint64_t)o->id;
            me.since = (apr_uint64_t)round;
            aura_reader_claim(&race[o->id * PER + i], &me);
        }
        for (i = 0; i < PER; i++) {
            if (aura_reader_release(&race[o->id * PER + i])
                == AURA_READER_SHED) {
                o->n++;
            }
        }
    }
    return NULL;
}

static void *shedder(void *arg)
{
    racer_t *s = arg;
    aura_reader_view_t v[OWNERS * PER];

    while (racing) {
        apr_size_t k = aura_readers_collect(race, OWNERS * PER, 7, 0, v,
                                            OWNERS * PER), i;

        for (i = 0; i < k; i++) {
            if (aura_reader_shed(&race[v[i].index], v[i].word)
                == APR_SUCCESS) {
                s->n++;
            }
        }
    }
    return NULL;
}

static void test_threads(void **state)
{
    pthread_t o[OWNERS], sh[2];
    racer_t ro[OWNERS], rs[2];
    unsigned long released = 0, shed = 0;
    int i;

    (void)state;
    memset(race, 0, sizeof(race));
    racing = 1;
    for (i = 0; i < 2; i++) {
        rs[i].id = i;
        rs[i].n = 0;
        assert_int_equal(pthread_create(&sh[i], NULL, shedder, &rs[i]), 0);
    }
    for (i = 0; i < OWNERS; i++) {
        ro[i].id = i;
        ro[i].n = 0;
        assert_int_equal(pthread_create(&o[i], NULL, owner, &ro[i]), 0);
    }
    for (i = 0; i < OWNERS; i++) {
        pthread_join(o[i], NULL);
        released += ro[i].n;
    }
    racing = 0;
    for (i = 0; i < 2; i++) {
        pthread_join(sh[i], NULL);
        shed += rs[i].n;
    }
    assert_true(shed > 0);
    assert_true(shed == released);
    for (i = 0; i < OWNERS * PER; i++) {
        assert_int_equal(AURA_READER_STATE(race[i].word), AURA_READER_FREE);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_v4),
        cmocka_unit_test(test_prefix_mapped),
        cmocka_unit_test(test_prefix_v6),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_threads),
    };

    return cmocka_run_group_tests_name("readers", tests, NULL, NULL);
}
