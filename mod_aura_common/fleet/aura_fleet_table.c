/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet_table.c: the fleet view's block of the shared segment (see
 * aura_fleet_table.h): one slot per instance, holding its latest
 * snapshot (bytes and digest) and when it arrived, and the ring of
 * recent changes.
 *
 * Lock: the "aura-fleet" global mutex, its own (not aura-shm's: a slot
 * is 16 KiB to copy, and the rate limiters' allocations must never wait
 * for that).  Made once for the life of the httpd parent and kept in
 * retained data, like the segment, so that the children of two
 * generations, which overlap during a graceful restart, take the same
 * lock.  Inside it: a scan of the slots by name (AuraFleetMaxInstances,
 * 32 by default), one copy of at most 16 KiB, the comparison of two
 * digests; no I/O, no logging, no allocation.  Readers (the console)
 * copy out under it and parse outside.
 *
 * Writes are idempotent by (instance, epoch, seq): a snapshot whose
 * sequence is not newer than the kept one of the same epoch is dropped,
 * so a duplicate delivery changes nothing and records no change twice.
 *
 * When every slot is taken: the slot of a gone instance (the longest
 * gone) is reused; if none is gone, the newcomer is dropped and counted
 * (full): the instances already shown stay shown.
 */
#include "core/aura_mutex.h"
#include "core/aura_module.h"
#include "fleet/aura_fleet.h"
#include "fleet/aura_fleet_table.h"
#include "shm/aura_shm.h"

#include "util_mutex.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#define FLEET_RETAINED_KEY "mod_aura_common-fleet-mutex"
/* Changes one snapshot can cause, at most (APPEARED or RESTARTED, BACK,
 * every breaker, fallback, node). */
#define CHANGES_MAX (AURA_FLEET_BREAKERS + 8)

/* Written in post_config and child_init only. */
static apr_global_mutex_t *fleet_mutex;

apr_status_t aura_fleet_table_pre_config(apr_pool_t *pconf)
{
    return ap_mutex_register(pconf, AURA_FLEET_MUTEX_TYPE, NULL,
                             APR_LOCK_DEFAULT, 0);
}

apr_status_t aura_fleet_table_post_config(server_rec *s)
{
    apr_status_t rv = aura_retained_mutex(s, FLEET_RETAINED_KEY,
                                          AURA_FLEET_MUTEX_TYPE,
                                          &fleet_mutex);

    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s, AURA_LOGNO(02308)
                     "cannot create the %s mutex", AURA_FLEET_MUTEX_TYPE);
    }
    return rv;
}

void aura_fleet_table_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv;

    if (!fleet_mutex) {
        return;
    }
    rv = apr_global_mutex_child_init(&fleet_mutex,
                                     apr_global_mutex_lockfile(fleet_mutex),
                                     pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, AURA_LOGNO(02309)
                     "cannot re-open the %s mutex in this child: it keeps "
                     "no snapshot", AURA_FLEET_MUTEX_TYPE);
        fleet_mutex = NULL;
    }
}

static aura_fleet_event_t *ring(void *block)
{
    return block;
}

static aura_fleet_slot_t *slots(void *block)
{
    return (aura_fleet_slot_t *)((char *)block + AURA_FLEET_EVENTS
                                 * sizeof(aura_fleet_event_t));
}

/* Under the mutex. */
static void record(aura_fleet_shm_t *f, void *block,
                   const aura_fleet_event_t *e, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        ring(block)[f->events % AURA_FLEET_EVENTS] = e[i];
        f->events++;
    }
}

static aura_fleet_liveness_e liveness(const aura_fleet_slot_t *sl,
                                      apr_time_t now,
                                      apr_interval_time_t gone_after)
{
    return aura_fleet_liveness(now, sl->last_seen, sl->digest.interval,
                               gone_after);
}

/* The slot for d's instance (*found: it was there), a free one, or the
 * longest gone; NULL when none.  Under the mutex. */
