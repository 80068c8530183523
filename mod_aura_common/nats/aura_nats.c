/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nats.c: one NATS connection per child process.
 *
 * Opened in child_init, never in the parent: nats_Open() starts library
 * threads (timers, callbacks, GC) that do not survive fork, and a
 * library initialised before fork fails silently in the child.  The
 * connect does not block child_init when NATS is down: with
 * RetryOnFailedConnect and a callback, nats.c returns at once and keeps
 * trying in the background, and requests meanwhile get 503.  Requests
 * in flight when the connection drops fail at once
 * (FailRequestsOnDisconnect) instead of waiting out their budget.
 *
 * Losing one node of a cluster (several AuraNATSServers): nats.c sees
 * the socket close, on_disconnected() counts the loss, every waiting
 * request sees it at its next wait slice (aura_inbox.c) and answers 503
 * (its request may have reached a responder, so it is never sent
 * again), and nats.c reconnects to another node of the list (or
 * one the cluster advertised) at once.  While it does, nothing is
 * buffered: nats.c would keep publishes in a reconnect buffer (8 MB by
 * default) and send them once reconnected, i.e. after their request
 * may have been answered 503 already, or after its budget: a late
 * execution the client was told had failed.  With a buffer of 0 bytes a
 * publish during the reconnect is refused at once (NATS_INSUFFICIENT_
 * BUFFER), proof that it never left this process; the handler then
 * waits for the reconnect, for at most AURA_NATS_RECONNECT_GRACE after
 * the loss and within the route's budget, and sends it then
 * (aura_nats_await_reconnect()).
 *
 * The connection is shared by all worker threads of the child (nats.c
 * locks internally; each request uses its own natsMsg).  It is destroyed
 * by a pre-cleanup of the child pool, so it closes when the child exits,
 * before anything else of the child is: its callbacks call into the
 * key cache (a rotation's invalidation), whose mutex and slots belong to
 * the child pool too.  As a plain cleanup, registered in child_init
 * before the key cache's, it ran after it (cleanups run last-in-first-
 * out): the cache's mutex was destroyed while the subscription could
 * still deliver.  A pre-cleanup runs before every cleanup and before the
 * pool's subpools are destroyed, whatever the order of child_init; and
 * the teardown waits until the invalidation handler has returned for
 * the last time (nats.c's completion callback), so no callback of this
 * connection runs once it is over.  Callbacks run on nats.c threads:
 * they only log; the connection state is read from nats.c itself.
 *
 * What lives on the connection registers itself from register_hooks
 * (aura_nats_add_user: the reply inboxes; aura_nats_on_invalidation:
 * the key store), so the client calls nothing above it.
 */
#include "core/aura_module.h"
#include "auth/aura_identity.h"
#include "core/aura_config.h"
#include "nats/aura_nats.h"
#include "nats/aura_nats_auth.h"
#include "nats/aura_nats_conf.h"
#include "store/aura_store_conf.h"

#include "ap_mpm.h"
#include "apr_strings.h"
#include "apr_atomic.h"

#include <nats/nats.h>
#include <pthread.h>
#include <time.h>

/* Written in child_init only; read by worker threads afterwards. */
static natsConnection *child_nc;
static natsSubscription *invalidation_sub;
static const char *invalidation_subject;
static server_rec *child_server;
/* Set from register_hooks, before any child exists. */
#define MAX_USERS 6
static const aura_nats_user_t *users[MAX_USERS];
static int user_count;
/* 1 once every user's child_init ran: from then on, (re)connections are
 * told to them (set in child_init, read on nats.c threads). */
static volatile apr_uint32_t users_ready;
/* Who hears of a key invalidation: the key cache, the open streams
 * (aura_streamend.c).  Set from register_hooks only. */
#define MAX_INVALIDATION_FNS 2
static aura_nats_invalidation_fn *invalidation_fns[MAX_INVALIDATION_FNS];
/* Set by the child pool cleanup before the connection is destroyed, so
 * the disconnect that destroying causes is not reported as an outage. */
static volatile int child_exiting;
/* The invalidation subscription's completion (nats.c calls it once the
 * subscription is closed and its handler has returned for the last
 * time): armed in child_init, awaited by the child pool cleanup. */
static pthread_mutex_t invalidation_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t invalidation_cond = PTHREAD_COND_INITIALIZER;
static int invalidation_armed;      /* under invalidation_lock */
static int invalidation_complete;   /* under invalidation_lock */

/* How long the child's exit waits for the invalidation handler to
 * return: it holds the key cache's lock for an O(size) scan, no I/O, and
 * no request thread is left to contend for it. */
#define INVALIDATION_DRAIN_WAIT 2    /* seconds */
/* 1 while connected, kept by the connection's callbacks.  Every request
 * asks, often more than once; natsConnection_Status() takes the
 * connection's lock, which the publishing threads contend for: asking
 * it cost 4 % of the child's CPU under load.  The callbacks run shortly
 * after the change; a request that slips through in between is
 * refused by nats.c or sees the loss at its next wait slice
 * (aura_inbox.c). */
static volatile apr_uint32_t child_connected;
/* The server's max payload, read once per (re)connect: reading it from
 * the connection takes its lock, on every request. */
static volatile apr_uint64_t child_max_payload;
/* When the connection was last lost (apr_time_t), 0 while connected:
 * requests arriving shortly after wait for the reconnect. */
static volatile apr_uint64_t child_lost_at;
/* How many times the connection was lost, ever: a request sent before a
 * loss can have no reply, even if the reconnect is over by the time its
 * thread wakes (aura_inbox.c compares it). */
static volatile apr_uint32_t child_losses;

/* nats.c frees every message on its garbage-collector thread: each
 * natsMsg_Destroy() queues the message and wakes that thread (a futex
 * wake and a context switch on each side), two or three times a request;
 * measured, that thread alone took 7 % of the child's CPU.  Small
 * messages are handed to it in batches instead: one wake frees a batch.
 * What a batch holds is bounded (RELEASE_BATCH messages of at most
 * RELEASE_SMALL payload bytes; bigger ones go at once), and it is
 * released when the child exits. */
#define RELEASE_BATCH 32
#define RELEASE_SMALL 4096

static pthread_mutex_t release_lock = PTHREAD_MUTEX_INITIALIZER;
static natsMsg *release_batch[RELEASE_BATCH];
static int release_count;

void aura_nats_msg_release(natsMsg *m)
{
    natsMsg *full[RELEASE_BATCH];
    int n = 0, i;

    if (!m) {
        return;
    }
    if (child_exiting || natsMsg_GetDataLength(m) > RELEASE_SMALL) {
        natsMsg_Destroy(m);
        return;
    }
    pthread_mutex_lock(&release_lock);
    release_batch[release_count++] = m;
    if (release_count == RELEASE_BATCH) {
        memcpy(full, release_batch, sizeof(full));
        n = RELEASE_BATCH;
        release_count = 0;
    }
    pthread_mutex_unlock(&release_lock);
    for (i = 0; i < n; i++) {
        natsMsg_Destroy(full[i]);
    }
}

apr_status_t aura_nats_msg_cleanup(void *m)
{
    aura_nats_msg_release(m);
    return APR_SUCCESS;
}

static void release_all(void)
{
    int i;

    pthread_mutex_lock(&release_lock);
    for (i = 0; i < release_count; i++) {
        natsMsg_Destroy(release_batch[i]);
    }
    release_count = 0;
    pthread_mutex_unlock(&release_lock);
}

static void tell_connected(natsConnection *nc)
{
    int i;

    for (i = 0; i < user_count; i++) {
        if (users[i]->connected) {
            users[i]->connected(nc);
        }
    }
}

static void on_connected(natsConnection *nc, void *closure)
{
    char url[256];

    (void)closure;
    apr_atomic_set64(&child_max_payload,
                     (apr_uint64_t)natsConnection_GetMaxPayload(nc));
    apr_atomic_set32(&child_connected, 1);
    if (natsConnection_GetConnectedUrl(nc, url, sizeof(url)) != NATS_OK) {
        apr_cpystrn(url, "?", sizeof(url));
    }
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, child_server, AURA_LOGNO(00010)
                 "NATS connected to %s (pid %" APR_PID_T_FMT ")", url,
                 getpid());
    if (apr_atomic_read32(&users_ready)) {
        tell_connected(nc);
    }
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    apr_uint64_t lost = apr_atomic_xchg64(&child_lost_at, 0);
    char url[256], id[64];

    on_connected(nc, closure);
    if (natsConnection_GetConnectedUrl(nc, url, sizeof(url)) != NATS_OK) {
        apr_cpystrn(url, "?", sizeof(url));
    }
    if (natsConnection_GetConnectedServerId(nc, id, sizeof(id)) != NATS_OK) {
        apr_cpystrn(id, "?", sizeof(id));
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, child_server, AURA_LOGNO(01360)
                 "NATS reconnected to %s (server %s, pid %" APR_PID_T_FMT
                 ") %" APR_TIME_T_FMT " ms after the loss", url, id,
                 getpid(), lost ? apr_time_as_msec(apr_time_now()
                                                   - (apr_time_t)lost) : 0);
}

