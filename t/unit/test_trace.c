/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_trace.c: W3C traceparent parsing and formatting (aura_trace.c):
 * the spec's example, every malformation, forward-compatible versions,
 * and ids that are never all zero.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "core/aura_trace.h"

#define EXAMPLE "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static void test_parse(void **state)
{
    aura_traceparent_t t;
    char out[56];

    (void)state;
    assert_int_equal(aura_traceparent_parse(EXAMPLE, &t), 1);
    assert_string_equal(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(t.parent_id, "00f067aa0ba902b7");
    assert_int_equal(t.flags, 1);
    aura_traceparent_format(&t, out);
    assert_string_equal(out, EXAMPLE);
}

static void test_invalid(void **state)
{
    static const char *const bad[] = {
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
        NULL
    };
    aura_traceparent_t t;
    int i;

    (void)state;
    assert_int_equal(aura_traceparent_parse(NULL, &t), 0);
    for (i = 0; bad[i]; i++) {
        assert_int_equal(aura_traceparent_parse(bad[i], &t), 0);
    }
}

/* A later version is read by its first 55 characters. */
static void test_future_version(void **state)
{
    aura_traceparent_t t;

    (void)state;
    assert_int_equal(aura_traceparent_parse(
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", &t), 1);
    assert_int_equal(t.flags, 3);
    assert_int_equal(aura_traceparent_parse(
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more", &t),
        1);
}

static void test_hex_id(void **state)
{
    unsigned char zero[8] = { 0 }, some[2] = { 0xab, 0x01 };
    char out[17];

    (void)state;
    aura_trace_hex_id(some, 2, out);
    assert_string_equal(out, "ab01");
    aura_trace_hex_id(zero, 8, out);
    assert_string_equal(out, "0000000000000001");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_future_version),
        cmocka_unit_test(test_hex_id),
    };

    return cmocka_run_group_tests_name("trace", tests, NULL, NULL);
}
