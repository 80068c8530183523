/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_apikey.c: API key parsing (aura_apikey.c), table-driven.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "apr_general.h"
#include "apr_pools.h"

#include "auth/aura_apikey.h"

static apr_pool_t *pool;

static int group_setup(void **state)
{
    (void)state;
    return apr_initialize() == APR_SUCCESS ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    apr_terminate();
    return 0;
}

static int setup(void **state)
{
    (void)state;
    return apr_pool_create(&pool, NULL) == APR_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    apr_pool_destroy(pool);
    return 0;
}

static void test_well_formed(void **state)
{
    static const struct {
        const char *key;
        int ok;
    } rows[] = {
        { "ak_test_anon_0123456789abcdef", 1 },
        { "0123456789abcdef", 1 },                 /* 16: the minimum */
        { "0123456789abcde", 0 },                  /* 15 */
        { "a.b-c_d~e0123456789", 1 },
        { "has space 0123456789", 0 },
        { "quote\"0123456789abcdef", 0 },
        { "percent%200123456789ab", 0 },
        { "", 0 },
        { NULL, 0 },
    };
    char long_key[AURA_APIKEY_MAX + 2];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_int_equal(aura_apikey_well_formed(rows[i].key), rows[i].ok);
    }
    memset(long_key, 'a', sizeof(long_key) - 1);
    long_key[AURA_APIKEY_MAX] = '\0';
    assert_true(aura_apikey_well_formed(long_key));     /* 256 */
    long_key[AURA_APIKEY_MAX] = 'a';
    long_key[AURA_APIKEY_MAX + 1] = '\0';
    assert_false(aura_apikey_well_formed(long_key));    /* 257 */
}

static void test_hash(void **state)
{
    char out[65];

    (void)state;
    /* sha256("abc"), FIPS 180-2 test vector. */
    aura_apikey_hash("abc", out);
    assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223"
                             "b00361a396177a9cb410ff61f20015ad");
    aura_apikey_hash("", out);
    assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb924"
                             "27ae41e4649b934ca495991b7852b855");
}

static void test_from_query(void **state)
{
    static const struct {
        const char *args;
        apr_status_t rv;
        const char *key;    /* NULL: none */
        const char *rest;   /* NULL: nothing left */
    } rows[] = {
        { NULL, APR_SUCCESS, NULL, NULL },
        { "a=1&b=2", APR_SUCCESS, NULL, "a=1&b=2" },
        { "apikey=k1", APR_SUCCESS, "k1", NULL },
        { "a=1&apikey=k1&b=2", APR_SUCCESS, "k1", "a=1&b=2" },
        { "apikey=k%2D1+x", APR_SUCCESS, "k-1 x", NULL },
        { "apikeyx=1&xapikey=2", APR_SUCCESS, NULL, "apikeyx=1&xapikey=2" },
        { "apikey", APR_SUCCESS, "", NULL },
        { "apikey=", APR_SUCCESS, "", NULL },
        { "a=1&&apikey=k", APR_SUCCESS, "k", "a=1" },
        /* ambiguous or undecodable: refused */
        { "apikey=a&apikey=b", APR_EINVAL, NULL, NULL },
        { "apikey=%zz", APR_EINVAL, NULL, NULL },
        { "apikey=%4", APR_EINVAL, NULL, NULL },
        { "apikey=a%00b", APR_EINVAL, NULL, NULL },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *key = NULL, *rest = NULL;
        apr_status_t rv = aura_apikey_from_query(pool, rows[i].args, &key,
                                                 &rest);

        assert_int_equal(rv, rows[i].rv);
        if (rv != APR_SUCCESS) {
            continue;
        }
        if (rows[i].key) {
            assert_non_null(key);
            assert_string_equal(key, rows[i].key);
        }
        else {
            assert_null(key);
        }
        if (rows[i].rest) {
            assert_non_null(rest);
            assert_string_equal(rest, rows[i].rest);
        }
        else {
            assert_null(rest);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_well_formed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_from_query, setup, teardown),
    };

    return cmocka_run_group_tests_name("apikey", tests, group_setup,
                                       group_teardown);
}
