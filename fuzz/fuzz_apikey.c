/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_apikey.c: libFuzzer harness for API key parsing
 * (mod_aura_common/auth/aura_apikey.c).  The input, cut at its first NUL, is
 * at once a key, a query string and a request line.
 *
 * aura-fuzz: -max_len=1024
 *
 * Invariants:
 *  - aura_apikey_well_formed accepts exactly AURA_APIKEY_MIN to
 *    AURA_APIKEY_MAX characters of [A-Za-z0-9._~-]; the hash of a
 *    well-formed key is 64 lower-case hex digits;
 *  - aura_apikey_from_query: every key parameter ("apikey" or
 *    "xapikey" once decoded up to three times, letters and digits only,
 *    lower case; separated by '&' or ';') is counted and taken out, and
 *    what is left is the query's other parameters, in order; without
 *    one the query is left as it is; each one's name is redacted;
 *  - aura_apikey_bearer_kind (issue #30): with the input as both bearer
 *    and key, SAME_KEY; with the input as bearer and a fixed key, a
 *    reference decision (equal: SAME_KEY; well-formed and not three
 *    dot-separated parts: OTHER_KEY; else TOKEN), the key split at the
 *    input's middle compared as two strings;
 *  - aura_redact_query/uri/request_line (aura_redact.c, the one
 *    redaction rule of issue #15): a value that could be a key, under a
 *    name aura_redact_name calls a credential (apikey always), never
 *    survives; a URI's path is kept and its query redacted as a query.
 */
#include "aura_fuzz.h"

#include "apr_lib.h"
#include "apr_strings.h"
#include "apr_tables.h"

#include "auth/aura_apikey.h"
#include "core/aura_redact.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    return 0;
}

static int key_char(char c)
{
    return apr_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

static void check_well_formed(const char *s)
{
    size_t n = strlen(s), i;
    int want = n >= AURA_APIKEY_MIN && n <= AURA_APIKEY_MAX;
    char hash[65];

    for (i = 0; want && i < n; i++) {
        want = key_char(s[i]);
    }
    AURA_FUZZ_ASSERT(aura_apikey_well_formed(s) == want);
    if (want) {
        memset(hash, 'x', sizeof(hash));
        aura_apikey_hash(s, hash);
        AURA_FUZZ_ASSERT(strlen(hash) == 64);
        for (i = 0; i < 64; i++) {
            AURA_FUZZ_ASSERT(apr_isdigit(hash[i])
                             || (hash[i] >= 'a' && hash[i] <= 'f'));
        }
    }
}

static aura_bearer_kind_e ref_kind(const char *tok, const char *key)
{
    const char *d;
    int dots = 0;

    if (!strcmp(tok, key)) {
        return AURA_BEARER_SAME_KEY;
    }
    for (d = tok; *d; d++) {
        dots += *d == '.';
    }
    return aura_apikey_well_formed(tok) && dots != 2 ? AURA_BEARER_OTHER_KEY
                                                     : AURA_BEARER_TOKEN;
}

static void check_bearer(apr_pool_t *p, const char *s)
{
    static const char key[] = "ak_test_anon_0123456789abcdef";
    size_t half = strlen(s) / 2;
    const char *head = apr_pstrndup(p, s, half);

    AURA_FUZZ_ASSERT(aura_apikey_bearer_kind(s, s) == AURA_BEARER_SAME_KEY);
    AURA_FUZZ_ASSERT(aura_apikey_bearer_kind(s, key) == ref_kind(s, key));
    AURA_FUZZ_ASSERT(aura_apikey_bearer_kind(s, head) == ref_kind(s, head));
    AURA_FUZZ_ASSERT(aura_apikey_equal(s, head) == !strcmp(s, head));
    AURA_FUZZ_ASSERT(aura_apikey_bearer_kind(NULL, s) == AURA_BEARER_TOKEN);
}

/* The reference flat form of a name, computed apart from the code
 * under test: up to three rounds of %XX decoding of the whole name,
 * then ASCII letters and digits, lower-cased.  NULL when too long. */
static const char *ref_flat(apr_pool_t *p, const char *s, size_t len)
{
    char *buf, *out;
    size_t i, n, o;
    int round;

    if (len > AURA_REDACT_NAME_MAX) {
        return NULL;
    }
    buf = apr_pstrmemdup(p, s, len);
    n = len;
    for (round = 0; round < 3; round++) {
        int changed = 0;

        for (i = 0, o = 0; i < n; i++) {
            if (buf[i] == '%' && i + 2 < n && apr_isxdigit(buf[i + 1])
                && apr_isxdigit(buf[i + 2])) {
                char hex[3] = { buf[i + 1], buf[i + 2], 0 };

                buf[o++] = (char)strtol(hex, NULL, 16);
                i += 2;
                changed = 1;
            }
            else {
                buf[o++] = buf[i];
            }
        }
        n = o;
        if (!changed) {
            break;
        }
    }
    out = apr_palloc(p, n + 1);
    for (i = 0, o = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];

        if (c < 0x80 && apr_isalnum(c)) {
            out[o++] = (char)apr_tolower(c);
        }
    }
    out[o] = '\0';
    return out;
}

/* Is [s, s+len) a key parameter (its name, before any '=', "apikey" or
 * "xapikey" in flat form)? */
static int is_key_param(apr_pool_t *p, const char *s, size_t len)
{
    const char *eq = memchr(s, '=', len);
    const char *flat = ref_flat(p, s, eq ? (size_t)(eq - s) : len);

    return flat && (!strcmp(flat, "apikey") || !strcmp(flat, "xapikey"));
}

/* The parameters of a query, split on '&' and ';' as the gateway reads
 * it; empty ones dropped. */
static apr_array_header_t *segments(apr_pool_t *p, const char *q)
{
    apr_array_header_t *a = apr_array_make(p, 8, sizeof(const char *));

    while (q && *q) {
        size_t len = strcspn(q, "&;");

        if (len) {
            APR_ARRAY_PUSH(a, const char *) = apr_pstrmemdup(p, q, len);
        }
        q += len;
        if (*q) {
            q++;
        }
    }
    return a;
}

/* Every key parameter, in any spelling, is found and taken out (issue
 * #29 point 5); what is left is exactly the other parameters, in their
 * order; a query without one is left as it is, the very string; every
 * key parameter's name is one the redaction rule hides. */
static void check_from_query(apr_pool_t *p, const char *args)
{
    apr_array_header_t *keys = NULL;
    const char *rest = (const char *)"unset";
    int n = aura_apikey_from_query(p, args, &keys, &rest);
    apr_array_header_t *in = segments(p, args), *out, *want;
    int params = 0, i;

    want = apr_array_make(p, 8, sizeof(const char *));
    for (i = 0; i < in->nelts; i++) {
        const char *seg = APR_ARRAY_IDX(in, i, const char *);
        size_t len = strlen(seg);

        if (is_key_param(p, seg, len)) {
            const char *eq = memchr(seg, '=', len);

            params++;
            AURA_FUZZ_ASSERT(aura_redact_name(seg, eq ? (apr_size_t)(eq - seg)
                                                      : len));
        }
        else {
            APR_ARRAY_PUSH(want, const char *) = seg;
        }
    }
    AURA_FUZZ_ASSERT(n == params);
    if (!n) {
        AURA_FUZZ_ASSERT(keys == NULL && rest == args);
        return;
    }
    AURA_FUZZ_ASSERT(keys && keys->nelts == n);
    out = segments(p, rest);
    AURA_FUZZ_ASSERT(out->nelts == want->nelts);
    for (i = 0; i < out->nelts; i++) {
        AURA_FUZZ_ASSERT(!strcmp(APR_ARRAY_IDX(out, i, const char *),
                                 APR_ARRAY_IDX(want, i, const char *)));
    }
    AURA_FUZZ_ASSERT(rest == NULL || *rest);
}

/* Whether val (no separator in it) occurs in a parameter of q other
 * than a redacted one: "name=" AURA_REDACTED is public whatever it
 * contains (a value made of its name's tail, '=' and part of the mark,
 * "T...y=RED" after a name ending in "T...y", reappears there without
 * anything secret surviving: found by this harness in CI). */
static int in_plain_segment(const char *q, const char *val)
{
    size_t vlen = strlen(val);

    while (*q) {
        size_t len = strcspn(q, "&;#");
        const char *eq = memchr(q, '=', len);
        int redacted = eq && (size_t)(q + len - eq - 1)
                                 == sizeof(AURA_REDACTED) - 1
                       && !memcmp(eq + 1, AURA_REDACTED,
                                  sizeof(AURA_REDACTED) - 1);

        if (!redacted && memmem(q, len, val, vlen)) {
            return 1;
        }
        q += len;
        if (*q) {
            q++;
        }
    }
    return 0;
}

/* A secret never survives redaction: for every parameter (separated by
 * '&', ';' or '#') whose name the rule calls a credential, a value long
 * enough to be a key that occurs nowhere else in the string is gone
 * from the redacted query, URI and request line.  The exact name
 * apikey is always a credential. */
static void check_redact(apr_pool_t *p, const char *s)
{
    const char *rq = aura_redact_query(p, s);
    const char *ru = aura_redact_uri(p, s);
    const char *rl = aura_redact_request_line(p, s);
    const char *seg = s;

    AURA_FUZZ_ASSERT(aura_redact_name("apikey", 6));
    AURA_FUZZ_ASSERT(rq && ru && rl);
    while (*seg) {
        size_t len = strcspn(seg, "&;#");
        const char *eq = memchr(seg, '=', len);

        if (eq && aura_redact_name(seg, (apr_size_t)(eq - seg))) {
            size_t vlen = len - (size_t)(eq + 1 - seg);
            const char *val = apr_pstrmemdup(p, eq + 1, vlen);
            const char *first = strstr(s, val);

            if (vlen >= AURA_APIKEY_MIN && first == eq + 1
                && !strstr(first + 1, val) && !strchr(val, ' ')
                && !strchr(val, '?')) {
                /* As a query: always redacted. */
                AURA_FUZZ_ASSERT(!in_plain_segment(rq, val));
            }
        }
        seg += len;
        if (*seg) {
            seg++;
        }
    }
    /* The URI: the query is what follows the first '?' or '#'. */
    {
        const char *q = s + strcspn(s, "?#");

        if (*q && !strchr(q + 1, ' ')) {
            const char *rq2 = aura_redact_query(p, q + 1);

            AURA_FUZZ_ASSERT(!strcmp(ru + (q + 1 - s), rq2)
                             && !strncmp(ru, s, (size_t)(q + 1 - s)));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = aura_fuzz_pool();
    const char *s = aura_fuzz_strndup(p, data, size);

    check_well_formed(s);
    check_from_query(p, s);
    check_bearer(p, s);
    check_redact(p, s);
    AURA_FUZZ_ASSERT(aura_apikey_well_formed(NULL) == 0);
    apr_pool_destroy(p);
    return 0;
}
