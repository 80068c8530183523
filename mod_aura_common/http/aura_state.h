/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_state.h: the live state an operator reads, collected once
 * (aura_state.c) and rendered twice: as JSON by /health with
 * AuraHealthDetail On (aura_health.c), as a section of mod_status's
 * server-status by the status hook (aura_status.c).
 */
#ifndef AURA_STATE_H
#define AURA_STATE_H

#include "aura.h"

struct json_t;

/**
 * Adds to o what this child and the instance know: pid, generation,
 * nats_server, shm (counters, limiter tables), breakers, in_flight
 * (with the caps), streams, connections, actor_quota.  No key, token or
 * actor: counts, states and configured names only.
 * @param walk 1: walk every rate-limit table for its fill (a few ms for
 *        the default sizes), 0: not
 */
void aura_state_describe(struct json_t *o, request_rec *r, int walk);
/* The same without a request (the fleet view's publisher, on a
 * mod_watchdog thread): what is allocated comes from p. */
void aura_state_describe_pool(struct json_t *o, apr_pool_t *p, int walk);

#endif /* AURA_STATE_H */
