/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet.c: the fleet view's publisher and subscriber (AuraFleet
 * On; docs/console.md).
 *
 * Publisher: one per instance, not one per child.  A mod_watchdog
 * singleton ("aura-fleet": one child of the instance holds it at a
 * time) runs every AuraFleetInterval on its own thread in that child:
 * it collects what /health with AuraHealthDetail On shows
 * (aura_state_describe_pool), adds the instance's name, epoch (its
 * shared segment's id), a sequence kept in the shared segment (so a
 * graceful restart, whose new singleton lives in another child, goes on
 * counting), the send time and the interval, trims it to 16 KiB and
 * NATS's max_payload (aura_fleet_encode) and publishes it on
 * <AuraFleetSubject>.snapshot.<instance as a subject token> with the
 * child's own NATS connection.  Then it sweeps the table for instances
 * gone stale or gone.  Without mod_watchdog this instance publishes
 * nothing and records no stale/gone change (it still keeps the others'
 * snapshots, and the page still computes each instance's state).
 *
 * Subscriber: every child subscribes to <subject>.snapshot.* in the
 * queue group "aura-fleet.<instance token>", so NATS hands each
 * snapshot to one child of each instance, not to every child: a
 * snapshot is decoded and kept once per instance.  Writes are
 * idempotent by (instance, epoch, seq) anyway (aura_fleet_table.c), so
 * a child of an old generation still subscribed during a graceful
 * restart does no harm.
 *
 * What arrives is hostile: decoded with bounds (aura_fleet_snap.c), it
 * must name in its subject the instance it describes; a malformed one
 * is dropped, counted and logged (at most once per 10 s per child).
 *
 * Per-child state: the subscription (child_init to the child's exit)
 * and the times of the last rate-limited log lines (atomics).
 */
#include "core/aura_module.h"
#include "core/aura_redact.h"
#include "core/aura_watchdog.h"
#include "fleet/aura_fleet.h"
#include "fleet/aura_fleet_conf.h"
#include "fleet/aura_fleet_snap.h"
#include "http/aura_state.h"
#include "nats/aura_nats.h"
#include "shm/aura_shm.h"

#include "ap_mpm.h"
#include "scoreboard.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include <jansson.h>
#include <nats/nats.h>
#include <stdlib.h>

/* Written in post_config only. */
static int fleet_on;
static const char *fleet_instance;
static const char *fleet_publish_subject;   /* <subject>.snapshot.<tok> */
static const char *fleet_prefix;            /* <subject>.snapshot. */
static const char *fleet_wildcard;          /* <subject>.snapshot.* */
static const char *fleet_queue;             /* aura-fleet.<tok> */
static apr_interval_time_t fleet_interval;
static apr_interval_time_t fleet_gone;
/* Written in child_init and at the child's exit. */
static server_rec *fleet_server;
static natsSubscription *fleet_sub;
/* When each rate-limited line was last logged in this child. */
enum { LOG_MALFORMED, LOG_FULL, LOG_PUBLISH, LOG_TOO_BIG, LOG_KINDS };
static volatile apr_uint64_t last_logged[LOG_KINDS];

#define LOG_EVERY apr_time_from_sec(10)

/* 1 when this kind may be logged now (claims the slot). */
static int may_log(int kind)
{
    apr_uint64_t now = (apr_uint64_t)apr_time_now();
    apr_uint64_t last = apr_atomic_read64(&last_logged[kind]);

    return (!last || now - last >= (apr_uint64_t)LOG_EVERY)
           && apr_atomic_cas64(&last_logged[kind], now, last) == last;
}

const char *aura_fleet_instance(void)
{
    return fleet_on ? fleet_instance : NULL;
}

apr_interval_time_t aura_fleet_gone_after(void)
{
    return fleet_gone ? fleet_gone : AURA_FLEET_DEFAULT_GONE;
}

/* The rate-limit tables' fill ("used" and "limited" of each table)
 * needs a walk of every slot of every table, a few ms for the default
 * sizes: the publisher walks at most every FILL_EVERY and carries the
 * last walk's figures in the snapshots between, with "fill_at" saying
 * when they were taken.  Per child, touched by the mod_watchdog thread
 * of the singleton only (a new singleton, after a graceful restart or
 * in another child, starts with a walk). */
#define FILL_EVERY apr_time_from_sec(10)
static json_t *last_fill;
static apr_time_t last_fill_at;

static void fill_one(json_t *to, json_t *from)
{
    static const char *const keys[] = { "used", "limited" };
    int i;

    for (i = 0; i < 2; i++) {
        json_t *v = json_object_get(from, keys[i]);

        if (json_is_integer(v) && json_is_object(to)) {
            json_object_set_new(to, keys[i],
                                json_integer(json_integer_value(v)));
        }
    }
}

/* After a walk: keep its figures (the actor table as ""); else: put the
 * kept ones into shm's tables. */
static void fill_tables(json_t *shm, int walked, apr_time_t now)
{
    json_t *zones = json_object_get(shm, "zones"), *v;
    const char *k;

    if (walked) {
        json_decref(last_fill);
        last_fill = json_object();
        json_object_foreach(zones, k, v) {
            json_t *keep = json_object();

            fill_one(keep, v);
            json_object_set_new(last_fill, k, keep);
        }
        v = json_object();
        fill_one(v, json_object_get(shm, "actor_table"));
        json_object_set_new(last_fill, "", v);
        last_fill_at = now;
    }
    else if (last_fill) {
        json_object_foreach(zones, k, v) {
            fill_one(v, json_object_get(last_fill, k));
        }
        fill_one(json_object_get(shm, "actor_table"),
                 json_object_get(last_fill, ""));
    }
    if (last_fill) {
        json_object_set_new(shm, "fill_at", json_integer(last_fill_at));
    }
}

/* The snapshot of this instance now, in p. */
static json_t *snapshot(apr_pool_t *p, aura_fleet_shm_t *f)
{
    json_t *o = json_object();
    json_t *id;
    apr_time_t now = apr_time_now();
    int gen = 0, walk = !last_fill || now - last_fill_at >= FILL_EVERY;

    aura_state_describe_pool(o, p, walk);
    fill_tables(json_object_get(o, "shm"), walk, now);
    id = json_object_get(json_object_get(o, "shm"), "id");
    json_object_set_new(o, "fleet", json_integer(AURA_FLEET_FORMAT));
    json_object_set_new(o, "instance", json_string(fleet_instance));
    json_object_set_new(o, "epoch", json_string(json_is_string(id)
                                                ? json_string_value(id)
                                                : "0"));
    json_object_set_new(o, "seq", json_integer((json_int_t)
                                               apr_atomic_inc64(&f->seq)
                                               + 1));
    json_object_set_new(o, "sent", json_integer((json_int_t)
                                                apr_time_now()));
    json_object_set_new(o, "interval_ms", json_integer((json_int_t)
                        apr_time_as_msec(fleet_interval)));
    if (ap_scoreboard_image) {
        json_object_set_new(o, "started", json_integer((json_int_t)
                            ap_scoreboard_image->global->restart_time));
    }
    ap_mpm_query(AP_MPMQ_GENERATION, &gen);
    json_object_set_new(o, "generation", json_integer(gen));
    json_object_set_new(o, "version", json_string(AURA_VERSION));
    return o;
}

static void publish(apr_pool_t *p, server_rec *s)
{
    natsConnection *nc = aura_nats_conn();
    aura_fleet_shm_t *f;
    apr_int64_t payload = aura_nats_max_payload();
    apr_size_t max = AURA_FLEET_SNAPSHOT_MAX, len = 0;
    natsStatus st;
    json_t *doc;
    char *text;
    void *block;

    f = aura_shm_fleet(&block);
    /* Not connected (yet): nothing to say it on; the others see this
     * instance go stale, which is the truth. */
    if (!f || !nc || !aura_nats_connected()) {
        return;
    }
    if (payload > 0 && (apr_uint64_t)payload < max) {
        max = (apr_size_t)payload;
    }
    doc = snapshot(p, f);
    text = aura_fleet_encode(doc, max, &len);
    json_decref(doc);
    if (!text) {
        apr_atomic_inc64(&f->too_big);
        if (may_log(LOG_TOO_BIG)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(02300)
                         "fleet snapshot not sent: even trimmed, it is "
                         "larger than %" APR_SIZE_T_FMT " bytes", max);
        }
        return;
    }
    st = natsConnection_Publish(nc, fleet_publish_subject, text, (int)len);
    free(text);
    if (st == NATS_OK) {
        apr_atomic_inc64(&f->published);
        return;
    }
    apr_atomic_inc64(&f->publish_failed);
    if (may_log(LOG_PUBLISH)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(02301)
                     "cannot publish the fleet snapshot on %s: %s",
                     fleet_publish_subject, natsStatus_GetText(st));
    }
}

