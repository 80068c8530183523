/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_logout.c: the OpenID Connect Back-Channel Logout 1.0 endpoint
 * (docs/security.md section 3.16, docs/directives.md
 * AuraBackchannelLogout).
 *
 * The logout_token is verified by the code that verifies every token
 * (aura_jwks_verify: the VirtualHost's keys and algorithms, never
 * "none", never an HMAC secret for a public key), with this Location's
 * issuer and audience, typed "logout+jwt" as section 2.4 recommends or
 * untyped ("JWT" or no typ) as providers older than that recommendation
 * send it; then its own claims (aura_logout_token.c).  A bearer token
 * is never typed "logout+jwt": a logout_token cannot be replayed as one.  A
 * valid one becomes a revocation, an incident control of kind revoke in
 * the Location's project: the session (sid) when it names one, else the
 * user (sub), of every token issued at or before the logout_token's
 * iat.  Its iat, not the time it arrived: a logout_token sent again (the
 * specification lets the provider retry) revokes exactly what it did
 * the first time, never the tokens the user got since; and a revocation
 * already in force that goes further (a later time) is kept as it is.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "auth/aura_jwks.h"
#include "auth/aura_logout.h"
#include "auth/aura_logout_token.h"
#include "control/aura_control.h"
#include "control/aura_control_nats.h"
#include "control/aura_revoke_index.h"

#include "http_core.h"
#include "http_protocol.h"
#include "apr_strings.h"
#include "apr_lib.h"

#include <jansson.h>

/* ---- the directive --------------------------------------------------- */

static int project_ok(const char *s)
{
    apr_size_t n = strlen(s);

    if (!n || n > 63) {
        return 0;
    }
    for (; *s; s++) {
        if (!apr_isalnum(*s) && !strchr("._-", *s)) {
            return 0;
        }
    }
    return 1;
}

const char *aura_set_backchannel_logout(cmd_parms *cmd, void *dirv,
                                        const char *args)
{
    aura_dir_conf_t *d = dirv;
    aura_logout_conf_t *c = apr_pcalloc(cmd->pool, sizeof(*c));

    c->project = ap_getword_conf(cmd->pool, &args);
    c->issuer = ap_getword_conf(cmd->pool, &args);
    c->audience = ap_getword_conf(cmd->pool, &args);
    /* The token lifetime this took once is the gateway's own now
     * (AuraTokenMaxLifetime): say so rather than a bare "too many". */
    if (*c->audience && *args) {
        return apr_pstrcat(cmd->pool, cmd->cmd->name, ": takes a project, "
                           "an issuer and an audience; the token lifetime "
                           "argument is gone: revocations now last until "
                           "every token they name has expired, by "
                           "AuraTokenMaxLifetime", NULL);
    }
    if (!*c->project || !*c->issuer || !*c->audience) {
        return apr_pstrcat(cmd->pool, cmd->cmd->name, ": takes a project, "
                           "an issuer and an audience", NULL);
    }
    if (!project_ok(c->project)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a project id (1 to "
                            "63 of [A-Za-z0-9._-])", cmd->cmd->name,
                            c->project);
    }
    d->logout = c;
    return NULL;
}

/* ---- the answers ----------------------------------------------------- */

static int answer(request_rec *r, int status, const char *error,
                  const char *why)
{
    json_t *o;
    char *text;

    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    r->status = status;
    if (!error) {
        return OK;
    }
    /* Section 2.8: an error is a 400 with an OAuth error body. */
    o = json_object();
    json_object_set_new(o, "error", json_string(error));
    json_object_set_new(o, "error_description", json_string(why));
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    ap_set_content_type(r, "application/json");
    if (text) {
        ap_rputs(text, r);
        free(text);
    }
    return OK;
}

static int refuse(request_rec *r, const char *why)
{
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(02501)
                  "back-channel logout refused: %s", why);
    return answer(r, HTTP_BAD_REQUEST, "invalid_request", why);
}

/* ---- the request ----------------------------------------------------- */

/* The body, at most AURA_LOGOUT_BODY_MAX bytes: APR_ENOSPC beyond. */
static apr_status_t read_body(request_rec *r, char **out)
{
    char *buf = apr_palloc(r->pool, AURA_LOGOUT_BODY_MAX + 1);
    apr_size_t n = 0;
    long got;

    if (ap_setup_client_block(r, REQUEST_CHUNKED_DECHUNK) != OK) {
        return APR_EGENERAL;
    }
    if (ap_should_client_block(r)) {
        while ((got = ap_get_client_block(
                    r, buf + n, AURA_LOGOUT_BODY_MAX + 1 - n)) > 0) {
            n += (apr_size_t)got;
            if (n > AURA_LOGOUT_BODY_MAX) {
                return APR_ENOSPC;
            }
        }
        if (got < 0) {
            return APR_EGENERAL;
        }
    }
    buf[n] = '\0';
    *out = buf;
    return APR_SUCCESS;
}

