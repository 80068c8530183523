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
/* Sets rq's trace id, traceparent and tracestate from r's headers. */
void aura_trace_begin(request_rec *r, aura_request_t *rq);

#endif /* AURA_REQID_H */
