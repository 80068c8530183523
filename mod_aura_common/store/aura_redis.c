/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_redis.c: the Redis connections of one child process, and the
 * sliding-window counter of the actor quota (DESIGN.md section 8).
 *
 * Why one Lua script: reading the two windows, deciding and counting
 * must be one atomic step shared by every child of every gateway
 * instance, or two requests could both see "one left" and both pass.  A
 * script also takes the time from Redis (TIME), so instances whose
 * clocks disagree still agree on the window, and it writes nothing for a
 * refused request (rejections are never counted, so a client hammering
 * a closed quota does not keep it closed).  Both keys of an actor carry
 * the caller's hash tag ("aura:q:{...}"), so they share a Cluster slot.
 *
 * Why EVALSHA with an EVAL fallback: EVALSHA sends 40 bytes instead of
 * the script.  Its SHA-1 is computed once per child, here, not asked of
 * Redis with SCRIPT LOAD, so a child starts while Redis is down.  Redis
 * forgets its scripts on a restart, a failover or SCRIPT FLUSH; it then
 * answers NOSCRIPT, and one EVAL both answers and caches the script
 * again for every later EVALSHA.
 *
 * Why an apr_reslist and not one context per child: a redisContext is
 * used by one thread at a time, and the event MPM runs many.  The pool
 * has min 0 (apr_reslist_create fails, and destroys the list, when it
 * cannot open min connections: Redis down at start would leave the
 * child without a pool for its whole life), hmax AuraRedisPoolMax, and
 * an acquire timeout of AuraRedisTimeout, so a burst fails fast instead
 * of queueing.  AuraRedisTimeout bounds the connect and, through
 * redisSetTimeout, every read and write (the connect timeout alone does
 * not bound commands in hiredis 0.14).
 *
 * Why invalidate after any failure: after an I/O error or a timeout the
 * context is dead, or worse alive with our reply still on its way, which
 * the next command would read as its own.  So a context that failed is
 * destroyed, never released nor reconnected; the next acquire opens a
 * fresh one, which is how the gateway reconnects after a Redis restart.
 * A context that sat in the pool may have been closed by Redis in the
 * meantime (a restart): that is only found out by using it, so a
 * request whose pooled context turns out closed tries again on another
 * one, as aura_db.c does for Postgres.  A timeout is never tried again:
 * the budget is spent.
 *
 * Each borrowed context goes back to the pool before aura_redis_quota()
 * returns: the pool's own cleanup on the child pool closes them all.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "limit/aura_limit_conf.h"
#include "store/aura_redis.h"

#include "apr_atomic.h"
#include "apr_reslist.h"
#include "apr_sha1.h"
#include "apr_strings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

/* An idle context older than this is closed instead of reused: one a
 * firewall or NAT may have dropped silently is not worth a timeout. */
#define AURA_REDIS_IDLE_TTL apr_time_from_sec(60)

/* ARGV of the quota script: limit, window, want, and the hand-over's
 * count, window, seen count and instances (aura_quota_script.h). */
#define SCRIPT_ARGS 7

#include "store/aura_quota_script.h"

typedef struct {
    redisContext *ctx;
    int reused;         /* went back to the pool at least once */
} redis_conn_t;

/* Written in child_init only. */
static apr_reslist_t *redis_pool;
static server_rec *redis_server;
static const char *redis_host;
static int redis_port;
static int redis_db;
static int redis_pool_max;
static apr_interval_time_t redis_timeout;
static char script_sha[2 * APR_SHA1_DIGESTSIZE + 1];

/* Second of the last line logged by this child, per kind of trouble:
 * during an outage every request fails, the log gets one line a second
 * (connections), and a broken script or server one more (replies). */
static volatile apr_uint32_t last_conn_logged;
static volatile apr_uint32_t last_reply_logged;

static struct timeval timeout_tv(void)
{
    struct timeval tv = { .tv_sec = apr_time_sec(redis_timeout),
                          .tv_usec = apr_time_usec(redis_timeout) };
    return tv;
}

