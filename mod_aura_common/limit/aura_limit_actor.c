/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_limit_actor.c: stage 2 of rate limiting, the product quota of an
 * authenticated actor (an API key, or the user of a bearer token),
 * after authentication (DESIGN.md section 2).
 *
 * Shared by every gateway instance through one Lua script in Redis
 * (aura_redis.c), a sliding-window counter.  Redis sits behind a breaker
 * in the shared segment: after a failure every child decides locally,
 * from the instance's records of aura_quota_share.h, with this instance's
 * share of what Redis had not yet counted in the window (limit minus
 * the count Redis last gave, / AuraInstances), until
 * AuraRedisRetryInterval has passed and one probe finds Redis answering
 * again; the first call of an actor then hands its local admissions
 * over to Redis.  An outage thus neither opens the gates nor locks
 * everyone out, nor lets the windows of the failure and of the return
 * admit more than the limit (up to the tolerance in
 * docs/rate-limits.md), and the switch is logged once each way, not per
 * request.
 *
 * Leases.  A round trip to Redis per request was most of what the whole
 * policy cost (a context switch each way, and Redis's CPU).  For a
 * quota of at least 2000 requests per window, a child asks the script
 * for a lease of up to lease_size() requests at once (1/1000 of the
 * limit, at most LEASE_MAX) and admits the rest of it locally, for at
 * most LEASE_TTL and never past the end of Redis's window.  The leased requests are counted in Redis when granted, so
 * nothing is ever admitted beyond the limit; what a child leased and did
 * not use in time is counted without having run, i.e. an actor far
 * below its limit may be charged up to lease_size() - 1 requests more
 * per child and LEASE_TTL, and one near its limit uses its leases up
 * long before they expire.  Quotas under 2000 per window are asked
 * request by request, exactly as before.  Leases live in a small table
 * per child (LEASE_SLOTS entries, direct-mapped by a keyed hash of the
 * actor and quota, one mutex): a collision only ends a lease early.
 */
#include "core/aura_clock.h"
#include "core/aura_module.h"
#include "control/aura_control.h"
#include "core/aura_config.h"
#include "limit/aura_limit.h"
#include "limit/aura_limit_conf.h"
#include "limit/aura_quota_share.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_breaker_fsm.h"
#include "shm/aura_shm.h"
#include "store/aura_redis.h"
#include "trace/aura_tracing.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include <pthread.h>

#define NS_PER_MS APR_UINT64_C(1000000)

#define LEASE_PER_MILLE 1000                    /* limit / this */
#define LEASE_MAX       100
#define LEASE_TTL_NS    (1000 * NS_PER_MS)
#define LEASE_SLOTS     256                     /* a power of two */
/* An anonymous refusal is logged at most once per this many seconds. */
#define ANON_LOG_INTERVAL 60
/* Longest "d:<project>:<actor>" a quota key takes: room for the tag
 * ("lease", "actor"), the NULs and the quota's 16 bytes within
 * AURA_LIMITER_KEY_MAX. */
#define QUOTA_ID_MAX    (AURA_LIMITER_KEY_MAX - 32)

typedef struct {
    apr_uint64_t key;           /* 0: free */
    apr_uint64_t expires_ns;    /* aura_clock_ns() */
    apr_uint64_t reset_ns;      /* when Redis's window ends */
    apr_int64_t left;           /* leased requests not yet admitted */
    apr_int64_t remaining;      /* Redis's remaining after the grant */
} lease_t;

/* Per child, like its Redis connections; under lease_lock. */
static pthread_mutex_t lease_lock = PTHREAD_MUTEX_INITIALIZER;
static lease_t leases[LEASE_SLOTS];

/* Written in post_config only. */
static aura_breaker_conf_t redis_breaker;

apr_status_t aura_quota_post_config(apr_pool_t *pconf, server_rec *s)
{
    apr_interval_time_t retry = aura_conf_redis_retry(aura_server_conf(s));

    (void)pconf;
    /* One failed call is enough evidence: each one costs an
     * authenticated request up to AuraRedisTimeout. */
    return aura_breaker_conf_init(&redis_breaker, 1,
                                  (apr_uint32_t)apr_time_as_msec(retry), 1);
}

static const aura_quota_t *pick_quota(const aura_dir_conf_t *d,
                                      const char *plan)
{
    const aura_quota_t *q = NULL;

    if (d->quota == &aura_quota_off) {
        return NULL;
    }
    if (plan && d->plan_quotas) {
        q = apr_hash_get(d->plan_quotas, plan, APR_HASH_KEY_STRING);
    }
    return q ? q : d->quota;
}

static void redis_state_change(request_rec *r, int down, apr_status_t rv)
{
    volatile apr_uint64_t *flag = aura_shm_flag(AURA_FLAG_REDIS_DOWN);
    const aura_server_conf_t *c = aura_server_conf(r->server);
    int instances = aura_conf_instances(c);

    if (down && apr_atomic_cas64(flag, 1, 0) == 0) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r, AURA_LOGNO(00082)
                      "Redis %s:%d unreachable: actor quotas are enforced "
                      "locally, each instance allowing 1/%d of the limit, "
                      "until Redis answers again", c->redis_host,
                      c->redis_port, instances);
    }
    else if (!down && apr_atomic_read64(flag)
             && apr_atomic_cas64(flag, 0, 1) == 1) {
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, AURA_LOGNO(00083)
                      "Redis %s:%d answers again: actor quotas are shared "
                      "across instances", c->redis_host, c->redis_port);
    }
}

