/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_inbox.c: the reply inboxes of a child's NATS requests.
 *
 * Each request needs an inbox of its own, because a reply may be a
 * stream of messages (aura_stream.c) and nats.c's request call only ever
 * returns the first one.  A subscription per request cost a SUB and an
 * UNSUB on the wire each time; one subscription for the whole child
 * (issue #9) cost a second thread hand-off per reply: nats.c's reader
 * thread queued it for the subscription's delivery thread, whose
 * callback queued it for the waiting worker.
 *
 * So an inbox is a lane: a synchronous subscription to
 * "<prefix>.<lane>.*", made the first time the child has that many
 * requests waiting at once, then reused by one request after another.
 * nats.c's reader thread queues a reply on the lane's subscription and
 * wakes the worker waiting in natsSubscription_NextMsg() directly: one
 * hand-off.  A request takes a free lane and a new token, and its reply
 * subject is "<prefix>.<lane>.<token>"; a message for an older token of
 * the lane is a reply that came after its request was gone (after the
 * budget, its client gone, a stream cut short): dropped and counted as
 * a late reply, by the next request of the lane, or by the sweep
 * (aura_inbox_sweep(), every second from mod_watchdog) while the lane
 * is free.  Nothing that nats.c's reader thread uses is freed while the
 * child runs: lanes go back to a free list, their subscriptions stay.
 *
 * A lane's subscription holds at most INBOX_PENDING_MSGS messages and
 * INBOX_PENDING_BYTES (at least 32 MiB, 16 max payloads when those are
 * bigger): a service that ignores the stream window overflows them,
 * nats.c drops the excess and says so once (NATS_SLOW_CONSUMER), and
 * the stream aborts on the gap.
 *
 * A lost connection does not wake a waiting worker (nats.c signals a
 * subscription only for a message or its close): the wait looks at the
 * connection every WAIT_SLICE, and a request sent before the loss
 * answers 503 LOSS_GRACE after the loss was seen.  A lane is only ever
 * waited on by the request that holds it; it is returned by a cleanup
 * of that request's pool, which may run on another thread (the event
 * MPM's write completion), hence the lock around the free list.
 */
#include "core/aura_module.h"
#include "nats/aura_inbox.h"
#include "nats/aura_nats.h"
#include "nats/aura_nats_conf.h"
#include "core/aura_config.h"
#include "core/aura_watchdog.h"
#include "shm/aura_shm.h"

#include "apr_strings.h"

#include <nats/nats.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define INBOX_PENDING_MSGS  16
#define INBOX_PENDING_BYTES (32 * 1024 * 1024)

/* Longest wait before the connection state is looked at again: a lost
 * connection does not wake the waiting thread (see the top). */
#define WAIT_SLICE apr_time_from_msec(100)

/* How long a request still waits for its reply once the connection was
 * lost after it was sent: nats.c may have reconnected and sent it on
 * the new connection before the loss was counted (the callbacks run a
 * moment late, on their own thread), and that reply comes within ms.
 * A request that went out on the dead connection answers 503 after
 * this. */
#define LOSS_GRACE apr_time_from_msec(50)

/* The late-reply sweep of free lanes (mod_watchdog, every child). */
#define SWEEP_WATCHDOG "_aura_inbox_sweep_"
#define SWEEP_EVERY    apr_time_from_sec(1)

struct aura_inbox_t {
    aura_inbox_t *next;             /* on the free list */
    aura_inbox_t *all;              /* every lane of the child */
    natsSubscription *sub;
    apr_uint64_t token;             /* the current request's */
    int64_t dropped_base;           /* the subscription's drops at open */
    apr_uint32_t losses;            /* aura_nats_losses() when sent */
    apr_time_t lost_at;             /* monotonic: when next() saw the
                                       loss; 0 before */
    apr_size_t base_len;            /* of "<prefix>.<lane>." */
    char subject[112];              /* "<prefix>.<lane>.<token>" */
};

/* Per child: set in child_init, before any worker thread runs. */
static pthread_mutex_t lane_lock = PTHREAD_MUTEX_INITIALIZER;
static natsConnection *lane_conn;   /* NULL: no lanes (yet, or any more) */
static aura_inbox_t *free_lanes;    /* under lane_lock; linked by next */
static aura_inbox_t *all_lanes;     /* under lane_lock; linked by all */
static unsigned int lane_count;     /* under lane_lock */
static char prefix[64];             /* "<AuraNATSInboxPrefix>.<nuid>" */
static apr_size_t prefix_len;

/* Drops what the lane holds without waiting: replies to requests that
 * are gone (the caller holds the lane, or lane_lock with it free). */
static void drain(aura_inbox_t *in)
{
    int msgs = 0;
    natsMsg *m;

    if (natsSubscription_GetPending(in->sub, &msgs, NULL) != NATS_OK
        || msgs <= 0) {
        return;
    }
    while (msgs-- > 0) {
        natsStatus s = natsSubscription_NextMsg(&m, in->sub, 0);

        if (s == NATS_OK) {
            aura_count(AURA_CTR_LATE_REPLIES);
            aura_nats_msg_release(m);
        }
        else if (s != NATS_NO_RESPONDERS) {
            break;              /* (nats.c freed that one itself) */
        }
    }
}

static apr_status_t lane_release(void *data)
{
    aura_inbox_t *in = data;

    /* A reply that came between the last wait and now is late too. */
    drain(in);
    pthread_mutex_lock(&lane_lock);
    in->next = free_lanes;
    free_lanes = in;
    pthread_mutex_unlock(&lane_lock);
    return APR_SUCCESS;
}

static apr_int64_t pending_bytes_limit(void)
{
    apr_int64_t n = aura_nats_max_payload() * INBOX_PENDING_MSGS;

    return n < INBOX_PENDING_BYTES ? INBOX_PENDING_BYTES : n;
}

/* A new lane and its subscription: malloc'ed, never freed while the
 * child runs (see the top of this file). */
static natsStatus lane_create(natsConnection *nc, aura_inbox_t **out)
{
    aura_inbox_t *in = calloc(1, sizeof(*in));
    char subject[sizeof(in->subject)];
    unsigned int lane;
    natsStatus s;

    if (!in) {
        return NATS_NO_MEMORY;
    }
    pthread_mutex_lock(&lane_lock);
    lane = ++lane_count;
    pthread_mutex_unlock(&lane_lock);
    in->base_len = (apr_size_t)apr_snprintf(in->subject, sizeof(in->subject),
                                            "%s.%x.", prefix, lane);
    apr_snprintf(subject, sizeof(subject), "%s*", in->subject);
    s = natsConnection_SubscribeSync(&in->sub, nc, subject);
    if (s == NATS_OK) {
        s = natsSubscription_SetPendingLimits(in->sub, INBOX_PENDING_MSGS,
                                              (int)pending_bytes_limit());
    }
    if (s != NATS_OK) {
        natsSubscription_Destroy(in->sub);
        free(in);
        return s;
    }
    pthread_mutex_lock(&lane_lock);
    in->all = all_lanes;
    all_lanes = in;
    pthread_mutex_unlock(&lane_lock);
    *out = in;
    return NATS_OK;
}

int aura_inbox_open(apr_pool_t *p, aura_inbox_t **out)
{
    aura_inbox_t *in;
    natsConnection *nc;
    natsStatus s;

    *out = NULL;
    pthread_mutex_lock(&lane_lock);
    nc = lane_conn;
    in = nc ? free_lanes : NULL;
    if (in) {
        free_lanes = in->next;
    }
    pthread_mutex_unlock(&lane_lock);
    if (!nc) {
        return NATS_CONNECTION_CLOSED;
    }
    if (!in && (s = lane_create(nc, &in)) != NATS_OK) {
        return s;
    }
    drain(in);
    in->token++;
    in->losses = aura_nats_losses();
    in->lost_at = 0;
    if (natsSubscription_GetDropped(in->sub, &in->dropped_base) != NATS_OK) {
        in->dropped_base = 0;
    }
    apr_snprintf(in->subject + in->base_len,
                 sizeof(in->subject) - in->base_len,
                 "%" APR_UINT64_T_HEX_FMT, in->token);
    apr_pool_cleanup_register(p, in, lane_release, apr_pool_cleanup_null);
    *out = in;
    return NATS_OK;
}

const char *aura_inbox_prefix(void)
{
    return prefix_len ? prefix : NULL;
}

void aura_inbox_sending(aura_inbox_t *in)
{
    in->losses = aura_nats_losses();
    in->lost_at = 0;
}

const char *aura_inbox_subject(const aura_inbox_t *in)
{
    return in->subject;
}

apr_int64_t aura_inbox_dropped(aura_inbox_t *in)
{
    int64_t n = 0;

    if (natsSubscription_GetDropped(in->sub, &n) != NATS_OK) {
        return 0;
    }
    return n - in->dropped_base;
}

static apr_time_t monotonic_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return apr_time_make(ts.tv_sec, ts.tv_nsec / 1000);
}

