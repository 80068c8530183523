/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_limit.h: the two rate-limit stages: zones and quotas as configured
 * (aura_limit_directives.c), stage 1 (aura_limit_ip.c) and what both
 * stages share, stage 2 (aura_limit_actor.c).
 */
#ifndef AURA_LIMIT_H
#define AURA_LIMIT_H

#include "aura.h"
#include "core/aura_clock.h"
#include "limit/aura_gcra.h"

/* A stage-1 zone (AuraRateLimitZone), as nginx's limit_req_zone: global,
 * named, picked by Locations.  Each zone has a table of its own in the
 * shared segment (entries=), so a flood that fills one zone's table
 * cannot push another zone into its fail-open state.  Tables are laid
 * out in name order, so reordering the zones keeps the segment. */
typedef struct aura_zone_t {
    const char *name;
    apr_uint64_t rate;          /* requests per period */
    apr_uint64_t period_s;      /* 1 (r/s) or 60 (r/m) */
    apr_uint64_t burst;
    aura_gcra_t gcra;
    const char *defined_at;     /* file:line, NULL for the built-in */
    apr_uint64_t entries;       /* entries=; 0: AuraRateLimitEntries */
    int table;                  /* its table in the segment, 1-based (0:
                                   none), set in post_config */
} aura_zone_t;

/* A stage-2 quota (AuraActorQuota, AuraPlanQuota). */
typedef struct aura_quota_t {
    apr_int64_t limit;          /* requests per window */
    apr_int64_t window_s;
} aura_quota_t;

extern const aura_zone_t aura_zone_off;
extern const aura_quota_t aura_quota_off;

#define AURA_DEFAULT_ZONE            "default"
#define AURA_DEFAULT_ZONE_RATE       100
#define AURA_DEFAULT_ZONE_BURST      1000
#define AURA_MIN_LIMITER_ENTRIES     64
#define AURA_MAX_LIMITER_ENTRIES     (1 << 24)
#define AURA_MAX_ZONES               64        /* "default" included */

/* aura_limit_directives.c: the rate-limit and Redis directives. */
apr_array_header_t *aura_zones(apr_pool_t *pconf);
const char *aura_set_rate_limit_zone(cmd_parms *cmd, void *dummy,
                                     const char *args);
const char *aura_set_rate_limit(cmd_parms *cmd, void *dirv,
                                const char *arg);
const char *aura_set_actor_quota(cmd_parms *cmd, void *dirv,
                                 const char *limit, const char *window);
const char *aura_set_plan_quota(cmd_parms *cmd, void *dirv,
                                const char *plan, const char *limit,
                                const char *window);
const char *aura_set_limit_int(cmd_parms *cmd, void *dummy,
                               const char *arg);
const char *aura_set_redis_server(cmd_parms *cmd, void *dummy,
                                  const char *arg);
const char *aura_set_redis_time(cmd_parms *cmd, void *dummy,
                                const char *arg);

/* aura_limiter_key.c: keyed hash (the segment's secret) of a stage tag,
 * a name, bytes; 0 when tag, name and bytes exceed 512 bytes together
 * (refused, never cut: callers must not use 0 as a key). */
#define AURA_LIMITER_KEY_MAX 512
apr_uint64_t aura_limiter_key(const char *tag, const char *name,
                              const unsigned char *bytes, apr_size_t n);

/* aura_limit_ip.c: stage 1, and what both stages share. */
apr_status_t aura_ratelimit_post_config(apr_pool_t *pconf, server_rec *s);
/* Count and log (once a minute per table) a request admitted for want
 * of a slot in table n. */
void aura_limiter_full(request_rec *r, int n);
/* Sets header to "policy";k1=a;k2=b (draft-ietf-httpapi-ratelimit-headers). */
void aura_limit_header(request_rec *r, const char *name, const char *policy,
                       char k1, apr_uint64_t a, char k2, apr_uint64_t b);
/* The 429: Retry-After, RateLimit with r=0, the problem noted. */
int aura_limit_refuse(request_rec *r, const char *type, const char *policy,
                      apr_uint64_t retry_s, const char *why);

/* aura_limit_actor.c: stage 2. */
apr_status_t aura_quota_post_config(apr_pool_t *pconf, server_rec *s);

#endif /* AURA_LIMIT_H */
