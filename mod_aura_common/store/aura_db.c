/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_db.c: Postgres connections of one child process, and the
 * prepared statements the gateway runs.
 *
 * Why our own small pool of libpq connections and not mod_dbd: mod_dbd
 * needs a driver Debian does not install (libaprutil1-dbd-pgsql),
 * returns text only, has no acquire timeout (a burst waits forever at
 * DBDMax), and on a broken connection calls PQreset, which drops the
 * server-side prepared statements while mod_dbd keeps believing they
 * exist.  Why not apr_reslist either (issue #16): its constructor runs
 * under the list's lock, so while Postgres was unreachable N concurrent
 * acquires each waited for the connects before them (2, 4, 6 ... 12 s
 * with an AuraDBTimeout of 2 s), and PQconnectdb has no deadline of ours.
 * Here: a bounded pool per child (none open at start, so a child starts
 * while Postgres is down) whose lock covers only the idle stack and the
 * count; a new connection is opened outside it, non-blocking
 * (PQconnectStart/PQconnectPoll and poll()), and every statement is sent
 * and awaited the same way, all against one deadline per query:
 * AuraDBTimeout from the moment the caller asked.  A connection whose
 * statement ran out of time is closed, never returned mid-query; one
 * that failed is destroyed, never reset: the next acquire opens a fresh
 * one, which is how the gateway reconnects after a Postgres restart.
 *
 * TCP keepalives and TCP_USER_TIMEOUT (conninfo keywords) make the
 * kernel give up on a connection whose peer vanished, so an idle pooled
 * connection to a blackholed server is found dead by the next use.
 *
 * The key store has a breaker of its own in the shared segment (slot
 * AURA_BREAKER_STORE, AuraBreaker store ...), shared by every child: a
 * query that gets no answer (connect failure, deadline, lost connection)
 * counts against it, and while it is open aura_db_query() fails at once
 * with APR_EAGAIN, without a connect or a wait; the key cache then serves
 * what it has (aura_keystore.c).
 *
 * A PGconn is used by one thread at a time (libpq is thread-safe across
 * connections); each borrowed connection goes back to the pool before
 * the call returns: never held for the whole request (a proxied upload
 * can last minutes).
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_request.h"
#include "limit/aura_limit.h"
#include "resilience/aura_breaker.h"
#include "resilience/aura_breaker_fsm.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"
#include "store/aura_store_conf.h"

#include "apr_atomic.h"
#include "apr_strings.h"
#include "apr_thread_cond.h"
#include "apr_thread_mutex.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include <libpq-fe.h>

#define NS_PER_MS APR_UINT64_C(1000000)
/* An idle connection older than this is closed rather than reused: the
 * server side may have been recycled by a pooler or a firewall. */
#define DB_IDLE_TTL apr_time_from_sec(300)
/* The key store's breaker unless AuraBreaker store says otherwise: each
 * failure costs a request up to AuraDBTimeout, and the cooldown is how
 * long uncached keys wait after Postgres is back. */
#define STORE_THRESHOLD    3
#define STORE_COOLDOWN_MS  5000
#define STORE_PROBES       1

/* The services' breakers (slots 1 + aura_service_e) stay clear of the
 * store's: a negative array size stops the build otherwise. */
typedef char store_slot_is_free[1 + AURA_SVC_COUNT < AURA_BREAKER_STORE
                                ? 1 : -1];

typedef struct {
    PGconn *conn;
    unsigned int prepared;     /* bit i: statement i prepared here */
    apr_time_t idle_since;
} db_conn_t;

typedef struct {
    const char *name;
    const char *sql;
    int nparams;
} db_stmt_t;

/* Who runs a statement: a request (r set: its pool, its log lines), or
 * a thread of the child outside any request (r NULL: s and p; the
 * caller logs what was lost, see aura_db_query_bg). */
typedef struct {
    request_rec *r;
    server_rec *s;
    apr_pool_t *p;
} db_ctx_t;

/* Second of the last missing-migration line of this child. */
static volatile apr_uint32_t last_schema_logged;

/* Indexed by aura_db_stmt_e. */
static const db_stmt_t stmts[AURA_DB_STMT_COUNT] = {
    /* Expired keys are answered too, with their expiry: the gateway
     * decides expiry on every use (aura_keystore.c), cached or not.
     * The expiry in µs since the epoch, clamped so that 'infinity' and
     * '-infinity' convert (to year 9999, and to a second after the
     * epoch: long expired); scopes joined by ',' (a NULL element reads
     * as empty, refused), their count to catch an element holding ','.
     * Against a key store without the columns of
     * conf/migrations/0002-key-lifecycle.sql this fails to prepare
     * (AURA02403): every uncached key gets 503, never a key accepted
     * without its expiry or scopes. */
    { "aura_key_lookup",
      "SELECT k.project_id, k.role, p.org_id, p.plan,"
      "  CASE WHEN k.expires_at IS NULL THEN NULL ELSE"
      "   (extract(epoch FROM greatest(least(k.expires_at,"
      "     timestamptz '9999-12-31 00:00:00+00'),"
      "     timestamptz '1970-01-01 00:00:01+00')) * 1000000)::bigint"
      "  END,"
      "  array_to_string(k.scopes, ',', ''), cardinality(k.scopes)"
      "  FROM api_keys k JOIN projects p ON p.id = k.project_id"
      " WHERE k.key_hash = $1 AND k.revoked_at IS NULL", 1 },
    /* project -> org -> membership; no row: no such project */
    { "aura_project_role",
      "SELECT p.org_id, m.role FROM projects p"
      "  LEFT JOIN memberships m"
      "    ON m.org_id = p.org_id AND m.user_id = $2"
      " WHERE p.id = $1", 2 },
    { "aura_org_role",
      "SELECT role FROM memberships WHERE org_id = $1 AND user_id = $2",
      2 },
    { "aura_project_topology",
      "SELECT db_kind, topology, postgrest_target FROM projects"
      " WHERE id = $1", 1 },
    /* The keys' last-used flush: one statement per batch ($1 a text[]
     * of key hashes).  A row already stamped at or after this
     * transaction's now() (another instance's flush) is left alone. */
    { "aura_key_touch",
      "UPDATE api_keys SET last_used_at = now()"
      " WHERE key_hash = ANY ($1::text[])"
      "   AND (last_used_at IS NULL OR last_used_at < now())", 1 },
};

/* Written in child_init only. */
static const char *db_conninfo;
static apr_interval_time_t db_timeout;
static aura_breaker_conf_t store_breaker;

/* The pool, per child.  pool_lock guards idle[], nidle and ntotal only:
 * no I/O and no libpq call under it. */
static apr_thread_mutex_t *pool_lock;
static apr_thread_cond_t *pool_cond;
static db_conn_t **idle;        /* most recently released on top */
/* Idle connections closed at once after one was found broken (the
 * rest, if the pool is larger, age out by DB_IDLE_TTL or fail alike). */
#define AURA_DB_POOL_FLUSH_MAX 64
static int nidle;
static int ntotal;              /* idle + borrowed + being opened */
static int pool_max;

/* Second of the last line of each kind logged by this child: during an
 * outage every request that gets through the breaker fails the same
 * way; the log gets one line a second. */
static volatile apr_uint32_t last_connect_logged;
static volatile apr_uint32_t last_timeout_logged;

static int log_now(volatile apr_uint32_t *last_logged)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());
    apr_uint32_t last = apr_atomic_read32(last_logged);

    return last != now
           && apr_atomic_cas32(last_logged, now, last) == last;
}

