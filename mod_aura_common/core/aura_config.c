/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_config.c: mod_aura_common's directives, per-server and per-dir
 * config, create/merge and the cross-directive checks.  create_* leave
 * every field "unset"; merge_* take the nearer level when it is set;
 * defaults are applied by the getters, so "unset" survives every merge
 * level.  No directive is allowed in .htaccess.
 */
#include "core/aura_module.h"
#include "auth/aura_jwks.h"
#include "auth/aura_jwt.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "http/aura_accesslog.h"
#include "http/aura_dbrouter.h"
#include "http/aura_metrics.h"
#include "limit/aura_connlimit.h"
#include "limit/aura_limit.h"
#include "nats/aura_subject.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_bulkhead.h"
#include "nats/aura_subject.h"
#include "auth/aura_jwt.h"

#include "http_core.h"
#include "apr_strings.h"
#include "apr_lib.h"

const char *const aura_service_names[AURA_SVC_COUNT] = {
    "auth", "db", "storage", "functions", "realtime", "notifications",
    "ai", "provisioner", "control"
};

/* Bounds, so that a typo cannot configure a 3-year timeout. */
#define MAX_ROUTE_TIMEOUT   apr_time_from_sec(3600)
#define MIN_ROUTE_TIMEOUT   apr_time_from_msec(1)
#define MAX_NATS_WAIT       apr_time_from_sec(600)

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
    c->max_conns = AURA_UNSET;
    c->max_reading = AURA_UNSET;
    c->conn_exempt = NULL;
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
    c->db_params = merge_ptr(base->db_params, add->db_params);
    c->db_pool_max = merge_int(base->db_pool_max, add->db_pool_max);
    c->db_timeout = merge_time(base->db_timeout, add->db_timeout);
    c->key_cache_ttl = merge_time(base->key_cache_ttl, add->key_cache_ttl);
    c->key_cache_stale = merge_time(base->key_cache_stale,
                                    add->key_cache_stale);
    c->key_invalidation_subject = merge_ptr(base->key_invalidation_subject,
                                            add->key_invalidation_subject);
    c->key_cache_size = merge_int(base->key_cache_size, add->key_cache_size);
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
    c->max_conns = merge_int(base->max_conns, add->max_conns);
    c->max_reading = merge_int(base->max_reading, add->max_reading);
    c->conn_exempt = (apr_array_header_t *)merge_ptr(base->conn_exempt,
                                                     add->conn_exempt);
    return c;
}

void *aura_create_dir_conf(apr_pool_t *p, char *dir)
{
    aura_dir_conf_t *d = apr_pcalloc(p, sizeof(*d));

    (void)dir;
    d->service = AURA_UNSET;
    d->upstream_kind = AURA_UNSET;
    d->upstream = NULL;
    d->timeout = AURA_UNSET;
    d->health_detail = AURA_UNSET;
    d->public_route = AURA_UNSET;
    d->streaming = AURA_UNSET;
    d->security_headers = NULL;
    d->zone = NULL;
    d->quota = NULL;
    d->plan_quotas = NULL;
    d->retries = AURA_UNSET;
    d->location = NULL;
    d->db_router = AURA_UNSET;
    d->stream_idle = AURA_UNSET;
    d->stream_first_byte = AURA_UNSET;
    d->stream_max = AURA_UNSET;
    d->stream_ack_prefix = NULL;
    d->abandon_check = AURA_UNSET;
    d->max_in_flight = AURA_UNSET;
    return d;
}

void *aura_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    aura_dir_conf_t *base = basev, *add = addv;
    aura_dir_conf_t *d = apr_pcalloc(p, sizeof(*d));

    /* Service and upstream are one setting (one directive): take both
     * from the level that set the service. */
    if (add->service != AURA_UNSET) {
        d->service = add->service;
        d->upstream_kind = add->upstream_kind;
        d->upstream = add->upstream;
        d->location = add->location;
    }
    else {
        d->service = base->service;
        d->upstream_kind = base->upstream_kind;
        d->upstream = base->upstream;
        d->location = base->location;
    }
    d->timeout = merge_time(base->timeout, add->timeout);
    d->health_detail = merge_int(base->health_detail, add->health_detail);
    d->public_route = merge_int(base->public_route, add->public_route);
    d->streaming = merge_int(base->streaming, add->streaming);
    /* Per header: the nearer level's setting wins, others are inherited. */
    if (base->security_headers && add->security_headers) {
        d->security_headers = apr_table_overlay(p, add->security_headers,
                                                base->security_headers);
        apr_table_compress(d->security_headers, APR_OVERLAP_TABLES_SET);
    }
    else {
        d->security_headers = add->security_headers ? add->security_headers
                                                    : base->security_headers;
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
    d->stream_ack_prefix = merge_ptr(base->stream_ack_prefix,
                                     add->stream_ack_prefix);
    d->abandon_check = merge_int(base->abandon_check, add->abandon_check);
    d->max_in_flight = merge_int(base->max_in_flight, add->max_in_flight);
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

static const char *set_plane(cmd_parms *cmd, void *dummy, const char *arg)
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

static const char *set_nats_servers(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    if (ap_strstr_c(arg, "://") == NULL
        || (strncasecmp(arg, "nats://", 7) && strncasecmp(arg, "tls://", 6))
        || strlen(arg) < 8) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS URL "
                            "(nats://host:port or tls://host:port)",
                            cmd->cmd->name, arg);
    }
    if (!c->nats_servers) {
        c->nats_servers = apr_array_make(cmd->pool, 2, sizeof(const char *));
    }
    APR_ARRAY_PUSH(c->nats_servers, const char *) = arg;
    return NULL;
}

