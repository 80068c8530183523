/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_limit_ip.c: the per-address stage of rate limiting (DESIGN.md
 * section 2), and what both stages share: the table full log, the 429
 * answer (the clock is core/aura_clock.c, the keyed hash
 * aura_limiter_key.c).  The actor stage is aura_limit_actor.c.
 *
 * Stage 1, per client address, runs before authentication so that a
 * flood costs one hash and one compare-and-swap per request, never a
 * key lookup or a signature check.  GCRA on one 64-bit TAT per (zone,
 * address) in the shared table (aura_gcra_table.c): exact across children
 * and threads without a lock.  The address is r->useragent_addr, which
 * is the connection's, or the client's as mod_remoteip established it
 * from a trusted proxy's header; IPv6 clients are keyed by their leading
 * AuraRateLimitIPv6Prefix bits (one host usually holds a whole /64).
 *
 * Both stages answer 429 with a problem+json body, Retry-After, and the
 * RateLimit-Policy / RateLimit fields of draft-ietf-httpapi-ratelimit-
 * headers-09 (policies "ip" and "actor"); admitted requests carry the
 * actor stage's remaining quota.
 */
#include "core/aura_clock.h"
#include "core/aura_module.h"
#include "control/aura_control.h"
#include "core/aura_config.h"
#include "limit/aura_addr.h"
#include "limit/aura_connlimit.h"
#include "limit/aura_gcra.h"
#include "limit/aura_gcra_table.h"
#include "limit/aura_limit.h"
#include "limit/aura_limit_conf.h"
#include "shm/aura_shm.h"
#include "trace/aura_tracing.h"

#include "http_protocol.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#define NS_PER_S  APR_UINT64_C(1000000000)
/* "Table full" is logged at most once per this many seconds. */
#define FULL_LOG_INTERVAL 60

/* Written in post_config only. */
static const aura_zone_t *default_zone;

apr_status_t aura_ratelimit_post_config(apr_pool_t *pconf, server_rec *s)
{
    apr_array_header_t *zones = aura_zones(pconf);

    (void)s;
    /* aura_zones() puts the built-in first; a definition of "default"
     * changed it in place. */
    default_zone = APR_ARRAY_IDX(zones, 0, aura_zone_t *);
    return APR_SUCCESS;
}

/* Per table: a flood that fills one zone's table is logged (and
 * counted) as that zone's, and does not silence the line of another. */
void aura_limiter_full(request_rec *r, int n)
{
    aura_limiter_slot_t *slots;
    apr_uint64_t sets;
    aura_shm_table_t *t = aura_shm_table(n, &slots, &sets);

    aura_count(AURA_CTR_IP_TABLE_FULL);
    if (!t) {
        return;
    }
    apr_atomic_inc64(&t->full);
    if (!aura_log_due(&t->full_logged, FULL_LOG_INTERVAL)) {
        return;
    }
    if (n == AURA_TABLE_ACTOR) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00600)
                      "actor quota fallback table full: requests admitted "
                      "without a local quota (raise AuraRateLimitEntries; "
                      "logged once a minute)");
    }
    else {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00080)
                      "rate-limit zone %s full: requests admitted without a "
                      "per-address limit in this zone only (raise its "
                      "entries=; logged once a minute per zone)", t->name);
    }
}