static apr_uint32_t now_ms(void)
{
    return (apr_uint32_t)(aura_clock_ns() / NS_PER_MS);
}

/* ---- waiting on a socket against a deadline ------------------------- */

/* APR_SUCCESS when fd is ready for events (or in error: libpq reads the
 * error itself), APR_TIMEUP at the deadline. */
static apr_status_t wait_socket(int fd, short events, apr_time_t deadline)
{
    struct pollfd p;

    if (fd < 0) {
        return APR_EBADF;
    }
    for (;;) {
        apr_interval_time_t left = deadline - apr_time_now();
        int n;

        if (left <= 0) {
            return APR_TIMEUP;
        }
        p.fd = fd;
        p.events = events;
        p.revents = 0;
        /* Rounded up: a 0 ms poll would spin through the last ms. */
        n = poll(&p, 1, (int)((left + 999) / 1000));
        if (n > 0) {
            return APR_SUCCESS;
        }
        if (n < 0 && errno != EINTR) {
            return APR_FROM_OS_ERROR(errno);
        }
    }
}

/* Close a connection whatever its state.  Non-blocking first, so that
 * the Terminate message PQfinish sends never waits on a full socket
 * buffer to a server that stopped reading. */
static void conn_close(db_conn_t *c)
{
    if (c) {
        if (c->conn) {
            PQsetnonblocking(c->conn, 1);
            PQfinish(c->conn);
        }
        free(c);
    }
}