/* Until when (monotonic) the next wait may last, or 0 when the request
 * is over: NATS_TIMEOUT at its end, NATS_CONNECTION_DISCONNECTED once
 * the loss of the connection it went out on is LOSS_GRACE old.  Lost
 * since the request was sent: its reply, if any, went with the old
 * connection, even when the reconnect is already over (it takes a few
 * ms to another node of a cluster, less than this thread may take to
 * wake). */
static apr_time_t wait_end(aura_inbox_t *in, apr_time_t end, natsStatus *s)
{
    apr_time_t now = monotonic_now();

    if (now >= end) {
        *s = NATS_TIMEOUT;
        return 0;
    }
    if (!aura_nats_connected() || aura_nats_losses() != in->losses) {
        if (!in->lost_at) {
            in->lost_at = now;
        }
        if (now - in->lost_at >= LOSS_GRACE) {
            *s = NATS_CONNECTION_DISCONNECTED;
            return 0;
        }
        return end < in->lost_at + LOSS_GRACE ? end
                                              : in->lost_at + LOSS_GRACE;
    }
    return end - now < WAIT_SLICE ? end : now + WAIT_SLICE;
}

/* Whether m answers the lane's current request (its exact subject). */
static int current(const aura_inbox_t *in, natsMsg *m)
{
    const char *subject = natsMsg_GetSubject(m);

    return subject && !strcmp(subject, in->subject);
}

