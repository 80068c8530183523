/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_conntable.h: the per-address count of open connections
 * (AuraMaxConnectionsPerAddress), as pure logic on caller-supplied
 * arrays (the shared segment in httpd, plain memory in the unit tests).
 *
 * The table is set-associative as the rate limiter's (aura_gcra_table.h):
 * the low bits of a key's keyed hash pick a set of AURA_CONN_WAYS slots.
 * A slot is one 64-bit word, the key's tag (the hash's upper 40 bits)
 * and its count of open connections (the lower 24), so that counting a
 * connection in, counting it out and taking over a slot are each one
 * compare-and-swap: no lock, no torn state.  A slot whose count is zero
 * holds nothing and may be taken over by any key; a slot with a count
 * is never taken over, so a flood of other addresses cannot reset an
 * address's count.  When every slot of a set holds a count, the
 * connection is admitted uncounted (AURA_CONN_FULL): fail-open, as the
 * rate limiter, because a full set means at least AURA_CONN_WAYS other
 * addresses with open connections hashed alike, not that this one
 * abuses; the caller counts and logs it.  Two addresses whose hashes
 * share set and tag share a count: with a keyed 64-bit hash that is
 * chance (2^-40 per pair within a set), never an attacker's choice.
 *
 * Killed children: a child that dies by SIGKILL never counts its
 * connections out.  Each child therefore keeps a journal in the
 * segment: one record (the slot's index + 1) per connection it counted
 * in, cleared when it counts the connection out.  When the child is
 * gone (the parent's child_status hook, or a later child that finds its
 * owner dead), aura_conn_reclaim() counts out whatever its journal still
 * holds.  A journal is written by its owning child only (records by
 * that child's threads, each its own record) and reclaimed only once
 * the owner is dead, claimed by compare-and-swap of the owner word.
 */
#ifndef AURA_CONNTABLE_H
#define AURA_CONNTABLE_H

#include "apr.h"
#include "apr_errno.h"

#define AURA_CONN_WAYS       8
#define AURA_CONN_COUNT_BITS 24
#define AURA_CONN_COUNT_MASK ((APR_UINT64_C(1) << AURA_CONN_COUNT_BITS) - 1)

/** One slot: the word, and the second of its last "refused" log line. */
typedef struct {
    volatile apr_uint64_t word;    /* tag << 24 | count; count 0: free */
    volatile apr_uint64_t logged;  /* apr_time_sec of its last log line */
} aura_conn_slot_t;

typedef enum {
    AURA_CONN_ADMITTED = 0,        /* counted in: *slot is its index */
    AURA_CONN_REFUSED,             /* the address is at its cap */
    AURA_CONN_FULL                 /* no slot: admitted, uncounted */
} aura_conn_e;

/**
 * Number of sets for at least entries slots: a power of two, >= 1.
 */
apr_uint64_t aura_conn_sets(apr_uint64_t entries);

/**
 * Count one connection of key in, unless the key already has cap.
 * @param slots sets * AURA_CONN_WAYS slots, zero-filled at creation
 * @param sets a power of two (aura_conn_sets())
 * @param hash the key's keyed 64-bit hash
 * @param cap the most connections the key may have open (>= 1)
 * @param slot set to the index of the key's slot (ADMITTED, REFUSED)
 * @param count set to the key's count after the call (ADMITTED: with
 *        this connection; REFUSED: the count that refused it)
 */
aura_conn_e aura_conn_enter(aura_conn_slot_t *slots, apr_uint64_t sets,
                            apr_uint64_t hash, apr_uint64_t cap,
                            apr_uint64_t *slot, apr_uint64_t *count);

/**
 * Count one connection out of slot (a count of zero stays zero: a slot
 * reclaimed twice can never wrap).
 * @return the count left
 */
apr_uint64_t aura_conn_leave(aura_conn_slot_t *slots, apr_uint64_t slot);

/** A child's journal (records follow the header in the segment). */
typedef struct {
    volatile apr_uint64_t owner;   /* pid of the owning child; 0: free */
    volatile apr_uint64_t reclaimed; /* connections counted out for dead
                                        owners, over its lifetime */
} aura_conn_journal_t;

/* The owner word while a reclaimer empties the journal. */
#define AURA_CONN_RECLAIMING APR_UINT64_C(0xffffffffffffffff)

/** The records of journal j (records[i] = slot index + 1; 0: none). */
#define AURA_CONN_RECORDS(j) \
    ((volatile apr_uint32_t *)((char *)(j) + sizeof(aura_conn_journal_t)))

/**
 * Claim a free journal for owner (a live pid): CAS of the owner word.
 * @return APR_SUCCESS, or APR_EBUSY when it is not free
 */
apr_status_t aura_conn_journal_claim(aura_conn_journal_t *j,
                                     apr_uint64_t owner);

/**
 * Empty the journal of a dead owner: count out every connection it
 * still records, clear the records, free the journal.  Only the caller
 * whose compare-and-swap of the owner word wins does it.
 * @param j the journal
 * @param records its number of records
 * @param owner the dead owner it must still name
 * @param slots, nslots the table the records point into
 * @param n set to the number of connections counted out
 * @return APR_SUCCESS; APR_EBUSY when j is not owner's (any more)
 */
apr_status_t aura_conn_reclaim(aura_conn_journal_t *j,
                               apr_uint32_t records, apr_uint64_t owner,
                               aura_conn_slot_t *slots, apr_uint64_t nslots,
                               apr_uint64_t *n);

/** What a walk of the table found (aura_conn_census()). */
typedef struct {
    apr_uint64_t used;        /**< slots holding a count */
    apr_uint64_t connections; /**< the sum of the counts */
    apr_uint64_t largest;     /**< the largest count */
} aura_conn_census_t;

/**
 * Walk the table with atomic loads (a snapshot under traffic).
 */
void aura_conn_census(aura_conn_slot_t *slots, apr_uint64_t sets,
                      aura_conn_census_t *out);

#endif /* AURA_CONNTABLE_H */
