/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet_snap.c: decoding, encoding and comparing fleet snapshots
 * (pure: see aura_fleet_snap.h).  A received snapshot is parsed by
 * jansson from at most AURA_FLEET_SNAPSHOT_MAX bytes (its nesting is
 * bounded by jansson's own depth limit); nothing of it is kept but the
 * fixed digest here and the bytes themselves, which every reader parses
 * again and escapes.
 */
#include "fleet/aura_fleet_snap.h"

#include "apr_strings.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int aura_fleet_copy(char *dst, apr_size_t size, const char *src)
{
    apr_size_t n = src ? strlen(src) : 0;

    if (n >= size) {
        dst[0] = '\0';
        return 0;
    }
    memcpy(dst, src ? src : "", n + 1);
    return 1;
}

int aura_fleet_name_ok(const char *name)
{
    apr_size_t n = 0;

    if (!name || !*name) {
        return 0;
    }
    for (; name[n]; n++) {
        unsigned char ch = (unsigned char)name[n];

        if (ch < 0x20 || ch == 0x7f || n >= AURA_FLEET_NAME_MAX - 1) {
            return 0;
        }
    }
    return 1;
}

const char *aura_fleet_token(apr_pool_t *p, const char *name)
{
    static const char hex[] = "0123456789ABCDEF";
    apr_size_t n = strlen(name), i, o = 0;
    char *out = apr_palloc(p, 3 * n + 1);

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];

        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
            || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-') {
            out[o++] = (char)ch;
        }
        else {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = '\0';
    return out;
}

int aura_fleet_token_matches(const char *token, const char *name)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *name; name++) {
        unsigned char ch = (unsigned char)*name;

        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
            || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-') {
            if (*token++ != (char)ch) {
                return 0;
            }
        }
        else if (token[0] != '%' || token[1] != hex[ch >> 4]
                 || token[2] != hex[ch & 15]) {
            return 0;
        }
        else {
            token += 3;
        }
    }
    return *token == '\0';
}

static int epoch_ok(const char *s)
{
    apr_size_t n = strlen(s);

    return n > 0 && n < AURA_FLEET_EPOCH_MAX
           && strspn(s, "0123456789abcdef") == n;
}

/* A node string: printable, bounded ("" when not connected). */
static int node_ok(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            return 0;
        }
    }
    return 1;
}

static int brk_state(const char *s, apr_uint32_t *out)
{
    static const char *const names[] = { "closed", "open", "half-open" };
    apr_uint32_t i;

    for (i = 0; i < 3; i++) {
        if (!strcmp(s, names[i])) {
            *out = i;
            return 1;
        }
    }
    return 0;
}

/* The breakers object: {"<name>": {"state": "..."}, "targets": {...}}.
 * The dedicated targets are not digested (they can be many, and the
 * page shows them from the snapshot itself). */
static const char *decode_breakers(json_t *b, aura_fleet_digest_t *d)
{
    const char *key;
    json_t *v, *st;

    if (!b) {
        return NULL;
    }
    if (!json_is_object(b)) {
        return "breakers is not an object";
    }
    json_object_foreach(b, key, v) {
        aura_fleet_brk_t *e;

        if (!strcmp(key, "targets")) {
            continue;
        }
        if (d->nbreakers == AURA_FLEET_BREAKERS) {
            return "too many breakers";
        }
        e = &d->breakers[d->nbreakers];
        st = json_object_get(v, "state");
        if (!json_is_string(st) || !aura_fleet_name_ok(key)
            || !aura_fleet_copy(e->name, sizeof(e->name), key)
            || !brk_state(json_string_value(st), &e->state)) {
            return "a breaker without a valid name or state";
        }
        d->nbreakers++;
    }
    return NULL;
}

