/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet_table.h: the fleet view's block of the shared segment
 * (aura_fleet_table.c): the latest snapshot of every instance, one slot
 * each, and the ring of recent changes.  aura_shm.c reserves the block
 * (aura_fleet_region_size()) and describes these structs in its layout
 * table; only aura_fleet_table.c reads or writes them.
 */
#ifndef AURA_FLEET_TABLE_H
#define AURA_FLEET_TABLE_H

#include "apr.h"
#include "apr_pools.h"
#include "fleet/aura_fleet_snap.h"

/* Recent changes kept (the oldest is overwritten). */
#define AURA_FLEET_EVENTS 256
/* A gone instance's slot is forgotten (free for another name) this long
 * after it went gone. */
#define AURA_FLEET_FORGET apr_time_from_sec(600)

/* In the segment's header: where the block lies, this instance's
 * publisher's sequence and the counters (all atomics but the ring's
 * head, written under the aura-fleet mutex). */
typedef struct {
    apr_uint64_t offset;               /* of the block, from the base */
    apr_uint64_t slots;                /* instance slots; 0: fleet off */
    volatile apr_uint64_t seq;         /* the publisher's last sequence */
    volatile apr_uint64_t published;   /* snapshots sent */
    volatile apr_uint64_t publish_failed;
    volatile apr_uint64_t too_big;     /* not sent: even trimmed too big */
    volatile apr_uint64_t received;    /* snapshots kept */
    volatile apr_uint64_t malformed;   /* dropped: did not decode */
    volatile apr_uint64_t duplicate;   /* dropped: seq not newer */
    volatile apr_uint64_t full;        /* dropped: no slot free */
    apr_uint64_t events;               /* changes written ever */
} aura_fleet_shm_t;

/* One instance's latest snapshot. */
typedef struct {
    apr_uint64_t used;                 /* 0: free */
    apr_int64_t first_seen;            /* receiver's clock, us */
    apr_int64_t last_seen;
    apr_uint64_t reported;             /* aura_fleet_liveness_e last told */
    aura_fleet_digest_t digest;
    apr_uint64_t len;
    char bytes[AURA_FLEET_SNAPSHOT_MAX];
} aura_fleet_slot_t;

/* A copy of a slot for a reader (no bytes past len). */
typedef struct {
    aura_fleet_digest_t digest;
    apr_time_t first_seen, last_seen;
    aura_fleet_liveness_e state;
    apr_size_t len;
    char *bytes;                       /* NUL-terminated, in the pool */
} aura_fleet_view_t;

/* The block's size for n instance slots (0 when n is 0): the ring of
 * changes, then the slots.  Inline: aura_shm.c sizes the segment with
 * it and must not call into this folder (aura_fleet_table.c calls
 * aura_shm.c). */
static APR_INLINE apr_uint64_t aura_fleet_region_size(apr_uint64_t n)
{
    return n ? AURA_FLEET_EVENTS * sizeof(aura_fleet_event_t)
               + n * sizeof(aura_fleet_slot_t) : 0;
}

#endif /* AURA_FLEET_TABLE_H */
