/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_otlp.c: spans to OTLP/JSON (see aura_otlp.h).  String values are
 * cut at AURA_SPAN_VALUE_MAX and reduced to printable ASCII (anything
 * else becomes '?'): they come from request headers and paths, which
 * may hold any byte, and a collector rejects a batch that is not UTF-8.
 */
#include "trace/aura_otlp.h"

#include "apr_strings.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The spans of a request are encoded by hand into one growing buffer:
 * jansson's objects cost about 480,000 instructions for a request's
 * seven spans (building, dumping and freeing the tree), more than four
 * times the whole request (bench/RESULTS-tracing.md); the fragment is
 * simple enough to write directly.  jansson still makes the head, once
 * per child, and the unit tests parse every fragment with it. */
typedef struct {
    char *p;
    apr_size_t len, cap;
    int failed;
} buf_t;

static void put(buf_t *b, const char *s, apr_size_t n)
{
    if (b->failed) {
        return;
    }
    if (b->len + n + 1 > b->cap) {
        apr_size_t cap = b->cap ? b->cap : 2048;
        char *p;

        while (b->len + n + 1 > cap) {
            cap *= 2;
        }
        if (!(p = realloc(b->p, cap))) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(buf_t *b, const char *s)
{
    put(b, s, strlen(s));
}

/* A JSON string of s: cut at AURA_SPAN_VALUE_MAX, printable ASCII
 * only (anything else '?'), quote and backslash escaped. */
static void string(buf_t *b, const char *s)
{
    char out[2 * AURA_SPAN_VALUE_MAX + 2];
    apr_size_t i, n = 0;

    out[n++] = '"';
    for (i = 0; s[i] && i < AURA_SPAN_VALUE_MAX; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        }
        else {
            out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
    }
    out[n++] = '"';
    put(b, out, n);
}

/* The digits of v (apr_snprintf costs ten times as much, and a span
 * has four numbers or more). */
static void number(buf_t *b, apr_int64_t v)
{
    char digits[24];
    apr_uint64_t u = v < 0 ? 0 - (apr_uint64_t)v : (apr_uint64_t)v;
    int n = sizeof(digits);

    do {
        digits[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) {
        digits[--n] = '-';
    }
    put(b, digits + n, sizeof(digits) - n);
}

/* OTLP/JSON: 64-bit integers, times included, are decimal strings. */
static void decimal(buf_t *b, apr_int64_t v, const char *suffix)
{
    put(b, "\"", 1);
    number(b, v);
    puts_(b, suffix);
    put(b, "\"", 1);
}

static void attribute(buf_t *b, const aura_span_attr_t *a)
{
    puts_(b, "{\"key\":");
    string(b, a->key);
    switch (a->type) {
    case AURA_ATTR_INT:
        puts_(b, ",\"value\":{\"intValue\":");
        decimal(b, a->num, "");
        break;
    case AURA_ATTR_BOOL:
        puts_(b, a->num ? ",\"value\":{\"boolValue\":true"
                        : ",\"value\":{\"boolValue\":false");
        break;
    default:
        puts_(b, ",\"value\":{\"stringValue\":");
        string(b, a->str);
        break;
    }
    puts_(b, "}}");
}

static void span(buf_t *b, const aura_spanset_t *set, int i)
{
    const aura_span_t *sp = &set->spans[i];
    const char *parent = sp->parent >= 0 ? set->spans[sp->parent].id
                                         : set->remote_parent;
    int k, first = 1;

    puts_(b, "{\"traceId\":\"");
    puts_(b, set->trace_id);
    puts_(b, "\",\"spanId\":\"");
    puts_(b, sp->id);
    puts_(b, "\"");
    if (*parent) {
        puts_(b, ",\"parentSpanId\":\"");
        puts_(b, parent);
        puts_(b, "\"");
    }
    puts_(b, ",\"name\":");
    string(b, sp->name ? sp->name : "-");
    puts_(b, ",\"kind\":");
    number(b, sp->kind);
    /* Microseconds: three zeros make nanoseconds. */
    puts_(b, ",\"startTimeUnixNano\":");
    decimal(b, sp->start, "000");
    puts_(b, ",\"endTimeUnixNano\":");
    decimal(b, sp->end ? sp->end : sp->start, "000");
    puts_(b, ",\"attributes\":[");
    for (k = 0; k < set->nattrs; k++) {
        if (set->attrs[k].span == i) {
            if (!first) {
                puts_(b, ",");
            }
            first = 0;
            attribute(b, &set->attrs[k]);
        }
    }
    puts_(b, "]");
    if (sp->status != AURA_SPAN_UNSET) {
        puts_(b, ",\"status\":{\"code\":");
        number(b, sp->status);
        if (sp->message) {
            puts_(b, ",\"message\":");
            string(b, sp->message);
        }
        puts_(b, "}");
    }
    puts_(b, "}");
}

char *aura_otlp_spans(const aura_spanset_t *set, apr_size_t *len)
{
    buf_t b = { NULL, 0, 0, 0 };
    int i;

    *len = 0;
    if (!set->n) {
        return NULL;
    }
    for (i = 0; i < set->n; i++) {
        if (i) {
            puts_(&b, ",");
        }
        span(&b, set, i);
    }
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
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
