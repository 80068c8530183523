/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_bulkhead.c: the in-flight caps (DESIGN.md section 9, "capacity is
 * bounded per service").  A request waiting on its upstream holds a
 * worker thread for as long as the upstream takes; a frozen service with
 * more callers than the instance has workers would hold every worker,
 * and both planes and /health with them.  So, right before the upstream
 * call (aura_natsproxy.c, aura_http_fixups()), a request takes
 *
 *   - a slot of its plane: the upstream requests the data plane (or the
 *     management plane) of the whole instance may have in flight at
 *     once (AuraPlaneMaxInFlight; auto: 70 % of the workers for the data
 *     plane, 20 % for the management plane), so that the data plane can
 *     never take the management plane's workers, and at least 10 % of
 *     the workers never wait on any upstream: /health, /metrics and the
 *     refusals below always find one;
 *   - a slot of its service (AuraServiceMaxInFlight, per Location;
 *     auto: 50 % of the workers), so that one frozen service leaves the
 *     other services of its plane room.
 *
 * Past either cap the answer is 503 service-saturated at once, with
 * Retry-After, and nothing is sent; below it, each class of request
 * may fill only its share (AuraShedding, aura_shed.h): past it, 503
 * load-shed.  A long-lived request (a stream) takes the plane's slot
 * and, instead of its service's, the long-lived budget
 * (aura_streams.c): its counters and records are kept here, in the same
 * hold, so that they go back on the same paths.  The counters are in
 * the shared segment (all children of the instance count together),
 * taken by compare-and-swap below the cap (aura_cap.c), and given back
 * by aura_cap_leave() or the request pool's cleanup, on every exit
 * path.
 *
 * A child killed with SIGKILL (or crashing) runs no cleanup: its slots
 * would be lost for good, and enough such deaths would refuse a
 * service for ever.  So each child also counts what it holds in a
 * record of its own in the segment (claimed in child_init), and the
 * parent, which reaps every child, gives back the holdings of a child
 * that exited (child_status hook, within about a second of the death),
 * and, as a backstop every ~10 s (monitor hook), of any record whose
 * process no longer exists.  Only the dead are reclaimed: a live
 * process's record is written by that process alone.  A record counts
 * the stream slots too (held[AURA_CAP_COUNTERS + i]), and the records
 * of the open streams (aura_streamtab.h) carry their child's pid: a
 * reclaim frees them with the rest.
 *
 * Lock-free throughout: atomics only, no mutex, no I/O while counting.
 */
#include "core/aura_clock.h"
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "resilience/aura_bulkhead.h"
#include "resilience/aura_cap.h"
#include "resilience/aura_shed.h"
#include "resilience/aura_streamtab.h"
#include "shm/aura_shm.h"

#include "http_core.h"
#include "http_main.h"
#include "http_protocol.h"
#include "ap_mpm.h"
#include "mpm_common.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include <jansson.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Seconds between two log lines about one saturated cap. */
#define LOG_INTERVAL 10
#define RETRY_AFTER  "1"

/* Written in post_config (parent) and child_init only. */
static apr_uint64_t workers;           /* MaxRequestWorkers of the MPM */
static aura_cap_proc_t *my_record;     /* this child's, NULL: none */

/* What a request holds: up to HOLD_MAX counters, each by its index in
 * a process record's held[] (in_flight[i] is i, streams[i] is
 * AURA_CAP_COUNTERS + i; -1 once given back early), and the record of
 * its stream (aura_streams.c), + 1, 0 for none. */
#define HOLD_MAX 6                      /* plane, service, their streams'
                                          budgets: 4, and room to spare */
struct aura_cap_hold_t {
    int idx[HOLD_MAX];
    int taken;                         /* how many of them */
    int done;
    apr_uint64_t rec;
};

/* The counter of held index i. */
static volatile apr_uint64_t *counter_at(aura_cap_shm_t *cap, int i)
{
    return i < AURA_CAP_COUNTERS ? &cap->in_flight[i]
                                 : &cap->streams[i - AURA_CAP_COUNTERS];
}

const char *aura_cap_counter_name(int idx)
{
    return idx < AURA_SVC_COUNT ? aura_service_names[idx]
           : aura_plane_at(idx - AURA_SVC_COUNT)->name;
}


/* What a counter counts, for log lines and problem details: "service
 * <name>", "the data plane", "the management plane". */
const char *aura_cap_what(apr_pool_t *p, int idx)
{
    return idx < AURA_SVC_COUNT
           ? apr_pstrcat(p, "service ", aura_cap_counter_name(idx), NULL)
           : apr_pstrcat(p, "the ", aura_cap_counter_name(idx), " plane",
                         NULL);
}

/* One family of /metrics over the counters of every service and plane
 * (v in the order of in_flight, aura_shm.h). */
void aura_cap_series(request_rec *r, const char *name, const char *type,
                     const char *help, volatile apr_uint64_t *v)
{
    int c;

    ap_rprintf(r, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (c = 0; c < AURA_CAP_COUNTERS; c++) {
        ap_rprintf(r, "%s{%s=\"%s\"} %" APR_UINT64_T_FMT "\n", name,
                   c < AURA_SVC_COUNT ? "service" : "plane",
                   aura_cap_counter_name(c), apr_atomic_read64(&v[c]));
    }
}

apr_status_t aura_cap_post_config(apr_pool_t *pconf, server_rec *s)
{
    int threads = 0, daemons = 0;

    (void)pconf;
    /* The workers of the whole instance: ThreadsPerChild times the
     * processes MaxRequestWorkers allows (1 x MaxRequestWorkers under
     * prefork). */
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS
        || ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons) != APR_SUCCESS
        || threads < 1 || daemons < 1) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(00700)
                     "the MPM does not say how many workers it runs: the "
                     "in-flight caps given as auto or as a percentage are "
                     "off (set AuraServiceMaxInFlight and "
                     "AuraPlaneMaxInFlight as numbers)");
        workers = 0;
        return APR_SUCCESS;
    }
    workers = (apr_uint64_t)threads * (apr_uint64_t)daemons;
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s, AURA_LOGNO(00701)
                 "in-flight caps: %" APR_UINT64_T_FMT " workers; auto is "
                 "%" APR_UINT64_T_FMT " per service, %" APR_UINT64_T_FMT
                 " for the data plane, %" APR_UINT64_T_FMT " for the "
                 "management plane", workers,
                 aura_cap_resolve(AURA_CAP_AUTO, workers,
                                  AURA_CAP_AUTO_SERVICE_PCT),
                 aura_cap_resolve(AURA_CAP_AUTO, workers,
                                  AURA_CAP_AUTO_DATA_PCT),
                 aura_cap_resolve(AURA_CAP_AUTO, workers,
                                  AURA_CAP_AUTO_MGMT_PCT));
    return APR_SUCCESS;
}

