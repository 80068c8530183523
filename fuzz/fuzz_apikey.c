/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_apikey.c: libFuzzer harness for API key parsing
 * (mod_aura_common/aura_apikey.c).  The input, cut at its first NUL, is
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
 *  - aura_apikey_redact: the value of an apikey parameter (after '?' or
 *    '&') that could be a key never survives in the redacted line.
 * The assertions stay true for a wider rule (look-alike names taken out,
 * refused or redacted too: issue #15).
 */
#include "aura_fuzz.h"

#include "apr_lib.h"
#include "apr_strings.h"
#include "apr_tables.h"

#include "aura_apikey.h"

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

/* A secret in an apikey parameter never survives redaction.  Checked for
 * values long enough to be keys that occur nowhere else in the line (a
 * short value may occur anywhere by chance). */
static void check_redact(apr_pool_t *p, const char *s)
{
    const char *r = aura_apikey_redact(p, s);
    const char *hit;

    AURA_FUZZ_ASSERT(r != NULL);
    if (r != s) {
        AURA_FUZZ_ASSERT(strlen(r) <= 2 * strlen(s) + 15);
    }
    for (hit = strstr(s, "apikey="); hit; hit = strstr(hit + 1, "apikey=")) {
        const char *v = hit + 7;
        size_t vlen = strcspn(v, "& #");
        const char *val, *again;

        if (hit == s || (hit[-1] != '?' && hit[-1] != '&')
            || vlen < AURA_APIKEY_MIN) {
            continue;
        }
        val = apr_pstrmemdup(p, v, vlen);
        again = strstr(s, val);
        if (again != v || strstr(v + 1, val)) {
            continue;
        }
        AURA_FUZZ_ASSERT(strstr(r, val) == NULL);
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
