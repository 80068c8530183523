/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_streamend.h: open streams end with their credential
 * (aura_streamend.c, issue #32 point 3).
 */
#ifndef AURA_STREAMEND_H
#define AURA_STREAMEND_H

#include "aura.h"
#include "core/aura_request.h"
#include "resilience/aura_endrule.h"

/* How often a child looks at its open streams: the bound of the delay
 * is this plus the stream's own reaction (a NATS stream's wait slice). */
#define AURA_STREAMEND_TICK apr_time_from_sec(1)

typedef struct aura_streamend_t aura_streamend_t;

void aura_streamend_child_init(apr_pool_t *pchild, server_rec *s);
void aura_streamend_register(void);

/**
 * Watch r's stream: from now on this child checks once a second that
 * the credential r was admitted with is alive (cred_alive() in
 * aura_streamend.c).
 * @param r the request (its credential: aura_request_private()->cred)
 * @param kind "websocket", "sse", "stream" (another HTTP response of a
 *        streaming Location) or "nats": for the log
 * @param backend the upstream's socket on the HTTP path, NULL on NATS;
 *        when the credential dies it is shut down (how: APR_SHUTDOWN_*),
 *        which wakes mod_proxy's wait on it
 * @param how what to shut down
 * @return the watch, released with r->pool (or aura_streamend_unwatch());
 *         NULL when r carries no credential or the watcher is not running
 */
aura_streamend_t *aura_streamend_watch(request_rec *r, const char *kind,
                                       apr_socket_t *backend, int how);
/** Stop watching (idempotent); closes the watch's copy of the socket. */
void aura_streamend_unwatch(aura_streamend_t *w);
/** AURA_END_ALIVE, or why the stream must end (set once, by the
 *  watcher); w may be NULL. */
int aura_streamend_reason(const aura_streamend_t *w);

/* The final SSE event of a stream ended with its credential (the
 * reason's name follows "data: "): docs/security.md. */
#define AURA_STREAMEND_SSE_EVENT "event: aura-stream-end\ndata: "

/** Whether r's response is an SSE stream (Content-Type
 *  text/event-stream). */
int aura_streamend_is_sse(request_rec *r);

/* /metrics: aura_streams_cred_ended_total{reason}. */
void aura_streamend_metrics(request_rec *r);

#endif /* AURA_STREAMEND_H */