static int form_type(request_rec *r)
{
    const char *ct = apr_table_get(r->headers_in, "Content-Type");
    apr_size_t n = sizeof("application/x-www-form-urlencoded") - 1;

    return ct && !strncasecmp(ct, "application/x-www-form-urlencoded", n)
           && (!ct[n] || ct[n] == ';' || ct[n] == ' ');
}

/* The one logout_token of the form; NULL when none, several, or one that
 * does not decode. */
static const char *logout_token(apr_pool_t *p, char *body)
{
    const char *found = NULL;
    char *pair, *last;

    for (pair = apr_strtok(body, "&", &last); pair;
         pair = apr_strtok(NULL, "&", &last)) {
        char *eq = strchr(pair, '=');

        if (!eq || strncmp(pair, "logout_token", (apr_size_t)(eq - pair))
            || eq - pair != sizeof("logout_token") - 1) {
            continue;
        }
        if (found) {
            return NULL;
        }
        found = apr_pstrdup(p, eq + 1);
        if (ap_unescape_urlencoded((char *)found) != OK) {
            return NULL;
        }
    }
    return found && *found ? found : NULL;
}

/* The revocation the logout asks for, merged with one already in force
 * (the later time and expiry win).  It lasts until every token it names
 * has died (aura_revoke_expiry(), the token horizon).  0 when nothing is
 * left to revoke (every token it names has expired). */
static int make_revocation(request_rec *r, const aura_logout_claims_t *lc,
                           const char *target, aura_control_t *out)
{
    aura_control_t before;
    apr_time_t now = apr_time_now();
    apr_int64_t iat = lc->iat;
    apr_time_t expires = aura_revoke_expiry(iat, aura_token_horizon(), 0,
                                            now);

    memset(out, 0, sizeof(*out));
    out->kind = AURA_CONTROL_REVOKE;
    apr_cpystrn(out->target, target, sizeof(out->target));
    aura_control_id(AURA_CONTROL_REVOKE, out->target, out->id);
    if (aura_control_find(out->id, &before) == APR_SUCCESS
        && aura_control_active(&before, now)) {
        if (apr_atoi64(before.value) >= iat && before.expires >= expires) {
            *out = before;   /* already revoked: idempotent */
            return 1;
        }
        if (apr_atoi64(before.value) > iat) {
            iat = apr_atoi64(before.value);
        }
        if (before.expires > expires) {
            expires = before.expires;
        }
    }
    else if (aura_control_find(out->id, &before) != APR_SUCCESS) {
        memset(&before, 0, sizeof(before));
    }
    if (expires <= now) {
        return 0;
    }
    /* Never binds: iat is at most the leeway ahead (verified), and the
     * horizon at most 7 days and 2 h (aura_revoke_index.h); kept so that
     * no record leaves here that the fleet would refuse. */
    if (expires > now + AURA_REVOKE_TTL_MAX) {
        expires = now + AURA_REVOKE_TTL_MAX;
    }
    apr_snprintf(out->value, sizeof(out->value), "%" APR_INT64_T_FMT, iat);
    apr_cpystrn(out->by, "backchannel-logout", sizeof(out->by));
    apr_cpystrn(out->reason, apr_pstrcat(r->pool, "OpenID Connect "
                "back-channel logout, jti ", lc->jti, NULL),
                sizeof(out->reason));
    out->updated = before.kind && before.updated >= now
                   ? before.updated + 1 : now;
    out->expires = expires;
    return 1;
}

/* One audit record of a revocation the logout made or moved, as the
 * console writes one for an operator's: the provider ("idp:<issuer>")
 * as its actor.  A refused logout_token is not written: the endpoint is
 * open to anyone, and the audit log must not be theirs to fill. */