/* After a PQsend*(): push the query out and wait for its result, all
 * before deadline.  *out: the last result of the statement (the caller
 * clears it).  APR_TIMEUP at the deadline (the connection is then
 * mid-statement: close it), APR_EGENERAL when the connection failed. */
static apr_status_t await_result(PGconn *conn, apr_time_t deadline,
                                 PGresult **out)
{
    PGresult *res, *last = NULL;
    apr_status_t rv;
    int f;

    *out = NULL;
    while ((f = PQflush(conn)) == 1) {
        rv = wait_socket(PQsocket(conn), POLLIN | POLLOUT, deadline);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        /* The server may answer (an error) before it read everything. */
        if (!PQconsumeInput(conn)) {
            return APR_EGENERAL;
        }
    }
    if (f < 0) {
        return APR_EGENERAL;
    }
    for (;;) {
        while (PQisBusy(conn)) {
            rv = wait_socket(PQsocket(conn), POLLIN, deadline);
            if (rv == APR_SUCCESS && !PQconsumeInput(conn)) {
                rv = APR_EGENERAL;
            }
            if (rv != APR_SUCCESS) {
                PQclear(last);
                return rv;
            }
        }
        if (!(res = PQgetResult(conn))) {
            break;
        }
        PQclear(last);
        last = res;
    }
    *out = last;
    return last ? APR_SUCCESS : APR_EGENERAL;
}

/* A statement whose deadline passed is still running on the server
 * until its statement_timeout (set to the same budget on every
 * connection) ends it: libpq before 17 has no cancel with a deadline
 * (PQcancel connects and then waits for the server to close, both
 * without a timeout: against a server that accepts and never answers it
 * would hold the worker forever), so there the connection is only
 * closed.  libpq 17 cancels within a short bound. */
static void cancel_bounded(PGconn *conn)
{
#ifdef LIBPQ_HAS_ASYNC_CANCEL
    apr_time_t deadline = apr_time_now() + apr_time_from_msec(100);
    PGcancelConn *cc = PQcancelCreate(conn);
    PostgresPollingStatusType st;

    if (cc && PQcancelStart(cc)) {
        while ((st = PQcancelPoll(cc)) == PGRES_POLLING_READING
               || st == PGRES_POLLING_WRITING) {
            if (wait_socket(PQcancelSocket(cc),
                            st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
                            deadline) != APR_SUCCESS) {
                break;
            }
        }
    }
    if (cc) {
        PQcancelFinish(cc);
    }
#else
    (void)conn;
#endif
}

/* ---- opening a connection ------------------------------------------- */

static void log_connect_failure(const db_ctx_t *x, apr_status_t rv,
                                PGconn *conn)
{
    request_rec *r = x->r;

    if (!r || !log_now(&last_connect_logged)) {
        return;
    }
    if (rv == APR_TIMEUP) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(01200)
                      "Postgres connection not established within "
                      "AuraDBTimeout (%" APR_TIME_T_FMT " ms): the key "
                      "store is unreachable or does not answer",
                      apr_time_as_msec(db_timeout));
    }
    else {
        /* Text of libpq: host, port and reason; never the password. */
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00030)
                      "Postgres connection failed: %s",
                      conn ? PQerrorMessage(conn) : "out of memory");
    }
}

