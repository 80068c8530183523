/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_jwks.c: the JWT keys of each VirtualHost and bearer-token
 * authentication.
 *
 * Keys come from files named by AuraJWTKeyFile (a JWKS document, a PEM
 * public key or certificate) and AuraJWTSecretFile (an HS256 secret),
 * read and checked at config time: a missing or malformed file stops
 * httpd with the directive's name; or from the identity service over
 * NATS (AuraJWKSSubject), fetched on the first token and published to
 * all children the same way as a refresh.  A token whose kid is unknown makes
 * the gateway re-read the VirtualHost's JWKS file (the issuer rotated
 * its keys) at most once per AuraJWKSRefreshInterval across ALL children:
 * the child that wins a compare-and-swap on the slot's last-refresh time
 * in the shared segment reads the file and publishes the document there;
 * the other children rebuild their key set from that copy (version
 * number) without touching the file.  A flood of tokens with made-up kids
 * therefore costs one refresh per interval, not one per request.
 *
 * Per child, each VirtualHost's key set is swapped under a read-write
 * lock: verifications hold it for reading, a rebuild swaps the pointer
 * and destroys the old set's pool under the write lock.
 */
#include "core/aura_module.h"
#include "auth/aura_identity.h"
#include "auth/aura_jwks.h"
#include "control/aura_control.h"
#include "control/aura_revoke.h"
#include "auth/aura_jwt.h"
#include "auth/aura_jwt_conf.h"
#include "core/aura_config.h"
#include "core/aura_request.h"
#include "nats/aura_envelope.h"
#include "nats/aura_inbox.h"
#include "nats/aura_nats.h"
#include "shm/aura_shm.h"
#include "trace/aura_tracing.h"

#include "http_protocol.h"
#include "apr_atomic.h"
#include "apr_strings.h"
#include "apr_thread_rwlock.h"

#define AURA_JWKS_FETCH_TIMEOUT_MS 2000

typedef struct aura_jwt_state_t {
    int slot;                         /* shm JWKS slot, -1: no JWKS */
    const char *jwks_path;            /* file, or NATS subject */
    int from_nats;
    apr_array_header_t *sources;
    aura_jwt_policy_t policy;         /* now: filled per request */
    apr_interval_time_t refresh;
    /* per child, from child_init: */
    apr_thread_rwlock_t *lock;
    apr_pool_t *pool;                 /* the current set's pool */
    aura_jwt_keyset_t *keys;
    apr_uint64_t version;             /* shm version the set was built from */
} aura_jwt_state_t;

/* aura_token_horizon(): written in post_config only (the parent,
 * before any child exists), read by request threads. */
static apr_interval_time_t token_horizon;

/* How long after its iat a token can be accepted under this config:
 * exp - iat up to the lifetime plus the leeway, then accepted until the
 * leeway after exp (check_claims in aura_jwt.c). */
static apr_interval_time_t horizon_of(const aura_server_conf_t *c)
{
    return aura_conf_token_max_life(c) + 2 * aura_conf_jwt_leeway(c);
}

apr_interval_time_t aura_token_horizon(void)
{
    return token_horizon;
}

