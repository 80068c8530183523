/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_breaker.h: the per-service and per-target circuit breakers in the
 * shared segment (aura_breaker.c).
 */
#ifndef AURA_BREAKER_H
#define AURA_BREAKER_H

#include "aura.h"

struct json_t;
#include "resilience/aura_breaker_fsm.h"

/* aura_breaker.c: per-service breakers in the shared segment. */
typedef struct aura_breaker_hold_t aura_breaker_hold_t;
apr_status_t aura_breaker_post_config(apr_pool_t *pconf, server_rec *s);
/* Ask the breaker of what r is about to call: the dedicated PostgREST
 * target's own when target is not NULL, else the service's.  OK with
 * *hold set (NULL: no breaker), or 503 breaker-open noted. */
int aura_breaker_enter(request_rec *r, int service, const char *target,
                       aura_breaker_hold_t **hold);
/* The outcome; a hold without one is released by r->pool's cleanup. */
void aura_breaker_verdict(aura_breaker_hold_t *hold, int success);
/* The verdict of an HTTP status the upstream answered with. */
int aura_breaker_status_ok(int status);
/* aura_breaker_base.c: who asks for a probe (aura_breaker_fsm.h): this
 * process, holding it for at most budget plus a margin, dead when
 * kill(pid, 0) says ESRCH; for breakers used outside
 * aura_breaker_enter() (the key store's) too. */
void aura_breaker_who(aura_breaker_who_t *who, apr_interval_time_t budget);
void aura_breaker_describe(struct json_t *obj);

#endif /* AURA_BREAKER_H */
