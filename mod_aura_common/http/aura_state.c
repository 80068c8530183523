/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_state.c: the live state of the instance and of this child, one
 * JSON object that /health?detail returns as it is and server-status
 * renders as tables and "Key: value" lines (aura_state.h).  Each part
 * is read by the concern that owns it (aura_shm_describe,
 * aura_breaker_describe, aura_cap_describe, ...): this file only puts
 * them together, so that both pages always show the same thing.
 */
#include "core/aura_module.h"
#include "core/aura_redact.h"
#include "http/aura_state.h"
#include "limit/aura_connlimit.h"
#include "nats/aura_nats.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_bulkhead.h"
#include "resilience/aura_streams.h"
#include "shm/aura_shm.h"
#include "store/aura_redis.h"

#include "ap_mpm.h"
#include "apr_atomic.h"

#include <jansson.h>
#include <unistd.h>

/* The actor quota's store: whether Redis is configured, and whether the
 * quota runs on this instance's fallback table now (Redis unreachable:
 * each instance allows 1/AuraInstances of the limit). */
static json_t *describe_quota(void)
{
    volatile apr_uint64_t *down = aura_shm_flag(AURA_FLAG_REDIS_DOWN);
    int redis = aura_redis_configured();

    return json_pack("{s:b,s:b}", "redis", redis, "fallback",
                     redis && down && apr_atomic_read64(down) != 0);
}

void aura_state_describe(json_t *o, request_rec *r, int walk)
{
    aura_state_describe_pool(o, r->pool, walk);
}

void aura_state_describe_pool(json_t *o, apr_pool_t *p, int walk)
{
    json_t *part;
    const char *srv;
    int gen = 0;

    ap_mpm_query(AP_MPMQ_GENERATION, &gen);
    json_object_set_new(o, "pid", json_integer(getpid()));
    json_object_set_new(o, "generation", json_integer(gen));
    /* Which node of a cluster this child uses (the fault runs kill that
     * one); a password written in AuraNATSServers's URL is not shown. */
    srv = aura_redact_userinfo(p, aura_nats_server(p));
    json_object_set_new(o, "nats_server", srv ? json_string(srv)
                                              : json_null());
    part = json_object();
    aura_shm_describe(part, walk, p);
    json_object_set_new(o, "shm", part);
    part = json_object();
    aura_breaker_describe(part);
    json_object_set_new(o, "breakers", part);
    aura_cap_describe(o);
    aura_stream_describe(o);
    part = json_object();
    aura_connlimit_describe(part, p);
    json_object_set_new(o, "connections", part);
    json_object_set_new(o, "actor_quota", describe_quota());
}