static apr_uint32_t now_ms(void)
{
    return (apr_uint32_t)(aura_clock_ns() / NS_PER_MS);
}

/* The keyed hash of an actor under a quota, for a table of tag's: the
 * quota is part of the key, so that one actor under two quotas has two
 * entries, not one with two rates.  Odd (never 0, a free lease slot) on
 * success; 0 when the id is too long for a key (aura_limit_actor()
 * refuses such ids first, so 0 is a bug caught, not a path). */
static apr_uint64_t quota_key(const char *tag, const char *id,
                              const aura_quota_t *q)
{
    apr_int64_t quota[2];
    apr_uint64_t key;

    quota[0] = q->limit;
    quota[1] = q->window_s;
    key = aura_limiter_key(tag, id, (const unsigned char *)quota,
                           sizeof(quota));
    return key ? key | 1 : 0;
}

static apr_int64_t lease_size(const aura_quota_t *q)
{
    apr_int64_t n = q->limit / LEASE_PER_MILLE;

    return n < 1 ? 1 : n > LEASE_MAX ? LEASE_MAX : n;
}

/* One request from a lease of key's, if one is left and valid. */
static int lease_take(apr_uint64_t key, const aura_quota_t *q,
                      aura_quota_result_t *out)
{
    lease_t *l = &leases[key & (LEASE_SLOTS - 1)];
    apr_uint64_t now = aura_clock_ns();
    int taken = 0;

    pthread_mutex_lock(&lease_lock);
    if (l->key == key && l->left > 0 && now < l->expires_ns) {
        l->left--;
        memset(out, 0, sizeof(*out));
        out->admitted = 1;
        out->granted = 1;
        out->limit = q->limit;
        out->remaining = l->remaining + l->left;
        out->reset_ms = (apr_int64_t)((l->reset_ns - now) / NS_PER_MS);
        taken = 1;
    }
    pthread_mutex_unlock(&lease_lock);
    return taken;
}

/* Keeps what Redis granted beyond this request. */
static void lease_keep(apr_uint64_t key, const aura_quota_result_t *res)
{
    lease_t *l = &leases[key & (LEASE_SLOTS - 1)];
    apr_uint64_t now = aura_clock_ns();
    apr_uint64_t reset = now + (apr_uint64_t)res->reset_ms * NS_PER_MS;

    if (res->granted < 2) {
        return;
    }
    pthread_mutex_lock(&lease_lock);
    l->key = key;
    l->left = res->granted - 1;
    l->remaining = res->remaining;
    l->reset_ns = reset;
    l->expires_ns = now + LEASE_TTL_NS < reset ? now + LEASE_TTL_NS : reset;
    pthread_mutex_unlock(&lease_lock);
}

