/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_otlp.c: spans to OTLP/JSON (see aura_otlp.h).  String values are
 * cut at AURA_SPAN_VALUE_MAX and reduced to printable ASCII (anything
 * else becomes '?'): they come from request headers and paths, which
 * may hold any byte, and a collector rejects a batch that is not UTF-8
 * (jansson would refuse to encode it).
 */
#include "trace/aura_otlp.h"

#include "apr_strings.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static json_t *printable(const char *s)
{
    char buf[AURA_SPAN_VALUE_MAX + 1];
    apr_size_t i;

    for (i = 0; s[i] && i < AURA_SPAN_VALUE_MAX; i++) {
        unsigned char c = (unsigned char)s[i];

        buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    buf[i] = '\0';
    return json_stringn(buf, i);
}

/* OTLP/JSON: 64-bit integers are decimal strings. */
static json_t *decimal(apr_int64_t v)
{
    char buf[32];

    apr_snprintf(buf, sizeof(buf), "%" APR_INT64_T_FMT, v);
    return json_string(buf);
}

static json_t *nanos(apr_time_t usec)
{
    char buf[32];

    apr_snprintf(buf, sizeof(buf), "%" APR_UINT64_T_FMT "000",
                 (apr_uint64_t)usec);
    return json_string(buf);
}

static json_t *attribute(const aura_span_attr_t *a)
{
    json_t *value;

    switch (a->type) {
    case AURA_ATTR_INT:
        value = json_pack("{s:o}", "intValue", decimal(a->num));
        break;
    case AURA_ATTR_BOOL:
        value = json_pack("{s:b}", "boolValue", (int)a->num);
        break;
    default:
        value = json_pack("{s:o}", "stringValue", printable(a->str));
        break;
    }
    return json_pack("{s:s, s:o}", "key", a->key, "value", value);
}

static json_t *span(const aura_spanset_t *set, int i)
{
    const aura_span_t *sp = &set->spans[i];
    const char *parent = sp->parent >= 0 ? set->spans[sp->parent].id
                                         : set->remote_parent;
    json_t *o, *attrs = json_array();
    int k;

    for (k = 0; k < set->nattrs; k++) {
        if (set->attrs[k].span == i) {
            json_array_append_new(attrs, attribute(&set->attrs[k]));
        }
    }
    o = json_pack("{s:s, s:s, s:o, s:i, s:o, s:o, s:o}",
                  "traceId", set->trace_id, "spanId", sp->id,
                  "name", printable(sp->name ? sp->name : "-"),
                  "kind", (int)sp->kind, "startTimeUnixNano",
                  nanos(sp->start), "endTimeUnixNano",
                  nanos(sp->end ? sp->end : sp->start),
                  "attributes", attrs);
    if (o && *parent) {
        json_object_set_new(o, "parentSpanId", json_string(parent));
    }
    if (o && sp->status != AURA_SPAN_UNSET) {
        json_t *st = json_pack("{s:i}", "code", sp->status);

        if (st && sp->message) {
            json_object_set_new(st, "message", printable(sp->message));
        }
        json_object_set_new(o, "status", st);
    }
    return o;
}

char *aura_otlp_spans(const aura_spanset_t *set, apr_size_t *len)
{
    json_t *a;
    char *out;
    int i;

    *len = 0;
    if (!set->n || !(a = json_array())) {
        return NULL;
    }
    for (i = 0; i < set->n; i++) {
        json_array_append_new(a, span(set, i));
    }
    out = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    if (!out) {
        return NULL;
    }
    /* "[...]" less its brackets: a fragment of the batch's array. */
    *len = strlen(out) - 2;
    memmove(out, out + 1, *len);
    out[*len] = '\0';
    return out;
}

const char *aura_otlp_head(apr_pool_t *p,
                           const apr_array_header_t *resource,
                           const char *version)
{
    const char *const *kv = (const char *const *)resource->elts;
    json_t *attrs = json_array(), *scope;
    char *a, *sc;
    const char *head;
    int i;

    for (i = 0; i + 1 < resource->nelts; i += 2) {
        json_t *k = json_string(kv[i]), *v = json_string(kv[i + 1]);

        if (!k || !v) {
            json_decref(k);
            json_decref(v);
            json_decref(attrs);
            return NULL;
        }
        json_array_append_new(attrs, json_pack("{s:o, s:{s:o}}", "key", k,
                                               "value", "stringValue", v));
    }
    scope = json_pack("{s:s, s:s}", "name", AURA_OTLP_SCOPE, "version",
                      version);
    a = json_dumps(attrs, JSON_COMPACT);
    sc = json_dumps(scope, JSON_COMPACT);
    json_decref(attrs);
    json_decref(scope);
    if (!a || !sc) {
        free(a);
        free(sc);
        return NULL;
    }
    head = apr_pstrcat(p, "{\"resourceSpans\":[{\"resource\":{\"attributes\":",
                       a, "},\"scopeSpans\":[{\"scope\":", sc,
                       ",\"spans\":[", NULL);
    free(a);
    free(sc);
    return head;
}
