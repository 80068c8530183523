/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_gone.h: noticing a client that has gone (aura_gone.c).
 */
#ifndef AURA_GONE_H
#define AURA_GONE_H

#include "aura.h"

struct __natsConnection;
struct __natsMsg;
#include "nats/aura_inbox.h"

/* The access log's status of a request whose client went away before
 * its answer (nginx's "client closed request"; never sent). */
#define AURA_STATUS_CLIENT_GONE 499

/* aura_gone.c: whether r's client has gone (closed or reset its
 * connection), looked at without reading a byte of it. */
int aura_client_gone(request_rec *r);
/* Marks r as abandoned at stage ("before-send" or "waiting"): logged,
 * counted, the connection marked aborted, status 499 and the problem
 * note client-gone for the access log.  Returns DONE: nothing is
 * answered, the worker is free at once. */
int aura_client_abandoned(request_rec *r, const char *stage,
                          const char *upstream);
/* Longest wait between two looks at the client. */
#define AURA_GONE_SLICE apr_time_from_msec(200)
/* aura_inbox_next() in slices of AURA_GONE_SLICE, giving up (NATS_TIMEOUT,
 * *gone set to 1) as soon as r's client is gone. */
int aura_inbox_next_unless_gone(request_rec *r, aura_inbox_t *inbox,
                                apr_time_t deadline,
                                struct __natsMsg **msg, int *gone);

#endif /* AURA_GONE_H */