static apr_int64_t instances_of(const request_rec *r)
{
    const aura_server_conf_t *c = aura_server_conf(r->server);

    return aura_conf_instances(c);
}

/* The number of the quota's current window, as the script numbers
 * them (ms since the epoch / window ms), and *reset_ms until it ends. */
static apr_uint64_t window_now(const aura_quota_t *q, apr_int64_t *reset_ms)
{
    apr_uint64_t now = (apr_uint64_t)apr_time_as_msec(apr_time_now());
    apr_uint64_t w = (apr_uint64_t)q->window_s * 1000;

    if (reset_ms) {
        *reset_ms = (apr_int64_t)(w - now % w);
    }
    return now / w;
}

/* The actor's record in this instance's fallback table, found or taken
 * (kept for two windows: the current one and the hand-over of it in the
 * next); NULL when there is no table or its set is full, *full then
 * says which. */
static aura_fallback_slot_t *fallback_record(const char *id,
                                             const aura_quota_t *q,
                                             int *full)
{
    aura_fallback_slot_t *slots, *slot;
    apr_uint64_t sets, key;

    *full = 0;
    if (!aura_shm_actor_table(&slots, &sets)
        || !(key = quota_key("actor", id, q))) {
        return NULL;
    }
    slot = aura_fallback_slot(slots, sets, key, aura_clock_ns(),
                              2 * (apr_uint64_t)q->window_s
                              * APR_UINT64_C(1000000000));
    *full = slot == NULL;
    return slot;
}

/* Whether the Redis breaker lets this call out (g: its grant).  The
 * probe is recorded with this process: one lost with a child killed
 * mid-call is taken over by the next call (issue #16), not left
 * half-open for good. */
static int redis_call_allowed(request_rec *r, volatile apr_uint64_t *word,
                              volatile apr_uint64_t *holders,
                              aura_breaker_grant_t *g)
{
    aura_breaker_who_t who;

    aura_breaker_who(&who, aura_redis_call_max());
    aura_breaker_acquire_held(word, holders, &redis_breaker, now_ms(), &who,
                              g);
    if (g->took_over) {
        aura_count(AURA_CTR_BREAKER_PROBE_RECOVERED);
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(01206)
                      "Redis breaker: the probe held by process %u was "
                      "lost (the process is gone, or the probe outlived "
                      "its call); this call is the probe now", g->lost_pid);
    }
    return g->ticket != AURA_BRK_DENY;
}

/* One call of the quota script for id, handing over what this instance
 * admitted locally since Redis last answered (aura_quota_share.h); the
 * answer is kept in the actor's record, the count a fallback starts
 * from. */
static apr_status_t ask_redis(request_rec *r, const char *id,
                              const aura_quota_t *q, apr_int64_t want,
                              aura_quota_result_t *out)
{
    aura_quota_handover_t h;
    aura_fallback_slot_t *rec;
    apr_status_t rv;
    int full;

    memset(&h, 0, sizeof(h));
    rec = fallback_record(id, q, &full);
    if (rec) {
        h.count = aura_fallback_claim(rec, window_now(q, NULL), &h.window);
        h.seen = h.count ? aura_fallback_seen_count(rec, h.window) : 0;
        h.instances = instances_of(r);
    }
    /* The hash tag keeps both windows of an actor in one cluster slot;
     * the window length is part of the key because the script numbers
     * windows by it. */
    rv = aura_redis_quota(r, apr_psprintf(r->pool, "aura:q:{%s}:%"
                                          APR_INT64_T_FMT, id, q->window_s),
                          q->limit, q->window_s * 1000, want,
                          h.count ? &h : NULL, out);
    if (h.count) {
        /* A failed call may still have counted them (a timeout after the
         * script ran): they stay unreported, counted twice rather than
         * never. */
        aura_fallback_settle(rec, h.window, h.count, rv == APR_SUCCESS);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (rec) {
        aura_fallback_seen(rec, out->window, out->count);
    }
    if (h.count) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(01100)
                      "actor %s: %" APR_INT64_T_FMT " requests admitted "
                      "locally in window %" APR_UINT64_T_FMT " handed "
                      "over to Redis, which counts %" APR_INT64_T_FMT
                      " in window %" APR_UINT64_T_FMT, id, h.count,
                      h.window, out->count, out->window);
    }
    return APR_SUCCESS;
}

