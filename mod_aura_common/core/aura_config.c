/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_config.c: mod_aura_common's per-server and per-dir config: create
 * and merge, the accessors, and the argument parsers the directive
 * handlers of every concern share.  create_* leave every field "unset";
 * merge_* take the nearer level when it is set; defaults are applied by
 * the getters of each concern's *_conf.h, so "unset" survives every
 * merge level.  The bottom layer: it calls nothing above it (each
 * concern's directives live with the concern; the command table and
 * the start-up checks are mod_aura_common.c's).  No directive is
 * allowed in .htaccess.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"

#include "http_core.h"
#include "apr_strings.h"
#include "apr_lib.h"

const char *const aura_service_names[AURA_SVC_COUNT] = {
    "auth", "db", "storage", "functions", "realtime", "notifications",
    "ai", "provisioner", "control"
};

static int merge_int(int base, int add)
{
    return add != AURA_UNSET ? add : base;
}

static apr_interval_time_t merge_time(apr_interval_time_t base,
                                      apr_interval_time_t add)
{
    return add != AURA_UNSET ? add : base;
}

static const void *merge_ptr(const void *base, const void *add)
{
    return add ? add : base;
}

void *aura_create_server_conf(apr_pool_t *p, server_rec *s)
{
    aura_server_conf_t *c = apr_pcalloc(p, sizeof(*c));

    (void)s;
    c->plane = AURA_UNSET;
    c->nats_servers = NULL;
    c->nats_name = NULL;
    c->nats_connect_timeout = AURA_UNSET;
    c->nats_reconnect_wait = AURA_UNSET;
    c->nats_max_reconnect = AURA_NATS_RECONNECT_UNSET;
    c->nats_ping_interval = AURA_UNSET;
    c->db_params = NULL;
    c->db_pool_max = AURA_UNSET;
    c->db_timeout = AURA_UNSET;
    c->key_cache_ttl = AURA_UNSET;
    c->key_cache_stale = AURA_UNSET;
    c->key_invalidation_subject = NULL;
    c->key_last_used = AURA_UNSET;
    c->key_cache_size = AURA_UNSET;
    c->jwt_sources = NULL;
    c->jwt_algs = 0;
    c->jwt_leeway = AURA_UNSET;
    c->jwt_issuer = NULL;
    c->jwt_max_len = AURA_UNSET;
    c->jwks_refresh = AURA_UNSET;
    c->jwt = NULL;
    c->cors_methods = NULL;
    c->cors_headers = NULL;
    c->cors_expose = NULL;
    c->cors_max_age = AURA_UNSET;
    c->limiter_entries = AURA_UNSET;
    c->ipv6_prefix = AURA_UNSET;
    c->instances = AURA_UNSET;
    c->redis_host = NULL;
    c->redis_port = AURA_UNSET;
    c->redis_db = AURA_UNSET;
    c->redis_timeout = AURA_UNSET;
    c->redis_retry = AURA_UNSET;
    c->redis_pool_max = AURA_UNSET;
    c->breakers = NULL;
    c->target_sweep = AURA_UNSET;
    c->target_entries = AURA_UNSET;
    c->metrics_token = NULL;
    c->plane_max_in_flight = AURA_UNSET;
    c->stream_max_open = AURA_UNSET;
    c->max_conns = AURA_UNSET;
    c->max_reading = AURA_UNSET;
    c->conn_exempt = NULL;
    c->reading_v6_prefix = AURA_UNSET;
    c->h2_preface_timeout = AURA_UNSET;
    c->trace_trust = NULL;
    c->token_max_life = AURA_UNSET;
    return c;
}

void *aura_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    aura_server_conf_t *base = basev, *add = addv;
    aura_server_conf_t *c = apr_pcalloc(p, sizeof(*c));

    /* A plane is a property of one VirtualHost; never inherited. */
    c->plane = add->plane;
    c->nats_servers = (apr_array_header_t *)merge_ptr(base->nats_servers,
                                                      add->nats_servers);
    c->nats_name = merge_ptr(base->nats_name, add->nats_name);
    c->nats_connect_timeout = merge_time(base->nats_connect_timeout,
                                         add->nats_connect_timeout);
    c->nats_reconnect_wait = merge_time(base->nats_reconnect_wait,
                                        add->nats_reconnect_wait);
    c->nats_max_reconnect =
        add->nats_max_reconnect != AURA_NATS_RECONNECT_UNSET
            ? add->nats_max_reconnect : base->nats_max_reconnect;
    c->nats_ping_interval = merge_time(base->nats_ping_interval,
                                       add->nats_ping_interval);
    c->nats_sec = (struct aura_nats_sec_t *)merge_ptr(base->nats_sec,
                                                      add->nats_sec);
    c->db_params = merge_ptr(base->db_params, add->db_params);
    c->db_pool_max = merge_int(base->db_pool_max, add->db_pool_max);
    c->db_timeout = merge_time(base->db_timeout, add->db_timeout);
    c->key_cache_ttl = merge_time(base->key_cache_ttl, add->key_cache_ttl);
    c->key_cache_stale = merge_time(base->key_cache_stale,
                                    add->key_cache_stale);
    c->key_invalidation_subject = merge_ptr(base->key_invalidation_subject,
                                            add->key_invalidation_subject);
    c->key_cache_size = merge_int(base->key_cache_size, add->key_cache_size);
    c->key_last_used = merge_time(base->key_last_used, add->key_last_used);
    c->jwt_sources = (apr_array_header_t *)merge_ptr(base->jwt_sources,
                                                     add->jwt_sources);
    c->jwt_algs = add->jwt_algs ? add->jwt_algs : base->jwt_algs;
    c->jwt_leeway = merge_time(base->jwt_leeway, add->jwt_leeway);
    c->jwt_issuer = merge_ptr(base->jwt_issuer, add->jwt_issuer);
    c->jwt_max_len = merge_int(base->jwt_max_len, add->jwt_max_len);
    c->jwks_refresh = merge_time(base->jwks_refresh, add->jwks_refresh);
    c->jwt = NULL;
    c->cors_methods = merge_ptr(base->cors_methods, add->cors_methods);
    c->cors_headers = merge_ptr(base->cors_headers, add->cors_headers);
    c->cors_expose = merge_ptr(base->cors_expose, add->cors_expose);
    c->cors_max_age = merge_int(base->cors_max_age, add->cors_max_age);
    c->limiter_entries = merge_int(base->limiter_entries,
                                   add->limiter_entries);
    c->ipv6_prefix = merge_int(base->ipv6_prefix, add->ipv6_prefix);
    c->instances = merge_int(base->instances, add->instances);
    /* Host, port and db are one setting (AuraRedisServer). */
    if (add->redis_host) {
        c->redis_host = add->redis_host;
        c->redis_port = add->redis_port;
        c->redis_db = add->redis_db;
    }
    else {
        c->redis_host = base->redis_host;
        c->redis_port = base->redis_port;
        c->redis_db = base->redis_db;
    }
    c->redis_timeout = merge_time(base->redis_timeout, add->redis_timeout);
    c->redis_retry = merge_time(base->redis_retry, add->redis_retry);
    c->redis_pool_max = merge_int(base->redis_pool_max, add->redis_pool_max);
    c->breakers = (apr_array_header_t *)merge_ptr(base->breakers,
                                                  add->breakers);
    c->target_sweep = merge_time(base->target_sweep, add->target_sweep);
    c->target_entries = merge_int(base->target_entries, add->target_entries);
    c->metrics_token = merge_ptr(base->metrics_token, add->metrics_token);
    c->plane_max_in_flight = merge_int(base->plane_max_in_flight,
                                       add->plane_max_in_flight);
    c->stream_max_open = merge_int(base->stream_max_open,
                                   add->stream_max_open);
    c->max_conns = merge_int(base->max_conns, add->max_conns);
    c->max_reading = merge_int(base->max_reading, add->max_reading);
    c->conn_exempt = (apr_array_header_t *)merge_ptr(base->conn_exempt,
                                                     add->conn_exempt);
    c->reading_v6_prefix = merge_int(base->reading_v6_prefix,
                                     add->reading_v6_prefix);
    c->h2_preface_timeout = merge_time(base->h2_preface_timeout,
                                       add->h2_preface_timeout);
    /* Global only: every VirtualHost sees the main server's. */
    c->trace = (struct aura_trace_conf_t *)merge_ptr(base->trace,
                                                     add->trace);
    c->audit = (struct aura_audit_conf_t *)merge_ptr(base->audit,
                                                     add->audit);
    c->audit_subject = merge_ptr(base->audit_subject, add->audit_subject);
    /* A VirtualHost's list replaces the main server's, "none" included. */
    c->trace_trust = (struct aura_trace_trust_t *)merge_ptr(base->trace_trust,
                                                            add->trace_trust);
    c->control = (struct aura_control_conf_t *)merge_ptr(base->control,
                                                         add->control);
    c->fleet = (struct aura_fleet_conf_t *)merge_ptr(base->fleet,
                                                     add->fleet);
    c->token_max_life = merge_time(base->token_max_life,
                                   add->token_max_life);
    return c;
}

