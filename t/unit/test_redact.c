/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_redact.c: the log redaction rule (aura_redact.c), table-driven.
 * Rows marked #15 are the look-alike spellings of issue #15 (point 7):
 * every one of them must be hidden, though only "apikey" is a key;
 * test_families holds the names of issue #29 point 5.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "apr_general.h"

#include "aura_unit.h"
#include "core/aura_redact.h"

static void test_name(void **state)
{
    static const struct {
        const char *name;
        int secret;
    } rows[] = {
        { "apikey", 1 },
        { "APIKEY", 1 },                        /* #15 */
        { "api_key", 1 },                       /* #15 */
        { "Api-Key", 1 },                       /* #15 */
        { "api.key", 1 },
        { "%61pikey", 1 },                      /* #15 */
        { "api%5Fkey", 1 },                     /* #15 */
        { "%2561pikey", 1 },                    /* #15: double-encoded */
        { "%252561pikey", 1 },                  /* three rounds */
        { "user[api_key]", 1 },
        { "api%00key", 1 },                     /* a NUL inside */
        { "token", 1 },                         /* #15: the metrics token */
        { "access_token", 1 },                  /* #15 */
        { "Access-Token", 1 },
        { "refresh_token", 1 },
        { "id_token", 1 },
        { "key", 1 },
        { "secret", 1 },
        { "client_secret", 1 },
        { "password", 1 },
        { "new_password", 1 },
        { "passwd", 1 },
        { "pwd", 1 },
        { "pass", 1 },
        { "auth", 1 },
        { "authorization", 1 },
        { "jwt", 1 },
        { "signature", 1 },
        { "X-Amz-Signature", 1 },
        { "X-Amz-Credential", 1 },
        { "X-Amz-Security-Token", 1 },
        { "sig", 1 },                           /* Azure SAS */
        { "code", 1 },                          /* OAuth authorization code */
        { "session_id", 1 },
        { "PHPSESSID", 1 },
        { "ticket", 1 },
        { "otp", 1 },
        { "hmac", 1 },
        /* Not credentials. */
        { "x", 0 },
        { "page", 0 },
        { "limit", 0 },
        { "select", 0 },
        { "order", 0 },
        { "q", 0 },
        { "", 0 },
        { "%zz", 0 },
        { "passage", 0 },                       /* "pass" is exact only */
        { "signal", 0 },                        /* "sig" is exact only */
        { "codec", 0 },
    };
    char long_name[AURA_REDACT_NAME_MAX + 2];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (aura_redact_name(rows[i].name, strlen(rows[i].name))
            != rows[i].secret) {
            fail_msg("row %zu: '%s' should%s be redacted", i, rows[i].name,
                     rows[i].secret ? "" : " not");
        }
    }
    /* Too long to read: redacted unread. */
    memset(long_name, 'x', sizeof(long_name));
    assert_false(aura_redact_name(long_name, AURA_REDACT_NAME_MAX));
    assert_true(aura_redact_name(long_name, AURA_REDACT_NAME_MAX + 1));
}

/* Issue #29 point 5: names of credentials and one-time codes as real
 * sign-in flows, SDKs and signed URLs spell them, and ordinary names
 * that must stay readable in the logs. */