static const char *set_nats_name(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    aura_cmd_server_conf(cmd)->nats_name = arg;
    return NULL;
}

static const char *set_nats_time(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    /* The field is chosen by the command table's cmd_data offset. */
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    return aura_parse_duration(cmd, arg, apr_time_from_msec(10),
                               MAX_NATS_WAIT, field);
}

static const char *set_nats_max_reconnect(cmd_parms *cmd, void *dummy,
                                          const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd);
    char *end;
    apr_int64_t n;

    (void)dummy;
    if (err) {
        return err;
    }
    if (!strcasecmp(arg, "unlimited")) {
        c->nats_max_reconnect = -1;
        return NULL;
    }
    n = apr_strtoi64(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || n < 0 || n > 1000000) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not 'unlimited' or a "
                            "number of attempts between 0 and 1000000",
                            cmd->cmd->name, arg);
    }
    c->nats_max_reconnect = (int)n;
    return NULL;
}

static int valid_subject(const char *s)
{
    /* NATS subjects: dot-separated non-empty tokens, no whitespace; a
     * request goes to one subject, so no wildcards either. */
    const char *c;
    int token_len = 0;

    if (!*s) {
        return 0;
    }
    for (c = s; *c; c++) {
        if (apr_isspace(*c) || *c == '*' || *c == '>'
            || !apr_isprint(*c)) {
            return 0;
        }
        if (*c == '.') {
            if (!token_len) {
                return 0;
            }
            token_len = 0;
        }
        else {
            token_len++;
        }
    }
    return token_len > 0;
}

#define HTTP_ROUTE_KEY "mod_aura_common-http-route"

void aura_set_service_seen(cmd_parms *cmd)
{
    void *seen = NULL;

    apr_pool_userdata_get(&seen, HTTP_ROUTE_KEY, cmd->pool);
    if (!seen) {
        apr_pool_userdata_setn(apr_psprintf(cmd->pool, "%s:%d",
                                            cmd->directive->filename,
                                            cmd->directive->line_num),
                               HTTP_ROUTE_KEY, NULL, cmd->pool);
    }
}

/* An http(s) upstream: a host, an optional path, no query or fragment;
 * kept without a trailing slash (the request's path brings its own). */
static const char *set_http_upstream(cmd_parms *cmd, aura_dir_conf_t *d,
                                     const char *upstream)
{
    const char *host = ap_strstr_c(upstream, "://") + 3;
    apr_size_t n = strlen(upstream);

    if (!*host || *host == '/' || ap_strchr_c(upstream, '?')
        || ap_strchr_c(upstream, '#')) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not an http(s) URL "
                            "with a host (and an optional path)",
                            cmd->cmd->name, upstream);
    }
    while (upstream + n > host + 1 && upstream[n - 1] == '/') {
        n--;
    }
    d->upstream_kind = AURA_UPSTREAM_HTTP;
    d->upstream = apr_pstrmemdup(cmd->pool, upstream, n);
    aura_set_service_seen(cmd);
    return NULL;
}

/* The prefix of the <Location> being read, or NULL for a regex one
 * (<LocationMatch>, <Location ~ ...>) or another kind of section. */
static const char *plain_location(const cmd_parms *cmd)
{
    const ap_directive_t *sec = cmd->directive ? cmd->directive->parent
                                               : NULL;

    if (!sec || strcasecmp(sec->directive, "<Location") || !cmd->path
        || sec->args[0] == '~') {
        return NULL;
    }
    return cmd->path;
}

