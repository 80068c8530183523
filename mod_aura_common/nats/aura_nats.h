/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nats.h: the per-child NATS connection (aura_nats.c).
 */
#ifndef AURA_NATS_H
#define AURA_NATS_H

#include "aura.h"

/* aura_nats.c: the per-child connection. */
struct __natsConnection;
struct __natsMsg;
void aura_nats_child_init(apr_pool_t *pchild, server_rec *s);
/* What lives on the child's connection (the reply inboxes): told, in the
 * order added, once the connection exists (connected or retrying) and
 * when the child exits.  Add from register_hooks; child_exit may be
 * NULL.  connected (may be NULL, last member): told each time the
 * connection is made or made again, after every child_init, on a nats.c
 * thread or the child's: it may publish, never wait for a reply. */
typedef struct aura_nats_user_t {
    void (*child_init)(struct __natsConnection *nc, server_rec *s);
    void (*child_exit)(void);
    void (*connected)(struct __natsConnection *nc);
} aura_nats_user_t;
void aura_nats_add_user(const aura_nats_user_t *user);
/* Who hears when a rotation anywhere is broadcast (the key store drops
 * the project's cached keys, the open streams check theirs again):
 * called on a nats.c thread with the project id, in the order
 * registered.  Set from register_hooks; at most two. */
typedef void aura_nats_invalidation_fn(const char *project);
void aura_nats_on_invalidation(aura_nats_invalidation_fn *fn);
struct __natsConnection *aura_nats_conn(void);
apr_int64_t aura_nats_max_payload(void);
/* A request that finds the connection lost waits this long at most
 * after the loss for nats.c to reconnect (to another node of a
 * cluster: a few ms) before it answers 503. */
#define AURA_NATS_RECONNECT_GRACE apr_time_from_sec(1)
/* Waits, in slices, until the connection is up again: while nats.c
 * reconnects after a loss, at most AURA_NATS_RECONNECT_GRACE after it;
 * after a publish nats.c refused (refused, seen: the losses counted
 * before the publish), for a reconnect after that loss, at most the
 * grace from now (the loss may not be counted yet: on_disconnected()
 * runs a moment after nats.c saw it).  Never past deadline, nor once
 * stop(data) says so (stop may be NULL).  1 when connected. */
int aura_nats_await_reconnect(apr_time_t deadline, int refused,
                              apr_uint32_t seen, int (*stop)(void *),
                              void *data);
/* How many times the connection was lost so far (counted before the
 * waiting requests are woken). */
apr_uint32_t aura_nats_losses(void);
/* "<url> <server id>" of the server this child is connected to, in p;
 * NULL when not connected.  Takes the connection's lock: for /health
 * only. */
const char *aura_nats_server(apr_pool_t *p);
const char *aura_nats_state(void);
/* natsMsg_Destroy() for the request path: small messages are freed in
 * batches (one wake of nats.c's freeing thread per batch). */
void aura_nats_msg_release(struct __natsMsg *m);
/* The same as a pool cleanup: a message that lives as long as a pool. */
apr_status_t aura_nats_msg_cleanup(void *m);

#endif /* AURA_NATS_H */