static void on_disconnected(natsConnection *nc, void *closure)
{
    (void)nc; (void)closure;
    apr_atomic_set64(&child_lost_at, (apr_uint64_t)apr_time_now());
    apr_atomic_inc32(&child_losses);
    apr_atomic_set32(&child_connected, 0);
    if (child_exiting) {
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, child_server,
                 AURA_LOGNO(00011) "NATS connection lost (pid %"
                 APR_PID_T_FMT "), reconnecting", getpid());
    aura_nats_report(child_server, nc, NATS_OK);
}

static void on_closed(natsConnection *nc, void *closure)
{
    (void)nc; (void)closure;
    apr_atomic_set32(&child_connected, 0);
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, child_server,
                 AURA_LOGNO(00012) "NATS connection closed (pid %"
                 APR_PID_T_FMT ")", getpid());
}

/* Asynchronous errors: a permissions violation, credentials that
 * expired while connected, a slow consumer.  Logged, once a second. */
static void on_error(natsConnection *nc, natsSubscription *sub,
                     natsStatus err, void *closure)
{
    (void)sub; (void)closure;
    aura_nats_report(child_server, nc, err);
}

static void on_invalidation_complete(void *closure)
{
    (void)closure;
    pthread_mutex_lock(&invalidation_lock);
    invalidation_complete = 1;
    pthread_cond_broadcast(&invalidation_cond);
    pthread_mutex_unlock(&invalidation_lock);
}

