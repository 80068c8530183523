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
 *  - aura_apikey_from_query: a key is taken only from a query with
 *    exactly one apikey parameter (two or more are refused), and what is
 *    left is the query's other parameters, in order, none named apikey;
 *    without a key the query is left as it is;
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

/* Is [s, s+len) the apikey parameter (name alone or name=value)? */
static int is_key_param(const char *s, size_t len)
{
    return len >= 6 && !strncmp(s, "apikey", 6) && (len == 6 || s[6] == '=');
}

/* The segments of a query, split on '&' as a query is; empty ones
 * dropped. */
static apr_array_header_t *segments(apr_pool_t *p, const char *q)
{
    apr_array_header_t *a = apr_array_make(p, 8, sizeof(const char *));

    while (q && *q) {
        const char *end = strchr(q, '&');
        size_t len = end ? (size_t)(end - q) : strlen(q);

        if (len) {
            APR_ARRAY_PUSH(a, const char *) = apr_pstrmemdup(p, q, len);
        }
        q = end ? end + 1 : q + len;
    }
    return a;
}

/* The oracle is the parameter exactly named apikey.  A wider rule (look-
 * alike spellings taken out or refused too, issue #15) keeps every
 * assertion here true. */
static void check_from_query(apr_pool_t *p, const char *args)
{
    const char *key = (const char *)"unset", *rest = (const char *)"unset";
    apr_status_t rv = aura_apikey_from_query(p, args, &key, &rest);
    apr_array_header_t *in = segments(p, args), *out;
    int params = 0, i, j;

    for (i = 0; i < in->nelts; i++) {
        const char *seg = APR_ARRAY_IDX(in, i, const char *);

        params += is_key_param(seg, strlen(seg));
    }
    if (rv != APR_SUCCESS) {
        AURA_FUZZ_ASSERT(rv == APR_EINVAL);
        return;
    }
    AURA_FUZZ_ASSERT(params <= 1);
    if (params) {
        AURA_FUZZ_ASSERT(key != NULL);
    }
    /* What is left: no apikey parameter, and only parameters of the
     * query, in their order. */
    out = segments(p, rest);
    for (i = 0, j = 0; i < out->nelts; i++) {
        const char *seg = APR_ARRAY_IDX(out, i, const char *);

        AURA_FUZZ_ASSERT(!is_key_param(seg, strlen(seg)));
        while (j < in->nelts && strcmp(APR_ARRAY_IDX(in, j, const char *),
                                       seg)) {
            j++;
        }
        AURA_FUZZ_ASSERT(j < in->nelts);
        j++;
    }
    if (!params) {
        return;
    }
    /* The one exact apikey parameter is not left in the rest. */
    AURA_FUZZ_ASSERT(out->nelts < in->nelts);
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
    check_redact(p, s);
    AURA_FUZZ_ASSERT(aura_apikey_well_formed(NULL) == 0);
    apr_pool_destroy(p);
    return 0;
}
