/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_span.h: the spans of one request, as pure logic (aura_span.c).
 * A sampled request gets one aura_spanset_t in r->pool: a fixed array,
 * so recording a span is a few stores and never an allocation; a set
 * that is full records nothing more (counted in .lost).  An unsampled
 * request has no set at all: its cost is the ids of its traceparent.
 * Also the sampler (parent-based for a trusted parent, else a ratio on
 * the trace id, keyed when the client chose it).  No httpd.h: cmocka
 * links it as it is.
 */
#ifndef AURA_SPAN_H
#define AURA_SPAN_H

#include "apr.h"
#include "apr_pools.h"
#include "apr_time.h"

/* OTLP's SpanKind numbers. */
typedef enum {
    AURA_SPAN_INTERNAL = 1,
    AURA_SPAN_SERVER = 2,
    AURA_SPAN_CLIENT = 3
} aura_span_kind_e;

/* OTLP's Status.code numbers. */
#define AURA_SPAN_UNSET 0
#define AURA_SPAN_OK    1
#define AURA_SPAN_ERROR 2

typedef enum {
    AURA_ATTR_STRING = 0,
    AURA_ATTR_INT,
    AURA_ATTR_BOOL
} aura_attr_type_e;

/* The spans a request may record: the server span, four access stages,
 * the upstream call and its attempts leave room to spare. */
#define AURA_SPAN_MAX  16
/* Attributes of all spans of a set together. */
#define AURA_SPAN_ATTR_MAX 48
/* Longer string values are cut (a user agent, a path): a span's size,
 * and so the exporter queue's memory, stays bounded. */
#define AURA_SPAN_VALUE_MAX 256

typedef struct {
    int span;                  /* index of its span in the set */
    aura_attr_type_e type;
    const char *key;           /* static, or the set's pool */
    const char *str;           /* AURA_ATTR_STRING */
    apr_int64_t num;           /* AURA_ATTR_INT, AURA_ATTR_BOOL */
} aura_span_attr_t;

typedef struct {
    const char *name;
    char id[17];               /* 16 lower-case hex */
    int parent;                /* index in the set; -1: the remote parent
                                  (or none: the root) */
    aura_span_kind_e kind;
    apr_time_t start;          /* microseconds since the epoch */
    apr_time_t end;            /* 0 while open */
    int status;                /* AURA_SPAN_UNSET, _OK, _ERROR */
    const char *message;       /* the status message, ERROR only */
} aura_span_t;

typedef struct aura_spanset_t {
    char trace_id[33];
    char remote_parent[17];    /* the client's span, "" when none */
    int n;
    int nattrs;
    int lost;                  /* spans or attributes not recorded */
    apr_pool_t *pool;
    aura_span_t spans[AURA_SPAN_MAX];
    aura_span_attr_t attrs[AURA_SPAN_ATTR_MAX];
} aura_spanset_t;

/**
 * A new set in p for trace_id (32 hex), child of remote_parent (16 hex,
 * or NULL for a new trace).
 */
aura_spanset_t *aura_spanset_make(apr_pool_t *p, const char *trace_id,
                                  const char *remote_parent);

/**
 * Start a span.
 * @param id its span id (16 hex), copied
 * @param parent index of its parent in the set, -1 for the remote one
 * @return its index, or -1 when the set is full (nothing recorded)
 */
int aura_span_start(aura_spanset_t *set, const char *name, const char *id,
                    int parent, aura_span_kind_e kind, apr_time_t now);

/**
 * End span i (no-op for -1 or an ended span).
 * @param status AURA_SPAN_UNSET, _OK or _ERROR
 * @param message for _ERROR, or NULL; kept by reference
 */
void aura_span_end(aura_spanset_t *set, int i, apr_time_t now, int status,
                   const char *message);

/** Forget span i when it is the last one started (a stage that turned
 *  out to have nothing to do); otherwise ends it.  */
void aura_span_discard(aura_spanset_t *set, int i, apr_time_t now);

/** End every span still open, at now (the request is over). */
void aura_spanset_close(aura_spanset_t *set, apr_time_t now);

/** Attributes of span i (no-op for -1, a NULL value, or a full set).
 *  Strings are kept by reference, cut at AURA_SPAN_VALUE_MAX by the
 *  encoder. */
void aura_span_attr_str(aura_spanset_t *set, int i, const char *key,
                        const char *value);
void aura_span_attr_int(aura_spanset_t *set, int i, const char *key,
                        apr_int64_t value);
void aura_span_attr_bool(aura_spanset_t *set, int i, const char *key,
                         int value);

/* The sampling ratio in millionths (AuraTraceSampleRatio). */
#define AURA_SAMPLE_ONE 1000000

/* Where a request's trace id came from, as the sampler weighs it. */
typedef enum {
    AURA_PARENT_NONE = 0,     /* no valid inbound traceparent: the id is
                                 the gateway's own, random */
    AURA_PARENT_TRUSTED,      /* from a client AuraTraceTrustParent names:
                                 its sampled flag decides */
    AURA_PARENT_UNTRUSTED     /* from anyone else: id kept, flag ignored */
} aura_parent_e;

/**
 * Whether a request is sampled.
 * - AURA_PARENT_TRUSTED: by the inbound sampled flag (parent-based);
 * - AURA_PARENT_NONE: the ratio on the trace id (its last 16 hex digits
 *   as a number below ratio / 10^6 of 2^64, as OpenTelemetry's
 *   TraceIdRatioBased reads the low 8 bytes), so that all gateways with
 *   the same ratio agree on a trace;
 * - AURA_PARENT_UNTRUSTED: the flag is ignored and the ratio is taken on
 *   SipHash-2-4 of the id under key instead of the id: the client chose
 *   the id, and could otherwise choose ids the ratio always samples.
 * @param trace_id 32 lower-case hex
 * @param flags the inbound trace-flags (read for TRUSTED only)
 * @param ratio_ppm 0 to AURA_SAMPLE_ONE
 * @param key 16 secret bytes (read for UNTRUSTED only; the shared
 *        segment's, so every child of an instance decides alike);
 *        NULL: an untrusted parent is never sampled (fail closed)
 * @return 1 when sampled, else 0
 */
int aura_trace_sampled(const char *trace_id, aura_parent_e parent,
                       unsigned int flags, apr_uint32_t ratio_ppm,
                       const unsigned char *key);

#endif /* AURA_SPAN_H */
