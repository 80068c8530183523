/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_connlimit.c: AuraMaxConnectionsPerAddress, a cap on the
 * connections one client address holds open to one listener, counted
 * across every child in the shared segment (aura_conntable.h) and
 * enforced when the connection starts, before a byte of it is read.
 *
 * Why at the connection: httpd 2.4 reads a request's headers in a
 * worker thread that blocks until they are complete (the event MPM too:
 * ap_read_request() is synchronous), so 200 connections dribbling
 * headers hold 200 workers, and nothing that acts on a request (the
 * rate limit, the breakers) ever runs for them.  Counting happens in a
 * pre_connection hook (after the event MPM's, before mod_ssl's or
 * anything that allocates); past the cap the hook returns an error,
 * and every MPM then closes the socket at once: no response, no
 * lingering, as mod_qos's QS_SrvMaxConnPerIP does.  A 503 was not
 * written on purpose: on a TLS or HTTP/2 listener a plain-text answer
 * would be garbage, and a response costs a write on a connection
 * being refused.  The connection is counted out by a c->pool cleanup,
 * or earlier under the event MPM: when httpd starts its lingering
 * close (pre_close_connection), which the listener thread finishes
 * without a worker.  Otherwise a client that reopens each connection
 * the server closed (a 408 from mod_reqtimeout) is counted twice while
 * the old one lingers, and reaches a cap it stays under.  Under prefork
 * and worker the lingering close holds the worker: it stays counted.
 *
 * The cap is read from the listener's VirtualHost (c->base_server: at
 * this point the name-based VirtualHost is not known, only the address
 * and port it came in on), and the count is per (local address and
 * port, client address): the data plane's and the management plane's
 * listeners count apart.  IPv6 clients count by their leading
 * AuraRateLimitIPv6Prefix bits, as the rate limiter keys them.
 *
 * Killed children: each child claims a journal in the segment at
 * child_init and records there the slot of every connection it counts
 * in (aura_conntable.h); the parent's child_status hook reclaims the
 * journal of a child that exited, and every new child sweeps journals
 * whose owner no longer exists.  Written in child_init only: this
 * child's journal, its free-record stack (guarded by a thread mutex of
 * the child pool) and, in post_config, the auto cap.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "core/aura_siphash.h"
#include "limit/aura_connlimit.h"
#include "limit/aura_conntable.h"
#include "limit/aura_limit.h"
#include "limit/aura_limit_conf.h"
#include "shm/aura_shm.h"

#include "http_connection.h"
#include "http_protocol.h"
#include "ap_mpm.h"
#include "mpm_common.h"
#include "apr_atomic.h"
#include "apr_strings.h"
#include "apr_thread_mutex.h"

#include <jansson.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>

/* A refused address is logged at most once per this many seconds. */
#define LOG_INTERVAL 60

/* Written in post_config (the auto caps, the MPM's kind) and child_init
 * (the rest). */
static int auto_cap = 2;
static int auto_reading = 1;
static int async_mpm;               /* lingering closes hold no worker */
static aura_conn_journal_t *journal;
static apr_uint32_t *free_stack;
static apr_uint32_t free_top;
static apr_thread_mutex_t *journal_lock;

/* One count a connection holds (its address's, or its listener's
 * while it reads its first request), for release(). */
typedef struct {
    apr_uint64_t slot;
    apr_int64_t record;             /* its journal record, -1: none */
    volatile apr_uint32_t done;     /* released already (an HTTP/2
                                       stream may release its master's
                                       count from another thread) */
} held_t;

/* The counts a client connection holds, in its conn_config. */
typedef struct {
    held_t *address;
    held_t *reading;                /* NULL once its request is read */
} conn_counts_t;