/* Config time: read the file and check it can be used. */
const char *aura_jwks_read_source(cmd_parms *cmd, aura_jwt_source_t *src)
{
    const char *path = ap_server_root_relative(cmd->pool, src->path);
    aura_jwt_keyset_t *ks = aura_jwt_keyset_make(cmd->temp_pool);
    apr_file_t *f;
    apr_finfo_t fi;
    const char *err = NULL;
    char *buf;
    apr_size_t n;
    int added = 0;
    apr_status_t rv;

    rv = apr_file_open(&f, path, APR_FOPEN_READ, 0, cmd->temp_pool);
    if (rv == APR_SUCCESS) {
        rv = apr_file_info_get(&fi, APR_FINFO_SIZE, f);
    }
    if (rv == APR_SUCCESS && (fi.size <= 0 || fi.size >= AURA_JWKS_DOC_MAX)) {
        apr_file_close(f);
        return apr_psprintf(cmd->pool, "%s: %s is empty or not smaller "
                            "than %d bytes", cmd->cmd->name, path,
                            AURA_JWKS_DOC_MAX);
    }
    if (rv != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: cannot read %s: %pm",
                            cmd->cmd->name, path, &rv);
    }
    buf = apr_palloc(cmd->pool, (apr_size_t)fi.size + 1);
    rv = apr_file_read_full(f, buf, (apr_size_t)fi.size, &n);
    apr_file_close(f);
    if (rv != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: cannot read %s: %pm",
                            cmd->cmd->name, path, &rv);
    }
    buf[n] = '\0';
    src->path = path;
    src->data = buf;
    src->len = n;
    if (src->kind == AURA_JWT_SRC_SECRET) {
        rv = aura_jwt_keyset_add_secret(ks, src->kid,
                                        (const unsigned char *)buf, n, &err);
    }
    else if (buf[strspn(buf, " \t\r\n")] == '{') {
        src->kind = AURA_JWT_SRC_JWKS;
        rv = aura_jwt_keyset_add_jwks(ks, buf, n, &added, &err);
    }
    else {
        src->kind = AURA_JWT_SRC_PEM;
        rv = aura_jwt_keyset_add_pem(ks, src->kid, buf, n, &err);
    }
    if (rv != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: %s: %s", cmd->cmd->name, path,
                            err ? err : "unusable key material");
    }
    return NULL;
}

/* Builds a key set from the sources; jwks_doc replaces the config-time
 * JWKS document when a refresh published a newer one. */
static aura_jwt_keyset_t *build_keys(apr_pool_t *p, const aura_jwt_state_t *st,
                                     const char *jwks_doc, apr_size_t len)
{
    aura_jwt_keyset_t *ks = aura_jwt_keyset_make(p);
    int i;

    for (i = 0; i < st->sources->nelts; i++) {
        const aura_jwt_source_t *src =
            &APR_ARRAY_IDX(st->sources, i, aura_jwt_source_t);
        const char *err;
        int added;

        switch (src->kind) {
        case AURA_JWT_SRC_JWKS:
            if (jwks_doc) {
                aura_jwt_keyset_add_jwks(ks, jwks_doc, len, &added, &err);
            }
            else {
                aura_jwt_keyset_add_jwks(ks, src->data, src->len, &added,
                                         &err);
            }
            break;
        case AURA_JWT_SRC_NATS:
            if (jwks_doc) {
                aura_jwt_keyset_add_jwks(ks, jwks_doc, len, &added, &err);
            }
            break;
        case AURA_JWT_SRC_PEM:
            aura_jwt_keyset_add_pem(ks, src->kid, src->data, src->len, &err);
            break;
        case AURA_JWT_SRC_SECRET:
            aura_jwt_keyset_add_secret(ks, src->kid,
                                       (const unsigned char *)src->data,
                                       src->len, &err);
            break;
        }
    }
    return ks;
}

