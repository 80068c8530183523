/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_streamend.c: open streams end with their credential (issue #32
 * point 3).  A WebSocket tunnel, a response of a streaming Location (an
 * SSE stream) and a streamed NATS reply were admitted with a key and
 * perhaps a token, once; they may then run for an hour.  When the key
 * is revoked or expires, the token reaches its exp (or is revoked), or
 * an incident control blocks the key or the user, the stream ends
 * within a couple of seconds, counted and logged.
 *
 * Who notices: one thread per child (the "watcher") wakes every
 * AURA_STREAMEND_TICK, and at once when a key invalidation arrives,
 * and walks this child's open streams (a list under a thread mutex:
 * only this child's streams, as many as its worker threads at most).
 * For each it asks cred_alive(), "is this stream's credential still alive?":
 *   - the clock: the key's expires_at, the token's exp (aura_endrule.c);
 *   - the incident controls: a block of key:<hash prefix> or
 *     actor:<sub>, fleet-wide in the shared segment (aura_control.c);
 *   - token revocation: the revocations of sub, sid or jti in force
 *     (control/aura_revoke.c, issue #32 point 2);
 * and, outside the lock, the key store: a stream's key is looked up
 * again (aura_keystore_recheck(), a background query) after a key
 * invalidation of its project and at least every AuraKeyCacheTTL, as a
 * request's key is: not found is "revoked", a new expires_at is taken.
 * The store not answering keeps the stream (as the key cache serves
 * stale entries during an outage), and is tried again at the next
 * invalidation or TTL.
 *
 * How a stream learns it: the watcher sets its reason (atomic), and on
 * the HTTP path shuts down the upstream's socket: mod_proxy's worker
 * thread, waiting on that socket, wakes up and the stream's own filters
 * end it on that thread (aura_httpproxy.c: a WebSocket gets a close
 * frame 1008, an SSE stream a final event and its last chunk).  The
 * watch holds a dup() of the socket, so the descriptor it shuts down is
 * its own (mod_proxy may close its descriptor first, and the number be
 * reused by anything), and the upstream connection of a watched request
 * is never pooled (proxy-nokeepalive): nothing else ever uses that
 * socket.  A NATS stream reads the reason between two messages and at
 * least every second while it waits (aura_stream.c).
 *
 * Nothing here touches a request from the watcher: the watch copies what
 * it needs (the request id, the credential's fields in r->pool, which
 * the r->pool cleanup that unlinks the watch outlives).  Lock order: the
 * watch list, then nothing (stores and controls are asked outside it).
 */
#include "core/aura_module.h"
#include "auth/aura_keystore.h"
#include "control/aura_control.h"
#include "control/aura_revoke.h"
#include "core/aura_config.h"
#include "nats/aura_nats.h"
#include "resilience/aura_streamend.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"
#include "store/aura_store_conf.h"

#include "http_protocol.h"
#include "apr_atomic.h"
#include "apr_portable.h"
#include "apr_ring.h"
#include "apr_strings.h"
#include "apr_thread_cond.h"
#include "apr_thread_mutex.h"
#include "apr_thread_proc.h"

#include <sys/socket.h>
#include <unistd.h>

struct aura_streamend_t {
    APR_RING_ENTRY(aura_streamend_t) link;
    apr_uint64_t id;
    const char *request_id;
    const char *kind;
    aura_cred_t cred;          /* r's; its strings live in r->pool */
    int fd;                    /* our dup of the upstream socket, -1 */
    int how;                   /* SHUT_RD or SHUT_RDWR */
    apr_time_t key_checked;    /* last word of the key store */
    int recheck;               /* its project's keys were invalidated */
    int linked;
    volatile apr_uint32_t reason;
};

APR_RING_HEAD(watch_ring, aura_streamend_t);

typedef struct {
    server_rec *s;
    apr_pool_t *pool;          /* the thread's: one subpool per tick */
    apr_thread_mutex_t *lock;  /* the list, next_id, stopping */
    apr_thread_cond_t *wake;
    apr_thread_t *thread;
    struct watch_ring ring;
    apr_uint64_t next_id;
    apr_interval_time_t key_ttl;
    int stopping;
    int poke;                  /* an invalidation since the last tick */
} watcher_t;

/* Written in child_init only (then read by worker threads). */
static watcher_t *watcher;

/* ---- is the credential alive? ---------------------------------------- */

/* Token revocation (issue #32 point 2): the revocations in force, in
 * this child's index (control/aura_revoke.c), asked about the token's
 * sub, sid, jti and iat, in the scope it was verified in. */
static int token_revoked(apr_pool_t *p, const aura_cred_t *c)
{
    return aura_revoked_claims(p, c->token_scope, c->token_sub,
                               c->token_claims) != 0;
}

/* Whether the credential a stream was admitted with is alive at now:
 * AURA_END_ALIVE or why not.  The key store's word (revoked) is not
 * asked here: it is a query, made by the watcher outside its lock. */
static int cred_alive(apr_pool_t *p, const aura_cred_t *c,
                           apr_time_t now)
{
    int reason = aura_end_by_clock(c->key_expires,
                                   c->token_sub ? c->token_exp : 0, now);

    if (reason != AURA_END_ALIVE) {
        return reason;
    }
    if (c->key_actor && aura_control_blocked(c->key_actor, now)) {
        return AURA_END_BLOCKED;
    }
    if (c->token_sub
        && aura_control_blocked(apr_pstrcat(p, "actor:", c->token_sub,
                                            NULL), now)) {
        return AURA_END_BLOCKED;
    }
    if (c->token_sub && token_revoked(p, c)) {
        return AURA_END_TOKEN_REVOKED;
    }
    return AURA_END_ALIVE;
}

/* ---- the watch list ---------------------------------------------------- */

static void unlink_watch(aura_streamend_t *w)
{
    if (w->linked) {
        APR_RING_REMOVE(w, link);
        w->linked = 0;
    }
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
}

void aura_streamend_unwatch(aura_streamend_t *w)
{
    if (!w || !watcher) {
        return;
    }
    apr_thread_mutex_lock(watcher->lock);
    unlink_watch(w);
    apr_thread_mutex_unlock(watcher->lock);
}

static apr_status_t watch_cleanup(void *data)
{
    aura_streamend_unwatch(data);
    return APR_SUCCESS;
}

aura_streamend_t *aura_streamend_watch(request_rec *r, const char *kind,
                                       apr_socket_t *backend, int how)
{
    aura_request_private_t *p = aura_request_private(r);
    aura_request_t *rq = aura_request_get(r);
    aura_streamend_t *w;
    apr_os_sock_t fd;

    if (!watcher || !p || !rq
        || (!p->cred.key_actor && !p->cred.token_sub)) {
        return NULL;
    }
    w = apr_pcalloc(r->pool, sizeof(*w));
    w->request_id = rq->request_id ? rq->request_id : "-";
    w->kind = kind;
    w->cred = p->cred;
    w->fd = -1;
    w->how = how == APR_SHUTDOWN_READ ? SHUT_RD : SHUT_RDWR;
    w->key_checked = apr_time_now();
    if (backend && apr_os_sock_get(&fd, backend) == APR_SUCCESS
        && fd >= 0) {
        w->fd = dup(fd);
    }
    apr_thread_mutex_lock(watcher->lock);
    w->id = ++watcher->next_id;
    APR_RING_INSERT_TAIL(&watcher->ring, w, aura_streamend_t, link);
    w->linked = 1;
    apr_thread_mutex_unlock(watcher->lock);
    apr_pool_cleanup_register(r->pool, w, watch_cleanup,
                              apr_pool_cleanup_null);
    return w;
}

int aura_streamend_reason(const aura_streamend_t *w)
{
    return w ? (int)apr_atomic_read32((volatile apr_uint32_t *)&w->reason)
             : AURA_END_ALIVE;
}

int aura_streamend_is_sse(request_rec *r)
{
    const char *ct = r->content_type;

    return ct && !strncasecmp(ct, "text/event-stream", 17);
}

/* A key rotation anywhere (on the NATS thread): the streams of that
 * project look their key up again at once. */
static void on_invalidation(const char *project)
{
    aura_streamend_t *w;
    int any = 0;

    if (!watcher) {
        return;
    }
    apr_thread_mutex_lock(watcher->lock);
    for (w = APR_RING_FIRST(&watcher->ring);
         w != APR_RING_SENTINEL(&watcher->ring, aura_streamend_t, link);
         w = APR_RING_NEXT(w, link)) {
        if (w->cred.key_project && !strcmp(w->cred.key_project, project)) {
            w->recheck = 1;
            any = 1;
        }
    }
    if (any) {
        watcher->poke = 1;
        apr_thread_cond_signal(watcher->wake);
    }
    apr_thread_mutex_unlock(watcher->lock);
}

/* ---- one tick ------------------------------------------------------------ */

/* What the watcher saw of one stream, copied out of the list. */
typedef struct {
    apr_uint64_t id;
    aura_cred_t cred;          /* strings copied into the tick's pool */
    const char *request_id;
    const char *kind;
    int recheck;
    int key_answered;          /* the store gave key_expires */
    int reason;
    int ended_here;            /* this tick ended it: count and log */
} seen_t;

static const char *dup_or_null(apr_pool_t *p, const char *s)
{
    return s ? apr_pstrdup(p, s) : NULL;
}

static seen_t *snapshot(apr_pool_t *p, apr_time_t now, int *n)
{
    aura_streamend_t *w;
    seen_t *seen;
    int count = 0, i = 0;

    apr_thread_mutex_lock(watcher->lock);
    for (w = APR_RING_FIRST(&watcher->ring);
         w != APR_RING_SENTINEL(&watcher->ring, aura_streamend_t, link);
         w = APR_RING_NEXT(w, link)) {
        count++;
    }
    seen = apr_pcalloc(p, sizeof(*seen) * (count ? count : 1));
    for (w = APR_RING_FIRST(&watcher->ring);
         w != APR_RING_SENTINEL(&watcher->ring, aura_streamend_t, link)
         && i < count;
         w = APR_RING_NEXT(w, link)) {
        seen_t *e = &seen[i];

        if (apr_atomic_read32(&w->reason)) {
            continue;          /* ended already: its thread is on it */
        }
        e->id = w->id;
        e->cred = w->cred;
        e->cred.key_actor = dup_or_null(p, w->cred.key_actor);
        e->cred.key_project = dup_or_null(p, w->cred.key_project);
        e->cred.token_sub = dup_or_null(p, w->cred.token_sub);
        e->cred.token_claims = dup_or_null(p, w->cred.token_claims);
        e->cred.token_scope = dup_or_null(p, w->cred.token_scope);
        e->request_id = apr_pstrdup(p, w->request_id);
        e->kind = w->kind;     /* a literal */
        e->recheck = w->cred.key_hash[0]
                     && (w->recheck || (watcher->key_ttl > 0
                                        && now - w->key_checked
                                           >= watcher->key_ttl));
        i++;
    }
    apr_thread_mutex_unlock(watcher->lock);
    *n = i;
    return seen;
}

/* The key store's word on the keys due for it.  A store that does not
 * answer ends this tick's questions (the next tick, the next
 * invalidation or TTL asks again): the thread does not wait
 * AuraDBTimeout once per stream. */
static void ask_store(apr_pool_t *p, seen_t *seen, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        apr_time_t expires = 0;
        apr_status_t rv;

        if (!seen[i].recheck) {
            continue;
        }
        rv = aura_keystore_recheck(watcher->s, p, seen[i].cred.key_hash,
                                   &expires);
        if (rv == APR_NOTFOUND) {
            seen[i].reason = AURA_END_KEY_REVOKED;
            seen[i].key_answered = 1;
        }
        else if (rv == APR_SUCCESS) {
            seen[i].cred.key_expires = expires;
            seen[i].key_answered = 1;
        }
        else {
            break;
        }
    }
}