apr_status_t aura_connlimit_post_config(apr_pool_t *pconf, server_rec *s)
{
    int daemons = 0, threads = 0, workers;

    (void)pconf;
    (void)s;
    if (ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons) != APR_SUCCESS
        || daemons < 1) {
        daemons = 1;
    }
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS
        || threads < 1) {
        threads = 1;
    }
    workers = daemons * threads;
    auto_cap = workers / 3 > 2 ? workers / 3 : 2;
    auto_reading = 2 * workers / 3 > 1 ? 2 * workers / 3 : 1;
    if (ap_mpm_query(AP_MPMQ_IS_ASYNC, &async_mpm) != APR_SUCCESS) {
        async_mpm = 0;
    }
    return APR_SUCCESS;
}

/* The reading cap of the listener: 0 when off. */
static int reading_cap_of(const aura_server_conf_t *c)
{
    int n = c->max_reading;

    if (n == AURA_UNSET) {
        n = aura_plane_info(c->plane)->reading_auto ? AURA_CONN_AUTO : 0;
    }
    return n == AURA_CONN_AUTO ? auto_reading : n;
}

/* The cap of the listener whose VirtualHost is s: 0 when off. */
static int cap_of(const aura_server_conf_t *c)
{
    int n = c->max_conns;

    if (n == AURA_UNSET) {
        n = aura_plane_info(c->plane)->conns_auto ? AURA_CONN_AUTO : 0;
    }
    return n == AURA_CONN_AUTO ? auto_cap : n;
}

static int exempt(const aura_server_conf_t *c, apr_sockaddr_t *sa)
{
    int i;

    for (i = 0; c->conn_exempt && i < c->conn_exempt->nelts; i++) {
        if (apr_ipsubnet_test(APR_ARRAY_IDX(c->conn_exempt, i,
                                            apr_ipsubnet_t *), sa)) {
            return 1;
        }
    }
    return 0;
}

/* The key: the listener (local address and port), then the client. */
static apr_uint64_t key_of(const conn_rec *c, const aura_server_conf_t *sc)
{
    unsigned char buf[2 + 17 + 17];
    apr_size_t n;
    int prefix = aura_conf_ipv6_prefix(sc);

    buf[0] = (unsigned char)(c->local_addr->port >> 8);
    buf[1] = (unsigned char)(c->local_addr->port & 0xff);
    n = 2 + aura_address_bytes(c->local_addr, 128, buf + 2);
    n += aura_address_bytes(c->client_addr, prefix, buf + n);
    return aura_siphash24(aura_shm_hash_key(), buf, n);
}

static void release(held_t *h)
{
    apr_uint64_t sets;
    aura_conn_slot_t *slots = aura_shm_conns(&sets);

    if (apr_atomic_cas32(&h->done, 1, 0) != 0) {
        return;
    }
    /* The record first: a child killed between the two leaves one
     * connection counted (the address loses one of its cap until the
     * slot empties), never one counted out twice. */
    if (h->record >= 0 && journal) {
        AURA_CONN_RECORDS(journal)[h->record] = 0;
        apr_thread_mutex_lock(journal_lock);
        free_stack[free_top++] = (apr_uint32_t)h->record;
        apr_thread_mutex_unlock(journal_lock);
    }
    if (slots) {
        aura_conn_leave(slots, h->slot);
    }
}

/* The listener's key (local address and port alone). */
static apr_uint64_t listener_key(const conn_rec *c)
{
    unsigned char buf[2 + 17 + 1];
    apr_size_t n;

    buf[0] = (unsigned char)(c->local_addr->port >> 8);
    buf[1] = (unsigned char)(c->local_addr->port & 0xff);
    n = 2 + aura_address_bytes(c->local_addr, 128, buf + 2);
    buf[n++] = 'R';                 /* never an address's key */
    return aura_siphash24(aura_shm_hash_key(), buf, n);
}

static apr_status_t conn_leave(void *data)
{
    release(data);
    return APR_SUCCESS;
}

/* A record of this child's journal for slot, -1 when there is none
 * free (the connection stays counted; only a kill would leak it). */
static apr_int64_t record(apr_uint64_t slot)
{
    apr_uint32_t r;

    if (!journal) {
        return -1;
    }
    apr_thread_mutex_lock(journal_lock);
    if (!free_top) {
        apr_thread_mutex_unlock(journal_lock);
        return -1;
    }
    r = free_stack[--free_top];
    apr_thread_mutex_unlock(journal_lock);
    AURA_CONN_RECORDS(journal)[r] = (apr_uint32_t)(slot + 1);
    return r;
}