static void test_families(void **state)
{
    static const char *const secret[] = {
        /* #29: the compound one-time codes */
        "otp_code", "passcode", "verification_code", "reset_code",
        "mfa_code", "magic_link",
        /* one-time codes and their flows */
        "otp", "totp", "hotp", "one_time_code", "oneTimeCode", "OTPCode",
        "otpCode", "emailOtp", "sms_code", "email_code", "login_code",
        "confirmation_code", "activation_code", "recovery_code",
        "backup_codes", "auth_code", "authorization_code", "device_code",
        "user_code", "code", "code_verifier", "code_challenge",
        "verificationCode", "resetCode", "unlockCode", "twoFactorCode",
        "2fa_code", "2fa", "tfa", "mfa", "mfaToken", "pin", "user_pin",
        "PIN", "pincode", "security_code", "cvv", "cvc2", "CVV2", "csc",
        "nonce", "magic_token", "magiclink", "MagicLink",
        /* passwords and secrets */
        "password", "new_password", "passwd", "pwd", "pass", "passphrase",
        "secret", "client_secret", "webhook_secret", "private_key",
        /* tokens, sessions, signatures */
        "token", "access_token", "refresh_token", "id_token",
        "reset_token", "invite_token", "session_id", "sessionToken",
        "PHPSESSID", "jsessionid", "connect.sid", "sid", "signature",
        "sig", "X-Amz-Signature", "X-Amz-Credential",
        "X-Amz-Security-Token", "X-Goog-Signature", "hmac", "csrf_token",
        "_csrf", "XSRF-TOKEN", "authenticity_token", "SAMLResponse",
        "SAMLart", "client_assertion", "oauth_verifier", "oauth_token",
        "ticket", "jwt", "bearer", "cookie", "credential",
        /* encoded */
        "otp%5Fcode", "pass%63ode", "%2576erification_code",
    };
    static const char *const plain[] = {
        "page", "limit", "offset", "select", "order", "q", "search",
        "sort", "filter", "id", "user_id", "name", "lang", "locale",
        "country_code", "countryCode", "billing_country_code", "zip_code",
        "zipcode", "postal_code", "area_code", "currency_code",
        "language_code", "status_code", "statusCode", "error_code",
        "barcode", "opcode", "unicode", "encode", "codec", "encoding",
        "passage", "passenger", "compass", "bypass_cache", "signal",
        "signup", "sidebar", "side", "spin", "pinned", "optional",
        "footprint", "hotpink", "rootpath", "description", "state",
        "redirect_uri", "callback", "format", "utm_source", "version",
        "width", "cursor", "expand", "fields", "include",
    };
    size_t i;

    (void)state;
    assert_true(sizeof(secret) / sizeof(secret[0]) >= 40);
    for (i = 0; i < sizeof(secret) / sizeof(secret[0]); i++) {
        if (!aura_redact_name(secret[i], strlen(secret[i]))) {
            fail_msg("'%s' should be redacted", secret[i]);
        }
    }
    for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        if (aura_redact_name(plain[i], strlen(plain[i]))) {
            fail_msg("'%s' should not be redacted", plain[i]);
        }
    }
}

/* The flat form names a parameter for aura_apikey.c. */
static void test_flat(void **state)
{
    char out[AURA_REDACT_NAME_MAX + 1];
    char long_name[AURA_REDACT_NAME_MAX + 1];

    (void)state;
    assert_true(aura_param_name_flat("Api-Key", 7, out));
    assert_string_equal(out, "apikey");
    assert_true(aura_param_name_flat("api%6Bey", 8, out));
    assert_string_equal(out, "apikey");
    assert_true(aura_param_name_flat("%2561PI_KEY", 11, out));
    assert_string_equal(out, "apikey");
    assert_true(aura_param_name_flat("", 0, out));
    assert_string_equal(out, "");
    memset(long_name, 'x', sizeof(long_name));
    assert_false(aura_param_name_flat(long_name, sizeof(long_name), out));
}

static void test_query(void **state)
{
    apr_pool_t *p = *state;
    static const struct {
        const char *in;
        const char *out;
    } rows[] = {
        { "", "" },
        { "a=1&b=2", "a=1&b=2" },
        { "apikey=s", "apikey=REDACTED" },
        { "APIKEY=s&a=1", "APIKEY=REDACTED&a=1" },                 /* #15 */
        { "a=1&api_key=s", "a=1&api_key=REDACTED" },               /* #15 */
        { "Api-Key=s", "Api-Key=REDACTED" },                       /* #15 */
        { "%61pikey=s", "%61pikey=REDACTED" },                     /* #15 */
        { "api%5Fkey=s", "api%5Fkey=REDACTED" },                   /* #15 */
        { "token=s", "token=REDACTED" },                           /* #15 */
        { "access_token=s&x=1", "access_token=REDACTED&x=1" },     /* #15 */
        { "a=1;token=s;b=2", "a=1;token=REDACTED;b=2" },
        { "token=", "token=REDACTED" },
        { "token", "token" },                   /* no value to hide */
        { "token=a=b&c=d", "token=REDACTED&c=d" },
        { "=s&&token=t&", "=s&&token=REDACTED&" },
        { "token=REDACTED", "token=REDACTED" },
        { "x=token&y=apikey", "x=token&y=apikey" },  /* values are not names */
        { "password=a+b%20c&page=2", "password=REDACTED&page=2" },
    };
    const char *same = "a=1&b=2";
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_string_equal(aura_redact_query(p, rows[i].in), rows[i].out);
    }
    /* Nothing to hide: no copy. */
    assert_ptr_equal(aura_redact_query(p, same), same);
    assert_null(aura_redact_query(p, NULL));
}