static aura_streamend_t *find(apr_uint64_t id)
{
    aura_streamend_t *w;

    for (w = APR_RING_FIRST(&watcher->ring);
         w != APR_RING_SENTINEL(&watcher->ring, aura_streamend_t, link);
         w = APR_RING_NEXT(w, link)) {
        if (w->id == id) {
            return w;
        }
    }
    return NULL;
}

/* Under the lock: the verdicts go to the streams still open. */
static void apply(seen_t *seen, int n, apr_time_t now)
{
    int i;

    apr_thread_mutex_lock(watcher->lock);
    for (i = 0; i < n; i++) {
        aura_streamend_t *w = find(seen[i].id);

        if (!w) {
            continue;          /* ended on its own meanwhile */
        }
        if (seen[i].key_answered) {
            w->cred.key_expires = seen[i].cred.key_expires;
            w->key_checked = now;
            w->recheck = 0;
        }
        if (seen[i].reason && !apr_atomic_read32(&w->reason)) {
            apr_atomic_set32(&w->reason, (apr_uint32_t)seen[i].reason);
            /* Wakes mod_proxy's wait on the upstream (see the top). */
            if (w->fd >= 0) {
                (void)shutdown(w->fd, w->how);
            }
            seen[i].ended_here = 1;
        }
    }
    apr_thread_mutex_unlock(watcher->lock);
}