/* A count the connection now holds, released by c->pool's cleanup
 * (or earlier, by release()). */
static held_t *hold(conn_rec *c, apr_uint64_t slot)
{
    held_t *h = apr_palloc(c->pool, sizeof(*h));

    h->slot = slot;
    h->done = 0;
    h->record = record(slot);
    apr_pool_cleanup_register(c->pool, h, conn_leave, apr_pool_cleanup_null);
    return h;
}

static conn_counts_t *counts_of(conn_rec *c)
{
    conn_counts_t *n = ap_get_module_config(c->conn_config,
                                            &aura_common_module);

    if (!n) {
        n = apr_pcalloc(c->pool, sizeof(*n));
        ap_set_module_config(c->conn_config, &aura_common_module, n);
    }
    return n;
}

static void log_refused(conn_rec *c, aura_conn_slot_t *s,
                        apr_uint64_t count, int cap)
{
    apr_uint64_t now = (apr_uint64_t)apr_time_sec(apr_time_now());
    apr_uint64_t was = apr_atomic_read64(&s->logged);

    if ((was && now - was < LOG_INTERVAL)
        || apr_atomic_cas64(&s->logged, now, was) != was) {
        return;
    }
    ap_log_cerror(APLOG_MARK, APLOG_WARNING, 0, c, AURA_LOGNO(00900)
                  "connection from %s to %s:%u closed at once: the "
                  "address has %" APR_UINT64_T_FMT " open to this "
                  "listener, AuraMaxConnectionsPerAddress %d (logged once "
                  "a minute per address)", c->client_ip, c->local_ip,
                  (unsigned)c->local_addr->port, count, cap);
}

static void log_full(conn_rec *c)
{
    volatile apr_uint64_t *last = aura_shm_flag(AURA_FLAG_CONNS_LOGGED);
    apr_uint64_t now = (apr_uint64_t)apr_time_sec(apr_time_now());
    apr_uint64_t was;

    if (!last) {
        return;
    }
    was = apr_atomic_read64(last);
    if ((was && now - was < LOG_INTERVAL)
        || apr_atomic_cas64(last, now, was) != was) {
        return;
    }
    ap_log_cerror(APLOG_MARK, APLOG_WARNING, 0, c, AURA_LOGNO(00901)
                  "connection table full: a connection from %s admitted "
                  "without a per-address count (fail-open; logged once a "
                  "minute)", c->client_ip);
}

static void log_busy(conn_rec *c, aura_conn_slot_t *s, int cap)
{
    apr_uint64_t now = (apr_uint64_t)apr_time_sec(apr_time_now());
    apr_uint64_t was = apr_atomic_read64(&s->logged);

    if ((was && now - was < LOG_INTERVAL)
        || apr_atomic_cas64(&s->logged, now, was) != was) {
        return;
    }
    ap_log_cerror(APLOG_MARK, APLOG_WARNING, 0, c, AURA_LOGNO(00906)
                  "connection from %s to %s:%u closed at once: %d "
                  "connections of this listener are still sending their "
                  "first request, AuraMaxReadingConnections %d (logged "
                  "once a minute per listener)", c->client_ip, c->local_ip,
                  (unsigned)c->local_addr->port, cap, cap);
}

/* The listener's count of connections reading their first request:
 * OK (counted, or no cap), or an error status when it is full. */
static int enter_reading(conn_rec *c, const aura_server_conf_t *sc,
                         aura_conn_slot_t *slots, apr_uint64_t sets)
{
    int cap = reading_cap_of(sc);
    apr_uint64_t slot = 0, count = 0;

    if (cap <= 0) {
        return OK;
    }
    switch (aura_conn_enter(slots, sets, listener_key(c), (apr_uint64_t)cap,
                            &slot, &count)) {
    case AURA_CONN_ADMITTED:
        counts_of(c)->reading = hold(c, slot);
        return OK;
    case AURA_CONN_FULL:
        aura_count(AURA_CTR_CONN_TABLE_FULL);
        log_full(c);
        return OK;
    default:
        aura_count(AURA_CTR_CONN_BUSY);
        log_busy(c, &slots[slot], cap);
        return HTTP_SERVICE_UNAVAILABLE;
    }
}

