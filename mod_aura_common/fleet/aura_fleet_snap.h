/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet_snap.h: the fleet view's snapshots as pure logic (APR and
 * jansson only, no httpd.h: t/unit/test_fleet.c links it as it is).
 * An instance publishes its state as one JSON object on NATS
 * (aura_fleet.c); every instance keeps the latest of each
 * (aura_fleet_table.c).  What arrives is hostile input: it is decoded
 * here with bounds into a fixed digest (what the page's rows and the
 * recent changes need), and two digests of one instance give the
 * changes between them.  docs/console.md describes the format.
 */
#ifndef AURA_FLEET_SNAP_H
#define AURA_FLEET_SNAP_H

#include "apr.h"
#include "apr_pools.h"
#include "apr_time.h"

struct json_t;

/* The snapshot format's version ("fleet" member). */
#define AURA_FLEET_FORMAT 1
/* A snapshot's bytes at most: what a slot of the shared segment holds.
 * The publisher trims to it (and to NATS's max_payload); a receiver
 * drops a bigger one. */
#define AURA_FLEET_SNAPSHOT_MAX 16384
/* An instance name's bytes at most (plus the NUL). */
#define AURA_FLEET_NAME_MAX 64
/* The epoch: the instance's shared segment id (hex), which changes when
 * its state starts afresh (a stop and start), with its sequence. */
#define AURA_FLEET_EPOCH_MAX 40
/* "<url> <server id>" of the publishing child's NATS node. */
#define AURA_FLEET_NODE_MAX 192
/* Breakers a digest holds (services, store, redis): more is malformed. */
#define AURA_FLEET_BREAKERS 24
#define AURA_FLEET_BREAKER_NAME 32
/* An instance is stale after this many of its intervals without a
 * snapshot. */
#define AURA_FLEET_STALE_INTERVALS 3
/* The bounds a snapshot's interval_ms must lie within. */
#define AURA_FLEET_INTERVAL_MIN_MS 50
#define AURA_FLEET_INTERVAL_MAX_MS 3600000

typedef enum {
    AURA_FLEET_BRK_CLOSED = 0,
    AURA_FLEET_BRK_OPEN,
    AURA_FLEET_BRK_HALF_OPEN
} aura_fleet_brk_e;

typedef struct {
    char name[AURA_FLEET_BREAKER_NAME];
    apr_uint32_t state;                 /* aura_fleet_brk_e */
    apr_uint32_t pad;
} aura_fleet_brk_t;

/* What one snapshot says, bounded: fixed arrays, NUL-terminated. */
typedef struct {
    char instance[AURA_FLEET_NAME_MAX];
    char epoch[AURA_FLEET_EPOCH_MAX];
    char node[AURA_FLEET_NODE_MAX];     /* "" when not connected */
    apr_uint64_t seq;
    apr_int64_t sent;                   /* sender's clock, us */
    apr_int64_t interval;               /* us */
    apr_uint32_t fallback;              /* actor quota on its fallback */
    apr_uint32_t nbreakers;
    aura_fleet_brk_t breakers[AURA_FLEET_BREAKERS];
} aura_fleet_digest_t;

typedef enum {
    AURA_FLEET_EV_APPEARED = 1,     /* first snapshot of a name */
    AURA_FLEET_EV_RESTARTED,        /* another epoch */
    AURA_FLEET_EV_BREAKER,          /* what: the breaker; from, to: states */
    AURA_FLEET_EV_FALLBACK_ENTERED, /* actor quota on the local fallback */
    AURA_FLEET_EV_FALLBACK_LEFT,
    AURA_FLEET_EV_NODE,             /* from, to: NATS nodes */
    AURA_FLEET_EV_STALE,            /* no snapshot for 3 intervals */
    AURA_FLEET_EV_GONE,             /* none for AuraFleetGoneAfter */
    AURA_FLEET_EV_BACK              /* a snapshot after stale or gone */
} aura_fleet_event_e;

#define AURA_FLEET_EV_TEXT 128

/* One change, as the ring of recent changes keeps it. */
typedef struct {
    apr_int64_t time;                   /* receiver's clock, us */
    apr_uint64_t kind;                  /* aura_fleet_event_e */
    char instance[AURA_FLEET_NAME_MAX];
    char what[AURA_FLEET_BREAKER_NAME];
    char from[AURA_FLEET_EV_TEXT];
    char to[AURA_FLEET_EV_TEXT];
} aura_fleet_event_t;

