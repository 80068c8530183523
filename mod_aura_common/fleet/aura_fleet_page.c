/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet_page.c: the console's fleet view (parts of the
 * aura-console handler, listed in console/aura_console.c): the page,
 * server-rendered HTML; /api/fleet, the same data as JSON; and the
 * page's style and script, served as parts because the console's CSP
 * allows no inline script or style.
 *
 * Everything shown comes from other instances over NATS, so it is
 * hostile: each string goes through ap_escape_html() on the page, and
 * through jansson (which escapes) in the JSON.  The stored snapshots
 * were decoded with bounds when they arrived (aura_fleet_snap.c); they
 * are parsed again here, and a part missing or of the wrong type is
 * shown as "-".
 *
 * The script refreshes the page every second by fetching the page again
 * and swapping its <main> (one renderer, this file; the fetched HTML is
 * this file's escaped output).  Without script the page is complete,
 * as of its load.
 *
 * This file calls nothing of console/ (aura_console.c lists these
 * parts: a call back would be a cycle between the two files).
 */
#include "core/aura_module.h"
#include "fleet/aura_fleet.h"
#include "fleet/aura_fleet_snap.h"

#include "http_protocol.h"
#include "apr_strings.h"

#include <jansson.h>
#include <stdlib.h>

static const char fleet_css[] =
    ":root{--fg:#1d232a;--muted:#5b6672;--bg:#f5f6f8;--card:#fff;"
    "--line:#dde1e6;--ok:#1f7a3a;--warn:#9a6700;--bad:#b42318;"
    "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "font-size:15px;color:var(--fg);background:var(--bg)}\n"
    "body{margin:0}\n"
    "header{display:flex;flex-wrap:wrap;align-items:baseline;gap:.5rem 2rem;"
    "padding:.8rem 1.5rem;background:#14202e;color:#fff}\n"
    "header h1{font-size:1.2rem;margin:0}\n"
    "header nav a{color:#cfe3ff;margin-right:1rem;text-decoration:none}\n"
    "header nav a[aria-current]{color:#fff;font-weight:600;"
    "border-bottom:2px solid #fff}\n"
    "header .who{margin:0 0 0 auto;color:#cfd6de;font-size:.9rem}\n"
    "main{padding:1rem 1.5rem;max-width:1400px}\n"
    ".summary{margin:0 0 1rem;color:var(--muted)}\n"
    ".cards{display:grid;gap:1rem;"
    "grid-template-columns:repeat(auto-fill,minmax(330px,1fr))}\n"
    ".card{background:var(--card);border:1px solid var(--line);"
    "border-radius:8px;padding:.8rem 1rem;border-top:4px solid var(--ok)}\n"
    ".card.stale{border-top-color:var(--warn)}\n"
    ".card.gone{border-top-color:var(--muted);opacity:.75}\n"
    ".card h2{font-size:1.05rem;margin:0 0 .2rem;word-break:break-all}\n"
    ".meta{margin:0 0 .6rem;color:var(--muted);font-size:.85rem;"
    "word-break:break-all}\n"
    ".badge{display:inline-block;padding:0 .45rem;border-radius:9px;"
    "font-size:.8rem;font-weight:600;color:#fff;background:var(--ok)}\n"
    ".badge.stale{background:var(--warn)}.badge.gone{background:"
    "var(--muted)}\n"
    "table{border-collapse:collapse;width:100%;font-size:.88rem}\n"
    "th,td{text-align:left;padding:.15rem .4rem;border-bottom:1px solid "
    "var(--line)}\n"
    "th{color:var(--muted);font-weight:500}\n"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
    ".brk-open{color:var(--bad);font-weight:700}\n"
    ".brk-half-open{color:var(--warn);font-weight:700}\n"
    ".brk-closed{color:var(--ok)}\n"
    "dl{display:grid;grid-template-columns:auto 1fr;gap:.15rem .8rem;"
    "margin:.6rem 0 0;font-size:.88rem}\n"
    "dt{color:var(--muted)}dd{margin:0}\n"
    ".alert{color:var(--bad);font-weight:600}\n"
    "#changes{margin-top:1.5rem}\n"
    "#changes h2{font-size:1.05rem}\n"
    "#changes ol{list-style:none;padding:0;margin:0;background:var(--card);"
    "border:1px solid var(--line);border-radius:8px;max-height:22rem;"
    "overflow:auto}\n"
    "#changes li{padding:.3rem .8rem;border-bottom:1px solid var(--line);"
    "font-size:.88rem}\n"
    "#changes time{color:var(--muted);margin-right:.6rem;"
    "font-variant-numeric:tabular-nums}\n"
    ".empty{color:var(--muted)}\n";