static int log_now(volatile apr_uint32_t *last_logged)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());
    apr_uint32_t last = apr_atomic_read32(last_logged);

    return last != now
           && apr_atomic_cas32(last_logged, now, last) == last;
}

/* The APR status of a failed context; err_no is errno right after the
 * call that failed (hiredis keeps only its text). */
static apr_status_t context_status(const redisContext *c, int err_no)
{
    switch (c->err) {
    case REDIS_ERR_IO:
        if (err_no == EAGAIN || err_no == EWOULDBLOCK
            || err_no == ETIMEDOUT) {
            return APR_TIMEUP;
        }
        return err_no ? APR_FROM_OS_ERROR(err_no) : APR_EGENERAL;
    case REDIS_ERR_EOF:
        return APR_EOF;
    case REDIS_ERR_OOM:
        return APR_ENOMEM;
    default:
        return APR_EGENERAL;
    }
}

/* Did Redis close this context before we used it (a restart)?  Then
 * the command was not run and another context may try it. */
static int closed_under_us(const redisContext *c, int err_no)
{
    return c->err == REDIS_ERR_EOF
           || (c->err == REDIS_ERR_IO
               && (err_no == ECONNRESET || err_no == EPIPE));
}

/* SELECT the configured database; NULL, or why not (in buf). */
static const char *select_db(redisContext *c, char *buf, apr_size_t len)
{
    redisReply *reply = redisCommand(c, "SELECT %d", redis_db);
    const char *why = NULL;

    if (!reply) {
        why = apr_cpystrn(buf, c->errstr, len);
    }
    else if (reply->type != REDIS_REPLY_STATUS) {
        apr_snprintf(buf, len, "SELECT %d: %s", redis_db,
                     reply->type == REDIS_REPLY_ERROR ? reply->str
                                                      : "unexpected reply");
        why = buf;
    }
    if (reply) {
        freeReplyObject(reply);
    }
    return why;
}

static apr_status_t redis_ctor(void **res, void *params, apr_pool_t *pool)
{
    redis_conn_t *conn = NULL;
    redisContext *c;
    char buf[160];
    const char *why = NULL;
    apr_status_t rv = APR_EGENERAL;
    int err_no;

    (void)params; (void)pool;
    c = redisConnectWithTimeout(redis_host, redis_port, timeout_tv());
    err_no = errno;
    if (!c) {
        return APR_ENOMEM;
    }
    if (c->err) {
        why = c->errstr;
        rv = context_status(c, err_no);
    }
    /* The connect timeout does not bound reads and writes. */
    else if (redisSetTimeout(c, timeout_tv()) != REDIS_OK
             || redisEnableKeepAlive(c) != REDIS_OK) {
        why = c->errstr;
    }
    else if (redis_db != 0) {
        why = select_db(c, buf, sizeof(buf));
    }
    if (!why && (conn = calloc(1, sizeof(*conn))) == NULL) {
        why = "out of memory";
        rv = APR_ENOMEM;
    }
    if (why) {
        /* hiredis's text names the reason; never a password. */
        if (log_now(&last_conn_logged)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, redis_server,
                         AURA_LOGNO(00070) "Redis connection to %s:%d "
                         "failed: %s", redis_host, redis_port, why);
        }
        redisFree(c);
        return rv;
    }
    conn->ctx = c;
    *res = conn;
    return APR_SUCCESS;
}

static apr_status_t redis_dtor(void *res, void *params, apr_pool_t *pool)
{
    redis_conn_t *conn = res;

    (void)params; (void)pool;
    redisFree(conn->ctx);
    free(conn);
    return APR_SUCCESS;
}

static void compute_script_sha(void)
{
    apr_sha1_ctx_t sha;
    unsigned char digest[APR_SHA1_DIGESTSIZE];

    apr_sha1_init(&sha);
    apr_sha1_update(&sha, quota_script, sizeof(quota_script) - 1);
    apr_sha1_final(digest, &sha);
    ap_bin2hex(digest, sizeof(digest), script_sha);   /* lowercase */
}

