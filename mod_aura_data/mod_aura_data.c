/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mod_aura_data: the public data plane.  Acts only in a VirtualHost with
 * "AuraPlane data" and declines everywhere else, so the same httpd keeps
 * serving unrelated sites untouched.  The proxy code is mod_aura_common's
 * (aura.h); this module owns the data plane's policy around it.
 *
 * What is the data plane's here: the API key door (data_apikey.c), the
 * bearer token policy (the project claim, AuraTokenProjectClaim; the
 * audience, AuraJWTAudience and AuraJWTAudienceMatch; whether the token
 * goes on to the service, AuraForwardToken), CORS for every origin, the
 * actor quota's id (an actor within its project), whether a path may
 * hold ";parameters" (AuraPathParams).
 *
 * Hook order (verified with mod_info's ?hooks view by the test-suite):
 *   check_config       AuraPathParams allow never reaches a management
 *                      VirtualHost
 *   post_read_request  request state and id, first thing (after only
 *                      mod_remoteip's client address), so every
 *                      response of the plane carries X-Request-Id; an
 *                      apikey query parameter leaves the URL here
 *                      (mod_aura_common, on every plane); the plane's
 *                      CORS rule ("*") is set in the request state; the
 *                      raw path is checked (AuraPathParams)
 *   quick_handler      FIRST: a CORS preflight is answered before any
 *                      credential is asked for
 *   translate_name     FIRST, before mod_proxy and mod_rewrite: claim a
 *                      service Location
 *   access_checker_ex  FIRST: the per-address limit (every Location),
 *                      then the API key (mandatory but on AuraPublic
 *                      Locations; ?apikey= only where AuraStreaming is
 *                      on), the optional JWT and the actor quota.  It
 *                      returns DECLINED on success, so the operator's
 *                      own Require rules still apply.
 */
#include "httpd.h"
#include "http_config.h"
#include "http_request.h"
#include "http_protocol.h"
#include "http_core.h"
#include "http_log.h"
#include "mod_auth.h"
#include "apr_strings.h"

#include "aura.h"
#include "data_apikey.h"

APLOG_USE_MODULE(aura_data);
extern module AURA_DECLARE_DATA aura_data_module;

/* The claim a user token names its project in (AuraTokenProjectClaim). */
#define DATA_DEFAULT_PROJECT_CLAIM "aura_project"

/* Whom an anonymous request's quota belongs to (AuraAnonQuotaPer). */
#define DATA_ANON_UNSET   (-1)
#define DATA_ANON_KEY     0      /* the key: every visitor shares it */
#define DATA_ANON_ADDRESS 1      /* the key and the client's address */

typedef struct {
    const char *project_claim;   /* a claim name, "off"; NULL = unset */
    int anon_per;                /* DATA_ANON_*; unset: address */
} data_dir_conf_t;

typedef struct {
    const char *audience;        /* AuraJWTAudience; NULL: not checked */
    int audience_any;            /* AuraJWTAudienceMatch any: 1, all: 0,
                                    unset: -1 (all) */
    int path_params;             /* AuraPathParams allow: 1, refuse: 0,
                                    unset: -1 (refuse) */
    const char *path_params_at;  /* "file:line" of the allow in force,
                                    for check_config's message */
} data_server_conf_t;

/* Every origin, answered "*" without credentials (DESIGN.md section 9):
 * the data plane serves browsers of any site with the project's key. */
static const aura_cors_policy_t any_origin = { 1, NULL };

static void *data_create_dir_conf(apr_pool_t *p, char *dir)
{
    data_dir_conf_t *d = apr_pcalloc(p, sizeof(*d));

    (void)dir;
    d->anon_per = DATA_ANON_UNSET;
    return d;
}

static void *data_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    const data_dir_conf_t *base = basev, *add = addv;
    data_dir_conf_t *d = apr_palloc(p, sizeof(*d));

    d->project_claim = add->project_claim ? add->project_claim
                                          : base->project_claim;
    d->anon_per = add->anon_per != DATA_ANON_UNSET ? add->anon_per
                                                   : base->anon_per;
    return d;
}

static void *data_create_server_conf(apr_pool_t *p, server_rec *s)
{
    data_server_conf_t *c = apr_palloc(p, sizeof(*c));

    (void)s;
    c->audience = NULL;
    c->audience_any = -1;
    c->path_params = -1;
    c->path_params_at = NULL;
    return c;
}

/* Set in the main server, it applies to every VirtualHost that does not
 * set its own. */
static void *data_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    const data_server_conf_t *base = basev, *add = addv;
    data_server_conf_t *c = apr_palloc(p, sizeof(*c));

    c->audience = add->audience ? add->audience : base->audience;
    c->audience_any = add->audience_any != -1 ? add->audience_any
                                              : base->audience_any;
    if (add->path_params != -1) {
        c->path_params = add->path_params;
        c->path_params_at = add->path_params_at;
    }
    else {
        c->path_params = base->path_params;
        c->path_params_at = base->path_params_at;
    }
    return c;
}