/* Refresh: fetch the page again every second and swap its <main>; on a
 * failure keep what is shown and say so.  No eval, no inline handler. */
static const char fleet_js[] =
    "'use strict';\n"
    "(function () {\n"
    "  var busy = false, count = 0;\n"
    "  function note(text) {\n"
    "    var n = document.getElementById('refresh');\n"
    "    if (n) { n.textContent = text; }\n"
    "  }\n"
    "  function refresh() {\n"
    "    if (busy || document.hidden) { return; }\n"
    "    busy = true;\n"
    "    fetch(window.location.href, {credentials: 'same-origin',\n"
    "                                 cache: 'no-store'})\n"
    "      .then(function (res) {\n"
    "        if (!res.ok) { throw new Error('HTTP ' + res.status); }\n"
    "        return res.text();\n"
    "      })\n"
    "      .then(function (html) {\n"
    "        var doc = new DOMParser().parseFromString(html, 'text/html');\n"
    "        var fresh = doc.querySelector('main');\n"
    "        var old = document.querySelector('main');\n"
    "        if (fresh && old) { old.replaceWith(document.adoptNode(fresh)); }\n"
    "        count += 1;\n"
    "        document.documentElement.setAttribute('data-refreshes',\n"
    "                                              String(count));\n"
    "        note('');\n"
    "      })\n"
    "      .catch(function (e) { note('refresh failed: ' + e.message); })\n"
    "      .then(function () { busy = false; });\n"
    "  }\n"
    "  window.setInterval(refresh, 1000);\n"
    "})();\n";

/* The page's icon: without one a browser asks for /favicon.ico at the
 * root of the VirtualHost, which on a plane needs a plane's credential
 * (a 401 in the operator's console log); a data: URI would break the
 * CSP's img-src 'self'. */
static const char fleet_icon[] =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
    "<rect width=\"16\" height=\"16\" rx=\"3\" fill=\"#14202e\"/>"
    "<circle cx=\"5\" cy=\"8\" r=\"2\" fill=\"#3fb950\"/>"
    "<circle cx=\"11\" cy=\"8\" r=\"2\" fill=\"#3fb950\"/></svg>\n";

static int get_only(request_rec *r)
{
    r->allowed |= (AP_METHOD_BIT << M_GET);
    return r->method_number == M_GET ? OK : HTTP_METHOD_NOT_ALLOWED;
}

int aura_fleet_css(request_rec *r, const char *rest)
{
    (void)rest;
    if (get_only(r) != OK) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    ap_set_content_type(r, "text/css; charset=utf-8");
    ap_rwrite(fleet_css, sizeof(fleet_css) - 1, r);
    return OK;
}

int aura_fleet_icon(request_rec *r, const char *rest)
{
    (void)rest;
    if (get_only(r) != OK) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    ap_set_content_type(r, "image/svg+xml");
    ap_rwrite(fleet_icon, sizeof(fleet_icon) - 1, r);
    return OK;
}

int aura_fleet_js(request_rec *r, const char *rest)
{
    (void)rest;
    if (get_only(r) != OK) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    ap_set_content_type(r, "text/javascript; charset=utf-8");
    ap_rwrite(fleet_js, sizeof(fleet_js) - 1, r);
    return OK;
}

static const char *esc(request_rec *r, const char *s)
{
    return ap_escape_html(r->pool, s ? s : "");
}

/* An integer member of o as text, "-" when absent. */
static const char *num(request_rec *r, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    return json_is_integer(v)
           ? apr_psprintf(r->pool, "%" APR_INT64_T_FMT,
                          (apr_int64_t)json_integer_value(v))
           : "-";
}

static const char *age_text(request_rec *r, apr_interval_time_t age)
{
    if (age < apr_time_from_sec(10)) {
        return apr_psprintf(r->pool, "%d.%d s", (int)apr_time_sec(age),
                            (int)(apr_time_msec(age) / 100));
    }
    if (age < apr_time_from_sec(120)) {
        return apr_psprintf(r->pool, "%d s", (int)apr_time_sec(age));
    }
    return apr_psprintf(r->pool, "%d min", (int)(apr_time_sec(age) / 60));
}