/* post_read_request: the connection's first request is read; it no
 * longer counts as reading (HTTP/2: the first stream's request counts
 * its master connection out). */
static int conn_request_read(request_rec *r)
{
    conn_rec *c = r->connection->master ? r->connection->master
                                        : r->connection;
    conn_counts_t *n = ap_get_module_config(c->conn_config,
                                            &aura_common_module);

    if (n && n->reading) {
        release(n->reading);
        n->reading = NULL;
    }
    return DECLINED;
}

/* pre_close_connection: the lingering close starts; under the event
 * MPM it holds no worker, so the connection counts out now. */
static int conn_closing(conn_rec *c)
{
    conn_counts_t *n;

    if (!async_mpm || c->master) {
        return OK;
    }
    n = ap_get_module_config(c->conn_config, &aura_common_module);
    if (n) {
        if (n->reading) {
            release(n->reading);
        }
        if (n->address) {
            release(n->address);
        }
        ap_set_module_config(c->conn_config, &aura_common_module, NULL);
    }
    return OK;
}

/* Not OK, DECLINED or DONE: the MPM closes the socket without running
 * the connection (the event MPM at once; the others skip processing
 * because of c->aborted). */
static int refuse(conn_rec *c)
{
    c->aborted = 1;
    c->keepalive = AP_CONN_CLOSE;
    return HTTP_SERVICE_UNAVAILABLE;
}

/* pre_connection: count the connection in, or close it at once. */
static int conn_enter(conn_rec *c, void *csd)
{
    const aura_server_conf_t *sc;
    aura_conn_slot_t *slots;
    apr_uint64_t sets, slot = 0, count = 0;
    int cap;

    (void)csd;
    /* HTTP/2 streams and mod_proxy's backend connections are not
     * client connections. */
    if (c->master || c->outgoing || !c->client_addr || !c->local_addr
        || !c->base_server) {
        return DECLINED;
    }
    sc = aura_server_conf(c->base_server);
    cap = cap_of(sc);
    if (!(slots = aura_shm_conns(&sets)) || exempt(sc, c->client_addr)) {
        return DECLINED;
    }
    /* The address's count first: one address flooding the listener is
     * refused there, without ever touching the count every address
     * shares. */
    switch (cap > 0 ? aura_conn_enter(slots, sets, key_of(c, sc),
                                      (apr_uint64_t)cap, &slot, &count)
                    : AURA_CONN_FULL) {
    case AURA_CONN_ADMITTED:
        counts_of(c)->address = hold(c, slot);
        break;
    case AURA_CONN_FULL:
        if (cap > 0) {
            aura_count(AURA_CTR_CONN_TABLE_FULL);
            log_full(c);
        }
        break;
    default:
        aura_count(AURA_CTR_CONN_REFUSED);
        log_refused(c, &slots[slot], count, cap);
        ap_log_cerror(APLOG_MARK, APLOG_DEBUG, 0, c, AURA_LOGNO(00902)
                      "connection refused: %s has %" APR_UINT64_T_FMT
                      " open (cap %d)", c->client_ip, count, cap);
        return refuse(c);
    }
    /* Refused here, the address's count goes with c->pool's cleanup. */
    return enter_reading(c, sc, slots, sets) == OK ? DECLINED : refuse(c);
}

/* Reclaim journal i when it belongs to owner (a dead process). */
static apr_uint64_t reclaim_one(apr_uint64_t i, apr_uint64_t owner)
{
    apr_uint64_t sets, n = 0, njournals, k;
    apr_uint32_t records;
    aura_conn_slot_t *slots = aura_shm_conns(&sets);
    aura_conn_journal_t *j = aura_shm_journal(i, &records, &njournals);

    if (!slots || !j
        || aura_conn_reclaim(j, records, owner, slots,
                             sets * AURA_CONN_WAYS, &n) != APR_SUCCESS) {
        return 0;
    }
    for (k = 0; k < n; k++) {
        aura_count(AURA_CTR_CONN_RECLAIMED);
    }
    return n;
}