/* ---- reclaiming the slots of the dead ---------------------------------- */

/* Empties rec, which owner held, and frees it; the requests (service
 * slots) it held.  The RECLAIM mark makes one reclaimer the only one. */
/* The records of the open streams of a dead owner (aura_streamtab.h):
 * freed with its other holdings, and by the parent's hooks for a child
 * that had no process record. */
static apr_uint64_t reclaim_streams(aura_cap_shm_t *cap, apr_uint64_t owner)
{
    apr_uint64_t n = 0, got;
    aura_stream_rec_t *recs = aura_shm_streams(&n);

    if (!recs || !(got = aura_stream_reclaim(recs, n, owner))) {
        return 0;
    }
    apr_atomic_add64(&cap->recs_reclaimed, got);
    return got;
}

/* Empties rec, which owner held, and frees it; the requests (service
 * slots, short and long-lived) it held.  The RECLAIM mark makes one
 * reclaimer the only one. */
static apr_uint64_t reclaim(aura_cap_shm_t *cap, aura_cap_proc_t *rec,
                            apr_uint64_t owner)
{
    apr_uint64_t requests = 0;
    int i;

    if (apr_atomic_cas64(&rec->owner, owner | AURA_CAP_RECLAIM, owner)
        != owner) {
        return 0;
    }
    for (i = 0; i < AURA_CAP_HELD; i++) {
        apr_uint64_t n = apr_atomic_xchg64(&rec->held[i], 0);

        if (n) {
            n = aura_cap_give(counter_at(cap, i), n);
            requests += i % AURA_CAP_COUNTERS < AURA_SVC_COUNT ? n : 0;
        }
    }
    reclaim_streams(cap, owner);
    apr_atomic_add64(&cap->reclaimed, requests);
    apr_atomic_set64(&rec->owner, 0);
    return requests;
}