/* Drive PQconnectPoll to the end or to the deadline. */
static apr_status_t connect_poll(PGconn *conn, apr_time_t deadline)
{
    /* As the libpq manual says: start as if it had asked to write. */
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;

    for (;;) {
        apr_status_t rv;

        if (st == PGRES_POLLING_OK) {
            return APR_SUCCESS;
        }
        if (st == PGRES_POLLING_FAILED) {
            return APR_ECONNREFUSED;
        }
        /* PQsocket again each time: libpq may move to another host. */
        rv = wait_socket(PQsocket(conn), st == PGRES_POLLING_READING
                                         ? POLLIN : POLLOUT, deadline);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        st = PQconnectPoll(conn);
    }
}

/* A new connection, ready for statements, before deadline; called
 * outside pool_lock.  The statement_timeout is set here rather than in
 * the conninfo's options, which the operator's own options= would
 * replace. */
static apr_status_t conn_open(const db_ctx_t *x, apr_time_t deadline,
                              db_conn_t **out)
{
    db_conn_t *c = calloc(1, sizeof(*c));
    PGresult *res = NULL;
    apr_status_t rv;

    *out = NULL;
    if (!c) {
        return APR_ENOMEM;
    }
    /* host= is an address or a name: a name is resolved in here, by
     * getaddrinfo, before our deadline applies (use hostaddr= to avoid
     * it). */
    c->conn = PQconnectStart(db_conninfo);
    if (!c->conn || PQstatus(c->conn) == CONNECTION_BAD) {
        rv = APR_ECONNREFUSED;
    }
    else {
        rv = connect_poll(c->conn, deadline);
    }
    if (rv == APR_SUCCESS && PQsetnonblocking(c->conn, 1) != 0) {
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS
        && !PQsendQuery(c->conn, apr_psprintf(x->p, "SET "
                        "statement_timeout = %" APR_TIME_T_FMT,
                        apr_time_as_msec(db_timeout)))) {
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS) {
        rv = await_result(c->conn, deadline, &res);
        if (rv == APR_SUCCESS && PQresultStatus(res) != PGRES_COMMAND_OK) {
            rv = APR_EGENERAL;
        }
        PQclear(res);
    }
    if (rv != APR_SUCCESS) {
        log_connect_failure(x, rv, c->conn);
        conn_close(c);
        return rv;
    }
    *out = c;
    return APR_SUCCESS;
}

/* ---- the pool -------------------------------------------------------- */

/* A connection for one statement: an idle one, else a new one opened
 * outside the lock, else a wait for a release, all before deadline.
 * APR_TIMEUP when none came in time. */
static apr_status_t pool_acquire(const db_ctx_t *x, apr_time_t deadline,
                                 db_conn_t **out)
{
    apr_status_t rv;

    *out = NULL;
    apr_thread_mutex_lock(pool_lock);
    for (;;) {
        apr_interval_time_t left;

        if (nidle > 0) {
            db_conn_t *c = idle[--nidle];

            if (apr_time_now() - c->idle_since < DB_IDLE_TTL) {
                apr_thread_mutex_unlock(pool_lock);
                *out = c;
                return APR_SUCCESS;
            }
            ntotal--;
            apr_thread_mutex_unlock(pool_lock);
            conn_close(c);
            apr_thread_mutex_lock(pool_lock);
            continue;
        }
        if (ntotal < pool_max) {
            ntotal++;           /* reserved while it is being opened */
            apr_thread_mutex_unlock(pool_lock);
            rv = conn_open(x, deadline, out);
            if (rv != APR_SUCCESS) {
                apr_thread_mutex_lock(pool_lock);
                ntotal--;
                apr_thread_cond_signal(pool_cond);
                apr_thread_mutex_unlock(pool_lock);
            }
            return rv;
        }
        left = deadline - apr_time_now();
        if (left <= 0) {
            apr_thread_mutex_unlock(pool_lock);
            return APR_TIMEUP;
        }
        apr_thread_cond_timedwait(pool_cond, pool_lock, left);
    }
}

/* Back to the pool when keep (the connection is idle and sound), else
 * closed; either way a waiter may go on. */