static void audit(request_rec *r, const aura_logout_conf_t *c,
                  const aura_control_t *rec, int update)
{
    aura_request_t *rq = aura_request_get(r);
    core_dir_config *core = ap_get_core_module_config(r->per_dir_config);
    aura_audit_entry_t e;
    const char *actor = NULL, *role = NULL, *project = NULL;

    memset(&e, 0, sizeof(e));
    e.action = update ? "control.revoke.update" : "control.revoke.set";
    e.target = apr_pstrcat(r->pool, "revoke ", rec->target, NULL);
    e.method = r->method;
    e.route = core ? core->d : NULL;
    e.path = r->uri;
    e.status = HTTP_OK;
    e.authorized = 1;      /* signed by the project's provider */
    e.outcome = "executed";
    if (rq) {
        actor = rq->actor;
        role = rq->role;
        project = rq->project;
        rq->actor = apr_pstrcat(r->pool, "idp:", c->issuer, NULL);
        rq->role = "identity-provider";
        rq->project = c->project;
    }
    aura_audit_write(r, &e);
    if (rq) {
        rq->actor = actor;
        rq->role = role;
        rq->project = project;
    }
}

static int revoke_session(request_rec *r, const aura_logout_conf_t *c,
                  const aura_logout_claims_t *lc)
{
    aura_revoke_e what = lc->sid ? AURA_REVOKE_SID : AURA_REVOKE_SUB;
    const char *target = aura_revoke_target(r->pool, what, c->project,
                                            lc->sid ? lc->sid : lc->sub);
    char ct[AURA_CONTROL_TARGET_MAX + 1], cv[AURA_CONTROL_VALUE_MAX + 1];
    aura_control_t rec, prior;
    int was_active;

    if (!target || strlen(target) > AURA_CONTROL_TARGET_MAX) {
        return refuse(r, "the sub or sid is too long");
    }
    if (!make_revocation(r, lc, target, &rec)) {
        return answer(r, HTTP_OK, NULL, NULL);
    }
    if (aura_control_canon(r->pool, AURA_CONTROL_REVOKE, rec.target,
                           rec.value, ct, cv)) {
        return refuse(r, "the sub or sid is not visible text");
    }
    was_active = aura_control_find(rec.id, &prior) == APR_SUCCESS
                 && aura_control_active(&prior, apr_time_now());
    switch (aura_control_merge(&rec, apr_time_now(), NULL)) {
    case AURA_CONTROL_ADDED:
    case AURA_CONTROL_REPLACED:
        aura_control_publish(r, &rec);
        audit(r, c, &rec, was_active);
        break;
    case AURA_CONTROL_KEPT:
        break;   /* a replay: done already */
    default:
        aura_control_log_full(r->server, &rec);
        return answer(r, HTTP_SERVICE_UNAVAILABLE, "temporarily_unavailable",
                      "the table of revocations is full");
    }
    ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, AURA_LOGNO(02502)
                  "back-channel logout from %s: tokens of %s issued at or "
                  "before %s revoked (jti %s)",
                  ap_escape_logitem(r->pool, c->issuer),
                  ap_escape_logitem(r->pool, rec.target), rec.value,
                  ap_escape_logitem(r->pool, lc->jti));
    return answer(r, HTTP_OK, NULL, NULL);
}

int aura_logout_handler(request_rec *r)
{
    const aura_logout_conf_t *c;
    aura_logout_claims_t lc;
    aura_jwt_claims_t claims;
    aura_jwt_result_e res;
    const char *token, *err;
    char *body;
    apr_status_t rv;

    if (!r->handler || strcmp(r->handler, AURA_HANDLER_LOGOUT)) {
        return DECLINED;
    }
    if (!(c = aura_dir_conf(r)->logout)) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(02503)
                      "SetHandler %s without AuraBackchannelLogout: "
                      "refused", AURA_HANDLER_LOGOUT);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    r->allowed = AP_METHOD_BIT << M_POST;
    if (r->method_number != M_POST) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    if (!form_type(r)) {
        return refuse(r, "the body must be application/"
                         "x-www-form-urlencoded");
    }
    rv = read_body(r, &body);
    if (rv == APR_ENOSPC) {
        return HTTP_REQUEST_ENTITY_TOO_LARGE;
    }
    if (rv != APR_SUCCESS) {
        return refuse(r, "the body could not be read");
    }
    if (!(token = logout_token(r->pool, body))) {
        return refuse(r, "the body must hold exactly one logout_token");
    }
    res = aura_jwks_verify(r, AURA_LOGOUT_TYP, c->issuer, c->audience,
                           token, &claims);
    if (res != AURA_JWT_OK) {
        return refuse(r, apr_pstrcat(r->pool, "the logout_token is not "
                                     "valid: ", aura_jwt_result_text(res),
                                     NULL));
    }
    if ((err = aura_logout_token_check(r->pool, claims.claims_json,
                                       AURA_CONTROL_TARGET_MAX, &lc))) {
        return refuse(r, err);
    }
    return revoke_session(r, c, &lc);
}
