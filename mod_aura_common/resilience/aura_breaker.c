/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_breaker.c: the per-service circuit breakers (DESIGN.md section 4)
 * in the shared segment, so that every child acts on the same evidence,
 * and the hand-out of their tickets to requests.
 *
 * A proxy asks aura_breaker_enter() right before it contacts the
 * upstream, and gives its verdict with aura_breaker_verdict() once it
 * knows the outcome (the table of DESIGN.md section 8).  A ticket that
 * never gets a verdict (the client went away, the handler gave up for a
 * reason that says nothing about the service) is handed back by a
 * cleanup of the request pool: a half-open breaker's probe is never
 * lost while its process lives.  A probe lost with its process (a child
 * killed or crashed mid-request) is found by the next request that finds
 * half-open full: each probe records its holder (pid, deadline) beside
 * the breaker word, and a holder that is dead (kill(pid, 0): ESRCH) or
 * past the route's budget plus a margin (aura_breaker_who()) loses its
 * probe to that request (aura_breaker_fsm.h).  A verdict counts only in the period of
 * the breaker it was admitted in: late answers of requests admitted
 * before the last transition are no evidence about the new period.
 * State changes are logged by the one request whose compare-and-swap
 * made them, so once across all children.
 *
 * Dedicated PostgREST targets do not share a failure domain: each has a
 * breaker of its own (settings: AuraBreaker postgrest ...), in a table
 * of the shared segment filled on first use (aura_gcra_table.c's keyed hash
 * picks the slot, linear probing over PROBE_RUN slots).  A mod_watchdog
 * callback frees the entries of targets idle for AuraTargetSweepInterval
 * whose breaker is closed, so the table holds the targets in use, not
 * every target ever seen.  When no slot is free the request goes on
 * without a breaker for its target (counted, logged once a minute):
 * degraded, never refused and never blocking.
 */
#include "core/aura_clock.h"
#include "core/aura_module.h"
#include "core/aura_watchdog.h"
#include "core/aura_config.h"
#include "control/aura_control.h"
#include "limit/aura_limit.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_breaker_fsm.h"
#include "resilience/aura_resilience_conf.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"
#include "store/aura_redis.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include <jansson.h>

#define NS_PER_MS APR_UINT64_C(1000000)
#define PROBE_RUN AURA_TARGET_PROBE_RUN
#define SWEEP_WATCHDOG "aura-target-sweep"

/* Written in post_config only: the effective settings per service, and
 * at [AURA_SVC_COUNT] those of the dedicated PostgREST targets. */
static aura_breaker_conf_t confs[AURA_SVC_COUNT + 1];
/* "service <name>", as log lines and problems name a service's breaker:
 * made once, not on every request that enters it. */
static const char *service_what[AURA_SVC_COUNT];
static apr_interval_time_t sweep_interval;

struct aura_breaker_hold_t {
    request_rec *r;
    volatile apr_uint64_t *word;
    volatile apr_uint64_t *holders;     /* its probe holder records */
    const aura_breaker_conf_t *conf;
    const char *what;           /* "service X" or "target Y", for logs */
    aura_breaker_grant_t grant; /* the ticket, its period and record */
    int done;
};

static volatile apr_uint64_t *service_word(int service)
{
    return aura_shm_breaker(1 + service);   /* 0 is Redis's */
}

static volatile apr_uint64_t *service_holders(int service)
{
    return aura_shm_breaker_holders(1 + service);
}

static apr_status_t conf_for(const apr_array_header_t *set, int svc,
                             aura_breaker_conf_t *c)
{
    apr_uint32_t threshold = AURA_DEFAULT_BREAKER_THRESHOLD;
    apr_uint32_t cooldown = AURA_DEFAULT_BREAKER_COOLDOWN_MS;
    apr_uint32_t probes = AURA_DEFAULT_BREAKER_PROBES;
    apr_uint32_t ttl = AURA_DEFAULT_BREAKER_PROBE_TTL_MS;
    int i;

    /* The lines that concern it ("*" or its name) apply in configuration
     * order, each setting only the fields it names: later lines win,
     * field by field. */
    for (i = 0; set && i < set->nelts; i++) {
        const aura_breaker_setting_t *b =
            &APR_ARRAY_IDX(set, i, aura_breaker_setting_t);

        if (b->service != -1 && b->service != svc) {
            continue;
        }
        threshold = b->threshold ? b->threshold : threshold;
        cooldown = b->cooldown_ms ? b->cooldown_ms : cooldown;
        probes = b->probes ? b->probes : probes;
        ttl = b->probe_ttl_ms ? b->probe_ttl_ms : ttl;
    }
    if (aura_breaker_conf_init(c, threshold, cooldown, probes)
        != APR_SUCCESS) {
        return APR_EINVAL;
    }
    c->probe_ttl_ms = ttl;
    return APR_SUCCESS;
}