static void pool_release(db_conn_t *c, int keep)
{
    apr_thread_mutex_lock(pool_lock);
    if (keep && nidle < pool_max) {
        c->idle_since = apr_time_now();
        idle[nidle++] = c;
        c = NULL;
    }
    else {
        ntotal--;
    }
    apr_thread_cond_signal(pool_cond);
    apr_thread_mutex_unlock(pool_lock);
    conn_close(c);
}

/* A connection found broken says the server went away (a restart, a
 * failover): every connection that was idle then went with it.  They are
 * closed now, so that the one retry of aura_db_query() opens a fresh
 * connection instead of taking the next dead one from the stack. */
static void pool_flush_idle(void)
{
    db_conn_t *dead[AURA_DB_POOL_FLUSH_MAX];
    int n = 0;

    apr_thread_mutex_lock(pool_lock);
    while (nidle > 0 && n < AURA_DB_POOL_FLUSH_MAX) {
        dead[n++] = idle[--nidle];
        ntotal--;
    }
    apr_thread_cond_broadcast(pool_cond);
    apr_thread_mutex_unlock(pool_lock);
    while (n > 0) {
        conn_close(dead[--n]);
    }
}

/* The idle connections at child exit; borrowed ones went back with
 * their requests, which are over by then. */
static apr_status_t pool_cleanup(void *data)
{
    (void)data;
    while (nidle > 0) {
        conn_close(idle[--nidle]);
    }
    ntotal = 0;
    return APR_SUCCESS;
}

/* ---- configuration -------------------------------------------------- */

/* The store's breaker: its defaults, then the AuraBreaker store lines in
 * configuration order, field by field (AuraBreaker * does not apply:
 * its settings are the services', see docs/directives.md). */
static apr_status_t store_breaker_init(const aura_server_conf_t *c)
{
    apr_uint32_t threshold = STORE_THRESHOLD;
    apr_uint32_t cooldown = STORE_COOLDOWN_MS;
    apr_uint32_t probes = STORE_PROBES;
    /* A probe is one query: it ends within AuraDBTimeout unless its
     * process died; then the next request may probe. */
    apr_uint32_t ttl = (apr_uint32_t)apr_time_as_msec(db_timeout) + 1000;
    int i;

    for (i = 0; c->breakers && i < c->breakers->nelts; i++) {
        const aura_breaker_setting_t *b =
            &APR_ARRAY_IDX(c->breakers, i, aura_breaker_setting_t);

        if (b->service != AURA_BREAKER_SETTING_STORE) {
            continue;
        }
        threshold = b->threshold ? b->threshold : threshold;
        cooldown = b->cooldown_ms ? b->cooldown_ms : cooldown;
        probes = b->probes ? b->probes : probes;
        ttl = b->probe_ttl_ms ? b->probe_ttl_ms : ttl;
    }
    if (aura_breaker_conf_init(&store_breaker, threshold, cooldown, probes)
        != APR_SUCCESS) {
        return APR_EINVAL;
    }
    store_breaker.probe_ttl_ms = ttl;
    return APR_SUCCESS;
}

static apr_status_t pool_init(apr_pool_t *pchild, int max)
{
    apr_status_t rv;

    pool_max = max;
    idle = apr_pcalloc(pchild, sizeof(*idle) * (apr_size_t)max);
    rv = apr_thread_mutex_create(&pool_lock, APR_THREAD_MUTEX_DEFAULT,
                                 pchild);
    if (rv == APR_SUCCESS) {
        rv = apr_thread_cond_create(&pool_cond, pchild);
    }
    if (rv == APR_SUCCESS) {
        apr_pool_cleanup_register(pchild, NULL, pool_cleanup,
                                  apr_pool_cleanup_null);
    }
    return rv;
}

