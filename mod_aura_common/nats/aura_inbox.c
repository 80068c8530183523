/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_inbox.c: the reply inboxes of a child's NATS requests.
 *
 * Each request needs an inbox of its own, because a reply may be a
 * stream of messages (aura_stream.c) and nats.c's request call only ever
 * returns the first one.
 *
 * An inbox is a synchronous subscription to one literal subject,
 * "<AuraNATSInboxPrefix>.<child>.<token>", made for the request and
 * removed when its pool is cleared.  The token is 128 bits from
 * OpenSSL's CSPRNG: a service sees the reply subjects of the requests it
 * receives, and nothing in them tells it the subject of any other
 * request (issue #29).  The subscription being literal, nats-server
 * itself discards what is published on any other subject: a message
 * without the waiting request's token never reaches this process, so it
 * can neither fill the inbox (nats.c's slow-consumer drops), nor be
 * taken for a reply, nor count for a breaker; and once the request is
 * over, nothing listens on its subject any more.  (Reusable wildcard
 * subscriptions, "lanes", cost a SUB and an UNSUB less per request, but
 * anyone who could publish on an old reply subject filled the lane of
 * whichever request held it next; see bench/RESULTS.md.)
 *
 * The subscription holds at most INBOX_PENDING_MSGS messages and
 * INBOX_PENDING_BYTES (at least 32 MiB, 16 max payloads when those are
 * bigger): a service that ignores the stream window overflows them,
 * nats.c drops the excess and says so once (NATS_SLOW_CONSUMER), and
 * that service's own stream aborts on the gap.
 *
 * A lost connection does not wake a waiting worker (nats.c signals a
 * subscription only for a message or its close): the wait looks at the
 * connection every WAIT_SLICE, and a request sent before the loss
 * answers 503 LOSS_GRACE after the loss was seen.  An inbox is only
 * ever waited on by its request; it is closed by a cleanup of that
 * request's pool, which may run on another thread (the event MPM's write
 * completion), or by the child's exit, whichever comes first: the list
 * of open inboxes is under a lock.
 */
#include "core/aura_module.h"
#include "nats/aura_inbox.h"
#include "nats/aura_nats.h"
#include "nats/aura_nats_conf.h"
#include "core/aura_config.h"
#include "shm/aura_shm.h"

#include "apr_strings.h"

#include <nats/nats.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define INBOX_PENDING_MSGS  16
#define INBOX_PENDING_BYTES (32 * 1024 * 1024)

/* The unpredictable part of a reply subject: 128 bits, more than the 96
 * the issue asks for, in hex (a NATS subject token takes any printable
 * byte but '.', '*', '>'; hex is also safe in every log). */
#define TOKEN_BYTES 16

/* RAND_bytes() costs about 6,600 instructions a call whatever the size
 * up to a KiB (OpenSSL 3.0, bench/RESULTS-inbox.md): the child draws
 * RAND_BATCH bytes at a time and hands out TOKEN_BYTES per request. */
#define RAND_BATCH 1024

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

/* A subscription whose request is over, waiting to be freed. */
typedef struct aura_grave_t {
    struct aura_grave_t *next;
    natsSubscription *sub;
} aura_grave_t;

/* Subscriptions are freed in batches of this many, one PING round trip
 * a batch (bury()), at most GRAVE_FLUSH_MS waiting for its PONG. */
#define GRAVE_BATCH    32
#define GRAVE_FLUSH_MS 1000

struct aura_inbox_t {
    aura_inbox_t *prev, *next;      /* open inboxes, under inbox_lock */
    natsSubscription *sub;          /* NULL once closed */
    apr_uint32_t losses;            /* aura_nats_losses() when sent */
    apr_time_t lost_at;             /* monotonic: when next() saw the
                                       loss; 0 before */
    char subject[128];              /* "<prefix>.<token>" */
};

/* Per child: set in child_init, before any worker thread runs. */
static pthread_mutex_t inbox_lock = PTHREAD_MUTEX_INITIALIZER;
static natsConnection *inbox_conn;  /* under inbox_lock; NULL: none */
static aura_inbox_t *open_inboxes;  /* under inbox_lock */
static aura_grave_t *graves;        /* under inbox_lock */
static int grave_count;             /* under inbox_lock */
static int burying;                 /* under inbox_lock: a batch is out */
static char prefix[64];             /* "<AuraNATSInboxPrefix>.<nuid>" */
static apr_size_t prefix_len;
/* Under inbox_lock: CSPRNG output not handed out yet, drawn in this
 * child (emptied by child_init, so a fork never shares it). */
static unsigned char rand_pool[RAND_BATCH];
static apr_size_t rand_left;

/* Any prefix fits in a subject with its token. */
typedef char aura_inbox_subject_fits[
    sizeof(prefix) + 1 + 2 * TOKEN_BYTES
    <= sizeof(((aura_inbox_t *)0)->subject) ? 1 : -1];

/* Messages still queued when the request stops waiting came too late:
 * counted and freed (the caller owns the subscription). */
static void drain(natsSubscription *sub)
{
    int msgs = 0;
    natsMsg *m;

    if (natsSubscription_GetPending(sub, &msgs, NULL) != NATS_OK
        || msgs <= 0) {
        return;
    }
    while (msgs-- > 0) {
        natsStatus s = natsSubscription_NextMsg(&m, sub, 0);

        if (s == NATS_OK) {
            aura_count(AURA_CTR_LATE_REPLIES);
            aura_nats_msg_release(m);
        }
        else if (s != NATS_NO_RESPONDERS) {
            break;              /* (nats.c freed that one itself) */
        }
    }
}

static natsSubscription *unlink_inbox(aura_inbox_t *in)
{
    natsSubscription *sub = in->sub;

    in->sub = NULL;
    if (in->prev) {
        in->prev->next = in->next;
    }
    else if (open_inboxes == in) {
        open_inboxes = in->next;
    }
    if (in->next) {
        in->next->prev = in->prev;
    }
    in->prev = in->next = NULL;
    return sub;
}

/* Frees the subscriptions of a batch taken off the graveyard once the
 * connection's reader thread is known to be past them (1), or leaves
 * them all (0): a PING sent now
 * is answered after every byte the server sent before it, and the
 * reader handles bytes in order, so by the PONG no lookup it made before
 * the UNSUBs can still be using them. */
static int free_past_reader(natsConnection *nc, aura_grave_t *batch)
{
    aura_grave_t *g;

    if (!nc || natsConnection_FlushTimeout(nc, GRAVE_FLUSH_MS) != NATS_OK) {
        return 0;
    }
    while ((g = batch) != NULL) {
        batch = g->next;
        natsSubscription_Destroy(g->sub);
        free(g);
    }
    return 1;
}

/* A batch freed, or, without a PONG in time, back on the graveyard to be
 * tried with the next one. */
static void bury(natsConnection *nc, aura_grave_t *batch)
{
    aura_grave_t *g, *last = NULL;

    if (free_past_reader(nc, batch)) {
        return;
    }
    for (g = batch; g; g = g->next) {
        last = g;
    }
    pthread_mutex_lock(&inbox_lock);
    if (last) {
        last->next = graves;
        graves = batch;
    }
    pthread_mutex_unlock(&inbox_lock);
}

/* The request's pool is cleared: nothing listens on its subject any
 * more.  The UNSUB goes at once; the subscription itself is freed later
 * (bury()): nats.c 3.4 (Debian 12) looks a subscription up in its
 * reader thread and uses it after dropping the lock that protects the
 * lookup (fixed in nats.c 3.10, issue #637 there), so freeing it while
 * a message for it is being read crashed the child, and a service can
 * send messages on its reply subject right up to the end of a request. */
static apr_status_t inbox_close(void *data)
{
    aura_inbox_t *in = data;
    natsSubscription *sub;
    aura_grave_t *g, *batch = NULL;
    natsConnection *nc = NULL;

    pthread_mutex_lock(&inbox_lock);
    sub = unlink_inbox(in);
    pthread_mutex_unlock(&inbox_lock);
    if (!sub) {
        return APR_SUCCESS;
    }
    drain(sub);
    natsSubscription_Unsubscribe(sub);
    g = malloc(sizeof(*g));
    pthread_mutex_lock(&inbox_lock);
    if (g && inbox_conn) {
        g->sub = sub;
        g->next = graves;
        graves = g;
        if (++grave_count >= GRAVE_BATCH && !burying) {
            batch = graves;
            graves = NULL;
            grave_count = 0;
            burying = 1;
            nc = inbox_conn;
        }
        sub = NULL;
    }
    pthread_mutex_unlock(&inbox_lock);
    if (sub) {
        /* No memory for its grave, or the child exits: never freed,
         * rather than freed too soon. */
        free(g);
        return APR_SUCCESS;
    }
    if (batch) {
        bury(nc, batch);
        pthread_mutex_lock(&inbox_lock);
        burying = 0;
        pthread_mutex_unlock(&inbox_lock);
    }
    return APR_SUCCESS;
}

static apr_int64_t pending_bytes_limit(void)
{
    apr_int64_t n = aura_nats_max_payload() * INBOX_PENDING_MSGS;

    return n < INBOX_PENDING_BYTES ? INBOX_PENDING_BYTES : n;
}

/* TOKEN_BYTES from the child's batch of CSPRNG output (under
 * inbox_lock), each byte wiped once taken; 0 if the CSPRNG failed. */
static int take_random(unsigned char *out)
{
    unsigned char *from;

    if (rand_left < TOKEN_BYTES) {
        if (RAND_bytes(rand_pool, sizeof(rand_pool)) != 1) {
            return 0;
        }
        rand_left = sizeof(rand_pool);
    }
    from = rand_pool + sizeof(rand_pool) - rand_left;
    memcpy(out, from, TOKEN_BYTES);
    OPENSSL_cleanse(from, TOKEN_BYTES);
    rand_left -= TOKEN_BYTES;
    return 1;
}

/* "<prefix>.<32 hex digits>" from rnd. */
static void make_subject(char *buf, const unsigned char *rnd)
{
    static const char hex[] = "0123456789abcdef";
    apr_size_t i, n = prefix_len;

    memcpy(buf, prefix, n);
    buf[n++] = '.';
    for (i = 0; i < TOKEN_BYTES; i++) {
        buf[n++] = hex[rnd[i] >> 4];
        buf[n++] = hex[rnd[i] & 0x0f];
    }
    buf[n] = '\0';
}

int aura_inbox_open(apr_pool_t *p, aura_inbox_t **out)
{
    aura_inbox_t *in = apr_pcalloc(p, sizeof(*in));
    natsConnection *nc;
    natsStatus s;

    unsigned char rnd[TOKEN_BYTES];
    int drawn;

    *out = NULL;
    pthread_mutex_lock(&inbox_lock);
    nc = inbox_conn;
    drawn = nc && take_random(rnd);
    pthread_mutex_unlock(&inbox_lock);
    if (!nc) {
        return NATS_CONNECTION_CLOSED;
    }
    if (!drawn) {
        return NATS_ERR;
    }
    make_subject(in->subject, rnd);
    OPENSSL_cleanse(rnd, sizeof(rnd));
    /* Made before the request is published on the same connection: the
     * server has the interest before anyone can answer. */
    s = natsConnection_SubscribeSync(&in->sub, nc, in->subject);
    if (s == NATS_OK) {
        s = natsSubscription_SetPendingLimits(in->sub, INBOX_PENDING_MSGS,
                                              (int)pending_bytes_limit());
    }
    if (s != NATS_OK) {
        natsSubscription_Destroy(in->sub);
        return s;
    }
    pthread_mutex_lock(&inbox_lock);
    if (!inbox_conn) {
        /* The child exits: it already closed the open ones. */
        pthread_mutex_unlock(&inbox_lock);
        natsSubscription_Destroy(in->sub);
        return NATS_CONNECTION_CLOSED;
    }
    in->next = open_inboxes;
    if (open_inboxes) {
        open_inboxes->prev = in;
    }
    open_inboxes = in;
    pthread_mutex_unlock(&inbox_lock);
    in->losses = aura_nats_losses();
    apr_pool_cleanup_register(p, in, inbox_close, apr_pool_cleanup_null);
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

    if (!in->sub || natsSubscription_GetDropped(in->sub, &n) != NATS_OK) {
        return 0;
    }
    return n;
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

/* Whether m came on the request's own subject.  The subscription is
 * literal, so the server sends nothing else; checked anyway, at the
 * cost of a string compare, so that no bug of a library between here
 * and the server can hand a request another's message. */
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
    if (!in->sub) {
        return NATS_CONNECTION_DISCONNECTED;
    }
    while ((until = wait_end(in, end, &s)) != 0) {
        apr_time_t left = until - monotonic_now();
        int64_t ms = left > 0 ? (left + 999) / 1000 : 1;

        s = natsSubscription_NextMsg(&m, in->sub, ms);
        if (s == NATS_OK && !current(in, m)) {
            aura_nats_msg_release(m);
            m = NULL;
            continue;
        }
        /* nats.c frees a no-responders status itself and says so,
         * without its subject: it is the request's, as the server sends
         * it the moment that request is published. */
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

/* Before the connection is destroyed (aura_nats.c's cleanup): the
 * inboxes of requests still open are closed now, their pools' cleanups
 * find nothing left to do. */
static void inbox_child_exit(void)
{
    aura_grave_t *batch;
    natsConnection *nc;

    pthread_mutex_lock(&inbox_lock);
    nc = inbox_conn;
    inbox_conn = NULL;
    while (open_inboxes) {
        natsSubscription_Unsubscribe(unlink_inbox(open_inboxes));
    }
    batch = graves;
    graves = NULL;
    pthread_mutex_unlock(&inbox_lock);
    /* Freed only past the reader thread, as always; what cannot be (no
     * PONG) stays allocated until the process exits.  The open ones'
     * subscriptions too: their requests may still hold them. */
    if (batch) {
        free_past_reader(nc, batch);
    }
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
    pthread_mutex_lock(&inbox_lock);
    inbox_conn = nc;
    rand_left = 0;
    pthread_mutex_unlock(&inbox_lock);
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
    inbox_user_init, inbox_child_exit, NULL
};

void aura_inbox_register(void)
{
    aura_nats_add_user(&inbox_user);
}