static apr_status_t sweep_targets(int state, void *data, apr_pool_t *p);

static apr_status_t register_sweep(apr_pool_t *pconf, server_rec *s)
{
    /* One child at a time sweeps: the table is shared. */
    apr_status_t rv = aura_watchdog_every(pconf, s, SWEEP_WATCHDOG, 1,
                                          sweep_interval, sweep_targets);

    if (rv == APR_ENOTIMPL) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(00120)
                     "mod_watchdog is not available: idle entries of the "
                     "target breaker table are never swept, and once it "
                     "is full new targets go without a breaker");
    }
    else if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, AURA_LOGNO(00121)
                     "cannot register the target breaker sweep with "
                     "mod_watchdog");
    }
    return APR_SUCCESS;
}

apr_status_t aura_breaker_post_config(apr_pool_t *pconf, server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    int svc;

    for (svc = 0; svc <= AURA_SVC_COUNT; svc++) {
        if (conf_for(c->breakers, svc, &confs[svc]) != APR_SUCCESS) {
            return APR_EINVAL;
        }
        if (svc < AURA_SVC_COUNT) {
            service_what[svc] = apr_pstrcat(pconf, "service ",
                                            aura_service_names[svc], NULL);
        }
    }
    sweep_interval = aura_conf_target_sweep(c);
    return register_sweep(pconf, s);
}

static apr_uint32_t now_ms(void)
{
    return (apr_uint32_t)(aura_clock_ns() / NS_PER_MS);
}

static void log_change(aura_breaker_hold_t *h, aura_breaker_change_e change)
{
    switch (change) {
    case AURA_BRK_TO_OPEN:
        aura_count(AURA_CTR_BREAKER_OPENED);
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, h->r, AURA_LOGNO(00090)
                      "breaker of %s opened: requests to it are refused "
                      "for %u ms, then up to %u probes are let through",
                      h->what, h->conf->cooldown_ms, h->conf->probes);
        break;
    case AURA_BRK_TO_HALF_OPEN:
        aura_count(AURA_CTR_BREAKER_HALF_OPENED);
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, h->r, AURA_LOGNO(00091)
                      "breaker of %s half-open: probing", h->what);
        break;
    case AURA_BRK_TO_CLOSED:
        aura_count(AURA_CTR_BREAKER_CLOSED);
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, h->r, AURA_LOGNO(00092)
                      "breaker of %s closed: the probe succeeded", h->what);
        break;
    default:
        break;
    }
}

static apr_status_t hold_cleanup(void *data)
{
    aura_breaker_hold_t *h = data;

    if (!h->done) {
        h->done = 1;
        aura_breaker_release_held(h->word, h->holders, &h->grant);
    }
    return APR_SUCCESS;
}

static void log_took_over(aura_breaker_hold_t *h, apr_uint32_t now)
{
    aura_count(AURA_CTR_BREAKER_PROBE_RECOVERED);
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, h->r, AURA_LOGNO(01000)
                  "breaker of %s: the probe held by process %u was lost "
                  "(the process is gone, or the probe outlived its "
                  "budget); this request is the probe now (half-open "
                  "for %u ms)", h->what, h->grant.lost_pid,
                  now - h->grant.period);
}

/* The ticket of word for r: OK with *out, or 503 breaker-open. */
static int enter(request_rec *r, volatile apr_uint64_t *word,
                 volatile apr_uint64_t *holders,
                 const aura_breaker_conf_t *conf, const char *what,
                 aura_breaker_hold_t **out)
{
    aura_breaker_hold_t *h = apr_pcalloc(r->pool, sizeof(*h));
    aura_breaker_who_t who;
    apr_uint32_t now = now_ms(), retry_ms;

    h->r = r;
    h->word = word;
    h->holders = holders;
    h->conf = conf;
    h->what = what;
    aura_breaker_who(&who, aura_route_timeout(aura_dir_conf(r)));
    aura_breaker_acquire_held(word, holders, conf, now, &who, &h->grant);
    log_change(h, h->grant.change);
    if (h->grant.took_over) {
        log_took_over(h, now);
    }
    if (h->grant.ticket == AURA_BRK_DENY) {
        retry_ms = h->grant.retry_after_ms;
        aura_count(AURA_CTR_BREAKER_REJECTED);
        /* The real time left, in whole seconds rounded up (RFC 9110
         * has no fractions): the cooldown left when open, a second when
         * half-open with its probes out. */
        apr_table_setn(r->err_headers_out, "Retry-After",
                       apr_psprintf(r->pool, "%u",
                                    retry_ms ? (retry_ms + 999) / 1000 : 1));
        aura_problem_note(r, "breaker-open",
                          apr_psprintf(r->pool, "%s is failing; the gateway "
                                       "does not call it for now", what));
        return HTTP_SERVICE_UNAVAILABLE;
    }
    apr_pool_cleanup_register(r->pool, h, hold_cleanup,
                              apr_pool_cleanup_null);
    *out = h;
    return OK;
}