apr_status_t aura_jwks_post_config(apr_pool_t *pconf, server_rec *s)
{
    int next_slot = 0, i;
    server_rec *v;

    /* A new generation re-reads its files: forget published documents,
     * so a slot never serves another VirtualHost's keys after the
     * configuration changed (old children only adopt a newer version). */
    for (i = 0; i < AURA_JWKS_SLOTS; i++) {
        aura_shm_jwks_t *j = aura_shm_jwks(i);

        if (j) {
            apr_atomic_set64(&j->version, 0);
            apr_atomic_set64(&j->last_refresh, 0);
            j->len = 0;
        }
    }
    token_horizon = 0;
    /* Each server_rec with keys (its own or inherited by the merge) gets
     * its own state and slot: policies may differ per VirtualHost. */
    for (v = s; v; v = v->next) {
        aura_server_conf_t *c = aura_server_conf(v);
        aura_jwt_state_t *st;

        c->jwt = NULL;
        /* Only a plane takes tokens: a key file in the main server must
         * not cost a shared slot for every unrelated VirtualHost. */
        if (!c->jwt_sources || aura_server_plane(v) == AURA_PLANE_NONE) {
            continue;
        }
        st = apr_pcalloc(pconf, sizeof(*st));
        st->sources = c->jwt_sources;
        st->slot = -1;
        for (i = 0; i < st->sources->nelts; i++) {
            aura_jwt_source_t *src =
                &APR_ARRAY_IDX(st->sources, i, aura_jwt_source_t);

            if ((src->kind == AURA_JWT_SRC_JWKS
                 || src->kind == AURA_JWT_SRC_NATS) && st->slot < 0) {
                if (next_slot >= AURA_JWKS_SLOTS) {
                    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, v,
                                 AURA_LOGNO(00050) "more than %d "
                                 "VirtualHosts with a JWKS file: %s is "
                                 "not refreshed on unknown kids",
                                 AURA_JWKS_SLOTS, src->path);
                    continue;
                }
                st->slot = next_slot++;
                st->jwks_path = src->path;
                st->from_nats = src->kind == AURA_JWT_SRC_NATS;
            }
        }
        st->policy.algs = aura_conf_jwt_algs(c);
        st->policy.leeway = aura_conf_jwt_leeway(c);
        st->policy.issuer = c->jwt_issuer;
        st->policy.max_len = aura_conf_jwt_max_len(c);
        st->policy.require_sub = 1;
        st->policy.max_lifetime = aura_conf_token_max_life(c);
        st->refresh = aura_conf_jwks_refresh(c);
        c->jwt = st;
        /* Only where tokens are taken: an unrelated VirtualHost's
         * default must not keep every revocation a day. */
        if (horizon_of(c) > token_horizon) {
            token_horizon = horizon_of(c);
        }
    }
    if (!token_horizon) {
        token_horizon = horizon_of(aura_server_conf(s));
    }
    return APR_SUCCESS;
}

void aura_jwks_child_init(apr_pool_t *pchild, server_rec *s)
{
    server_rec *v;

    for (v = s; v; v = v->next) {
        aura_jwt_state_t *st = aura_server_conf(v)->jwt;

        if (!st || st->lock) {
            continue;   /* none, or shared with the main server */
        }
        apr_thread_rwlock_create(&st->lock, pchild);
        apr_pool_create(&st->pool, pchild);
        st->keys = build_keys(st->pool, st, NULL, 0);
        st->version = 0;
    }
}

/* Adopt the published document if it is newer than ours. */
static int adopt_published(aura_jwt_state_t *st)
{
    aura_shm_jwks_t *j = aura_shm_jwks(st->slot);
    apr_uint64_t version;
    apr_pool_t *pool, *old;
    char *doc = NULL;
    apr_size_t len = 0;

    if (!j || (version = apr_atomic_read64(&j->version)) <= st->version) {
        return 0;
    }
    apr_pool_create(&pool, apr_pool_parent_get(st->pool));
    apr_global_mutex_lock(aura_shm_mutex());
    version = apr_atomic_read64(&j->version);
    len = j->len;
    if (len) {
        doc = apr_pmemdup(pool, j->doc, len + 1);
        doc[len] = '\0';
    }
    apr_global_mutex_unlock(aura_shm_mutex());
    if (!doc) {
        apr_pool_destroy(pool);
        return 0;
    }
    apr_thread_rwlock_wrlock(st->lock);
    old = st->pool;
    st->pool = pool;
    st->keys = build_keys(pool, st, doc, len);
    st->version = version;
    apr_thread_rwlock_unlock(st->lock);
    apr_pool_destroy(old);
    return 1;
}

/* The JWKS from the identity service, over NATS like any other request
 * (the gateway has no HTTP client besides mod_proxy): GET /jwks in the
 * envelope, Aura-Status 200 and the document as the payload. */
