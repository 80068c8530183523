/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_tracing.h: a request's spans as the stages record them
 * (aura_tracing.c).  Every function is a no-op, after one pointer test,
 * for a request that is not sampled (or with tracing off): a stage
 * records its span without asking first.
 */
#ifndef AURA_TRACING_H
#define AURA_TRACING_H

#include "aura.h"
#include "trace/aura_span.h"

/**
 * Start a span of r.
 * @param parent index of its parent: 0 for the server span
 * @param id its span id (16 hex), NULL for a new one
 * @return its index, -1 when r is not traced (or its set is full)
 */
int aura_tracing_start(request_rec *r, int parent, const char *name,
                       aura_span_kind_e kind, const char *id);

/** A stage of the server span (INTERNAL): aura_tracing_start(r, 0,
 *  name, AURA_SPAN_INTERNAL, NULL). */
int aura_tracing_stage(request_rec *r, const char *name);

/**
 * End a stage by its hook's answer: OK or DECLINED leave the status
 * unset, anything else (the stage refused) is an ERROR whose message is
 * the problem type noted.
 */
void aura_tracing_stage_end(request_rec *r, int span, int rc);

/** End span (-1: nothing) with an explicit status and message. */
void aura_tracing_end(request_rec *r, int span, int status,
                      const char *message);

/** Forget span when it was the last started (the stage had nothing to
 *  do), else end it. */
void aura_tracing_discard(request_rec *r, int span);

/** Attributes of span (-1: nothing); values kept by reference. */
void aura_tracing_attr_str(request_rec *r, int span, const char *key,
                           const char *value);
void aura_tracing_attr_int(request_rec *r, int span, const char *key,
                           apr_int64_t value);

/** The span id of the forwarded traceparent (the upstream call's
 *  span): 16 hex characters inside rq->traceparent, not terminated. */
const char *aura_tracing_client_id(request_rec *r);

/**
 * log_transaction: the server span's name and attributes (OpenTelemetry
 * HTTP server conventions and the gateway's), every open span ended,
 * the spans encoded and handed to the exporter.  Once per request.
 */
void aura_tracing_finish(request_rec *r);

#endif /* AURA_TRACING_H */
