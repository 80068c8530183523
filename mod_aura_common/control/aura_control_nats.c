/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_control_nats.c: the incident controls across the fleet.
 *
 * Subjects (AuraControlSubject, default aura.gateway.controls):
 *   <subject>.set   one record (aura_control_record.h's JSON) per
 *                   message: a control set, updated or lifted anywhere;
 *   <subject>.sync  a request for every control an instance holds; the
 *                   reply subject gets one message per record.
 * Both are subscribed in a queue group of this instance's own
 * ("aura-controls-<instance id>", aura_control_instance()): one child of
 * each instance takes each message, and the table it merges into is the
 * instance's (the shared segment), which every child reads.
 *
 * Each child also subscribes to an inbox of its own under
 * AuraNATSInboxPrefix, the reply subject of the sync it sends each time
 * its connection is made or made again (aura_nats_user_t.connected): an
 * instance that starts later, or comes back after losing NATS, learns
 * the controls in force, tombstones included, from every instance that
 * answers.  Replies are merged as they come (no waiting, no deadline:
 * the merge rule makes order and repetition harmless).  At the same
 * moment it publishes its own table on .set: after an outage of NATS
 * itself, an instance that asks before the others are back gets no
 * answer from them, and learns what they hold when they tell it.
 *
 * A message is hostile input: anyone allowed to publish on the subject
 * can send one.  It is bounded (AURA_CONTROL_WIRE_MAX), decoded and
 * validated as strictly as a POST (aura_control_decode), and a revision
 * more than a few minutes in the future is refused (it would win every
 * merge); what fails is logged (once a second per child) and dropped.
 * The callbacks run on nats.c threads: they touch the table under its
 * mutex and a pool of their own, never a request.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "control/aura_control.h"
#include "control/aura_control_conf.h"
#include "control/aura_control_nats.h"
#include "nats/aura_nats.h"
#include "nats/aura_nats_conf.h"
#include "nats/aura_subject.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include <nats/nats.h>

/* How far in the future a revision may be (clocks agree within this). */
#define SKEW_MAX apr_time_from_sec(300)
/* Syncs a child answers per second: a flood of them is not amplified. */
#define SYNCS_PER_SEC 20

/* Written in child_init (the user's) only; read by nats.c threads. */
static char subj_set[256], subj_sync[256], inbox[256];
static natsSubscription *set_sub, *sync_sub, *inbox_sub;
static server_rec *control_server;
/* Second of the last "ignored" line (per child). */
static volatile apr_uint64_t ignored_logged;
/* The sync handler runs on one thread (its subscription's). */
static apr_time_t sync_second;
static int sync_count;

static void log_ignored(const char *subject, const char *why)
{
    apr_uint64_t sec = (apr_uint64_t)apr_time_sec(apr_time_now());
    apr_uint64_t last = apr_atomic_read64(&ignored_logged);

    if (last == sec
        || apr_atomic_cas64(&ignored_logged, sec, last) != last) {
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, control_server,
                 AURA_LOGNO(02203) "incident control message on %s "
                 "ignored: %s (logged at most once a second)", subject,
                 why);
}

/* One record from the fleet: validated, then merged. */
static void take(apr_pool_t *p, const char *subject, const char *data,
                 int len)
{
    aura_control_t c, before;
    apr_time_t now = apr_time_now();
    const char *why;

    why = len > 0 ? aura_control_decode(p, data, (apr_size_t)len, &c)
                  : "empty";
    if (!why && c.updated > now + SKEW_MAX) {
        why = "its revision lies in the future (clocks apart?)";
    }
    if (why) {
        log_ignored(subject, ap_escape_logitem(p, why));
        return;
    }
    switch (aura_control_merge(&c, now, &before)) {
    case AURA_CONTROL_ADDED:
    case AURA_CONTROL_REPLACED:
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, control_server,
                     AURA_LOGNO(02204) "incident control %s %s %s (id %s, "
                     "by %s) learnt from the fleet",
                     aura_control_kind_name((int)c.kind),
                     ap_escape_logitem(p, c.target),
                     c.lifted ? "lifted" : "in force", c.id,
                     ap_escape_logitem(p, c.by));
        break;
    case AURA_CONTROL_FULL:
        aura_control_log_full(control_server, &c);
        break;
    default:
        break;
    }
}

static void on_record(natsConnection *nc, natsSubscription *sub,
                      natsMsg *msg, void *closure)
{
    apr_pool_t *p = NULL;

    (void)nc; (void)sub; (void)closure;
    if (apr_pool_create(&p, NULL) == APR_SUCCESS) {
        take(p, natsMsg_GetSubject(msg), natsMsg_GetData(msg),
             natsMsg_GetDataLength(msg));
        apr_pool_destroy(p);
    }
    natsMsg_Destroy(msg);
}

/* Another instance asks for every control: one message each. */
static void answer_sync(natsConnection *nc, const char *reply)
{
    apr_pool_t *p = NULL;
    apr_array_header_t *all;
    int i;

    if (apr_pool_create(&p, NULL) != APR_SUCCESS) {
        return;
    }
    all = aura_control_list(p);
    for (i = 0; i < all->nelts; i++) {
        const char *line = aura_control_encode(
            p, &APR_ARRAY_IDX(all, i, aura_control_t));

        if (line) {
            natsConnection_Publish(nc, reply, line, (int)strlen(line));
        }
    }
    apr_pool_destroy(p);
}