void aura_db_child_init(apr_pool_t *pchild, server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    int max = aura_conf_db_pool_max(c);
    apr_interval_time_t user_timeout;
    apr_status_t rv;

    db_timeout = aura_conf_db_timeout(c);
    if (!c->db_params) {
        return;
    }
    /* Unacknowledged data older than this ends the connection: at least
     * the budget, so that a slow answer is the deadline's to judge. */
    user_timeout = db_timeout > apr_time_from_sec(5) ? db_timeout
                                                     : apr_time_from_sec(5);
    /* Later keywords win in a conninfo string: the operator's own
     * settings override ours.  connect_timeout only matters to libpq's
     * blocking connect, which we never use; our deadline bounds ours. */
    db_conninfo = apr_psprintf(pchild, "application_name=mod_aura "
                               "keepalives=1 keepalives_idle=30 "
                               "keepalives_interval=5 keepalives_count=3 "
                               "tcp_user_timeout=%" APR_TIME_T_FMT " %s",
                               apr_time_as_msec(user_timeout), c->db_params);
    rv = store_breaker_init(c);
    if (rv == APR_SUCCESS) {
        rv = pool_init(pchild, max);
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, AURA_LOGNO(00031)
                     "cannot create the Postgres connection pool");
        pool_lock = NULL;
        return;
    }
}

int aura_db_configured(void)
{
    return pool_lock != NULL;
}

/* ---- statements ----------------------------------------------------- */

/* How one attempt ended, for the retry and the breaker. */
typedef enum {
    RUN_OK = 0,
    RUN_ANSWERED,       /* the server answered with an error */
    RUN_BROKEN,         /* the connection failed: try a fresh one */
    RUN_NO_ANSWER       /* connect failed, or the deadline passed */
} run_outcome_e;

static void log_query_failure(const db_ctx_t *x, aura_db_stmt_e id,
                              apr_status_t rv, PGconn *conn)
{
    request_rec *r = x->r;

    if (!r) {
        return;
    }
    if (rv == APR_TIMEUP) {
        if (log_now(&last_timeout_logged)) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(01201)
                          "Postgres query %s got no answer within "
                          "AuraDBTimeout (%" APR_TIME_T_FMT " ms): "
                          "connection closed", stmts[id].name,
                          apr_time_as_msec(db_timeout));
        }
        return;
    }
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00033)
                  "Postgres query %s failed: %s", stmts[id].name,
                  PQerrorMessage(conn));
}

/* A statement that names a column or table the key store lacks: the
 * database was not migrated (conf/migrations/).  Said once a minute per
 * child, whoever ran into it, request or flush. */
static void log_missing_migration(const db_ctx_t *x, aura_db_stmt_e id,
                                  const PGresult *res)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());
    apr_uint32_t last = apr_atomic_read32(&last_schema_logged);

    if (!state || (strcmp(state, "42703") && strcmp(state, "42P01"))) {
        return;
    }
    if ((last == 0 || now - last >= 60)
        && apr_atomic_cas32(&last_schema_logged, now, last) == last) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, x->s, AURA_LOGNO(02403)
                     "the key store's schema is older than this "
                     "mod_aura_common: %s cannot run (%s); apply "
                     "conf/migrations/0002-key-lifecycle.sql to the "
                     "database (until then keys that are not cached get "
                     "503 store-unavailable; logged once a minute per "
                     "child)", stmts[id].name,
                     PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
    }
}

/* Prepare the statement on this connection once, before deadline. */
static apr_status_t prepare(const db_ctx_t *x, db_conn_t *c,
                            aura_db_stmt_e id, apr_time_t deadline)
{
    PGresult *res;
    apr_status_t rv;

    if (c->prepared & (1u << id)) {
        return APR_SUCCESS;
    }
    if (!PQsendPrepare(c->conn, stmts[id].name, stmts[id].sql,
                       stmts[id].nparams, NULL)) {
        return APR_EGENERAL;
    }
    rv = await_result(c->conn, deadline, &res);
    if (rv == APR_SUCCESS && PQresultStatus(res) != PGRES_COMMAND_OK) {
        if (x->r) {
            ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, x->r, AURA_LOGNO(00032)
                          "cannot prepare %s: %s", stmts[id].name,
                          PQerrorMessage(c->conn));
        }
        log_missing_migration(x, id, res);
        rv = APR_EGENERAL;
    }
    PQclear(res);
    if (rv == APR_SUCCESS) {
        c->prepared |= 1u << id;
    }
    return rv;
}