static void count_ended(int reason)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);

    if (cap && reason > 0 && reason < AURA_END_REASONS) {
        apr_atomic_inc64(&cap->cred_ended[reason]);
    }
}

static void tick(apr_pool_t *p)
{
    apr_time_t now = apr_time_now();
    int n, i;
    seen_t *seen = snapshot(p, now, &n);

    if (n == 0) {
        return;
    }
    ask_store(p, seen, n);
    now = apr_time_now();
    for (i = 0; i < n; i++) {
        if (!seen[i].reason) {
            seen[i].reason = cred_alive(p, &seen[i].cred, now);
        }
    }
    apply(seen, n, now);
    for (i = 0; i < n; i++) {
        if (!seen[i].ended_here) {
            continue;
        }
        count_ended(seen[i].reason);
        /* Never the credential: the key's actor (a hash prefix) and the
         * reason are what the operator needs. */
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, watcher->s, AURA_LOGNO(02600)
                     "%s stream of request %s ended: its credential is "
                     "no longer valid (%s; %s%s)", seen[i].kind,
                     seen[i].request_id,
                     aura_end_reason_name(seen[i].reason),
                     seen[i].cred.key_actor ? seen[i].cred.key_actor
                                            : "no key",
                     seen[i].cred.token_sub ? ", token" : "");
    }
}

