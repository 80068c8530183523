/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_path.c: the raw path's admission rule (aura_path.c), row by row:
 * what passes (and so decodes to what httpd's rules see), and every
 * spelling that would let the rules see one path and a service another.
 * Rows marked #15 are the attacks of issue #15 point 5; #29, the
 * ";parameters" of issue #29 point 4, refused unless the caller allows
 * them (AURA_PATH_ALLOW_PARAMS).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "aura_unit.h"
#include "core/aura_path.h"

static const char *const good[] = {
    "/",
    "/v1/functions/echo",
    "/v1/storage/object/a.txt",
    "/v1/storage/dir/",                   /* trailing slash */
    "/v1/functions/echo/a%20b",           /* encoded space */
    "/v1/functions/%61%62c",              /* encoded unreserved */
    "/v1/functions/a%252e%252e",          /* double-encoded: one decode */
    "/v1/functions/100%25",               /* a literal % */
    "/v1/x/...",                          /* three dots: a name */
    "/v1/x/.hidden",
    "/v1/x/a..b",
    "/v1/x/..a",
    "/v1/x/%2e%2e%2e",                    /* "..." */
    "/v1/x/caf%C3%A9",                    /* UTF-8 */
    "/v1/x/\xc3\xa9",                     /* raw obs-text */
    "/v1/x/a%3Fb%23c",                    /* encoded ? and # */
    "/v1/projects/proj-a/keys/rotate",
};

/* Normal but for their ";parameters": refused by default
 * (AURA_PATH_EPARAMS), accepted with AURA_PATH_ALLOW_PARAMS. */
static const char *const params[] = {
    "/v1/x/a;b=c",                        /* parameters after a name */
    "/v1/projects/p/keys;x/rotate",       /* #29: in an earlier segment */
    "/v1/projects/p/KEYS;v=1/Rotate",     /* #29 */
    "/v1/projects/p/keys%3Bx/rotate",     /* #29: encoded */
    "/v1/projects/p/keys%3bx/rotate",     /* #29: lower-case escape */
    "/v1/projects/p/keys/rotate;x=1",     /* #29: in the last one */
    "/v1/projects/p/keys/rotate;",
    "/v1/projects/p/keys/rotate%3B.json",
    "/v1;x/projects/p",
};

static const struct {
    const char *path;
    const char *why;            /* a word the phrase must contain */
} bad[] = {
    /* #15: the project named in the path is not the one forwarded */
    { "/v1/projects/other/../mine/logs", "dot-segment" },
    /* #15: another service's Location reached through a storage path */
    { "/v1/storage/../functions/echo", "dot-segment" },
    /* #15: the rotation rule escaped by a segment dropped again */
    { "/v1/projects/p/keys/rotate/x/..", "dot-segment" },
    { "/v1/projects/p/keys/rotate/.", "dot-segment" },
    { "/v1/./functions/echo", "dot-segment" },
    { "/..", "dot-segment" },
    { "/.", "dot-segment" },
    { "/v1/..", "dot-segment" },
    /* encoded dot-segments, in every case mix */
    { "/v1/%2e%2e/functions", "dot-segment" },
    { "/v1/%2E%2E/functions", "dot-segment" },
    { "/v1/%2e%2E/functions", "dot-segment" },
    { "/v1/.%2e/functions", "dot-segment" },
    { "/v1/%2e./functions", "dot-segment" },
    { "/v1/%2e/functions", "dot-segment" },
    /* Tomcat/Spring drop ";parameters" before resolving */
    { "/v1/storage/..;/functions/echo", "dot-segment" },
    { "/v1/storage/..;x=1/functions/echo", "dot-segment" },
    { "/v1/storage/.%3Bx/functions", "dot-segment" },
    { "/v1/storage/%2e%2e%3b/functions", "dot-segment" },
    /* encoded slash and backslash */
    { "/v1/storage/a%2Fb", "slash" },
    { "/v1/storage/a%2fb", "slash" },
    { "/v1/storage/..%2Ffunctions", "slash" },
    { "/v1/storage/a%5Cb", "backslash" },
    { "/v1/storage/a%5cb", "backslash" },
    { "/v1/storage/a\\b", "backslash" },
    { "/v1/storage/..\\functions", "backslash" },
    /* NUL and other control characters, encoded or raw */
    { "/v1/storage/a%00b", "control" },
    { "/v1/storage/a%0Ab", "control" },
    { "/v1/storage/a%0d%0aX-Evil:%201", "control" },
    { "/v1/storage/a%09b", "control" },
    { "/v1/storage/a%1Fb", "control" },
    { "/v1/storage/a%7Fb", "control" },
    { "/v1/storage/a\tb", "control" },
    { "/v1/storage/a b", "space" },
    { "/v1/storage/a\x7f", "control" },
    /* invalid escapes */
    { "/v1/storage/%", "percent" },
    { "/v1/storage/%4", "percent" },
    { "/v1/storage/%zz", "percent" },
    { "/v1/storage/%4g", "percent" },
    { "/v1/storage/%%41", "percent" },
    /* #15: empty segments, which MergeSlashes would merge for the rules */
    { "//v1/storage", "empty" },
    { "/v1//storage/x", "empty" },
    { "/v1/projects/p/keys//rotate", "empty" },
    { "/v1/storage//", "empty" },
    { "/v1/storage/;x/y", "empty" },
    { "/v1/storage/;x", "empty" },
    { "/;", "empty" },
    /* not a path */
    { "", "start" },
    { "v1/storage", "start" },
    { "*", "start" },
    { "%2Fv1", "start" },
};

static void test_good(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *why = NULL;
        apr_status_t rv = aura_path_check(good[i], strlen(good[i]), 0,
                                          &why);

        if (rv != APR_SUCCESS) {
            fail_msg("refused \"%s\": %s", good[i], why ? why : "?");
        }
        assert_null(why);
        /* The flag changes nothing where there is no ";". */
        assert_int_equal(aura_path_check(good[i], strlen(good[i]),
                                         AURA_PATH_ALLOW_PARAMS, NULL),
                         APR_SUCCESS);
    }
}

