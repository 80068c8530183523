/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_status.c: mod_aura's section of mod_status's server-status
 * (docs/status.md), through mod_status's optional status hook, as
 * mod_ssl and mod_md add theirs: tables in the HTML page, "Aura...:
 * value" lines in the machine format (?auto, AP_STATUS_SHORT).  The
 * state is what /health?detail returns, collected by aura_state.c: this
 * file only renders it.  Registered whether mod_status is loaded or
 * not: an optional hook nobody runs costs nothing.
 *
 * server-status is the operator's page (restricted with Require): it
 * shows counts, states and configured names, never a key, a token or
 * an actor (aura_state.h).  Every string is escaped for HTML, and made
 * one line with a fit key for ?auto (aura_status_text.h).
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "http/aura_state.h"
#include "http/aura_status.h"
#include "http/aura_status_text.h"
#include "nats/aura_nats.h"
#include "resilience/aura_shed.h"

#include "httpd.h"
#include "http_protocol.h"
#include "mod_status.h"
#include "apr_strings.h"

#include <jansson.h>

/* One rendering: the request, whether ?auto, the collected state. */
typedef struct {
    request_rec *r;
    int text;
    json_t *st;
} view_t;

/* ---- reading the collected state ---------------------------------------- */

static json_t *at(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);

    return b ? json_object_get(v, b) : v;
}

static apr_int64_t num(json_t *v)
{
    return json_is_integer(v) ? (apr_int64_t)json_integer_value(v) : 0;
}

