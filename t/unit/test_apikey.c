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
#include "apr_strings.h"

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

/* Every key parameter leaves the query, in any spelling (#29: issue
 * #29 point 5, a repeated or re-spelled apikey used to stay in). */
static void test_from_query(void **state)
{
    static const struct {
        const char *args;
        int n;              /* key parameters found */
        const char *keys;   /* their values joined by '|', "(null)" for
                               one that does not decode */
        const char *rest;   /* NULL: nothing left */
    } rows[] = {
        { NULL, 0, "", NULL },
        { "", 0, "", "" },
        { "a=1&b=2", 0, "", "a=1&b=2" },
        { "a=1;b=2&&c", 0, "", "a=1;b=2&&c" },  /* untouched: no key */
        { "apikey=k1", 1, "k1", NULL },
        { "a=1&apikey=k1&b=2", 1, "k1", "a=1&b=2" },
        { "apikey=k%2D1+x", 1, "k-1 x", NULL },
        { "apikeyx=1&key=2&myapikey=3", 0, "", "apikeyx=1&key=2&myapikey=3" },
        { "apikey", 1, "", NULL },
        { "apikey=", 1, "", NULL },
        { "a=1&&apikey=k", 1, "k", "a=1" },
        /* #29: two or more, every one taken out */
        { "apikey=a&apikey=b", 2, "a|b", NULL },
        { "x=1&apikey=a&y=2&apikey=a", 2, "a|a", "x=1&y=2" },
        /* #29: other spellings, cases and encodings */
        { "APIKEY=k&x=1", 1, "k", "x=1" },
        { "api%6Bey=k", 1, "k", NULL },
        { "Api%4Bey=k&x", 1, "k", "x" },
        { "%2561pikey=k", 1, "k", NULL },
        { "api_key=k", 1, "k", NULL },
        { "Api-Key=k", 1, "k", NULL },
        { "x-api-key=k", 1, "k", NULL },
        { "X_API_KEY=k", 1, "k", NULL },
        { "apikey[]=k", 1, "k", NULL },
        { "api+key=k", 1, "k", NULL },
        /* #29: after a ';', the other separators kept */
        { "x=1;apikey=k", 1, "k", "x=1" },
        { "apikey=k;x=1&y=2;z", 1, "k", "x=1&y=2;z" },
        { "f=a;b&APIKEY=k&g=c;d", 1, "k", "f=a;b&g=c;d" },
        { "apikey=a;APIKEY=b&api_key=c", 3, "a|b|c", NULL },
        /* values that do not decode: found all the same */
        { "apikey=%zz", 1, "(null)", NULL },
        { "apikey=%4&x=1", 1, "(null)", "x=1" },
        { "apikey=a%00b", 1, "(null)", NULL },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        apr_array_header_t *keys = (apr_array_header_t *)"unset";
        const char *rest = "unset", *joined = "";
        int n = aura_apikey_from_query(pool, rows[i].args, &keys, &rest);
        int k;

        if (n != rows[i].n) {
            fail_msg("row %zu (%s): %d key parameters, not %d", i,
                     rows[i].args ? rows[i].args : "NULL", n, rows[i].n);
        }
        if (!n) {
            assert_null(keys);
            /* untouched: the very string */
            assert_ptr_equal(rest, rows[i].args);
            continue;
        }
        assert_non_null(keys);
        assert_int_equal(keys->nelts, n);
        for (k = 0; k < n; k++) {
            const char *v = APR_ARRAY_IDX(keys, k, const char *);

            joined = apr_pstrcat(pool, joined, k ? "|" : "",
                                 v ? v : "(null)", NULL);
        }
        assert_string_equal(joined, rows[i].keys);
        if (rows[i].rest) {
            assert_non_null(rest);
            assert_string_equal(rest, rows[i].rest);
        }
        else {
            assert_null(rest);
        }
    }
}