static apr_status_t fetch_nats(request_rec *r, const char *subject,
                               char *buf, apr_size_t *n, const char **err)
{
    aura_request_t *rq = aura_request_get(r);
    aura_envelope_req_t in;
    aura_envelope_reply_t out;
    aura_inbox_t *inbox = NULL;
    natsMsg *msg = NULL, *reply = NULL;
    apr_pool_t *p;
    natsStatus s;
    apr_status_t rv = APR_EGENERAL;

    if (!aura_nats_connected()) {
        *err = "the NATS connection is down";
        return APR_EGENERAL;
    }
    memset(&in, 0, sizeof(in));
    in.method = "GET";
    in.path = "/jwks";
    in.request_id = rq ? rq->request_id : NULL;
    in.plane = rq ? aura_plane_name(rq->plane) : NULL;
    /* The answer comes on an inbox of the gateway's own (aura_inbox.c),
     * whose subject no service can predict: a forged key set would
     * forge every identity.  The subpool ends its subscription. */
    apr_pool_create(&p, r->pool);
    s = aura_inbox_open(p, &inbox);
    if (s == NATS_OK) {
        in.reply = aura_inbox_subject(inbox);
        s = aura_envelope_encode(p, subject, &in, &msg);
    }
    if (s == NATS_OK) {
        s = natsConnection_PublishMsg(aura_nats_conn(), msg);
    }
    if (s == NATS_OK) {
        s = aura_inbox_next(inbox, apr_time_now() + apr_time_from_msec(
                                AURA_JWKS_FETCH_TIMEOUT_MS), &reply);
    }
    natsMsg_Destroy(msg);
    if (s != NATS_OK) {
        *err = natsStatus_GetText(s);
        apr_pool_destroy(p);
        return APR_EGENERAL;
    }
    if (aura_envelope_decode(p, reply, &out, err) == APR_SUCCESS) {
        if (out.status != 200) {
            *err = "the identity service did not answer 200";
        }
        else if (out.body_len >= AURA_JWKS_DOC_MAX) {
            *err = "the document is too large";
        }
        else {
            memcpy(buf, out.body, out.body_len);
            *n = out.body_len;
            rv = APR_SUCCESS;
        }
    }
    if (rv != APR_SUCCESS && *err) {
        *err = apr_pstrdup(r->pool, *err);
    }
    aura_nats_msg_release(reply);
    apr_pool_destroy(p);
    return rv;
}

/* One refresh of the JWKS (file or NATS) for all children, if due. */
static int refresh_due(request_rec *r, aura_jwt_state_t *st)
{
    aura_shm_jwks_t *j = aura_shm_jwks(st->slot);
    apr_time_t now = apr_time_now();
    apr_uint64_t last;
    apr_file_t *f;
    apr_size_t n = 0;
    char *buf;
    aura_jwt_keyset_t *check;
    const char *err = NULL;
    int added = 0;
    apr_status_t rv;

    if (!j) {
        return 0;
    }
    last = apr_atomic_read64(&j->last_refresh);
    if ((apr_time_t)last + st->refresh > now
        || apr_atomic_cas64(&j->last_refresh, (apr_uint64_t)now, last)
           != last) {
        return 0;   /* not due, or another child is refreshing */
    }
    buf = apr_palloc(r->pool, AURA_JWKS_DOC_MAX + 1);
    if (st->from_nats) {
        rv = fetch_nats(r, st->jwks_path, buf, &n, &err);
    }
    else {
        rv = apr_file_open(&f, st->jwks_path, APR_FOPEN_READ, 0, r->pool);
        if (rv == APR_SUCCESS) {
            rv = apr_file_read_full(f, buf, AURA_JWKS_DOC_MAX, &n);
            apr_file_close(f);
            rv = (rv == APR_EOF || rv == APR_SUCCESS) && n < AURA_JWKS_DOC_MAX
                     ? APR_SUCCESS : (rv == APR_SUCCESS ? APR_ENOSPC : rv);
        }
    }
    if (rv == APR_SUCCESS) {
        buf[n] = '\0';
        check = aura_jwt_keyset_make(r->pool);
        rv = aura_jwt_keyset_add_jwks(check, buf, n, &added, &err);
    }
    if (rv != APR_SUCCESS) {
        /* rv only for I/O errors: a parse error has its own text. */
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, err ? 0 : rv, r,
                      AURA_LOGNO(00051) "JWKS refresh from %s%s failed: "
                      "%s; keeping the current keys",
                      st->from_nats ? "nats:" : "", st->jwks_path,
                      err ? err : "cannot read it whole");
        return 0;
    }
    apr_global_mutex_lock(aura_shm_mutex());
    memcpy(j->doc, buf, n + 1);
    j->len = (apr_uint32_t)n;
    apr_atomic_inc64(&j->version);
    apr_global_mutex_unlock(aura_shm_mutex());
    ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, AURA_LOGNO(00052)
                  "JWKS refreshed from %s%s on an unknown kid: %d keys",
                  st->from_nats ? "nats:" : "", st->jwks_path, added);
    return 1;
}

