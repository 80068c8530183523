/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_apikey.c: API key parsing.  Keys are opaque, high-entropy strings;
 * the store holds only their SHA-256 (no salt needed for random keys, and
 * equality lookup stays possible).  Every key parameter of the query,
 * "apikey" in any spelling, case or encoding, is taken out of it before
 * anything logs or forwards the query (issue #29 point 5: a second one
 * used to leave both in); the request line is redacted by aura_redact.c's
 * rule, which hides every look-alike.
 */
#include "auth/aura_apikey.h"
#include "core/aura_redact.h"

#include "apr_strings.h"
#include "apr_lib.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>

/* [A-Za-z0-9._~-], the unreserved characters of RFC 3986: a key needs
 * no escaping anywhere. */
static const unsigned char key_chars[256] = {
    ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
    ['-'] = 1, ['_'] = 1, ['.'] = 1, ['~'] = 1
};

static int key_char(char c)
{
    return key_chars[(unsigned char)c];
}

int aura_apikey_well_formed(const char *key)
{
    apr_size_t n;

    if (!key) {
        return 0;
    }
    for (n = 0; key[n]; n++) {
        if (n >= AURA_APIKEY_MAX || !key_char(key[n])) {
            return 0;
        }
    }
    return n >= AURA_APIKEY_MIN;
}

int aura_apikey_equal(const char *a, const char *b)
{
    apr_size_t n;

    if (!a || !b) {
        return 0;
    }
    n = strlen(a);
    return n == strlen(b) && CRYPTO_memcmp(a, b, n) == 0;
}

/* A JWS compact serialization is header.payload.signature: exactly two
 * dots.  A key with two dots would be read as a token, and refused as
 * one (invalid-token): the keys the gateway's tools make have none. */
static int jws_shaped(const char *s)
{
    const char *d1 = strchr(s, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;

    return d2 && !strchr(d2 + 1, '.');
}

int aura_apikey_shaped(const char *s)
{
    return aura_apikey_well_formed(s) && !jws_shaped(s);
}

aura_bearer_kind_e aura_apikey_bearer_kind(const char *token,
                                           const char *key)
{
    if (!token) {
        return AURA_BEARER_TOKEN;
    }
    if (key && aura_apikey_equal(token, key)) {
        return AURA_BEARER_SAME_KEY;
    }
    return aura_apikey_shaped(token) ? AURA_BEARER_OTHER_KEY
                                     : AURA_BEARER_TOKEN;
}

/* OpenSSL 3 looks EVP_sha256() up in its provider store (locks and
 * all) on every digest: fetched once per process instead, it was a
 * third of the cost of a key check.  Never freed: it lives as long as
 * the process. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void aura_apikey_hash(const char *key, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0, i;

    pthread_once(&sha256_once, fetch_sha256);
    EVP_Digest(key, strlen(key), md, &len,
               sha256_md ? sha256_md : EVP_sha256(), NULL);
    for (i = 0; i < len && i < 32; i++) {
        out[2 * i] = "0123456789abcdef"[md[i] >> 4];
        out[2 * i + 1] = "0123456789abcdef"[md[i] & 0x0f];
    }
    out[2 * i] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = apr_tolower(c);
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* Form-decodes [s, s+len): %XX and '+'.  NULL on a bad escape or a NUL. */
static char *form_decode(apr_pool_t *p, const char *s, apr_size_t len)
{
    char *out = apr_palloc(p, len + 1), *o = out;
    apr_size_t i;

    for (i = 0; i < len; i++) {
        if (s[i] == '+') {
            *o++ = ' ';
        }
        else if (s[i] == '%') {
            int hi, lo;

            if (i + 2 >= len) {
                return NULL;
            }
            hi = hexval(s[i + 1]);
            lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return NULL;
            }
            *o++ = (char)(hi * 16 + lo);
            i += 2;
        }
        else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    return out;
}

int aura_apikey_param_name(const char *name, apr_size_t len)
{
    char flat[AURA_REDACT_NAME_MAX + 1];

    return aura_param_name_flat(name, len, flat)
           && (!strcmp(flat, AURA_APIKEY_PARAM)
               || !strcmp(flat, "x" AURA_APIKEY_PARAM));
}

/* Parameters are separated by '&', and by ';' which CGI.pm, PHP's
 * arg_separator.input, Rack before 3 and Python's parse_qs before 3.9.2
 * read as a separator too: a key after a ";" reaches the services that
 * read it so. */
#define SEPARATORS "&;"

/* Whether the parameter [s, s+len) is a key parameter. */
static int is_key_param(const char *s, apr_size_t len)
{
    const char *eq = memchr(s, '=', len);

    return aura_apikey_param_name(s, eq ? (apr_size_t)(eq - s) : len);
}

/* The value of the parameter [s, s+len), decoded (NULL if it does not
 * decode). */
static const char *param_value(apr_pool_t *p, const char *s, apr_size_t len)
{
    const char *eq = memchr(s, '=', len);

    if (!eq) {
        return "";
    }
    return form_decode(p, eq + 1, len - (apr_size_t)(eq + 1 - s));
}

int aura_apikey_from_query(apr_pool_t *p, const char *args,
                           apr_array_header_t **keys, const char **rest)
{
    const char *s;
    char *kept;
    apr_size_t kept_len = 0;
    int found = 0;

    *keys = NULL;
    *rest = args;
    if (!args || !*args) {
        return 0;
    }
    /* Nothing to take out (nearly every request): no allocation. */
    for (s = args; ; ) {
        apr_size_t len = strcspn(s, SEPARATORS);

        if (len && is_key_param(s, len)) {
            break;
        }
        if (!s[len]) {
            return 0;
        }
        s += len + 1;
    }
    *keys = apr_array_make(p, 2, sizeof(const char *));
    kept = apr_palloc(p, strlen(args) + 1);
    for (s = args; ; ) {
        apr_size_t len = strcspn(s, SEPARATORS);

        if (len && is_key_param(s, len)) {
            APR_ARRAY_PUSH(*keys, const char *) = param_value(p, s, len);
            found++;
        }
        else if (len) {
            /* Kept with the separator that preceded it (s > args). */
            if (kept_len) {
                kept[kept_len++] = s[-1];
            }
            memcpy(kept + kept_len, s, len);
            kept_len += len;
        }
        if (!s[len]) {
            break;
        }
        s += len + 1;
    }
    kept[kept_len] = '\0';
    *rest = kept_len ? kept : NULL;
    return found;
}