/* The singleton's tick: publish, then sweep.  Always APR_SUCCESS:
 * anything else would stop mod_watchdog calling it for good. */
static apr_status_t fleet_tick(int state, void *data, apr_pool_t *p)
{
    server_rec *s = data;

    if (state == AP_WATCHDOG_STATE_STOPPING) {
        return APR_SUCCESS;
    }
    publish(p, s);
    aura_fleet_sweep(apr_time_now(), fleet_gone);
    return APR_SUCCESS;
}

/* The sender's subject for the log: bounded, printable ASCII only (no
 * pool on a nats.c thread for ap_escape_logitem). */
static void printable(char *out, apr_size_t size, const char *in)
{
    apr_size_t i;

    for (i = 0; in && in[i] && i + 1 < size; i++) {
        out[i] = in[i] > 0x20 && in[i] < 0x7f && in[i] != '"' ? in[i] : '?';
    }
    out[i] = '\0';
}

static void fleet_on_snapshot(natsConnection *nc, natsSubscription *sub,
                        natsMsg *msg, void *closure)
{
    const char *subject = natsMsg_GetSubject(msg);
    const char *data = natsMsg_GetData(msg);
    int len = natsMsg_GetDataLength(msg);
    apr_size_t plen = strlen(fleet_prefix);
    aura_fleet_digest_t d;
    aura_fleet_shm_t *f;
    const char *why = NULL;
    apr_status_t rv;
    void *block;

    (void)nc; (void)sub; (void)closure;
    f = aura_shm_fleet(&block);
    if (!f) {
        aura_nats_msg_release(msg);
        return;
    }
    rv = aura_fleet_decode(data, len > 0 ? (apr_size_t)len : 0, &d, NULL,
                           &why);
    if (rv == APR_SUCCESS
        && (strncmp(subject, fleet_prefix, plen)
            || !aura_fleet_token_matches(subject + plen, d.instance))) {
        why = "its subject names another instance";
        rv = APR_EINVAL;
    }
    if (rv != APR_SUCCESS) {
        apr_atomic_inc64(&f->malformed);
        if (may_log(LOG_MALFORMED)) {
            char where[128];

            printable(where, sizeof(where), subject);
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, fleet_server,
                         AURA_LOGNO(02302) "fleet snapshot dropped (%d bytes on "
                         "%s): %s", len, where, why);
        }
        aura_nats_msg_release(msg);
        return;
    }
    rv = aura_fleet_store(&d, data, (apr_size_t)len, apr_time_now(),
                          fleet_gone);
    aura_nats_msg_release(msg);
    if (rv == APR_ENOSPC && may_log(LOG_FULL)) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, fleet_server,
                     AURA_LOGNO(02303) "fleet view full: no slot for another "
                     "instance (AuraFleetMaxInstances); its snapshots are "
                     "dropped until one of the instances kept is gone");
    }
}

