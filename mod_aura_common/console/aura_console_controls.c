/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_console_controls.c: the console's incident controls (docs/
 * console.md, "Incident controls"): the API part /api/controls, the
 * page /controls and its script and style /assets/controls.{js,css}.
 *
 *   GET    /api/controls        every control the table holds, each
 *                               with its state (active, lifted, expired)
 *   GET    /api/controls/<id>   one
 *   POST   /api/controls        set one, or update the one of the same
 *                               kind and target: 201 new, 200 updated
 *   DELETE /api/controls/<id>   lift it: 200; 404 unknown; lifting a
 *                               control already lifted (or expired)
 *                               changes nothing and answers 200 again
 *
 * The gate (aura_console_gate.c) has checked the operator and, for
 * POST and DELETE, the cross-site rule before any of this runs.  Each
 * action is written once to the audit log (AuraAuditLog) here, on the
 * instance that took it, refused ones included; the instances that learn
 * it over NATS write nothing.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "console/aura_console.h"
#include "control/aura_control.h"
#include "control/aura_control_nats.h"
#include "control/aura_revoke_index.h"
#include "auth/aura_jwks.h"
#include "limit/aura_limit.h"

#include "http_core.h"
#include "http_protocol.h"
#include "apr_strings.h"
#include "apr_lib.h"

#include <jansson.h>
#include <stdlib.h>

/* A POST body larger than this is refused (413). */
#define BODY_MAX 4096

/* The answer as JSON (status r->status).  Not send_json():
 * aura_console.c lists this file's parts, and files may not call each
 * other both ways (make check's check-cycles). */
static int send_json(request_rec *r, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);

    json_decref(doc);
    if (!text) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    ap_set_content_type(r, "application/json");
    ap_rputs(text, r);
    ap_rputs("\n", r);
    free(text);
    return OK;
}

static int service_known(const char *name)
{
    int i;

    for (i = 0; i < AURA_SVC_COUNT; i++) {
        if (!strcmp(aura_service_names[i], name)) {
            return 1;
        }
    }
    return 0;
}

static const char *iso(apr_pool_t *p, apr_time_t t)
{
    return ap_ht_time(p, t, "%Y-%m-%dT%H:%M:%SZ", 1);
}

static const char *state_of(const aura_control_t *c, apr_time_t now)
{
    return c->lifted ? "lifted" : c->expires <= now ? "expired" : "active";
}

static json_t *control_json(apr_pool_t *p, const aura_control_t *c,
                            apr_time_t now)
{
    json_t *o = json_object();

    json_object_set_new(o, "id", json_string(c->id));
    json_object_set_new(o, "kind", json_string(
        aura_control_kind_name((int)c->kind)));
    json_object_set_new(o, "target", json_string(c->target));
    json_object_set_new(o, "value", json_string(c->value));
    json_object_set_new(o, "state", json_string(state_of(c, now)));
    json_object_set_new(o, "expires", json_string(iso(p, c->expires)));
    json_object_set_new(o, "expires_in", json_integer(
        c->expires > now ? apr_time_sec(c->expires - now) : 0));
    json_object_set_new(o, "updated", json_string(iso(p, c->updated)));
    json_object_set_new(o, "revision", json_integer(c->updated));
    json_object_set_new(o, "by", json_string(c->by));
    json_object_set_new(o, "reason", json_string(c->reason));
    return o;
}

/* One audit record of a control action, the operator as its actor
 * ("operator:<user>", role "operator"): set for the write only, so the
 * management plane's own record of mutations (which needs an actor)
 * does not write a second one for this request. */
static void audit(request_rec *r, const char *action, const char *target,
                  int status, const char *problem)
{
    aura_request_t *rq = aura_request_get(r);
    core_dir_config *core = ap_get_core_module_config(r->per_dir_config);
    aura_audit_entry_t e;
    const char *actor = NULL, *role = NULL;

    memset(&e, 0, sizeof(e));
    e.action = action;
    e.target = target;
    e.method = r->method;
    e.route = core ? core->d : NULL;
    e.path = r->uri;
    e.status = status;
    e.problem = problem;
    e.authorized = 1;      /* the operator passed httpd's Require */
    e.outcome = problem ? "refused" : "executed";
    if (rq) {
        actor = rq->actor;
        role = rq->role;
        rq->actor = apr_pstrcat(r->pool, "operator:", r->user, NULL);
        rq->role = "operator";
    }
    aura_audit_write(r, &e);
    if (rq) {
        rq->actor = actor;
        rq->role = role;
    }
}