static aura_fleet_slot_t *slot_for(aura_fleet_shm_t *f, void *block,
                                   const aura_fleet_digest_t *d,
                                   apr_time_t now,
                                   apr_interval_time_t gone_after,
                                   int *found)
{
    aura_fleet_slot_t *sl = slots(block), *free_ = NULL, *gone = NULL;
    apr_uint64_t i;

    *found = 0;
    for (i = 0; i < f->slots; i++) {
        if (!sl[i].used) {
            free_ = free_ ? free_ : &sl[i];
        }
        else if (!strcmp(sl[i].digest.instance, d->instance)) {
            *found = 1;
            return &sl[i];
        }
        else if (liveness(&sl[i], now, gone_after) == AURA_FLEET_GONE
                 && (!gone || sl[i].last_seen < gone->last_seen)) {
            gone = &sl[i];
        }
    }
    return free_ ? free_ : gone;
}

/* The changes from what sl holds to d (sl was there: found). */
static int changes(const aura_fleet_slot_t *sl, int found,
                   const aura_fleet_digest_t *d, apr_time_t now,
                   aura_fleet_event_t *ev)
{
    int n = 0;

    if (found && sl->reported != AURA_FLEET_LIVE) {
        memset(ev, 0, sizeof(*ev));
        ev->time = now;
        ev->kind = AURA_FLEET_EV_BACK;
        aura_fleet_copy(ev->instance, sizeof(ev->instance), d->instance);
        apr_cpystrn(ev->from, aura_fleet_liveness_name(
                        (aura_fleet_liveness_e)sl->reported),
                    sizeof(ev->from));
        apr_cpystrn(ev->to, "live", sizeof(ev->to));
        n = 1;
    }
    return n + aura_fleet_diff(found ? &sl->digest : NULL, d, now, ev + n,
                               CHANGES_MAX - n);
}

apr_status_t aura_fleet_store(const aura_fleet_digest_t *d,
                              const char *bytes, apr_size_t len,
                              apr_time_t now,
                              apr_interval_time_t gone_after)
{
    aura_fleet_event_t ev[CHANGES_MAX];
    aura_fleet_slot_t *sl;
    aura_fleet_shm_t *f;
    void *block;
    int found, n;

    f = aura_shm_fleet(&block);
    if (!f || !fleet_mutex) {
        return APR_ENOTIMPL;
    }
    if (len > AURA_FLEET_SNAPSHOT_MAX) {
        return APR_EINVAL;
    }
    if (apr_global_mutex_lock(fleet_mutex) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    sl = slot_for(f, block, d, now, gone_after, &found);
    if (!sl) {
        apr_global_mutex_unlock(fleet_mutex);
        apr_atomic_inc64(&f->full);
        return APR_ENOSPC;
    }
    if (found && !strcmp(sl->digest.epoch, d->epoch)
        && d->seq <= sl->digest.seq) {
        apr_global_mutex_unlock(fleet_mutex);
        apr_atomic_inc64(&f->duplicate);
        return APR_EEXIST;
    }
    n = changes(sl, found, d, now, ev);
    if (!found) {
        sl->first_seen = now;
    }
    sl->digest = *d;
    sl->last_seen = now;
    sl->reported = AURA_FLEET_LIVE;
    memcpy(sl->bytes, bytes, len);
    sl->len = len;
    sl->used = 1;
    record(f, block, ev, n);
    apr_global_mutex_unlock(fleet_mutex);
    apr_atomic_inc64(&f->received);
    return APR_SUCCESS;
}

void aura_fleet_sweep(apr_time_t now, apr_interval_time_t gone_after)
{
    aura_fleet_event_t ev;
    aura_fleet_slot_t *sl;
    aura_fleet_shm_t *f;
    aura_fleet_liveness_e st;
    apr_uint64_t i;
    void *block;

    f = aura_shm_fleet(&block);
    if (!f || !fleet_mutex
        || apr_global_mutex_lock(fleet_mutex) != APR_SUCCESS) {
        return;
    }
    sl = slots(block);
    for (i = 0; i < f->slots; i++) {
        if (!sl[i].used) {
            continue;
        }
        st = liveness(&sl[i], now, gone_after);
        if (st == AURA_FLEET_GONE
            && now - sl[i].last_seen > gone_after + AURA_FLEET_FORGET) {
            sl[i].used = 0;
            continue;
        }
        if ((apr_uint64_t)st == sl[i].reported) {
            continue;
        }
        memset(&ev, 0, sizeof(ev));
        ev.time = now;
        ev.kind = st == AURA_FLEET_GONE ? AURA_FLEET_EV_GONE
                  : st == AURA_FLEET_STALE ? AURA_FLEET_EV_STALE
                                           : AURA_FLEET_EV_BACK;
        aura_fleet_copy(ev.instance, sizeof(ev.instance),
                        sl[i].digest.instance);
        apr_cpystrn(ev.from, aura_fleet_liveness_name(
                        (aura_fleet_liveness_e)sl[i].reported),
                    sizeof(ev.from));
        apr_cpystrn(ev.to, aura_fleet_liveness_name(st), sizeof(ev.to));
        sl[i].reported = st;
        record(f, block, &ev, 1);
    }
    apr_global_mutex_unlock(fleet_mutex);
}

/* The bytes the used slots hold, a NUL each.  Under the mutex. */
static apr_size_t used_bytes(const aura_fleet_shm_t *f, void *block)
{
    const aura_fleet_slot_t *sl = slots(block);
    apr_size_t n = 0;
    apr_uint64_t i;

    for (i = 0; i < f->slots; i++) {
        n += sl[i].used ? (apr_size_t)sl[i].len + 1 : 0;
    }
    return n;
}

/* A buffer for the used slots' bytes, returned with the mutex held
 * (NULL: the lock failed).  Allocated outside the lock, from a first
 * look at what the slots hold, so that a read costs what the fleet
 * holds rather than AuraFleetMaxInstances x 16 KiB; if they grew in
 * between, again; the third time, the most they can hold. */
static char *locked_buffer(apr_pool_t *p, const aura_fleet_shm_t *f,
                           void *block)
{
    apr_size_t size = 0, need;
    char *buf = NULL;
    int attempt;

    for (attempt = 0; ; attempt++) {
        if (apr_global_mutex_lock(fleet_mutex) != APR_SUCCESS) {
            return NULL;
        }
        need = used_bytes(f, block);
        if (buf && need <= size) {
            return buf;
        }
        apr_global_mutex_unlock(fleet_mutex);
        size = attempt < 2 ? need : (apr_size_t)f->slots
                                    * (AURA_FLEET_SNAPSHOT_MAX + 1);
        buf = apr_palloc(p, size ? size : 1);
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const aura_fleet_view_t *)a)->digest.instance,
                  ((const aura_fleet_view_t *)b)->digest.instance);
}

