/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_origin.c: the origins AuraCORSAllowOrigin accepts.  The
 * management plane echoes an Origin only when it equals a listed one,
 * so a listed value a browser can never send (a wildcard, a path, the
 * default port) would silently allow nothing, or worse, look like it
 * allowed more than it does.  Such values stop httpd at start instead;
 * only the case is normalized, since browsers send scheme and host in
 * lower case.  Pure: APR only.
 */
#include "http/aura_origin.h"

#include "apr_lib.h"
#include "apr_strings.h"

#include <string.h>

static apr_status_t refuse(const char **why, const char *text)
{
    *why = text;
    return APR_EINVAL;
}

/* A DNS name (or an IPv4 address, which has the same characters):
 * non-empty labels of [A-Za-z0-9_-]. */
static int dns_host(const char *s, apr_size_t len)
{
    apr_size_t i, label = 0;

    if (!len || len > 253) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (!label) {
                return 0;
            }
            label = 0;
        }
        else if (apr_isalnum(s[i]) || s[i] == '-' || s[i] == '_') {
            if (++label > 63) {
                return 0;
            }
        }
        else {
            return 0;
        }
    }
    return label > 0;
}

/* "[...]": hex digits, ':' and '.' (an IPv4 tail) inside. */
static int ipv6_host(const char *s, apr_size_t len)
{
    apr_size_t i;

    if (len < 4 || s[0] != '[' || s[len - 1] != ']') {
        return 0;
    }
    for (i = 1; i < len - 1; i++) {
        if (!apr_isxdigit(s[i]) && s[i] != ':' && s[i] != '.') {
            return 0;
        }
    }
    return 1;
}

/* ":port": 1 to 65535, no leading zero, not the scheme's default. */
static apr_status_t check_port(const char *s, apr_size_t len,
                               int default_port, const char **why)
{
    apr_size_t i;
    long v = 0;

    if (!len || len > 5 || s[0] == '0') {
        return refuse(why, "the port must be 1 to 65535, without leading "
                           "zeros");
    }
    for (i = 0; i < len; i++) {
        if (!apr_isdigit(s[i])) {
            return refuse(why, "the port must be 1 to 65535, without "
                               "leading zeros");
        }
        v = v * 10 + (s[i] - '0');
    }
    if (v > 65535) {
        return refuse(why, "the port must be 1 to 65535, without leading "
                           "zeros");
    }
    if (v == default_port) {
        return refuse(why, "a browser never sends the scheme's default "
                           "port (80 for http, 443 for https): leave it "
                           "out");
    }
    return APR_SUCCESS;
}

/* What follows host[:port]: nothing is allowed; say what it is. */
static apr_status_t check_rest(const char *rest, const char **why)
{
    if (!*rest) {
        return APR_SUCCESS;
    }
    if (!strcmp(rest, "/")) {
        return refuse(why, "an origin has no trailing slash");
    }
    if (*rest == '/') {
        return refuse(why, "an origin has no path");
    }
    if (*rest == '?') {
        return refuse(why, "an origin has no query");
    }
    return refuse(why, "an origin has no fragment");
}

apr_status_t aura_origin_parse(apr_pool_t *p, const char *in,
                               const char **out, const char **why)
{
    const char *auth, *colon;
    apr_size_t i, alen, hlen;
    int default_port;
    char *low;
    apr_status_t rv;

    *out = NULL;
    *why = NULL;
    if (!in || !*in) {
        return refuse(why, "it is empty");
    }
    for (i = 0; in[i]; i++) {
        unsigned char c = (unsigned char)in[i];

        if (c <= ' ' || c >= 0x7f) {
            return refuse(why, "it holds whitespace, a control character "
                               "or a non-ASCII one (write an IDN host in "
                               "its xn-- form)");
        }
    }
    if (strchr(in, '*')) {
        return refuse(why, "wildcards are not supported: list each origin");
    }
    if (!strcasecmp(in, "null")) {
        return refuse(why, "\"null\" is the origin of sandboxed and file: "
                           "documents, never of a console");
    }
    if (!strncasecmp(in, "https://", 8)) {
        auth = in + 8;
        default_port = 443;
    }
    else if (!strncasecmp(in, "http://", 7)) {
        auth = in + 7;
        default_port = 80;
    }
    else {
        return refuse(why, strstr(in, "://")
                           ? "the scheme must be http or https"
                           : "the scheme (https://) is missing");
    }
    alen = strcspn(auth, "/?#");
    if (memchr(auth, '@', alen)) {
        return refuse(why, "an origin has no userinfo (user@)");
    }
    rv = check_rest(auth + alen, why);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* The port's colon: after the "]" of an IPv6 address. */
    colon = NULL;
    for (i = alen; i > 0; i--) {
        if (auth[i - 1] == ':') {
            colon = auth + i - 1;
            break;
        }
        if (auth[i - 1] == ']') {
            break;
        }
    }
    hlen = colon ? (apr_size_t)(colon - auth) : alen;
    if (!(auth[0] == '[' ? ipv6_host(auth, hlen) : dns_host(auth, hlen))) {
        return refuse(why, "the host is not a host name, an IPv4 address "
                           "or a bracketed IPv6 address");
    }
    if (colon) {
        rv = check_port(colon + 1, alen - hlen - 1, default_port, why);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    low = apr_pstrdup(p, in);
    for (i = 0; low[i]; i++) {
        low[i] = (char)apr_tolower(low[i]);
    }
    *out = low;
    return APR_SUCCESS;
}

const char *aura_ws_url(apr_pool_t *p, const char *url)
{
    return apr_pstrcat(p, strncasecmp(url, "https", 5) ? "ws" : "wss",
                       strstr(url, "://"), NULL);
}