static void log_reclaimed(server_rec *s, apr_uint64_t pid, apr_uint64_t n,
                          const char *how)
{
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(00702)
                 "child %" APR_UINT64_T_FMT " ended holding %"
                 APR_UINT64_T_FMT " in-flight upstream request(s) (%s): "
                 "their slots are given back", pid, n, how);
}

/* The parent, when it reaps a child: whatever it held, it holds no
 * more (it was killed, or crashed, before its requests ended). */
static void child_status(server_rec *s, pid_t pid, ap_generation_t gen,
                         int slot, mpm_child_status state)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, i;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);

    (void)gen;
    (void)slot;
    if (state != MPM_CHILD_EXITED || !cap || pid <= 0) {
        return;
    }
    for (i = 0; i < n; i++) {
        if (apr_atomic_read64(&procs[i].owner) == (apr_uint64_t)pid) {
            apr_uint64_t got = reclaim(cap, &procs[i], (apr_uint64_t)pid);

            if (got) {
                log_reclaimed(s, (apr_uint64_t)pid, got, "reaped");
            }
        }
    }
    /* A child without a process record (AURA00703) may still have
     * stream records: it is reaped, they are stale. */
    reclaim_streams(cap, (apr_uint64_t)pid);
}

/* The parent, every ~10 s: records of processes that no longer exist
 * (a child the parent of a former generation reaped, a record the
 * child_status hook missed).  kill(pid, 0) from the parent (root, or
 * the children's user) sees every child; ESRCH alone means gone. */
static int monitor(apr_pool_t *p, server_rec *s)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, i, nrec = 0;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    aura_stream_rec_t *recs;

    (void)p;
    for (i = 0; cap && i < n; i++) {
        apr_uint64_t owner = apr_atomic_read64(&procs[i].owner);

        if (owner && !(owner & AURA_CAP_RECLAIM)
            && kill((pid_t)owner, 0) == -1 && errno == ESRCH) {
            apr_uint64_t got = reclaim(cap, &procs[i], owner);

            if (got) {
                log_reclaimed(s, owner, got, "found gone");
            }
        }
    }
    /* Stream records of a process without a process record. */
    if (cap && (recs = aura_shm_streams(&nrec))) {
        for (i = 0; i < nrec; i++) {
            apr_uint64_t owner = apr_atomic_read64(&recs[i].owner)
                                 & ~AURA_STREAM_CLAIMING;

            if (owner && kill((pid_t)owner, 0) == -1 && errno == ESRCH) {
                reclaim_streams(cap, owner);
            }
        }
    }
    return DECLINED;
}

/* Whether pid has died: gone, or a zombie its parent has not reaped yet
 * (kill(pid, 0) still succeeds on a zombie, and the parent reaps at its
 * once-a-second maintenance).  Unknown (no /proc, not readable) is alive. */
