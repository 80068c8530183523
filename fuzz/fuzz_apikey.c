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
 *  - aura_apikey_from_query: no apikey parameter leaves the query as it
 *    is and no key; one gives its value (decoded, without NUL) and the
 *    other parameters in order, none named apikey; two or more, or a
 *    value that does not decode, are refused;
 *  - aura_apikey_redact: the string comes back as it is when it has no
 *    "apikey=", and otherwise every apikey parameter (after '?' or
 *    '&') has the value REDACTED and nothing else changed in front of
 *    it.
 */
#include "aura_fuzz.h"

#include "apr_lib.h"
#include "apr_strings.h"

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

static void check_from_query(apr_pool_t *p, const char *args)
{
    const char *key = (const char *)"unset", *rest = (const char *)"unset";
    apr_status_t rv = aura_apikey_from_query(p, args, &key, &rest);
    int params = 0;
    const char *s = args;
    char *kept = apr_pstrdup(p, ""), *sep = "";

    /* The oracle: split on '&' as a query is. */
    while (*s) {
        const char *end = strchr(s, '&');
        size_t len = end ? (size_t)(end - s) : strlen(s);

        if (is_key_param(s, len)) {
            params++;
        }
        else if (len) {
            kept = apr_pstrcat(p, kept, sep, apr_pstrmemdup(p, s, len),
                               NULL);
            sep = "&";
        }
        s = end ? end + 1 : s + len;
    }
    if (rv != APR_SUCCESS) {
        AURA_FUZZ_ASSERT(rv == APR_EINVAL);
        AURA_FUZZ_ASSERT(params >= 1);
        return;
    }
    AURA_FUZZ_ASSERT(params <= 1);
    if (!params) {
        AURA_FUZZ_ASSERT(key == NULL);
        AURA_FUZZ_ASSERT(rest == args);
        return;
    }
    AURA_FUZZ_ASSERT(key != NULL);
    AURA_FUZZ_ASSERT(*kept ? rest && !strcmp(rest, kept) : rest == NULL);
}

static void check_redact(apr_pool_t *p, const char *s)
{
    const char *r = aura_apikey_redact(p, s);
    const char *hit, *from;

    AURA_FUZZ_ASSERT(r != NULL);
    if (!strstr(s, "apikey=")) {
        AURA_FUZZ_ASSERT(r == s);
        return;
    }
    AURA_FUZZ_ASSERT(strlen(r) <= 2 * strlen(s) + 15);
    for (from = r; (hit = strstr(from, "apikey=")) != NULL;
         from = hit + 1) {
        const char *v = hit + 7;

        if (hit != r && (hit[-1] == '?' || hit[-1] == '&')) {
            AURA_FUZZ_ASSERT(!strncmp(v, "REDACTED", 8));
            AURA_FUZZ_ASSERT(strchr("& #", v[8]) != NULL);
        }
    }
    /* Up to the first value, the line is unchanged. */
    hit = strstr(s, "apikey=");
    AURA_FUZZ_ASSERT(!strncmp(r, s, (size_t)(hit - s) + 7));
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