static int refuse(request_rec *r, int status, const char *type,
                  const char *detail, const char *action,
                  const char *target)
{
    aura_problem_note(r, type, detail);
    audit(r, action, target, status, type);
    return status;
}

/* The body, at most BODY_MAX bytes: APR_SUCCESS, APR_ENOSPC (too
 * large), or another error. */
static apr_status_t read_body(request_rec *r, char **out, apr_size_t *len)
{
    char *buf = apr_palloc(r->pool, BODY_MAX + 1);
    apr_size_t n = 0;
    long got;

    if (ap_setup_client_block(r, REQUEST_CHUNKED_DECHUNK) != OK) {
        return APR_EGENERAL;
    }
    if (ap_should_client_block(r)) {
        while ((got = ap_get_client_block(r, buf + n, BODY_MAX + 1 - n))
               > 0) {
            n += (apr_size_t)got;
            if (n > BODY_MAX) {
                return APR_ENOSPC;
            }
        }
        if (got < 0) {
            return APR_EGENERAL;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return APR_SUCCESS;
}

/* What the POST asks for, as a control; NULL, or what is wrong. */
typedef struct {
    int kind;
    const char *target, *value, *reason;
    apr_interval_time_t ttl;
} post_t;

static const char *str_member(json_t *o, const char *name, int need,
                              const char **out)
{
    json_t *v = json_object_get(o, name);

    *out = NULL;
    if (!v || json_is_null(v)) {
        return need ? name : NULL;
    }
    if (!json_is_string(v)
        || strlen(json_string_value(v)) != json_string_length(v)) {
        return name;
    }
    *out = json_string_value(v);
    return NULL;
}

static const char *parse_ttl(json_t *v, apr_interval_time_t *ttl)
{
    char num[32];

    if (json_is_integer(v)) {
        apr_snprintf(num, sizeof(num), "%" APR_INT64_T_FMT,
                     (apr_int64_t)json_integer_value(v));
        return aura_control_ttl(num, ttl) == APR_SUCCESS ? NULL : "ttl";
    }
    if (json_is_string(v)) {
        return aura_control_ttl(json_string_value(v), ttl) == APR_SUCCESS
               ? NULL : "ttl";
    }
    return "ttl";
}

static const char *parse_post(apr_pool_t *p, json_t *o, post_t *q)
{
    static const char *const known[] = {
        "kind", "target", "value", "ttl", "reason", NULL
    };
    const char *key, *bad, *kind;
    json_t *v;
    int i;

    json_object_foreach(o, key, v) {
        for (i = 0; known[i] && strcmp(known[i], key); i++) {
            continue;
        }
        if (!known[i]) {
            return apr_psprintf(p, "unknown member \"%s\"",
                                ap_escape_logitem(p, key));
        }
    }
    if ((bad = str_member(o, "kind", 1, &kind))
        || (bad = str_member(o, "target", 1, &q->target))
        || (bad = str_member(o, "value", 0, &q->value))
        || (bad = str_member(o, "reason", 0, &q->reason))) {
        return apr_psprintf(p, "\"%s\" is missing or not a string", bad);
    }
    if (!(q->kind = aura_control_kind_of(kind))) {
        return "unknown kind (maintenance, block, drain, breaker, rate, "
               "quota, revoke)";
    }
    /* A revocation's own life is the gateway's to know (until the
     * tokens it names are dead): its ttl may only lengthen it. */
    v = json_object_get(o, "ttl");
    if (q->kind == AURA_CONTROL_REVOKE && (!v || json_is_null(v))) {
        q->ttl = 0;
    }
    else if (!v || parse_ttl(v, &q->ttl)) {
        return q->kind == AURA_CONTROL_REVOKE
               ? "\"ttl\" is optional for a revocation, else seconds, or "
                 "30s, 10m, 2h, 1d; at most 7 days"
               : "\"ttl\" is required: seconds, or 30s, 10m, 2h, 1d; "
                 "at most 7 days";
    }
    if (q->reason && strlen(q->reason) > AURA_CONTROL_REASON_MAX) {
        return "\"reason\" is longer than 200 bytes";
    }
    for (i = 0; q->reason && q->reason[i]; i++) {
        if ((unsigned char)q->reason[i] < 0x20 || q->reason[i] == 0x7f) {
            return "\"reason\" holds control characters";
        }
    }
    return NULL;
}

/* A rate control only lowers a zone of this configuration's. */
static const char *rate_lowers(request_rec *r, const aura_control_t *c)
{
    apr_array_header_t *zones = aura_zones(r->server->process->pconf);
    apr_uint64_t rate, period;
    int i;

    aura_control_rate_value(c->value, &rate, &period);
    for (i = 0; i < zones->nelts; i++) {
        const aura_zone_t *z = APR_ARRAY_IDX(zones, i, aura_zone_t *);

        if (!strcmp(z->name, c->target)) {
            return aura_control_rate_below(rate, period, z->rate,
                                           z->period_s)
                   ? NULL
                   : apr_psprintf(r->pool, "a rate control only lowers: "
                                  "zone %s allows %" APR_UINT64_T_FMT
                                  "r/%s", z->name, z->rate,
                                  z->period_s == 1 ? "s" : "m");
        }
    }
    return "the target is no zone of this gateway (AuraRateLimitZone)";
}

/* The record a valid POST makes, or what is wrong. */
static const char *make_record(request_rec *r, const post_t *q,
                               aura_control_t *c)
{
    const char *err;

    memset(c, 0, sizeof(*c));
    c->kind = (apr_uint32_t)q->kind;
    err = aura_control_canon(r->pool, q->kind, q->target, q->value,
                             c->target, c->value);
    if (err) {
        return err;
    }
    if ((q->kind == AURA_CONTROL_DRAIN || q->kind == AURA_CONTROL_BREAKER)
        && !service_known(c->target)) {
        return "the target is no service this gateway knows";
    }
    if (q->kind == AURA_CONTROL_RATE && (err = rate_lowers(r, c))) {
        return err;
    }
    if (strlen(r->user) > AURA_CONTROL_BY_MAX) {
        return "the operator's name is longer than 63 bytes";
    }
    aura_control_id(q->kind, c->target, c->id);
    apr_cpystrn(c->by, r->user, sizeof(c->by));
    apr_cpystrn(c->reason, q->reason ? q->reason : "", sizeof(c->reason));
    return NULL;
}

/* When the control ends: now + ttl; a revocation not before every
 * token it names has died (aura_revoke_expiry(): its time plus the
 * token horizon), which needs its time no more than
 * AURA_REVOKE_AHEAD_MAX ahead.  NULL, or what is wrong. */
static const char *control_expiry(request_rec *r, const post_t *q,
                                  aura_control_t *c, apr_time_t now)
{
    apr_int64_t before;

    if (q->kind != AURA_CONTROL_REVOKE) {
        c->expires = now + q->ttl;
        return NULL;
    }
    before = apr_atoi64(c->value);
    if (before > apr_time_sec(now) + AURA_REVOKE_AHEAD_MAX) {
        return apr_psprintf(r->pool, "a revocation's value may lie at most "
                            "%d s ahead of the gateway's clock (%"
                            APR_TIME_T_FMT "): it names tokens already "
                            "issued", AURA_REVOKE_AHEAD_MAX,
                            apr_time_sec(now));
    }
    c->expires = aura_revoke_expiry(before, aura_token_horizon(), q->ttl,
                                    now);
    if (c->expires <= now) {
        return "every token issued at or before this time has expired "
               "already (AuraTokenMaxLifetime): nothing to revoke";
    }
    return NULL;
}

/* A revision later than the control's last, even if the clock is not. */
static apr_time_t revision_after(const aura_control_t *before,
                                 apr_time_t now)
{
    return before->kind && before->updated >= now ? before->updated + 1
                                                   : now;
}

static int answer(request_rec *r, int status, const aura_control_t *c,
                  int fleet)
{
    json_t *o = control_json(r->pool, c, apr_time_now());

    json_object_set_new(o, "fleet", json_boolean(fleet));
    r->status = status;
    return send_json(r, o);
}

static int post_control(request_rec *r)
{
    const char *action = "control.set", *err, *what;
    aura_control_t c, before;
    apr_time_t now = apr_time_now();
    json_error_t jerr;
    apr_status_t rv;
    apr_size_t len;
    post_t q;
    char *body;
    json_t *o;
    int fleet, status;

    rv = read_body(r, &body, &len);
    if (rv == APR_ENOSPC) {
        return refuse(r, HTTP_REQUEST_ENTITY_TOO_LARGE, "payload-too-large",
                      "a control is at most 4096 bytes of JSON", action,
                      NULL);
    }
    if (rv != APR_SUCCESS) {
        return refuse(r, HTTP_BAD_REQUEST, "invalid-request",
                      "the body could not be read", action, NULL);
    }
    memset(&q, 0, sizeof(q));
    o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    err = !json_is_object(o) ? "the body is not a JSON object"
                             : parse_post(r->pool, o, &q);
    if (!err) {
        action = apr_pstrcat(r->pool, "control.",
                             aura_control_kind_name(q.kind), ".set", NULL);
        err = make_record(r, &q, &c);
    }
    if (!err) {
        err = control_expiry(r, &q, &c, now);
    }
    if (err) {
        /* The target as given, for the audit record: bounded. */
        what = q.target ? apr_pstrndup(r->pool, q.target, 200) : NULL;
        json_decref(o);
        return refuse(r, HTTP_BAD_REQUEST, "invalid-request", err, action,
                      what);
    }
    json_decref(o);
    what = apr_pstrcat(r->pool, aura_control_kind_name(q.kind), " ",
                       c.target, NULL);
    if (aura_control_find(c.id, &before) != APR_SUCCESS) {
        memset(&before, 0, sizeof(before));
    }
    c.updated = revision_after(&before, now);
    switch (aura_control_merge(&c, now, NULL)) {
    case AURA_CONTROL_ADDED:
    case AURA_CONTROL_REPLACED:
        break;
    default:
        aura_control_log_full(r->server, &c);
        return refuse(r, HTTP_INSUFFICIENT_STORAGE, "controls-full",
                      "the table of incident controls is full "
                      "(AuraControlSlots)", action, what);
    }
    status = aura_control_active(&before, now) ? HTTP_OK : HTTP_CREATED;
    if (status == HTTP_OK) {
        action = apr_pstrcat(r->pool, "control.",
                             aura_control_kind_name(q.kind), ".update",
                             NULL);
    }
    fleet = aura_control_publish(r, &c);
    ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, AURA_LOGNO(02208)
                  "incident control %s %s (id %s) %s by %s until %s%s%s",
                  aura_control_kind_name(q.kind),
                  ap_escape_logitem(r->pool, c.target), c.id,
                  status == HTTP_OK ? "updated" : "set",
                  ap_escape_logitem(r->pool, r->user),
                  iso(r->pool, c.expires), *c.reason ? ": " : "",
                  ap_escape_logitem(r->pool, c.reason));
    audit(r, action, what, status, NULL);
    return answer(r, status, &c, fleet);
}

static int valid_id(const char *id)
{
    int i;

    for (i = 0; i < AURA_CONTROL_ID_HEX; i++) {
        if (!apr_isxdigit(id[i]) || apr_isupper(id[i])) {
            return 0;
        }
    }
    return id[AURA_CONTROL_ID_HEX] == '\0';
}

static int lift_control(request_rec *r, const char *id)
{
    aura_control_t c;
    apr_time_t now = apr_time_now();
    const char *what, *action = "control.lift";
    int fleet;

    if (!valid_id(id) || aura_control_find(id, &c) != APR_SUCCESS) {
        return refuse(r, HTTP_NOT_FOUND, "unknown-control",
                      "no control has this id", action,
                      apr_pstrndup(r->pool, id, 32));
    }
    what = apr_pstrcat(r->pool, aura_control_kind_name((int)c.kind), " ",
                       c.target, NULL);
    action = apr_pstrcat(r->pool, "control.",
                         aura_control_kind_name((int)c.kind), ".lift", NULL);
    if (!aura_control_active(&c, now)) {
        /* Lifted already, or expired: nothing to do, the same answer. */
        audit(r, action, what, HTTP_OK, NULL);
        return answer(r, HTTP_OK, &c, 1);
    }
    c.lifted = 1;
    c.updated = revision_after(&c, now);
    apr_cpystrn(c.by, r->user, sizeof(c.by));
    aura_control_merge(&c, now, NULL);
    fleet = aura_control_publish(r, &c);
    ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, AURA_LOGNO(02209)
                  "incident control %s %s (id %s) lifted by %s",
                  aura_control_kind_name((int)c.kind),
                  ap_escape_logitem(r->pool, c.target), c.id,
                  ap_escape_logitem(r->pool, r->user));
    audit(r, action, what, HTTP_OK, NULL);
    return answer(r, HTTP_OK, &c, fleet);
}