static aura_jwt_result_e verify(request_rec *r, aura_jwt_state_t *st,
                                aura_jwt_policy_t *pol, const char *token,
                                aura_jwt_claims_t *claims)
{
    aura_jwt_result_e res;

    pol->now = apr_time_now();
    aura_count(AURA_CTR_JWT_VERIFY);
    apr_thread_rwlock_rdlock(st->lock);
    res = aura_jwt_verify(r->pool, st->keys, pol, token, claims);
    apr_thread_rwlock_unlock(st->lock);
    return res;
}

/* verify(), and again once with the keys another child or a refresh
 * published when the token names a kid this child does not know. */
static aura_jwt_result_e verify_fresh(request_rec *r, aura_jwt_state_t *st,
                                      aura_jwt_policy_t *pol,
                                      const char *token,
                                      aura_jwt_claims_t *claims)
{
    aura_jwt_result_e res = verify(r, st, pol, token, claims);

    if (res == AURA_JWT_UNKNOWN_KID && st->slot >= 0
        && (adopt_published(st) || (refresh_due(r, st)
                                    && adopt_published(st)))) {
        res = verify(r, st, pol, token, claims);
    }
    return res;
}

aura_jwt_result_e aura_jwks_verify(request_rec *r, const char *typ,
                                   const char *issuer,
                                   const char *audience, const char *token,
                                   aura_jwt_claims_t *claims)
{
    aura_jwt_state_t *st = aura_server_conf(r->server)->jwt;
    aura_jwt_policy_t pol;

    if (!st || !st->lock) {
        memset(claims, 0, sizeof(*claims));
        return AURA_JWT_UNKNOWN_KID;
    }
    /* The VirtualHost's keys, algorithms, leeway and bounds; the
     * caller's issuer and audience, exactly (never unchecked). */
    pol = st->policy;
    pol.issuer = issuer;
    pol.audience = audience;
    pol.audience_exact = 0;
    pol.audience_any = 1;
    pol.require_sub = 0;
    pol.project_claim = NULL;
    pol.project = NULL;
    pol.typ = typ;
    return verify_fresh(r, st, &pol, token, claims);
}

static int refuse_token(request_rec *r, const char *why)
{
    apr_table_setn(r->err_headers_out, "WWW-Authenticate",
                   "Bearer error=\"invalid_token\"");
    aura_problem_note(r, "invalid-token", why);
    return HTTP_UNAUTHORIZED;
}

static int count_authorization(void *rec, const char *key,
                               const char *value)
{
    (void)key; (void)value;
    (*(int *)rec)++;
    return 1;
}

/* The one Authorization header's token: NULL with *malformed 0 when
 * there is none, NULL with *malformed 1 when there is something else
 * than exactly one "Bearer <b64token>" (aura_authz_parse()). */
static const char *bearer_token(request_rec *r, int *malformed)
{
    int n = 0;
    const char *token;
    aura_authz_e kind;

    /* httpd merges a repeated header into "a, b" (which the parser
     * refuses); counted anyway, for whatever adds entries without
     * merging. */
    apr_table_do(count_authorization, &n, r->headers_in, "Authorization",
                 NULL);
    kind = aura_authz_parse(apr_table_get(r->headers_in, "Authorization"),
                            &token);
    *malformed = n > 1 || kind == AURA_AUTHZ_MALFORMED;
    return *malformed ? NULL : token;
}

/* The auth type of a request whose bearer token this module verified:
 * told apart from any other module's "Bearer" by its address. */
static const char bearer_auth_type[] = "Bearer";

static int bearer_verified(const request_rec *r)
{
    return r->ap_auth_type == bearer_auth_type;
}

/* What reaches a service: Authorization only when this request's token
 * was verified here, under a plane policy that lets it travel
 * (aura_token_policy_t.forward).  On an AuraPublic route nothing is
 * read, so a token sent there would cross unverified (DESIGN.md section
 * 9); a verified token that must stay was removed when verified, and
 * whatever a module put back since is removed here, on the very headers
 * that leave (DESIGN.md section 10). */