static int proc_dead(apr_uint64_t pid)
{
    char path[48], buf[512];
    const char *p;
    ssize_t n;
    int fd;

    apr_snprintf(path, sizeof(path), "/proc/%" APR_UINT64_T_FMT "/stat",
                 pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    p = strrchr(buf, ')');      /* the name may hold spaces and parens */
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* At a refusal: a child killed while holding slots of this counter
 * keeps them until the parent reaps it; under load that is up to a
 * second of 503s for a healthy service (build/chaos child-kill).  Its
 * record is reclaimed here as soon as it is dead; reclaim()'s mark
 * leaves one reclaimer, the parent's hook included.  Returns whether
 * anything came back. */
static int reclaim_dead(server_rec *s, aura_cap_shm_t *cap,
                        aura_cap_proc_t *procs, apr_uint64_t n, int idx)
{
    apr_uint64_t i, me = (apr_uint64_t)getpid();
    int any = 0;

    for (i = 0; i < n; i++) {
        apr_uint64_t owner = apr_atomic_read64(&procs[i].owner), got;

        if (!owner || owner == me || (owner & AURA_CAP_RECLAIM)
            || !apr_atomic_read64(&procs[i].held[idx])
            || !proc_dead(owner)) {
            continue;
        }
        got = reclaim(cap, &procs[i], owner);
        if (got) {
            log_reclaimed(s, owner, got, "found dead at a refusal");
            any = 1;
        }
    }
    return any;
}

/* ---- each child's record ----------------------------------------------- */

static apr_status_t release_record(void *data)
{
    aura_cap_proc_t *rec = data;
    apr_uint64_t me = (apr_uint64_t)getpid();
    int i;

    /* A child that exits with requests still counted (a hard stop does
     * not wait for them) keeps its record: the parent gives its slots
     * back once it has reaped it. */
    for (i = 0; i < AURA_CAP_HELD; i++) {
        if (apr_atomic_read64(&rec->held[i])) {
            return APR_SUCCESS;
        }
    }
    apr_atomic_cas64(&rec->owner, 0, me);
    my_record = NULL;
    return APR_SUCCESS;
}

void aura_cap_child_init(apr_pool_t *pchild, server_rec *s)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, i, me = (apr_uint64_t)getpid();
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);

    my_record = NULL;
    if (!cap) {
        return;
    }
    /* A record in this pid's name is a dead predecessor's (pids are
     * reused): its holdings are stale. */
    for (i = 0; i < n; i++) {
        if (apr_atomic_read64(&procs[i].owner) == me) {
            apr_uint64_t got = reclaim(cap, &procs[i], me);

            if (got) {
                log_reclaimed(s, me, got, "its pid came back");
            }
        }
    }
    for (i = 0; i < n && !my_record; i++) {
        if (!apr_atomic_read64(&procs[i].owner)
            && apr_atomic_cas64(&procs[i].owner, me, 0) == 0) {
            my_record = &procs[i];
        }
    }
    if (!my_record) {
        /* Degraded, not refused: this child's slots are counted, but
         * lost for good if it dies while holding them. */
        apr_atomic_inc64(&cap->unrecorded);
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(00703)
                     "no free record of the in-flight caps for child %"
                     APR_UINT64_T_FMT " (%" APR_UINT64_T_FMT " records): "
                     "if it dies while requests wait on upstreams, their "
                     "slots are not given back until a full restart", me,
                     n);
        return;
    }
    apr_pool_cleanup_register(pchild, my_record, release_record,
                              apr_pool_cleanup_null);
}

void aura_cap_register(void)
{
    ap_hook_child_status(child_status, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_monitor(monitor, NULL, NULL, APR_HOOK_MIDDLE);
}

/* ---- taking and giving back -------------------------------------------- */

static int plane_index(aura_plane_e plane)
{
    return AURA_SVC_COUNT + aura_plane_info(plane)->index;
}

static apr_uint64_t plane_cap(const server_rec *s, aura_plane_e plane)
{
    return aura_cap_resolve(aura_server_conf(s)->plane_max_in_flight,
                            workers, aura_plane_info(plane)->cap_auto_pct);
}

static apr_status_t hold_cleanup(void *data)
{
    aura_cap_leave(data);
    return APR_SUCCESS;
}

/* Gives back what h holds of held index i, if it holds it. */
static void give_one(aura_cap_shm_t *cap, aura_cap_hold_t *h, int k)
{
    int i = h->idx[k];

    if (i < 0) {
        return;
    }
    h->idx[k] = -1;
    aura_cap_give(counter_at(cap, i), 1);
    if (my_record) {
        aura_cap_drop(&my_record->held[i]);
    }
}

void aura_cap_leave(aura_cap_hold_t *h)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    int k;

    if (!h || h->done || !cap) {
        return;
    }
    h->done = 1;
    for (k = 0; k < h->taken; k++) {
        give_one(cap, h, k);
    }
    aura_cap_hold_drop_record(h);
}

aura_cap_hold_t *aura_cap_hold_make(request_rec *r)
{
    aura_cap_hold_t *h = apr_pcalloc(r->pool, sizeof(*h));

    apr_pool_cleanup_register(r->pool, h, hold_cleanup,
                              apr_pool_cleanup_null);
    return h;
}

int aura_cap_hold_take(request_rec *r, aura_cap_hold_t *h, int i,
                       apr_uint64_t limit)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    volatile apr_uint64_t *c;

    if (!cap || h->taken >= HOLD_MAX) {
        return 1;
    }
    c = counter_at(cap, i);
    /* The record first, the shared counter second (aura_cap_enter()). */
    if (my_record) {
        apr_atomic_inc64(&my_record->held[i]);
    }
    if (!aura_cap_take(c, limit)
        && !(reclaim_dead(r->server, cap, procs, n, i)
             && aura_cap_take(c, limit))) {
        if (my_record) {
            aura_cap_drop(&my_record->held[i]);
        }
        return 0;
    }
    h->idx[h->taken++] = i;
    return 1;
}