/* Breakers and in-flight against caps, one row per breaker. */
static void render_services(request_rec *r, json_t *snap,
                            const aura_fleet_digest_t *d)
{
    json_t *inf = json_object_get(snap, "in_flight");
    json_t *svc = json_object_get(inf, "services");
    json_t *caps = json_object_get(inf, "caps");
    apr_uint32_t i;

    ap_rputs("<table><thead><tr><th>Service</th><th>Breaker</th>"
             "<th class=\"num\">In flight / cap</th></tr></thead><tbody>",
             r);
    for (i = 0; i < d->nbreakers; i++) {
        const aura_fleet_brk_t *b = &d->breakers[i];
        const char *st = aura_fleet_brk_name(b->state);
        const char *cap = num(r, caps, b->name);

        ap_rprintf(r, "<tr data-service=\"%s\"><td>%s</td>"
                   "<td class=\"brk-%s\">%s</td><td class=\"num\">%s / %s"
                   "</td></tr>", esc(r, b->name), esc(r, b->name), st, st,
                   num(r, svc, b->name),
                   strcmp(cap, "0") ? cap : "off");
    }
    ap_rputs("</tbody></table>", r);
}

/* "name n, ..." of an object of integers (or of objects' key). */
static const char *list_of(request_rec *r, json_t *o, const char *key)
{
    const char *k, *out = "";
    json_t *v;

    json_object_foreach(o, k, v) {
        json_t *n = key ? json_object_get(v, key) : v;

        if (json_is_integer(n)) {
            out = apr_psprintf(r->pool, "%s%s%s %" APR_INT64_T_FMT, out,
                               *out ? ", " : "", esc(r, k),
                               (apr_int64_t)json_integer_value(n));
        }
    }
    return *out ? out : "-";
}

/* The zones' refusals, with their fill when the snapshot has it:
 * "default 3 (120/65536 used)". */
static const char *zones_text(request_rec *r, json_t *zones)
{
    const char *k, *out = "";
    json_t *v;

    json_object_foreach(zones, k, v) {
        json_t *used = json_object_get(v, "used");

        out = apr_psprintf(r->pool, "%s%s%s %s", out, *out ? ", " : "",
                           esc(r, k), num(r, v, "rejected"));
        if (json_is_integer(used)) {
            out = apr_psprintf(r->pool, "%s (%s/%s used)", out,
                               num(r, v, "used"), num(r, v, "entries"));
        }
    }
    return *out ? out : "-";
}

static void render_facts(request_rec *r, json_t *snap,
                         const aura_fleet_digest_t *d)
{
    json_t *inf = json_object_get(snap, "in_flight");
    json_t *shm = json_object_get(snap, "shm");
    json_t *quota = json_object_get(snap, "actor_quota");

    ap_rputs("<dl>", r);
    ap_rprintf(r, "<dt>Shedding</dt><dd>%s; shed so far: %s</dd>",
               list_of(r, json_object_get(inf, "shedding"), NULL),
               list_of(r, json_object_get(inf, "shed"), NULL));
    ap_rprintf(r, "<dt>Actor quota</dt><dd%s>%s</dd>",
               d->fallback ? " class=\"alert\"" : "",
               !json_is_true(json_object_get(quota, "redis"))
               ? "local (no Redis)"
               : d->fallback ? "on the local fallback (Redis unreachable)"
                             : "Redis");
    ap_rprintf(r, "<dt>Limiter refusals</dt><dd>per address %s, per actor "
               "%s; zones: %s</dd>", num(r, shm, "ip_rejected"),
               num(r, shm, "actor_rejected"),
               zones_text(r, json_object_get(shm, "zones")));
    ap_rprintf(r, "<dt>Generation</dt><dd>%s (seq %" APR_UINT64_T_FMT
               ")</dd>", num(r, snap, "generation"), d->seq);
    ap_rputs("</dl>", r);
}

static void render_instance(request_rec *r, const aura_fleet_view_t *v,
                            apr_time_t now)
{
    const char *state = aura_fleet_liveness_name(v->state);
    json_t *snap = json_loadb(v->bytes, v->len, 0, NULL);

    ap_rprintf(r, "<article class=\"card %s\" data-instance=\"%s\" "
               "data-state=\"%s\"><h2>%s</h2><p class=\"meta\">"
               "<span class=\"badge %s\">%s</span> last snapshot %s ago "
               "&middot; NATS %s</p>", state, esc(r, v->digest.instance),
               state, esc(r, v->digest.instance), state, state,
               age_text(r, now - v->last_seen),
               *v->digest.node ? esc(r, v->digest.node) : "not connected");
    render_services(r, snap, &v->digest);
    render_facts(r, snap, &v->digest);
    ap_rputs("</article>", r);
    json_decref(snap);
}