/* A claim name: printable ASCII without spaces or quotes, so that it
 * can be named in logs and docs as it is; "off" turns the check off. */
static const char *set_project_claim(cmd_parms *cmd, void *dirv,
                                     const char *arg)
{
    data_dir_conf_t *d = dirv;
    const char *s;

    for (s = arg; *s; s++) {
        if (*s <= ' ' || *s > '~' || *s == '"' || *s == '\\') {
            break;
        }
    }
    if (!*arg || *s || strlen(arg) > 64) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a claim name (1 to "
                            "64 printable characters, no space or quote) "
                            "or off", cmd->cmd->name, arg);
    }
    d->project_claim = strcasecmp(arg, "off") ? arg : "off";
    return NULL;
}

static const char *set_anon_per(cmd_parms *cmd, void *dirv,
                                const char *arg)
{
    data_dir_conf_t *d = dirv;

    if (!strcasecmp(arg, "address")) {
        d->anon_per = DATA_ANON_ADDRESS;
    }
    else if (!strcasecmp(arg, "key")) {
        d->anon_per = DATA_ANON_KEY;
    }
    else {
        return apr_psprintf(cmd->pool, "%s: '%s' is not address or key",
                            cmd->cmd->name, arg);
    }
    return NULL;
}

static const char *set_audience(cmd_parms *cmd, void *dummy,
                                const char *arg)
{
    data_server_conf_t *c =
        ap_get_module_config(cmd->server->module_config, &aura_data_module);

    (void)dummy;
    c->audience = arg;
    return NULL;
}

static const char *set_audience_match(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    data_server_conf_t *c =
        ap_get_module_config(cmd->server->module_config, &aura_data_module);

    (void)dummy;
    if (!strcasecmp(arg, "all")) {
        c->audience_any = 0;
    }
    else if (!strcasecmp(arg, "any")) {
        c->audience_any = 1;
    }
    else {
        return apr_psprintf(cmd->pool, "%s: '%s' is not all or any",
                            cmd->cmd->name, arg);
    }
    return NULL;
}

/* A VirtualHost-wide choice: the path is checked in post_read_request,
 * before any Location is chosen (a ";" decides which one would be). */
static const char *set_path_params(cmd_parms *cmd, void *dummy,
                                   const char *arg)
{
    data_server_conf_t *c =
        ap_get_module_config(cmd->server->module_config, &aura_data_module);

    (void)dummy;
    if (!strcasecmp(arg, "refuse")) {
        c->path_params = 0;
        c->path_params_at = NULL;
    }
    else if (!strcasecmp(arg, "allow")) {
        c->path_params = 1;
        c->path_params_at = apr_psprintf(cmd->pool, "%s:%d",
                                         cmd->directive->filename,
                                         cmd->directive->line_num);
    }
    else {
        return apr_psprintf(cmd->pool, "%s: '%s' is not refuse or allow",
                            cmd->cmd->name, arg);
    }
    return NULL;
}

