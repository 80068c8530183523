/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_trace.c: traceparent (see aura_trace.h).  Strict on what it
 * keeps: lower-case hex only, fixed lengths, no all-zero ids, so a value
 * that reaches logs and upstreams is exactly what the spec allows.
 */
#include "core/aura_trace.h"

#include <string.h>

static int lower_hex(const char *s, apr_size_t n)
{
    apr_size_t i;
    int nonzero = 0;

    for (i = 0; i < n; i++) {
        char c = s[i];

        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return -1;
        }
        nonzero |= c != '0';
    }
    return nonzero;
}

static unsigned int hex_value(char c)
{
    return c <= '9' ? (unsigned int)(c - '0') : (unsigned int)(c - 'a' + 10);
}

int aura_traceparent_parse(const char *v, aura_traceparent_t *out)
{
    apr_size_t len;

    if (!v) {
        return 0;
    }
    len = strlen(v);
    if (len < AURA_TRACEPARENT_LEN
        || lower_hex(v, 2) < 0 || !strncmp(v, "ff", 2)
        || (!strncmp(v, "00", 2) && len != AURA_TRACEPARENT_LEN)
        || (len > AURA_TRACEPARENT_LEN && v[AURA_TRACEPARENT_LEN] != '-')
        || v[2] != '-' || v[35] != '-' || v[52] != '-'
        || lower_hex(v + 3, 32) != 1 || lower_hex(v + 36, 16) != 1
        || lower_hex(v + 53, 2) < 0) {
        return 0;
    }
    memcpy(out->trace_id, v + 3, 32);
    out->trace_id[32] = '\0';
    memcpy(out->parent_id, v + 36, 16);
    out->parent_id[16] = '\0';
    out->flags = hex_value(v[53]) * 16 + hex_value(v[54]);
    return 1;
}

void aura_traceparent_format(const aura_traceparent_t *t, char *out)
{
    static const char hex[] = "0123456789abcdef";

    memcpy(out, "00-", 3);
    memcpy(out + 3, t->trace_id, 32);
    out[35] = '-';
    memcpy(out + 36, t->parent_id, 16);
    out[52] = '-';
    out[53] = hex[(t->flags >> 4) & 0x0f];
    out[54] = hex[t->flags & 0x0f];
    out[55] = '\0';
}

void aura_trace_hex_id(const unsigned char *rnd, apr_size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    apr_size_t i;
    int nonzero = 0;

    for (i = 0; i < n; i++) {
        out[2 * i] = hex[rnd[i] >> 4];
        out[2 * i + 1] = hex[rnd[i] & 0x0f];
        nonzero |= rnd[i] != 0;
    }
    if (!nonzero && n) {
        out[2 * n - 1] = '1';
    }
    out[2 * n] = '\0';
}
