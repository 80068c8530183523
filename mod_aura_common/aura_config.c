/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_config.c: mod_aura_common's directives, per-server and per-dir
 * config, create/merge and the cross-directive checks.  create_* leave
 * every field "unset"; merge_* take the nearer level when it is set;
 * defaults are applied by the getters, so "unset" survives every merge
 * level.  No directive is allowed in .htaccess.
 */
#include "aura_private.h"

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
    }
    else {
        d->service = base->service;
        d->upstream_kind = base->upstream_kind;
        d->upstream = base->upstream;
    }
    d->timeout = merge_time(base->timeout, add->timeout);
    d->health_detail = merge_int(base->health_detail, add->health_detail);
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
static const char *parse_duration(cmd_parms *cmd, const char *arg,
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

static const char *global_only(cmd_parms *cmd)
{
    return ap_check_cmd_context(cmd, GLOBAL_ONLY);
}

static aura_server_conf_t *cmd_server_conf(cmd_parms *cmd)
{
    return ap_get_module_config(cmd->server->module_config,
                                &aura_common_module);
}

static const char *set_plane(cmd_parms *cmd, void *dummy, const char *arg)
{
    aura_server_conf_t *c = cmd_server_conf(cmd);

    (void)dummy;
    if (!cmd->server->is_virtual) {
        return apr_psprintf(cmd->pool, "%s must be inside a <VirtualHost>: "
                            "a plane is one VirtualHost's policy",
                            cmd->cmd->name);
    }
    if (!strcasecmp(arg, "data")) {
        c->plane = AURA_PLANE_DATA;
    }
    else if (!strcasecmp(arg, "management")) {
        c->plane = AURA_PLANE_MGMT;
    }
    else if (!strcasecmp(arg, "none")) {
        c->plane = AURA_PLANE_NONE;
    }
    else {
        return apr_psprintf(cmd->pool, "%s: '%s' is not one of: data | "
                            "management | none", cmd->cmd->name, arg);
    }
    return NULL;
}

static const char *set_nats_servers(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    aura_server_conf_t *c = cmd_server_conf(cmd);
    const char *err = global_only(cmd);

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
    const char *err = global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    cmd_server_conf(cmd)->nats_name = arg;
    return NULL;
}

static const char *set_nats_time(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    aura_server_conf_t *c = cmd_server_conf(cmd);
    /* The field is chosen by the command table's cmd_data offset. */
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    const char *err = global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    return parse_duration(cmd, arg, apr_time_from_msec(10), MAX_NATS_WAIT,
                          field);
}

static const char *set_nats_max_reconnect(cmd_parms *cmd, void *dummy,
                                          const char *arg)
{
    aura_server_conf_t *c = cmd_server_conf(cmd);
    const char *err = global_only(cmd);
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
        d->upstream_kind = AURA_UPSTREAM_HTTP;
        d->upstream = upstream;
    }
    else {
        return apr_psprintf(cmd->pool, "%s: upstream '%s' must be "
                            "nats:<subject> or an http(s):// URL",
                            cmd->cmd->name, upstream);
    }
    d->service = i;
    return NULL;
}

static const char *set_timeout(cmd_parms *cmd, void *dirv, const char *arg)
{
    aura_dir_conf_t *d = dirv;

    return parse_duration(cmd, arg, MIN_ROUTE_TIMEOUT, MAX_ROUTE_TIMEOUT,
                          &d->timeout);
}

static const char *set_health_detail(cmd_parms *cmd, void *dirv, int on)
{
    aura_dir_conf_t *d = dirv;

    (void)cmd;
    d->health_detail = on;
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
    {NULL}
};

/* The plane modules are what make a plane do anything: a VirtualHost that
 * names a plane whose module is not loaded would silently serve nothing
 * of the policy.  Refuse to start instead (also under apachectl -t). */
int aura_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                      apr_pool_t *ptemp, server_rec *s)
{
    server_rec *v;

    (void)pconf; (void)plog; (void)ptemp;
    for (v = s; v; v = v->next) {
        aura_server_conf_t *c = aura_server_conf(v);
        const char *need = NULL;

        if (c->plane == AURA_PLANE_DATA
            && !ap_find_linked_module("mod_aura_data.c")) {
            need = "mod_aura_data";
        }
        else if (c->plane == AURA_PLANE_MGMT
                 && !ap_find_linked_module("mod_aura_mgmt.c")) {
            need = "mod_aura_mgmt";
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