void *aura_create_dir_conf(apr_pool_t *p, char *dir)
{
    aura_dir_conf_t *d = apr_pcalloc(p, sizeof(*d));

    d->section = dir;
    d->service = AURA_UNSET;
    d->upstream_kind = AURA_UNSET;
    d->upstream = NULL;
    d->http = NULL;
    d->timeout = AURA_UNSET;
    d->health_detail = AURA_UNSET;
    d->public_route = AURA_UNSET;
    d->streaming = AURA_UNSET;
    d->zone = NULL;
    d->quota = NULL;
    d->plan_quotas = NULL;
    d->retries = AURA_UNSET;
    d->location = NULL;
    d->db_router = AURA_UNSET;
    d->stream_idle = AURA_UNSET;
    d->stream_first_byte = AURA_UNSET;
    d->stream_max = AURA_UNSET;
    d->stream_after = AURA_UNSET;
    d->stream_ack_prefix = NULL;
    d->abandon_check = AURA_UNSET;
    d->max_in_flight = AURA_UNSET;
    d->max_streams = AURA_UNSET;
    d->stream_per_address = AURA_UNSET;
    d->stream_per_actor = AURA_UNSET;
    d->forward_token = AURA_UNSET;
    d->key_scope = NULL;
    d->logout = NULL;
    return d;
}

