/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_stream.h: streamed NATS replies (aura_stream.c).
 */
#ifndef AURA_STREAM_H
#define AURA_STREAM_H

#include "aura.h"
#include "resilience/aura_bulkhead.h"

struct __natsConnection;
struct __natsMsg;
#include "nats/aura_inbox.h"

/* ---- streamed NATS replies (aura_stream.c) ---------------------------
 * docs/envelope.md, "Streamed replies".  nats.c types by their struct
 * tags, as for the connection above; statuses are natsStatus values. */

/** What a reply's Aura-Stream header (any case) says. */
typedef enum {
    AURA_STREAM_NONE = 0,   /* no Aura-Stream: a plain reply */
    AURA_STREAM_BEGIN,
    AURA_STREAM_END,
    AURA_STREAM_INVALID     /* repeated, or another value */
} aura_stream_mark_e;

/* Classify m; *why says what is wrong for AURA_STREAM_INVALID. */
aura_stream_mark_e aura_stream_mark(struct __natsMsg *m, const char **why);
/* Relays a stream whose begin message r's status and headers came from
 * (already applied); body is the begin message's payload.  The request's
 * in-flight hold (aura_cap_enter()) moves to the long-lived budget
 * first (aura_streams.c).  Returns OK (an abort mid-body is logged, the
 * connection closed), or the status of a refusal before anything was
 * sent (429 stream-limit, 503 stream-saturated, 502). */
int aura_stream_relay(request_rec *r, aura_inbox_t *inbox,
                      struct __natsMsg *begin, const char *body,
                      apr_size_t body_len, const char *subject,
                      aura_cap_hold_t *slot);
/* ---- end of streamed NATS replies ------------------------------------ */

#endif /* AURA_STREAM_H */
