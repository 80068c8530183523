/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_redact.c: credentials out of URLs before a log line prints them.
 * One rule for every place a URL reaches a log (the request line, the
 * unparsed URI, the query string): a parameter whose name looks like a
 * credential keeps its name and loses its value.  A rule, not a list of
 * exact names: a client (or a library) spells a key "apikey", "APIKEY",
 * "api_key", "Api-Key" or "%61pikey", and the metrics token may come as
 * "token" or "access_token"; each must be hidden.  Families, not names:
 * "otp_code", "passcode", "verificationCode" and "magic_link" are one
 * time codes of a dozen sign-in flows, each spelled its own way.  Only
 * logs are rewritten: what a service receives is decided elsewhere
 * (every apikey parameter is taken out of the query, aura_apikey.c).
 * Pure: no allocation unless something is redacted, no httpd.h.
 */
#include "core/aura_redact.h"

#include "apr_lib.h"
#include "apr_strings.h"

#include <string.h>

/* The families (docs/logging.md, "Redaction"; issue #29 point 5 added
 * the one-time codes).  A name is split into tokens (below) and the
 * tokens, lower-cased and joined, make its flat form. */

/* Anywhere in the flat form: words rarely inside an ordinary name. */
static const char *const contains[] = {
    "key", "token", "secret", "passw", "passphrase", "passcode", "pwd",
    "auth", "jwt", "bearer", "signature", "cred", "session", "sessid",
    "cookie", "ticket", "hmac", "nonce", "magic", "csrf", "xsrf", "saml",
    "assertion", "verifier", NULL
};

/* A whole token: too short to look for inside others ("pass" is in
 * "passage", "sig" in "signal", "pin" in "spin", "sid" in "side"). */
static const char *const token_exact[] = {
    "pass", "sig", "sid", "pin", "mfa", "tfa", "2fa", "cvv", "cvc", "csc",
    NULL
};

/* "code" ends a token of a secret ("code", "otp_code", "passcode",
 * "backup_codes") unless what qualifies it names an ordinary code: the
 * part of the token before "code" ("zipcode", "barcode"), or the token
 * before a bare "code" ("country_code", "statusCode").  A list of the
 * ordinary ones, not of the secret ones: an unknown "xyz_code" is
 * redacted. */
