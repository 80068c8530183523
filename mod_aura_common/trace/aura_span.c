/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_span.c: the spans of one request (see aura_span.h).  One thread
 * at a time: a request's set is written by the worker serving it and
 * read by the same worker at log_transaction, where it is encoded.
 */
#include "core/aura_siphash.h"
#include "trace/aura_span.h"

#include <string.h>

aura_spanset_t *aura_spanset_make(apr_pool_t *p, const char *trace_id,
                                  const char *remote_parent)
{
    aura_spanset_t *set = apr_palloc(p, sizeof(*set));

    memcpy(set->trace_id, trace_id, 32);
    set->trace_id[32] = '\0';
    if (remote_parent) {
        memcpy(set->remote_parent, remote_parent, 16);
        set->remote_parent[16] = '\0';
    }
    else {
        set->remote_parent[0] = '\0';
    }
    set->n = 0;
    set->nattrs = 0;
    set->lost = 0;
    set->pool = p;
    return set;
}

int aura_span_start(aura_spanset_t *set, const char *name, const char *id,
                    int parent, aura_span_kind_e kind, apr_time_t now)
{
    aura_span_t *sp;

    if (set->n >= AURA_SPAN_MAX) {
        set->lost++;
        return -1;
    }
    sp = &set->spans[set->n];
    sp->name = name;
    memcpy(sp->id, id, 16);
    sp->id[16] = '\0';
    sp->parent = parent >= 0 && parent < set->n ? parent : -1;
    sp->kind = kind;
    sp->start = now;
    sp->end = 0;
    sp->status = AURA_SPAN_UNSET;
    sp->message = NULL;
    return set->n++;
}

void aura_span_end(aura_spanset_t *set, int i, apr_time_t now, int status,
                   const char *message)
{
    aura_span_t *sp;

    if (i < 0 || i >= set->n || set->spans[i].end) {
        return;
    }
    sp = &set->spans[i];
    /* The clock may step back: a child never ends before it began. */
    sp->end = now > sp->start ? now : sp->start;
    sp->status = status;
    sp->message = status == AURA_SPAN_ERROR ? message : NULL;
}

void aura_span_discard(aura_spanset_t *set, int i, apr_time_t now)
{
    if (i >= 0 && i == set->n - 1) {
        while (set->nattrs && set->attrs[set->nattrs - 1].span == i) {
            set->nattrs--;
        }
        set->n--;
        return;
    }
    aura_span_end(set, i, now, AURA_SPAN_UNSET, NULL);
}

void aura_spanset_close(aura_spanset_t *set, apr_time_t now)
{
    int i;

    /* Children first: a parent's end then covers its children's. */
    for (i = set->n - 1; i >= 0; i--) {
        aura_span_t *sp = &set->spans[i];

        if (!sp->end) {
            aura_span_end(set, i, now, sp->status, sp->message);
        }
    }
}

static aura_span_attr_t *attr(aura_spanset_t *set, int i, const char *key,
                              aura_attr_type_e type)
{
    aura_span_attr_t *a;

    if (i < 0 || i >= set->n) {
        return NULL;
    }
    if (set->nattrs >= AURA_SPAN_ATTR_MAX) {
        set->lost++;
        return NULL;
    }
    a = &set->attrs[set->nattrs++];
    a->span = i;
    a->type = type;
    a->key = key;
    a->str = NULL;
    a->num = 0;
    return a;
}

void aura_span_attr_str(aura_spanset_t *set, int i, const char *key,
                        const char *value)
{
    aura_span_attr_t *a;

    if (value && (a = attr(set, i, key, AURA_ATTR_STRING))) {
        a->str = value;
    }
}

void aura_span_attr_int(aura_spanset_t *set, int i, const char *key,
                        apr_int64_t value)
{
    aura_span_attr_t *a = attr(set, i, key, AURA_ATTR_INT);

    if (a) {
        a->num = value;
    }
}

void aura_span_attr_bool(aura_spanset_t *set, int i, const char *key,
                         int value)
{
    aura_span_attr_t *a = attr(set, i, key, AURA_ATTR_BOOL);

    if (a) {
        a->num = value != 0;
    }
}

static apr_uint64_t hex64(const char *s)
{
    apr_uint64_t v = 0;
    int i;

    for (i = 0; i < 16; i++) {
        char c = s[i];

        v = v << 4 | (apr_uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return v;
}

/* Below ratio_ppm / 10^6 of 2^64, in integers: (2^63 / 10^6) * ppm
 * stays below 2^63; v's top bit is dropped to compare within 63 bits. */
static int within_ratio(apr_uint64_t v, apr_uint32_t ratio_ppm)
{
    apr_uint64_t bound;

    if (ratio_ppm >= AURA_SAMPLE_ONE) {
        return 1;
    }
    bound = ((APR_UINT64_C(1) << 63) / AURA_SAMPLE_ONE) * ratio_ppm;
    return (v >> 1) < bound;
}

int aura_trace_sampled(const char *trace_id, aura_parent_e parent,
                       unsigned int flags, apr_uint32_t ratio_ppm,
                       const unsigned char *key)
{
    switch (parent) {
    case AURA_PARENT_TRUSTED:
        return (flags & 0x01) != 0;
    case AURA_PARENT_UNTRUSTED:
        /* Not comparable with other gateways' decisions (each instance
         * has its own key): a trace that must be sampled end to end
         * comes through a trusted parent. */
        return key && within_ratio(aura_siphash24(key, trace_id, 32),
                                   ratio_ppm);
    default:
        return within_ratio(hex64(trace_id + 16), ratio_ppm);
    }
}