static int list_controls(request_rec *r)
{
    apr_array_header_t *all = aura_control_list(r->pool);
    apr_time_t now = apr_time_now();
    json_t *o = json_object(), *a = json_array();
    int i;

    for (i = 0; i < all->nelts; i++) {
        json_array_append_new(a, control_json(
            r->pool, &APR_ARRAY_IDX(all, i, aura_control_t), now));
    }
    json_object_set_new(o, "instance", json_string(aura_control_instance()));
    json_object_set_new(o, "now", json_string(iso(r->pool, now)));
    json_object_set_new(o, "controls", a);
    return send_json(r, o);
}

int aura_console_controls_api(request_rec *r, const char *rest)
{
    aura_control_t c;

    r->allowed |= (AP_METHOD_BIT << M_GET) | (AP_METHOD_BIT << M_POST)
                  | (AP_METHOD_BIT << M_DELETE);
    if (!*rest && r->method_number == M_GET) {
        return list_controls(r);
    }
    if (!*rest && r->method_number == M_POST) {
        return post_control(r);
    }
    if (*rest == '/' && r->method_number == M_DELETE) {
        return lift_control(r, rest + 1);
    }
    if (*rest == '/' && r->method_number == M_GET) {
        if (!valid_id(rest + 1) || aura_control_find(rest + 1, &c)
                                   != APR_SUCCESS) {
            aura_problem_note(r, "unknown-control", "no control has this id");
            return HTTP_NOT_FOUND;
        }
        return send_json(r, control_json(r->pool, &c,
                                                 apr_time_now()));
    }
    return HTTP_METHOD_NOT_ALLOWED;
}