static const char *str(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A cap from in_flight.caps, for aura_status_fill(). */
static apr_int64_t cap_of(view_t *v, const char *name)
{
    json_t *c = at(at(v->st, "in_flight", "caps"), name, NULL);

    if (!json_is_integer(c)) {
        return AURA_STATUS_CAP_NONE;
    }
    return json_integer_value(c) > 0 ? (apr_int64_t)json_integer_value(c)
                                     : AURA_STATUS_CAP_OFF;
}

/* ---- the two outputs --------------------------------------------------- */

/* "Aura<key>[_<suffix>]: <value>" */
static void line(view_t *v, const char *key, const char *suffix,
                 const char *value)
{
    apr_pool_t *p = v->r->pool;

    ap_rprintf(v->r, "Aura%s%s%s: %s\n", key, suffix ? "_" : "",
               suffix ? aura_status_key(p, suffix) : "",
               aura_status_value(p, value));
}

static void line_num(view_t *v, const char *key, const char *suffix,
                     apr_int64_t n)
{
    line(v, key, suffix, apr_psprintf(v->r->pool, "%" APR_INT64_T_FMT, n));
}

static void html_table(view_t *v, const char *title, const char *const *th)
{
    ap_rprintf(v->r, "<h3>%s</h3>\n<table border=\"0\"><tr>", title);
    for (; *th; th++) {
        ap_rprintf(v->r, "<th>%s</th>", *th);
    }
    ap_rputs("</tr>\n", v->r);
}

/* One row of n cells, each escaped. */
static void html_row(view_t *v, int n, ...)
{
    va_list ap;
    int i;

    va_start(ap, n);
    ap_rputs("<tr>", v->r);
    for (i = 0; i < n; i++) {
        const char *cell = va_arg(ap, const char *);

        ap_rprintf(v->r, "<td>%s</td>",
                   cell ? ap_escape_html(v->r->pool, cell) : "-");
    }
    ap_rputs("</tr>\n", v->r);
    va_end(ap);
}

static const char *fmt(view_t *v, apr_int64_t n)
{
    return apr_psprintf(v->r->pool, "%" APR_INT64_T_FMT, n);
}

static const char *cap_word(view_t *v, apr_int64_t cap)
{
    return cap > 0 ? fmt(v, cap)
                   : cap == AURA_STATUS_CAP_OFF ? "off" : "-";
}

/* ---- the sections ------------------------------------------------------- */

/* This child: its NATS connection (each child has its own). */
static void child(view_t *v)
{
    const char *state = aura_nats_state();
    const char *server = str(at(v->st, "nats_server", NULL));
    static const char *const th[] = { "Child", "Generation", "NATS state",
                                      "NATS server", NULL };

    if (v->text) {
        line_num(v, "ChildPid", NULL, num(at(v->st, "pid", NULL)));
        line_num(v, "Generation", NULL, num(at(v->st, "generation", NULL)));
        line(v, "NATSState", NULL, state);
        line(v, "NATSServer", NULL, server);
        return;
    }
    html_table(v, "This child (the one that answered)", th);
    html_row(v, 4, fmt(v, num(at(v->st, "pid", NULL))),
             fmt(v, num(at(v->st, "generation", NULL))), state, server);
    ap_rputs("</table>\n", v->r);
}

/* Per service: its breaker, its requests in flight against its cap,
 * and the requests its cap refused. */
static void services(view_t *v)
{
    static const char *const th[] = { "Service", "Breaker", "Failures",
                                      "In flight", "Cap", "Saturated",
                                      NULL };
    int i;

    if (!v->text) {
        html_table(v, "Services", th);
    }
    for (i = 0; i < AURA_SVC_COUNT; i++) {
        const char *name = aura_service_names[i];
        json_t *brk = at(v->st, "breakers", name);
        const char *state = str(json_object_get(brk, "state"));
        apr_int64_t failures = num(json_object_get(brk, "failures"));
        apr_int64_t used = num(at(at(v->st, "in_flight", "services"), name,
                                  NULL));
        apr_int64_t refused = num(at(at(v->st, "in_flight", "refused"),
                                     name, NULL));
        apr_int64_t cap = cap_of(v, name);

        if (v->text) {
            line(v, "BreakerState", name, state);
            line_num(v, "BreakerFailures", name, failures);
            line(v, "InFlight", name,
                 aura_status_fill(v->r->pool, used, cap));
            line_num(v, "Saturated", name, refused);
            continue;
        }
        html_row(v, 6, name, state, fmt(v, failures), fmt(v, used),
                 cap_word(v, cap), fmt(v, refused));
    }
    if (!v->text) {
        ap_rputs("</table>\n", v->r);
    }
}

/* Per plane: its requests in flight against AuraPlaneMaxInFlight. */
static void planes(view_t *v)
{
    static const char *const th[] = { "Plane", "In flight", "Cap",
                                      "Saturated", NULL };
    int i;

    if (!v->text) {
        html_table(v, "Planes", th);
    }
    for (i = 0; i < AURA_PLANES; i++) {
        const char *name = aura_plane_at(i)->name;
        apr_int64_t used = num(at(at(v->st, "in_flight", "planes"), name,
                                  NULL));
        apr_int64_t refused = num(at(at(v->st, "in_flight", "refused"),
                                     name, NULL));
        apr_int64_t cap = cap_of(v, name);

        if (v->text) {
            line(v, "PlaneInFlight", name,
                 aura_status_fill(v->r->pool, used, cap));
            line_num(v, "PlaneSaturated", name, refused);
            continue;
        }
        html_row(v, 4, name, fmt(v, used), cap_word(v, cap),
                 fmt(v, refused));
    }
    if (!v->text) {
        ap_rputs("</table>\n", v->r);
    }
}

/* The request classes' shares of the caps and what each lost. */
static void shedding(view_t *v)
{
    static const char *const th[] = { "Class", "Share of a cap", "Shed",
                                      NULL };
    int c;

    if (!v->text) {
        html_table(v, "Shedding (default shares)", th);
    }
    for (c = 0; c < AURA_CLASS_COUNT; c++) {
        const char *name = aura_class_name((aura_class_e)c);
        apr_int64_t pct = num(at(at(v->st, "in_flight", "shedding"), name,
                                 NULL));
        apr_int64_t shed = num(at(at(v->st, "in_flight", "shed"), name,
                                  NULL));

        if (v->text) {
            line(v, "SheddingShare", name,
                 apr_psprintf(v->r->pool, "%" APR_INT64_T_FMT "%%", pct));
            line_num(v, "Shed", name, shed);
            continue;
        }
        html_row(v, 3, name, apr_psprintf(v->r->pool, "%" APR_INT64_T_FMT
                                          " %%", pct), fmt(v, shed));
    }
    if (!v->text) {
        ap_rputs("</table>\n", v->r);
    }
    if (v->text) {
        line_num(v, "InFlightReclaimed", NULL,
                 num(at(v->st, "in_flight", "reclaimed")));
    }
}

/* The breakers that are not a service's: the key store's, Redis's, and
 * each dedicated target's (only those not closed in the HTML). */
static void other_breakers(view_t *v)
{
    static const char *const names[] = { "store", "redis" };
    static const char *const th[] = { "Breaker", "State", "Failures",
                                      NULL };
    json_t *targets = at(v->st, "breakers", "targets"), *t;
    const char *key;
    apr_int64_t n = 0, open = 0;
    size_t i;

    if (!v->text) {
        html_table(v, "Other breakers", th);
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        json_t *b = at(v->st, "breakers", names[i]);

        if (!b) {
            continue;
        }
        if (v->text) {
            line(v, "BreakerState", names[i],
                 str(json_object_get(b, "state")));
            line_num(v, "BreakerFailures", names[i],
                     num(json_object_get(b, "failures")));
            continue;
        }
        html_row(v, 3, names[i], str(json_object_get(b, "state")),
                 fmt(v, num(json_object_get(b, "failures"))));
    }
    json_object_foreach(targets, key, t) {
        const char *state = str(json_object_get(t, "state"));
        int closed = state && !strcmp(state, "closed");

        n++;
        open += !closed;
        if (!v->text && !closed) {
            html_row(v, 3, apr_pstrcat(v->r->pool, "target ", key, NULL),
                     state, fmt(v, num(json_object_get(t, "failures"))));
        }
    }
    if (v->text) {
        line_num(v, "TargetBreakers", NULL, n);
        line_num(v, "TargetBreakersNotClosed", NULL, open);
        return;
    }
    ap_rputs("</table>\n", v->r);
    ap_rprintf(v->r, "<p>Dedicated targets known: %" APR_INT64_T_FMT
               ", not closed: %" APR_INT64_T_FMT " (listed above).</p>\n",
               n, open);
}

/* The actor quota's Redis and its fallback. */
static void quota(view_t *v)
{
    static const char *const th[] = { "Redis", "Fallback now",
                                      "Decided by Redis",
                                      "Decided by the fallback",
                                      "Redis errors", "Refused (429)",
                                      NULL };
    json_t *shm = at(v->st, "shm", NULL);
    const char *redis = json_is_true(at(v->st, "actor_quota", "redis"))
                        ? "on" : "off";
    const char *fb = json_is_true(at(v->st, "actor_quota", "fallback"))
                     ? "yes" : "no";
    apr_int64_t by_redis = num(at(shm, "actor_redis", NULL));
    apr_int64_t by_fb = num(at(shm, "actor_fallback", NULL));
    apr_int64_t errors = num(at(shm, "redis_errors", NULL));
    apr_int64_t refused = num(at(shm, "actor_rejected", NULL));

    if (v->text) {
        line(v, "ActorQuotaRedis", NULL, redis);
        line(v, "ActorQuotaFallback", NULL, fb);
        line_num(v, "ActorQuotaByRedis", NULL, by_redis);
        line_num(v, "ActorQuotaByFallback", NULL, by_fb);
        line_num(v, "RedisErrors", NULL, errors);
        line_num(v, "ActorQuotaRefused", NULL, refused);
        return;
    }
    html_table(v, "Actor quota", th);
    html_row(v, 6, redis, fb, fmt(v, by_redis), fmt(v, by_fb),
             fmt(v, errors), fmt(v, refused));
    ap_rputs("</table>\n", v->r);
}

/* One limiter table's row: entries, used and limited now (walked),
 * refusals, and the times it had no room. */
static void table_row(view_t *v, const char *label, const char *key,
                      const char *zone, json_t *t)
{
    apr_int64_t entries = num(json_object_get(t, "entries"));
    apr_int64_t used = num(json_object_get(t, "used"));
    apr_int64_t limited = num(json_object_get(t, "limited"));
    apr_int64_t rejected = num(json_object_get(t, "rejected"));
    apr_int64_t full = num(json_object_get(t, "full"));

    if (v->text) {
        line_num(v, apr_pstrcat(v->r->pool, key, "Entries", NULL), zone,
                 entries);
        line_num(v, apr_pstrcat(v->r->pool, key, "Used", NULL), zone, used);
        line_num(v, apr_pstrcat(v->r->pool, key, "Limited", NULL), zone,
                 limited);
        line_num(v, apr_pstrcat(v->r->pool, key, "Refused", NULL), zone,
                 rejected);
        line_num(v, apr_pstrcat(v->r->pool, key, "Full", NULL), zone, full);
        return;
    }
    html_row(v, 6, label, fmt(v, entries), fmt(v, used), fmt(v, limited),
             fmt(v, rejected), fmt(v, full));
}

/* The rate-limit tables of the shared segment: the actor table and
 * one per zone. */
static void limiters(view_t *v)
{
    static const char *const th[] = { "Table", "Entries", "Used",
                                      "Limited now", "Refused (429)",
                                      "Full", NULL };
    json_t *shm = at(v->st, "shm", NULL), *t;
    const char *zone;

    if (!v->text) {
        html_table(v, "Limiter tables", th);
    }
    if ((t = json_object_get(shm, "actor_table"))) {
        /* The actor table counts refusals in actor_rejected. */
        json_t *copy = json_deep_copy(t);

        json_object_set(copy, "rejected",
                        json_object_get(shm, "actor_rejected"));
        table_row(v, "actors", "ActorTable", NULL, copy);
        json_decref(copy);
    }
    json_object_foreach(json_object_get(shm, "zones"), zone, t) {
        table_row(v, apr_pstrcat(v->r->pool, "zone ", zone, NULL),
                  "RateLimit", zone, t);
    }
    if (v->text) {
        line_num(v, "RateLimitRefusedByAddress", NULL,
                 num(at(shm, "ip_rejected", NULL)));
        line(v, "SegmentValid", NULL,
             json_is_false(json_object_get(shm, "valid")) ? "no" : "yes");
        return;
    }
    ap_rputs("</table>\n", v->r);
}

/* The upstream requests each child of the instance holds. */
static void children(view_t *v)
{
    static const char *const th[] = { "Child", "Upstream requests held",
                                      NULL };
    json_t *kids = at(v->st, "in_flight", "children"), *n;
    const char *pid;

    if (v->text) {
        line_num(v, "Children", NULL, (apr_int64_t)json_object_size(kids));
        return;
    }
    html_table(v, "Children", th);
    json_object_foreach(kids, pid, n) {
        html_row(v, 2, pid, fmt(v, num(n)));
    }
    ap_rputs("</table>\n", v->r);
}

/* ---- the hook ----------------------------------------------------------- */

static int status_hook(request_rec *r, int flags)
{
    view_t v;

    v.r = r;
    v.text = (flags & AP_STATUS_SHORT) != 0;
    v.st = json_object();
    /* Walk the limiter tables for their fill: server-status is asked
     * for by an operator or a scraper every few seconds, not per
     * request. */
    aura_state_describe(v.st, r, 1);
    if (!v.text) {
        ap_rputs("<hr />\n<h2>mod_aura</h2>\n", r);
    }
    child(&v);
    services(&v);
    planes(&v);
    shedding(&v);
    other_breakers(&v);
    quota(&v);
    limiters(&v);
    children(&v);
    json_decref(v.st);
    return OK;
}

void aura_status_register(void)
{
    APR_OPTIONAL_HOOK(ap, status_hook, status_hook, NULL, NULL,
                      APR_HOOK_MIDDLE);
}
