/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_control.c: the incident controls of this instance.
 *
 * The table: AuraControlSlots records (aura_control_record.h) in the
 * shared segment, so it outlives graceful restarts as breakers do.  It
 * is written only under the "aura-control" global mutex (a merge: an
 * operator's POST or DELETE, a copy from NATS), O(slots) with no I/O and
 * no logging inside, and every write that changes it adds one to its
 * generation.  The mutex is made once from s->process->pool and kept in
 * retained data, so the children of two generations overlapping in a
 * graceful restart take the same lock.
 *
 * The request path never takes it: each child keeps its own copy of the
 * controls in force, made again (under the mutex, once per change) when
 * the generation it was made from is no longer the table's.  With no
 * control in force a request costs one atomic read of the generation
 * and one of the copy's; with some, a read lock of the child's copy and
 * a scan of the controls in force.  Expired controls simply stop
 * matching (the time is checked at each match) and are reaped from the
 * table when a slot is needed; lifted ones are kept as tombstones until
 * their expiry, so that a late copy from NATS cannot bring them back.
 *
 * Where the checks sit in a request (docs/console.md):
 *   access_checker_ex, FIRST, before the planes' own check (so before
 *     the per-address limit, any key lookup or token verification):
 *     addr: blocks (403), then maintenance (503), then drain (503);
 *   the data plane's key door, after the key is parsed and before it is
 *     looked up: key: blocks (aura_control_key);
 *   after a token is verified: actor: blocks (aura_control_actor);
 *   the breaker of a service: forced open or closed
 *     (aura_control_breaker, read by aura_breaker.c);
 *   a zone's rate and a plan's quota, lowered (aura_control_rate,
 *     aura_control_quota, read by the limiters).
 * The console's own Location is never refused: the operator must be
 * able to lift what they set.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_mutex.h"
#include "console/aura_console.h"
#include "control/aura_control.h"
#include "control/aura_control_conf.h"
#include "control/aura_revoke_index.h"
#include "auth/aura_apikey.h"
#include "auth/aura_identity.h"
#include "shm/aura_shm.h"

#include "http_core.h"
#include "http_request.h"
#include "util_mutex.h"
#include "ap_expr.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include <pthread.h>

#define CONTROL_RETAINED_KEY "mod_aura_common-control-1"


/* One control in force, as a child matches it. */
typedef struct {
    aura_control_t rec;
    aura_control_net_t net;      /* addr: blocks */
    int service;                 /* drain, breaker: aura_service_e, -1 */
} entry_t;

/* Written in post_config and child_init only. */
static apr_global_mutex_t *control_mutex;
/* The child's copy: made under its write lock, read under its read
 * lock; gen is the table's generation it was made from, plus one (0:
 * never made), count how many controls it holds (both atomic, read
 * without the lock on the fast path). */
static pthread_rwlock_t snap_lock = PTHREAD_RWLOCK_INITIALIZER;
static entry_t *snap;
static apr_uint64_t snap_cap;
static volatile apr_uint64_t snap_gen;
static volatile apr_uint32_t snap_count;
/* The revocations in force (kind revoke), apart from snap: the request
 * path looks a token up in this index (O(1)) instead of scanning them,
 * and the early checks never see them.  Made with snap, under its
 * lock; rcount atomic, for the fast path. */
static aura_revoke_index_t *revokes;
static volatile apr_uint32_t rcount;

apr_status_t aura_control_pre_config(apr_pool_t *pconf)
{
    return ap_mutex_register(pconf, AURA_CONTROL_MUTEX_TYPE, NULL,
                             APR_LOCK_DEFAULT, 0);
}

/* The instance's id: random, made once per segment (in the parent). */
static apr_status_t instance_id(aura_control_shm_t *t)
{
    unsigned char rnd[16];
    apr_status_t rv;
    int i;

    if (t->instance[0]) {
        return APR_SUCCESS;
    }
    rv = apr_generate_random_bytes(rnd, sizeof(rnd));
    for (i = 0; rv == APR_SUCCESS && i < 16; i++) {
        apr_snprintf(t->instance + 2 * i, 3, "%02x", rnd[i]);
    }
    return rv;
}

apr_status_t aura_control_post_config(apr_pool_t *pconf, server_rec *s)
{
    aura_control_t *slots;
    apr_uint64_t n;
    aura_control_shm_t *t = aura_shm_control(&slots, &n);
    apr_status_t rv;

    (void)pconf;
    rv = aura_retained_mutex(s, CONTROL_RETAINED_KEY,
                             AURA_CONTROL_MUTEX_TYPE, &control_mutex);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s, AURA_LOGNO(02200)
                     "cannot create the %s mutex", AURA_CONTROL_MUTEX_TYPE);
        return rv;
    }
    return t ? instance_id(t) : APR_EGENERAL;
}

