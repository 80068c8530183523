/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keyused.c: the API keys' last-used time (issue #32), written
 * approximately and never on a request's path.
 *
 * A request only sets a flag in its key's cache slot, under the lock it
 * already takes to read the slot (aura_keystore.c).  One thread per
 * child wakes every AuraKeyLastUsedInterval, takes the flagged keys'
 * hashes and writes them with ONE statement,
 *   UPDATE api_keys SET last_used_at = now() WHERE key_hash = ANY($1)
 * so N requests with a key cost at most one row write per interval and
 * child, whatever N.  last_used_at is the flush's time: it is at most
 * one interval (plus AuraDBTimeout) later than the real last use, and a
 * use is never later than it says.
 *
 * Postgres down or slow: the thread waits for the statement's
 * AuraDBTimeout, alone, then drops the batch (a warning once a minute):
 * at most one interval's uses are lost, no request waits for it and the
 * key store's breaker is not fed by it (aura_db_query_bg).  A connection
 * of the child's pool is borrowed only for the statement.
 *
 * Why a thread of our own and not mod_watchdog: the flush reads the key
 * cache and borrows a pooled connection, both per child and released by
 * the child pool's cleanups.  A pre-cleanup of that pool stops and
 * joins this thread (after one last flush) before those cleanups run;
 * mod_watchdog's threads end in an order we do not control.
 */
#include "core/aura_module.h"
#include "auth/aura_keystore.h"
#include "auth/aura_keyused.h"
#include "core/aura_config.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"
#include "store/aura_store_conf.h"

#include "apr_atomic.h"
#include "apr_thread_cond.h"
#include "apr_thread_mutex.h"
#include "apr_thread_proc.h"

typedef struct {
    server_rec *s;
    apr_pool_t *pool;          /* the thread's own: one per flush */
    apr_thread_mutex_t *lock;
    apr_thread_cond_t *wake;
    apr_thread_t *thread;
    apr_interval_time_t interval;
    int max;                   /* keys per statement: the cache's size */
    int stopping;              /* under lock */
    apr_uint32_t last_warned;  /* second of the last warning */
} keyused_t;

/* One batch: take the flags, write them, say what was lost. */
static void flush(keyused_t *k)
{
    apr_pool_t *p;
    const char *params[1];
    struct pg_result *res;
    apr_status_t rv;
    int n;

    if (apr_pool_create(&p, k->pool) != APR_SUCCESS) {
        return;
    }
    params[0] = aura_keystore_take_used(p, k->max, &n);
    if (n > 0) {
        rv = aura_db_query_bg(k->s, p, AURA_DB_KEY_TOUCH, params, &res);
        aura_count_n(rv == APR_SUCCESS ? AURA_CTR_KEY_USED_WRITTEN
                                       : AURA_CTR_KEY_USED_LOST,
                     (apr_uint64_t)n);
        if (rv == APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, k->s, AURA_LOGNO(02400)
                         "last-used time of %d API key(s) written", n);
        }
        else {
            apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());

            if (k->last_warned == 0 || now - k->last_warned >= 60) {
                k->last_warned = now;
                ap_log_error(APLOG_MARK, APLOG_WARNING, rv, k->s,
                             AURA_LOGNO(02401)
                             "last-used time of %d API key(s) not written: "
                             "the key store did not take it (dropped; "
                             "logged once a minute per child)", n);
            }
        }
    }
    apr_pool_destroy(p);
}

/* Returns instead of apr_thread_exit(), as aura_exporter.c's thread
 * (AddressSanitizer and pthread_exit()'s forced unwind). */
static void *APR_THREAD_FUNC run(apr_thread_t *thread, void *data)
{
    keyused_t *k = data;
    int stopping;

    (void)thread;
    for (;;) {
        apr_thread_mutex_lock(k->lock);
        if (!k->stopping) {
            apr_thread_cond_timedwait(k->wake, k->lock, k->interval);
        }
        stopping = k->stopping;
        apr_thread_mutex_unlock(k->lock);
        /* The last flush too, when the child exits: at most one batch
         * is ever lost, and only to a key store that does not answer. */
        flush(k);
        if (stopping) {
            break;
        }
    }
    return NULL;
}

/* Pre-cleanup of the child pool: the key cache's mutex and the Postgres
 * pool are plain cleanups of the same pool, still there while the
 * thread does its last flush and is joined. */
static apr_status_t keyused_stop(void *data)
{
    keyused_t *k = data;
    apr_status_t rv;

    apr_thread_mutex_lock(k->lock);
    k->stopping = 1;
    apr_thread_cond_signal(k->wake);
    apr_thread_mutex_unlock(k->lock);
    if (k->thread) {
        apr_thread_join(&rv, k->thread);
    }
    return APR_SUCCESS;
}

void aura_keyused_child_init(apr_pool_t *pchild, server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    keyused_t *k;
    apr_status_t rv;

    if (aura_conf_key_last_used(c) == 0 || !aura_db_configured()) {
        return;
    }
    k = apr_pcalloc(pchild, sizeof(*k));
    k->s = s;
    k->interval = aura_conf_key_last_used(c);
    k->max = aura_conf_key_cache_size(c);
    rv = apr_pool_create(&k->pool, pchild);
    if (rv == APR_SUCCESS) {
        rv = apr_thread_mutex_create(&k->lock, APR_THREAD_MUTEX_DEFAULT,
                                     pchild);
    }
    if (rv == APR_SUCCESS) {
        rv = apr_thread_cond_create(&k->wake, pchild);
    }
    if (rv == APR_SUCCESS) {
        /* Registered before the thread exists: the cleanup handles a
         * thread that failed to start (k->thread NULL). */
        apr_pool_pre_cleanup_register(pchild, k, keyused_stop);
        rv = apr_thread_create(&k->thread, NULL, run, k, pchild);
        if (rv != APR_SUCCESS) {
            k->thread = NULL;
        }
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, AURA_LOGNO(02402)
                     "cannot start the API keys' last-used flush: this "
                     "child does not record when its keys were used");
    }
}