static const char *set_service(cmd_parms *cmd, void *dirv, const char *name,
                               const char *upstream)
{
    aura_dir_conf_t *d = dirv;
    int i;

    for (i = 0; i < AURA_SVC_COUNT; i++) {
        if (!strcasecmp(name, aura_service_names[i])) {
            break;
        }
    }
    if (i == AURA_SVC_COUNT) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not one of: auth | db | "
                            "storage | functions | realtime | notifications "
                            "| ai | provisioner | control",
                            cmd->cmd->name, name);
    }
    if (!strncasecmp(upstream, "nats:", 5)) {
        if (!valid_subject(upstream + 5)) {
            return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject "
                                "(nats:token.token, no spaces or wildcards)",
                                cmd->cmd->name, upstream + 5);
        }
        d->upstream_kind = AURA_UPSTREAM_NATS;
        d->upstream = upstream + 5;
    }
    else if (!strncasecmp(upstream, "http://", 7)
             || !strncasecmp(upstream, "https://", 8)) {
        const char *err = set_http_upstream(cmd, d, upstream);

        if (err) {
            return err;
        }
    }
    else {
        return apr_psprintf(cmd->pool, "%s: upstream '%s' must be "
                            "nats:<subject> or an http(s):// URL",
                            cmd->cmd->name, upstream);
    }
    d->service = i;
    d->location = plain_location(cmd);
    return NULL;
}

static const char *set_timeout(cmd_parms *cmd, void *dirv, const char *arg)
{
    aura_dir_conf_t *d = dirv;

    return aura_parse_duration(cmd, arg, MIN_ROUTE_TIMEOUT,
                               MAX_ROUTE_TIMEOUT, &d->timeout);
}

/* The streaming timeouts; the field from the command table. */
static const char *set_stream_time(cmd_parms *cmd, void *dirv,
                                   const char *arg)
{
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)dirv + (apr_size_t)cmd->info);

    return aura_parse_duration(cmd, arg, apr_time_from_msec(100),
                               apr_time_from_sec(7 * 86400), field);
}

/* A subject prefix ending at a token boundary: acknowledgements go only
 * under it (aura_subject.c). */
static const char *set_stream_ack_prefix(cmd_parms *cmd, void *dirv,
                                         const char *arg)
{
    if (!aura_subject_ack_prefix_ok(arg)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject "
                            "prefix (tokens, no spaces or wildcards, "
                            "ending in '.', e.g. _INBOX. or acks.storage.)",
                            cmd->cmd->name, arg);
    }
    ((aura_dir_conf_t *)dirv)->stream_ack_prefix = arg;
    return NULL;
}

/* The router may send requests to PostgREST over HTTP: like an http(s)
 * AuraService, it needs the proxy modules (check_config). */
static const char *set_db_router(cmd_parms *cmd, void *dirv, int on)
{
    ((aura_dir_conf_t *)dirv)->db_router = on;
    if (on) {
        aura_set_service_seen(cmd);
    }
    return NULL;
}

static const char *set_health_detail(cmd_parms *cmd, void *dirv, int on)
{
    aura_dir_conf_t *d = dirv;

    (void)cmd;
    d->health_detail = on;
    return NULL;
}