typedef enum {
    AURA_FLEET_LIVE = 0,
    AURA_FLEET_STALE,
    AURA_FLEET_GONE
} aura_fleet_liveness_e;

/**
 * Decode a snapshot received from NATS, with bounds: at most
 * AURA_FLEET_SNAPSHOT_MAX bytes, a JSON object of format
 * AURA_FLEET_FORMAT with a valid instance name, epoch, seq, sent and
 * interval_ms; breakers and the NATS node within the digest's bounds.
 * @param buf, len the payload (need not be NUL-terminated)
 * @param d the digest, filled on success
 * @param doc if not NULL, receives the parsed document on success (the
 *        caller json_decref()s it)
 * @return APR_SUCCESS, or APR_EINVAL with *why (static text) saying
 *         what was wrong
 */
apr_status_t aura_fleet_decode(const char *buf, apr_size_t len,
                               aura_fleet_digest_t *d,
                               struct json_t **doc, const char **why);

/**
 * Whether name can be an instance name: 1 to AURA_FLEET_NAME_MAX - 1
 * bytes, no control character (the UTF-8 jansson accepts otherwise:
 * names are escaped wherever they are shown).
 */
int aura_fleet_name_ok(const char *name);

/**
 * The subject token an instance name is published under: [A-Za-z0-9_-]
 * as they are, every other byte as %HH (a subject token holds no '.',
 * '*', '>' or white space).  At most 3 x AURA_FLEET_NAME_MAX bytes.
 */
const char *aura_fleet_token(apr_pool_t *p, const char *name);

/* Whether token is aura_fleet_token(name): a snapshot's subject must
 * name the instance it describes. */
int aura_fleet_token_matches(const char *token, const char *name);

/**
 * Serialize a snapshot within max bytes.  When the whole document does
 * not fit, the bulky parts go first, in this order: the dedicated
 * targets' breakers, the per-child holdings, the connections, the
 * streams, the zones' tables, the shared segment's counters; what went
 * is listed in "trimmed".  The document is changed accordingly.
 * @param doc the snapshot (an object)
 * @param max the bound (AURA_FLEET_SNAPSHOT_MAX, or less when NATS's
 *        max_payload is smaller)
 * @param len receives the length
 * @return the text (free() it), or NULL when even the trimmed document
 *         does not fit (the snapshot is not sent)
 */
char *aura_fleet_encode(struct json_t *doc, apr_size_t max,
                        apr_size_t *len);

/**
 * The changes from old to new (one instance's consecutive snapshots):
 * APPEARED when old is NULL, RESTARTED for another epoch, then each
 * breaker whose state changed (a breaker absent from one side counts as
 * closed there), the fallback entered or left, the NATS node changed.
 * @param out room for max changes; time and instance filled, what, from
 *        and to NUL-terminated
 * @return how many were written (at most max)
 */
int aura_fleet_diff(const aura_fleet_digest_t *old,
                    const aura_fleet_digest_t *new_, apr_int64_t now,
                    aura_fleet_event_t *out, int max);

/**
 * Live, stale or gone: stale when nothing arrived for
 * AURA_FLEET_STALE_INTERVALS of the instance's own interval, gone when
 * nothing arrived for gone_after.  Ages are on the receiver's clock
 * (when each snapshot arrived), so clocks of instances need not agree.
 */
aura_fleet_liveness_e aura_fleet_liveness(apr_time_t now,
                                          apr_time_t last_seen,
                                          apr_interval_time_t interval,
                                          apr_interval_time_t gone_after);

/* "live", "stale", "gone"; "closed", "open", "half-open"; the event
 * kinds' names ("breaker", "fallback-entered", ...). */
const char *aura_fleet_liveness_name(aura_fleet_liveness_e l);
const char *aura_fleet_brk_name(apr_uint32_t state);
const char *aura_fleet_event_name(apr_uint64_t kind);

/* Bounded copy: 0 when src did not fit (dst then holds nothing). */
int aura_fleet_copy(char *dst, apr_size_t size, const char *src);

#endif /* AURA_FLEET_SNAP_H */