static void on_sync(natsConnection *nc, natsSubscription *sub,
                    natsMsg *msg, void *closure)
{
    const char *reply = natsMsg_GetReply(msg);
    apr_time_t sec = apr_time_sec(apr_time_now());

    (void)sub; (void)closure;
    if (sec != sync_second) {
        sync_second = sec;
        sync_count = 0;
    }
    if (!reply || strlen(reply) > 255 || !aura_subject_literal(reply)) {
        log_ignored(subj_sync, "a sync without a valid reply subject");
    }
    else if (++sync_count > SYNCS_PER_SEC) {
        log_ignored(subj_sync, "more than " APR_STRINGIFY(SYNCS_PER_SEC)
                               " syncs in a second");
    }
    else {
        answer_sync(nc, reply);
    }
    natsMsg_Destroy(msg);
}

static void subscribe(natsConnection *nc, natsSubscription **sub,
                      const char *subject, const char *queue,
                      natsMsgHandler fn, server_rec *s)
{
    natsStatus st = queue
        ? natsConnection_QueueSubscribe(sub, nc, subject, queue, fn, NULL)
        : natsConnection_Subscribe(sub, nc, subject, fn, NULL);

    if (st != NATS_OK) {
        *sub = NULL;
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(02205)
                     "incident controls: cannot subscribe to %s: %s (this "
                     "child will not learn controls set elsewhere)",
                     subject, natsStatus_GetText(st));
    }
}

/* "<AuraNATSInboxPrefix>.<nuid>" of this child. */
static int make_inbox(const char *prefix)
{
    natsInbox *nuid = NULL;
    const char *tail;

    if (natsInbox_Create(&nuid) != NATS_OK) {
        return 0;
    }
    tail = strchr(nuid, '.') ? strchr(nuid, '.') + 1 : nuid;
    apr_snprintf(inbox, sizeof(inbox), "%s.%s", prefix, tail);
    natsInbox_Destroy(nuid);
    return 1;
}

static void control_child_init(natsConnection *nc, server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    const char *subject = aura_conf_control_subject(c);
    char queue[64];

    control_server = s;
    if (!nc) {
        return;
    }
    apr_snprintf(subj_set, sizeof(subj_set), "%s.set", subject);
    apr_snprintf(subj_sync, sizeof(subj_sync), "%s.sync", subject);
    apr_snprintf(queue, sizeof(queue), "aura-controls-%s",
                 aura_control_instance());
    subscribe(nc, &set_sub, subj_set, queue, on_record, s);
    subscribe(nc, &sync_sub, subj_sync, queue, on_sync, s);
    if (make_inbox(aura_conf_nats_inbox_prefix(c))) {
        subscribe(nc, &inbox_sub, inbox, NULL, on_record, s);
    }
}

/* Each (re)connection: ask every instance for its controls, and tell
 * them ours.  Both, because after an outage of NATS itself every
 * instance reconnects at its own moment: one that asks before the
 * others are back gets no answer from them, and learns what they hold
 * from what they tell when they are back. */
static void control_connected(natsConnection *nc)
{
    natsStatus st;

    if (!inbox_sub) {
        return;
    }
    answer_sync(nc, subj_set);
    st = natsConnection_PublishRequest(nc, subj_sync, inbox, NULL, 0);
    ap_log_error(APLOG_MARK, st == NATS_OK ? APLOG_DEBUG : APLOG_WARNING, 0,
                 control_server, AURA_LOGNO(02206) "incident controls: "
                 "sync asked on %s: %s", subj_sync, natsStatus_GetText(st));
}

static void control_child_exit(void)
{
    natsSubscription **subs[] = { &set_sub, &sync_sub, &inbox_sub };
    int i;

    for (i = 0; i < 3; i++) {
        if (*subs[i]) {
            natsSubscription_Destroy(*subs[i]);
            *subs[i] = NULL;
        }
    }
}

static const aura_nats_user_t control_user = {
    control_child_init, control_child_exit, control_connected
};

void aura_control_nats_register(void)
{
    aura_nats_add_user(&control_user);
}

int aura_control_publish(request_rec *r, const aura_control_t *c)
{
    natsConnection *nc = aura_nats_conn();
    const char *line = aura_control_encode(r->pool, c);
    natsStatus st = NATS_CONNECTION_CLOSED;

    if (nc && line && *subj_set) {
        st = natsConnection_Publish(nc, subj_set, line, (int)strlen(line));
        if (st == NATS_OK) {
            st = natsConnection_FlushTimeout(nc, 1000);
        }
    }
    if (st != NATS_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(02207)
                      "incident control %s %s (id %s) is in force here but "
                      "could not be sent to the fleet on %s: %s (the other "
                      "instances learn it when they next sync)",
                      aura_control_kind_name((int)c->kind),
                      ap_escape_logitem(r->pool, c->target), c->id,
                      *subj_set ? subj_set : "(no NATS)",
                      natsStatus_GetText(st));
        return 0;
    }
    return 1;
}
