/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_bulkhead.h: the in-flight caps per service and per plane
 * (aura_bulkhead.c).
 */
#ifndef AURA_BULKHEAD_H
#define AURA_BULKHEAD_H

#include "aura.h"
#include "core/aura_plane.h"

struct json_t;

typedef struct aura_cap_hold_t aura_cap_hold_t;
apr_status_t aura_cap_post_config(apr_pool_t *pconf, server_rec *s);
void aura_cap_child_init(apr_pool_t *pchild, server_rec *s);
void aura_cap_register(void);
/* Right before an upstream call: OK with *hold (NULL when no segment),
 * or 503 service-saturated noted with Retry-After. */
int aura_cap_enter(request_rec *r, int service, aura_cap_hold_t **hold);
/* Gives the slots back now (also done by r->pool's cleanup). */
void aura_cap_leave(aura_cap_hold_t *hold);
void aura_cap_describe(struct json_t *obj);
const char *aura_set_max_in_flight(cmd_parms *cmd, void *dirv,
                                   const char *arg);
const char *aura_set_plane_max_in_flight(cmd_parms *cmd, void *dummy,
                                         const char *arg);
const char *aura_set_shedding(cmd_parms *cmd, void *dirv, int argc,
                              char *const argv[]);
void aura_cap_metrics(request_rec *r);
/* A service's or plane's name by its counter index (in_flight order). */
const char *aura_cap_counter_name(int idx);
/* "service <name>" or "the <plane> plane", in p. */
const char *aura_cap_what(apr_pool_t *p, int idx);
/* One /metrics family over the counters v of every service and plane. */
void aura_cap_series(request_rec *r, const char *name, const char *type,
                     const char *help, volatile apr_uint64_t *v);

/* ---- for aura_streams.c (the long-lived budget) ----------------------
 * A hold is a set of counters of the segment, each by its index in a
 * process record's held[] (AURA_CAP_COUNTERS + i for streams[i]), taken
 * below a cap and counted in this child's record, so that the parent
 * gives back what a killed child held; and the record of a stream.
 * A new, empty hold, given back with r->pool at the latest. */
aura_cap_hold_t *aura_cap_hold_make(request_rec *r);
/* Take counter i below limit (0: none), retrying once after
 * reclaiming dead holders: 1 taken, 0 refused (nothing taken). */
int aura_cap_hold_take(request_rec *r, aura_cap_hold_t *h, int i,
                       apr_uint64_t limit);
/* Give counter i back now, if h holds it. */
void aura_cap_hold_give(aura_cap_hold_t *h, int i);
/* Whether h was given back already (aura_cap_leave()). */
int aura_cap_hold_done(const aura_cap_hold_t *h);
/* Release stream record idx with the hold. */
void aura_cap_hold_set_record(aura_cap_hold_t *h, apr_uint64_t idx);
/* Release the hold's stream record now, if it has one. */
void aura_cap_hold_drop_record(aura_cap_hold_t *h);
/* Held index i (an in-flight cap, or AURA_CAP_COUNTERS + a stream
 * budget) into h below full, or below the request class's share of it
 * (AuraShedding): OK; 503 load-shed noted when the class's share is
 * full and the cap is not; DECLINED when the whole cap is full (the
 * caller refuses in its own words). */
int aura_cap_take_class(request_rec *r, aura_cap_hold_t *h, int i,
                        apr_uint64_t full);
/* The plane's slot into h: OK, or 503 service-saturated noted. */
int aura_cap_enter_plane(request_rec *r, aura_cap_hold_t *h);
/* Gives back what pid held if it is dead: whether anything came back. */
int aura_cap_reclaim_pid(server_rec *s, apr_uint64_t pid);
apr_uint64_t aura_cap_workers(void);
int aura_cap_plane_index(aura_plane_e plane);
/* ---- end of in-flight caps ------------------------------------------- */

#endif /* AURA_BULKHEAD_H */
