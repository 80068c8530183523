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
 * lost.  State changes are logged by the one request whose
 * compare-and-swap made them, so once across all children.
 */
#include "aura_private.h"
#include "aura_breaker_fsm.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include <jansson.h>

#define NS_PER_MS APR_UINT64_C(1000000)

/* Written in post_config only: the effective settings per service. */
static aura_breaker_conf_t confs[AURA_SVC_COUNT];

struct aura_breaker_hold_t {
    request_rec *r;
    int service;
    aura_breaker_ticket_e ticket;
    int done;
};

static int slot_of(int service)
{
    return 1 + service;     /* 0 is Redis's (AURA_BREAKER_REDIS) */
}

apr_status_t aura_breaker_post_config(apr_pool_t *pconf, server_rec *s)
{
    const apr_array_header_t *set = aura_server_conf(s)->breakers;
    int svc, i;

    (void)pconf;
    for (svc = 0; svc < AURA_SVC_COUNT; svc++) {
        apr_uint32_t threshold = AURA_DEFAULT_BREAKER_THRESHOLD;
        apr_uint32_t cooldown = AURA_DEFAULT_BREAKER_COOLDOWN_MS;
        apr_uint32_t probes = AURA_DEFAULT_BREAKER_PROBES;
        apr_uint32_t ttl = AURA_DEFAULT_BREAKER_PROBE_TTL_MS;

        /* The lines that concern the service ("*" or its name) apply in
         * configuration order, each setting only the fields it names:
         * later lines win, field by field. */
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
        if (aura_breaker_conf_init(&confs[svc], threshold, cooldown, probes)
            != APR_SUCCESS) {
            return APR_EINVAL;
        }
        confs[svc].probe_ttl_ms = ttl;
    }
    return APR_SUCCESS;
}

static apr_uint32_t now_ms(void)
{
    return (apr_uint32_t)(aura_clock_ns() / NS_PER_MS);
}

static void log_change(request_rec *r, int service,
                       aura_breaker_change_e change)
{
    const char *name = aura_service_names[service];

    switch (change) {
    case AURA_BRK_TO_OPEN:
        aura_count(AURA_CTR_BREAKER_OPENED);
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00090)
                      "breaker of service %s opened: requests to it are "
                      "refused for %u ms, then up to %u probes are let "
                      "through", name, confs[service].cooldown_ms,
                      confs[service].probes);
        break;
    case AURA_BRK_TO_HALF_OPEN:
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00091)
                      "breaker of service %s half-open: probing", name);
        break;
    case AURA_BRK_TO_CLOSED:
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, AURA_LOGNO(00092)
                      "breaker of service %s closed: the probe succeeded",
                      name);
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
        aura_breaker_release(aura_shm_breaker(slot_of(h->service)),
                             h->ticket);
    }
    return APR_SUCCESS;
}

int aura_breaker_enter(request_rec *r, int service, aura_breaker_hold_t **out)
{
    volatile apr_uint64_t *word = aura_shm_breaker(slot_of(service));
    aura_breaker_change_e change = AURA_BRK_SAME;
    apr_uint32_t retry_ms = 0;
    aura_breaker_hold_t *h;
    aura_breaker_ticket_e t;

    *out = NULL;
    if (!word || service < 0 || service >= AURA_SVC_COUNT) {
        return OK;
    }
    t = aura_breaker_acquire(word, &confs[service], now_ms(), &change,
                             &retry_ms);
    log_change(r, service, change);
    if (t == AURA_BRK_DENY) {
        aura_count(AURA_CTR_BREAKER_REJECTED);
        apr_table_setn(r->err_headers_out, "Retry-After",
                       apr_psprintf(r->pool, "%u",
                                    retry_ms ? (retry_ms + 999) / 1000 : 1));
        aura_problem_note(r, "breaker-open",
                          apr_psprintf(r->pool, "the %s service is failing; "
                                       "the gateway does not call it for "
                                       "now", aura_service_names[service]));
        return HTTP_SERVICE_UNAVAILABLE;
    }
    h = apr_pcalloc(r->pool, sizeof(*h));
    h->r = r;
    h->service = service;
    h->ticket = t;
    apr_pool_cleanup_register(r->pool, h, hold_cleanup,
                              apr_pool_cleanup_null);
    *out = h;
    return OK;
}

void aura_breaker_verdict(aura_breaker_hold_t *h, int success)
{
    volatile apr_uint64_t *word;
    aura_breaker_change_e change;

    if (!h || h->done) {
        return;
    }
    h->done = 1;
    word = aura_shm_breaker(slot_of(h->service));
    change = success
             ? aura_breaker_success(word, &confs[h->service], h->ticket,
                                    now_ms())
             : aura_breaker_failure(word, &confs[h->service], h->ticket,
                                    now_ms());
    log_change(h->r, h->service, change);
}

/* DESIGN.md section 8: an answer is the service working, even a 500 or
 * 501 (the application's own error); 502, 503 and 504 say it cannot
 * serve. */
int aura_breaker_status_ok(int status)
{
    return status != HTTP_BAD_GATEWAY && status != HTTP_SERVICE_UNAVAILABLE
           && status != HTTP_GATEWAY_TIME_OUT;
}

/* For /health with AuraHealthDetail: each service's breaker state. */
void aura_breaker_describe(json_t *obj)
{
    static const char *const states[] = { "closed", "open", "half-open" };
    int svc;

    for (svc = 0; svc < AURA_SVC_COUNT; svc++) {
        volatile apr_uint64_t *word = aura_shm_breaker(slot_of(svc));
        apr_uint32_t failures = 0, in_flight = 0;
        aura_breaker_state_e st;

        if (!word) {
            return;
        }
        st = aura_breaker_state(apr_atomic_read64(word), &failures,
                                &in_flight);
        json_object_set_new(obj, aura_service_names[svc],
                            json_pack("{s:s,s:i}", "state", states[st],
                                      "failures", (int)failures));
    }
}
