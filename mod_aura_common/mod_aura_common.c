/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mod_aura_common.c: the module record and hook registration of
 * mod_aura_common.  Glue only: each concern lives in its own aura_*.c
 * file.  The plane modules (mod_aura_data, mod_aura_mgmt) decide which
 * requests are theirs; what is registered here acts only on requests a
 * plane module took in (aura_request_begin), so loading this module
 * changes nothing for other VirtualHosts.
 */
#include "core/aura_module.h"
#include "auth/aura_jwks.h"
#include "auth/aura_keystore.h"
#include "core/aura_config.h"
#include "core/aura_reqid.h"
#include "http/aura_accesslog.h"
#include "http/aura_dbrouter.h"
#include "http/aura_headers.h"
#include "http/aura_health.h"
#include "http/aura_httpproxy.h"
#include "http/aura_metrics.h"
#include "http/aura_problem.h"
#include "http/aura_route.h"
#include "limit/aura_connlimit.h"
#include "limit/aura_limit.h"
#include "nats/aura_inbox.h"
#include "nats/aura_nats.h"
#include "nats/aura_natsproxy.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_bulkhead.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"
#include "store/aura_redis.h"

#include "http_request.h"
#include "http_core.h"
#include "http_protocol.h"

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
    return aura_shm_pre_config(pconf) == APR_SUCCESS ? OK : !OK;
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
        || aura_connlimit_post_config(pconf, s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, AURA_LOGNO(00007)
                 "mod_aura_common %s API %d.%d ready", AURA_VERSION,
                 AURA_API_MAJOR, AURA_API_MINOR);
    return OK;
}

static void aura_child_init(apr_pool_t *pchild, server_rec *s)
{
    aura_shm_child_init(pchild, s);
    aura_cap_child_init(pchild, s);
    aura_connlimit_child_init(pchild, s);
    aura_reqid_child_init();
    aura_nats_child_init(pchild, s);
    aura_db_child_init(pchild, s);
    aura_keystore_child_init(pchild, s);
    aura_jwks_child_init(pchild, s);
    aura_redis_child_init(pchild, s);
    aura_dbrouter_child_init(pchild, s);
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
    /* A claimed service route has no file behind it: skip the directory
     * walk as mod_proxy does for proxy: URLs. */
    ap_hook_map_to_storage(aura_map_to_storage, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_handler(aura_natsproxy_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(aura_health_handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(aura_metrics_handler, NULL, NULL, APR_HOOK_MIDDLE);
    /* Before mod_proxy's fixups, which canonicalize the URL the /v1/db
     * router may just have set. */
    ap_hook_fixups(aura_route_fixups, NULL, before_proxy, APR_HOOK_FIRST);
    ap_hook_insert_error_filter(aura_insert_problem_filter, NULL, NULL,
                                APR_HOOK_MIDDLE);
    ap_hook_insert_filter(aura_insert_headers_filter, NULL, NULL,
                          APR_HOOK_MIDDLE);
    ap_hook_insert_error_filter(aura_insert_headers_filter, NULL, NULL,
                                APR_HOOK_MIDDLE);
    ap_hook_insert_filter(aura_http_insert_filter, NULL, NULL,
                          APR_HOOK_MIDDLE);
    ap_hook_log_transaction(aura_log_transaction, NULL, NULL,
                            APR_HOOK_MIDDLE);
    /* The query string is hidden before mod_log_config prints it. */
    ap_hook_log_transaction(aura_redact_log_transaction, NULL,
                            log_config, APR_HOOK_REALLY_FIRST);
    aura_problem_register();
    aura_headers_register();
    /* The reply inboxes live on the child's NATS connection. */
    aura_inbox_register();
    aura_keystore_register();
    aura_http_register();
    aura_connlimit_register();
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
