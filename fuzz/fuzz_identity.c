/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_identity.c: libFuzzer harness for the identity rules
 * (mod_aura_common/auth/aura_identity.c): the Authorization header's one
 * accepted form and the values that may become identity.
 *
 * aura-fuzz: -max_len=1024
 *
 * Input: the first byte is a maximum length for the value checks, the
 * rest (cut at a NUL for the string functions, whole for
 * aura_identity_text_ok) is the header value or identity value.
 *
 * Invariants:
 *  - aura_authz_parse: BEARER exactly for "Bearer" in any case, one or
 *    more SP, a b64token (RFC 6750: 1*(ALPHA / DIGIT / "-" / "." / "_" /
 *    "~" / "+" / "/") *"="), nothing after it; the token it returns is
 *    that b64token, inside the value; NULL means NONE; anything else is
 *    MALFORMED, never NONE (a header that is there is never anonymous);
 *  - aura_identity_text_ok: 1 to max bytes, no C0 control nor DEL, with
 *    a NUL inside the length seen;
 *  - aura_identity_id_ok: 1 to max characters of [A-Za-z0-9._-].
 */
#include "aura_fuzz.h"

#include "apr_lib.h"

#include "auth/aura_identity.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    return 0;
}

static int b64token_char(char c)
{
    return apr_isalnum(c) || (c && strchr("-._~+/", c));
}

static void check_authz(const char *v)
{
    const char *token = (const char *)"unset";
    aura_authz_e a = aura_authz_parse(v, &token);
    const char *t;
    int want;

    AURA_FUZZ_ASSERT(a == AURA_AUTHZ_BEARER || a == AURA_AUTHZ_MALFORMED);
    /* The oracle: "Bearer" SP+ b64token end. */
    want = !strncasecmp(v, "Bearer", 6) && v[6] == ' ';
    t = v + 6;
    while (want && *t == ' ') {
        t++;
    }
    if (want) {
        const char *e = t;

        while (b64token_char(*e)) {
            e++;
        }
        want = e > t;
        while (*e == '=') {
            e++;
        }
        want = want && *e == '\0';
    }
    AURA_FUZZ_ASSERT((a == AURA_AUTHZ_BEARER) == want);
    if (a == AURA_AUTHZ_BEARER) {
        AURA_FUZZ_ASSERT(token == t);
    }
    else {
        AURA_FUZZ_ASSERT(token == NULL);
    }
}

static void check_text(const char *s, size_t len, size_t max)
{
    int want = len >= 1 && len <= max;
    size_t i;

    for (i = 0; want && i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        want = c >= 0x20 && c != 0x7f;
    }
    AURA_FUZZ_ASSERT(aura_identity_text_ok(s, len, max) == want);
}

static void check_id(const char *s, size_t max)
{
    size_t n = strlen(s), i;
    int want = n >= 1 && n <= max;

    for (i = 0; want && i < n; i++) {
        want = apr_isalnum(s[i]) || s[i] == '.' || s[i] == '_'
               || s[i] == '-';
    }
    AURA_FUZZ_ASSERT(aura_identity_id_ok(s, max) == want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p;
    const char *s;
    size_t max;
    const char *token = (const char *)"unset";

    if (size < 1) {
        return 0;
    }
    max = aura_fuzz_byte(&data, &size);
    p = aura_fuzz_pool();
    s = aura_fuzz_strndup(p, data, size);
    check_authz(s);
    check_text((const char *)data, size, max);
    check_text(s, strlen(s), AURA_SUB_MAX);
    check_id(s, max);
    check_id(s, AURA_ID_MAX);
    AURA_FUZZ_ASSERT(aura_authz_parse(NULL, &token) == AURA_AUTHZ_NONE
                     && token == NULL);
    AURA_FUZZ_ASSERT(!aura_identity_text_ok(NULL, 0, max));
    AURA_FUZZ_ASSERT(!aura_identity_id_ok(NULL, max));
    apr_pool_destroy(p);
    return 0;
}