/* A breaker an incident control forces open: refused as if open, until
 * the control expires or is lifted.  (Forced closed: the caller goes
 * on without a ticket, so the breaker neither refuses nor learns.) */
static int forced_open(request_rec *r, int service, apr_time_t until)
{
    apr_time_t left = until - apr_time_now();

    aura_count(AURA_CTR_BREAKER_REJECTED);
    apr_table_setn(r->err_headers_out, "Retry-After",
                   apr_psprintf(r->pool, "%" APR_TIME_T_FMT,
                                left > 0 ? (left + APR_USEC_PER_SEC - 1)
                                           / APR_USEC_PER_SEC : 1));
    aura_problem_note(r, "breaker-open",
                      apr_psprintf(r->pool, "%s is held open by an "
                                   "incident control; the gateway does "
                                   "not call it for now",
                                   service_what[service]));
    return HTTP_SERVICE_UNAVAILABLE;
}

static int enter_service(request_rec *r, int service,
                         aura_breaker_hold_t **out)
{
    volatile apr_uint64_t *word;
    apr_time_t until = 0;

    *out = NULL;
    if (service < 0 || service >= AURA_SVC_COUNT
        || !(word = service_word(service))) {
        return OK;
    }
    switch (aura_control_breaker(service, &until)) {
    case 1:
        return forced_open(r, service, until);
    case 0:
        return OK;
    default:
        break;
    }
    return enter(r, word, service_holders(service), &confs[service],
                 service_what[service], out);
}

/* ---- dedicated PostgREST targets ------------------------------------ */

static void log_targets_full(request_rec *r, const char *target)
{
    volatile apr_uint64_t *last = aura_shm_flag(AURA_FLAG_TARGETS_LOGGED);

    if (aura_log_due(last, 60)) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00124)
                      "target breaker table full around %s: its requests "
                      "go without a breaker of their own (logged once a "
                      "minute)", target);
    }
}

static aura_target_slot_t *target_slot(request_rec *r, const char *target)
{
    apr_uint64_t n, home, key, i, now = now_ms();
    aura_target_slot_t *t = aura_shm_targets(&n);

    if (!t) {
        return NULL;
    }
    key = aura_limiter_key("target", target, NULL, 0);
    key = key ? key : 1;
    home = key & (n - 1);
    /* Its slot if it has one... */
    for (i = 0; i < PROBE_RUN; i++) {
        aura_target_slot_t *e = &t[(home + i) & (n - 1)];

        if (apr_atomic_read64(&e->key) == key) {
            apr_atomic_set64(&e->used, now);
            return e;
        }
    }
    /* ...else the first free one, claimed by compare-and-swap. */
    for (i = 0; i < PROBE_RUN; i++) {
        aura_target_slot_t *e = &t[(home + i) & (n - 1)];

        if (!apr_atomic_read64(&e->key)
            && apr_atomic_cas64(&e->key, key, 0) == 0) {
            int j;

            /* A new target: no period, no holder of the last one. */
            apr_atomic_set64(&e->word, 0);
            for (j = 0; j < AURA_BRK_HOLDERS; j++) {
                apr_atomic_set64(&e->holders[j], 0);
            }
            apr_atomic_set64(&e->used, now);
            apr_cpystrn(e->name, target, sizeof(e->name));
            return e;
        }
    }
    aura_count(AURA_CTR_TARGETS_FULL);
    log_targets_full(r, target);
    return NULL;
}

static int enter_target(request_rec *r, const char *target,
                        aura_breaker_hold_t **out)
{
    aura_target_slot_t *e = target_slot(r, target);

    *out = NULL;
    if (!e) {
        return OK;
    }
    return enter(r, &e->word, e->holders, &confs[AURA_SVC_COUNT],
                 apr_pstrcat(r->pool, "target ", target, NULL), out);
}

/* The one entry point, for the NATS and the HTTP path alike. */
int aura_breaker_enter(request_rec *r, int service, const char *target,
                       aura_breaker_hold_t **out)
{
    return target ? enter_target(r, target, out)
                  : enter_service(r, service, out);
}

/* mod_watchdog, one child at a time: entries idle for a whole interval
 * whose breaker is closed carry nothing worth keeping. */
