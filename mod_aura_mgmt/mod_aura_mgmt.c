/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mod_aura_mgmt: the management plane.  Acts only in a VirtualHost with
 * "AuraPlane management" and declines everywhere else, so the same httpd keeps
 * serving unrelated sites untouched.  The mechanisms are mod_aura_common's
 * (aura.h); this module owns the management plane's policy around them:
 * its directives (mgmt_config.c: AuraScope, AuraRequireRole,
 * AuraKeyRotation, AuraCORSAllowOrigin), the console door
 * (mgmt_console.c: the console token, the scope, the role from
 * membership), the CORS allow-list and the key-rotation trigger.
 *
 * Hook order (verified with mod_info's ?hooks view by the test-suite):
 *   check_config       a "*" among the management plane's CORS origins
 *                      stops the start (also under apachectl -t)
 *   post_read_request  request state and id, first thing (after only
 *                      mod_remoteip's client address), so every
 *                      response of the plane carries X-Request-Id; the
 *                      plane's CORS rule (the allow-list) goes into it
 *   quick_handler      FIRST: a CORS preflight from a listed origin is
 *                      answered (204), from any other refused (403),
 *                      before any credential is asked for
 *   translate_name     FIRST, before mod_proxy and mod_rewrite: claim a
 *                      service Location
 *   access_checker_ex  FIRST: the per-address limit, the console
 *                      token, then the subject's role in the
 *                      organization concerned, from Postgres on every
 *                      request (fail closed: 401, 403, 503), then the
 *                      actor quota.  It
 *                      returns DECLINED on success, so the operator's
 *                      own Require rules still apply after it.
 *   insert_filter      an AuraKeyRotation Location: its 2xx answer
 *                      broadcasts the project's key invalidation
 *   log_transaction    the audit record of a mutation by a verified
 *                      console user (AuraAuditLog; docs/audit.md),
 *                      once the final status is known
 */
#include "httpd.h"
#include "http_config.h"
#include "http_request.h"
#include "http_protocol.h"
#include "http_core.h"
#include "http_log.h"
#include "mod_auth.h"
#include "apr_strings.h"

#include "mgmt.h"

static int mgmt_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp, server_rec *s)
{
    (void)pconf; (void)plog; (void)ptemp;
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    return aura_api_check(s, "mod_aura_mgmt");
}

static int mgmt_post_read_request(request_rec *r)
{
    if (aura_server_plane(r->server) != AURA_PLANE_MGMT) {
        return DECLINED;
    }
    /* Before the quick_handler, which answers preflights by it. */
    aura_request_begin(r, AURA_PLANE_MGMT)->cors =
        &aura_mgmt_server_conf(r->server)->cors;
    /* Before any Location is walked: the path the rules will see must be
     * the path the service receives (docs/envelope.md, "One path"). */
    return aura_request_path_check(r);
}

static int mgmt_translate_name(request_rec *r)
{
    if (aura_server_plane(r->server) != AURA_PLANE_MGMT) {
        return DECLINED;
    }
    return aura_route_claim(r);
}

static int mgmt_quick_handler(request_rec *r, int lookup_uri)
{
    if (lookup_uri || aura_server_plane(r->server) != AURA_PLANE_MGMT) {
        return DECLINED;
    }
    return aura_cors_preflight(r);
}

/* The actor quota's id: the console user, whatever the org. */
static const char *mgmt_quota_id(request_rec *r)
{
    const aura_request_t *rq = aura_request_get(r);

    return rq && rq->actor ? apr_pstrcat(r->pool, "m:", rq->actor, NULL)
                           : NULL;
}

static int mgmt_check_access(request_rec *r)
{
    int rc;

    if (aura_server_plane(r->server) != AURA_PLANE_MGMT
        || !ap_is_initial_req(r)) {
        return DECLINED;
    }
    /* An Upgrade: h2c request is checked as its HTTP/2 stream 1, with
     * the credentials this check would have removed (aura.h). */
    if (aura_request_h2c(r)) {
        return DECLINED;
    }
    rc = aura_limit_ip(r);
    if (rc != OK || aura_route_public(r)) {
        return rc == OK ? DECLINED : rc;
    }
    rc = aura_mgmt_auth_console(r);
    if (rc == OK) {
        rc = aura_limit_actor(r, mgmt_quota_id(r));
    }
    return rc == OK ? DECLINED : rc;
}

/* Whether a request rotates keys is this plane's policy; the broadcast
 * is mod_aura_common's.  Wherever AuraKeyRotation is set, as when
 * mod_aura_common read it (aura_keys_rotation_watch() acts only on a
 * request a plane took in). */
static void mgmt_insert_filter(request_rec *r)
{
    if (aura_mgmt_key_rotation(aura_mgmt_dir_conf(r))) {
        aura_keys_rotation_watch(r);
    }
}

/* GET, HEAD, OPTIONS and TRACE change nothing; every other method,
 * extension methods included, may. */
static int mutates(const request_rec *r)
{
    return r->method_number != M_GET && r->method_number != M_OPTIONS
           && r->method_number != M_TRACE;
}

/* The audit policy of the plane: every mutating request of a verified
 * console user, whether the role check let it through (authorized,
 * then sent unless a later stage refused it) or refused it (403: who
 * tried what is the forensics an audit log is for).  Not recorded:
 * requests without a valid console token (401) and those refused
 * before the token is read (429 per address, 413, 400): no verified
 * "who", and an anonymous flood must not be able to grow the log; the
 * access and error logs have them.  log_transaction runs once per
 * request (with the initial request_rec, never for a subrequest), so
 * an internal redirect is recorded once, with its final status. */
static int mgmt_log_transaction(request_rec *r)
{
    aura_request_t *rq;
    aura_audit_entry_t e;

    if (aura_server_plane(r->server) != AURA_PLANE_MGMT || !mutates(r)) {
        return DECLINED;
    }
    rq = aura_request_get(r);
    if (!rq || !rq->actor || !aura_audit_entry_from(r, &e)) {
        return DECLINED;
    }
    /* The org is set only once the membership lookup granted a role. */
    e.authorized = rq->org != NULL;
    e.target = aura_mgmt_target(r);
    aura_audit_write(r, &e);
    return DECLINED;
}

static void mgmt_register_hooks(apr_pool_t *p)
{
    static const char *const before_proxy[] = {
        "mod_proxy.c", "mod_rewrite.c", NULL
    };
    static const char *const after_remoteip[] = { "mod_remoteip.c", NULL };

    (void)p;
    ap_hook_check_config(aura_mgmt_check_config, NULL, NULL,
                         APR_HOOK_MIDDLE);
    ap_hook_post_config(mgmt_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    /* After mod_remoteip's, also FIRST (else LoadModule order decides,
     * and a2enmod's puts aura_* first): AuraTraceTrustParent is checked
     * against the client address mod_remoteip establishes. */
    ap_hook_post_read_request(mgmt_post_read_request, after_remoteip, NULL,
                              APR_HOOK_FIRST);
    ap_hook_translate_name(mgmt_translate_name, NULL, before_proxy,
                           APR_HOOK_FIRST);
    ap_hook_quick_handler(mgmt_quick_handler, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_check_access_ex(mgmt_check_access, NULL, NULL, APR_HOOK_FIRST,
                            AP_AUTH_INTERNAL_PER_CONF);
    ap_hook_insert_filter(mgmt_insert_filter, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_log_transaction(mgmt_log_transaction, NULL, NULL,
                            APR_HOOK_MIDDLE);
}

module AURA_DECLARE_DATA aura_mgmt_module = {
    STANDARD20_MODULE_STUFF,
    aura_mgmt_create_dir_conf,
    aura_mgmt_merge_dir_conf,
    aura_mgmt_create_server_conf,
    aura_mgmt_merge_server_conf,
    aura_mgmt_cmds,
    mgmt_register_hooks,
    AP_MODULE_FLAG_NONE
};
