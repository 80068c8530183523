/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_redact.c: credentials out of URLs before a log line prints them.
 * One rule for every place a URL reaches a log (the request line, the
 * unparsed URI, the query string): a parameter whose name looks like a
 * credential keeps its name and loses its value.  A rule, not a list of
 * exact names: a client (or a library) spells a key "apikey", "APIKEY",
 * "api_key", "Api-Key" or "%61pikey", and the metrics token may come as
 * "token" or "access_token"; each must be hidden even though only the
 * exact "apikey" is ever accepted as a credential.  Only logs are
 * rewritten: what a service receives is decided elsewhere.
 * Pure: no allocation unless something is redacted, no httpd.h.
 */
#include "core/aura_redact.h"

#include "apr_lib.h"
#include "apr_strings.h"

#include <string.h>

/* Contained anywhere in the normalized name. */
static const char *const contains[] = {
    "key", "token", "secret", "passw", "passphrase", "pwd", "auth", "jwt",
    "bearer", "signature", "cred", "session", "sessid", "cookie", "ticket",
    NULL
};

/* The whole normalized name: too short to look for inside others. */
static const char *const exact[] = {
    "pass", "sig", "code", "otp", "pin", "sid", "hmac", NULL
};

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = apr_tolower(c);
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* One round of %XX decoding, in place; whether anything was decoded.
 * A '%' not followed by two hex digits stays as it is. */
static int decode_once(char *buf, apr_size_t *len)
{
    apr_size_t i, o = 0;
    int changed = 0;

    for (i = 0; i < *len; i++) {
        if (buf[i] == '%' && i + 2 < *len
            && hexval(buf[i + 1]) >= 0 && hexval(buf[i + 2]) >= 0) {
            buf[o++] = (char)(hexval(buf[i + 1]) * 16 + hexval(buf[i + 2]));
            i += 2;
            changed = 1;
        }
        else {
            buf[o++] = buf[i];
        }
    }
    *len = o;
    return changed;
}

int aura_redact_name(const char *name, apr_size_t len)
{
    char buf[AURA_REDACT_NAME_MAX + 1];
    apr_size_t i, n = 0;
    int round;

    if (len > AURA_REDACT_NAME_MAX) {
        return 1;
    }
    memcpy(buf, name, len);
    for (round = 0; round < 3 && decode_once(buf, &len); round++) {
        continue;
    }
    /* Letters and digits only, lower case: separators, brackets, NULs
     * and anything non-ASCII go. */
    for (i = 0; i < len; i++) {
        if (apr_isalnum(buf[i]) && !(buf[i] & 0x80)) {
            buf[n++] = (char)apr_tolower(buf[i]);
        }
    }
    buf[n] = '\0';
    for (i = 0; contains[i]; i++) {
        if (strstr(buf, contains[i])) {
            return 1;
        }
    }
    for (i = 0; exact[i]; i++) {
        if (!strcmp(buf, exact[i])) {
            return 1;
        }
    }
    return 0;
}

static int separator(char c)
{
    return c == '&' || c == ';' || c == '#';
}

/* Rewrites s with the parameters of [start, end) redacted into out (when
 * not NULL); returns the length of the result, and in *changed whether
 * it differs from s.  Called twice: once to size, once to write. */
static apr_size_t rewrite(const char *s, apr_size_t start, apr_size_t end,
                          char *out, int *changed)
{
    static const char mark[] = AURA_REDACTED;
    apr_size_t total = strlen(s), i = start, o = start;

    *changed = 0;
    if (out) {
        memcpy(out, s, start);
    }
    while (i < end) {
        apr_size_t pend = i, eq;

        while (pend < end && !separator(s[pend])) {
            pend++;
        }
        for (eq = i; eq < pend && s[eq] != '='; eq++) {
            continue;
        }
        if (eq < pend && aura_redact_name(s + i, eq - i)
            && (pend - eq - 1 != sizeof(mark) - 1
                || memcmp(s + eq + 1, mark, sizeof(mark) - 1))) {
            /* name=, then the mark instead of the value */
            if (out) {
                memcpy(out + o, s + i, eq + 1 - i);
                memcpy(out + o + eq + 1 - i, mark, sizeof(mark) - 1);
            }
            o += eq + 1 - i + sizeof(mark) - 1;
            *changed = 1;
        }
        else {
            if (out) {
                memcpy(out + o, s + i, pend - i);
            }
            o += pend - i;
        }
        i = pend;
        if (i < end) {
            /* the separator itself */
            if (out) {
                out[o] = s[i];
            }
            o++;
            i++;
        }
    }
    if (out) {
        memcpy(out + o, s + end, total - end + 1);
    }
    return o + (total - end);
}

static const char *redact_range(apr_pool_t *p, const char *s,
                                apr_size_t start, apr_size_t end)
{
    int changed;
    apr_size_t len = rewrite(s, start, end, NULL, &changed);
    char *out;

    if (!changed) {
        return s;
    }
    out = apr_palloc(p, len + 1);
    (void)rewrite(s, start, end, out, &changed);
    return out;
}

const char *aura_redact_query(apr_pool_t *p, const char *q)
{
    return q ? redact_range(p, q, 0, strlen(q)) : NULL;
}

const char *aura_redact_uri(apr_pool_t *p, const char *s)
{
    apr_size_t start;

    if (!s) {
        return NULL;
    }
    start = strcspn(s, "?#");
    if (!s[start]) {
        return s;
    }
    return redact_range(p, s, start + 1, strlen(s));
}

const char *aura_redact_request_line(apr_pool_t *p, const char *s)
{
    const char *first, *last;
    apr_size_t start, end;

    if (!s) {
        return NULL;
    }
    first = strchr(s, ' ');
    last = strrchr(s, ' ');
    /* "GET /x?q HTTP/1.1"; "GET /x?q" (HTTP/0.9) runs to the end. */
    end = (first && last != first) ? (apr_size_t)(last - s) : strlen(s);
    start = first ? (apr_size_t)(first - s) : 0;
    start += strcspn(s + start, "?#");
    if (start >= end) {
        return s;
    }
    return redact_range(p, s, start + 1, end);
}
