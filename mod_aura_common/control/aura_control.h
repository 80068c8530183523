/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_control.h: the incident controls of an instance (aura_control.c):
 * the table in the shared segment, each child's copy of the controls in
 * force, and the checks the request path makes against it.  The fleet
 * (NATS) is aura_control_nats.c's; the API and page are the console's
 * (console/aura_console_controls.c).
 */
#ifndef AURA_CONTROL_H
#define AURA_CONTROL_H

#include "aura.h"
#include "control/aura_control_record.h"

#define AURA_CONTROL_MUTEX_TYPE "aura-control"

apr_status_t aura_control_pre_config(apr_pool_t *pconf);
apr_status_t aura_control_post_config(apr_pool_t *pconf, server_rec *s);
void aura_control_child_init(apr_pool_t *pchild, server_rec *s);
/* The early check (access_checker_ex, before the planes' own). */
void aura_control_register(void);

/* What a merge did to the table. */
typedef enum {
    AURA_CONTROL_ADDED,      /* a new control */
    AURA_CONTROL_REPLACED,   /* a newer copy of one it had */
    AURA_CONTROL_KEPT,       /* its copy is as new or newer: unchanged */
    AURA_CONTROL_EXPIRED,    /* the copy has expired: not kept */
    AURA_CONTROL_FULL        /* no slot for it: not kept */
} aura_control_merge_e;

/**
 * Merge a copy of a control into the table by the merge rule
 * (aura_control_newer): under the aura-control mutex, O(slots), no I/O.
 * Expired controls are reaped when a slot is needed.
 * @param c the copy (validated)
 * @param now wall clock
 * @param before the control as it was (kind FREE when it was not
 *        there); may be NULL
 */
aura_control_merge_e aura_control_merge(const aura_control_t *c,
                                        apr_time_t now,
                                        aura_control_t *before);

/** A copy of the control of this id: APR_SUCCESS, APR_NOTFOUND, or
 *  APR_EGENERAL without a table. */
apr_status_t aura_control_find(const char *id, aura_control_t *out);

/** Copies of every control the table holds (lifted and expired ones
 *  too, until they are reaped), as an array of aura_control_t in p. */
apr_array_header_t *aura_control_list(apr_pool_t *p);

/** This instance's id on NATS (its queue group): 32 hex digits. */
const char *aura_control_instance(void);

/* Log "table full" at most once a second per instance. */
void aura_control_log_full(server_rec *s, const aura_control_t *c);

/** A service's breaker as a control forces it: 1 open, 0 closed, -1
 *  not forced; *until: when the control expires. */
int aura_control_breaker(int service, apr_time_t *until);

/** A lower rate a control sets for this zone (its value): 1 with the
 *  rate and period, 0 when none is in force.  The caller applies it
 *  only when it is below the zone's own. */
int aura_control_rate(const char *zone, apr_uint64_t *rate,
                      apr_uint64_t *period_s);

/** A lower quota a control sets for this plan: 1 with *limit (requests
 *  per the quota's own window), 0 when none is in force.  The caller
 *  applies it only when it is below the quota it would use. */
int aura_control_quota(const char *plan, apr_int64_t *limit);

/* aura_control_key() is in aura.h: the data plane calls it. */

/** After a token is verified (rq->actor): 403 blocked when a control
 *  blocks actor:<its sub>, else OK. */
int aura_control_actor(request_rec *r);

/** 1 when some revocation (kind revoke) is in force: the fast path of
 *  every request with a token (atomic reads, the copy made current). */
int aura_control_revocations(void);

/** Whether a token is revoked, looked up in the child's index of the
 *  revocations in force (aura_revoke_match(), which says how): the
 *  aura_revoke_e that revokes it, 0 when none.  No lock but the child's
 *  read lock, no I/O; p for the targets' text. */
int aura_control_revoked(apr_pool_t *p, const char *scope,
                         const char *sub, const char *sid, const char *jti,
                         apr_int64_t iat);

/** Whether a block of this target ("key:<hash prefix>",
 *  "actor:<sub>") is in force at now; callable outside a request (an
 *  open stream's check, aura_streamend.c). */
int aura_control_blocked(const char *target, apr_time_t now);
#endif /* AURA_CONTROL_H */