/* ---- the page ------------------------------------------------------- */

static void page_row(request_rec *r, const aura_control_t *c,
                     apr_time_t now)
{
    const char *state = state_of(c, now);

    ap_rprintf(r, "<tr class=\"%s\"><td>%s</td><td><code>%s</code></td>"
               "<td>%s</td><td>%s</td><td>%s (%s)</td><td>%s</td><td>%s</td>"
               "<td>", state, aura_control_kind_name((int)c->kind),
               ap_escape_html(r->pool, c->target),
               ap_escape_html(r->pool, c->value), state,
               iso(r->pool, c->expires),
               c->expires > now
               ? apr_psprintf(r->pool, "in %" APR_TIME_T_FMT " s",
                              apr_time_sec(c->expires - now))
               : "past",
               ap_escape_html(r->pool, c->by),
               ap_escape_html(r->pool, c->reason));
    if (aura_control_active(c, now)) {
        ap_rprintf(r, "<button type=\"button\" data-lift=\"%s\">Lift"
                   "</button>", c->id);
    }
    ap_rputs("</td></tr>\n", r);
}

static const char page_form[] =
    "<h2>Set a control</h2>\n"
    "<form id=\"add\">\n"
    "<label>Kind <select name=\"kind\">"
    "<option>maintenance</option><option>block</option>"
    "<option>drain</option><option>breaker</option><option>rate</option>"
    "<option>quota</option><option>revoke</option></select></label>\n"
    "<label>Target <input name=\"target\" required "
    "placeholder=\"/v1/storage/ | addr:192.0.2.0/24 | key:&lt;hash prefix&gt; "
    "| actor:&lt;sub&gt; | service | zone | plan "
    "| sub:&lt;project&gt;:&lt;sub&gt;\"></label>\n"
    "<label>Value <input name=\"value\" "
    "placeholder=\"Retry-After s | open | closed | 10r/s | 100 "
    "| issued-before epoch s\">"
    "</label>\n"
    "<label>For <input name=\"ttl\" value=\"10m\" "
    "placeholder=\"10m | empty for revoke: until its tokens expire\">"
    "</label>\n"
    "<label>Reason <input name=\"reason\" maxlength=\"200\"></label>\n"
    "<button type=\"submit\">Set</button>\n"
    "</form>\n<p id=\"status\" role=\"status\"></p>\n";

