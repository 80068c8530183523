/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mgmt_config.c: the management plane's directives (AuraScope,
 * AuraRequireRole, AuraKeyRotation, AuraCORSAllowOrigin), their
 * per-directory and per-server config with create/merge, the getters
 * that apply the defaults, and the start-up check of the allow-list.
 * Names, contexts and messages are those the directives had when
 * mod_aura_common held them: existing configurations keep working.
 */
#include "mgmt.h"

#include "http/aura_origin.h"

#include "apr_strings.h"

static int merge_int(int base, int add)
{
    return add != MGMT_UNSET ? add : base;
}

void *aura_mgmt_create_dir_conf(apr_pool_t *p, char *dir)
{
    mgmt_dir_conf_t *d = apr_palloc(p, sizeof(*d));

    (void)dir;
    d->scope = MGMT_UNSET;
    d->require_role = MGMT_UNSET;
    d->key_rotation = MGMT_UNSET;
    return d;
}

void *aura_mgmt_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    const mgmt_dir_conf_t *base = basev, *add = addv;
    mgmt_dir_conf_t *d = apr_pcalloc(p, sizeof(*d));

    d->scope = merge_int(base->scope, add->scope);
    d->require_role = merge_int(base->require_role, add->require_role);
    d->key_rotation = merge_int(base->key_rotation, add->key_rotation);
    return d;
}

void *aura_mgmt_create_server_conf(apr_pool_t *p, server_rec *s)
{
    (void)s;
    /* All unset: no origin, no "*", a policy that answers no origin. */
    return apr_pcalloc(p, sizeof(mgmt_server_conf_t));
}

void *aura_mgmt_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    const mgmt_server_conf_t *base = basev, *add = addv;
    mgmt_server_conf_t *c = apr_pcalloc(p, sizeof(*c));

    c->cors_origins = add->cors_origins ? add->cors_origins
                                        : base->cors_origins;
    c->cors_star_at = add->cors_origins ? add->cors_star_at
                                        : base->cors_star_at;
    c->cors.origins = c->cors_origins;
    return c;
}

const mgmt_dir_conf_t *aura_mgmt_dir_conf(request_rec *r)
{
    return ap_get_module_config(r->per_dir_config, &aura_mgmt_module);
}

const mgmt_server_conf_t *aura_mgmt_server_conf(const server_rec *s)
{
    return ap_get_module_config(s->module_config, &aura_mgmt_module);
}

mgmt_scope_e aura_mgmt_scope(const mgmt_dir_conf_t *d)
{
    return d->scope != MGMT_UNSET ? (mgmt_scope_e)d->scope
                                  : MGMT_SCOPE_PROJECT_HEADER;
}

mgmt_role_e aura_mgmt_required_role(const mgmt_dir_conf_t *d)
{
    return d->require_role != MGMT_UNSET ? (mgmt_role_e)d->require_role
                                         : MGMT_ROLE_MEMBER;
}

int aura_mgmt_key_rotation(const mgmt_dir_conf_t *d)
{
    return d->key_rotation == 1;
}

/* Enumerated arguments: one table gives the accepted words, their values
 * and the error text, so the three can never disagree. */
typedef struct {
    const char *name;
    int value;
} enum_word_t;

static const enum_word_t scope_words[] = {
    { "project-header", MGMT_SCOPE_PROJECT_HEADER },
    { "project-path", MGMT_SCOPE_PROJECT_PATH },
    { "org-path", MGMT_SCOPE_ORG_PATH },
    { NULL, 0 }
};

static const enum_word_t role_words[] = {
    { "member", MGMT_ROLE_MEMBER },
    { "admin", MGMT_ROLE_ADMIN },
    { "owner", MGMT_ROLE_OWNER },
    { NULL, 0 }
};

const char *aura_mgmt_role_name(int role)
{
    int i;

    for (i = 0; role_words[i].name; i++) {
        if (role_words[i].value == role) {
            return role_words[i].name;
        }
    }
    return NULL;
}