void aura_cap_hold_give(aura_cap_hold_t *h, int i)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    int k;

    for (k = 0; cap && h && k < h->taken; k++) {
        if (h->idx[k] == i) {
            give_one(cap, h, k);
            return;
        }
    }
}

void aura_cap_hold_set_record(aura_cap_hold_t *h, apr_uint64_t idx)
{
    h->rec = idx + 1;
}

void aura_cap_hold_drop_record(aura_cap_hold_t *h)
{
    apr_uint64_t n;
    aura_stream_rec_t *recs = aura_shm_streams(&n);

    if (h && h->rec && recs) {
        aura_stream_release(recs, h->rec - 1, (apr_uint64_t)getpid());
    }
    if (h) {
        h->rec = 0;
    }
}

int aura_cap_hold_done(const aura_cap_hold_t *h)
{
    return !h || h->done;
}

int aura_cap_reclaim_pid(server_rec *s, apr_uint64_t pid)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, i, got = 0, recs = 0;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);

    if (!cap || pid == (apr_uint64_t)getpid() || !proc_dead(pid)) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (apr_atomic_read64(&procs[i].owner) == pid) {
            got += reclaim(cap, &procs[i], pid);
        }
    }
    recs = reclaim_streams(cap, pid);
    if (got) {
        log_reclaimed(s, pid, got, "found dead at a refusal");
    }
    return got || recs;
}

apr_uint64_t aura_cap_workers(void)
{
    return workers;
}

int aura_cap_plane_index(aura_plane_e plane)
{
    return plane_index(plane);
}

/* Counts the refusal, logs it at most once per LOG_INTERVAL per cap
 * across the instance, and notes the 503. */
static int refuse(request_rec *r, aura_cap_shm_t *cap, int idx,
                  apr_uint64_t limit)
{
    int svc = idx < AURA_SVC_COUNT;
    const char *what = aura_cap_what(r->pool, idx);

    apr_atomic_inc64(&cap->refused[idx]);
    if (aura_log_due(&cap->logged[idx], LOG_INTERVAL)) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(00704)
                      "%s saturated: %" APR_UINT64_T_FMT " upstream "
                      "requests in flight, its cap (%s); refused with 503 "
                      "service-saturated (%" APR_UINT64_T_FMT " so far; "
                      "logged at most every %d s)", what, limit,
                      svc ? "AuraServiceMaxInFlight" : "AuraPlaneMaxInFlight",
                      apr_atomic_read64(&cap->refused[idx]), LOG_INTERVAL);
    }
    apr_table_setn(r->err_headers_out, "Retry-After", RETRY_AFTER);
    aura_problem_note(r, "service-saturated",
                      apr_psprintf(r->pool, "%s has as many requests in "
                                   "flight as the gateway allows (%"
                                   APR_UINT64_T_FMT "); try again shortly",
                                   what, limit));
    return HTTP_SERVICE_UNAVAILABLE;
}

/* The segment counts refusals per class with aura_shed.h's classes. */
typedef char aura_shed_classes_match[AURA_SHED_CLASSES == AURA_CLASS_COUNT
                                     ? 1 : -1];

/* The request's class and its Location's ceilings. */
static aura_class_e request_class(request_rec *r, const aura_request_t *rq,
                                  const aura_shed_conf_t **conf)
{
    const aura_shed_conf_t *c = aura_dir_conf(r)->shed;

    *conf = c ? c : &aura_shed_default;
    return aura_class_of(rq->role, rq->plane == AURA_PLANE_MGMT);
}

/* A request refused below the cap, at its class's ceiling: the slots
 * above are reserved for more trusted classes.  Counted per class, one
 * line per class every LOG_INTERVAL for the instance, 503 load-shed.
 * i is a held index: an in-flight cap, or a stream budget. */
