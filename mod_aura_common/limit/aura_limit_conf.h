/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_limit_conf.h: the directives of the two rate-limit stages, of the
 * connection limits and of the actor quota's Redis (handlers in
 * aura_limit_directives.c and aura_connlimit.c), their defaults and the
 * getters that apply them.
 */
#ifndef AURA_LIMIT_CONF_H
#define AURA_LIMIT_CONF_H

#include "core/aura_config.h"
#include "limit/aura_connlimit.h"
#include "limit/aura_limit.h"
#include "limit/aura_readers.h"

#define AURA_DEFAULT_LIMITER_ENTRIES 65536
#define AURA_DEFAULT_IPV6_PREFIX     64
/* Redis's own port and database; the rest ours. */
#define AURA_DEFAULT_REDIS_PORT      6379
#define AURA_DEFAULT_REDIS_DB        0
#define AURA_DEFAULT_REDIS_TIMEOUT   apr_time_from_msec(100)
#define AURA_DEFAULT_REDIS_RETRY     apr_time_from_sec(1)
#define AURA_DEFAULT_REDIS_POOL_MAX  8
#define AURA_DEFAULT_INSTANCES       1

static APR_INLINE apr_uint64_t
aura_conf_limiter_entries(const aura_server_conf_t *c)
{
    return c->limiter_entries != AURA_UNSET
               ? (apr_uint64_t)c->limiter_entries
               : AURA_DEFAULT_LIMITER_ENTRIES;
}

static APR_INLINE int aura_conf_ipv6_prefix(const aura_server_conf_t *c)
{
    return c->ipv6_prefix != AURA_UNSET ? c->ipv6_prefix
                                        : AURA_DEFAULT_IPV6_PREFIX;
}

static APR_INLINE int aura_conf_reading_v6_prefix(const aura_server_conf_t *c)
{
    return c->reading_v6_prefix != AURA_UNSET
               ? c->reading_v6_prefix : AURA_DEFAULT_READING_V6_PREFIX;
}

#define AURA_DEFAULT_H2_PREFACE_TIMEOUT apr_time_from_sec(5)

static APR_INLINE apr_interval_time_t
aura_conf_h2_preface_timeout(const aura_server_conf_t *c)
{
    return c->h2_preface_timeout != AURA_UNSET
               ? c->h2_preface_timeout : AURA_DEFAULT_H2_PREFACE_TIMEOUT;
}

static APR_INLINE int aura_conf_instances(const aura_server_conf_t *c)
{
    return c->instances != AURA_UNSET && c->instances > 0
               ? c->instances : AURA_DEFAULT_INSTANCES;
}

static APR_INLINE int aura_conf_redis_port(const aura_server_conf_t *c)
{
    return c->redis_port != AURA_UNSET ? c->redis_port
                                       : AURA_DEFAULT_REDIS_PORT;
}

static APR_INLINE int aura_conf_redis_db(const aura_server_conf_t *c)
{
    return c->redis_db != AURA_UNSET ? c->redis_db : AURA_DEFAULT_REDIS_DB;
}

static APR_INLINE int aura_conf_redis_pool_max(const aura_server_conf_t *c)
{
    return c->redis_pool_max != AURA_UNSET ? c->redis_pool_max
                                           : AURA_DEFAULT_REDIS_POOL_MAX;
}

/* Never 0: that would mean "wait forever" to apr_reslist and
 * SO_RCVTIMEO. */
static APR_INLINE apr_interval_time_t
aura_conf_redis_timeout(const aura_server_conf_t *c)
{
    return c->redis_timeout > 0 ? c->redis_timeout
                                : AURA_DEFAULT_REDIS_TIMEOUT;
}

static APR_INLINE apr_interval_time_t
aura_conf_redis_retry(const aura_server_conf_t *c)
{
    return c->redis_retry != AURA_UNSET ? c->redis_retry
                                        : AURA_DEFAULT_REDIS_RETRY;
}