/* Returns instead of apr_thread_exit(), as aura_keyused.c's thread. */
static void *APR_THREAD_FUNC run(apr_thread_t *thread, void *data)
{
    watcher_t *wt = data;

    (void)thread;
    for (;;) {
        apr_pool_t *p;
        int stopping;

        apr_thread_mutex_lock(wt->lock);
        if (!wt->stopping && !wt->poke) {
            apr_thread_cond_timedwait(wt->wake, wt->lock,
                                      AURA_STREAMEND_TICK);
        }
        wt->poke = 0;
        stopping = wt->stopping;
        apr_thread_mutex_unlock(wt->lock);
        if (stopping) {
            break;
        }
        if (apr_pool_create(&p, wt->pool) == APR_SUCCESS) {
            tick(p);
            apr_pool_destroy(p);
        }
    }
    return NULL;
}

/* Pre-cleanup of the child pool: joined before the key store's and the
 * controls' cleanups run. */
static apr_status_t watcher_stop(void *data)
{
    watcher_t *wt = data;
    apr_status_t rv;

    apr_thread_mutex_lock(wt->lock);
    wt->stopping = 1;
    apr_thread_cond_signal(wt->wake);
    apr_thread_mutex_unlock(wt->lock);
    if (wt->thread) {
        apr_thread_join(&rv, wt->thread);
    }
    return APR_SUCCESS;
}

void aura_streamend_child_init(apr_pool_t *pchild, server_rec *s)
{
    watcher_t *wt = apr_pcalloc(pchild, sizeof(*wt));
    apr_status_t rv;

    wt->s = s;
    wt->key_ttl = aura_conf_key_cache_ttl(aura_server_conf(s));
    APR_RING_INIT(&wt->ring, aura_streamend_t, link);
    rv = apr_pool_create(&wt->pool, pchild);
    if (rv == APR_SUCCESS) {
        rv = apr_thread_mutex_create(&wt->lock, APR_THREAD_MUTEX_DEFAULT,
                                     pchild);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_thread_cond_create(&wt->wake, pchild);
    }
    if (rv == APR_SUCCESS) {
        apr_pool_pre_cleanup_register(pchild, wt, watcher_stop);
        rv = apr_thread_create(&wt->thread, NULL, run, wt, pchild);
        if (rv != APR_SUCCESS) {
            wt->thread = NULL;
        }
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, AURA_LOGNO(02601)
                     "cannot start the watch of open streams: in this "
                     "child, a stream whose credential dies runs on until "
                     "it ends by itself");
        return;
    }
    watcher = wt;
}

void aura_streamend_register(void)
{
    aura_nats_on_invalidation(on_invalidation);
}

void aura_streamend_metrics(request_rec *r)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    int i;

    if (!cap) {
        return;
    }
    ap_rputs("# HELP aura_streams_cred_ended_total Open streams (WebSocket, "
             "SSE and other streaming responses, streamed NATS replies) "
             "ended because their credential died, by reason.\n"
             "# TYPE aura_streams_cred_ended_total counter\n", r);
    for (i = AURA_END_ALIVE + 1; i < AURA_END_REASONS; i++) {
        ap_rprintf(r, "aura_streams_cred_ended_total{reason=\"%s\"} %"
                   APR_UINT64_T_FMT "\n", aura_end_reason_name(i),
                   apr_atomic_read64(&cap->cred_ended[i]));
    }
}