static int shed(request_rec *r, aura_cap_shm_t *cap, int i,
                aura_class_e cls, apr_uint64_t limit, apr_uint64_t full)
{
    const char *what = aura_cap_what(r->pool, i % AURA_CAP_COUNTERS);

    apr_atomic_inc64(&cap->shed[cls]);
    if (aura_log_due(&cap->shed_logged[cls], LOG_INTERVAL)) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(01605)
                      "%s: %s requests shed at %" APR_UINT64_T_FMT " of %"
                      APR_UINT64_T_FMT " %s, the rest is kept for more "
                      "trusted requests (AuraShedding); refused with 503 "
                      "load-shed (%" APR_UINT64_T_FMT " so far; logged at "
                      "most every %d s per class)", what,
                      aura_class_name(cls), limit, full,
                      i < AURA_CAP_COUNTERS ? "in flight" : "streams open",
                      apr_atomic_read64(&cap->shed[cls]), LOG_INTERVAL);
    }
    apr_table_setn(r->err_headers_out, "Retry-After", RETRY_AFTER);
    aura_problem_note(r, "load-shed",
                      apr_psprintf(r->pool, "%s is busy: the capacity "
                                   "left is kept for more trusted requests "
                                   "than %s ones; try again shortly", what,
                                   aura_class_name(cls)));
    return HTTP_SERVICE_UNAVAILABLE;
}

int aura_cap_take_class(request_rec *r, aura_cap_hold_t *h, int i,
                        apr_uint64_t full)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, limit;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    aura_request_t *rq = aura_request_get(r);
    const aura_shed_conf_t *conf;
    aura_class_e cls;

    if (!cap || !rq) {
        return OK;
    }
    cls = request_class(r, rq, &conf);
    limit = aura_class_limit(full, conf, cls);
    if (aura_cap_hold_take(r, h, i, limit)) {
        return OK;
    }
    if (limit < full && apr_atomic_read64(counter_at(cap, i)) < full) {
        return shed(r, cap, i, cls, limit, full);
    }
    return DECLINED;
}

/* Counter idx below its cap for the request's class: OK, or the 503 of
 * whichever limit refused it (the cap itself: service-saturated; the
 * class's ceiling below it: load-shed). */
static int take_for_class(request_rec *r, aura_cap_shm_t *cap,
                          aura_cap_hold_t *h, int idx, apr_uint64_t full)
{
    int rc = aura_cap_take_class(r, h, idx, full);

    return rc == DECLINED ? refuse(r, cap, idx, full) : rc;
}

int aura_cap_enter(request_rec *r, int service, aura_cap_hold_t **out)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, pcap, scap;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    aura_request_t *rq = aura_request_get(r);
    aura_cap_hold_t *h;
    int pidx, rc;

    *out = NULL;
    if (!cap || !rq || service < 0 || service >= AURA_SVC_COUNT) {
        return OK;
    }
    pidx = plane_index(rq->plane);
    pcap = plane_cap(r->server, rq->plane);
    scap = aura_cap_resolve(aura_dir_conf(r)->max_in_flight, workers,
                            AURA_CAP_AUTO_SERVICE_PCT);
    /* Given back by aura_cap_leave(), or the request pool's cleanup.
     * Within aura_cap_hold_take(): the record first, the shared counter
     * second: a child killed in between leaves its record one too high,
     * and the reclaim gives back one slot too many (one request admitted
     * over the cap, once), never one slot lost for good. */
    h = aura_cap_hold_make(r);
    if ((rc = take_for_class(r, cap, h, pidx, pcap)) != OK
        || (rc = take_for_class(r, cap, h, service, scap)) != OK) {
        aura_cap_leave(h);
        return rc;
    }
    *out = h;
    return OK;
}

int aura_cap_enter_plane(request_rec *r, aura_cap_hold_t *h)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, pcap;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    aura_request_t *rq = aura_request_get(r);
    int pidx;

    if (!cap || !rq) {
        return OK;
    }
    pidx = plane_index(rq->plane);
    pcap = plane_cap(r->server, rq->plane);
    return take_for_class(r, cap, h, pidx, pcap);
}

/* ---- what operators see ------------------------------------------------ */

/* The default ceilings (a Location may set its own) and the requests
 * shed so far, per class. */
static void describe_shedding(json_t *o, aura_cap_shm_t *cap)
{
    json_t *pct = json_object(), *n = json_object();
    int c;

    for (c = 0; c < AURA_CLASS_COUNT; c++) {
        const char *name = aura_class_name((aura_class_e)c);

        json_object_set_new(pct, name,
                            json_integer(aura_shed_default.pct[c]));
        json_object_set_new(n, name, json_integer((json_int_t)
                            apr_atomic_read64(&cap->shed[c])));
    }
    json_object_set_new(o, "shedding", pct);
    json_object_set_new(o, "shed", n);
}

