/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mod_aura_common.c: the module record, the command table, the start-up
 * checks and hook registration of mod_aura_common.  Glue only: each
 * concern lives in its own folder, its directives in its *_conf.c
 * file.  The plane modules (mod_aura_data, mod_aura_mgmt) decide which
 * requests are theirs; what is registered here acts only on requests a
 * plane module took in (aura_request_begin), so loading this module
 * changes nothing for other VirtualHosts.
 */
#include "core/aura_module.h"
#include "audit/aura_audit.h"
#include "control/aura_control.h"
#include "control/aura_control_conf.h"
#include "control/aura_control_nats.h"
#include "auth/aura_jwks.h"
#include "auth/aura_jwt_conf.h"
#include "auth/aura_keystore.h"
#include "auth/aura_keyused.h"
#include "resilience/aura_streamend.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "core/aura_reqid.h"
#include "fleet/aura_fleet.h"
#include "fleet/aura_fleet_conf.h"
#include "http/aura_accesslog.h"
#include "http/aura_dbrouter.h"
#include "http/aura_h2c.h"
#include "http/aura_headers.h"
#include "http/aura_headers_conf.h"
#include "http/aura_health.h"
#include "console/aura_console.h"
#include "http/aura_httpproxy.h"
#include "http/aura_metrics.h"
#include "http/aura_problem.h"
#include "http/aura_route.h"
#include "http/aura_route_conf.h"
#include "http/aura_status.h"
#include "limit/aura_connlimit.h"
#include "limit/aura_limit.h"
#include "limit/aura_limit_conf.h"
#include "nats/aura_inbox.h"
#include "nats/aura_nats.h"
#include "nats/aura_nats_conf.h"
#include "nats/aura_natsproxy.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_bulkhead.h"
#include "resilience/aura_resilience_conf.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"
#include "store/aura_redis.h"
#include "store/aura_store_conf.h"
#include "trace/aura_exporter.h"
#include "trace/aura_trace_conf.h"
#include "auth/aura_logout.h"

#include "http_request.h"
#include "http_core.h"
#include "http_protocol.h"

/* The command table, by concern; each concern's entries are defined
 * next to its handlers (its *_conf.h).  httpd does not care about the
 * order. */
static const command_rec aura_cmds[] = {
    /* plane directives (moving to the plane modules) */
    AURA_PLANE_DIRECTIVES,
    AURA_NATS_DIRECTIVES,
    AURA_ROUTE_DIRECTIVES,
    AURA_STORE_DIRECTIVES,
    AURA_JWT_DIRECTIVES,
    AURA_HEADERS_DIRECTIVES,
    AURA_LIMIT_DIRECTIVES,
    AURA_RESILIENCE_DIRECTIVES,
    AURA_METRICS_DIRECTIVES,
    AURA_TRACE_DIRECTIVES,
    AURA_AUDIT_DIRECTIVES,
    AURA_CONTROL_DIRECTIVES,
    AURA_FLEET_DIRECTIVES,
    AURA_LOGOUT_DIRECTIVES,
    { NULL }
};

/* An HTTP upstream is mod_proxy's to reach, through the worker
 * mod_aura_proxy chooses: without them such a route would fail on every
 * request.  Refuse to start instead, naming the first such line. */