static const command_rec data_cmds[] = {
    AP_INIT_TAKE1("AuraJWTAudience", set_audience, NULL,
                  RSRC_CONF, "The aud a bearer token must carry"),
    AP_INIT_TAKE1("AuraJWTAudienceMatch", set_audience_match, NULL,
                  RSRC_CONF,
                  "Whether every audience of a token's aud array must be "
                  "AuraJWTAudience (all) or one of them (any)"),
    AP_INIT_TAKE1("AuraTokenProjectClaim", set_project_claim, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "The claim a data-plane bearer token names the API "
                  "key's project in, or off"),
    AP_INIT_TAKE1("AuraAnonQuotaPer", set_anon_per, NULL,
                  RSRC_CONF | ACCESS_CONF,
                  "Whether the actor quota of a request with the anon key "
                  "and no user token is the client address's (address, "
                  "the default) or the key's, shared by every visitor "
                  "(key)"),
    AP_INIT_TAKE1("AuraPathParams", set_path_params, NULL, RSRC_CONF,
                  "Whether a data-plane request path may hold ';' "
                  "segment parameters (allow) or is refused with 400 "
                  "(refuse, the default)"),
    { NULL }
};

/* A user token belongs to the API key's project: a token of project A's
 * user sent with project B's key is refused (DESIGN.md section 9).  The
 * audience is the operator's (AuraJWTAudience, AuraJWTAudienceMatch);
 * the console tokens of the management plane never come here.  The
 * token goes on to the service only where the Location says so
 * (AuraForwardToken, DESIGN.md section 10). */
static const aura_token_policy_t *data_token_policy(request_rec *r)
{
    const data_dir_conf_t *d =
        ap_get_module_config(r->per_dir_config, &aura_data_module);
    const data_server_conf_t *c =
        ap_get_module_config(r->server->module_config, &aura_data_module);
    aura_token_policy_t *pol = apr_pcalloc(r->pool, sizeof(*pol));
    const char *claim = d->project_claim ? d->project_claim
                                         : DATA_DEFAULT_PROJECT_CLAIM;

    pol->project_claim = strcmp(claim, "off") ? claim : NULL;
    pol->audience = c->audience;
    pol->audience_any = c->audience_any == 1;
    pol->forward = aura_route_forward_token(r);
    return pol;
}

/* The actor quota's id: the actor within its project (a key, or a user
 * of the project's auth), so that one user of two projects has two
 * quotas; NULL when nothing authenticated.
 *
 * A request with the anon key and no user token is a visitor of the
 * tenant's public app: the key is in every copy of that app, so it
 * names no one.  Counted per key alone, one visitor at a polite rate
 * spends the quota of every other visitor, sign-in included.  So by
 * default its actor is the key at the client's address (an IPv6 prefix):
 * each address has the quota a user has, and takes nothing from the
 * others (docs/rate-limits.md, "Anonymous visitors").  A service_role
 * key is a server's secret: its quota stays the key's. */
static const char *data_quota_id(request_rec *r)
{
    const data_dir_conf_t *d =
        ap_get_module_config(r->per_dir_config, &aura_data_module);
    const aura_request_t *rq = aura_request_get(r);
    const char *project;

    if (!rq || !rq->actor) {
        return NULL;
    }
    project = rq->project ? rq->project : "-";
    if (d->anon_per != DATA_ANON_KEY && rq->role
        && !strcmp(rq->role, "anon")) {
        return apr_pstrcat(r->pool, "d:", project, ":", rq->actor, "@",
                           aura_client_prefix(r), NULL);
    }
    return apr_pstrcat(r->pool, "d:", project, ":", rq->actor, NULL);
}

/* The management plane's role rules are path rules: a ";" there is
 * always refused (docs/security.md, "One path").  An allow that reaches
 * a management VirtualHost, its own or inherited, stops the start (also
 * under apachectl -t) rather than being silently ignored. */
