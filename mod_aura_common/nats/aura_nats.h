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
struct __natsConnection *aura_nats_conn(void);
apr_int64_t aura_nats_max_payload(void);
const char *aura_nats_state(void);
/* natsMsg_Destroy() for the request path: small messages are freed in
 * batches (one wake of nats.c's freeing thread per batch). */
void aura_nats_msg_release(struct __natsMsg *m);
/* The same as a pool cleanup: a message that lives as long as a pool. */
apr_status_t aura_nats_msg_cleanup(void *m);

#endif /* AURA_NATS_H */