static const char *set_abandon_check(cmd_parms *cmd, void *dirv, int on)
{
    (void)cmd;
    ((aura_dir_conf_t *)dirv)->abandon_check = on;
    return NULL;
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

static const char *set_db_params(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    /* The conninfo may hold a password: it is never logged, and an error
     * here does not repeat it. */
    if (!ap_strchr_c(arg, '=')) {
        return apr_psprintf(cmd->pool, "%s: not a libpq conninfo string "
                            "(keyword=value ...)", cmd->cmd->name);
    }
    aura_cmd_server_conf(cmd)->db_params = arg;
    return NULL;
}

static const char *set_db_pool_max(cmd_parms *cmd, void *dummy,
                                   const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    return err ? err : aura_parse_int(cmd, arg, 1, 1024,
                                      &aura_cmd_server_conf(cmd)->db_pool_max);
}

static const char *set_global_time(cmd_parms *cmd, void *dummy,
                                   const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    const char *err = aura_global_only(cmd);
    /* 0 is allowed for the key cache (no caching at all), never for the
     * database budget: without one a query could wait forever. */
    apr_interval_time_t min =
        field == &c->db_timeout ? apr_time_from_msec(10) : 0;

    (void)dummy;
    if (err) {
        return err;
    }
    return aura_parse_duration(cmd, arg, min, apr_time_from_sec(3600),
                               field);
}

static const char *set_key_cache_size(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    int n;
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (!err) {
        err = aura_parse_int(cmd, arg, 16, 1 << 22, &n);
    }
    if (err) {
        return err;
    }
    if (n & (n - 1)) {
        return apr_psprintf(cmd->pool, "%s: %d is not a power of two",
                            cmd->cmd->name, n);
    }
    aura_cmd_server_conf(cmd)->key_cache_size = n;
    return NULL;
}

static const char *set_cors_list(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char **field = (const char **)((char *)c + (apr_size_t)cmd->info);
    const char *p;

    (void)dummy;
    for (p = arg; *p; p++) {
        if (!apr_isalnum(*p) && !ap_strchr_c(" ,-_*", *p)) {
            return apr_psprintf(cmd->pool, "%s: '%s' is not a list of "
                                "header or method names",
                                cmd->cmd->name, arg);
        }
    }
    *field = arg;
    return NULL;
}

static const char *set_cors_max_age(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    (void)dummy;
    return aura_parse_int(cmd, arg, 0, 86400,
                          &aura_cmd_server_conf(cmd)->cors_max_age);
}

static const char *set_dir_flag(cmd_parms *cmd, void *dirv, int on)
{
    int *field = (int *)((char *)dirv + (apr_size_t)cmd->info);

    *field = on;
    return NULL;
}

/* The headers the gateway sets on every response; an operator may change
 * a value or turn one off, never add arbitrary headers (mod_headers
 * does that). */
static const char *const security_header_names[] = {
    "Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy",
    "X-Frame-Options", "Strict-Transport-Security", NULL
};

static const char *set_security_header(cmd_parms *cmd, void *dirv,
                                       const char *name, const char *value)
{
    aura_dir_conf_t *d = dirv;
    int i;

    for (i = 0; security_header_names[i]; i++) {
        if (!strcasecmp(name, security_header_names[i])) {
            break;
        }
    }
    if (!security_header_names[i]) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not one of: "
                            "Content-Security-Policy | X-Content-Type-Options"
                            " | Referrer-Policy | X-Frame-Options | "
                            "Strict-Transport-Security", cmd->cmd->name,
                            name);
    }
    if (!d->security_headers) {
        d->security_headers = apr_table_make(cmd->pool, 4);
    }
    apr_table_set(d->security_headers, security_header_names[i], value);
    return NULL;
}

static const char *add_jwt_source(cmd_parms *cmd, aura_jwt_src_kind_e kind,
                                  const char *path, const char *kid)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    aura_jwt_source_t *src;
    const char *err;

    if (!c->jwt_sources) {
        c->jwt_sources = apr_array_make(cmd->pool, 2,
                                        sizeof(aura_jwt_source_t));
    }
    src = apr_array_push(c->jwt_sources);
    memset(src, 0, sizeof(*src));
    src->kind = kind;
    src->path = path;
    src->kid = kid;
    err = aura_jwks_read_source(cmd, src);
    if (!err && src->kind == AURA_JWT_SRC_JWKS) {
        int i;

        for (i = 0; i < c->jwt_sources->nelts - 1; i++) {
            aura_jwt_src_kind_e k =
                APR_ARRAY_IDX(c->jwt_sources, i, aura_jwt_source_t).kind;

            if (k == AURA_JWT_SRC_JWKS || k == AURA_JWT_SRC_NATS) {
                return apr_psprintf(cmd->pool, "%s: %s is a second JWKS "
                                    "document in this server: one JWKS "
                                    "per VirtualHost (merge them)",
                                    cmd->cmd->name, src->path);
            }
        }
    }
    return err;
}

static const char *set_jwt_key_file(cmd_parms *cmd, void *dummy,
                                    const char *path, const char *kid)
{
    (void)dummy;
    /* JWKS or PEM: told apart by the content when it is read. */
    return add_jwt_source(cmd, AURA_JWT_SRC_PEM, path, kid);
}

static const char *set_jwt_secret_file(cmd_parms *cmd, void *dummy,
                                       const char *path, const char *kid)
{
    (void)dummy;
    return add_jwt_source(cmd, AURA_JWT_SRC_SECRET, path, kid);
}

