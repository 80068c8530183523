/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_db.c: Postgres connections of one child process, and the
 * prepared statements the gateway runs.
 *
 * Why an apr_reslist of libpq connections and not mod_dbd: mod_dbd needs
 * a driver Debian does not install (libaprutil1-dbd-pgsql), returns text
 * only, has no acquire timeout (a burst waits forever at DBDMax), and on
 * a broken connection calls PQreset, which drops the server-side prepared
 * statements while mod_dbd keeps believing they exist ("prepared
 * statement does not exist" until the connection expires).  Here: a
 * bounded pool per child (min 0, so a child starts while Postgres is
 * down), an acquire timeout, statements prepared lazily per connection,
 * and a connection that failed is destroyed, never reset: the next
 * acquire opens a fresh one, which is how the gateway reconnects after a
 * Postgres restart.
 *
 * A PGconn is used by one thread at a time (libpq is thread-safe across
 * connections); each borrowed connection goes back to the pool before
 * the call returns: never held for the whole request (a proxied upload
 * can last minutes).
 */
#include "aura_private.h"

#include "apr_atomic.h"
#include "apr_reslist.h"
#include "apr_strings.h"

#include <libpq-fe.h>

typedef struct {
    PGconn *conn;
    unsigned int prepared;     /* bit i: statement i prepared here */
} db_conn_t;

typedef struct {
    const char *name;
    const char *sql;
    int nparams;
} db_stmt_t;

/* Indexed by aura_db_stmt_e. */
static const db_stmt_t stmts[AURA_DB_STMT_COUNT] = {
    { "aura_key_lookup",
      "SELECT k.project_id, k.role, p.org_id, p.plan"
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
};

/* Written in child_init only. */
static apr_reslist_t *db_pool;
static const char *db_conninfo;
static server_rec *db_server;
static apr_interval_time_t db_timeout;

/* Second of the last connection failure logged by this child: during an
 * outage every request tries to connect, the log gets one line a second. */
static volatile apr_uint32_t last_failure_logged;

static int log_failure_now(void)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());
    apr_uint32_t last = apr_atomic_read32(&last_failure_logged);

    return last != now
           && apr_atomic_cas32(&last_failure_logged, now, last) == last;
}

static apr_status_t db_ctor(void **res, void *params, apr_pool_t *pool)
{
    db_conn_t *c = apr_pcalloc(pool, sizeof(*c));
    PGresult *set;

    (void)params;
    c->conn = PQconnectdb(db_conninfo);
    if (PQstatus(c->conn) != CONNECTION_OK) {
        /* Text of libpq: host, port and reason; never the password. */
        if (log_failure_now()) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, db_server,
                         AURA_LOGNO(00030) "Postgres connection failed: %s",
                         PQerrorMessage(c->conn));
        }
        PQfinish(c->conn);
        return APR_ECONNREFUSED;
    }
    /* The server enforces the budget on every statement too. */
    set = PQexec(c->conn, apr_psprintf(pool, "SET statement_timeout = %"
                                       APR_TIME_T_FMT,
                                       apr_time_as_msec(db_timeout)));
    PQclear(set);
    *res = c;
    return APR_SUCCESS;
}

static apr_status_t result_cleanup(void *res)
{
    PQclear(res);
    return APR_SUCCESS;
}

static apr_status_t db_dtor(void *res, void *params, apr_pool_t *pool)
{
    db_conn_t *c = res;

    (void)params; (void)pool;
    PQfinish(c->conn);
    return APR_SUCCESS;
}

void aura_db_child_init(apr_pool_t *pchild, server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    int max = c->db_pool_max != AURA_UNSET ? c->db_pool_max
                                           : AURA_DEFAULT_DB_POOL_MAX;
    apr_status_t rv;

    db_server = s;
    db_timeout = c->db_timeout != AURA_UNSET ? c->db_timeout
                                             : AURA_DEFAULT_DB_TIMEOUT;
    if (!c->db_params) {
        return;
    }
    /* Later keywords win in a conninfo string: the operator's own
     * connect_timeout or application_name override ours. */
    db_conninfo = apr_psprintf(pchild, "connect_timeout=%d "
                               "application_name=mod_aura %s",
                               (int)(apr_time_sec(db_timeout) > 2
                                     ? apr_time_sec(db_timeout) : 2),
                               c->db_params);
    rv = apr_reslist_create(&db_pool, 0, max, max,
                            apr_time_from_sec(300), db_ctor, db_dtor, NULL,
                            pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, AURA_LOGNO(00031)
                     "cannot create the Postgres connection pool");
        db_pool = NULL;
        return;
    }
    apr_reslist_timeout_set(db_pool, db_timeout);
}

int aura_db_configured(void)
{
    return db_pool != NULL;
}

static int prepare(request_rec *r, db_conn_t *c, aura_db_stmt_e id)
{
    PGresult *res;
    int ok;

    if (c->prepared & (1u << id)) {
        return 1;
    }
    res = PQprepare(c->conn, stmts[id].name, stmts[id].sql,
                    stmts[id].nparams, NULL);
    ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00032)
                      "cannot prepare %s: %s", stmts[id].name,
                      PQerrorMessage(c->conn));
    }
    PQclear(res);
    if (ok) {
        c->prepared |= 1u << id;
    }
    return ok;
}

/* One attempt on one pooled connection. */
static apr_status_t run_once(request_rec *r, aura_db_stmt_e id,
                             const char *const *params, PGresult **out,
                             int *conn_broken)
{
    db_conn_t *c;
    PGresult *res = NULL;
    apr_status_t rv;

    *conn_broken = 0;
    rv = apr_reslist_acquire(db_pool, (void **)&c);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (prepare(r, c, id)) {
        res = PQexecPrepared(c->conn, stmts[id].name, stmts[id].nparams,
                             params, NULL, NULL, 0);
    }
    if (res && PQresultStatus(res) == PGRES_TUPLES_OK) {
        apr_reslist_release(db_pool, c);
        apr_pool_cleanup_register(r->pool, res, result_cleanup,
                                  apr_pool_cleanup_null);
        *out = res;
        return APR_SUCCESS;
    }
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00033)
                  "Postgres query %s failed: %s", stmts[id].name,
                  PQerrorMessage(c->conn));
    PQclear(res);
    if (PQstatus(c->conn) == CONNECTION_BAD) {
        *conn_broken = 1;
        apr_reslist_invalidate(db_pool, c);
    }
    else {
        apr_reslist_release(db_pool, c);
    }
    return APR_EGENERAL;
}

apr_status_t aura_db_query(request_rec *r, aura_db_stmt_e id,
                           const char *const *params, PGresult **out)
{
    apr_status_t rv;
    int broken;

    *out = NULL;
    if (!db_pool) {
        return APR_ENOTIMPL;
    }
    rv = run_once(r, id, params, out, &broken);
    /* A pooled connection that died while idle (Postgres restarted) is
     * only found out by using it: one more try on a fresh connection. */
    if (rv != APR_SUCCESS && broken) {
        rv = run_once(r, id, params, out, &broken);
    }
    return rv;
}