static const char *decode_doc(json_t *o, aura_fleet_digest_t *d)
{
    json_t *v;
    json_int_t ms;

    if (!json_is_object(o)) {
        return "not a JSON object";
    }
    v = json_object_get(o, "fleet");
    if (!json_is_integer(v) || json_integer_value(v) != AURA_FLEET_FORMAT) {
        return "not a fleet snapshot of format 1";
    }
    v = json_object_get(o, "instance");
    if (!json_is_string(v) || !aura_fleet_name_ok(json_string_value(v))) {
        return "no valid instance name";
    }
    aura_fleet_copy(d->instance, sizeof(d->instance), json_string_value(v));
    v = json_object_get(o, "epoch");
    if (!json_is_string(v) || !epoch_ok(json_string_value(v))) {
        return "no valid epoch";
    }
    aura_fleet_copy(d->epoch, sizeof(d->epoch), json_string_value(v));
    v = json_object_get(o, "seq");
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        return "no valid seq";
    }
    d->seq = (apr_uint64_t)json_integer_value(v);
    v = json_object_get(o, "sent");
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        return "no valid sent time";
    }
    d->sent = (apr_int64_t)json_integer_value(v);
    v = json_object_get(o, "interval_ms");
    ms = json_is_integer(v) ? json_integer_value(v) : 0;
    if (ms < AURA_FLEET_INTERVAL_MIN_MS || ms > AURA_FLEET_INTERVAL_MAX_MS) {
        return "no valid interval_ms";
    }
    d->interval = (apr_int64_t)ms * 1000;
    v = json_object_get(o, "nats_server");
    if (v && !json_is_null(v)
        && (!json_is_string(v) || !node_ok(json_string_value(v))
            || !aura_fleet_copy(d->node, sizeof(d->node),
                                json_string_value(v)))) {
        return "no valid nats_server";
    }
    v = json_object_get(json_object_get(o, "actor_quota"), "fallback");
    d->fallback = json_is_true(v) ? 1 : 0;
    return decode_breakers(json_object_get(o, "breakers"), d);
}

apr_status_t aura_fleet_decode(const char *buf, apr_size_t len,
                               aura_fleet_digest_t *d, json_t **doc,
                               const char **why)
{
    json_error_t err;
    json_t *o;

    memset(d, 0, sizeof(*d));
    if (!buf || !len) {
        *why = "empty";
        return APR_EINVAL;
    }
    if (len > AURA_FLEET_SNAPSHOT_MAX) {
        *why = "larger than 16 KiB";
        return APR_EINVAL;
    }
    o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    if (!o) {
        *why = "not JSON";
        return APR_EINVAL;
    }
    *why = decode_doc(o, d);
    if (*why) {
        json_decref(o);
        memset(d, 0, sizeof(*d));
        return APR_EINVAL;
    }
    if (doc) {
        *doc = o;
    }
    else {
        json_decref(o);
    }
    return APR_SUCCESS;
}

/* Remove path ("a" or "a.b") from doc; 1 when something was there. */
static int drop(json_t *doc, const char *path)
{
    const char *dot = strchr(path, '.');
    char head[32];

    if (!dot) {
        return json_object_del(doc, path) == 0;
    }
    if ((apr_size_t)(dot - path) >= sizeof(head)) {
        return 0;
    }
    memcpy(head, path, (apr_size_t)(dot - path));
    head[dot - path] = '\0';
    doc = json_object_get(doc, head);
    return json_is_object(doc) && json_object_del(doc, dot + 1) == 0;
}

char *aura_fleet_encode(json_t *doc, apr_size_t max, apr_size_t *len)
{
    static const char *const bulky[] = {
        "breakers.targets", "in_flight.children", "connections", "streams",
        "shm.zones", "shm"
    };
    json_t *trimmed = json_object_get(doc, "trimmed");
    apr_size_t i = 0;
    char *text;

    if (!json_is_array(trimmed)) {
        trimmed = NULL;
    }

    for (;;) {
        text = json_dumps(doc, JSON_COMPACT);
        if (!text) {
            return NULL;
        }
        *len = strlen(text);
        if (*len <= max) {
            return text;
        }
        free(text);
        while (i < sizeof(bulky) / sizeof(bulky[0]) && !drop(doc, bulky[i])) {
            i++;
        }
        if (i == sizeof(bulky) / sizeof(bulky[0])) {
            return NULL;
        }
        if (!trimmed) {
            trimmed = json_array();
            json_object_set_new(doc, "trimmed", trimmed);
        }
        json_array_append_new(trimmed, json_string(bulky[i++]));
    }
}

static const aura_fleet_brk_t *find_brk(const aura_fleet_digest_t *d,
                                        const char *name)
{
    apr_uint32_t i;

    for (i = 0; d && i < d->nbreakers; i++) {
        if (!strcmp(d->breakers[i].name, name)) {
            return &d->breakers[i];
        }
    }
    return NULL;
}

/* Copies src into dst, cut to fit at a UTF-8 character's boundary (so
 * that the cut text is still valid UTF-8 for JSON). */
static void cut_copy(char *dst, apr_size_t size, const char *src)
{
    apr_size_t n;

    src = src ? src : "";
    apr_cpystrn(dst, src, size);
    n = strlen(dst);
    if (n == strlen(src)) {
        return;
    }
    while (n && ((unsigned char)dst[n - 1] & 0xC0) == 0x80) {
        n--;
    }
    if (n && ((unsigned char)dst[n - 1] & 0xC0) == 0xC0) {
        n--;
    }
    dst[n] = '\0';
}