/* APR_SUCCESS when Redis decided (or a lease this child holds did);
 * otherwise the caller falls back.  Every call's outcome feeds the
 * Redis breaker. */
static apr_status_t decide_redis(request_rec *r, const char *id,
                                 const aura_quota_t *q,
                                 aura_quota_result_t *out)
{
    volatile apr_uint64_t *word = aura_shm_breaker(AURA_BREAKER_REDIS);
    volatile apr_uint64_t *holders =
        aura_shm_breaker_holders(AURA_BREAKER_REDIS);
    apr_int64_t want = lease_size(q);
    apr_uint64_t key = 0;
    aura_breaker_grant_t g;
    apr_status_t rv;

    if (!aura_redis_configured() || !word) {
        return APR_ENOTIMPL;
    }
    if (want > 1) {
        key = quota_key("lease", id, q);
        if (key && lease_take(key, q, out)) {
            aura_count(AURA_CTR_ACTOR_LEASE);
            return APR_SUCCESS;
        }
    }
    if (!redis_call_allowed(r, word, holders, &g)) {
        return APR_EAGAIN;
    }
    rv = ask_redis(r, id, q, want, out);
    if (rv == APR_SUCCESS) {
        if (key) {
            lease_keep(key, out);
        }
        aura_breaker_verdict_held(word, holders, &redis_breaker, &g, 1,
                                  now_ms());
        redis_state_change(r, 0, rv);
        aura_count(AURA_CTR_ACTOR_REDIS);
        return APR_SUCCESS;
    }
    aura_count(AURA_CTR_REDIS_ERRORS);
    if (aura_breaker_verdict_held(word, holders, &redis_breaker, &g, 0,
                                  now_ms()) == AURA_BRK_TO_OPEN) {
        redis_state_change(r, 1, rv);
    }
    return rv;
}

/* This instance's budget in the current window (aura_quota_share.h): its
 * share of what Redis had not yet counted when last asked, fixed
 * windows aligned as Redis's. */
static void decide_local(request_rec *r, const char *id,
                         const aura_quota_t *q, aura_quota_result_t *out)
{
    apr_int64_t instances = instances_of(r), reset_ms;
    apr_uint64_t window = window_now(q, &reset_ms);
    aura_fallback_result_t res;
    aura_fallback_slot_t *rec;
    int full;

    aura_count(AURA_CTR_ACTOR_FALLBACK);
    memset(out, 0, sizeof(*out));
    out->admitted = 1;
    out->limit = aura_fallback_budget(q->limit, instances, 0);
    out->remaining = out->limit;
    out->reset_ms = reset_ms;
    if (!(rec = fallback_record(id, q, &full))) {
        if (full) {
            /* No record: admitted, and the whole share is what it
             * knows. */
            aura_limiter_full(r, AURA_TABLE_ACTOR);
        }
        else if (!quota_key("actor", id, q)) {
            /* Unreachable (see aura_limit_actor()): refused, not
             * shared. */
            out->admitted = 0;
            out->retry_after_ms = 1000;
        }
        return;
    }
    aura_fallback_take(rec, q->limit, instances, window, &res);
    out->admitted = res.admitted;
    out->remaining = res.budget - res.used;
    out->retry_after_ms = res.admitted ? 0 : reset_ms;
}