int aura_inbox_next(aura_inbox_t *in, apr_time_t deadline, natsMsg **msg)
{
    apr_time_t end = monotonic_now() + (deadline - apr_time_now());
    natsStatus s = NATS_OK;
    natsMsg *m = NULL;
    apr_time_t until;

    *msg = NULL;
    while ((until = wait_end(in, end, &s)) != 0) {
        apr_time_t left = until - monotonic_now();
        int64_t ms = left > 0 ? (left + 999) / 1000 : 1;

        s = natsSubscription_NextMsg(&m, in->sub, ms);
        if (s == NATS_OK && !current(in, m)) {
            aura_count(AURA_CTR_LATE_REPLIES);
            aura_nats_msg_release(m);
            m = NULL;
            continue;
        }
        /* nats.c frees a no-responders status itself and says so,
         * without its subject: it is the current request's, as the
         * server sends it the moment that request is published. */
        if (s == NATS_OK || s == NATS_SLOW_CONSUMER
            || s == NATS_NO_RESPONDERS) {
            break;
        }
        if (s != NATS_TIMEOUT) {
            /* The subscription is closed: the connection is. */
            s = NATS_CONNECTION_DISCONNECTED;
            break;
        }
    }
    if (m && natsMsg_IsNoResponders(m)) {
        aura_nats_msg_release(m);
        return NATS_NO_RESPONDERS;
    }
    *msg = m;
    return s;
}

/* mod_watchdog, every second in every child: late replies on free lanes
 * are counted (and freed) without waiting for their lane's next
 * request. */
static apr_status_t sweep(int state, void *data, apr_pool_t *p)
{
    aura_inbox_t *in;

    (void)data; (void)p;
    if (state != AP_WATCHDOG_STATE_RUNNING) {
        return APR_SUCCESS;
    }
    pthread_mutex_lock(&lane_lock);
    for (in = lane_conn ? free_lanes : NULL; in; in = in->next) {
        drain(in);
    }
    pthread_mutex_unlock(&lane_lock);
    return APR_SUCCESS;
}

apr_status_t aura_inbox_post_config(apr_pool_t *pconf, server_rec *s)
{
    /* In every child (not a singleton): each has its own lanes.
     * Without mod_watchdog, late replies are counted by their lane's
     * next request. */
    apr_status_t rv = aura_watchdog_every(pconf, s, SWEEP_WATCHDOG, 0,
                                          SWEEP_EVERY, sweep);

    if (rv != APR_SUCCESS && rv != APR_ENOTIMPL) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, AURA_LOGNO(01362)
                     "cannot register the late-reply sweep with "
                     "mod_watchdog: late replies are counted when their "
                     "inbox is next used");
    }
    return APR_SUCCESS;
}

/* Before the connection is destroyed (aura_nats.c's cleanup). */
static void inbox_child_exit(void)
{
    aura_inbox_t *in;

    pthread_mutex_lock(&lane_lock);
    lane_conn = NULL;
    for (in = all_lanes; in; in = in->all) {
        natsSubscription_Destroy(in->sub);
        in->sub = NULL;
    }
    free_lanes = NULL;
    pthread_mutex_unlock(&lane_lock);
    /* The lanes stay, reachable, until the process exits. */
}

static natsStatus inbox_child_init(natsConnection *nc,
                                   const char *inbox_prefix)
{
    natsInbox *nuid = NULL;
    natsStatus s;

    s = natsInbox_Create(&nuid);
    if (s != NATS_OK) {
        return s;
    }
    /* "<AuraNATSInboxPrefix>.<nuid>": a NATS user allowed to subscribe
     * only to its own prefix gets its replies (natsInbox_Create always
     * says "_INBOX."). */
    apr_snprintf(prefix, sizeof(prefix), "%s.%s", inbox_prefix,
                 strchr(nuid, '.') ? strchr(nuid, '.') + 1 : nuid);
    natsInbox_Destroy(nuid);
    prefix_len = strlen(prefix);
    pthread_mutex_lock(&lane_lock);
    lane_conn = nc;
    pthread_mutex_unlock(&lane_lock);
    return NATS_OK;
}

/* aura_nats.c's user: the inboxes live on the child's connection. */
static void inbox_user_init(natsConnection *nc, server_rec *s)
{
    natsStatus st = inbox_child_init(
        nc, aura_conf_nats_inbox_prefix(aura_server_conf(s)));

    if (st != NATS_OK) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(00125)
                     "cannot make the child's reply inbox prefix: %s "
                     "(NATS routes will answer 503)", natsStatus_GetText(st));
    }
}

static const aura_nats_user_t inbox_user = {
    inbox_user_init, inbox_child_exit
};

void aura_inbox_register(void)
{
    aura_nats_add_user(&inbox_user);
}
