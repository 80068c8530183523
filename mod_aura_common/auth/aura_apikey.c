/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_apikey.c: API key parsing.  Keys are opaque, high-entropy strings;
 * the store holds only their SHA-256 (no salt needed for random keys, and
 * equality lookup stays possible).  A key in the query string is taken
 * out of it before anything logs or forwards the query; the request line
 * is redacted by aura_redact.c's rule, which hides every look-alike.
 */
#include "auth/aura_apikey.h"

#include "apr_strings.h"
#include "apr_lib.h"

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

static int is_key_param(const char *s, apr_size_t len)
{
    apr_size_t plen = sizeof(AURA_APIKEY_PARAM) - 1;

    return len >= plen && !strncmp(s, AURA_APIKEY_PARAM, plen)
           && (len == plen || s[plen] == '=');
}

apr_status_t aura_apikey_from_query(apr_pool_t *p, const char *args,
                                    const char **key, const char **rest)
{
    const char *s = args;
    char *kept;
    apr_size_t kept_len = 0;
    int found = 0;

    *key = NULL;
    *rest = args;
    if (!args || !*args) {
        return APR_SUCCESS;
    }
    kept = apr_palloc(p, strlen(args) + 1);
    while (*s) {
        const char *end = strchr(s, '&');
        apr_size_t len = end ? (apr_size_t)(end - s) : strlen(s);

        if (is_key_param(s, len)) {
            apr_size_t plen = sizeof(AURA_APIKEY_PARAM) - 1;
            const char *v = len > plen ? s + plen + 1 : "";
            apr_size_t vlen = len > plen ? len - plen - 1 : 0;

            if (found++) {
                return APR_EINVAL;
            }
            *key = form_decode(p, v, vlen);
            if (!*key) {
                return APR_EINVAL;
            }
        }
        else if (len) {
            if (kept_len) {
                kept[kept_len++] = '&';
            }
            memcpy(kept + kept_len, s, len);
            kept_len += len;
        }
        s = end ? end + 1 : s + len;
    }
    kept[kept_len] = '\0';
    if (found) {
        *rest = kept_len ? kept : NULL;
    }
    return APR_SUCCESS;
}
