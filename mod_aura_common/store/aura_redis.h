/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_redis.h: the per-child Redis pool and the actor quota's sliding
 * window (aura_redis.c).
 */
#ifndef AURA_REDIS_H
#define AURA_REDIS_H

#include "aura.h"

/* aura_redis.c: the per-child Redis pool and the sliding-window script
 * of the actor quota (DESIGN.md section 8). */
typedef struct {
    int admitted;
    apr_int64_t granted;        /* requests admitted and counted (lease) */
    apr_int64_t limit;          /* the limit the script applied */
    apr_int64_t remaining;      /* requests left in the window (>= 0) */
    apr_int64_t reset_ms;       /* ms until the current window ends */
    apr_int64_t retry_after_ms; /* refused: ms until one would pass */
    apr_int64_t count;          /* Redis: the window's count after this */
    apr_uint64_t window;        /* Redis: the window's number */
} aura_quota_result_t;
/* Local admissions handed over to Redis (aura_quota_share.h): count
 * requests of window number window, where the instance had last seen
 * Redis count seen; instances is AuraInstances. */
typedef struct {
    apr_int64_t count;
    apr_uint64_t window;
    apr_int64_t seen;
    apr_int64_t instances;
} aura_quota_handover_t;
void aura_redis_child_init(apr_pool_t *pchild, server_rec *s);
int aura_redis_configured(void);
apr_interval_time_t aura_redis_call_max(void);
/* One check-and-count of key against limit per window_ms, for up to
 * want requests at once, after the hand-over h (NULL: none).
 * APR_SUCCESS with *out filled, or an error
 * status (connect, timeout, bad reply): the caller then falls back and
 * feeds the Redis breaker. */
apr_status_t aura_redis_quota(request_rec *r, const char *key,
                              apr_int64_t limit, apr_int64_t window_ms,
                              apr_int64_t want,
                              const aura_quota_handover_t *h,
                              aura_quota_result_t *out);

#endif /* AURA_REDIS_H */