int aura_console_controls_page(request_rec *r, const char *rest)
{
    apr_array_header_t *all;
    apr_time_t now = apr_time_now();
    int i;

    (void)rest;
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    all = aura_control_list(r->pool);
    ap_set_content_type(r, "text/html; charset=utf-8");
    ap_rputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<meta name=\"viewport\" content=\"width=device-width\">"
             "<title>Incident controls</title>"
             "<link rel=\"icon\" href=\"assets/icon.svg\">"
             "<link rel=\"stylesheet\" href=\"assets/controls.css\">"
             "<script src=\"assets/controls.js\" defer></script>"
             "</head><body>\n<p><a href=\"./\">&larr; console</a></p>\n"
             "<h1>Incident controls</h1>\n", r);
    ap_rprintf(r, "<p>Signed in as %s. Controls reach every instance on "
               "NATS; each expires by itself.</p>\n",
               ap_escape_html(r->pool, r->user));
    ap_rputs("<table><thead><tr><th>Kind</th><th>Target</th><th>Value</th>"
             "<th>State</th><th>Expires</th><th>By</th><th>Reason</th>"
             "<th></th></tr></thead><tbody>\n", r);
    for (i = 0; i < all->nelts; i++) {
        page_row(r, &APR_ARRAY_IDX(all, i, aura_control_t), now);
    }
    if (!all->nelts) {
        ap_rputs("<tr><td colspan=\"8\">No control.</td></tr>\n", r);
    }
    ap_rputs("</tbody></table>\n", r);
    ap_rputs(page_form, r);
    ap_rputs("</body></html>\n", r);
    return OK;
}

