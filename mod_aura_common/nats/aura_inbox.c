/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_inbox.c: the reply inboxes of a child's NATS requests, all on one
 * subscription.
 *
 * Each request needs an inbox of its own, because a reply may be a
 * stream of messages (aura_stream.c) and nats.c's request call only ever
 * returns the first one.  A subscription per request cost a SUB and an
 * UNSUB on the wire, the server's interest churn, and a flush round trip
 * so that the SUB was known before the request (and, with nats.c before
 * 3.6.1, whose reader thread may still use a subscription being freed,
 * a deferred free after the next PONG).  Instead, at child_init, the
 * child subscribes once to "<prefix>.*", a prefix of its own; a request
 * takes a token, and its reply subject is "<prefix>.<token>".  The
 * subscription's callback (a nats.c delivery thread) looks the token up
 * and queues the message on that request's inbox, waking the worker
 * thread waiting on it.  A reply whose request is gone (it came after
 * the budget, its client gone, a stream cut short) finds no token and is
 * dropped, counted as a late reply: nothing that nats.c's reader thread
 * uses is ever freed while the child runs.
 *
 * An inbox holds at most INBOX_PENDING_MSGS messages and INBOX_PENDING
 * bytes (at least 32 MiB, 16 max payloads when those are bigger), as the
 * per-request subscription's pending limits did: a service that ignores
 * the stream window overflows them, the excess is dropped and counted,
 * and the stream aborts on the gap.
 *
 * The table of open inboxes (INBOX_BUCKETS lists, by token) and every
 * inbox's queue are guarded by one mutex per child: each operation under
 * it is a few pointer moves.  An inbox is registered by
 * aura_inbox_open() and unregistered by a cleanup of the pool it belongs
 * to (r->pool), which also frees what is still queued; after the
 * cleanup no callback can reach it.
 *
 * The callback wakes the waiting thread after it has let go of the
 * mutex: woken under it, the thread would only block again on the mutex
 * it needs to return (a second sleep and wake per request).  That is
 * safe because an inbox's memory (and its condition variable) is never
 * freed while the child runs: a closed inbox goes to a free list and is
 * reused, so a wake that comes late is a spurious wake-up of its next
 * user, which looks at its queue and waits again.  The list holds at most
 * as many inboxes as the child ever had requests waiting at once.
 */
#include "core/aura_module.h"
#include "nats/aura_inbox.h"
#include "nats/aura_nats.h"
#include "nats/aura_nats_conf.h"
#include "core/aura_config.h"
#include "shm/aura_shm.h"

#include "apr_strings.h"

#include <nats/nats.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define INBOX_PENDING_MSGS  16
#define INBOX_PENDING_BYTES (32 * 1024 * 1024)
#define INBOX_BUCKETS       256             /* a power of two */

/* Longest wait before the connection state is looked at again: a lost
 * connection also wakes every waiter at once (aura_inbox_wake_all()),
 * this is the backstop. */
#define WAIT_SLICE apr_time_from_msec(250)

/* How long a request still waits for its reply once the connection was
 * lost after it was sent: nats.c may have reconnected and sent it on
 * the new connection before the loss was counted (the callbacks run a
 * moment late, on their own thread), and that reply comes within ms.
 * A request that went out on the dead connection answers 503 after
 * this. */
#define LOSS_GRACE apr_time_from_msec(50)

struct aura_inbox_t {
    aura_inbox_t *next;             /* in its bucket */
    apr_uint64_t token;
    pthread_cond_t cond;
    natsMsg *queue[INBOX_PENDING_MSGS];
    unsigned int head, count;
    apr_int64_t bytes, max_bytes;
    apr_int64_t dropped;            /* messages over the limits, ever */
    apr_int64_t dropped_told;       /* of which next() has reported */
    apr_uint32_t losses;            /* aura_nats_losses() when sent */
    apr_time_t lost_at;             /* monotonic: when next() saw the
                                       loss; 0 before */
    char subject[80];
};

/* Per child: set in child_init, before any worker thread runs. */
static pthread_mutex_t mux_lock = PTHREAD_MUTEX_INITIALIZER;
static aura_inbox_t *buckets[INBOX_BUCKETS];
static natsSubscription *mux_sub;
static char prefix[64];             /* "_INBOX.<nuid>" */
static apr_size_t prefix_len;
static apr_uint64_t next_token;     /* under mux_lock */
static aura_inbox_t *free_inboxes;  /* under mux_lock; linked by next */

static aura_inbox_t **bucket_of(apr_uint64_t token)
{
    return &buckets[token & (INBOX_BUCKETS - 1)];
}