static const char *set_jwks_subject(cmd_parms *cmd, void *dummy,
                                    const char *subject)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    aura_jwt_source_t *src;
    int i;

    (void)dummy;
    if (!valid_subject(subject)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject",
                            cmd->cmd->name, subject);
    }
    if (!c->jwt_sources) {
        c->jwt_sources = apr_array_make(cmd->pool, 2,
                                        sizeof(aura_jwt_source_t));
    }
    for (i = 0; i < c->jwt_sources->nelts; i++) {
        aura_jwt_src_kind_e k =
            APR_ARRAY_IDX(c->jwt_sources, i, aura_jwt_source_t).kind;

        if (k == AURA_JWT_SRC_JWKS || k == AURA_JWT_SRC_NATS) {
            return apr_psprintf(cmd->pool, "%s: this server already has a "
                                "JWKS source: one JWKS per VirtualHost",
                                cmd->cmd->name);
        }
    }
    src = apr_array_push(c->jwt_sources);
    memset(src, 0, sizeof(*src));
    src->kind = AURA_JWT_SRC_NATS;
    src->path = subject;
    return NULL;
}

static const char *set_jwt_algs(cmd_parms *cmd, void *dummy,
                                const char *args)
{
    const char *err = NULL;
    unsigned int algs = aura_jwt_parse_algs(args, &err);

    (void)dummy;
    if (!algs) {
        return apr_psprintf(cmd->pool, "%s: '%s': %s (accepted: RS256 "
                            "ES256 HS256; never none)", cmd->cmd->name, args,
                            err ? err : "no algorithm");
    }
    aura_cmd_server_conf(cmd)->jwt_algs = algs;
    return NULL;
}

static const char *set_server_time(cmd_parms *cmd, void *dummy,
                                   const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    /* A zero refresh interval would let made-up kids force a re-read per
     * request: at least one second. */
    apr_interval_time_t min =
        field == &c->jwks_refresh ? apr_time_from_sec(1) : 0;

    (void)dummy;
    return aura_parse_duration(cmd, arg, min, apr_time_from_sec(3600),
                               field);
}

static const char *set_server_string(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    (void)dummy;
    *(const char **)((char *)c + (apr_size_t)cmd->info) = arg;
    return NULL;
}

static const char *set_jwt_max_len(cmd_parms *cmd, void *dummy,
                                   const char *arg)
{
    (void)dummy;
    return aura_parse_int(cmd, arg, 256, 65536,
                     &aura_cmd_server_conf(cmd)->jwt_max_len);
}

static const char *set_invalidation_subject(cmd_parms *cmd, void *dummy,
                                            const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    if (!valid_subject(arg)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject",
                            cmd->cmd->name, arg);
    }
    aura_cmd_server_conf(cmd)->key_invalidation_subject = arg;
    return NULL;
}

#define NATS_TIME(name, field, help)                                        \
    AP_INIT_TAKE1(name, set_nats_time,                                      \
                  (void *)APR_OFFSETOF(aura_server_conf_t, field),          \
                  RSRC_CONF, help)