void aura_forward_credentials(request_rec *r, apr_table_t *headers)
{
    aura_request_private_t *p = aura_request_private(r);

    if (!bearer_verified(r) || !p || !p->token_travels) {
        apr_table_unset(headers, "Authorization");
    }
}

static int auth_bearer(request_rec *r, const aura_token_policy_t *policy)
{
    aura_jwt_state_t *st = aura_server_conf(r->server)->jwt;
    aura_request_t *rq = aura_request_get(r);
    aura_jwt_policy_t pol;
    aura_jwt_claims_t claims;
    aura_jwt_result_e res;
    const char *token;
    int malformed, rc;

    token = bearer_token(r, &malformed);
    if (malformed) {
        /* Never anonymous, never forwarded: a credential we cannot read
         * is refused, not ignored (a service must not be handed a token
         * nobody verified). */
        apr_table_unset(r->headers_in, "Authorization");
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00300)
                      "Authorization refused: not exactly one "
                      "'Bearer <token>'");
        return refuse_token(r, "Authorization must be exactly one "
                               "'Bearer <token>'");
    }
    if (!token) {
        return DECLINED;   /* no Authorization at all */
    }
    if (!rq || !st || !st->lock) {
        apr_table_unset(r->headers_in, "Authorization");
        return refuse_token(r, "bearer tokens are not accepted here");
    }
    pol = st->policy;
    if (policy->audience_exact) {
        pol.audience = policy->audience_exact;
        pol.audience_exact = 1;
    }
    else {
        pol.audience = policy->audience;
        pol.audience_any = policy->audience_any;
    }
    pol.project_claim = policy->project_claim;
    pol.project = rq->project;
    res = verify_fresh(r, st, &pol, token, &claims);
    if (res != AURA_JWT_OK) {
        apr_table_unset(r->headers_in, "Authorization");
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00053)
                      "bearer token refused: %s", aura_jwt_result_text(res));
        return refuse_token(r, aura_jwt_result_text(res));
    }
    /* Verified, so its sub, sid and jti are its issuer's word. */
    if ((rc = aura_revoke_check(r, &claims)) != OK) {
        apr_table_unset(r->headers_in, "Authorization");
        return rc;
    }
    rq->actor = claims.sub;
    rq->role = "authenticated";
    /* For a stream that must end with the token (aura_streamend.c). */
    rq->priv->cred.token_sub = claims.sub;
    /* The end a request would see: exp plus the leeway it is granted. */
    rq->priv->cred.token_exp = claims.exp
                               + (pol.leeway > 0 ? pol.leeway : 0);
    rq->priv->cred.token_claims = claims.claims_json;
    rq->priv->cred.token_scope = aura_revoke_scope(r);
    r->user = (char *)claims.sub;
    r->ap_auth_type = (char *)bearer_auth_type;
    if (!policy->forward) {
        /* It stays here: a service holding a console token (or a
         * user's, where the Location does not forward it) could replay
         * it against the gateway; it has the identity headers. */
        apr_table_unset(r->headers_in, "Authorization");
        return OK;
    }
    /* What crosses is exactly what was verified, in the one form. */
    rq->priv->token_travels = 1;
    apr_table_setn(r->headers_in, "Authorization",
                   apr_pstrcat(r->pool, "Bearer ", token, NULL));
    return OK;
}

/* The check as the server span's child "aura.token.verify", forgotten
 * when the request had no Authorization at all. */
AURA_DECLARE(int) aura_auth_bearer(request_rec *r,
                                   const aura_token_policy_t *policy)
{
    int span = aura_tracing_stage(r, "aura.token.verify");
    int rc = auth_bearer(r, policy);

    /* A verified subject an incident control blocks (actor:<sub>). */
    if (rc == OK) {
        rc = aura_control_actor(r);
    }

    if (rc == DECLINED) {
        aura_tracing_discard(r, span);
    }
    else {
        aura_tracing_stage_end(r, span, rc);
    }
    return rc;
}