/* One cap into caps[name] (-1: none seen yet): 0 (off) wins, since a
 * request there is never refused; otherwise the largest. */
static void fold_cap(apr_int64_t *have, apr_uint64_t cap)
{
    if (*have == 0) {
        return;
    }
    *have = (cap == 0 || (apr_int64_t)cap > *have) ? (apr_int64_t)cap
                                                    : *have;
}

/* The caps a service is held to, from the configuration: each
 * <Location> (of every server) that routes to it, with its own
 * AuraServiceMaxInFlight or its server's.  A Location sets its own cap
 * (aura_cap_enter() reads the request's), so one service may have
 * several: the page shows the largest, or off when any is off.  Not
 * merged with the Locations that enclose it: an AuraService and its cap
 * in one Location is how the sample and the docs write them. */
static void service_caps(apr_int64_t caps[AURA_SVC_COUNT])
{
    server_rec *s;
    int i, k;

    for (i = 0; i < AURA_SVC_COUNT; i++) {
        caps[i] = -1;
    }
    for (s = ap_server_conf; s; s = s->next) {
        core_server_config *core = ap_get_core_module_config(s->module_config);
        const aura_dir_conf_t *base = ap_get_module_config(
            s->lookup_defaults, &aura_common_module);
        ap_conf_vector_t **sec = (ap_conf_vector_t **)core->sec_url->elts;

        for (k = 0; k < core->sec_url->nelts; k++) {
            const aura_dir_conf_t *d = ap_get_module_config(
                sec[k], &aura_common_module);
            int enc;

            if (!d || d->service < 0 || d->service >= AURA_SVC_COUNT) {
                continue;
            }
            enc = d->max_in_flight != AURA_UNSET ? d->max_in_flight
                  : base ? base->max_in_flight : AURA_UNSET;
            fold_cap(&caps[d->service], aura_cap_resolve(
                         enc, workers, AURA_CAP_AUTO_SERVICE_PCT));
        }
    }
}

/* "caps" {service or plane: its cap, 0 for off}: a service no Location
 * routes to and a plane no VirtualHost serves are left out. */
static json_t *describe_caps(void)
{
    apr_int64_t caps[AURA_CAP_COUNTERS];
    json_t *o = json_object();
    server_rec *s;
    int c;

    service_caps(caps);
    for (c = AURA_SVC_COUNT; c < AURA_CAP_COUNTERS; c++) {
        caps[c] = -1;
    }
    for (s = ap_server_conf; s; s = s->next) {
        int plane = aura_server_conf(s)->plane;

        if (plane != AURA_UNSET && aura_plane_info(plane)->module_name) {
            fold_cap(&caps[plane_index(plane)], plane_cap(s, plane));
        }
    }
    for (c = 0; c < AURA_CAP_COUNTERS; c++) {
        if (caps[c] >= 0) {
            json_object_set_new(o, aura_cap_counter_name(c),
                                json_integer((json_int_t)caps[c]));
        }
    }
    return o;
}

/* /health with AuraHealthDetail On, and server-status: "in_flight"
 * {services, planes, caps, refused, children (pid -> requests),
 * reclaimed, workers, auto caps}. */
void aura_cap_describe(json_t *obj)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n, i;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    json_t *o, *svc = json_object(), *planes = json_object();
    json_t *refused = json_object(), *kids = json_object();
    int c;

    if (!cap) {
        json_decref(svc);
        json_decref(planes);
        json_decref(refused);
        json_decref(kids);
        return;
    }
    o = json_object();
    for (c = 0; c < AURA_CAP_COUNTERS; c++) {
        json_object_set_new(c < AURA_SVC_COUNT ? svc : planes,
                            aura_cap_counter_name(c), json_integer((json_int_t)
                            apr_atomic_read64(&cap->in_flight[c])));
        json_object_set_new(refused, aura_cap_counter_name(c), json_integer(
                            (json_int_t)apr_atomic_read64(&cap->refused[c])));
    }
    for (i = 0; i < n; i++) {
        apr_uint64_t owner = apr_atomic_read64(&procs[i].owner), sum = 0;
        char pid[24];

        if (!owner || (owner & AURA_CAP_RECLAIM)) {
            continue;
        }
        for (c = 0; c < AURA_SVC_COUNT; c++) {
            sum += apr_atomic_read64(&procs[i].held[c])
                   + apr_atomic_read64(&procs[i].held[AURA_CAP_COUNTERS + c]);
        }
        apr_snprintf(pid, sizeof(pid), "%" APR_UINT64_T_FMT, owner);
        json_object_set_new(kids, pid, json_integer((json_int_t)sum));
    }
    json_object_set_new(o, "services", svc);
    json_object_set_new(o, "planes", planes);
    json_object_set_new(o, "caps", describe_caps());
    json_object_set_new(o, "refused", refused);
    json_object_set_new(o, "children", kids);
    json_object_set_new(o, "reclaimed", json_integer((json_int_t)
                        apr_atomic_read64(&cap->reclaimed)));
    json_object_set_new(o, "unrecorded", json_integer((json_int_t)
                        apr_atomic_read64(&cap->unrecorded)));
    json_object_set_new(o, "workers", json_integer((json_int_t)workers));
    describe_shedding(o, cap);
    json_object_set_new(obj, "in_flight", o);
}

