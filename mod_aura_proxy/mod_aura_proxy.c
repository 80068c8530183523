/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mod_aura_proxy: pooled connections and per-route timeouts for the HTTP
 * upstreams of mod_aura, through mod_proxy's own workers.
 *
 * mod_proxy reuses connections only through a worker, and workers are
 * made from the configuration (ProxyPass, <Proxy>): a request for any
 * other origin falls to the default reverse worker, which opens a new
 * TCP connection per request.  mod_aura's upstreams are partly known
 * only at run time (a project's dedicated PostgREST comes from
 * Postgres), and each route has its own budget, which in mod_proxy is a
 * worker's I/O timeout.  So this module answers mod_proxy's pre_request
 * hook, as mod_proxy_balancer does, for the requests mod_aura_common
 * routed to an HTTP upstream (aura_upstream_origin(),
 * aura_upstream_budget()): it hands out a worker
 * per (origin, budget), made on first use in this child with mod_proxy's
 * own ap_proxy_define_worker_ex() and ap_proxy_initialize_worker(), and
 * kept for the child's life, so connections to it are pooled and reused
 * like those of a configured worker.
 *
 * Such a worker is the child's own (not in mod_proxy's shared slots):
 * its connection pool is per child anyway.  At most MAX_WORKERS are
 * made per child; past that a request gets the default worker (no
 * reuse) and one line in the log: degraded, never refused.
 *
 * It must be loaded after mod_proxy (it calls into mod_proxy.so) and
 * after mod_aura_common (it calls aura_upstream_origin() and
 * aura_upstream_budget(), resolved against mod_aura_common.so when it is
 * loaded).
 */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_request.h"
#include "apr_hash.h"
#include "apr_strings.h"
#include "apr_thread_mutex.h"
#include "mod_proxy.h"

#include "aura.h"

APLOG_USE_MODULE(aura_proxy);

#define MAX_WORKERS 1024
/* Connecting is bounded apart from the budget: a dead host should not
 * hold a request for a 380 s function budget. */
#define MAX_CONNECT_TIMEOUT apr_time_from_sec(5)
/* Idle pooled connections are closed after this, below the keep-alive
 * timeout of common upstreams (nginx 75 s, PostgREST/warp 30 s...). */
#define IDLE_TTL apr_time_from_sec(20)

/* Per child, made in child_init; the table is guarded by the mutex. */
static apr_pool_t *workers_pool;
static apr_hash_t *workers;
static apr_thread_mutex_t *workers_lock;
static int workers_full_logged;

static int aura_proxy_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                                  apr_pool_t *ptemp, server_rec *s)
{
    (void)pconf; (void)plog; (void)ptemp;
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    return aura_api_check(s, "mod_aura_proxy");
}

static void aura_proxy_child_init(apr_pool_t *pchild, server_rec *s)
{
    if (apr_pool_create(&workers_pool, pchild) != APR_SUCCESS
        || apr_thread_mutex_create(&workers_lock, APR_THREAD_MUTEX_DEFAULT,
                                   pchild) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, AURA_LOGNO(00110)
                     "cannot set up the worker table: HTTP upstreams get "
                     "a new connection per request");
        workers_lock = NULL;
        return;
    }
    apr_pool_tag(workers_pool, "aura_proxy_workers");
    workers = apr_hash_make(workers_pool);
}

/* A new worker for origin with budget as its I/O timeout; NULL (and a
 * log line) when mod_proxy refuses it.  Called with the lock held. */
static proxy_worker *make_worker(request_rec *r, const char *origin,
                                 apr_interval_time_t budget)
{
    proxy_worker *w = NULL;
    char *err;
    apr_status_t rv;

    err = ap_proxy_define_worker_ex(workers_pool, &w, NULL, NULL, origin,
                                    AP_PROXY_WORKER_IS_PREFIX);
    if (err) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00111)
                      "cannot define a worker for %s: %s", origin, err);
        return NULL;
    }
    w->s->timeout = budget;
    w->s->timeout_set = 1;
    w->s->conn_timeout = budget < MAX_CONNECT_TIMEOUT ? budget
                                                      : MAX_CONNECT_TIMEOUT;
    w->s->conn_timeout_set = 1;
    w->s->ttl = IDLE_TTL;
    rv = ap_proxy_initialize_worker(w, r->server, workers_pool);
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, AURA_LOGNO(00112)
                      "cannot initialize the worker for %s", origin);
        return NULL;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00113)
                  "pooled worker for %s, timeout %" APR_TIME_T_FMT " ms",
                  origin, apr_time_as_msec(budget));
    return w;
}

/* The table's key of (origin, budget in whole milliseconds): the
 * budget's bytes, then the origin's, in buf when they fit (every route
 * of a sane configuration), else in r->pool.  Put together by hand: it
 * is on every request of the HTTP path. */
#define KEY_BUF 256
static const char *worker_key(request_rec *r, char *buf, const char *origin,
                              apr_int64_t budget_ms, apr_size_t *len)
{
    apr_size_t n = strlen(origin);
    char *key = n + sizeof(budget_ms) <= KEY_BUF
                ? buf : apr_palloc(r->pool, n + sizeof(budget_ms));

    memcpy(key, &budget_ms, sizeof(budget_ms));
    memcpy(key + sizeof(budget_ms), origin, n);
    *len = n + sizeof(budget_ms);
    return key;
}

/* The worker of (origin, budget in whole milliseconds). */
static proxy_worker *worker_for(request_rec *r, const char *origin,
                                apr_int64_t budget_ms)
{
    char buf[KEY_BUF];
    apr_size_t len;
    const char *key = worker_key(r, buf, origin, budget_ms, &len);
    apr_interval_time_t budget = apr_time_from_msec(budget_ms > 0 ? budget_ms
                                                                  : 1);
    proxy_worker *w;

    if (!workers_lock) {
        return NULL;
    }
    apr_thread_mutex_lock(workers_lock);
    w = apr_hash_get(workers, key, (apr_ssize_t)len);
    if (!w && apr_hash_count(workers) < MAX_WORKERS) {
        w = make_worker(r, origin, budget);
        if (w) {
            apr_hash_set(workers, apr_pmemdup(workers_pool, key, len),
                         (apr_ssize_t)len, w);
        }
    }
    else if (!w && !workers_full_logged) {
        workers_full_logged = 1;
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00114)
                      "%d pooled workers in this child: further HTTP "
                      "upstreams get a new connection per request",
                      MAX_WORKERS);
    }
    apr_thread_mutex_unlock(workers_lock);
    return w;
}

static int aura_proxy_pre_request(proxy_worker **worker,
                                  proxy_balancer **balancer,
                                  request_rec *r, proxy_server_conf *conf,
                                  char **url)
{
    const char *origin = aura_upstream_origin(r);
    proxy_worker *w;

    (void)conf; (void)url;
    if (!origin || (*balancer && *worker)) {
        return DECLINED;
    }
    /* Whole milliseconds, as the route's budget is configured. */
    w = worker_for(r, origin, apr_time_as_msec(aura_upstream_budget(r)));
    if (!w) {
        return DECLINED;
    }
    *worker = w;
    *balancer = NULL;
    return OK;
}

static void aura_proxy_register_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_post_config(aura_proxy_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(aura_proxy_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    proxy_hook_pre_request(aura_proxy_pre_request, NULL, NULL,
                           APR_HOOK_FIRST);
}

module AURA_DECLARE_DATA aura_proxy_module = {
    STANDARD20_MODULE_STUFF,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    aura_proxy_register_hooks,
    AP_MODULE_FLAG_NONE
};