/* An anonymous visitor refused (the anon key without a user token):
 * counted apart, since with AuraAnonQuotaPer address a run of these is
 * one address spending its own share, and with key, every visitor of a
 * project locked out by whoever spent it; one line a minute names the
 * latest, never a line per request. */
static void anon_refused(request_rec *r, const char *id,
                         const aura_quota_result_t *res,
                         const aura_quota_t *q)
{
    volatile apr_uint64_t *last = aura_shm_flag(AURA_FLAG_ANON_LOGGED);

    aura_count(AURA_CTR_ANON_REJECTED);
    if (!last || !aura_log_due(last, ANON_LOG_INTERVAL)) {
        return;
    }
    ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, AURA_LOGNO(01422)
                  "anonymous requests from %s refused: quota %s used up "
                  "(%" APR_INT64_T_FMT " per %" APR_INT64_T_FMT " s; "
                  "logged once a minute)", r->useragent_ip, id, res->limit,
                  q->window_s);
}

static int limit_actor(request_rec *r, const char *id)
{
    aura_request_t *rq = aura_request_get(r);
    const aura_quota_t *q;
    aura_quota_t lowered;
    aura_quota_result_t res;
    apr_int64_t low;

    /* The id is the plane's: what one actor is (a key or a user within
     * its project, a console user) is its policy, not this limiter's. */
    if (!rq || !id || !(q = pick_quota(aura_dir_conf(r), rq->plan))) {
        return OK;
    }
    /* An incident control may lower the plan's quota for a while: the
     * same window (the same count in Redis), a smaller limit; never a
     * larger one. */
    if (aura_control_quota(rq->plan, &low) && low < q->limit) {
        lowered = *q;
        lowered.limit = low;
        q = &lowered;
    }
    /* Identity is bounded where it enters (AURA_SUB_MAX, AURA_ID_MAX),
     * far below a limiter key; should a longer one ever get here, it is
     * refused, never cut (two actors would share a quota). */
    if (strlen(id) > QUOTA_ID_MAX) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00302)
                      "actor id of %" APR_SIZE_T_FMT " bytes is too long "
                      "for a quota key: request refused", strlen(id));
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (decide_redis(r, id, q, &res) != APR_SUCCESS) {
        decide_local(r, id, q, &res);
    }
    aura_limit_header(r, "RateLimit-Policy", "actor", 'q',
                      (apr_uint64_t)res.limit, 'w', (apr_uint64_t)q->window_s);
    if (res.admitted) {
        aura_limit_header(r, "RateLimit", "actor", 'r',
                          (apr_uint64_t)(res.remaining > 0 ? res.remaining
                                                           : 0),
                          't', aura_ceil_div((apr_uint64_t)(res.reset_ms > 0
                                                            ? res.reset_ms
                                                            : 0), 1000));
        return OK;
    }
    aura_count(AURA_CTR_ACTOR_REJECTED);
    if (rq->role && !strcmp(rq->role, "anon")) {
        anon_refused(r, id, &res, q);
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00084)
                  "actor %s over its quota of %" APR_INT64_T_FMT " per %"
                  APR_INT64_T_FMT " s", rq->actor, res.limit, q->window_s);
    return aura_limit_refuse(r, "actor-quota", "actor",
                  aura_ceil_div((apr_uint64_t)(res.retry_after_ms > 0
                                          ? res.retry_after_ms : 1), 1000),
                  "the quota of this key or user is used up");
}

/* The stage as the server span's child "aura.limit.actor"; none when
 * nothing authenticated (no id): there was no quota to ask. */
AURA_DECLARE(int) aura_limit_actor(request_rec *r, const char *id)
{
    int span = id ? aura_tracing_stage(r, "aura.limit.actor") : -1;
    int rc = limit_actor(r, id);

    aura_tracing_stage_end(r, span, rc);
    return rc;
}
