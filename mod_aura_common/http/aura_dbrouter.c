/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_dbrouter.c: the /v1/db router (AuraDBRouter On), the glue around
 * the pure decision of aura_dbtarget.c.  The routing stage asks it in
 * fixups (aura_route.c), once the request is authenticated and has a
 * project: a CRUD request of a Postgres project with a dedicated
 * PostgREST gets that target (the routing stage makes it a proxy
 * request straight to it), a dedicated project without a usable target
 * is refused (503 target-unresolved, never a shared fallback), and
 * everything else stays on its NATS route.
 *
 * A project's topology comes from Postgres and is cached per child for
 * TOPOLOGY_TTL: moving a project to a dedicated PostgREST takes effect
 * within that, without a restart.  A lookup that fails is not cached
 * and the request gets 503 store-unavailable: the router never guesses;
 * it may use the store's last answer, up to AuraKeyCacheStaleMax past
 * TOPOLOGY_TTL, like the key cache (issue #16).
 */
#include "core/aura_module.h"
#include "auth/aura_keystore.h"
#include "core/aura_config.h"
#include "http/aura_dbrouter.h"
#include "http/aura_dbtarget.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"

#include "apr_strings.h"
#include "apr_thread_mutex.h"

#include <libpq-fe.h>

#define TOPOLOGY_SLOTS 256
#define TOPOLOGY_TTL   apr_time_from_sec(5)

typedef struct {
    char project[65];
    char db_kind[16];
    char topology[16];
    char target[256];
    int found;
    int has_target;
    apr_time_t expires;
} topology_slot_t;

/* Written in child_init only; the slots are guarded by the mutex. */
static topology_slot_t *slots;
static apr_thread_mutex_t *slots_lock;

void aura_dbrouter_child_init(apr_pool_t *pchild, server_rec *s)
{
    if (apr_thread_mutex_create(&slots_lock, APR_THREAD_MUTEX_DEFAULT,
                                pchild) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, AURA_LOGNO(00094)
                     "cannot create the db router's cache lock: every "
                     "request asks Postgres");
        slots_lock = NULL;
        return;
    }
    slots = apr_pcalloc(pchild, TOPOLOGY_SLOTS * sizeof(*slots));
}

static topology_slot_t *slot_of(const char *project)
{
    apr_uint32_t h = 2166136261u;
    const char *c;

    for (c = project; *c; c++) {
        h = (h ^ (unsigned char)*c) * 16777619u;
    }
    return &slots[h % TOPOLOGY_SLOTS];
}

/* grace: how long past its expiry an entry still counts (0, or
 * AuraKeyCacheStaleMax while the store is unavailable). */
static int cache_get(const char *project, apr_time_t now,
                     apr_interval_time_t grace, topology_slot_t *out)
{
    topology_slot_t *e;
    int hit = 0;

    if (!slots || !slots_lock) {
        return 0;
    }
    e = slot_of(project);
    apr_thread_mutex_lock(slots_lock);
    if (e->expires && e->expires + grace > now
        && !strcmp(e->project, project)) {
        *out = *e;
        hit = 1;
    }
    apr_thread_mutex_unlock(slots_lock);
    return hit;
}

static void cache_put(const topology_slot_t *in)
{
    if (slots && slots_lock) {
        apr_thread_mutex_lock(slots_lock);
        *slot_of(in->project) = *in;
        apr_thread_mutex_unlock(slots_lock);
    }
}

/* A value no bigger than its field (the schema bounds none of them). */
static int copy_field(char *dst, apr_size_t n, const PGresult *res,
                      int col)
{
    const char *v = PQgetvalue(res, 0, col);

    if (PQgetisnull(res, 0, col) || strlen(v) >= n) {
        dst[0] = '\0';
        return 0;
    }
    apr_cpystrn(dst, v, n);
    return 1;
}

