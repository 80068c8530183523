/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_origin.c: what AuraCORSAllowOrigin accepts (aura_origin.c),
 * table-driven.  Rows marked #15 are the forms issue #15 (point 7) found
 * accepted at start though no browser can ever send them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "apr_general.h"

#include "aura_unit.h"
#include "http/aura_origin.h"

static void test_parse(void **state)
{
    apr_pool_t *p = *state;
    static const struct {
        const char *in;
        const char *out;    /* NULL: refused */
        const char *why;    /* a word of the reason when refused */
    } rows[] = {
        { "https://console.example", "https://console.example", NULL },
        { "http://localhost:3000", "http://localhost:3000", NULL },
        { "https://studio.example:8443", "https://studio.example:8443",
          NULL },
        { "HTTPS://Console.Example", "https://console.example", NULL },
        { "http://127.0.0.1:8080", "http://127.0.0.1:8080", NULL },
        { "http://[::1]:8080", "http://[::1]:8080", NULL },
        { "https://[2001:DB8::1]", "https://[2001:db8::1]", NULL },
        { "https://a-b.c_d.example:1", "https://a-b.c_d.example:1", NULL },
        { "https://a.example:65535", "https://a.example:65535", NULL },
        { "http://a.example:443", "http://a.example:443", NULL },
        /* Refused. */
        { "https://*.example", NULL, "wildcard" },              /* #15 */
        { "*", NULL, "wildcard" },
        { "https://a.example:99999", NULL, "port" },            /* #15 */
        { "https://a.example:65536", NULL, "port" },
        { "https://a.example:0", NULL, "port" },
        { "https://a.example:0443", NULL, "port" },
        { "https://a.example:", NULL, "port" },
        { "https://a.example:8x", NULL, "port" },
        { "https://a.example:443", NULL, "default port" },
        { "http://a.example:80", NULL, "default port" },
        { "https://a.example/", NULL, "trailing slash" },
        { "https://a.example/app", NULL, "path" },
        { "https://a.example?x=1", NULL, "query" },
        { "https://a.example#top", NULL, "fragment" },
        { "https://user@a.example", NULL, "userinfo" },
        { "https://u:p@a.example", NULL, "userinfo" },
        { "a.example", NULL, "missing" },
        { "//a.example", NULL, "missing" },
        { "ftp://a.example", NULL, "http or https" },
        { "wss://a.example", NULL, "http or https" },
        { " https://a.example", NULL, "whitespace" },
        { "https://a.example ", NULL, "whitespace" },
        { "https://a\texample", NULL, "whitespace" },
        { "https://b\xc3\xa4r.example", NULL, "xn--" },
        { "null", NULL, "null" },
        { "", NULL, "empty" },
        { "https://", NULL, "host" },
        { "https://.example", NULL, "host" },
        { "https://a..example", NULL, "host" },
        { "https://a.example.", NULL, "host" },
        { "https://a%2eexample", NULL, "host" },
        { "https://[::1", NULL, "host" },
        { "https://[zz::1]", NULL, "host" },
        { "https://a.example:443:1", NULL, "host" },
    };
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *out = "unset", *why = NULL;
        apr_status_t rv = aura_origin_parse(p, rows[i].in, &out, &why);

        if (rows[i].out) {
            if (rv != APR_SUCCESS || !out || strcmp(out, rows[i].out)) {
                fail_msg("row %zu '%s': refused (%s) or wrong (%s)", i,
                         rows[i].in, why ? why : "-", out ? out : "NULL");
            }
        }
        else if (rv != APR_EINVAL || out || !why
                 || !strstr(why, rows[i].why)) {
            fail_msg("row %zu '%s': accepted or for another reason (%s)",
                     i, rows[i].in, why ? why : "-");
        }
    }
    assert_int_equal(aura_origin_parse(p, NULL, &(const char *){0},
                                       &(const char *){0}), APR_EINVAL);
}

/* The upstream a WebSocket upgrade goes to (aura_ws_url). */
static void test_ws_url(void **state)
{
    apr_pool_t *p = *state;

    assert_string_equal(aura_ws_url(p, "http://h:8080"), "ws://h:8080");
    assert_string_equal(aura_ws_url(p, "https://h/base"), "wss://h/base");
    assert_string_equal(aura_ws_url(p, "HTTPS://H"), "wss://H");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parse, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_ws_url, pool_setup,
                                        pool_teardown),
    };
    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests_name("origin", tests, NULL, NULL);
    apr_terminate();
    return rc;
}