const command_rec aura_cmds[] = {
    AP_INIT_TAKE1("AuraPlane", set_plane, NULL, RSRC_CONF,
                  "The plane this VirtualHost serves: data | management | none"),
    AP_INIT_ITERATE("AuraNATSServers", set_nats_servers, NULL, RSRC_CONF,
                    "NATS server URLs (one, or several of a cluster)"),
    AP_INIT_TAKE1("AuraNATSName", set_nats_name, NULL, RSRC_CONF,
                  "Connection name shown by the NATS server"),
    NATS_TIME("AuraNATSConnectTimeout", nats_connect_timeout,
              "Timeout of one attempt to connect to a NATS server"),
    NATS_TIME("AuraNATSReconnectWait", nats_reconnect_wait,
              "Wait between reconnect attempts to the same NATS server"),
    AP_INIT_TAKE1("AuraNATSMaxReconnect", set_nats_max_reconnect, NULL,
                  RSRC_CONF,
                  "Reconnect attempts before giving up: a number or "
                  "unlimited"),
    NATS_TIME("AuraNATSPingInterval", nats_ping_interval,
              "Interval of the keep-alive PING to the NATS server"),
    AP_INIT_TAKE2("AuraService", set_service, NULL, ACCESS_CONF,
                  "The service of this Location and its upstream: "
                  "nats:<subject> or an http(s):// URL"),
    AP_INIT_TAKE1("AuraTimeout", set_timeout, NULL, ACCESS_CONF,
                  "Upstream budget of this Location (all attempts)"),
    AP_INIT_FLAG("AuraHealthDetail", set_health_detail, NULL, ACCESS_CONF,
                 "Whether /health also reports shared-memory details"),
    AP_INIT_FLAG("AuraAbandonCheck", set_abandon_check, NULL,
                 RSRC_CONF | ACCESS_CONF,
                 "Whether a request whose client closed its connection is "
                 "given up (never sent, its wait ended)"),
    AP_INIT_TAKE1("AuraDBParams", set_db_params, NULL, RSRC_CONF,
                  "libpq connection string of the key store"),
    AP_INIT_TAKE1("AuraDBPoolMax", set_db_pool_max, NULL, RSRC_CONF,
                  "Postgres connections per child process, at most"),
    AP_INIT_TAKE1("AuraDBTimeout", set_global_time,
                  (void *)APR_OFFSETOF(aura_server_conf_t, db_timeout),
                  RSRC_CONF,
                  "Budget of one key store query, connection wait "
                  "included"),
    AP_INIT_TAKE1("AuraKeyCacheTTL", set_global_time,
                  (void *)APR_OFFSETOF(aura_server_conf_t, key_cache_ttl),
                  RSRC_CONF,
                  "How long a child trusts a cached key lookup (0: never)"),
    AP_INIT_TAKE1("AuraKeyCacheStaleMax", set_global_time,
                  (void *)APR_OFFSETOF(aura_server_conf_t, key_cache_stale),
                  RSRC_CONF,
                  "How long past its TTL a cached key lookup is still used "
                  "while the key store is unavailable (0: never)"),
    AP_INIT_TAKE1("AuraKeyCacheSize", set_key_cache_size, NULL, RSRC_CONF,
                  "Cached key lookups per child process (a power of two)"),
    AP_INIT_TAKE12("AuraJWTKeyFile", set_jwt_key_file, NULL, RSRC_CONF,
                   "A JWKS document or a PEM public key (or certificate) "
                   "for bearer tokens, and its kid"),
    AP_INIT_TAKE12("AuraJWTSecretFile", set_jwt_secret_file, NULL,
                   RSRC_CONF,
                   "A file holding an HS256 secret (32 bytes at least), "
                   "and its kid"),
    AP_INIT_TAKE1("AuraJWKSSubject", set_jwks_subject, NULL, RSRC_CONF,
                  "NATS subject of the identity service's JWKS, fetched "
                  "on first use and on an unknown kid"),
    AP_INIT_RAW_ARGS("AuraJWTAlgorithms", set_jwt_algs, NULL, RSRC_CONF,
                     "Algorithms bearer tokens may use: RS256 ES256 HS256"),
    AP_INIT_TAKE1("AuraJWTLeeway", set_server_time,
                  (void *)APR_OFFSETOF(aura_server_conf_t, jwt_leeway),
                  RSRC_CONF, "Clock skew allowed on exp, nbf and iat"),
    AP_INIT_TAKE1("AuraJWTIssuer", set_server_string,
                  (void *)APR_OFFSETOF(aura_server_conf_t, jwt_issuer),
                  RSRC_CONF, "The iss a bearer token must carry"),
    AP_INIT_TAKE1("AuraJWTMaxLength", set_jwt_max_len, NULL, RSRC_CONF,
                  "Longest bearer token accepted, in bytes"),
    AP_INIT_TAKE1("AuraJWKSRefreshInterval", set_server_time,
                  (void *)APR_OFFSETOF(aura_server_conf_t, jwks_refresh),
                  RSRC_CONF,
                  "Least time between two JWKS refreshes on unknown kids, "
                  "across all children"),
    AP_INIT_TAKE1("AuraKeyInvalidationSubject", set_invalidation_subject,
                  NULL, RSRC_CONF,
                  "NATS subject of key invalidations (payload: a project "
                  "id)"),
    AP_INIT_TAKE1("AuraCORSAllowMethods", set_cors_list,
                  (void *)APR_OFFSETOF(aura_server_conf_t, cors_methods),
                  RSRC_CONF, "Methods a CORS preflight allows"),
    AP_INIT_TAKE1("AuraCORSAllowHeaders", set_cors_list,
                  (void *)APR_OFFSETOF(aura_server_conf_t, cors_headers),
                  RSRC_CONF, "Request headers a CORS preflight allows"),
    AP_INIT_TAKE1("AuraCORSExposeHeaders", set_cors_list,
                  (void *)APR_OFFSETOF(aura_server_conf_t, cors_expose),
                  RSRC_CONF, "Response headers browsers may read"),
    AP_INIT_TAKE1("AuraCORSMaxAge", set_cors_max_age, NULL, RSRC_CONF,
                  "Seconds a browser may cache a preflight answer"),
    AP_INIT_FLAG("AuraPublic", set_dir_flag,
                 (void *)APR_OFFSETOF(aura_dir_conf_t, public_route),
                 ACCESS_CONF, "Whether this Location needs no credential"),
    AP_INIT_FLAG("AuraStreaming", set_dir_flag,
                 (void *)APR_OFFSETOF(aura_dir_conf_t, streaming),
                 ACCESS_CONF,
                 "Whether this Location streams (WebSocket, SSE): the "
                 "apikey query parameter is accepted there"),
    AP_INIT_TAKE2("AuraSecurityHeader", set_security_header, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "Value of a security header on every response, or off"),
    AP_INIT_RAW_ARGS("AuraRateLimitZone", aura_set_rate_limit_zone, NULL,
                     RSRC_CONF,
                     "A per-address limit (before authentication) with a "
                     "table of its own: name, rate=<n>r/s or r/m, "
                     "burst=<n>, entries=<n>"),
    AP_INIT_TAKE1("AuraRateLimit", aura_set_rate_limit, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "The AuraRateLimitZone of this VirtualHost or Location, "
                  "or off"),
    AP_INIT_TAKE1("AuraRateLimitEntries", aura_set_limit_int,
                  (void *)APR_OFFSETOF(aura_server_conf_t, limiter_entries),
                  RSRC_CONF,
                  "Client addresses each rate-limit table tracks at "
                  "once (16 bytes each), unless its zone says entries="),
    AP_INIT_TAKE1("AuraRateLimitIPv6Prefix", aura_set_limit_int,
                  (void *)APR_OFFSETOF(aura_server_conf_t, ipv6_prefix),
                  RSRC_CONF,
                  "Leading bits of an IPv6 client address that make one "
                  "rate-limit key"),
    AP_INIT_TAKE1("AuraMaxConnectionsPerAddress", aura_set_max_conns, NULL,
                  RSRC_CONF,
                  "Connections one client address may hold open to this "
                  "listener at once: n, auto or off"),
    AP_INIT_TAKE1("AuraMaxReadingConnections", aura_set_max_reading, NULL,
                  RSRC_CONF,
                  "Connections of this listener that may be sending their "
                  "first request at once: n, auto or off"),
    AP_INIT_ITERATE("AuraConnectionLimitExempt", aura_set_conn_exempt, NULL,
                    RSRC_CONF,
                    "Addresses or networks (e.g. 10.0.0.0/8) that "
                    "AuraMaxConnectionsPerAddress does not limit"),
    AP_INIT_TAKE12("AuraActorQuota", aura_set_actor_quota, NULL,
                   RSRC_CONF | ACCESS_CONF,
                   "Requests an authenticated actor may make per window "
                   "(e.g. 1000 60s), or off"),
    AP_INIT_TAKE3("AuraPlanQuota", aura_set_plan_quota, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "The actor quota of the projects on one plan: plan, "
                  "requests, window"),
    AP_INIT_TAKE1("AuraInstances", aura_set_limit_int,
                  (void *)APR_OFFSETOF(aura_server_conf_t, instances),
                  RSRC_CONF,
                  "Gateway instances sharing the actor quotas: without "
                  "Redis each enforces its share"),
    AP_INIT_TAKE1("AuraRedisServer", aura_set_redis_server, NULL, RSRC_CONF,
                  "Redis holding the shared actor quotas: host:port[/db]"),
    AP_INIT_TAKE1("AuraRedisTimeout", aura_set_redis_time,
                  (void *)APR_OFFSETOF(aura_server_conf_t, redis_timeout),
                  RSRC_CONF,
                  "Budget of one Redis connect and of one command"),
    AP_INIT_TAKE1("AuraRedisRetryInterval", aura_set_redis_time,
                  (void *)APR_OFFSETOF(aura_server_conf_t, redis_retry),
                  RSRC_CONF,
                  "How long the local fallback serves after a Redis "
                  "failure before Redis is tried again"),
    AP_INIT_TAKE1("AuraRedisPoolMax", aura_set_limit_int,
                  (void *)APR_OFFSETOF(aura_server_conf_t, redis_pool_max),
                  RSRC_CONF, "Redis connections per child process, at most"),
    AP_INIT_FLAG("AuraDBRouter", set_db_router, NULL, ACCESS_CONF,
                 "Whether this Location is the /v1/db router: CRUD of a "
                 "project with a dedicated PostgREST goes straight to it"),
    AP_INIT_RAW_ARGS("AuraBreaker", aura_set_breaker, NULL, RSRC_CONF,
                     "Circuit breaker of a service (or * for all): "
                     "threshold=<n> cooldown=<duration> probes=<n> "
                     "probe-timeout=<duration>"),
    AP_INIT_TAKE1("AuraStreamIdleTimeout", set_stream_time,
                  (void *)APR_OFFSETOF(aura_dir_conf_t, stream_idle),
                  RSRC_CONF | ACCESS_CONF,
                  "Streaming HTTP routes: longest silence of the upstream "
                  "between two reads, instead of AuraTimeout"),
    AP_INIT_TAKE1("AuraStreamFirstByteTimeout", set_stream_time,
                  (void *)APR_OFFSETOF(aura_dir_conf_t, stream_first_byte),
                  RSRC_CONF | ACCESS_CONF,
                  "Streaming HTTP routes: how long the upstream may take "
                  "to start answering"),
    AP_INIT_TAKE1("AuraStreamMaxDuration", set_stream_time,
                  (void *)APR_OFFSETOF(aura_dir_conf_t, stream_max),
                  RSRC_CONF | ACCESS_CONF,
                  "Streaming HTTP routes: longest a streamed response may "
                  "last (not WebSocket tunnels)"),
    AP_INIT_TAKE1("AuraStreamAckPrefix", set_stream_ack_prefix, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "Streamed NATS replies: the subject prefix under which "
                  "the gateway publishes acknowledgements and cancels"),
    AP_INIT_TAKE1("AuraMetricsTokenFile", aura_set_metrics_token, NULL,
                  RSRC_CONF,
                  "File holding the bearer token /metrics (SetHandler "
                  "aura-metrics) answers to"),
    AP_INIT_TAKE1("AuraTargetBreakerEntries", aura_set_limit_int,
                  (void *)APR_OFFSETOF(aura_server_conf_t, target_entries),
                  RSRC_CONF,
                  "Dedicated PostgREST targets the shared breaker table "
                  "tracks at once (160 bytes each)"),
    AP_INIT_TAKE1("AuraTargetSweepInterval", aura_set_target_sweep, NULL,
                  RSRC_CONF,
                  "How long a dedicated PostgREST target may stay unused "
                  "before its closed breaker is dropped from the table"),
    AP_INIT_TAKE1("AuraRetries", aura_set_retries, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "Times a request is sent again when no service instance "
                  "listens, within the route's budget"),
    AP_INIT_TAKE1("AuraServiceMaxInFlight", aura_set_max_in_flight, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "Requests the instance may have in flight at once to the "
                  "Location's service: a number, a percentage of the "
                  "workers, auto or off"),
    AP_INIT_TAKE1("AuraPlaneMaxInFlight", aura_set_plane_max_in_flight, NULL,
                  RSRC_CONF,
                  "Upstream requests the instance may have in flight at "
                  "once from the VirtualHost's plane: a number, a "
                  "percentage of the workers, auto or off"),
    {NULL}
};