static apr_status_t result_cleanup(void *res)
{
    PQclear(res);
    return APR_SUCCESS;
}

/* The statement_timeout of the server: Postgres answered, but it is too
 * slow to serve, which the breaker counts like no answer. */
static int server_timed_out(const PGresult *res)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

    return state && !strcmp(state, "57014");
}

/* One attempt on one pooled connection, before deadline. */
static run_outcome_e run_once(const db_ctx_t *x, aura_db_stmt_e id,
                              const char *const *params, apr_time_t deadline,
                              PGresult **out)
{
    db_conn_t *c;
    PGresult *res = NULL;
    apr_status_t rv;

    rv = pool_acquire(x, deadline, &c);
    if (rv != APR_SUCCESS) {
        return RUN_NO_ANSWER;
    }
    rv = prepare(x, c, id, deadline);
    if (rv == APR_SUCCESS
        && !PQsendQueryPrepared(c->conn, stmts[id].name, stmts[id].nparams,
                                params, NULL, NULL, 0)) {
        rv = APR_EGENERAL;
    }
    if (rv == APR_SUCCESS) {
        rv = await_result(c->conn, deadline, &res);
    }
    /* Rows (a SELECT) or none (the last-used UPDATE). */
    if (rv == APR_SUCCESS && (PQresultStatus(res) == PGRES_TUPLES_OK
                              || PQresultStatus(res) == PGRES_COMMAND_OK)) {
        pool_release(c, 1);
        apr_pool_cleanup_register(x->p, res, result_cleanup,
                                  apr_pool_cleanup_null);
        *out = res;
        return RUN_OK;
    }
    log_query_failure(x, id, rv, c->conn);
    if (rv == APR_TIMEUP) {
        /* Mid-statement: never back to the pool. */
        cancel_bounded(c->conn);
        pool_release(c, 0);
        return RUN_NO_ANSWER;
    }
    if (PQstatus(c->conn) == CONNECTION_BAD) {
        PQclear(res);
        pool_release(c, 0);
        pool_flush_idle();
        return RUN_BROKEN;
    }
    /* The server answered with an error and the connection is idle. */
    rv = res && server_timed_out(res) ? APR_TIMEUP : APR_SUCCESS;
    PQclear(res);
    pool_release(c, PQtransactionStatus(c->conn) == PQTRANS_IDLE);
    return rv == APR_TIMEUP ? RUN_NO_ANSWER : RUN_ANSWERED;
}

static void log_store_change(request_rec *r, aura_breaker_change_e change)
{
    switch (change) {
    case AURA_BRK_TO_OPEN:
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(01202)
                      "key store breaker opened: Postgres is not asked for "
                      "%u ms (uncached keys get 503 store-unavailable, "
                      "cached ones are served up to AuraKeyCacheStaleMax "
                      "past their TTL), then one query probes it",
                      store_breaker.cooldown_ms);
        break;
    case AURA_BRK_TO_HALF_OPEN:
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(01203)
                      "key store breaker half-open: probing Postgres");
        break;
    case AURA_BRK_TO_CLOSED:
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, AURA_LOGNO(01204)
                      "key store breaker closed: Postgres answers again");
        break;
    default:
        break;
    }
}

