/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_path.c: the raw request path's admission rule (aura_path.h).
 * httpd decides Locations on r->uri, which it has already normalized
 * (dot-segments removed, slashes merged, escapes decoded), while a
 * service or upstream may read the path as sent, or normalize it another
 * way.  Rather than forwarding one spelling and authorizing another, a
 * path with anything normalization would change is refused: what is
 * left decodes to exactly what the rules saw.  A ";" (raw or %3B) is
 * refused as well unless the caller allows it: httpd keeps "keys;x" as
 * the name of a segment, so a rule on ".../keys/rotate" does not apply,
 * while Tomcat, Spring and Jetty drop ";x" and find-my-way cuts the
 * path there, and run the rotation.  One pass, no allocation, no state
 * beyond the current segment and whether a ";" was seen.
 */
#include "core/aura_path.h"

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static apr_status_t refuse(const char **why, const char *phrase)
{
    if (why) {
        *why = phrase;
    }
    return APR_EINVAL;
}

/* What one segment looked like up to its ";parameters" (the name a
 * service resolves), counted while it is scanned. */
typedef struct {
    apr_size_t name_len;    /* decoded bytes of the name */
    apr_size_t dots;        /* how many of them are "." */
    int params;             /* a ";" (raw or %3B) was seen */
} segment_t;

static void segment_add(segment_t *sg, unsigned char c)
{
    if (sg->params) {
        return;
    }
    if (c == ';') {
        sg->params = 1;
        return;
    }
    sg->name_len++;
    if (c == '.') {
        sg->dots++;
    }
}

/* Scans one segment from raw[*i] to the next raw "/" or the end,
 * decoding escapes; *i is left on that "/" or at len. */
static apr_status_t scan_segment(const char *raw, apr_size_t len,
                                 apr_size_t *i, segment_t *sg,
                                 const char **why)
{
    apr_size_t k = *i;

    while (k < len && raw[k] != '/') {
        unsigned char c = (unsigned char)raw[k];

        if (c == '%') {
            int hi, lo;

            if (len - k < 3
                || (hi = hexval((unsigned char)raw[k + 1])) < 0
                || (lo = hexval((unsigned char)raw[k + 2])) < 0) {
                return refuse(why, "an invalid percent-escape");
            }
            c = (unsigned char)(hi * 16 + lo);
            if (c == '/') {
                return refuse(why, "an encoded slash (%2F)");
            }
            if (c == '\\') {
                return refuse(why, "an encoded backslash (%5C)");
            }
            if (c < 0x20 || c == 0x7f) {
                return refuse(why, "an encoded control character");
            }
            k += 3;
        }
        else {
            if (c <= 0x20 || c == 0x7f) {
                return refuse(why, "a raw space or control character");
            }
            if (c == '\\') {
                return refuse(why, "a backslash");
            }
            k++;
        }
        segment_add(sg, c);
    }
    *i = k;
    return APR_SUCCESS;
}

apr_status_t aura_path_check(const char *raw, apr_size_t len, int flags,
                             const char **why)
{
    apr_size_t i;
    int params = 0;

    if (!raw || len == 0 || raw[0] != '/') {
        return refuse(why, "a path that does not start with /");
    }
    /* raw[i] is the "/" that opens the next segment. */
    for (i = 0; i < len; ) {
        segment_t sg = { 0, 0, 0 };
        apr_size_t start = ++i;
        apr_status_t rv = scan_segment(raw, len, &i, &sg, why);

        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (sg.name_len > 0 && sg.name_len == sg.dots && sg.dots <= 2) {
            return refuse(why, "a dot-segment (. or ..)");
        }
        /* The last segment may be empty: "/" and ".../dir/". */
        if (sg.name_len == 0 && (i < len || i > start)) {
            return refuse(why, "an empty segment (// or /;)");
        }
        params |= sg.params;
    }
    /* Last: a path refused for anything else says so, whatever ";" it
     * also holds; this one is otherwise normal. */
    if (params && !(flags & AURA_PATH_ALLOW_PARAMS)) {
        if (why) {
            *why = "a ';' (raw or %3B) in the path: segment parameters";
        }
        return AURA_PATH_EPARAMS;
    }
    return APR_SUCCESS;
}
