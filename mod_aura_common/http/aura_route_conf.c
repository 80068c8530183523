/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_route_conf.c: the directives of a Location's route: which service
 * and upstream (NATS subject or http(s) URL), its budget, the streaming
 * timeouts and acknowledgement prefix, the /v1/db router, the abandon
 * check, /health's detail.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "http/aura_origin.h"
#include "http/aura_route_conf.h"
#include "nats/aura_subject.h"

#include "http_core.h"
#include "apr_strings.h"

/* Bounds, so that a typo cannot configure a 3-year timeout. */
#define MAX_ROUTE_TIMEOUT   apr_time_from_sec(3600)
#define MIN_ROUTE_TIMEOUT   apr_time_from_msec(1)

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

const char *aura_http_route_at(apr_pool_t *pconf)
{
    const char *at = NULL;

    apr_pool_userdata_get((void **)&at, HTTP_ROUTE_KEY, pconf);
    return at;
}

/* What the HTTP path needs of upstream (no trailing slash), put
 * together now rather than on every request: "http://h:p/base" has the
 * origin "http://h:p" (the pooled worker's name, mod_aura_proxy), and a
 * request's r->filename is "proxy:http://h:p/base" and its own path;
 * a WebSocket upgrade goes to ws(s):// (mod_proxy_http tunnels those). */
static const aura_http_upstream_t *prepare_http(apr_pool_t *p,
                                                const char *upstream)
{
    aura_http_upstream_t *u = apr_palloc(p, sizeof(*u));
    const char *after = ap_strstr_c(upstream, "://");
    const char *slash = ap_strchr_c(after + 3, '/');
    const char *base = slash ? slash : "";

    u->origin = slash ? apr_pstrmemdup(p, upstream, slash - upstream)
                      : upstream;
    u->ws_origin = aura_ws_url(p, u->origin);
    u->filename = apr_pstrcat(p, "proxy:", u->origin, base, NULL);
    u->ws_filename = apr_pstrcat(p, "proxy:", u->ws_origin, base, NULL);
    return u;
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
    d->http = prepare_http(cmd->pool, d->upstream);
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

const char *aura_set_service(cmd_parms *cmd, void *dirv, const char *name,
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
        if (!aura_subject_literal(upstream + 5)) {
            return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject "
                                "(nats:token.token, no spaces or wildcards)",
                                cmd->cmd->name, upstream + 5);
        }
        d->upstream_kind = AURA_UPSTREAM_NATS;
        d->http = NULL;
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
    d->location_len = d->location ? strlen(d->location) : 0;
    return NULL;
}

const char *aura_set_timeout(cmd_parms *cmd, void *dirv, const char *arg)
{
    aura_dir_conf_t *d = dirv;

    return aura_parse_duration(cmd, arg, MIN_ROUTE_TIMEOUT,
                               MAX_ROUTE_TIMEOUT, &d->timeout);
}

/* The streaming timeouts; the field from the command table. */
const char *aura_set_stream_time(cmd_parms *cmd, void *dirv,
                                 const char *arg)
{
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)dirv + (apr_size_t)cmd->info);

    return aura_parse_duration(cmd, arg, apr_time_from_msec(100),
                               apr_time_from_sec(7 * 86400), field);
}

/* A subject prefix ending at a token boundary: acknowledgements go only
 * under it (aura_subject.c). */
const char *aura_set_stream_ack_prefix(cmd_parms *cmd, void *dirv,
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
const char *aura_set_db_router(cmd_parms *cmd, void *dirv, int on)
{
    ((aura_dir_conf_t *)dirv)->db_router = on;
    if (on) {
        aura_set_service_seen(cmd);
    }
    return NULL;
}

const char *aura_set_health_detail(cmd_parms *cmd, void *dirv, int on)
{
    aura_dir_conf_t *d = dirv;

    (void)cmd;
    d->health_detail = on;
    return NULL;
}

const char *aura_set_abandon_check(cmd_parms *cmd, void *dirv, int on)
{
    (void)cmd;
    ((aura_dir_conf_t *)dirv)->abandon_check = on;
    return NULL;
}