/* Closes the invalidation subscription and waits, for at most
 * INVALIDATION_DRAIN_WAIT, until nats.c says its handler will not run
 * again: after this the key cache may go. */
static void close_invalidations(server_rec *s)
{
    struct timespec until;
    int rc = 0;

    if (!invalidation_sub) {
        return;
    }
    /* Unsubscribes and closes it: a message not yet delivered is
     * dropped, one being handled is finished. */
    natsSubscription_Destroy(invalidation_sub);
    invalidation_sub = NULL;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += INVALIDATION_DRAIN_WAIT;
    pthread_mutex_lock(&invalidation_lock);
    while (invalidation_armed && !invalidation_complete && rc == 0) {
        rc = pthread_cond_timedwait(&invalidation_cond, &invalidation_lock,
                                    &until);
    }
    pthread_mutex_unlock(&invalidation_lock);
    if (rc != 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(01801)
                     "child exit (pid %" APR_PID_T_FMT "): the key "
                     "invalidation handler did not return within %d s; "
                     "closing NATS anyway", getpid(),
                     INVALIDATION_DRAIN_WAIT);
    }
}

/* A pre-cleanup of the child pool: see the top of this file. */
static apr_status_t nats_child_cleanup(void *data)
{
    int i;

    (void)data;
    child_exiting = 1;
    apr_atomic_set32(&child_connected, 0);
    for (i = 0; i < user_count; i++) {
        if (users[i]->child_exit) {
            users[i]->child_exit();
        }
    }
    close_invalidations(child_server);
    if (child_nc) {
        natsConnection_Destroy(child_nc);
        child_nc = NULL;
    }
    release_all();
    /* Waits for the library threads; every object is destroyed above,
     * so it returns promptly. */
    nats_CloseAndWait(1000);
    return APR_SUCCESS;
}