/* The connections a journal still records (read only). */
static apr_uint64_t recorded(aura_conn_journal_t *j, apr_uint32_t records)
{
    apr_uint64_t n = 0;
    apr_uint32_t k;

    for (k = 0; k < records; k++) {
        n += AURA_CONN_RECORDS(j)[k] != 0;
    }
    return n;
}

/* Parent: a child exited; count out what its journal still holds
 * (connections open when it was killed, or when it exited without
 * closing them). */
static void conn_child_status(server_rec *s, pid_t pid, ap_generation_t gen,
                              int slot, mpm_child_status state)
{
    apr_uint64_t i, n = 1;
    apr_uint32_t records;

    (void)gen;
    (void)slot;
    if (state != MPM_CHILD_EXITED || pid <= 0) {
        return;
    }
    for (i = 0; i < n; i++) {
        aura_conn_journal_t *j = aura_shm_journal(i, &records, &n);
        apr_uint64_t left;

        if (!j) {
            return;
        }
        if (apr_atomic_read64(&j->owner) != (apr_uint64_t)pid) {
            continue;
        }
        left = recorded(j, records);
        reclaim_one(i, (apr_uint64_t)pid);
        if (left) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, AURA_LOGNO(00903)
                         "child %" APR_PID_T_FMT " exited with %"
                         APR_UINT64_T_FMT " connections counted against "
                         "their addresses: counted out", pid, left);
        }
        return;
    }
}

/* Child: reclaim the journals of owners that no longer exist (the
 * parent's hook missed them: e.g. it was itself restarted). */
static void sweep(server_rec *s)
{
    apr_uint64_t i, n = 1;
    apr_uint32_t records;

    for (i = 0; i < n; i++) {
        aura_conn_journal_t *j = aura_shm_journal(i, &records, &n);
        apr_uint64_t owner, left;

        if (!j) {
            return;
        }
        owner = apr_atomic_read64(&j->owner);
        if (!owner || owner == AURA_CONN_RECLAIMING
            || kill((pid_t)owner, 0) == 0 || errno != ESRCH) {
            continue;
        }
        left = recorded(j, records);
        reclaim_one(i, owner);
        if (left) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, AURA_LOGNO(00904)
                         "process %" APR_UINT64_T_FMT " is gone with %"
                         APR_UINT64_T_FMT " connections counted against "
                         "their addresses: counted out", owner, left);
        }
    }
}

void aura_connlimit_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_uint64_t i, n = 1;
    apr_uint32_t records = 0, k;
    apr_uint64_t me = (apr_uint64_t)getpid();

    if (!aura_shm_conns(&i)) {
        return;
    }
    sweep(s);
    for (i = 0; i < n && !journal; i++) {
        aura_conn_journal_t *j = aura_shm_journal(i, &records, &n);

        if (j && aura_conn_journal_claim(j, me) == APR_SUCCESS) {
            journal = j;
        }
    }
    if (!journal
        || apr_thread_mutex_create(&journal_lock, APR_THREAD_MUTEX_DEFAULT,
                                   pchild) != APR_SUCCESS) {
        journal = NULL;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(00905)
                     "no connection journal free for this child: if it is "
                     "killed, its open connections stay counted against "
                     "their addresses");
        return;
    }
    free_stack = apr_palloc(pchild, records * sizeof(*free_stack));
    for (k = 0; k < records; k++) {
        AURA_CONN_RECORDS(journal)[k] = 0;
        free_stack[k] = records - 1 - k;
    }
    free_top = records;
}