static int data_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                             apr_pool_t *ptemp, server_rec *s)
{
    server_rec *v;

    (void)pconf; (void)plog; (void)ptemp;
    for (v = s; v; v = v->next) {
        const data_server_conf_t *c =
            ap_get_module_config(v->module_config, &aura_data_module);

        if (aura_server_plane(v) == AURA_PLANE_MGMT && c->path_params == 1) {
            ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                         AURA_LOGNO(01751) "AuraPathParams allow at %s "
                         "reaches the management plane (VirtualHost "
                         "defined at %s:%d), which always refuses ';' in "
                         "paths: set it inside the data plane's "
                         "VirtualHost",
                         c->path_params_at ? c->path_params_at : "?",
                         v->defn_name ? v->defn_name : "?",
                         v->defn_line_number);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    return OK;
}

static int data_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp, server_rec *s)
{
    (void)pconf; (void)plog; (void)ptemp;
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    return aura_api_check(s, "mod_aura_data");
}

static int data_post_read_request(request_rec *r)
{
    const data_server_conf_t *c =
        ap_get_module_config(r->server->module_config, &aura_data_module);

    if (aura_server_plane(r->server) != AURA_PLANE_DATA) {
        return DECLINED;
    }
    aura_request_begin(r, AURA_PLANE_DATA)->cors = &any_origin;
    /* Before any Location is walked: the path the rules will see must be
     * the path the service receives (docs/envelope.md, "One path"); a
     * ";" only where the operator said every service takes it as a
     * character (AuraPathParams allow). */
    return aura_request_path_check_ex(r, c->path_params == 1
                                         ? AURA_REQUEST_PATH_PARAMS : 0);
}

static int data_translate_name(request_rec *r)
{
    if (aura_server_plane(r->server) != AURA_PLANE_DATA) {
        return DECLINED;
    }
    return aura_route_claim(r);
}

static int data_quick_handler(request_rec *r, int lookup_uri)
{
    if (lookup_uri || aura_server_plane(r->server) != AURA_PLANE_DATA) {
        return DECLINED;
    }
    return aura_cors_preflight(r);
}

static int data_check_access(request_rec *r)
{
    int rc;

    /* Subrequests and internal redirects inherit the initial request's
     * verified identity (aura_request_get follows r->prev) and were
     * counted once by the limiters. */
    if (aura_server_plane(r->server) != AURA_PLANE_DATA
        || !ap_is_initial_req(r)) {
        return DECLINED;
    }
    /* An Upgrade: h2c request is checked as its HTTP/2 stream 1, with
     * the credentials this check would have removed (aura.h). */
    if (aura_request_h2c(r)) {
        return DECLINED;
    }
    /* Per address first, public routes included: a flood is turned
     * away before any key lookup or signature check. */
    rc = aura_limit_ip(r);
    if (rc != OK || aura_route_public(r)) {
        return rc == OK ? DECLINED : rc;
    }
    rc = data_auth_apikey(r, aura_route_streaming(r));
    if (rc != OK) {
        return rc;
    }
    rc = aura_auth_bearer(r, data_token_policy(r));
    if (rc != OK && rc != DECLINED) {
        return rc;
    }
    rc = aura_limit_actor(r, data_quota_id(r));
    return rc == OK ? DECLINED : rc;
}

static void data_register_hooks(apr_pool_t *p)
{
    static const char *const before_proxy[] = {
        "mod_proxy.c", "mod_rewrite.c", NULL
    };
    static const char *const after_remoteip[] = { "mod_remoteip.c", NULL };

    (void)p;
    ap_hook_check_config(data_check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(data_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    /* After mod_remoteip's, also FIRST (else LoadModule order decides,
     * and a2enmod's puts aura_* first): AuraTraceTrustParent is checked
     * against the client address mod_remoteip establishes. */
    ap_hook_post_read_request(data_post_read_request, after_remoteip, NULL,
                              APR_HOOK_FIRST);
    ap_hook_translate_name(data_translate_name, NULL, before_proxy,
                           APR_HOOK_FIRST);
    ap_hook_quick_handler(data_quick_handler, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_check_access_ex(data_check_access, NULL, NULL, APR_HOOK_FIRST,
                            AP_AUTH_INTERNAL_PER_CONF);
}

module AURA_DECLARE_DATA aura_data_module = {
    STANDARD20_MODULE_STUFF,
    data_create_dir_conf,
    data_merge_dir_conf,
    data_create_server_conf,
    data_merge_server_conf,
    data_cmds,
    data_register_hooks,
    AP_MODULE_FLAG_NONE
};