void aura_control_child_init(apr_pool_t *pchild, server_rec *s)
{
    aura_control_t *slots;
    apr_status_t rv;

    if (!aura_shm_control(&slots, &snap_cap) || !control_mutex) {
        return;
    }
    snap = apr_pcalloc(pchild, (apr_size_t)snap_cap * sizeof(*snap));
    revokes = aura_revoke_index_make(pchild, snap_cap);
    rv = apr_global_mutex_child_init(&control_mutex,
                                     apr_global_mutex_lockfile(control_mutex),
                                     pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, AURA_LOGNO(02201)
                     "cannot re-open the %s mutex in this child: incident "
                     "controls cannot be changed or read here",
                     AURA_CONTROL_MUTEX_TYPE);
        control_mutex = NULL;
    }
}

const char *aura_control_instance(void)
{
    aura_control_t *slots;
    apr_uint64_t n;
    aura_control_shm_t *t = aura_shm_control(&slots, &n);

    return t ? t->instance : "";
}

/* ---- the table (under the mutex) ------------------------------------ */

static apr_status_t lock(void)
{
    return control_mutex ? apr_global_mutex_lock(control_mutex)
                         : APR_EGENERAL;
}

/* The slot of id, else a free one (*free_at), reaping expired ones
 * when none is free.  Under the mutex. */
static aura_control_t *slot_of(aura_control_t *slots, apr_uint64_t n,
                               const char *id, apr_time_t now,
                               aura_control_t **free_at)
{
    apr_uint64_t i;

    *free_at = NULL;
    for (i = 0; i < n; i++) {
        if (slots[i].kind == AURA_CONTROL_FREE) {
            if (!*free_at) {
                *free_at = &slots[i];
            }
        }
        else if (!strcmp(slots[i].id, id)) {
            return &slots[i];
        }
    }
    for (i = 0; !*free_at && i < n; i++) {
        /* Expired (a tombstone too): no copy of it can come back. */
        if (slots[i].expires <= now) {
            *free_at = &slots[i];
        }
    }
    return NULL;
}

aura_control_merge_e aura_control_merge(const aura_control_t *c,
                                        apr_time_t now,
                                        aura_control_t *before)
{
    aura_control_t *slots, *at, *free_at;
    apr_uint64_t n;
    aura_control_shm_t *t = aura_shm_control(&slots, &n);
    aura_control_merge_e what;

    if (before) {
        memset(before, 0, sizeof(*before));
    }
    if (!t || lock() != APR_SUCCESS) {
        return AURA_CONTROL_FULL;
    }
    at = slot_of(slots, n, c->id, now, &free_at);
    if (at && before) {
        *before = *at;
    }
    if (at && !aura_control_newer(c, at)) {
        what = AURA_CONTROL_KEPT;
    }
    else if (c->expires <= now) {
        what = AURA_CONTROL_EXPIRED;
    }
    else if (!at && !free_at) {
        what = AURA_CONTROL_FULL;
    }
    else {
        what = at ? AURA_CONTROL_REPLACED : AURA_CONTROL_ADDED;
        *(at ? at : free_at) = *c;
        apr_atomic_inc64(&t->generation);
    }
    apr_global_mutex_unlock(control_mutex);
    return what;
}