/* The decimal digits of v, written backwards to end at end. */
static char *digits(char *end, apr_uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

/* "policy";k1=a;k2=b, put together by hand: apr_psprintf's formatter
 * was half the cost of the actor stage on a request it admits. */
void aura_limit_header(request_rec *r, const char *name, const char *policy,
                       char k1, apr_uint64_t a, char k2, apr_uint64_t b)
{
    char abuf[24], bbuf[24];
    const char *ad = digits(abuf + sizeof(abuf), a);
    const char *bd = digits(bbuf + sizeof(bbuf), b);
    apr_size_t pl = strlen(policy);
    apr_size_t al = (apr_size_t)(abuf + sizeof(abuf) - ad);
    apr_size_t bl = (apr_size_t)(bbuf + sizeof(bbuf) - bd);
    char *out = apr_palloc(r->pool, pl + al + bl + 9), *o = out;

    *o++ = '"';
    memcpy(o, policy, pl);
    o += pl;
    *o++ = '"';
    *o++ = ';';
    *o++ = k1;
    *o++ = '=';
    memcpy(o, ad, al);
    o += al;
    *o++ = ';';
    *o++ = k2;
    *o++ = '=';
    memcpy(o, bd, bl);
    o += bl;
    *o = '\0';
    apr_table_setn(r->err_headers_out, name, out);
}

int aura_limit_refuse(request_rec *r, const char *type, const char *policy,
                  apr_uint64_t retry_s, const char *why)
{
    retry_s = retry_s ? retry_s : 1;
    apr_table_setn(r->err_headers_out, "Retry-After",
                   apr_psprintf(r->pool, "%" APR_UINT64_T_FMT, retry_s));
    aura_limit_header(r, "RateLimit", policy, 'r', 0, 't', retry_s);
    aura_problem_note(r, type, apr_psprintf(r->pool, "%s; retry after %"
                                            APR_UINT64_T_FMT " s", why,
                                            retry_s));
    return HTTP_TOO_MANY_REQUESTS;
}

AURA_DECLARE(const char *) aura_client_prefix(request_rec *r)
{
    char buf[AURA_ADDR_HEX_MAX];

    return apr_pstrdup(r->pool, aura_address_hex(r->useragent_addr,
                           aura_conf_ipv6_prefix(aura_server_conf(r->server)),
                           buf));
}

static int refuse_ip(request_rec *r, const aura_zone_t *z,
                     aura_shm_table_t *t, const aura_gcra_result_t *res)
{
    aura_count(AURA_CTR_IP_REJECTED);
    apr_atomic_inc64(&t->rejected);
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00081)
                  "zone %s: %s over its rate", z->name, r->useragent_ip);
    /* GCRA as a quota: the burst, refilled over burst/rate seconds. */
    aura_limit_header(r, "RateLimit-Policy", "ip", 'q', z->burst, 'w',
                      aura_ceil_div(z->gcra.tolerance, NS_PER_S));
    return aura_limit_refuse(r, "ip-rate-limit", "ip",
                  aura_ceil_div(res->retry_after, NS_PER_S),
                  "too many requests from this address");
}

/* An incident control may lower the zone's rate for a while (never
 * raise it).  It is counted under a key of its own, with the zone's
 * burst scaled to the lower rate: the zone's own count is left as it is, so
 * that when the control ends the address has what it would have had
 * (counted in the zone's count, a lower rate pushes the address's TAT
 * minutes ahead, and the lift would not give the rate back).  0 when
 * the lower rate refuses (res set). */
static int lowered_ok(request_rec *r, const aura_zone_t *z,
                      aura_limiter_slot_t *slots, apr_uint64_t sets,
                      const unsigned char *addr, apr_size_t n,
                      aura_gcra_result_t *res)
{
    apr_uint64_t rate, period, burst;
    aura_gcra_t low;

    (void)r;
    if (!aura_control_rate(z->name, &rate, &period)
        || !aura_control_rate_below(rate, period, z->rate, z->period_s)) {
        return 1;
    }
    /* The burst shrinks with the rate: the same seconds' worth. */
    burst = z->burst * rate * z->period_s / (z->rate * period);
    if (aura_gcra_init(&low, rate, period, burst ? burst : 1)
        != APR_SUCCESS) {
        return 1;
    }
    return aura_limiter_take(slots, sets,
                             aura_limiter_key("ip-control", z->name, addr, n),
                             &low, aura_clock_ns(), res)
           != AURA_LIMIT_REFUSED;
}

static int limit_ip(request_rec *r)
{
    const aura_dir_conf_t *d = aura_dir_conf(r);
    const aura_zone_t *z = d->zone ? d->zone : default_zone;
    int prefix = aura_conf_ipv6_prefix(aura_server_conf(r->server));
    unsigned char addr[AURA_ADDR_BYTES_MAX];
    aura_limiter_slot_t *slots;
    aura_shm_table_t *t;
    aura_gcra_result_t res;
    apr_uint64_t sets, key;
    apr_size_t n;

    if (!z || z == &aura_zone_off
        || !(t = aura_shm_table(z->table, &slots, &sets))) {
        return OK;
    }
    n = aura_address_bytes(r->useragent_addr, prefix, addr);
    if (!lowered_ok(r, z, slots, sets, addr, n, &res)) {
        return refuse_ip(r, z, t, &res);
    }
    key = aura_limiter_key("ip", z->name, addr, n);
    switch (aura_limiter_take(slots, sets, key, &z->gcra, aura_clock_ns(),
                              &res)) {
    case AURA_LIMIT_ADMITTED:
        return OK;
    case AURA_LIMIT_FULL:
        aura_limiter_full(r, z->table);
        return OK;
    default:
        break;
    }
    return refuse_ip(r, z, t, &res);
}



/* The stage as the server span's child "aura.limit.address". */
AURA_DECLARE(int) aura_limit_ip(request_rec *r)
{
    int span = aura_tracing_stage(r, "aura.limit.address");
    int rc = limit_ip(r);

    aura_tracing_stage_end(r, span, rc);
    return rc;
}