static void test_params(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
        const char *why = NULL;
        apr_status_t rv = aura_path_check(params[i], strlen(params[i]), 0,
                                          &why);

        if (rv != AURA_PATH_EPARAMS) {
            fail_msg("\"%s\" not refused for its parameters", params[i]);
        }
        assert_non_null(why);
        assert_non_null(strstr(why, "';'"));
        why = NULL;
        rv = aura_path_check(params[i], strlen(params[i]),
                             AURA_PATH_ALLOW_PARAMS, &why);
        if (rv != APR_SUCCESS) {
            fail_msg("allowed, \"%s\" refused: %s", params[i],
                     why ? why : "?");
        }
    }
}

static void test_bad(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why = NULL;
        apr_status_t rv = aura_path_check(bad[i].path, strlen(bad[i].path),
                                          0, &why);

        if (rv != APR_EINVAL) {
            fail_msg("accepted \"%s\"", bad[i].path);
        }
        assert_non_null(why);
        if (!strstr(why, bad[i].why)) {
            fail_msg("\"%s\": \"%s\" does not say %s", bad[i].path, why,
                     bad[i].why);
        }
        /* Allowing ";parameters" relaxes none of these: "..;x" is still
         * a dot-segment, "/;x/" still empty. */
        assert_int_equal(aura_path_check(bad[i].path, strlen(bad[i].path),
                                         AURA_PATH_ALLOW_PARAMS, NULL),
                         APR_EINVAL);
    }
}

/* The length is the bound, not a NUL: a NUL inside is a control
 * character, and bytes past len are never read. */
static void test_length(void **state)
{
    static const char nul[] = "/v1/a\0b";
    const char *why = NULL;

    (void)state;
    assert_int_equal(aura_path_check(nul, sizeof(nul) - 1, 0, &why),
                     APR_EINVAL);
    assert_non_null(strstr(why, "control"));
    /* "/v1/a%2" cut in the middle of an escape */
    assert_int_equal(aura_path_check("/v1/a%2F", 7, 0, NULL), APR_EINVAL);
    /* "/v1/.." seen as "/v1/." plus one byte not read: still refused;
     * "/v1/ab" cut to "/v1/a" accepted */
    assert_int_equal(aura_path_check("/v1/..", 5, 0, NULL), APR_EINVAL);
    assert_int_equal(aura_path_check("/v1/ab", 5, 0, NULL), APR_SUCCESS);
    /* "/v1/a;" cut before its ";" */
    assert_int_equal(aura_path_check("/v1/a;", 5, 0, NULL), APR_SUCCESS);
    assert_int_equal(aura_path_check(NULL, 0, 0, NULL), APR_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_length),
    };

    return cmocka_run_group_tests_name("path", tests, NULL, NULL);
}