static void test_uri(void **state)
{
    apr_pool_t *p = *state;
    static const struct {
        const char *in;
        const char *out;
    } rows[] = {
        { "/v1/x", "/v1/x" },
        { "/v1/x?apikey=s", "/v1/x?apikey=REDACTED" },
        { "/token=path?x=1", "/token=path?x=1" },     /* the path is not */
        { "/p?apikey=a#frag", "/p?apikey=REDACTED#frag" },
        { "/p?a=1#token=s", "/p?a=1#token=REDACTED" },
        { "/p#token=s", "/p#token=REDACTED" },
        { "/metrics?token=s", "/metrics?token=REDACTED" },         /* #15 */
    };
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_string_equal(aura_redact_uri(p, rows[i].in), rows[i].out);
    }
    assert_null(aura_redact_uri(p, NULL));
}

static void test_userinfo(void **state)
{
    apr_pool_t *p = *state;
    static const char *const same = "nats://127.0.0.1:4222 NABC";
    static const struct {
        const char *in;
        const char *out;
    } rows[] = {
        { "nats://u:pw@127.0.0.1:4222", "nats://127.0.0.1:4222" },
        { "nats://tok@h:4222 NDX", "nats://h:4222 NDX" },
        { "tls://u:p@ss@h", "tls://h" },               /* the last '@' */
        { "http://h/p@x", "http://h/p@x" },     /* in the path: kept */
        { "nats://h:1 id@x", "nats://h:1 id@x" },    /* after the URL */
        { "h:4222", "h:4222" },                        /* no scheme */
    };
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_string_equal(aura_redact_userinfo(p, rows[i].in),
                            rows[i].out);
    }
    assert_ptr_equal(aura_redact_userinfo(p, same), same);
    assert_null(aura_redact_userinfo(p, NULL));
}

static void test_request_line(void **state)
{
    apr_pool_t *p = *state;
    static const struct {
        const char *in;
        const char *out;
    } rows[] = {
        /* The rows of the former aura_apikey_redact; "myapikey" is now
         * hidden as well (it contains "key"). */
        { "GET /v1/x HTTP/1.1", "GET /v1/x HTTP/1.1" },
        { "GET /v1/x?apikey=secret HTTP/1.1",
          "GET /v1/x?apikey=REDACTED HTTP/1.1" },
        { "GET /v1/x?a=1&apikey=s1&b=2&apikey=s2 HTTP/1.1",
          "GET /v1/x?a=1&apikey=REDACTED&b=2&apikey=REDACTED HTTP/1.1" },
        { "GET /p?myapikey=keep&apikey= HTTP/1.1",
          "GET /p?myapikey=REDACTED&apikey=REDACTED HTTP/1.1" },
        /* #15: look-alike spellings. */
        { "GET /v1/x?%61pikey=s&APIKEY=t&Api-Key=u HTTP/1.1",
          "GET /v1/x?%61pikey=REDACTED&APIKEY=REDACTED&Api-Key=REDACTED "
          "HTTP/1.1" },
        { "GET /metrics?access_token=s HTTP/1.0",
          "GET /metrics?access_token=REDACTED HTTP/1.0" },
        /* A space inside the URI: the value runs to the protocol. */
        { "GET /p?token=a b HTTP/1.1", "GET /p?token=REDACTED HTTP/1.1" },
        /* HTTP/0.9: no protocol. */
        { "GET /p?token=s", "GET /p?token=REDACTED" },
        { "GET /token=x HTTP/1.1", "GET /token=x HTTP/1.1" },
        { "", "" },
    };
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_string_equal(aura_redact_request_line(p, rows[i].in),
                            rows[i].out);
    }
    assert_null(aura_redact_request_line(p, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_flat),
        cmocka_unit_test_setup_teardown(test_query, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_uri, pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_userinfo, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_request_line, pool_setup,
                                        pool_teardown),
    };
    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests_name("redact", tests, NULL, NULL);
    apr_terminate();
    return rc;
}