static natsStatus build_options(apr_pool_t *p, const aura_server_conf_t *c,
                                natsOptions **out)
{
    natsOptions *o = NULL;
    natsStatus s = natsOptions_Create(&o);
    int n;
    const char **urls = aura_conf_nats_servers(p, c, &n);

    if (s != NATS_OK) {
        return s;
    }
    s = natsOptions_SetServers(o, urls, n);
    if (s == NATS_OK) {
        s = natsOptions_SetName(o, aura_conf_nats_name(c));
    }
    if (s == NATS_OK) {
        s = natsOptions_SetTimeout(o, apr_time_as_msec(
            aura_conf_nats_connect_timeout(c)));
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectWait(o, apr_time_as_msec(
            aura_conf_nats_reconnect_wait(c)));
    }
    if (s == NATS_OK) {
        s = natsOptions_SetMaxReconnect(o, aura_conf_nats_max_reconnect(c));
    }
    if (s == NATS_OK) {
        s = natsOptions_SetPingInterval(o, apr_time_as_msec(
            aura_conf_nats_ping_interval(c)));
    }
    if (s == NATS_OK) {
        s = natsOptions_SetFailRequestsOnDisconnect(o, true);
    }
    if (s == NATS_OK) {
        /* Nothing is replayed after a reconnect: see the top of this
         * file. */
        s = natsOptions_SetReconnectBufSize(o, 0);
    }
    if (s == NATS_OK) {
        /* A publish is written by the calling thread at once, not by
         * nats.c's flusher thread after up to 1 ms of batching: that
         * delay was most of a small request's latency. */
        s = natsOptions_SetSendAsap(o, true);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetRetryOnFailedConnect(o, true, on_connected, NULL);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetDisconnectedCB(o, on_disconnected, NULL);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectedCB(o, on_reconnected, NULL);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetClosedCB(o, on_closed, NULL);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetErrorHandler(o, on_error, NULL);
    }
    if (s == NATS_OK) {
        s = aura_nats_secure_options(o, c);
    }
    if (s != NATS_OK) {
        natsOptions_Destroy(o);
        return s;
    }
    *out = o;
    return NATS_OK;
}

/* A key rotation anywhere: drop that project's cached keys here.  Runs
 * on the subscription's nats.c thread; the payload is only a project id
 * (bounded, printable), never trusted further than a cache lookup. */
static void on_invalidation(natsConnection *nc, natsSubscription *sub,
                            natsMsg *msg, void *closure)
{
    char project[AURA_ID_MAX + 1];   /* the longest project id: a
                                        longer payload is no project */
    int len = natsMsg_GetDataLength(msg), i;

    (void)nc; (void)sub; (void)closure;
    if (len > 0 && len < (int)sizeof(project)) {
        memcpy(project, natsMsg_GetData(msg), (size_t)len);
        project[len] = '\0';
        for (i = 0; i < MAX_INVALIDATION_FNS && invalidation_fns[i]; i++) {
            invalidation_fns[i](project);
        }
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, child_server,
                     AURA_LOGNO(00014) "key invalidation for project %s",
                     project);
    }
    aura_nats_msg_release(msg);
}