static const char controls_js[] =
    "/* mod_aura console: incident controls (no dependency). */\n"
    "(function () {\n"
    "  'use strict';\n"
    "  function say(text) {\n"
    "    document.getElementById('status').textContent = text;\n"
    "  }\n"
    "  function send(method, url, body) {\n"
    "    return fetch(url, {\n"
    "      method: method, credentials: 'same-origin',\n"
    "      headers: { 'X-Aura-CSRF': '1',\n"
    "                 'Content-Type': 'application/json' },\n"
    "      body: body ? JSON.stringify(body) : undefined\n"
    "    }).then(function (res) {\n"
    "      return res.json().catch(function () { return {}; })\n"
    "        .then(function (j) {\n"
    "          if (!res.ok) {\n"
    "            throw new Error(j.detail || j.title || res.status);\n"
    "          }\n"
    "          return j;\n"
    "        });\n"
    "    });\n"
    "  }\n"
    "  document.addEventListener('click', function (ev) {\n"
    "    var b = ev.target.closest('button[data-lift]');\n"
    "    if (!b) { return; }\n"
    "    send('DELETE', 'api/controls/' + b.getAttribute('data-lift'))\n"
    "      .then(function () { location.reload(); },\n"
    "            function (e) { say('Not lifted: ' + e.message); });\n"
    "  });\n"
    "  document.addEventListener('DOMContentLoaded', function () {\n"
    "    var form = document.getElementById('add');\n"
    "    form.addEventListener('submit', function (ev) {\n"
    "      var f = new FormData(form), body;\n"
    "      ev.preventDefault();\n"
    "      body = { kind: f.get('kind'), target: f.get('target') };\n"
    "      if (f.get('ttl')) { body.ttl = f.get('ttl'); }\n"
    "      if (f.get('value')) { body.value = f.get('value'); }\n"
    "      if (f.get('reason')) { body.reason = f.get('reason'); }\n"
    "      send('POST', 'api/controls', body)\n"
    "        .then(function () { location.reload(); },\n"
    "              function (e) { say('Not set: ' + e.message); });\n"
    "    });\n"
    "  });\n"
    "})();\n";

static const char controls_css[] =
    "body { font: 15px/1.4 system-ui, sans-serif; margin: 1.5em; }\n"
    "table { border-collapse: collapse; width: 100%; }\n"
    "th, td { text-align: left; padding: .3em .6em; "
    "border-bottom: 1px solid #ddd; }\n"
    "tr.lifted, tr.expired { color: #888; }\n"
    "form label { display: inline-block; margin: .3em 1em .3em 0; }\n"
    "#status { color: #a00; }\n";

static int asset(request_rec *r, const char *type, const char *text)
{
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    ap_set_content_type(r, type);
    ap_rputs(text, r);
    return OK;
}

int aura_console_controls_js(request_rec *r, const char *rest)
{
    (void)rest;
    return asset(r, "text/javascript; charset=utf-8", controls_js);
}

int aura_console_controls_css(request_rec *r, const char *rest)
{
    (void)rest;
    return asset(r, "text/css; charset=utf-8", controls_css);
}