void aura_redis_child_init(apr_pool_t *pchild, server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    apr_status_t rv;

    redis_server = s;
    if (!c->redis_host) {
        return;
    }
    /* pconf, where the host lives, outlives the child pool. */
    redis_host = c->redis_host;
    redis_port = aura_conf_redis_port(c);
    redis_db = aura_conf_redis_db(c);
    redis_pool_max = aura_conf_redis_pool_max(c);
    redis_timeout = aura_conf_redis_timeout(c);
    compute_script_sha();
    rv = apr_reslist_create(&redis_pool, 0, redis_pool_max, redis_pool_max,
                            AURA_REDIS_IDLE_TTL, redis_ctor, redis_dtor,
                            NULL, pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, AURA_LOGNO(00071)
                     "cannot create the Redis connection pool");
        redis_pool = NULL;
        return;
    }
    apr_reslist_timeout_set(redis_pool, redis_timeout);
}

/* The longest a quota call can take: a pooled connection waited for,
 * then the call, each within AuraRedisTimeout. */
apr_interval_time_t aura_redis_call_max(void)
{
    return 2 * redis_timeout;
}

int aura_redis_configured(void)
{
    return redis_pool != NULL;
}

/* {granted 0..want, remaining, reset_ms, retry_after_ms, count,
 * window}, none negative. */
static int reply_well_formed(const redisReply *reply, apr_int64_t want)
{
    size_t i;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 6) {
        return 0;
    }
    for (i = 0; i < 6; i++) {
        if (reply->element[i]->type != REDIS_REPLY_INTEGER
            || reply->element[i]->integer < 0) {
            return 0;
        }
    }
    return reply->element[0]->integer <= want;
}

/* The script's answer into *out.  The key is never logged: it names an
 * actor, and the error text of a script does not contain it. */
static apr_status_t read_result(request_rec *r, const redisReply *reply,
                                apr_int64_t limit, apr_int64_t want,
                                aura_quota_result_t *out)
{
    if (reply->type == REDIS_REPLY_ERROR) {
        if (log_now(&last_reply_logged)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00073)
                          "Redis at %s:%d answered the quota script with "
                          "an error: %.200s", redis_host, redis_port,
                          reply->str);
        }
        return APR_EGENERAL;
    }
    if (!reply_well_formed(reply, want)) {
        if (log_now(&last_reply_logged)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00074)
                          "malformed answer to the quota script from "
                          "Redis at %s:%d (reply type %d)", redis_host,
                          redis_port, reply->type);
        }
        return APR_EGENERAL;
    }
    out->granted = reply->element[0]->integer;
    out->admitted = out->granted > 0;
    out->limit = limit;
    out->remaining = reply->element[1]->integer;
    out->reset_ms = reply->element[2]->integer;
    out->retry_after_ms = reply->element[3]->integer;
    out->count = reply->element[4]->integer;
    out->window = (apr_uint64_t)reply->element[5]->integer;
    return APR_SUCCESS;
}

static int is_noscript(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ERROR && reply->str
           && strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

/* EVALSHA, and EVAL when Redis does not know the script.  NULL when the
 * context failed (*err_no: errno right after). */
static redisReply *run_script(request_rec *r, redisContext *c,
                              const char *key,
                              const char *const args[SCRIPT_ARGS],
                              int *err_no)
{
    const char *argv[4 + SCRIPT_ARGS] = { "EVALSHA", script_sha, "1", key };
    size_t argvlen[4 + SCRIPT_ARGS];
    redisReply *reply;
    int i;

    for (i = 0; i < SCRIPT_ARGS; i++) {
        argv[4 + i] = args[i];
    }
    for (i = 0; i < 4 + SCRIPT_ARGS; i++) {
        argvlen[i] = strlen(argv[i]);
    }
    reply = redisCommandArgv(c, 4 + SCRIPT_ARGS, argv, argvlen);
    *err_no = errno;
    if (reply && is_noscript(reply)) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00076)
                      "Redis at %s:%d does not know the quota script: "
                      "sending it with EVAL", redis_host, redis_port);
        freeReplyObject(reply);
        argv[0] = "EVAL";
        argv[1] = quota_script;
        argvlen[0] = 4;
        argvlen[1] = sizeof(quota_script) - 1;
        reply = redisCommandArgv(c, 4 + SCRIPT_ARGS, argv, argvlen);
        *err_no = errno;
    }
    return reply;
}