void aura_nats_publish_invalidation(request_rec *r, const char *project)
{
    natsStatus s = NATS_CONNECTION_CLOSED;

    if (child_nc) {
        apr_uint32_t seen = aura_nats_losses();

        s = natsConnection_Publish(child_nc, invalidation_subject, project,
                                   (int)strlen(project));
        /* Nothing is buffered while reconnecting (see the top of this
         * file): sent again once reconnected, a repeat being harmless. */
        if (s == NATS_INSUFFICIENT_BUFFER
            && aura_nats_await_reconnect(APR_INT64_MAX, 1, seen, NULL,
                                         NULL)) {
            s = natsConnection_Publish(child_nc, invalidation_subject,
                                       project, (int)strlen(project));
        }
        if (s == NATS_OK) {
            s = natsConnection_FlushTimeout(child_nc, 1000);
        }
    }
    if (s != NATS_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00015)
                      "cannot broadcast the key invalidation of project "
                      "%s: %s (the key cache TTL still expires it)",
                      project, natsStatus_GetText(s));
        return;
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00016)
                  "keys of project %s rotated: invalidation sent on %s",
                  project, invalidation_subject);
}

void aura_nats_child_init(apr_pool_t *pchild, server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    natsOptions *opts = NULL;
    natsStatus st;
    int i;

    child_server = s;
    /* Without spinning: nats.c's default spins up to 2000 times on a
     * busy lock before it sleeps, and the connection lock is held for a
     * whole socket write (send-as-soon-as-possible, below) while the
     * worker threads of the child queue for it: the spinning was 8 % of
     * the child's CPU under load.  First nats.c call of the child. */
    if (nats_Open(0) != NATS_OK) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(00126)
                     "cannot initialise the NATS library: %s",
                     ap_escape_logitem(pchild, nats_GetLastError(NULL)));
        return;
    }
    /* Registered first so it also runs when a step below fails; a
     * pre-cleanup, so the connection is gone before the key cache and
     * everything else of the child pool (see the top of this file). */
    apr_pool_pre_cleanup_register(pchild, NULL, nats_child_cleanup);
    st = build_options(pchild, c, &opts);
    if (st == NATS_OK) {
        st = natsConnection_Connect(&child_nc, opts);
        natsOptions_Destroy(opts);
    }
    if (st == NATS_OK) {
        on_connected(child_nc, NULL);
    }
    /* NOT_YET_CONNECTED: retrying in the background, by design. */
    else if (st != NATS_NOT_YET_CONNECTED) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(00013)
                     "NATS connection could not be set up: %s (%s)",
                     natsStatus_GetText(st),
                     /* The text may be the server's: never raw. */
                     ap_escape_logitem(pchild, nats_GetLastError(NULL)));
        child_nc = NULL;
        return;
    }
    for (i = 0; i < user_count; i++) {
        users[i]->child_init(child_nc, s);
    }
    /* A connection made before this (at once, or by nats.c's retry in
     * the meantime) is told now; one made later, by on_connected(). */
    apr_atomic_set32(&users_ready, 1);
    if (aura_nats_connected()) {
        tell_connected(child_nc);
    }
    /* Every child of every instance listens: a rotation anywhere drops
     * the project's cached keys here.  nats.c keeps the subscription
     * across reconnects (and sends it once a retried connect succeeds). */
    invalidation_subject = aura_conf_key_invalidation_subject(c);
    if (natsConnection_Subscribe(&invalidation_sub, child_nc,
                                 invalidation_subject, on_invalidation,
                                 NULL) != NATS_OK) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(00017)
                     "cannot subscribe to key invalidations on %s: %s",
                     invalidation_subject,
                     ap_escape_logitem(pchild, nats_GetLastError(NULL)));
        invalidation_sub = NULL;
    }
    /* Without it the exit cannot know when the handler is done (it
     * fails only for a subscription already closed). */
    else if (natsSubscription_SetOnCompleteCB(invalidation_sub,
                                              on_invalidation_complete,
                                              NULL) == NATS_OK) {
        pthread_mutex_lock(&invalidation_lock);
        invalidation_armed = 1;
        pthread_mutex_unlock(&invalidation_lock);
    }
    if (invalidation_sub) {
        int gen = 0;

        /* The child's MPM generation with it: during a graceful restart
         * a child of the generation going away may still be starting,
         * and connect after the restart began; only the generation
         * tells it from a child of the new one (t/common/
         * child_exit.t waits for the new one's children by it). */
        ap_mpm_query(AP_MPMQ_GENERATION, &gen);
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s, AURA_LOGNO(02710)
                     "listening for key invalidations on %s (pid %"
                     APR_PID_T_FMT ", generation %d)", invalidation_subject,
                     getpid(), gen);
    }
}