apr_status_t aura_control_find(const char *id, aura_control_t *out)
{
    aura_control_t *slots;
    apr_uint64_t n, i;
    apr_status_t rv = APR_NOTFOUND;

    if (!aura_shm_control(&slots, &n) || lock() != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    for (i = 0; i < n; i++) {
        if (slots[i].kind != AURA_CONTROL_FREE
            && !strcmp(slots[i].id, id)) {
            *out = slots[i];
            rv = APR_SUCCESS;
            break;
        }
    }
    apr_global_mutex_unlock(control_mutex);
    return rv;
}

apr_array_header_t *aura_control_list(apr_pool_t *p)
{
    aura_control_t *slots;
    apr_uint64_t n, i;
    apr_array_header_t *a = apr_array_make(p, 8, sizeof(aura_control_t));

    if (!aura_shm_control(&slots, &n) || lock() != APR_SUCCESS) {
        return a;
    }
    for (i = 0; i < n; i++) {
        if (slots[i].kind != AURA_CONTROL_FREE) {
            APR_ARRAY_PUSH(a, aura_control_t) = slots[i];
        }
    }
    apr_global_mutex_unlock(control_mutex);
    return a;
}

void aura_control_log_full(server_rec *s, const aura_control_t *c)
{
    aura_control_t *slots;
    apr_uint64_t n, last, sec = (apr_uint64_t)apr_time_sec(apr_time_now());
    aura_control_shm_t *t = aura_shm_control(&slots, &n);

    if (!t) {
        return;
    }
    last = apr_atomic_read64(&t->full_logged);
    if (last == sec || apr_atomic_cas64(&t->full_logged, sec, last) != last) {
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(02202)
                 "incident controls: the table is full (AuraControlSlots "
                 "%" APR_UINT64_T_FMT ", none expired): %s %s not kept",
                 n, aura_control_kind_name((int)c->kind), c->target);
}

/* ---- the child's copy ----------------------------------------------- */

static int service_index(const char *name)
{
    int i;

    for (i = 0; i < AURA_SVC_COUNT; i++) {
        if (!strcmp(aura_service_names[i], name)) {
            return i;
        }
    }
    return -1;
}

static void compile(entry_t *e, const aura_control_t *c)
{
    /* Every field: the entry held another control before. */
    memset(e, 0, sizeof(*e));
    e->rec = *c;
    e->service = -1;
    if (c->kind == AURA_CONTROL_BLOCK
        && aura_control_block_of(c->target) == AURA_BLOCK_ADDR) {
        aura_control_net_parse(c->target + 5, &e->net);
    }
    else if (c->kind == AURA_CONTROL_DRAIN
             || c->kind == AURA_CONTROL_BREAKER) {
        e->service = service_index(c->target);
    }
}

/* Make the copy again from the table: the controls in force now (those
 * that expire later still match until then, checked at each match). */
static void refresh(aura_control_shm_t *t, aura_control_t *slots,
                    apr_uint64_t n)
{
    apr_time_t now = apr_time_now();
    apr_uint64_t i, g, count = 0;

    pthread_rwlock_wrlock(&snap_lock);
    g = apr_atomic_read64(&t->generation);
    if (g + 1 != apr_atomic_read64(&snap_gen)
        && lock() == APR_SUCCESS) {
        g = apr_atomic_read64(&t->generation);
        aura_revoke_index_clear(revokes);
        for (i = 0; i < n && count < snap_cap; i++) {
            if (!aura_control_active(&slots[i], now)) {
                continue;
            }
            if (slots[i].kind == AURA_CONTROL_REVOKE) {
                aura_revoke_index_add(revokes, slots[i].target,
                                      apr_atoi64(slots[i].value),
                                      slots[i].expires);
            }
            else {
                compile(&snap[count++], &slots[i]);
            }
        }
        apr_global_mutex_unlock(control_mutex);
        apr_atomic_set32(&rcount,
                         (apr_uint32_t)aura_revoke_index_count(revokes));
        apr_atomic_set32(&snap_count, (apr_uint32_t)count);
        apr_atomic_set64(&snap_gen, g + 1);
    }
    pthread_rwlock_unlock(&snap_lock);
}

/* Make the child's copy current: one atomic read of each generation
 * when it is.  0 without a table. */
static int current(void)
{
    aura_control_t *slots;
    apr_uint64_t n;
    aura_control_shm_t *t = aura_shm_control(&slots, &n);

    if (!t || !snap) {
        return 0;
    }
    if (apr_atomic_read64(&t->generation) + 1
        != apr_atomic_read64(&snap_gen)) {
        refresh(t, slots, n);
    }
    return 1;
}

/* How many controls the child's copy holds, once it is current: the
 * fast path of every request. */
static apr_uint32_t in_force(void)
{
    return current() ? apr_atomic_read32(&snap_count) : 0;
}

int aura_control_revocations(void)
{
    return current() && apr_atomic_read32(&rcount) > 0;
}

int aura_control_revoked(apr_pool_t *p, const char *scope,
                         const char *sub, const char *sid, const char *jti,
                         apr_int64_t iat)
{
    int what;

    if (!aura_control_revocations()) {
        return 0;
    }
    pthread_rwlock_rdlock(&snap_lock);
    what = (int)aura_revoke_match(revokes, p, scope, sub, sid, jti, iat,
                                  apr_time_now());
    pthread_rwlock_unlock(&snap_lock);
    return what;
}

/* ---- the checks ----------------------------------------------------- */

/* Seconds until t, at least 1. */
static const char *seconds_until(request_rec *r, apr_time_t t,
                                 apr_time_t now)
{
    apr_time_t s = (t - now + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC;

    return apr_psprintf(r->pool, "%" APR_TIME_T_FMT, s < 1 ? 1 : s);
}

static int refuse_blocked(request_rec *r, const entry_t *e)
{
    aura_problem_note(r, "blocked", apr_psprintf(
        r->pool, "refused by an incident control until %s",
        ap_ht_time(r->pool, e->rec.expires, "%Y-%m-%dT%H:%M:%SZ", 1)));
    return HTTP_FORBIDDEN;
}

static int refuse_503(request_rec *r, const entry_t *e, apr_time_t now,
                      const char *type, const char *detail)
{
    const char *retry = e->rec.kind == AURA_CONTROL_MAINTENANCE
                        && *e->rec.value
                        ? e->rec.value
                        : seconds_until(r, e->rec.expires, now);

    apr_table_setn(r->err_headers_out, "Retry-After", retry);
    aura_problem_note(r, type, detail);
    return HTTP_SERVICE_UNAVAILABLE;
}

/* Whether the request is for the console's own Location (SetHandler
 * aura-console): never refused by a control. */
static int for_console(request_rec *r)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    const char *err = NULL, *h;

    if (!d || !d->expr_handler) {
        return 0;
    }
    h = ap_expr_str_exec(r, d->expr_handler, &err);
    return !err && h && !strcmp(h, AURA_HANDLER_CONSOLE);
}

static int addr_of(request_rec *r, int *family, const unsigned char **a)
{
    apr_sockaddr_t *sa = r->useragent_addr ? r->useragent_addr
                                           : r->connection->client_addr;

    if (!sa) {
        return 0;
    }
    *family = sa->family == APR_INET ? 4 : 6;
#if APR_HAVE_IPV6
    if (sa->family != APR_INET && sa->family != APR_INET6) {
        return 0;
    }
#else
    if (sa->family != APR_INET) {
        return 0;
    }
#endif
    *a = sa->ipaddr_ptr;
    return 1;
}

/* The control that refuses r before any credential is read, by
 * priority: an address block (who it is), then a maintenance (the
 * Location), then a drain (the service).  NULL: none. */
static const entry_t *early_match(request_rec *r, apr_time_t now)
{
    const entry_t *block = NULL, *maint = NULL, *drain = NULL;
    int family = 0, service = aura_dir_conf(r)->service;
    const unsigned char *addr = NULL;
    int has_addr = addr_of(r, &family, &addr);
    apr_uint32_t i, n = apr_atomic_read32(&snap_count);

    for (i = 0; i < n && !block; i++) {
        const entry_t *e = &snap[i];

        if (e->rec.expires <= now) {
            continue;
        }
        switch (e->rec.kind) {
        case AURA_CONTROL_BLOCK:
            if (has_addr && e->net.family
                && aura_control_net_match(&e->net, family, addr)) {
                block = e;
            }
            break;
        case AURA_CONTROL_MAINTENANCE:
            if (!maint && aura_control_path_match(e->rec.target, r->uri)) {
                maint = e;
            }
            break;
        case AURA_CONTROL_DRAIN:
            if (!drain && service >= 0 && e->service == service) {
                drain = e;
            }
            break;
        default:
            break;
        }
    }
    return block ? block : maint ? maint : drain;
}

/* access_checker_ex, before the planes' (mod_aura_data's and
 * mod_aura_mgmt's), so before the per-address limit.  Why before it: a
 * blocked address must hear 403 (not 429) and cost no limiter slot; a
 * Location in maintenance answers every client the same 503 with the
 * same Retry-After, and its refusals, which cost less than the limiter's
 * shared-memory update, must not spend the clients' rate budget for
 * when it reopens. */
static int control_check_access(request_rec *r)
{
    const entry_t *e;
    apr_time_t now;
    int rc = DECLINED;

    if (!aura_request_get(r) || !ap_is_initial_req(r)
        || aura_request_h2c(r) || !in_force() || for_console(r)) {
        return DECLINED;
    }
    now = apr_time_now();
    pthread_rwlock_rdlock(&snap_lock);
    e = early_match(r, now);
    if (e && e->rec.kind == AURA_CONTROL_BLOCK) {
        rc = refuse_blocked(r, e);
    }
    else if (e && e->rec.kind == AURA_CONTROL_MAINTENANCE) {
        rc = refuse_503(r, e, now, "maintenance", apr_pstrcat(
            r->pool, e->rec.target, " is in maintenance", NULL));
    }
    else if (e) {
        rc = refuse_503(r, e, now, "draining", apr_pstrcat(
            r->pool, "the service ", e->rec.target,
            " is draining: it takes no new requests", NULL));
    }
    pthread_rwlock_unlock(&snap_lock);
    return rc;
}

/* The block of this kind and target in force, copied into out. */
static int blocked(const char *target, apr_time_t now, entry_t *out)
{
    apr_uint32_t i, n;
    int found = 0;

    if (!in_force()) {
        return 0;
    }
    pthread_rwlock_rdlock(&snap_lock);
    n = apr_atomic_read32(&snap_count);
    for (i = 0; i < n && !found; i++) {
        if (snap[i].rec.kind == AURA_CONTROL_BLOCK
            && snap[i].rec.expires > now
            && !strcmp(snap[i].rec.target, target)) {
            *out = snap[i];
            found = 1;
        }
    }
    pthread_rwlock_unlock(&snap_lock);
    return found;
}

AURA_DECLARE(int) aura_control_key(request_rec *r, const char *key)
{
    char hash[65];
    entry_t e;

    if (!in_force()) {
        return OK;
    }
    /* The key's actor, as the logs name it (key:<hash prefix>): hashed
     * here only while some control is in force. */
    aura_apikey_hash(key, hash);
    hash[AURA_KEY_ACTOR_HEX] = '\0';
    if (!blocked(apr_pstrcat(r->pool, AURA_KEY_ACTOR_PREFIX, hash, NULL),
                 apr_time_now(), &e)) {
        return OK;
    }
    return refuse_blocked(r, &e);
}

int aura_control_blocked(const char *target, apr_time_t now)
{
    entry_t e;

    return target && blocked(target, now, &e);
}

int aura_control_actor(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);
    entry_t e;

    if (!rq || !rq->actor || !in_force()
        || !blocked(apr_pstrcat(r->pool, "actor:", rq->actor, NULL),
                    apr_time_now(), &e)) {
        return OK;
    }
    return refuse_blocked(r, &e);
}