/* The command table's entries (mod_aura_common.c assembles the table). */
#define AURA_LIMIT_DIRECTIVES \
    AP_INIT_RAW_ARGS("AuraRateLimitZone", aura_set_rate_limit_zone, NULL, \
                     RSRC_CONF, \
                     "A per-address limit (before authentication) with a " \
                     "table of its own: name, rate=<n>r/s or r/m, " \
                     "burst=<n>, entries=<n>"), \
    AP_INIT_TAKE1("AuraRateLimit", aura_set_rate_limit, NULL, \
                  RSRC_CONF | ACCESS_CONF, \
                  "The AuraRateLimitZone of this VirtualHost or Location, " \
                  "or off"), \
    AP_INIT_TAKE1("AuraRateLimitEntries", aura_set_limit_int, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, limiter_entries), \
                  RSRC_CONF, \
                  "Client addresses each rate-limit table tracks at " \
                  "once (16 bytes each), unless its zone says entries="), \
    AP_INIT_TAKE1("AuraRateLimitIPv6Prefix", aura_set_limit_int, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, ipv6_prefix), \
                  RSRC_CONF, \
                  "Leading bits of an IPv6 client address that make one " \
                  "rate-limit key"), \
    AP_INIT_TAKE1("AuraMaxConnectionsPerAddress", aura_set_max_conns, NULL, \
                  RSRC_CONF, \
                  "Connections one client address may hold open to this " \
                  "listener at once: n, auto or off"), \
    AP_INIT_TAKE1("AuraMaxReadingConnections", aura_set_max_reading, NULL, \
                  RSRC_CONF, \
                  "Connections of this listener that may be sending their " \
                  "first request at once: n, auto or off"), \
    AP_INIT_ITERATE("AuraConnectionLimitExempt", aura_set_conn_exempt, NULL, \
                    RSRC_CONF, \
                    "Addresses or networks (e.g. 10.0.0.0/8) that " \
                    "AuraMaxConnectionsPerAddress does not limit"), \
    AP_INIT_TAKE1("AuraReadingIPv6Prefix", aura_set_reading_v6_prefix, NULL, \
                  RSRC_CONF, \
                  "Leading bits of an IPv6 client address that make one " \
                  "holder of a listener's reading connections"), \
    AP_INIT_TAKE1("AuraH2PrefaceTimeout", aura_set_h2_preface_timeout, \
                  NULL, RSRC_CONF, \
                  "How long an HTTP/2 connection may take to send its " \
                  "preface and SETTINGS while it counts as reading"), \
    AP_INIT_TAKE12("AuraActorQuota", aura_set_actor_quota, NULL, \
                   RSRC_CONF | ACCESS_CONF, \
                   "Requests an authenticated actor may make per window " \
                   "(e.g. 1000 60s), or off"), \
    AP_INIT_TAKE3("AuraPlanQuota", aura_set_plan_quota, NULL, \
                  RSRC_CONF | ACCESS_CONF, \
                  "The actor quota of the projects on one plan: plan, " \
                  "requests, window"), \
    AP_INIT_TAKE1("AuraInstances", aura_set_limit_int, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, instances), \
                  RSRC_CONF, \
                  "Gateway instances sharing the actor quotas: without " \
                  "Redis each enforces its share"), \
    AP_INIT_TAKE1("AuraRedisServer", aura_set_redis_server, NULL, RSRC_CONF, \
                  "Redis holding the shared actor quotas: host:port[/db]"), \
    AP_INIT_TAKE1("AuraRedisTimeout", aura_set_redis_time, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, redis_timeout), \
                  RSRC_CONF, \
                  "Budget of one Redis connect and of one command"), \
    AP_INIT_TAKE1("AuraRedisRetryInterval", aura_set_redis_time, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, redis_retry), \
                  RSRC_CONF, \
                  "How long the local fallback serves after a Redis " \
                  "failure before Redis is tried again"), \
    AP_INIT_TAKE1("AuraRedisPoolMax", aura_set_limit_int, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, redis_pool_max), \
                  RSRC_CONF, "Redis connections per child process, at most")

#endif /* AURA_LIMIT_CONF_H */