void aura_nats_add_user(const aura_nats_user_t *user)
{
    if (user_count < MAX_USERS) {
        users[user_count++] = user;
    }
}

void aura_nats_on_invalidation(aura_nats_invalidation_fn *fn)
{
    int i;

    for (i = 0; i < MAX_INVALIDATION_FNS; i++) {
        if (!invalidation_fns[i] || invalidation_fns[i] == fn) {
            invalidation_fns[i] = fn;
            return;
        }
    }
}

natsConnection *aura_nats_conn(void)
{
    return child_nc;
}

AURA_DECLARE(int) aura_nats_connected(void)
{
    return child_nc && apr_atomic_read32(&child_connected);
}

apr_uint32_t aura_nats_losses(void)
{
    return apr_atomic_read32(&child_losses);
}

/* While the connection is lost and nats.c reconnects: the time until
 * which a request may wait for it; 0 when connected, absent, or never
 * lost (a first connect that keeps failing is an outage, not a
 * reconnect). */
static apr_time_t reconnect_until(void)
{
    apr_time_t lost = (apr_time_t)apr_atomic_read64(&child_lost_at);

    if (!child_nc || aura_nats_connected() || !lost) {
        return 0;
    }
    return lost + AURA_NATS_RECONNECT_GRACE;
}

/* Polled, not signalled: nats.c's reconnect callback runs on its own
 * thread a moment after the fact, and a wait is rare (a node lost). */
#define RECONNECT_SLICE apr_time_from_msec(5)

int aura_nats_await_reconnect(apr_time_t deadline, int refused,
                              apr_uint32_t seen, int (*stop)(void *),
                              void *data)
{
    apr_time_t start = apr_time_now();
    apr_time_t end = reconnect_until();

    if (refused && (!end || end > start + AURA_NATS_RECONNECT_GRACE)) {
        end = start + AURA_NATS_RECONNECT_GRACE;
    }
    if (end > deadline) {
        end = deadline;
    }
    while (!aura_nats_connected()
           || (refused && aura_nats_losses() == seen)) {
        apr_time_t now = apr_time_now();

        if (now >= end || (stop && stop(data))) {
            return 0;
        }
        apr_sleep(end - now > RECONNECT_SLICE ? RECONNECT_SLICE : end - now);
    }
    return 1;
}

const char *aura_nats_server(apr_pool_t *p)
{
    char url[256], id[64];

    if (!aura_nats_connected()
        || natsConnection_GetConnectedUrl(child_nc, url, sizeof(url))
           != NATS_OK
        || natsConnection_GetConnectedServerId(child_nc, id, sizeof(id))
           != NATS_OK) {
        return NULL;
    }
    return apr_pstrcat(p, url, " ", id, NULL);
}

apr_int64_t aura_nats_max_payload(void)
{
    return aura_nats_connected()
           ? (apr_int64_t)apr_atomic_read64(&child_max_payload) : 0;
}

const char *aura_nats_state(void)
{
    if (!child_nc) {
        return "absent";
    }
    switch (natsConnection_Status(child_nc)) {
    case NATS_CONN_STATUS_CONNECTED:
        return "connected";
    case NATS_CONN_STATUS_CONNECTING:
        return "connecting";
    case NATS_CONN_STATUS_RECONNECTING:
        return "reconnecting";
    case NATS_CONN_STATUS_DRAINING_SUBS:
    case NATS_CONN_STATUS_DRAINING_PUBS:
        return "draining";
    case NATS_CONN_STATUS_CLOSED:
        return "closed";
    default:
        return "disconnected";
    }
}