static void subscribe(natsConnection *nc, server_rec *s)
{
    natsStatus st;
    void *block;

    fleet_server = s;
    if (!fleet_on || !nc || !aura_shm_fleet(&block)) {
        return;
    }
    st = natsConnection_QueueSubscribe(&fleet_sub, nc, fleet_wildcard,
                                       fleet_queue, fleet_on_snapshot, NULL);
    if (st != NATS_OK) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(02304)
                     "cannot subscribe to the fleet's snapshots on %s: %s",
                     fleet_wildcard, natsStatus_GetText(st));
        fleet_sub = NULL;
    }
}

/* Before the connection goes (aura_nats.c's pre-cleanup calls it): no
 * snapshot is delivered after this. */
static void unsubscribe(void)
{
    if (fleet_sub) {
        natsSubscription_Destroy(fleet_sub);
        fleet_sub = NULL;
    }
}

static const aura_nats_user_t fleet_user = { subscribe, unsubscribe, NULL };

void aura_fleet_register(void)
{
    aura_nats_add_user(&fleet_user);
}

apr_status_t aura_fleet_pre_config(apr_pool_t *pconf)
{
    return aura_fleet_table_pre_config(pconf);
}

static const char *instance_name(apr_pool_t *pconf,
                                 const aura_fleet_conf_t *c)
{
    char host[APRMAXHOSTLEN + 1];

    if (c && c->instance) {
        return c->instance;
    }
    if (apr_gethostname(host, sizeof(host), pconf) == APR_SUCCESS
        && aura_fleet_name_ok(host)) {
        return apr_pstrdup(pconf, host);
    }
    return "localhost";
}