static int http_route_modules_ok(apr_pool_t *pconf)
{
    static const char *const needed[] = {
        "mod_proxy.c", "mod_proxy_http.c", "mod_aura_proxy.c", NULL
    };
    const char *at = aura_http_route_at(pconf);
    int i;

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
static int aura_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                             apr_pool_t *ptemp, server_rec *s)
{
    server_rec *v;

    (void)plog;
    if (!http_route_modules_ok(pconf) || !aura_accesslog_check(ptemp)
        || aura_nats_check_config(s) != 0 || !aura_trace_check_config(s)
        || !aura_audit_check_config(s)) {
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

/* Registered as the optional function plane modules check at start. */
static int aura_common_api_version(void)
{
    return (AURA_API_MAJOR << 16) | AURA_API_MINOR;
}

static int aura_pre_config(apr_pool_t *pconf, apr_pool_t *plog,
                           apr_pool_t *ptemp)
{
    (void)plog; (void)ptemp;
    aura_accesslog_pre_config(pconf);
    return aura_shm_pre_config(pconf) == APR_SUCCESS
           && aura_audit_pre_config(pconf) == APR_SUCCESS
           && aura_control_pre_config(pconf) == APR_SUCCESS
           && aura_fleet_pre_config(pconf) == APR_SUCCESS ? OK : !OK;
}

static int aura_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp, server_rec *s)
{
    (void)plog;
    /* The first pass only checks the configuration; the segment is made
     * once, on the pass that serves. */
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    if (aura_shm_post_config(pconf, ptemp, s) != APR_SUCCESS
        || aura_jwks_post_config(pconf, s) != APR_SUCCESS
        || aura_ratelimit_post_config(pconf, s) != APR_SUCCESS
        || aura_quota_post_config(pconf, s) != APR_SUCCESS
        || aura_breaker_post_config(pconf, s) != APR_SUCCESS
        || aura_cap_post_config(pconf, s) != APR_SUCCESS
        || aura_connlimit_post_config(pconf, s) != APR_SUCCESS
        || aura_audit_post_config(pconf, s) != APR_SUCCESS
        || aura_control_post_config(pconf, s) != APR_SUCCESS
        || aura_fleet_post_config(pconf, s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    aura_exporter_post_config(s);
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, AURA_LOGNO(00007)
                 "mod_aura_common %s API %d.%d ready", AURA_VERSION,
                 AURA_API_MAJOR, AURA_API_MINOR);
    return OK;
}

static void aura_child_init(apr_pool_t *pchild, server_rec *s)
{
    aura_shm_child_init(pchild, s);
    aura_audit_child_init(pchild, s);
    /* Before NATS: the fleet's controls merge into the child's copy. */
    aura_control_child_init(pchild, s);
    aura_cap_child_init(pchild, s);
    aura_connlimit_child_init(pchild, s);
    aura_reqid_child_init();
    /* Before NATS: the fleet's subscriber, on the connection, takes the
     * aura-fleet mutex this re-opens. */
    aura_fleet_child_init(pchild, s);
    aura_nats_child_init(pchild, s);
    aura_db_child_init(pchild, s);
    aura_keystore_child_init(pchild, s);
    aura_keyused_child_init(pchild, s);
    aura_streamend_child_init(pchild, s);
    aura_jwks_child_init(pchild, s);
    aura_redis_child_init(pchild, s);
    aura_dbrouter_child_init(pchild, s);
    /* Last: its pre-cleanup joins the exporter thread first of all. */
    aura_exporter_child_init(pchild, s);
}

static void aura_register_hooks(apr_pool_t *p)
{
    static const char *const before_proxy[] = { "mod_proxy.c", NULL };
    static const char *const log_config[] = { "mod_log_config.c", NULL };

    (void)p;
    APR_REGISTER_OPTIONAL_FN(aura_common_api_version);
    /* After mod_log_config's, which makes the table of LogFormat items
     * that %{...}^au joins. */
    ap_hook_pre_config(aura_pre_config, log_config, NULL, APR_HOOK_MIDDLE);
    ap_hook_check_config(aura_check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_check_config(aura_shm_check_config, NULL, NULL,
                         APR_HOOK_MIDDLE);
    ap_hook_post_config(aura_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(aura_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    aura_cap_register();
    aura_fleet_register();
    /* A claimed service route has no file behind it: skip the directory
     * walk as mod_proxy does for proxy: URLs. */
    ap_hook_map_to_storage(aura_map_to_storage, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_handler(aura_natsproxy_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(aura_health_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(aura_metrics_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(aura_console_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(aura_logout_handler, NULL, NULL, APR_HOOK_MIDDLE);
    /* Before mod_proxy's fixups, which canonicalize the URL the /v1/db
     * router may just have set. */
    ap_hook_fixups(aura_route_fixups, NULL, before_proxy, APR_HOOK_FIRST);
    ap_hook_insert_error_filter(aura_insert_problem_filter, NULL, NULL,
                                APR_HOOK_MIDDLE);
    ap_hook_insert_filter(aura_insert_headers_filter, NULL, NULL,
                          APR_HOOK_MIDDLE);
    ap_hook_insert_error_filter(aura_insert_headers_error_filter, NULL,
                                NULL, APR_HOOK_MIDDLE);
    ap_hook_insert_filter(aura_http_insert_filter, NULL, NULL,
                          APR_HOOK_MIDDLE);
    ap_hook_log_transaction(aura_log_transaction, NULL, NULL,
                            APR_HOOK_MIDDLE);
    /* The query string is hidden before mod_log_config prints it. */
    ap_hook_log_transaction(aura_redact_log_transaction, NULL,
                            log_config, APR_HOOK_REALLY_FIRST);
    aura_problem_register();
    aura_headers_register();
    /* Right after core's upgrade handler (aura_h2c.c). */
    aura_h2c_register();
    /* The reply inboxes live on the child's NATS connection. */
    aura_inbox_register();
    /* The incident controls: the early check, and the fleet on NATS. */
    aura_control_register();
    aura_control_nats_register();
    aura_keystore_register();
    /* After the key store: an invalidation drops the cached keys
     * first, then the open streams look theirs up again. */
    aura_streamend_register();
    aura_http_register();
    aura_connlimit_register();
    aura_status_register();
}

module AURA_DECLARE_DATA aura_common_module = {
    STANDARD20_MODULE_STUFF,
    aura_create_dir_conf,
    aura_merge_dir_conf,
    aura_create_server_conf,
    aura_merge_server_conf,
    aura_cmds,
    aura_register_hooks,
    AP_MODULE_FLAG_NONE
};