static void test_param_name(void **state)
{
    static const struct {
        const char *name;
        int key;
    } rows[] = {
        { "apikey", 1 }, { "APIKEY", 1 }, { "ApiKey", 1 },
        { "api%6Bey", 1 }, { "api%6bey", 1 }, { "%61%70%69%6B%65%79", 1 },
        { "%2561pikey", 1 }, { "api_key", 1 }, { "api-key", 1 },
        { "api.key", 1 }, { "x-api-key", 1 }, { "X-API-KEY", 1 },
        { "apikey[]", 1 }, { "api%00key", 1 },
        { "key", 0 }, { "apikeys", 0 }, { "myapikey", 0 }, { "api", 0 },
        { "user[apikey]", 0 }, { "", 0 }, { "token", 0 },
    };
    char long_name[300];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (aura_apikey_param_name(rows[i].name, strlen(rows[i].name))
            != rows[i].key) {
            fail_msg("'%s' should%s be a key parameter", rows[i].name,
                     rows[i].key ? "" : " not");
        }
    }
    /* Too long to read: not a key parameter (the redaction rule hides
     * its value in logs all the same). */
    memset(long_name, '-', sizeof(long_name));
    memcpy(long_name, "apikey", 6);
    assert_false(aura_apikey_param_name(long_name, sizeof(long_name)));
}

/* Issue #30: the bearer an SDK sends next to its key. */
static void test_bearer_kind(void **state)
{
    static const char anon[] = "ak_test_anon_0123456789abcdef";
    static const char jwt[] = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9"
                              ".c2lnbmF0dXJl";
    static const struct {
        const char *token;
        const char *key;
        aura_bearer_kind_e kind;
    } rows[] = {
        /* The SDK's anonymous call: the key twice. */
        { anon, anon, AURA_BEARER_SAME_KEY },
        /* Another key: refused as such, never the key's request. */
        { "ak_test_service_0123456789abcdef", anon, AURA_BEARER_OTHER_KEY },
        /* One byte off, at either end, or a prefix of it. */
        { "bk_test_anon_0123456789abcdef", anon, AURA_BEARER_OTHER_KEY },
        { "ak_test_anon_0123456789abcdeF", anon, AURA_BEARER_OTHER_KEY },
        { "ak_test_anon_0123456789abcde", anon, AURA_BEARER_OTHER_KEY },
        { "ak_test_anon_0123456789abcdef0", anon, AURA_BEARER_OTHER_KEY },
        /* Too short, or not of the key alphabet: a (malformed) token. */
        { "ak_short", anon, AURA_BEARER_TOKEN },
        { "ak_test_anon/0123456789abcdef", anon, AURA_BEARER_TOKEN },
        { "ak_test_anon_0123456789abcdef==", anon, AURA_BEARER_TOKEN },
        /* JWS-shaped: a token, whatever the key. */
        { jwt, anon, AURA_BEARER_TOKEN },
        { jwt, jwt, AURA_BEARER_SAME_KEY },
        { "aaaaaaaa.bbbbbbbb.cccccccc", anon, AURA_BEARER_TOKEN },
        { "a.b.c.d.0123456789abcdef", anon, AURA_BEARER_OTHER_KEY },
        { "a.0123456789abcdef", anon, AURA_BEARER_OTHER_KEY },
        /* No key presented: never SAME_KEY. */
        { anon, NULL, AURA_BEARER_OTHER_KEY },
        { jwt, NULL, AURA_BEARER_TOKEN },
        { NULL, anon, AURA_BEARER_TOKEN },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (aura_apikey_bearer_kind(rows[i].token, rows[i].key)
            != rows[i].kind) {
            fail_msg("row %zu: %s", i, rows[i].token ? rows[i].token : "-");
        }
    }
    assert_true(aura_apikey_equal(anon, "ak_test_anon_0123456789abcdef"));
    assert_false(aura_apikey_equal(anon, ""));
    assert_false(aura_apikey_equal(NULL, anon));
    assert_false(aura_apikey_equal(anon, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_well_formed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_from_query, setup, teardown),
        cmocka_unit_test_setup_teardown(test_param_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bearer_kind, setup, teardown),
    };

    return cmocka_run_group_tests_name("apikey", tests, group_setup,
                                       group_teardown);
}
