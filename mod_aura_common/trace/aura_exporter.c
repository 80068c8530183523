/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_exporter.c: the OTLP/HTTP trace exporter, one per child.
 *
 * Workers hand each sampled request's spans over at log_transaction
 * (aura_exporter_enqueue): a fragment of JSON appended to a queue under
 * the exporter's mutex, held for a few pointer stores and never during
 * I/O.  The queue is bounded by spans (AuraTraceQueueSize) and by bytes
 * (that many times AURA_TRACE_SPAN_BYTES): when either is reached the
 * request's spans are dropped and counted, so a slow or dead collector
 * costs a request nothing and the child's memory stays bounded.
 *
 * One thread per child posts batches of at most AuraTraceBatchSize
 * spans with libcurl to the collector: when a batch is full, or once a
 * second otherwise.  The libcurl handle is the thread's alone and is
 * kept, so its connection is reused.  Every post is bounded by
 * AuraTraceExportTimeout; a batch the collector did not accept (no
 * answer, not 2xx) is dropped and counted, never retried: the queue
 * behind it is what matters.
 *
 * Lifetime: started in child_init, stopped by a pre-cleanup of the
 * child pool that sets the stop flag, wakes the thread and joins it.
 * A post in progress is aborted by libcurl's progress callback once the
 * flag is set, so the join waits at most a moment; what is still
 * queued is dropped (counted) with the child.
 *
 * Counters (aura_shm.h) are the segment's, summed across children:
 * spans recorded, exported, dropped (queue full, export failed),
 * failed exports; the queued spans of all children are a gauge.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "shm/aura_shm.h"
#include "trace/aura_exporter.h"
#include "trace/aura_otlp.h"
#include "trace/aura_trace_conf.h"

#include "apr_atomic.h"
#include "apr_strings.h"
#include "apr_thread_cond.h"
#include "apr_thread_mutex.h"
#include "apr_thread_proc.h"

#include <curl/curl.h>
#include <stdlib.h>

/* How long a partial batch waits for more spans. */
#define FLUSH_INTERVAL apr_time_from_sec(1)

typedef struct item_t {
    struct item_t *next;
    char *json;
    apr_size_t len;
    int spans;
} item_t;

typedef struct {
    server_rec *s;
    apr_thread_mutex_t *lock;
    apr_thread_cond_t *wake;
    apr_thread_t *thread;
    /* Under lock: */
    item_t *head, *tail;
    int spans;
    apr_size_t bytes;
    /* Set under lock, read by libcurl's callback without it. */
    volatile apr_uint32_t stopping;
    /* Read-only once started: */
    int max_spans, batch;
    apr_size_t max_bytes;
    const char *head_json;
    /* The thread's alone: */
    CURL *curl;
    struct curl_slist *headers;
    int failing;
} exporter_t;

/* Per child: written once in child_init, before any request. */
static exporter_t *exporter;
/* Written in post_config only. */
static int curl_ready;

void aura_exporter_post_config(server_rec *s)
{
    CURLcode rc;

    if (curl_ready || !aura_trace_conf(s)) {
        return;
    }
    /* Not thread-safe: here, in the parent, before any thread. */
    rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(01900)
                     "libcurl did not initialize (%s): spans will not be "
                     "exported", curl_easy_strerror(rc));
        return;
    }
    curl_ready = 1;
}

static void queued_gauge(apr_int64_t delta)
{
    volatile apr_uint64_t *g = aura_shm_flag(AURA_FLAG_TRACE_QUEUED);

    if (g) {
        apr_atomic_add64(g, (apr_uint64_t)delta);
    }
}

void aura_exporter_enqueue(char *json, apr_size_t len, int spans)
{
    exporter_t *e = exporter;
    item_t *it;

    if (!e || !(it = malloc(sizeof(*it)))) {
        free(json);
        aura_count_n(AURA_CTR_SPANS_DROPPED_QUEUE, (apr_uint64_t)spans);
        return;
    }
    it->next = NULL;
    it->json = json;
    it->len = len;
    it->spans = spans;
    apr_thread_mutex_lock(e->lock);
    if (e->stopping || e->spans + spans > e->max_spans
        || e->bytes + len > e->max_bytes) {
        apr_thread_mutex_unlock(e->lock);
        free(json);
        free(it);
        aura_count_n(AURA_CTR_SPANS_DROPPED_QUEUE, (apr_uint64_t)spans);
        return;
    }
    if (e->tail) {
        e->tail->next = it;
    }
    else {
        e->head = it;
    }
    e->tail = it;
    e->spans += spans;
    e->bytes += len;
    if (e->spans >= e->batch) {
        apr_thread_cond_signal(e->wake);
    }
    apr_thread_mutex_unlock(e->lock);
    queued_gauge(spans);
}