apr_status_t aura_db_query(request_rec *r, aura_db_stmt_e id,
                           const char *const *params, PGresult **out)
{
    volatile apr_uint64_t *word = aura_shm_breaker(AURA_BREAKER_STORE);
    volatile apr_uint64_t *holders =
        aura_shm_breaker_holders(AURA_BREAKER_STORE);
    apr_time_t deadline = apr_time_now() + db_timeout;
    db_ctx_t x = { r, r->server, r->pool };
    aura_breaker_change_e change;
    aura_breaker_grant_t g;
    aura_breaker_who_t who;
    run_outcome_e how;

    *out = NULL;
    if (!pool_lock) {
        return APR_ENOTIMPL;
    }
    if (word) {
        /* Its probe is recorded with this process: one lost with a
         * child that dies mid-query is taken over by the next query
         * (issue #16), not after the probe-timeout. */
        aura_breaker_who(&who, db_timeout);
        aura_breaker_acquire_held(word, holders, &store_breaker, now_ms(),
                                  &who, &g);
        log_store_change(r, g.change);
        if (g.took_over) {
            aura_count(AURA_CTR_BREAKER_PROBE_RECOVERED);
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(01001)
                          "key store breaker: the probe held by process %u "
                          "was lost (the process is gone, or the probe "
                          "outlived AuraDBTimeout); this query is the "
                          "probe now", g.lost_pid);
        }
        if (g.ticket == AURA_BRK_DENY) {
            aura_request_private_t *p = aura_request_private(r);

            if (p) {
                p->store_retry_after = apr_psprintf(r->pool, "%u",
                                                    g.retry_after_ms
                                                    ? (g.retry_after_ms
                                                       + 999) / 1000
                                                    : 1);
            }
            return APR_EAGAIN;
        }
    }
    how = run_once(&x, id, params, deadline, out);
    /* A pooled connection that died while idle (Postgres restarted) is
     * only found out by using it: one more try on a fresh connection,
     * within the same deadline. */
    if (how == RUN_BROKEN) {
        how = run_once(&x, id, params, deadline, out);
    }
    if (word) {
        change = aura_breaker_verdict_held(word, holders, &store_breaker, &g,
                                           how == RUN_OK
                                           || how == RUN_ANSWERED,
                                           now_ms());
        log_store_change(r, change);
    }
    return how == RUN_OK ? APR_SUCCESS
           : how == RUN_NO_ANSWER ? APR_TIMEUP : APR_EGENERAL;
}

/* No breaker here: the flush runs on a thread of its own, so no request
 * waits for it, and a flush that finds Postgres gone must not open the
 * breaker that decides whether requests ask it. */
apr_status_t aura_db_query_bg(server_rec *s, apr_pool_t *p,
                              aura_db_stmt_e id, const char *const *params,
                              PGresult **out)
{
    db_ctx_t x = { NULL, s, p };
    apr_time_t deadline = apr_time_now() + db_timeout;
    run_outcome_e how;

    *out = NULL;
    if (!pool_lock) {
        return APR_ENOTIMPL;
    }
    how = run_once(&x, id, params, deadline, out);
    if (how == RUN_BROKEN) {
        how = run_once(&x, id, params, deadline, out);
    }
    return how == RUN_OK ? APR_SUCCESS
           : how == RUN_NO_ANSWER ? APR_TIMEUP : APR_EGENERAL;
}

AURA_DECLARE(const char *) aura_store_retry_after(request_rec *r)
{
    aura_request_private_t *p = aura_request_private(r);

    return p && p->store_retry_after ? p->store_retry_after : "1";
}

/* The organization role of user in the org or the project's org; the
 * project's org goes to *org.  APR_NOTFOUND: no membership (or no such
 * project: the same answer, so existence does not leak). */
AURA_DECLARE(apr_status_t) aura_store_member_role(request_rec *r,
                                                  aura_member_of_e of,
                                                  const char *id,
                                                  const char *user,
                                                  const char **org,
                                                  const char **role)
{
    const char *params[2] = { id, user };
    PGresult *res;
    apr_status_t rv;

    if (of == AURA_MEMBER_OF_ORG) {
        rv = aura_db_query(r, AURA_DB_ORG_ROLE, params, &res);
        if (rv == APR_SUCCESS && PQntuples(res) == 1) {
            *org = id;
            *role = apr_pstrdup(r->pool, PQgetvalue(res, 0, 0));
            return APR_SUCCESS;
        }
        return rv == APR_SUCCESS ? APR_NOTFOUND : rv;
    }
    rv = aura_db_query(r, AURA_DB_PROJECT_ROLE, params, &res);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, 1)) {
        return APR_NOTFOUND;
    }
    *org = apr_pstrdup(r->pool, PQgetvalue(res, 0, 0));
    *role = apr_pstrdup(r->pool, PQgetvalue(res, 0, 1));
    return APR_SUCCESS;
}
