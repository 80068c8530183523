/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_endrule.c: the rules of ending a stream with its credential
 * (aura_endrule.c, issue #32 point 3): the clock's verdict, the close
 * frame, and the WebSocket frame tracker, table-driven.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "resilience/aura_endrule.h"

static const struct {
    apr_time_t key_expires, token_exp, now;
    int want;
} clock_rows[] = {
    { 0, 0, 5, AURA_END_ALIVE },                /* nothing expires */
    { 10, 0, 9, AURA_END_ALIVE },
    { 10, 0, 10, AURA_END_KEY_EXPIRED },        /* at the instant: over */
    { 0, 10, 10, AURA_END_TOKEN_EXPIRED },
    { 0, 10, 9, AURA_END_ALIVE },
    { 10, 10, 11, AURA_END_KEY_EXPIRED },       /* the key is named first */
    { 20, 10, 11, AURA_END_TOKEN_EXPIRED },
};

static void test_clock(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(clock_rows) / sizeof(clock_rows[0]); i++) {
        assert_int_equal(aura_end_by_clock(clock_rows[i].key_expires,
                                           clock_rows[i].token_exp,
                                           clock_rows[i].now),
                         clock_rows[i].want);
    }
    assert_string_equal(aura_end_reason_name(AURA_END_BLOCKED), "blocked");
    assert_string_equal(aura_end_reason_name(AURA_END_KEY_REVOKED),
                        "key_revoked");
    assert_string_equal(aura_end_reason_name(-1), "unknown");
    assert_string_equal(aura_end_reason_name(AURA_END_REASONS), "unknown");
}

static void test_close_frame(void **state)
{
    unsigned char buf[AURA_WS_CLOSE_MAX];
    char longer[300];
    apr_size_t n;

    (void)state;
    n = aura_ws_close_frame(buf, AURA_WS_CLOSE_POLICY, "key_revoked");
    assert_int_equal(n, 4 + 11);
    assert_int_equal(buf[0], 0x88);
    assert_int_equal(buf[1], 13);
    assert_int_equal(buf[2] << 8 | buf[3], 1008);
    assert_memory_equal(buf + 4, "key_revoked", 11);
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    /* A control frame's payload is at most 125 bytes. */
    n = aura_ws_close_frame(buf, 1008, longer);
    assert_int_equal(n, AURA_WS_CLOSE_MAX);
    assert_int_equal(buf[1], 125);
}

/* Feeds the bytes one piece of size step at a time. */
static int track_in_steps(aura_ws_tracker_t *t, const unsigned char *d,
                          size_t len, size_t step)
{
    size_t off;

    for (off = 0; off < len; off += step) {
        if (aura_ws_track(t, d + off, len - off < step ? len - off : step)) {
            return -1;
        }
    }
    return 0;
}

static void test_tracker(void **state)
{
    /* text "hi", then a 300-byte binary frame (16-bit length), then a
     * masked 1-byte frame, then a 64-bit length of 2 bytes. */
    unsigned char s[2 + 2 + 4 + 300 + 6 + 1 + 10 + 2];
    aura_ws_tracker_t t;
    size_t n = 0, step;

    (void)state;
    s[n++] = 0x81; s[n++] = 2; s[n++] = 'h'; s[n++] = 'i';
    s[n++] = 0x82; s[n++] = 126; s[n++] = 300 >> 8; s[n++] = 300 & 0xff;
    memset(s + n, 'b', 300); n += 300;
    s[n++] = 0x81; s[n++] = 0x81; memset(s + n, 0, 4); n += 4; s[n++] = 'm';
    s[n++] = 0x82; s[n++] = 127; memset(s + n, 0, 7); n += 7; s[n++] = 2;
    s[n++] = 'z'; s[n++] = 'z';
    assert_int_equal(n, sizeof(s));
    for (step = 1; step <= sizeof(s); step++) {
        memset(&t, 0, sizeof(t));
        assert_int_equal(track_in_steps(&t, s, sizeof(s), step), 0);
        assert_true(aura_ws_at_boundary(&t));
    }
    /* Inside a header, inside a payload: not a boundary. */
    memset(&t, 0, sizeof(t));
    assert_int_equal(aura_ws_track(&t, s, 1), 0);
    assert_false(aura_ws_at_boundary(&t));
    assert_int_equal(aura_ws_track(&t, s + 1, 2), 0);
    assert_false(aura_ws_at_boundary(&t));
    assert_int_equal(aura_ws_track(&t, s + 3, 1), 0);
    assert_true(aura_ws_at_boundary(&t));
    /* An empty frame (a ping without payload) ends with its header. */
    memset(&t, 0, sizeof(t));
    s[0] = 0x89; s[1] = 0;
    assert_int_equal(aura_ws_track(&t, s, 2), 0);
    assert_true(aura_ws_at_boundary(&t));
    /* A 64-bit length with its top bit set: not followed. */
    memset(&t, 0, sizeof(t));
    s[0] = 0x82; s[1] = 127; s[2] = 0x80;
    memset(s + 3, 0, 7);
    assert_int_equal(aura_ws_track(&t, s, 10), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_close_frame),
        cmocka_unit_test(test_tracker),
    };

    return cmocka_run_group_tests_name("endrule", tests, NULL, NULL);
}