void *aura_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    aura_dir_conf_t *base = basev, *add = addv;
    aura_dir_conf_t *d = apr_pcalloc(p, sizeof(*d));
    int i;

    /* Service and upstream are one setting (one directive): take both
     * from the level that set the service. */
    if (add->service != AURA_UNSET) {
        d->service = add->service;
        d->upstream_kind = add->upstream_kind;
        d->upstream = add->upstream;
        d->http = add->http;
        d->location = add->location;
        d->location_len = add->location_len;
    }
    else {
        d->service = base->service;
        d->upstream_kind = base->upstream_kind;
        d->upstream = base->upstream;
        d->http = base->http;
        d->location = base->location;
        d->location_len = base->location_len;
    }
    d->section = merge_ptr(base->section, add->section);
    d->timeout = merge_time(base->timeout, add->timeout);
    d->health_detail = merge_int(base->health_detail, add->health_detail);
    d->public_route = merge_int(base->public_route, add->public_route);
    d->streaming = merge_int(base->streaming, add->streaming);
    /* Per header: the nearer level's setting wins, others are inherited. */
    for (i = 0; i < AURA_SECURITY_HEADERS; i++) {
        d->security_headers[i] = merge_ptr(base->security_headers[i],
                                           add->security_headers[i]);
    }
    d->zone = merge_ptr(base->zone, add->zone);
    d->quota = merge_ptr(base->quota, add->quota);
    /* Per plan, as for the headers: the nearer level wins. */
    if (base->plan_quotas && add->plan_quotas) {
        d->plan_quotas = apr_hash_overlay(p, add->plan_quotas,
                                          base->plan_quotas);
    }
    else {
        d->plan_quotas = add->plan_quotas ? add->plan_quotas
                                          : base->plan_quotas;
    }
    d->retries = merge_int(base->retries, add->retries);
    d->db_router = merge_int(base->db_router, add->db_router);
    d->stream_idle = merge_time(base->stream_idle, add->stream_idle);
    d->stream_first_byte = merge_time(base->stream_first_byte,
                                      add->stream_first_byte);
    d->stream_max = merge_time(base->stream_max, add->stream_max);
    d->stream_after = merge_time(base->stream_after, add->stream_after);
    d->stream_ack_prefix = merge_ptr(base->stream_ack_prefix,
                                     add->stream_ack_prefix);
    d->abandon_check = merge_int(base->abandon_check, add->abandon_check);
    d->max_in_flight = merge_int(base->max_in_flight, add->max_in_flight);
    d->shed = merge_ptr(base->shed, add->shed);
    d->max_streams = merge_int(base->max_streams, add->max_streams);
    d->stream_per_address = merge_int(base->stream_per_address,
                                      add->stream_per_address);
    d->stream_per_actor = merge_int(base->stream_per_actor,
                                    add->stream_per_actor);
    d->forward_token = merge_int(base->forward_token, add->forward_token);
    d->key_scope = merge_ptr(base->key_scope, add->key_scope);
    d->logout = merge_ptr(base->logout, add->logout);
    return d;
}