static const char *parse_enum(cmd_parms *cmd, const char *arg,
                              const enum_word_t *words, int *out)
{
    const char *list = NULL;
    int i;

    for (i = 0; words[i].name; i++) {
        if (!strcasecmp(arg, words[i].name)) {
            *out = words[i].value;
            return NULL;
        }
        list = list ? apr_pstrcat(cmd->temp_pool, list, " | ", words[i].name,
                                  NULL)
                    : words[i].name;
    }
    return apr_psprintf(cmd->pool, "%s: '%s' is not one of: %s",
                        cmd->cmd->name, arg, list);
}

static const char *set_scope(cmd_parms *cmd, void *dirv, const char *arg)
{
    mgmt_dir_conf_t *d = dirv;

    return parse_enum(cmd, arg, scope_words, &d->scope);
}

static const char *set_require_role(cmd_parms *cmd, void *dirv,
                                    const char *arg)
{
    mgmt_dir_conf_t *d = dirv;

    return parse_enum(cmd, arg, role_words, &d->require_role);
}

static const char *set_key_rotation(cmd_parms *cmd, void *dirv, int on)
{
    mgmt_dir_conf_t *d = dirv;

    (void)cmd;
    d->key_rotation = on ? 1 : 0;
    return NULL;
}

/* Each origin exactly as a browser sends it (aura_origin.c): a value no
 * Origin header can ever equal would allow nothing while looking as if
 * it allowed something, so it stops the start. */
static const char *set_cors_origin(cmd_parms *cmd, void *dummy,
                                   const char *arg)
{
    mgmt_server_conf_t *c = ap_get_module_config(cmd->server->module_config,
                                                 &aura_mgmt_module);
    const char *origin, *why;

    (void)dummy;
    if (!c->cors_origins) {
        c->cors_origins = apr_array_make(cmd->pool, 4, sizeof(const char *));
        c->cors.origins = c->cors_origins;
    }
    /* "*" is refused by check_config, which knows the plane; remember
     * where it was written so the message can say. */
    if (!strcmp(arg, "*")) {
        c->cors_star_at = apr_psprintf(cmd->pool, "%s:%d",
                                       cmd->directive->filename,
                                       cmd->directive->line_num);
        origin = arg;
    }
    else if (aura_origin_parse(cmd->pool, arg, &origin, &why)
             != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not an origin: %s "
                            "(accepted: http:// or https://, a host, and "
                            "an optional port 1-65535 that is not the "
                            "default; nothing after it)",
                            cmd->cmd->name, arg, why);
    }
    APR_ARRAY_PUSH(c->cors_origins, const char *) = origin;
    return NULL;
}

const command_rec aura_mgmt_cmds[] = {
    AP_INIT_TAKE1("AuraScope", set_scope, NULL, ACCESS_CONF,
                  "Where a management request names its project or org: "
                  "project-header | project-path | org-path"),
    AP_INIT_TAKE1("AuraRequireRole", set_require_role, NULL, ACCESS_CONF,
                  "Least organization role a management Location needs: "
                  "member | admin | owner"),
    AP_INIT_FLAG("AuraKeyRotation", set_key_rotation, NULL, ACCESS_CONF,
                 "Whether a 2xx answer here rotated the project's keys: "
                 "broadcast an invalidation"),
    AP_INIT_ITERATE("AuraCORSAllowOrigin", set_cors_origin, NULL, RSRC_CONF,
                    "Origins the management plane answers CORS requests "
                    "from (never *)"),
    { NULL }
};

/* The management plane answers CORS only for listed origins: a "*" in
 * its VirtualHost (or inherited by it) stops the start, also under
 * apachectl -t. */
int aura_mgmt_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                           apr_pool_t *ptemp, server_rec *s)
{
    server_rec *v;

    (void)pconf; (void)plog; (void)ptemp;
    for (v = s; v; v = v->next) {
        const mgmt_server_conf_t *c = aura_mgmt_server_conf(v);

        if (aura_server_plane(v) == AURA_PLANE_MGMT && c->cors_star_at) {
            ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                         AURA_LOGNO(00054) "AuraCORSAllowOrigin * at %s: "
                         "the management plane (VirtualHost defined at "
                         "%s:%d) answers CORS only for listed origins; "
                         "name each console origin instead",
                         c->cors_star_at,
                         v->defn_name ? v->defn_name : "?",
                         v->defn_line_number);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    return OK;
}