static const char *event_text(request_rec *r, const aura_fleet_event_t *e)
{
    switch (e->kind) {
    case AURA_FLEET_EV_BREAKER:
        return apr_psprintf(r->pool, "breaker <code>%s</code> %s &rarr; "
                            "<b class=\"brk-%s\">%s</b>", esc(r, e->what),
                            esc(r, e->from), esc(r, e->to), esc(r, e->to));
    case AURA_FLEET_EV_NODE:
        return apr_psprintf(r->pool, "NATS node %s &rarr; %s",
                            *e->from ? esc(r, e->from) : "none",
                            *e->to ? esc(r, e->to) : "none");
    case AURA_FLEET_EV_APPEARED:
        return "appeared";
    case AURA_FLEET_EV_RESTARTED:
        return "restarted (its state started afresh)";
    case AURA_FLEET_EV_FALLBACK_ENTERED:
        return "<b class=\"alert\">actor quota on its local fallback</b> "
               "(Redis unreachable)";
    case AURA_FLEET_EV_FALLBACK_LEFT:
        return "actor quota back on Redis";
    default:
        return apr_psprintf(r->pool, "%s (was %s)",
                            esc(r, aura_fleet_event_name(e->kind)),
                            esc(r, e->from));
    }
}

static void render_events(request_rec *r, apr_array_header_t *events)
{
    int i;

    ap_rputs("<section id=\"changes\"><h2>Recent changes</h2>", r);
    if (!events->nelts) {
        ap_rputs("<p class=\"empty\">None yet.</p></section>", r);
        return;
    }
    ap_rputs("<ol>", r);
    for (i = 0; i < events->nelts; i++) {
        const aura_fleet_event_t *e =
            &APR_ARRAY_IDX(events, i, aura_fleet_event_t);
        apr_time_exp_t t;

        apr_time_exp_gmt(&t, e->time);
        ap_rprintf(r, "<li data-kind=\"%s\"><time>%02d:%02d:%02d.%03d"
                   "</time><b>%s</b> %s</li>",
                   aura_fleet_event_name(e->kind), t.tm_hour, t.tm_min,
                   t.tm_sec, t.tm_usec / 1000, esc(r, e->instance),
                   event_text(r, e));
    }
    ap_rputs("</ol></section>", r);
}

static void render_head(request_rec *r, const char *base)
{
    const char *self = aura_fleet_instance();

    ap_set_content_type(r, "text/html; charset=utf-8");
    ap_rprintf(r, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
               "<meta charset=\"utf-8\"><meta name=\"viewport\" "
               "content=\"width=device-width, initial-scale=1\">"
               "<title>Fleet - mod_aura operator console</title>"
               "<link rel=\"icon\" href=\"%s/assets/icon.svg\">"
               "<link rel=\"stylesheet\" href=\"%s/assets/console.css\">"
               "<script src=\"%s/assets/fleet.js\" defer></script>"
               "</head><body><header><h1>mod_aura operator console</h1>"
               "<nav><a href=\"%s/\" aria-current=\"page\">Fleet</a>"
               "<a href=\"%s/controls\">Controls</a></nav>"
               "<p class=\"who\">Signed in as %s &middot; this "
               "instance: %s <span id=\"refresh\"></span></p></header>",
               base, base, base, base, base, esc(r, r->user),
               self ? esc(r, self) : "fleet view off");
}

int aura_fleet_page(request_rec *r, const char *rest)
{
    apr_array_header_t *instances, *events;
    apr_time_t now = apr_time_now();
    const char *base;
    int i, live = 0;

    (void)rest;
    if (get_only(r) != OK) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    /* The page is the Location itself ("/ops" or "/ops/"). */
    base = apr_pstrdup(r->pool, r->uri);
    for (i = (int)strlen(base); i > 0 && base[i - 1] == '/'; i--) {
        ((char *)base)[i - 1] = '\0';
    }
    base = ap_escape_html(r->pool, base);
    render_head(r, base);
    ap_rputs("<main>", r);
    if (aura_fleet_read(r->pool, now, aura_fleet_gone_after(), &instances,
                        &events, NULL) != APR_SUCCESS) {
        ap_rputs("<p class=\"summary\">The fleet view is off on this "
                 "instance (<code>AuraFleet On</code> turns it on).</p>"
                 "</main></body></html>\n", r);
        return OK;
    }
    for (i = 0; i < instances->nelts; i++) {
        live += APR_ARRAY_IDX(instances, i, aura_fleet_view_t).state
                == AURA_FLEET_LIVE;
    }
    ap_rprintf(r, "<p class=\"summary\" id=\"summary\">%d instances, %d "
               "live</p><section id=\"instances\" class=\"cards\">",
               instances->nelts, live);
    for (i = 0; i < instances->nelts; i++) {
        render_instance(r, &APR_ARRAY_IDX(instances, i, aura_fleet_view_t),
                        now);
    }
    ap_rputs("</section>", r);
    render_events(r, events);
    ap_rputs("</main></body></html>\n", r);
    return OK;
}