/* Under lock: the items of one batch, whole requests, at most batch
 * spans (one request more than a batch goes alone). */
static item_t *take_batch(exporter_t *e)
{
    item_t *first = e->head, *last = NULL, *it;
    int n = 0;

    for (it = e->head; it && (n == 0 || n + it->spans <= e->batch);
         it = it->next) {
        n += it->spans;
        e->spans -= it->spans;
        e->bytes -= it->len;
        last = it;
    }
    if (!last) {
        return NULL;
    }
    e->head = last->next;
    if (!e->head) {
        e->tail = NULL;
    }
    last->next = NULL;
    return first;
}

static void free_items(item_t *it, apr_uint64_t *spans)
{
    while (it) {
        item_t *next = it->next;

        *spans += (apr_uint64_t)it->spans;
        free(it->json);
        free(it);
        it = next;
    }
}

static size_t discard_body(char *p, size_t size, size_t n, void *u)
{
    (void)p; (void)u;
    return size * n;
}

/* libcurl's progress callback: a non-zero answer aborts the transfer,
 * so stopping the child never waits for a slow collector. */
static int abort_if_stopping(void *u, curl_off_t a, curl_off_t b,
                             curl_off_t c, curl_off_t d)
{
    const exporter_t *e = u;

    (void)a; (void)b; (void)c; (void)d;
    return e->stopping != 0;
}

static char *batch_body(exporter_t *e, const item_t *items, size_t *len)
{
    apr_size_t hl = strlen(e->head_json), tl = sizeof(AURA_OTLP_TAIL) - 1;
    apr_size_t n = hl + tl;
    const item_t *it;
    char *body, *p;

    for (it = items; it; it = it->next) {
        n += it->len + 1;
    }
    if (!(body = malloc(n + 1))) {
        return NULL;
    }
    memcpy(body, e->head_json, hl);
    p = body + hl;
    for (it = items; it; it = it->next) {
        if (it != items) {
            *p++ = ',';
        }
        memcpy(p, it->json, it->len);
        p += it->len;
    }
    memcpy(p, AURA_OTLP_TAIL, tl);
    p += tl;
    *p = '\0';
    *len = (size_t)(p - body);
    return body;
}

/* One batch to the collector; logs a change of state (failing, back),
 * not each failure: one line per outage and child. */
static void post(exporter_t *e, item_t *items)
{
    apr_uint64_t spans = 0;
    size_t len = 0;
    char *body = batch_body(e, items, &len);
    CURLcode rc = CURLE_OUT_OF_MEMORY;
    long status = 0;

    if (body) {
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)len);
        rc = curl_easy_perform(e->curl);
        curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
        free(body);
    }
    free_items(items, &spans);
    queued_gauge(-(apr_int64_t)spans);
    if (rc == CURLE_OK && status >= 200 && status < 300) {
        aura_count_n(AURA_CTR_SPANS_EXPORTED, spans);
        if (e->failing) {
            e->failing = 0;
            ap_log_error(APLOG_MARK, APLOG_INFO, 0, e->s, AURA_LOGNO(01901)
                         "trace export to the collector works again");
        }
        return;
    }
    aura_count(AURA_CTR_TRACE_EXPORT_FAILURES);
    aura_count_n(AURA_CTR_SPANS_DROPPED_EXPORT, spans);
    if (!e->failing && !e->stopping) {
        e->failing = 1;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, e->s, AURA_LOGNO(01902)
                     "trace export failed (%s, HTTP status %ld): spans "
                     "are dropped until the collector answers 2xx "
                     "(logged once until then)",
                     rc == CURLE_OK ? "not accepted"
                                    : curl_easy_strerror(rc), status);
    }
}

/* Returns instead of apr_thread_exit(), as aura_connlimit.c's thread:
 * pthread_exit()'s forced unwind makes AddressSanitizer crash in its own
 * thread teardown at every child's exit; nothing reads the exit value. */
static void *APR_THREAD_FUNC run(apr_thread_t *thread, void *data)
{
    exporter_t *e = data;
    item_t *items;

    (void)thread;

    apr_thread_mutex_lock(e->lock);
    while (!e->stopping) {
        if (e->spans < e->batch) {
            apr_thread_cond_timedwait(e->wake, e->lock, FLUSH_INTERVAL);
        }
        if (e->stopping) {
            break;
        }
        items = take_batch(e);
        if (items) {
            apr_thread_mutex_unlock(e->lock);
            post(e, items);
            apr_thread_mutex_lock(e->lock);
        }
    }
    apr_thread_mutex_unlock(e->lock);
    return NULL;
}