/* /metrics: the gauges and the refusals. */
void aura_cap_metrics(request_rec *r)
{
    aura_cap_proc_t *procs;
    apr_uint64_t n;
    aura_cap_shm_t *cap = aura_shm_cap(&procs, &n);
    int c;

    if (!cap) {
        return;
    }
    aura_cap_series(r, "aura_upstream_in_flight", "gauge", "Upstream "
                    "requests the instance has in flight, by service and "
                    "by plane.", cap->in_flight);
    aura_cap_series(r, "aura_saturated_total", "counter", "Requests refused "
                    "with 503 service-saturated, by the cap that refused "
                    "them.", cap->refused);
    ap_rputs("# HELP aura_shed_total Requests refused with 503 load-shed "
             "(their class's share of a cap was full), by class.\n"
             "# TYPE aura_shed_total counter\n", r);
    for (c = 0; c < AURA_CLASS_COUNT; c++) {
        ap_rprintf(r, "aura_shed_total{class=\"%s\"} %" APR_UINT64_T_FMT
                   "\n", aura_class_name((aura_class_e)c),
                   apr_atomic_read64(&cap->shed[c]));
    }
    ap_rprintf(r, "# HELP aura_in_flight_reclaimed_total Upstream requests "
               "of children that died holding them, given back by the "
               "parent.\n# TYPE aura_in_flight_reclaimed_total counter\n"
               "aura_in_flight_reclaimed_total %" APR_UINT64_T_FMT "\n",
               apr_atomic_read64(&cap->reclaimed));
}

static const char *parse(cmd_parms *cmd, const char *arg, int *v)
{
    const char *why = aura_cap_parse(arg, v);

    return why ? apr_psprintf(cmd->pool, "%s: '%s' is not %s",
                              cmd->cmd->name, arg, why)
               : NULL;
}

/* AuraServiceMaxInFlight <n>|<p>%|auto|off: per Location (outside one,
 * the server's defaults, which every Location inherits). */
const char *aura_set_max_in_flight(cmd_parms *cmd, void *dirv,
                                   const char *arg)
{
    return parse(cmd, arg, &((aura_dir_conf_t *)dirv)->max_in_flight);
}

/* AuraPlaneMaxInFlight <n>|<p>%|auto|off: per VirtualHost, against the
 * counter of the VirtualHost's plane. */
const char *aura_set_plane_max_in_flight(cmd_parms *cmd, void *dummy,
                                         const char *arg)
{
    (void)dummy;
    return parse(cmd, arg, &aura_cmd_server_conf(cmd)->plane_max_in_flight);
}

/* AuraShedding off | class=p% ...: per Location (outside one, the
 * server's, which every Location inherits). */
const char *aura_set_shedding(cmd_parms *cmd, void *dirv, int argc,
                              char *const argv[])
{
    aura_shed_conf_t *conf = apr_palloc(cmd->pool, sizeof(*conf));
    char err[256];

    if (argc < 1) {
        return apr_psprintf(cmd->pool, "%s: off, or one or more of "
                            "public=, anon=, authenticated= a percentage",
                            cmd->cmd->name);
    }
    if (aura_shed_parse(argc, argv, conf, err, sizeof(err))) {
        return apr_psprintf(cmd->pool, "%s: %s", cmd->cmd->name, err);
    }
    ((aura_dir_conf_t *)dirv)->shed = conf;
    return NULL;
}