static json_t *instance_json(const aura_fleet_view_t *v, apr_time_t now)
{
    json_t *o = json_object(), *brk = json_object();
    apr_uint32_t i;

    for (i = 0; i < v->digest.nbreakers; i++) {
        json_object_set_new(brk, v->digest.breakers[i].name, json_string(
            aura_fleet_brk_name(v->digest.breakers[i].state)));
    }
    json_object_set_new(o, "name", json_string(v->digest.instance));
    json_object_set_new(o, "state", json_string(
        aura_fleet_liveness_name(v->state)));
    json_object_set_new(o, "age_ms", json_integer((json_int_t)
                        apr_time_as_msec(now - v->last_seen)));
    json_object_set_new(o, "first_seen", json_integer(v->first_seen));
    json_object_set_new(o, "last_seen", json_integer(v->last_seen));
    json_object_set_new(o, "epoch", json_string(v->digest.epoch));
    json_object_set_new(o, "seq", json_integer((json_int_t)v->digest.seq));
    json_object_set_new(o, "nats_server", *v->digest.node
                        ? json_string(v->digest.node) : json_null());
    json_object_set_new(o, "fallback", json_boolean(v->digest.fallback));
    json_object_set_new(o, "breakers", brk);
    /* Checked when it arrived; a parse failure here shows as null. */
    json_object_set_new(o, "snapshot", json_loadb(v->bytes, v->len, 0,
                                                  NULL));
    if (!json_object_get(o, "snapshot")) {
        json_object_set_new(o, "snapshot", json_null());
    }
    return o;
}

static json_t *event_json(const aura_fleet_event_t *e)
{
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:s}", "time", (json_int_t)e->time,
                     "kind", aura_fleet_event_name(e->kind),
                     "instance", e->instance, "what", e->what,
                     "from", e->from, "to", e->to);
}

static json_t *counters_json(const aura_fleet_shm_t *c)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "published", (json_int_t)c->published,
                     "publish_failed", (json_int_t)c->publish_failed,
                     "too_big", (json_int_t)c->too_big,
                     "received", (json_int_t)c->received,
                     "malformed", (json_int_t)c->malformed,
                     "duplicate", (json_int_t)c->duplicate,
                     "full", (json_int_t)c->full,
                     "slots", (json_int_t)c->slots);
}

static int write_json(request_rec *r, json_t *doc)
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

int aura_fleet_api(request_rec *r, const char *rest)
{
    apr_array_header_t *instances, *events;
    apr_time_t now = apr_time_now();
    aura_fleet_shm_t counters;
    json_t *o, *list;
    int i;

    (void)rest;
    if (get_only(r) != OK) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    memset(&counters, 0, sizeof(counters));
    o = json_object();
    json_object_set_new(o, "enabled", json_boolean(
        aura_fleet_read(r->pool, now, aura_fleet_gone_after(), &instances,
                        &events, &counters) == APR_SUCCESS));
    json_object_set_new(o, "instance", aura_fleet_instance()
                        ? json_string(aura_fleet_instance()) : json_null());
    json_object_set_new(o, "now", json_integer(now));
    json_object_set_new(o, "gone_after_ms", json_integer((json_int_t)
                        apr_time_as_msec(aura_fleet_gone_after())));
    list = json_array();
    for (i = 0; i < instances->nelts; i++) {
        json_array_append_new(list, instance_json(
            &APR_ARRAY_IDX(instances, i, aura_fleet_view_t), now));
    }
    json_object_set_new(o, "instances", list);
    list = json_array();
    for (i = 0; i < events->nelts; i++) {
        json_array_append_new(list, event_json(
            &APR_ARRAY_IDX(events, i, aura_fleet_event_t)));
    }
    json_object_set_new(o, "events", list);
    json_object_set_new(o, "counters", counters_json(&counters));
    return write_json(r, o);
}