/* Pre-cleanup of the child pool: stop, join, drop what is left.  A
 * pre-cleanup, so the mutex and condition (plain cleanups of the same
 * pool) are still there while the thread is joined. */
static apr_status_t exporter_stop(void *data)
{
    exporter_t *e = data;
    apr_status_t rv;
    apr_uint64_t spans = 0;

    apr_thread_mutex_lock(e->lock);
    e->stopping = 1;
    apr_thread_cond_signal(e->wake);
    apr_thread_mutex_unlock(e->lock);
    if (e->thread) {
        apr_thread_join(&rv, e->thread);
    }
    exporter = NULL;
    free_items(e->head, &spans);
    e->head = e->tail = NULL;
    queued_gauge(-(apr_int64_t)spans);
    aura_count_n(AURA_CTR_SPANS_DROPPED_QUEUE, spans);
    curl_slist_free_all(e->headers);
    curl_easy_cleanup(e->curl);
    return APR_SUCCESS;
}

static int curl_setup(exporter_t *e, const aura_trace_conf_t *t)
{
    struct curl_slist *h = curl_slist_append(NULL,
                                             "Content-Type: application/json");
    long ms = (long)apr_time_as_msec(aura_trace_conf_timeout(t));
    int i;

    for (i = 0; h && t->headers && i < t->headers->nelts; i++) {
        struct curl_slist *n =
            curl_slist_append(h, APR_ARRAY_IDX(t->headers, i, const char *));

        if (!n) {
            curl_slist_free_all(h);
            h = NULL;
        }
        h = n;
    }
    /* No "Expect: 100-continue" round trip before a large batch. */
    h = h ? curl_slist_append(h, "Expect:") : NULL;
    e->headers = h;
    e->curl = curl_easy_init();
    if (!h || !e->curl) {
        return 0;
    }
    curl_easy_setopt(e->curl, CURLOPT_URL, t->endpoint);
    curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, h);
    /* A thread of httpd's: no signals (name resolution timeouts). */
    curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e->curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, discard_body);
    curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, abort_if_stopping);
    curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, e);
    if (t->ca_file) {
        curl_easy_setopt(e->curl, CURLOPT_CAINFO, t->ca_file);
    }
    if (t->cert_file) {
        curl_easy_setopt(e->curl, CURLOPT_SSLCERT, t->cert_file);
        curl_easy_setopt(e->curl, CURLOPT_SSLKEY, t->key_file);
    }
    if (t->verify == 0) {
        curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return 1;
}

void aura_exporter_child_init(apr_pool_t *pchild, server_rec *s)
{
    const aura_trace_conf_t *t = aura_trace_conf(s);
    exporter_t *e;
    apr_status_t rv;

    if (!t || !curl_ready) {
        return;
    }
    e = apr_pcalloc(pchild, sizeof(*e));
    e->s = s;
    e->max_spans = aura_trace_conf_queue(t);
    e->max_bytes = (apr_size_t)e->max_spans * AURA_TRACE_SPAN_BYTES;
    e->batch = aura_trace_conf_batch(t);
    e->head_json = aura_otlp_head(pchild, aura_trace_conf_resource(pchild,
                                                                   t),
                                  AURA_VERSION);
    rv = apr_thread_mutex_create(&e->lock, APR_THREAD_MUTEX_DEFAULT, pchild);
    if (rv == APR_SUCCESS) {
        rv = apr_thread_cond_create(&e->wake, pchild);
    }
    if (rv != APR_SUCCESS || !e->head_json || !curl_setup(e, t)) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, AURA_LOGNO(01903)
                     "cannot set up the trace exporter: spans of this "
                     "child are not exported");
        curl_slist_free_all(e->headers);
        curl_easy_cleanup(e->curl);
        return;
    }
    /* Registered before the thread exists: the cleanup handles a
     * thread that failed to start (e->thread NULL). */
    apr_pool_pre_cleanup_register(pchild, e, exporter_stop);
    rv = apr_thread_create(&e->thread, NULL, run, e, pchild);
    if (rv != APR_SUCCESS) {
        e->thread = NULL;
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, AURA_LOGNO(01904)
                     "cannot start the trace exporter thread: spans of "
                     "this child are not exported");
        return;
    }
    exporter = e;
}