/* Appends one change; 0 when out is full. */
static int add(aura_fleet_event_t *out, int *n, int max, apr_int64_t now,
               const aura_fleet_digest_t *d, aura_fleet_event_e kind,
               const char *what, const char *from, const char *to)
{
    aura_fleet_event_t *e;

    if (*n >= max) {
        return 0;
    }
    e = &out[(*n)++];
    memset(e, 0, sizeof(*e));
    e->time = now;
    e->kind = kind;
    aura_fleet_copy(e->instance, sizeof(e->instance), d->instance);
    aura_fleet_copy(e->what, sizeof(e->what), what);
    /* A node longer than the record is cut: it is only shown. */
    cut_copy(e->from, sizeof(e->from), from);
    cut_copy(e->to, sizeof(e->to), to);
    return 1;
}

/* Breakers of a that differ from b's (absent = closed); both
 * directions are walked by the caller. */
static void diff_breakers(const aura_fleet_digest_t *old,
                          const aura_fleet_digest_t *new_, apr_int64_t now,
                          aura_fleet_event_t *out, int *n, int max)
{
    apr_uint32_t i;

    for (i = 0; i < new_->nbreakers; i++) {
        const aura_fleet_brk_t *b = &new_->breakers[i];
        const aura_fleet_brk_t *a = find_brk(old, b->name);
        apr_uint32_t was = a ? a->state : AURA_FLEET_BRK_CLOSED;

        if (was != b->state) {
            add(out, n, max, now, new_, AURA_FLEET_EV_BREAKER, b->name,
                aura_fleet_brk_name(was), aura_fleet_brk_name(b->state));
        }
    }
    for (i = 0; old && i < old->nbreakers; i++) {
        const aura_fleet_brk_t *a = &old->breakers[i];

        if (!find_brk(new_, a->name) && a->state != AURA_FLEET_BRK_CLOSED) {
            add(out, n, max, now, new_, AURA_FLEET_EV_BREAKER, a->name,
                aura_fleet_brk_name(a->state),
                aura_fleet_brk_name(AURA_FLEET_BRK_CLOSED));
        }
    }
}

int aura_fleet_diff(const aura_fleet_digest_t *old,
                    const aura_fleet_digest_t *new_, apr_int64_t now,
                    aura_fleet_event_t *out, int max)
{
    int n = 0;

    if (!old) {
        add(out, &n, max, now, new_, AURA_FLEET_EV_APPEARED, "", "",
            new_->node);
        /* What is already wrong when it appears is news too. */
        diff_breakers(NULL, new_, now, out, &n, max);
        if (new_->fallback) {
            add(out, &n, max, now, new_, AURA_FLEET_EV_FALLBACK_ENTERED,
                "", "", "");
        }
        return n;
    }
    if (strcmp(old->epoch, new_->epoch)) {
        add(out, &n, max, now, new_, AURA_FLEET_EV_RESTARTED, "",
            old->epoch, new_->epoch);
    }
    diff_breakers(old, new_, now, out, &n, max);
    if (old->fallback != new_->fallback) {
        add(out, &n, max, now, new_, new_->fallback
                                     ? AURA_FLEET_EV_FALLBACK_ENTERED
                                     : AURA_FLEET_EV_FALLBACK_LEFT,
            "", "", "");
    }
    if (strcmp(old->node, new_->node)) {
        add(out, &n, max, now, new_, AURA_FLEET_EV_NODE, "", old->node,
            new_->node);
    }
    return n;
}

aura_fleet_liveness_e aura_fleet_liveness(apr_time_t now,
                                          apr_time_t last_seen,
                                          apr_interval_time_t interval,
                                          apr_interval_time_t gone_after)
{
    apr_interval_time_t age = now > last_seen ? now - last_seen : 0;

    if (age > gone_after) {
        return AURA_FLEET_GONE;
    }
    if (age > AURA_FLEET_STALE_INTERVALS * interval) {
        return AURA_FLEET_STALE;
    }
    return AURA_FLEET_LIVE;
}

const char *aura_fleet_liveness_name(aura_fleet_liveness_e l)
{
    return l == AURA_FLEET_LIVE ? "live" : l == AURA_FLEET_STALE ? "stale"
                                                                 : "gone";
}

const char *aura_fleet_brk_name(apr_uint32_t state)
{
    return state == AURA_FLEET_BRK_OPEN ? "open"
           : state == AURA_FLEET_BRK_HALF_OPEN ? "half-open" : "closed";
}

const char *aura_fleet_event_name(apr_uint64_t kind)
{
    static const char *const names[] = {
        "?", "appeared", "restarted", "breaker", "fallback-entered",
        "fallback-left", "nats-node", "stale", "gone", "back"
    };

    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}