/* One attempt on one pooled context; *stale when that context had been
 * closed by Redis while idle in the pool (another one may work). */
static apr_status_t quota_once(request_rec *r, const char *key,
                               const char *const args[SCRIPT_ARGS],
                               apr_int64_t limit,
                               apr_int64_t want, aura_quota_result_t *out,
                               int *stale)
{
    redis_conn_t *conn;
    redisReply *reply;
    apr_status_t rv;
    int err_no;

    *stale = 0;
    rv = apr_reslist_acquire(redis_pool, (void **)&conn);
    if (rv != APR_SUCCESS) {
        /* The constructor logged its own failures; this is a full pool. */
        if (APR_STATUS_IS_TIMEUP(rv) && log_now(&last_conn_logged)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r,
                          AURA_LOGNO(00075) "no free Redis connection in "
                          "this child within %" APR_TIME_T_FMT " ms "
                          "(AuraRedisPoolMax %d)",
                          apr_time_as_msec(redis_timeout), redis_pool_max);
        }
        return rv;
    }
    reply = run_script(r, conn->ctx, key, args, &err_no);
    if (!reply || conn->ctx->err) {
        rv = context_status(conn->ctx, err_no);
        *stale = conn->reused && closed_under_us(conn->ctx, err_no);
        if (!*stale && log_now(&last_conn_logged)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                          AURA_LOGNO(00072) "Redis quota request to %s:%d "
                          "failed: %s", redis_host, redis_port,
                          conn->ctx->errstr);
        }
        if (reply) {
            freeReplyObject(reply);
        }
        apr_reslist_invalidate(redis_pool, conn);
        return rv;
    }
    rv = read_result(r, reply, limit, want, out);
    freeReplyObject(reply);
    conn->reused = 1;
    apr_reslist_release(redis_pool, conn);
    return rv;
}

apr_status_t aura_redis_quota(request_rec *r, const char *key,
                              apr_int64_t limit, apr_int64_t window_ms,
                              apr_int64_t want,
                              const aura_quota_handover_t *h,
                              aura_quota_result_t *out)
{
    char s[SCRIPT_ARGS][24];
    const char *const args[SCRIPT_ARGS] = { s[0], s[1], s[2], s[3], s[4],
                                            s[5], s[6] };
    apr_status_t rv;
    int stale, tries;

    memset(out, 0, sizeof(*out));
    if (!redis_pool) {
        return APR_ENOTIMPL;
    }
    if (!key || limit < 1 || window_ms < 1 || want < 1) {
        return APR_EINVAL;
    }
    apr_snprintf(s[0], sizeof(s[0]), "%" APR_INT64_T_FMT, limit);
    apr_snprintf(s[1], sizeof(s[1]), "%" APR_INT64_T_FMT, window_ms);
    apr_snprintf(s[2], sizeof(s[2]), "%" APR_INT64_T_FMT, want);
    apr_snprintf(s[3], sizeof(s[3]), "%" APR_INT64_T_FMT,
                 h && h->count > 0 ? h->count : 0);
    apr_snprintf(s[4], sizeof(s[4]), "%" APR_UINT64_T_FMT,
                 h ? h->window : 0);
    apr_snprintf(s[5], sizeof(s[5]), "%" APR_INT64_T_FMT,
                 h && h->seen > 0 ? h->seen : 0);
    apr_snprintf(s[6], sizeof(s[6]), "%" APR_INT64_T_FMT,
                 h && h->instances > 0 ? h->instances : 1);
    /* After a Redis restart every idle context of the pool is closed:
     * each one fails at once (no timeout is spent), and at most the whole
     * pool plus one fresh context is tried. */
    tries = 0;
    do {
        rv = quota_once(r, key, args, limit, want, out, &stale);
    } while (stale && ++tries <= redis_pool_max);
    return rv;
}