static const char *const plain_codes[] = {
    "country", "zip", "postal", "post", "area", "currency", "language",
    "lang", "locale", "region", "status", "error", "err", "http",
    "response", "reason", "exit", "return", "result", "event", "product",
    "item", "bar", "op", "uni", "en", "de", "geo", "color", "colour",
    "dial", "calling", "airport", "iata", "icao", "tax", "unit", "state",
    "province", "city", "county", "iso", "hs", "sku", "source", "zone",
    NULL
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

/* ASCII by hand: a name's bytes may be anything, and only ASCII letters
 * and digits count (apr_isalnum follows the locale). */
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alnum(char c)
{
    return is_lower(c) || is_upper(c) || is_digit(c);
}

/* A name split into tokens: flat holds them lower-cased and joined,
 * token i is flat[at[i], at[i + 1]). */
typedef struct {
    char flat[AURA_REDACT_NAME_MAX + 1];
    apr_size_t at[AURA_REDACT_NAME_MAX + 2];
    apr_size_t n;                /* tokens */
} tokens_t;

/* Whether a token starts at buf[i] (an ASCII letter or digit) within a
 * run of them: "otpCode", "OTPCode" and "cvv2" are two tokens each. */
static int token_starts(const char *buf, apr_size_t len, apr_size_t i)
{
    char c = buf[i], prev;

    if (i == 0 || !is_alnum(buf[i - 1])) {
        return 1;
    }
    prev = buf[i - 1];
    if (is_upper(c) && (is_lower(prev) || is_digit(prev))) {
        return 1;
    }
    if (is_upper(c) && is_upper(prev) && i + 1 < len
        && is_lower(buf[i + 1])) {
        return 1;
    }
    return is_digit(c) && !is_digit(prev);
}

/* Decoded up to three rounds (a double-encoded name decodes further in
 * some stacks), then tokenized.  0 when the name is too long. */
static int tokenize(const char *name, apr_size_t len, tokens_t *t)
{
    char buf[AURA_REDACT_NAME_MAX];
    apr_size_t i, o = 0;
    int round;

    if (len > AURA_REDACT_NAME_MAX) {
        return 0;
    }
    memcpy(buf, name, len);
    for (round = 0; round < 3 && decode_once(buf, &len); round++) {
        continue;
    }
    t->n = 0;
    for (i = 0; i < len; i++) {
        if (!is_alnum(buf[i])) {
            continue;
        }
        if (token_starts(buf, len, i)) {
            t->at[t->n++] = o;
        }
        t->flat[o++] = is_upper(buf[i]) ? (char)(buf[i] - 'A' + 'a')
                                        : buf[i];
    }
    t->flat[o] = '\0';
    t->at[t->n] = o;
    return 1;
}

int aura_param_name_flat(const char *name, apr_size_t len,
                         char out[AURA_REDACT_NAME_MAX + 1])
{
    tokens_t t;

    if (!tokenize(name, len, &t)) {
        return 0;
    }
    memcpy(out, t.flat, t.at[t.n] + 1);
    return 1;
}

static int in_list(const char *const *list, const char *s, apr_size_t len)
{
    apr_size_t i;

    for (i = 0; list[i]; i++) {
        if (strlen(list[i]) == len && !memcmp(list[i], s, len)) {
            return 1;
        }
    }
    return 0;
}

static int ends_with(const char *s, apr_size_t len, const char *suffix)
{
    apr_size_t n = strlen(suffix);

    return len >= n && !memcmp(s + len - n, suffix, n);
}

/* Token k ends in "code" or "codes": a secret unless its qualifier is
 * an ordinary code's. */
static int secret_code(const tokens_t *t, apr_size_t k)
{
    const char *tok = t->flat + t->at[k];
    apr_size_t len = t->at[k + 1] - t->at[k], base;

    if (ends_with(tok, len, "codes")) {
        len--;
    }
    if (!ends_with(tok, len, "code")) {
        return 0;
    }
    base = len - 4;
    if (base > 0) {
        return !in_list(plain_codes, tok, base);
    }
    return k == 0 || !in_list(plain_codes, t->flat + t->at[k - 1],
                              t->at[k] - t->at[k - 1]);
}

int aura_redact_name(const char *name, apr_size_t len)
{
    tokens_t t;
    apr_size_t i, k;

    if (!tokenize(name, len, &t)) {
        return 1;
    }
    for (i = 0; contains[i]; i++) {
        if (strstr(t.flat, contains[i])) {
            return 1;
        }
    }
    for (k = 0; k < t.n; k++) {
        const char *tok = t.flat + t.at[k];
        apr_size_t tlen = t.at[k + 1] - t.at[k];

        /* "otp" begins or ends a token ("totp", "otpcode", "emailOtp"),
         * never inside one ("footprint"). */
        if (in_list(token_exact, tok, tlen)
            || (tlen >= 3 && !memcmp(tok, "otp", 3))
            || ends_with(tok, tlen, "otp") || secret_code(&t, k)) {
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

const char *aura_redact_userinfo(apr_pool_t *p, const char *s)
{
    const char *auth, *at = NULL, *c;

    if (!s || !(auth = strstr(s, "://"))) {
        return s;
    }
    auth += 3;
    for (c = auth; *c && !strchr("/?# ", *c); c++) {
        if (*c == '@') {
            at = c;
        }
    }
    if (!at) {
        return s;
    }
    return apr_pstrcat(p, apr_pstrmemdup(p, s, (apr_size_t)(auth - s)),
                       at + 1, NULL);
}