apr_status_t aura_fleet_read(apr_pool_t *p, apr_time_t now,
                             apr_interval_time_t gone_after,
                             apr_array_header_t **instances,
                             apr_array_header_t **events,
                             aura_fleet_shm_t *counters)
{
    aura_fleet_shm_t *f;
    aura_fleet_slot_t *sl;
    apr_uint64_t i, first;
    void *block;
    char *buf;

    f = aura_shm_fleet(&block);
    *instances = apr_array_make(p, f ? (int)f->slots : 1,
                                sizeof(aura_fleet_view_t));
    *events = apr_array_make(p, AURA_FLEET_EVENTS,
                             sizeof(aura_fleet_event_t));
    if (!f || !fleet_mutex) {
        return APR_ENOTIMPL;
    }
    /* Nothing is allocated under the lock: the arrays have room for
     * every slot and event already, the bytes go into buf. */
    buf = locked_buffer(p, f, block);
    if (!buf) {
        return APR_EGENERAL;
    }
    sl = slots(block);
    for (i = 0; i < f->slots; i++) {
        aura_fleet_view_t *v;

        if (!sl[i].used) {
            continue;
        }
        v = apr_array_push(*instances);
        v->digest = sl[i].digest;
        v->first_seen = sl[i].first_seen;
        v->last_seen = sl[i].last_seen;
        v->state = liveness(&sl[i], now, gone_after);
        v->len = (apr_size_t)sl[i].len;
        v->bytes = buf;
        memcpy(v->bytes, sl[i].bytes, v->len);
        v->bytes[v->len] = '\0';
        buf += v->len + 1;
    }
    /* Newest first. */
    first = f->events > AURA_FLEET_EVENTS ? f->events - AURA_FLEET_EVENTS
                                          : 0;
    for (i = f->events; i > first; i--) {
        *(aura_fleet_event_t *)apr_array_push(*events) =
            ring(block)[(i - 1) % AURA_FLEET_EVENTS];
    }
    if (counters) {
        *counters = *f;
    }
    apr_global_mutex_unlock(fleet_mutex);
    qsort((*instances)->elts, (*instances)->nelts, sizeof(aura_fleet_view_t),
          by_name);
    return APR_SUCCESS;
}
