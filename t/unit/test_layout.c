/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_layout.c: the fingerprint that decides whether a graceful restart
 * may keep the shared segment (aura_layout.c).  Real structs cannot be
 * changed under a test, so synthetic ones stand in: two versions of a
 * struct that differ in one member's offset or size (issue #15, point
 * 9: a commit added counters without bumping the hand-kept layout
 * version, and the old segment was read with the new layout).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "shm/aura_layout.h"

/* Version 1, and version 2 with one more counter before `tat`: the
 * commit the fingerprint is there to catch. */
typedef struct {
    apr_uint64_t key;
    apr_uint64_t counters[3];
    apr_uint64_t tat;
} v1_t;
typedef struct {
    apr_uint64_t key;
    apr_uint64_t counters[4];
    apr_uint64_t tat;
} v2_t;
/* Same members, two swapped (same sizes, same total size). */
typedef struct {
    apr_uint64_t key;
    apr_uint64_t tat;
    apr_uint64_t counters[3];
} v1_swapped_t;
/* A member narrowed, padding keeps the struct's size and offsets. */
typedef struct {
    apr_uint64_t key;
    apr_uint64_t counters[3];
    apr_uint32_t tat;
    apr_uint32_t pad;
} v1_narrow_t;

static const aura_layout_row_t rows_v1[] = {
    AURA_LAYOUT_STRUCT(v1_t),
    AURA_LAYOUT_MEMBER(v1_t, key),
    AURA_LAYOUT_MEMBER(v1_t, counters),
    AURA_LAYOUT_MEMBER(v1_t, tat),
};
static const aura_layout_row_t rows_v2[] = {
    AURA_LAYOUT_STRUCT(v2_t),
    AURA_LAYOUT_MEMBER(v2_t, key),
    AURA_LAYOUT_MEMBER(v2_t, counters),
    AURA_LAYOUT_MEMBER(v2_t, tat),
};
static const aura_layout_row_t rows_swapped[] = {
    AURA_LAYOUT_STRUCT(v1_swapped_t),
    AURA_LAYOUT_MEMBER(v1_swapped_t, key),
    AURA_LAYOUT_MEMBER(v1_swapped_t, counters),
    AURA_LAYOUT_MEMBER(v1_swapped_t, tat),
};
static const aura_layout_row_t rows_narrow[] = {
    AURA_LAYOUT_STRUCT(v1_narrow_t),
    AURA_LAYOUT_MEMBER(v1_narrow_t, key),
    AURA_LAYOUT_MEMBER(v1_narrow_t, counters),
    AURA_LAYOUT_MEMBER(v1_narrow_t, tat),
};

#define N(rows) (sizeof(rows) / sizeof(rows[0]))

static void test_same_layout_same_print(void **state)
{
    aura_layout_row_t copy[N(rows_v1)];

    (void)state;
    memcpy(copy, rows_v1, sizeof(copy));
    assert_true(aura_layout_fingerprint(rows_v1, N(rows_v1))
                == aura_layout_fingerprint(copy, N(copy)));
}

/* Table rows: one field of one row changed by hand, then real structs
 * changed as a commit would change them. */
static void test_one_value_changes_it(void **state)
{
    apr_uint64_t base = aura_layout_fingerprint(rows_v1, N(rows_v1));
    aura_layout_row_t t[N(rows_v1)];
    apr_size_t i;

    (void)state;
    for (i = 0; i < N(rows_v1); i++) {
        memcpy(t, rows_v1, sizeof(t));
        t[i].offset += 8;
        assert_true(aura_layout_fingerprint(t, N(t)) != base);
        memcpy(t, rows_v1, sizeof(t));
        t[i].size += 1;
        assert_true(aura_layout_fingerprint(t, N(t)) != base);
        memcpy(t, rows_v1, sizeof(t));
        t[i].kind ^= 3;
        assert_true(aura_layout_fingerprint(t, N(t)) != base);
    }
    /* A row fewer (a member removed from the table). */
    assert_true(aura_layout_fingerprint(rows_v1, N(rows_v1) - 1) != base);
    assert_true(aura_layout_fingerprint(rows_v2, N(rows_v2)) != base);
    assert_true(aura_layout_fingerprint(rows_swapped, N(rows_swapped))
                != base);
    assert_true(aura_layout_fingerprint(rows_narrow, N(rows_narrow))
                != base);
}

/* The rows say what the compiler laid out. */
static void test_rows(void **state)
{
    (void)state;
    assert_int_equal(rows_v1[0].kind, AURA_LAYOUT_STRUCT_ROW);
    assert_int_equal(rows_v1[0].size, sizeof(v1_t));
    assert_int_equal(rows_v1[0].offset, _Alignof(v1_t));
    assert_int_equal(rows_v1[3].kind, AURA_LAYOUT_MEMBER_ROW);
    assert_int_equal(rows_v1[3].offset, 32);
    assert_int_equal(rows_v2[3].offset, 40);
    assert_int_equal(rows_v2[2].size, 32);
    assert_int_equal(rows_narrow[3].size, 4);
}

/* The geometry continues the hash: a size, a zone's name, their
 * order; strings are length-prefixed, so no two splits collide. */
static void test_geometry(void **state)
{
    apr_uint64_t h = aura_layout_fingerprint(rows_v1, N(rows_v1));
    apr_uint64_t a, b;

    (void)state;
    a = aura_layout_mix(aura_layout_mix_str(h, "signup"), 128);
    assert_true(a == aura_layout_mix(aura_layout_mix_str(h, "signup"), 128));
    assert_true(a != aura_layout_mix(aura_layout_mix_str(h, "signup"), 256));
    assert_true(a != aura_layout_mix(aura_layout_mix_str(h, "login"), 128));
    a = aura_layout_mix_str(aura_layout_mix_str(h, "ab"), "c");
    b = aura_layout_mix_str(aura_layout_mix_str(h, "a"), "bc");
    assert_true(a != b);
    a = aura_layout_mix(aura_layout_mix(h, 1), 2);
    b = aura_layout_mix(aura_layout_mix(h, 2), 1);
    assert_true(a != b);
    /* A zero (an empty table, a zero offset) still counts. */
    assert_true(aura_layout_mix(AURA_LAYOUT_INIT, 0)
                != AURA_LAYOUT_INIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_layout_same_print),
        cmocka_unit_test(test_one_value_changes_it),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_geometry),
    };

    return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