/* The token of a reply subject; 0 (never issued) when it is not ours. */
static apr_uint64_t token_of(const char *subject)
{
    apr_uint64_t token = 0;
    const char *c;

    if (strncmp(subject, prefix, prefix_len) || subject[prefix_len] != '.') {
        return 0;
    }
    for (c = subject + prefix_len + 1; *c; c++) {
        int v = (*c >= '0' && *c <= '9') ? *c - '0'
              : (*c >= 'a' && *c <= 'f') ? *c - 'a' + 10 : -1;

        if (v < 0 || token >> 60) {
            return 0;
        }
        token = token << 4 | (apr_uint64_t)v;
    }
    return token;
}

/* Under mux_lock. */
static aura_inbox_t *find(apr_uint64_t token)
{
    aura_inbox_t *in;

    for (in = *bucket_of(token); in && in->token != token; in = in->next) {
    }
    return in;
}

/* The subscription's callback, on its nats.c delivery thread. */
static void on_reply(natsConnection *nc, natsSubscription *sub,
                     natsMsg *msg, void *closure)
{
    apr_uint64_t token = token_of(natsMsg_GetSubject(msg));
    apr_int64_t len = natsMsg_GetDataLength(msg);
    aura_inbox_t *in;
    int kept = 0;

    (void)nc; (void)sub; (void)closure;
    pthread_mutex_lock(&mux_lock);
    in = token ? find(token) : NULL;
    if (in) {
        if (in->count < INBOX_PENDING_MSGS
            && in->bytes + len <= in->max_bytes) {
            in->queue[(in->head + in->count) % INBOX_PENDING_MSGS] = msg;
            in->count++;
            in->bytes += len;
            kept = 1;
        }
        else {
            in->dropped++;
        }
    }
    pthread_mutex_unlock(&mux_lock);
    if (kept) {
        /* Outside the mutex: see the top of this file. */
        pthread_cond_signal(&in->cond);
    }
    else {
        if (token && !in) {
            aura_count(AURA_CTR_LATE_REPLIES);
        }
        aura_nats_msg_release(msg);
    }
}

static apr_status_t inbox_cleanup(void *data)
{
    aura_inbox_t *in = data, **link;
    natsMsg *left[INBOX_PENDING_MSGS];
    unsigned int n = 0, i;

    pthread_mutex_lock(&mux_lock);
    for (link = bucket_of(in->token); *link && *link != in;
         link = &(*link)->next) {
    }
    if (*link) {
        *link = in->next;
    }
    while (in->count) {
        left[n++] = in->queue[in->head];
        in->head = (in->head + 1) % INBOX_PENDING_MSGS;
        in->count--;
    }
    in->next = free_inboxes;
    free_inboxes = in;
    pthread_mutex_unlock(&mux_lock);
    for (i = 0; i < n; i++) {
        /* Came, but its request no longer waited: late too. */
        aura_count(AURA_CTR_LATE_REPLIES);
        aura_nats_msg_release(left[i]);
    }
    return APR_SUCCESS;
}

/* A new inbox, with its condition variable: malloc'ed, never freed while
 * the child runs (see the top of this file). */
static aura_inbox_t *inbox_create(void)
{
    aura_inbox_t *in = calloc(1, sizeof(*in));
    pthread_condattr_t attr;
    int failed;

    if (!in || pthread_condattr_init(&attr)) {
        free(in);
        return NULL;
    }
    /* Waits are measured on the monotonic clock: a step of the wall
     * clock neither cuts nor stretches a budget. */
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    failed = pthread_cond_init(&in->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (failed) {
        free(in);
        return NULL;
    }
    return in;
}

int aura_inbox_open(apr_pool_t *p, aura_inbox_t **out)
{
    aura_inbox_t *in;
    apr_int64_t max_payload = aura_nats_max_payload();

    *out = NULL;
    if (!mux_sub) {
        return NATS_CONNECTION_CLOSED;
    }
    pthread_mutex_lock(&mux_lock);
    in = free_inboxes;
    if (in) {
        free_inboxes = in->next;
    }
    pthread_mutex_unlock(&mux_lock);
    if (!in && !(in = inbox_create())) {
        return NATS_NO_MEMORY;
    }
    in->head = in->count = 0;
    in->losses = aura_nats_losses();
    in->lost_at = 0;
    in->bytes = in->dropped = in->dropped_told = 0;
    in->max_bytes = max_payload * INBOX_PENDING_MSGS;
    if (in->max_bytes < INBOX_PENDING_BYTES) {
        in->max_bytes = INBOX_PENDING_BYTES;
    }
    pthread_mutex_lock(&mux_lock);
    in->token = ++next_token;
    in->next = *bucket_of(in->token);
    *bucket_of(in->token) = in;
    pthread_mutex_unlock(&mux_lock);
    apr_snprintf(in->subject, sizeof(in->subject), "%s.%" APR_UINT64_T_HEX_FMT,
                 prefix, in->token);
    apr_pool_cleanup_register(p, in, inbox_cleanup, apr_pool_cleanup_null);
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
    apr_int64_t n;

    pthread_mutex_lock(&mux_lock);
    n = in->dropped;
    pthread_mutex_unlock(&mux_lock);
    return n;
}

/* Waits on in->cond (mux_lock held) until t (monotonic, µs) at most. */
static void wait_until(aura_inbox_t *in, apr_time_t t)
{
    struct timespec ts;

    ts.tv_sec = (time_t)apr_time_sec(t);
    ts.tv_nsec = (long)apr_time_usec(t) * 1000;
    (void)pthread_cond_timedwait(&in->cond, &mux_lock, &ts);
}

static apr_time_t monotonic_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return apr_time_make(ts.tv_sec, ts.tv_nsec / 1000);
}

