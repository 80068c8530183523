/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_inbox.h: per-request reply inboxes, each a synchronous
 * subscription to a subject no one else can predict (aura_inbox.c).
 */
#ifndef AURA_INBOX_H
#define AURA_INBOX_H

#include "aura.h"

struct __natsConnection;
struct __natsMsg;

/* aura_inbox.c: per-request reply inboxes.  Statuses are natsStatus
 * values. */
typedef struct aura_inbox_t aura_inbox_t;
/* From register_hooks: the inboxes follow the child's connection
 * (aura_nats_add_user). */
void aura_inbox_register(void);
/* An inbox that lives as long as p (its subscription ends when p is
 * cleared); NATS_OK, or why not. */
int aura_inbox_open(apr_pool_t *p, aura_inbox_t **inbox);
/* Right before the request of the inbox is published: a loss of the
 * connection after this ends aura_inbox_next() with
 * NATS_CONNECTION_DISCONNECTED even once reconnected. */
void aura_inbox_sending(aura_inbox_t *inbox);
/* The reply subject that reaches the inbox. */
const char *aura_inbox_subject(const aura_inbox_t *inbox);
/* This child's reply inbox prefix ("_INBOX.<nuid>"), NULL before
 * child_init subscribed. */
const char *aura_inbox_prefix(void);
/* Next message on the inbox before deadline (wall clock).  NATS_OK
 * (*msg is the caller's to destroy), NATS_TIMEOUT, NATS_NO_RESPONDERS,
 * NATS_SLOW_CONSUMER (messages were dropped over its limits; once), or
 * NATS_CONNECTION_DISCONNECTED. */
int aura_inbox_next(aura_inbox_t *inbox, apr_time_t deadline,
                    struct __natsMsg **msg);
/* Messages dropped over the inbox's limits so far. */
apr_int64_t aura_inbox_dropped(aura_inbox_t *inbox);

#endif /* AURA_INBOX_H */