int aura_control_breaker(int service, apr_time_t *until)
{
    apr_time_t now;
    apr_uint32_t i, n;
    int forced = -1;

    if (service < 0 || !in_force()) {
        return -1;
    }
    now = apr_time_now();
    pthread_rwlock_rdlock(&snap_lock);
    n = apr_atomic_read32(&snap_count);
    for (i = 0; i < n && forced < 0; i++) {
        if (snap[i].rec.kind == AURA_CONTROL_BREAKER
            && snap[i].service == service && snap[i].rec.expires > now) {
            forced = !strcmp(snap[i].rec.value, "open");
            *until = snap[i].rec.expires;
        }
    }
    pthread_rwlock_unlock(&snap_lock);
    return forced;
}

/* The value of the control of this kind and target in force, into
 * value (AURA_CONTROL_VALUE_MAX + 1 bytes): 1 when there is one. */
static int value_of(int kind, const char *target, char *value)
{
    apr_time_t now;
    apr_uint32_t i, n;
    int found = 0;

    if (!in_force()) {
        return 0;
    }
    now = apr_time_now();
    pthread_rwlock_rdlock(&snap_lock);
    n = apr_atomic_read32(&snap_count);
    for (i = 0; i < n && !found; i++) {
        if ((int)snap[i].rec.kind == kind && snap[i].rec.expires > now
            && !strcmp(snap[i].rec.target, target)) {
            strcpy(value, snap[i].rec.value);
            found = 1;
        }
    }
    pthread_rwlock_unlock(&snap_lock);
    return found;
}

int aura_control_rate(const char *zone, apr_uint64_t *rate,
                      apr_uint64_t *period_s)
{
    char v[AURA_CONTROL_VALUE_MAX + 1];

    return value_of(AURA_CONTROL_RATE, zone, v)
           && aura_control_rate_value(v, rate, period_s) == APR_SUCCESS;
}

int aura_control_quota(const char *plan, apr_int64_t *limit)
{
    char v[AURA_CONTROL_VALUE_MAX + 1];

    if (!plan || !value_of(AURA_CONTROL_QUOTA, plan, v)) {
        return 0;
    }
    *limit = (apr_int64_t)apr_atoi64(v);
    return 1;
}

void aura_control_register(void)
{
    /* Before the planes' checks (both FIRST too). */
    static const char *const planes[] = {
        "mod_aura_data.c", "mod_aura_mgmt.c", NULL
    };

    ap_hook_check_access_ex(control_check_access, NULL, planes,
                            APR_HOOK_FIRST, AP_AUTH_INTERNAL_PER_CONF);
}
