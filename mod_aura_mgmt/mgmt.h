/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mgmt.h: what the files of mod_aura_mgmt share: its configuration
 * (mgmt_config.c) and the console policy (mgmt_console.c).  Private to
 * the module; mod_aura_common's API is aura.h.
 */
#ifndef MGMT_H
#define MGMT_H

#include "httpd.h"
#include "http_config.h"
#include "http_log.h"

#include "aura.h"

APLOG_USE_MODULE(aura_mgmt);
extern module AURA_DECLARE_DATA aura_mgmt_module;

/* "Not set at this level", so merging can tell it from a default. */
#define MGMT_UNSET (-1)

/* The only audience a console token may carry (aud exactly this, or an
 * array whose only member it is), whatever AuraJWTAudience says. */
#define MGMT_CONSOLE_AUDIENCE "aurabase-control"

/* Where a request names what it concerns (AuraScope). */
typedef enum {
    MGMT_SCOPE_PROJECT_HEADER = 0,   /* X-Project-Id (shared routes) */
    MGMT_SCOPE_PROJECT_PATH,         /* /v1/projects/{project}/... */
    MGMT_SCOPE_ORG_PATH              /* /v1/orgs/{org}/... */
} mgmt_scope_e;

/* Organization roles, in rank order (AuraRequireRole). */
typedef enum {
    MGMT_ROLE_MEMBER = 1,
    MGMT_ROLE_ADMIN,
    MGMT_ROLE_OWNER
} mgmt_role_e;

typedef struct {
    int scope;          /* AuraScope (mgmt_scope_e), MGMT_UNSET */
    int require_role;   /* AuraRequireRole (mgmt_role_e), MGMT_UNSET */
    int key_rotation;   /* AuraKeyRotation, MGMT_UNSET */
} mgmt_dir_conf_t;

typedef struct {
    /* AuraCORSAllowOrigin: the origins, NULL unset; the file:line of a
     * "*" among them, refused at start on the management plane. */
    apr_array_header_t *cors_origins;
    const char *cors_star_at;
    /* The plane's CORS rule, handed to mod_aura_common in the request
     * state: the allow-list above, never any origin. */
    aura_cors_policy_t cors;
} mgmt_server_conf_t;

/* mgmt_config.c */
extern const command_rec aura_mgmt_cmds[];
void *aura_mgmt_create_dir_conf(apr_pool_t *p, char *dir);
void *aura_mgmt_merge_dir_conf(apr_pool_t *p, void *basev, void *addv);
void *aura_mgmt_create_server_conf(apr_pool_t *p, server_rec *s);
void *aura_mgmt_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
int aura_mgmt_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                           apr_pool_t *ptemp, server_rec *s);
const mgmt_dir_conf_t *aura_mgmt_dir_conf(request_rec *r);
const mgmt_server_conf_t *aura_mgmt_server_conf(const server_rec *s);
/* The getters: the defaults are applied here, nowhere else. */
mgmt_scope_e aura_mgmt_scope(const mgmt_dir_conf_t *d);
mgmt_role_e aura_mgmt_required_role(const mgmt_dir_conf_t *d);
int aura_mgmt_key_rotation(const mgmt_dir_conf_t *d);
/* "member", "admin", "owner"; NULL for anything else. */
const char *aura_mgmt_role_name(int role);

/* mgmt_console.c */
int aura_mgmt_auth_console(request_rec *r);
/* The project or organization r names (AuraScope), NULL when none or
 * not a valid id: a claim, verified only when the request state has
 * its org. */
const char *aura_mgmt_target(request_rec *r);

#endif /* MGMT_H */