apr_status_t aura_fleet_post_config(apr_pool_t *pconf, server_rec *s)
{
    const aura_fleet_conf_t *c = aura_fleet_conf(s);
    const char *subject = aura_fleet_conf_subject(c), *tok;
    apr_status_t rv;

    fleet_on = aura_fleet_conf_on(c);
    if (!fleet_on) {
        return APR_SUCCESS;
    }
    fleet_instance = instance_name(pconf, c);
    fleet_interval = aura_fleet_conf_interval(c);
    fleet_gone = aura_fleet_conf_gone_after(c);
    tok = aura_fleet_token(pconf, fleet_instance);
    fleet_prefix = apr_pstrcat(pconf, subject, ".snapshot.", NULL);
    fleet_publish_subject = apr_pstrcat(pconf, fleet_prefix, tok, NULL);
    fleet_wildcard = apr_pstrcat(pconf, fleet_prefix, "*", NULL);
    fleet_queue = apr_pstrcat(pconf, "aura-fleet.", tok, NULL);
    if ((rv = aura_fleet_table_post_config(s)) != APR_SUCCESS) {
        return rv;
    }
    rv = aura_watchdog_every(pconf, s, AURA_FLEET_WATCHDOG, 1,
                             fleet_interval, fleet_tick);
    if (rv == APR_ENOTIMPL) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(02305)
                     "mod_watchdog is not available: this instance "
                     "publishes no fleet snapshot (it still keeps the "
                     "others') and records no instance going stale or "
                     "gone");
    }
    else if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, AURA_LOGNO(02306)
                     "cannot register the fleet snapshot publisher with "
                     "mod_watchdog");
    }
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, AURA_LOGNO(02307)
                 "fleet view on: instance %s publishes every %"
                 APR_TIME_T_FMT " ms on %s", fleet_instance,
                 apr_time_as_msec(fleet_interval), fleet_publish_subject);
    return APR_SUCCESS;
}

void aura_fleet_child_init(apr_pool_t *pchild, server_rec *s)
{
    if (fleet_on) {
        aura_fleet_table_child_init(pchild, s);
    }
}