aura_dir_conf_t *aura_dir_conf(request_rec *r)
{
    return ap_get_module_config(r->per_dir_config, &aura_common_module);
}

aura_server_conf_t *aura_server_conf(const server_rec *s)
{
    return ap_get_module_config(s->module_config, &aura_common_module);
}

apr_interval_time_t aura_route_timeout(const aura_dir_conf_t *d)
{
    return d->timeout != AURA_UNSET ? d->timeout : AURA_DEFAULT_TIMEOUT;
}

/* Durations: "250ms", "2s", "5" (seconds), within [min, max]. */
const char *aura_parse_duration(cmd_parms *cmd, const char *arg,
                                apr_interval_time_t min,
                                apr_interval_time_t max,
                                apr_interval_time_t *out)
{
    apr_interval_time_t t;

    if (ap_timeout_parameter_parse(arg, &t, "s") != APR_SUCCESS
        || t < min || t > max) {
        return apr_psprintf(cmd->pool,
                            "%s: '%s' is not a duration between %" APR_TIME_T_FMT
                            " ms and %" APR_TIME_T_FMT " s (e.g. 250ms, 30s)",
                            cmd->cmd->name, arg, apr_time_as_msec(min),
                            apr_time_sec(max));
    }
    *out = t;
    return NULL;
}

const char *aura_global_only(cmd_parms *cmd)
{
    return ap_check_cmd_context(cmd, GLOBAL_ONLY);
}

aura_server_conf_t *aura_cmd_server_conf(cmd_parms *cmd)
{
    return ap_get_module_config(cmd->server->module_config,
                                &aura_common_module);
}

const char *aura_parse_int(cmd_parms *cmd, const char *arg, int min,
                           int max, int *out)
{
    char *end;
    apr_int64_t n = apr_strtoi64(arg, &end, 10);

    if (*arg == '\0' || *end != '\0' || n < min || n > max) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a number between "
                            "%d and %d", cmd->cmd->name, arg, min, max);
    }
    *out = (int)n;
    return NULL;
}

const char *aura_set_dir_flag(cmd_parms *cmd, void *dirv, int on)
{
    int *field = (int *)((char *)dirv + (apr_size_t)cmd->info);

    *field = on;
    return NULL;
}

/* Plane directives (moving to the plane modules): AuraPlane (the plane
 * registry's words, core/aura_plane.c), AuraPublic, AuraStreaming,
 * AuraForwardToken; their entries are AURA_PLANE_DIRECTIVES
 * (aura_config.h). */

const char *aura_set_plane(cmd_parms *cmd, void *dummy, const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    aura_plane_e plane;

    (void)dummy;
    if (!cmd->server->is_virtual) {
        return apr_psprintf(cmd->pool, "%s must be inside a <VirtualHost>: "
                            "a plane is one VirtualHost's policy",
                            cmd->cmd->name);
    }
    if (aura_plane_parse(arg, &plane) != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not one of: %s",
                            cmd->cmd->name, arg,
                            aura_plane_words(cmd->temp_pool));
    }
    c->plane = plane;
    return NULL;
}
