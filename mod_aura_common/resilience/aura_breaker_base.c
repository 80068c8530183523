/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_breaker_base.c: what every user of a breaker word in the shared
 * segment needs besides the state machine (aura_breaker_fsm.c): who
 * holds a probe (this process, for how long), and the check of the
 * target breakers' table the segment runs when it is reused.  Below
 * aura_breaker.c, the key store's breaker (aura_db.c), the quota's
 * (aura_limit_actor.c) and the segment (aura_shm.c): none of them calls
 * back up.
 */
#include "resilience/aura_breaker.h"
#include "shm/aura_shm.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

/* A probe held this long past its route's budget is stale: the verdict
 * of a request that spent its budget comes within milliseconds of it,
 * and the HTTP path's budget is an I/O timeout, not a total. */
#define PROBE_MARGIN_MS 2000
#define PROBE_RUN AURA_TARGET_PROBE_RUN

/* aura_breaker_alive_fn: only "no such process" is dead.  EPERM (a pid
 * reused by another user's process) is alive: the holder's deadline
 * then decides.  A child killed but not yet reaped by the parent
 * (httpd's main loop waits for its children every second) is a zombie
 * and still "alive" until then. */
static int process_alive(apr_uint32_t pid, void *baton)
{
    (void)baton;
    return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* This process, whose probes may be held for budget and a margin. */
void aura_breaker_who(aura_breaker_who_t *who, apr_interval_time_t budget)
{
    apr_int64_t ms = apr_time_as_msec(budget) + PROBE_MARGIN_MS;

    who->pid = (apr_uint32_t)getpid();
    who->hold_ms = ms > 0x7fffffff ? 0x7fffffffU
                 : ms < PROBE_MARGIN_MS ? PROBE_MARGIN_MS : (apr_uint32_t)ms;
    who->alive = process_alive;
    who->baton = NULL;
}

/* Walk the whole table: every key within PROBE_RUN of the slot its hash
 * picks (target_slot() never puts one further), every name terminated,
 * a power of two of slots.  Atomic loads, no lock: a snapshot. */
const char *aura_breaker_validate_targets(aura_target_slot_t *t,
                                          apr_uint64_t n, apr_pool_t *p)
{
    apr_uint64_t i;

    if (!n || (n & (n - 1))) {
        return apr_psprintf(p, "the target table has %" APR_UINT64_T_FMT
                            " slots", n);
    }
    for (i = 0; i < n; i++) {
        apr_uint64_t key = apr_atomic_read64(&t[i].key);

        if (key && ((i - (key & (n - 1))) & (n - 1)) >= PROBE_RUN) {
            return apr_psprintf(p, "target slot %" APR_UINT64_T_FMT " holds "
                                "a key %" APR_UINT64_T_FMT " slots from its "
                                "home", i, (i - (key & (n - 1))) & (n - 1));
        }
        if (!memchr(t[i].name, '\0', sizeof(t[i].name))) {
            return apr_psprintf(p, "target slot %" APR_UINT64_T_FMT ": its "
                                "name is not terminated", i);
        }
    }
    return NULL;
}
