/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet.h: the fleet view (docs/console.md): each instance
 * publishes a snapshot of its state on NATS (aura_fleet.c), every
 * instance keeps the latest of each in the shared segment
 * (aura_fleet_table.c), and the operator's console shows them
 * (aura_fleet_page.c).
 */
#ifndef AURA_FLEET_H
#define AURA_FLEET_H

#include "aura.h"
#include "fleet/aura_fleet_table.h"

#define AURA_FLEET_MUTEX_TYPE "aura-fleet"
#define AURA_FLEET_WATCHDOG   "aura-fleet"

/* aura_fleet.c: the publisher (a mod_watchdog singleton: one child of
 * the instance at a time) and the subscriber (every child, in a queue
 * group named after the instance, so one child per instance takes each
 * snapshot). */
apr_status_t aura_fleet_pre_config(apr_pool_t *pconf);
apr_status_t aura_fleet_post_config(apr_pool_t *pconf, server_rec *s);
void aura_fleet_child_init(apr_pool_t *pchild, server_rec *s);
/* From register_hooks: the subscriber lives on the child's NATS
 * connection (aura_nats_add_user). */
void aura_fleet_register(void);
/* This instance's name (AuraInstanceName or the host name); NULL while
 * the fleet view is off. */
const char *aura_fleet_instance(void);
/* How long without a snapshot until an instance is gone. */
apr_interval_time_t aura_fleet_gone_after(void);

/* aura_fleet_table.c: the shared block, under the aura-fleet mutex. */
apr_status_t aura_fleet_table_pre_config(apr_pool_t *pconf);
apr_status_t aura_fleet_table_post_config(server_rec *s);
void aura_fleet_table_child_init(apr_pool_t *pchild, server_rec *s);
/**
 * Keep a decoded snapshot as its instance's latest and record the
 * changes it brings.
 * @return APR_SUCCESS kept; APR_EEXIST not newer than the kept one (a
 *         duplicate: nothing changed); APR_ENOSPC no slot (counted);
 *         APR_ENOTIMPL fleet view off; APR_EINVAL too long
 */
apr_status_t aura_fleet_store(const aura_fleet_digest_t *d,
                              const char *bytes, apr_size_t len,
                              apr_time_t now,
                              apr_interval_time_t gone_after);
/* Record instances that went stale or gone since the last sweep, and
 * forget those gone for long (AURA_FLEET_FORGET). */
void aura_fleet_sweep(apr_time_t now, apr_interval_time_t gone_after);
/**
 * A copy of every instance (aura_fleet_view_t, by name) and of the
 * recent changes (aura_fleet_event_t, newest first), in p; counters,
 * if not NULL, receives the block's counters.
 * @return APR_ENOTIMPL when the fleet view is off (empty arrays)
 */
apr_status_t aura_fleet_read(apr_pool_t *p, apr_time_t now,
                             apr_interval_time_t gone_after,
                             apr_array_header_t **instances,
                             apr_array_header_t **events,
                             aura_fleet_shm_t *counters);

/* aura_fleet_page.c: the console's parts (console/aura_console.c lists
 * them): the page, the JSON API and the page's script and style. */
int aura_fleet_page(request_rec *r, const char *rest);
int aura_fleet_api(request_rec *r, const char *rest);
int aura_fleet_css(request_rec *r, const char *rest);
int aura_fleet_js(request_rec *r, const char *rest);
int aura_fleet_icon(request_rec *r, const char *rest);

#endif /* AURA_FLEET_H */
