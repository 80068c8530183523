/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_reqid.h: the request id and the trace context (aura_reqid.c).
 */
#ifndef AURA_REQID_H
#define AURA_REQID_H

#include "aura.h"

/* aura_reqid.c */
/* Draws the child's key of the request id and trace generator. */
void aura_reqid_child_init(void);
const char *aura_reqid_pick(request_rec *r);
/* Sets rq's trace id, traceparent and tracestate from r's headers;
 * with tracing on (AuraTraceEndpoint), decides whether the request is
 * sampled and, when it is, starts its server span (rq->priv->spans). */
void aura_trace_begin(request_rec *r, aura_request_t *rq);
/* n bytes (a multiple of 8) of the child's generator: span ids. */
void aura_reqid_random(unsigned char *out, apr_size_t n);

#endif /* AURA_REQID_H */