static apr_status_t sweep_targets(int state, void *data, apr_pool_t *p)
{
    server_rec *s = data;
    apr_uint64_t n, i, now = now_ms(), idle = apr_time_as_msec(sweep_interval);
    aura_target_slot_t *t = aura_shm_targets(&n);
    int freed = 0;

    (void)p;
    if (state != AP_WATCHDOG_STATE_RUNNING || !t) {
        return APR_SUCCESS;
    }
    for (i = 0; i < n; i++) {
        apr_uint64_t key = apr_atomic_read64(&t[i].key);
        apr_uint64_t used = apr_atomic_read64(&t[i].used);

        /* Signed: a request that touched the entry after this sweep
         * read the clock is not idle (unsigned, it was 49 days old and
         * the entry of a target in use was freed).  The interval is at
         * most a day, well inside 32 bits of milliseconds. */
        if (key
            && (apr_int32_t)(apr_uint32_t)(now - used) >= (apr_int32_t)idle
            && aura_breaker_state(apr_atomic_read64(&t[i].word), NULL, NULL)
               == AURA_BRK_CLOSED
            && apr_atomic_cas64(&t[i].key, 0, key) == key) {
            freed++;
        }
    }
    if (freed) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s, AURA_LOGNO(00122)
                     "target breaker sweep: %d idle entries freed", freed);
    }
    return APR_SUCCESS;     /* anything else would stop the callback */
}

void aura_breaker_verdict(aura_breaker_hold_t *h, int success)
{
    aura_breaker_change_e change;

    if (!h || h->done) {
        return;
    }
    h->done = 1;
    change = aura_breaker_verdict_held(h->word, h->holders, h->conf,
                                       &h->grant, success, now_ms());
    log_change(h, change);
}

/* DESIGN.md section 8: an answer is the service working, even a 500 or
 * 501 (the application's own error); 502, 503 and 504 say it cannot
 * serve. */
int aura_breaker_status_ok(int status)
{
    return status != HTTP_BAD_GATEWAY && status != HTTP_SERVICE_UNAVAILABLE
           && status != HTTP_GATEWAY_TIME_OUT;
}

/* A breaker for /health: its state and failures; when half-open, the
 * probes out and the processes recorded as holding them. */
static json_t *state_json(volatile apr_uint64_t *w,
                          volatile apr_uint64_t *holders)
{
    static const char *const states[] = { "closed", "open", "half-open" };
    apr_uint64_t word = apr_atomic_read64(w);
    apr_uint32_t failures = 0, in_flight = 0, pid;
    aura_breaker_state_e st = aura_breaker_state(word, &failures, &in_flight);
    json_t *o = json_pack("{s:s,s:i}", "state", states[st], "failures",
                          (int)failures);
    json_t *pids;
    int i;

    if (!o || st != AURA_BRK_HALF_OPEN) {
        return o;
    }
    pids = json_array();
    for (i = 0; holders && i < AURA_BRK_HOLDERS; i++) {
        if (aura_breaker_holder(apr_atomic_read64(&holders[i]),
                                aura_breaker_since(word), &pid, NULL)) {
            json_array_append_new(pids, json_integer(pid));
        }
    }
    json_object_set_new(o, "probes", json_integer(in_flight));
    json_object_set_new(o, "probe_holders", pids);
    return o;
}

/* For /health with AuraHealthDetail and server-status: each service's
 * breaker state, the targets in the table, the key store's and
 * Redis's. */
void aura_breaker_describe(json_t *obj)
{
    apr_uint64_t n, i;
    aura_target_slot_t *t = aura_shm_targets(&n);
    json_t *targets = json_object();
    volatile apr_uint64_t *word;
    int svc;

    for (svc = 0; svc < AURA_SVC_COUNT; svc++) {
        word = service_word(svc);
        if (word) {
            json_object_set_new(obj, aura_service_names[svc],
                                state_json(word, service_holders(svc)));
        }
    }
    for (i = 0; t && i < n; i++) {
        if (apr_atomic_read64(&t[i].key)) {
            json_object_set_new(targets, t[i].name,
                                state_json(&t[i].word, t[i].holders));
        }
    }
    json_object_set_new(obj, "targets", targets);
    /* The key store's (aura_db.c): not a service, the same word. */
    if (aura_db_configured()
        && (word = aura_shm_breaker(AURA_BREAKER_STORE))) {
        json_object_set_new(obj, "store",
                            state_json(word, aura_shm_breaker_holders(
                                           AURA_BREAKER_STORE)));
    }
    /* The actor quota's Redis (aura_limit_actor.c): open while the
     * quota runs on this instance's fallback table. */
    if (aura_redis_configured()
        && (word = aura_shm_breaker(AURA_BREAKER_REDIS))) {
        json_object_set_new(obj, "redis",
                            state_json(word, aura_shm_breaker_holders(
                                           AURA_BREAKER_REDIS)));
    }
}