/* An HTTP upstream is mod_proxy's to reach, through the worker
 * mod_aura_proxy chooses: without them such a route would fail on every
 * request.  Refuse to start instead, naming the first such line. */
static int http_route_modules_ok(apr_pool_t *pconf)
{
    static const char *const needed[] = {
        "mod_proxy.c", "mod_proxy_http.c", "mod_aura_proxy.c", NULL
    };
    const char *at = NULL;
    int i;

    apr_pool_userdata_get((void **)&at, HTTP_ROUTE_KEY, pconf);
    for (i = 0; at && needed[i]; i++) {
        if (!ap_find_linked_module(needed[i])) {
            ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                         AURA_LOGNO(00098) "AuraService with an http(s) "
                         "upstream (or AuraDBRouter On) at %s needs "
                         "mod_proxy, mod_proxy_http and mod_aura_proxy (%s "
                         "is not loaded): add their LoadModule lines, "
                         "mod_aura_proxy after mod_proxy",
                         at, needed[i]);
            return 0;
        }
    }
    return 1;
}

/* The plane modules are what make a plane do anything: a VirtualHost that
 * names a plane whose module is not loaded would silently serve nothing
 * of the policy.  Refuse to start instead (also under apachectl -t). */
int aura_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                      apr_pool_t *ptemp, server_rec *s)
{
    server_rec *v;

    (void)plog;
    if (!http_route_modules_ok(pconf) || !aura_accesslog_check(ptemp)) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    for (v = s; v; v = v->next) {
        aura_server_conf_t *c = aura_server_conf(v);
        const aura_plane_info_t *plane = aura_plane_info(c->plane);
        const char *need = NULL;

        if (plane->module_file
            && !ap_find_linked_module(plane->module_file)) {
            need = plane->module_name;
        }
        if (need) {
            ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                         AURA_LOGNO(00001) "AuraPlane %s in the VirtualHost "
                         "defined at %s:%d needs %s: add its LoadModule "
                         "line (after mod_aura_common)",
                         aura_plane_name(c->plane),
                         v->defn_name ? v->defn_name : "?",
                         v->defn_line_number, need);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    return OK;
}