/* Under mux_lock: the next queued message, or NULL. */
static natsMsg *dequeue(aura_inbox_t *in)
{
    natsMsg *m;

    if (!in->count) {
        return NULL;
    }
    m = in->queue[in->head];
    in->head = (in->head + 1) % INBOX_PENDING_MSGS;
    in->count--;
    in->bytes -= natsMsg_GetDataLength(m);
    return m;
}

int aura_inbox_next(aura_inbox_t *in, apr_time_t deadline,
                           natsMsg **msg)
{
    apr_time_t end = monotonic_now() + (deadline - apr_time_now());
    natsStatus s = NATS_OK;
    natsMsg *m = NULL;

    *msg = NULL;
    pthread_mutex_lock(&mux_lock);
    for (;;) {
        apr_time_t now;

        if (in->dropped > in->dropped_told) {
            in->dropped_told = in->dropped;
            s = NATS_SLOW_CONSUMER;
            break;
        }
        if ((m = dequeue(in)) != NULL) {
            break;
        }
        now = monotonic_now();
        if (now >= end) {
            s = NATS_TIMEOUT;
            break;
        }
        /* Lost since the request was sent: its reply, if any, went
         * with the old connection, even when the reconnect is already
         * over (it takes a few ms to another node of a cluster, less
         * than this thread may take to wake); after LOSS_GRACE. */
        if (!aura_nats_connected() || aura_nats_losses() != in->losses) {
            if (!in->lost_at) {
                in->lost_at = now;
            }
            if (now - in->lost_at >= LOSS_GRACE) {
                s = NATS_CONNECTION_DISCONNECTED;
                break;
            }
            wait_until(in, end < in->lost_at + LOSS_GRACE
                           ? end : in->lost_at + LOSS_GRACE);
            continue;
        }
        wait_until(in, end - now < WAIT_SLICE ? end : now + WAIT_SLICE);
    }
    pthread_mutex_unlock(&mux_lock);
    if (m && natsMsg_IsNoResponders(m)) {
        aura_nats_msg_release(m);
        return NATS_NO_RESPONDERS;
    }
    *msg = m;
    return s;
}

void aura_inbox_wake_all(void)
{
    int i;

    pthread_mutex_lock(&mux_lock);
    for (i = 0; i < INBOX_BUCKETS; i++) {
        aura_inbox_t *in;

        for (in = buckets[i]; in; in = in->next) {
            pthread_cond_signal(&in->cond);
        }
    }
    pthread_mutex_unlock(&mux_lock);
}

/* Before the connection is destroyed (aura_nats.c's cleanup). */
static void inbox_child_exit(void)
{
    if (mux_sub) {
        natsSubscription_Destroy(mux_sub);
        mux_sub = NULL;
    }
    /* The free list stays, reachable, until the process exits: nats.c
     * does not say that a callback still running has returned when the
     * subscription is destroyed, and that callback may still wake one. */
}

static int inbox_child_init(natsConnection *nc, const char *inbox_prefix)
{
    natsInbox *nuid = NULL;
    char subject[sizeof(prefix) + 2];
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
    apr_snprintf(subject, sizeof(subject), "%s.*", prefix);
    /* Its own queue (nats.c's default limits) only passes messages on
     * to the inboxes, which bound them per request. */
    s = natsConnection_Subscribe(&mux_sub, nc, subject, on_reply, NULL);
    if (s != NATS_OK) {
        mux_sub = NULL;
    }
    return s;
}

/* aura_nats.c's user: the inboxes live on the child's connection. */
static void inbox_user_init(natsConnection *nc, server_rec *s)
{
    natsStatus st = inbox_child_init(
        nc, aura_conf_nats_inbox_prefix(aura_server_conf(s)));

    if (st != NATS_OK) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(00125)
                     "cannot subscribe to the child's reply inboxes: %s "
                     "(NATS routes will answer 503)", natsStatus_GetText(st));
    }
}

static const aura_nats_user_t inbox_user = {
    inbox_user_init, aura_inbox_wake_all, inbox_child_exit
};

void aura_inbox_register(void)
{
    aura_nats_add_user(&inbox_user);
}
