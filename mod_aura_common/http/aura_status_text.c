/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_status_text.c: the words of server-status's ?auto lines
 * (aura_status_text.h).
 */
#include "http/aura_status_text.h"

#include "apr_strings.h"

#include <string.h>

static int key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

const char *aura_status_key(apr_pool_t *p, const char *s)
{
    const char *c;
    char *out, *o;

    if (!s || !*s) {
        return "_";
    }
    for (c = s; *c && key_char(*c); c++) {
    }
    if (!*c) {
        return s;
    }
    out = apr_pstrdup(p, s);
    for (o = out; *o; o++) {
        if (!key_char(*o)) {
            *o = '_';
        }
    }
    return out;
}

static int control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

const char *aura_status_value(apr_pool_t *p, const char *s)
{
    const char *c;
    char *out, *o;

    if (!s) {
        return "-";
    }
    for (c = s; *c && !control((unsigned char)*c); c++) {
    }
    if (!*c) {
        return s;
    }
    out = apr_pstrdup(p, s);
    for (o = out; *o; o++) {
        if (control((unsigned char)*o)) {
            *o = ' ';
        }
    }
    return out;
}

const char *aura_status_fill(apr_pool_t *p, apr_int64_t used,
                             apr_int64_t cap)
{
    if (cap > 0) {
        return apr_psprintf(p, "%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT,
                            used, cap);
    }
    return apr_psprintf(p, "%" APR_INT64_T_FMT "/%s", used,
                        cap == AURA_STATUS_CAP_OFF ? "off" : "-");
}