static apr_status_t lookup(request_rec *r, const char *project,
                           topology_slot_t *t)
{
    const char *params[1] = { project };
    apr_time_t now = apr_time_now();
    PGresult *res;
    apr_status_t rv;

    if (strlen(project) >= sizeof(t->project)) {
        memset(t, 0, sizeof(*t));
        return APR_SUCCESS;         /* no such project */
    }
    if (cache_get(project, now, 0, t)) {
        return APR_SUCCESS;
    }
    rv = aura_db_query(r, AURA_DB_PROJECT_TOPOLOGY, params, &res);
    if (rv != APR_SUCCESS) {
        /* The store cannot answer: the last answer it gave, within
         * the key cache's bound, as for the key that got us here. */
        return cache_get(project, apr_time_now(), aura_keystore_stale_max(),
                         t) ? APR_SUCCESS : rv;
    }
    memset(t, 0, sizeof(*t));
    apr_cpystrn(t->project, project, sizeof(t->project));
    if (PQntuples(res) == 1) {
        t->found = 1;
        copy_field(t->db_kind, sizeof(t->db_kind), res, 0);
        copy_field(t->topology, sizeof(t->topology), res, 1);
        t->has_target = copy_field(t->target, sizeof(t->target), res, 2);
    }
    t->expires = now + TOPOLOGY_TTL;
    cache_put(t);
    return APR_SUCCESS;
}

/* The path after the router's Location, without the leading slash. */
static const char *rest_of(const request_rec *r, const aura_dir_conf_t *d)
{
    const char *p = r->uri;

    if (d->location && !strncmp(p, d->location, strlen(d->location))) {
        p += strlen(d->location);
    }
    while (*p == '/') {
        p++;
    }
    return p;
}

int aura_db_route(request_rec *r, const char **target, const char **url)
{
    const aura_dir_conf_t *d = aura_dir_conf(r);
    aura_request_t *rq = aura_request_get(r);
    aura_db_project_t project;
    topology_slot_t t;
    const char *rest, *why = NULL;
    apr_status_t rv;

    *target = *url = NULL;
    rest = rest_of(r, d);
    memset(&t, 0, sizeof(t));
    if (rq->project) {
        rv = lookup(r, rq->project, &t);
        if (rv != APR_SUCCESS) {
            apr_table_setn(r->err_headers_out, "Retry-After",
                           aura_store_retry_after(r));
            aura_problem_note(r, "store-unavailable", "the project's "
                              "database cannot be looked up right now");
            return HTTP_SERVICE_UNAVAILABLE;
        }
    }
    project.db_kind = t.db_kind[0] ? t.db_kind : NULL;
    project.topology = t.topology[0] ? t.topology : NULL;
    /* t is on the stack: what outlives this call is copied. */
    project.target = t.has_target ? apr_pstrdup(r->pool, t.target) : NULL;
    switch (aura_dbroute_decide(r->method, rest, t.found ? &project : NULL,
                                &why)) {
    case AURA_DBR_HTTP:
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00095)
                      "db router: project %s -> %s (%s)", rq->project,
                      project.target, why);
        aura_count(AURA_CTR_DB_HTTP);
        *target = project.target;
        *url = aura_dbroute_url(r->pool, project.target, rest, NULL);
        return OK;
    case AURA_DBR_UNRESOLVED:
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00096)
                      "db router: project %s has no usable target (%s): "
                      "refused, never sent to the shared database",
                      rq->project ? rq->project : "(none)", why);
        aura_count(AURA_CTR_DB_UNRESOLVED);
        apr_table_setn(r->err_headers_out, "Retry-After", "5");
        aura_problem_note(r, "target-unresolved", "the project's dedicated "
                          "database endpoint cannot be resolved");
        return HTTP_SERVICE_UNAVAILABLE;
    default:
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, AURA_LOGNO(00097)
                      "db router: project %s -> aura-db over NATS (%s)",
                      rq->project ? rq->project : "(none)", why);
        aura_count(AURA_CTR_DB_NATS);
        return OK;
    }
}
