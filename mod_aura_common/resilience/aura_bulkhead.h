/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_bulkhead.h: the in-flight caps per service and per plane
 * (aura_bulkhead.c).
 */
#ifndef AURA_BULKHEAD_H
#define AURA_BULKHEAD_H

#include "aura.h"

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
void aura_cap_metrics(request_rec *r);
/* ---- end of in-flight caps ------------------------------------------- */

#endif /* AURA_BULKHEAD_H */
