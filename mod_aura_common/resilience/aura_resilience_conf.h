/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_resilience_conf.h: the directives of the breakers, retries and
 * in-flight caps (aura_resilience_conf.c; the caps' handlers are
 * aura_bulkhead.c's), their defaults and the getters that apply them.
 */
#ifndef AURA_RESILIENCE_CONF_H
#define AURA_RESILIENCE_CONF_H

#include "core/aura_config.h"
#include "resilience/aura_bulkhead.h"
#include "resilience/aura_streams.h"

/* A breaker's settings when no AuraBreaker line names them. */
#define AURA_DEFAULT_BREAKER_THRESHOLD    5
#define AURA_DEFAULT_BREAKER_COOLDOWN_MS  30000
#define AURA_DEFAULT_BREAKER_PROBES       1
/* Longer than the longest budget of the sample (functions, 380 s). */
#define AURA_DEFAULT_BREAKER_PROBE_TTL_MS 400000
#define AURA_DEFAULT_RETRIES              2
#define AURA_DEFAULT_TARGET_SWEEP         apr_time_from_sec(60)
#define AURA_DEFAULT_TARGET_ENTRIES       1024

static APR_INLINE int aura_conf_retries(const aura_dir_conf_t *d)
{
    return d->retries != AURA_UNSET ? d->retries : AURA_DEFAULT_RETRIES;
}

static APR_INLINE apr_interval_time_t
aura_conf_target_sweep(const aura_server_conf_t *c)
{
    return c->target_sweep != AURA_UNSET ? c->target_sweep
                                         : AURA_DEFAULT_TARGET_SWEEP;
}

static APR_INLINE int aura_conf_target_entries(const aura_server_conf_t *c)
{
    return c->target_entries != AURA_UNSET ? c->target_entries
                                           : AURA_DEFAULT_TARGET_ENTRIES;
}

const char *aura_set_breaker(cmd_parms *cmd, void *dummy, const char *args);
const char *aura_set_retries(cmd_parms *cmd, void *dirv, const char *arg);
const char *aura_set_target_sweep(cmd_parms *cmd, void *dummy,
                                  const char *arg);
const char *aura_set_target_entries(cmd_parms *cmd, void *dummy,
                                    const char *arg);

/* The command table's entries (mod_aura_common.c assembles the table). */
#define AURA_RESILIENCE_DIRECTIVES \
    AP_INIT_RAW_ARGS("AuraBreaker", aura_set_breaker, NULL, RSRC_CONF, \
                     "Circuit breaker of a service (or * for all): " \
                     "threshold=<n> cooldown=<duration> probes=<n> " \
                     "probe-timeout=<duration>"), \
    AP_INIT_TAKE1("AuraTargetBreakerEntries", aura_set_target_entries, NULL, \
                  RSRC_CONF, \
                  "Dedicated PostgREST targets the shared breaker table " \
                  "tracks at once (160 bytes each)"), \
    AP_INIT_TAKE1("AuraTargetSweepInterval", aura_set_target_sweep, NULL, \
                  RSRC_CONF, \
                  "How long a dedicated PostgREST target may stay unused " \
                  "before its closed breaker is dropped from the table"), \
    AP_INIT_TAKE1("AuraRetries", aura_set_retries, NULL, \
                  RSRC_CONF | ACCESS_CONF, \
                  "Times a request is sent again when no service instance " \
                  "listens, within the route's budget"), \
    AP_INIT_TAKE1("AuraServiceMaxInFlight", aura_set_max_in_flight, NULL, \
                  RSRC_CONF | ACCESS_CONF, \
                  "Requests the instance may have in flight at once to the " \
                  "Location's service: a number, a percentage of the " \
                  "workers, auto or off"), \
    AP_INIT_TAKE_ARGV("AuraShedding", aura_set_shedding, NULL, \
                  RSRC_CONF | ACCESS_CONF, \
                  "How much of each in-flight cap the less trusted " \
                  "classes may fill (public=, anon=, authenticated= a " \
                  "percentage), or off"), \
    AP_INIT_TAKE1("AuraPlaneMaxInFlight", aura_set_plane_max_in_flight, NULL, \
                  RSRC_CONF, \
                  "Upstream requests the instance may have in flight at " \
                  "once from the VirtualHost's plane: a number, a " \
                  "percentage of the workers, auto or off"), \
    AP_INIT_TAKE1("AuraStreamMaxOpen", aura_set_stream_max_open, NULL, \
                  RSRC_CONF, \
                  "Long-lived requests (streams) the instance may have " \
                  "open at once from the VirtualHost's plane: a number, " \
                  "a percentage of the workers, auto or off"), \
    AP_INIT_TAKE1("AuraServiceMaxStreams", aura_set_max_streams, NULL, \
                  RSRC_CONF | ACCESS_CONF, \
                  "Long-lived requests (streams) the instance may have " \
                  "open at once to the Location's service: a number, a " \
                  "percentage of the workers, auto or off"), \
    AP_INIT_TAKE1("AuraStreamMaxPerAddress", aura_set_stream_per_address, \
                  NULL, RSRC_CONF | ACCESS_CONF, \
                  "Long-lived requests (streams) one client address may " \
                  "have open at once: a number, a percentage of the " \
                  "workers, auto or off"), \
    AP_INIT_TAKE1("AuraStreamMaxPerActor", aura_set_stream_per_actor, \
                  NULL, RSRC_CONF | ACCESS_CONF, \
                  "Long-lived requests (streams) one actor (API key or " \
                  "user) may have open at once: a number, a percentage " \
                  "of the workers, auto or off")

#endif /* AURA_RESILIENCE_CONF_H */
