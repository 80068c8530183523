/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_streamtab.h: who holds the long-lived requests (streams), as pure
 * logic on a caller-supplied array of records (the shared segment in
 * httpd, plain memory in the unit tests): the per-address and per-actor
 * caps of AuraStreamMaxPerAddress and AuraStreamMaxPerActor
 * (aura_streams.c).
 *
 * One record per open stream, not one counter per key: a stream holds a
 * worker thread for its whole life, so there are never more streams
 * than workers, and the table has one record per thread the MPM can
 * ever run (ServerLimit x ThreadLimit).  A record names its holder
 * (the child's pid), the keyed hashes of its client's address prefix
 * and of its actor, and a printable address prefix for /health.  So:
 *
 *   - counting a key is a walk of the table (a few hundred records of
 *     a few cache lines each, once per stream admitted, never per
 *     request);
 *   - a dead child's streams are its records, found by its pid: the
 *     parent's reclaim of the in-flight caps (aura_bulkhead.c) frees
 *     them with its other holdings;
 *   - /health can say who holds the budget.
 *
 * Admission without a lock: a thread claims a free record (CAS of the
 * owner word to pid | CLAIMING), writes the keys, publishes the record
 * (CAS to pid: a full barrier), and only then counts the published
 * records of its address and of its actor, itself included.  Over a
 * cap it takes its record back.  Of two threads racing for the last
 * place, each publishes before it counts, so at least one sees the
 * other: a cap is never exceeded; at worst both are refused once.
 *
 * Table full (more streams than the MPM has threads: only while an
 * old generation finishes after a graceful restart): refused
 * (fail-closed), because every record is a busy worker.
 */
#ifndef AURA_STREAMTAB_H
#define AURA_STREAMTAB_H

#include "apr.h"
#include "apr_errno.h"

#define AURA_STREAM_PREFIX_LEN 48     /* "ffff:...:ffff/128" and a NUL */
/* The owner word while its thread writes the record. */
#define AURA_STREAM_CLAIMING (APR_UINT64_C(1) << 63)

typedef struct {
    volatile apr_uint64_t owner;   /* pid; 0: free; | CLAIMING */
    volatile apr_uint64_t addr;    /* keyed hash of the address prefix */
    volatile apr_uint64_t actor;   /* keyed hash of project and actor; 0
                                      none (a public Location) */
    volatile apr_uint64_t what;    /* counter index (service or plane) of
                                      aura_shm.h << 32 | second admitted,
                                      low 32 bits */
    char prefix[AURA_STREAM_PREFIX_LEN];  /* the address prefix, text */
} aura_stream_rec_t;

typedef enum {
    AURA_STREAM_ADMITTED = 0,      /* *idx is its record */
    AURA_STREAM_OVER_ADDRESS,      /* the address has its cap */
    AURA_STREAM_OVER_ACTOR,        /* the actor has its cap */
    AURA_STREAM_TABLE_FULL         /* no free record */
} aura_stream_e;

/**
 * Claim a record for one stream unless its address or actor is at its
 * cap.
 * @param recs, n the table (zero-filled at creation)
 * @param owner the caller's pid (> 0, below 2^62)
 * @param addr the address prefix's keyed hash (never 0)
 * @param actor the actor's keyed hash; 0 for none (no actor cap)
 * @param what stored for /health (aura_stream_rec_t.what)
 * @param prefix the address prefix as text (cut to fit)
 * @param addr_cap, actor_cap the caps; 0: none
 * @param idx set to the record's index when admitted
 * @param count set to the count that decided: the address's or the
 *        actor's, this stream included (admitted: the address's)
 */
aura_stream_e aura_stream_claim(aura_stream_rec_t *recs, apr_uint64_t n,
                                apr_uint64_t owner, apr_uint64_t addr,
                                apr_uint64_t actor, apr_uint64_t what,
                                const char *prefix, apr_uint64_t addr_cap,
                                apr_uint64_t actor_cap, apr_uint64_t *idx,
                                apr_uint64_t *count);

/**
 * Give a record back (its owner only).
 * @return 1 given back, 0 when it was not owner's any more (reclaimed)
 */
int aura_stream_release(aura_stream_rec_t *recs, apr_uint64_t idx,
                        apr_uint64_t owner);

/**
 * Free every record of a dead owner (claimed or published).
 * @return how many were freed
 */
apr_uint64_t aura_stream_reclaim(aura_stream_rec_t *recs, apr_uint64_t n,
                                 apr_uint64_t owner);

/**
 * The published records of an address (addr != 0) or of an actor.
 */
apr_uint64_t aura_stream_count(const aura_stream_rec_t *recs,
                               apr_uint64_t n, apr_uint64_t addr,
                               apr_uint64_t actor);

#endif /* AURA_STREAMTAB_H */