void aura_connlimit_describe(json_t *obj)
{
    apr_uint64_t sets, i, n = 1, owned = 0, reclaimed = 0;
    apr_uint32_t records = 0;
    aura_conn_slot_t *slots = aura_shm_conns(&sets);
    aura_conn_census_t cen;

    if (!slots) {
        return;
    }
    aura_conn_census(slots, sets, &cen);
    for (i = 0; i < n; i++) {
        aura_conn_journal_t *j = aura_shm_journal(i, &records, &n);

        if (!j) {
            break;
        }
        owned += apr_atomic_read64(&j->owner) != 0;
        reclaimed += apr_atomic_read64(&j->reclaimed);
    }
    json_object_set_new(obj, "entries", json_integer((json_int_t)
                                                     (sets * AURA_CONN_WAYS)));
    json_object_set_new(obj, "addresses", json_integer((json_int_t)cen.used));
    json_object_set_new(obj, "counted",
                        json_integer((json_int_t)cen.connections));
    json_object_set_new(obj, "largest", json_integer((json_int_t)cen.largest));
    json_object_set_new(obj, "journals", json_integer((json_int_t)n));
    json_object_set_new(obj, "journals_owned", json_integer((json_int_t)owned));
    json_object_set_new(obj, "journal_records",
                        json_integer((json_int_t)records));
    json_object_set_new(obj, "reclaimed", json_integer((json_int_t)reclaimed));
    json_object_set_new(obj, "auto_cap", json_integer(auto_cap));
    json_object_set_new(obj, "auto_reading", json_integer(auto_reading));
}

const char *aura_set_max_conns(cmd_parms *cmd, void *dummy, const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    (void)dummy;
    if (!strcasecmp(arg, "off")) {
        c->max_conns = 0;
        return NULL;
    }
    if (!strcasecmp(arg, "auto")) {
        c->max_conns = AURA_CONN_AUTO;
        return NULL;
    }
    if (aura_parse_int(cmd, arg, 1, AURA_CONN_MAX, &c->max_conns)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not auto, off or a "
                            "number between 1 and %d", cmd->cmd->name, arg,
                            AURA_CONN_MAX);
    }
    return NULL;
}

const char *aura_set_max_reading(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    (void)dummy;
    if (!strcasecmp(arg, "off")) {
        c->max_reading = 0;
        return NULL;
    }
    if (!strcasecmp(arg, "auto")) {
        c->max_reading = AURA_CONN_AUTO;
        return NULL;
    }
    if (aura_parse_int(cmd, arg, 1, AURA_CONN_MAX, &c->max_reading)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not auto, off or a "
                            "number between 1 and %d", cmd->cmd->name, arg,
                            AURA_CONN_MAX);
    }
    return NULL;
}

const char *aura_set_conn_exempt(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    char *ip = apr_pstrdup(cmd->pool, arg), *mask = strchr(ip, '/');
    apr_ipsubnet_t *sub;
    apr_status_t rv;

    (void)dummy;
    if (mask) {
        *mask++ = '\0';
    }
    rv = apr_ipsubnet_create(&sub, ip, mask, cmd->pool);
    if (rv != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not an IP address or "
                            "network (a.b.c.d, a.b.c.d/bits, ipv6/bits)",
                            cmd->cmd->name, arg);
    }
    /* One list per VirtualHost: the lines of one scope add up, a
     * VirtualHost's list replaces the main server's. */
    if (!c->conn_exempt) {
        c->conn_exempt = apr_array_make(cmd->pool, 4, sizeof(sub));
    }
    APR_ARRAY_PUSH(c->conn_exempt, apr_ipsubnet_t *) = sub;
    return NULL;
}

void aura_connlimit_register(void)
{
    /* After the event MPM's own pre_connection (REALLY_FIRST), before
     * mod_ssl's and mod_reqtimeout's work: a refused connection costs
     * a hash and a compare-and-swap. */
    ap_hook_pre_connection(conn_enter, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_child_status(conn_child_status, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_read_request(conn_request_read, NULL, NULL,
                              APR_HOOK_REALLY_FIRST);
    ap_hook_pre_close_connection(conn_closing, NULL, NULL, APR_HOOK_MIDDLE);
}
