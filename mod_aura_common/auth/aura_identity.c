/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_identity.c: what may become identity, and the Authorization
 * header's one accepted form.  Pure (APR only), see aura_identity.h.
 *
 * Why so strict: an identity value ends up in Aura-* headers (NATS
 * headers and HTTP request headers), in the access log, in Redis keys
 * and in fixed-size tables.  A control character there splits a header
 * or a log line; an unbounded length overflows whatever has a size.  So
 * every such value is checked once, where it enters, and refused whole:
 * never cut, never cleaned (two different values must never become the
 * same identity).
 */
#include "auth/aura_identity.h"

#include <string.h>
#include <strings.h>

int aura_identity_text_ok(const char *s, apr_size_t len, apr_size_t max)
{
    apr_size_t i;

    if (!s || len == 0 || len > max) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < 0x20 || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

int aura_identity_actor_reserved(const char *s, apr_size_t len)
{
    apr_size_t n = sizeof(AURA_KEY_ACTOR_PREFIX) - 1;

    return s && len >= n && !strncasecmp(s, AURA_KEY_ACTOR_PREFIX, n);
}

static int id_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

int aura_identity_id_ok(const char *s, apr_size_t max)
{
    apr_size_t n;

    if (!s) {
        return 0;
    }
    for (n = 0; s[n]; n++) {
        if (n >= max || !id_char((unsigned char)s[n])) {
            return 0;
        }
    }
    return n > 0;
}

/* RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_"
 * / "~" / "+" / "/" ) *"=" */
static int b64token_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'
           || c == '~' || c == '+' || c == '/';
}

aura_authz_e aura_authz_parse(const char *value, const char **token)
{
    const char *s, *t;

    *token = NULL;
    if (!value) {
        return AURA_AUTHZ_NONE;
    }
    if (strncasecmp(value, "Bearer", 6) || value[6] != ' ') {
        return AURA_AUTHZ_MALFORMED;
    }
    s = value + 6;
    while (*s == ' ') {
        s++;
    }
    t = s;
    while (b64token_char((unsigned char)*s)) {
        s++;
    }
    if (s == t) {
        return AURA_AUTHZ_MALFORMED;
    }
    while (*s == '=') {
        s++;
    }
    if (*s) {
        return AURA_AUTHZ_MALFORMED;
    }
    *token = t;
    return AURA_AUTHZ_BEARER;
}
