/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_readers.h: the connections still sending their first request
 * (AuraMaxReadingConnections), one record each in the shared segment,
 * and the choice of whom to shed when a listener's reading budget is
 * full (issue #28, point 3).  Pure logic on caller-supplied arrays: the
 * segment in httpd, plain memory in the unit tests.
 *
 * Why shed instead of refusing the newcomer: the budget exists so that
 * slow senders cannot hold every worker, but refusing whoever comes
 * next hands the listener to whoever filled it first: 18 half-sent
 * requests from 3 addresses closed every other new connection.  So a
 * full budget sheds a connection of the holder (an address, an IPv6
 * prefix: aura_prefix_bytes()) that holds the most reading slots, its
 * oldest one (the slowest reader).  A newcomer whose holder has no
 * reader always gets in that way; one whose holder has some only when
 * it would still hold fewer than the victim's holder after the swap
 * (mine + 1 < top): otherwise the newcomer is the one past its share
 * and is refused, and two large holders never shed each other in turn
 * (each shed holds a worker until its child closes it).  A client with
 * no connection reading is thus never refused, and a single holder can
 * keep at most what the others leave it.
 *
 * A record belongs to the child that counted the connection in: only
 * it claims and frees the record (each of its threads its own record,
 * handed out from a per-child free list).  Any child may mark a
 * reading record SHED, by compare-and-swap of its word, which carries a
 * sequence number bumped at every claim: a record freed and claimed
 * again after a shedder looked at it is never shed by mistake.  The
 * owning child then closes the connection (aura_connlimit.c: a
 * thread of its own shuts its socket down within SHED_EVERY).
 */
#ifndef AURA_READERS_H
#define AURA_READERS_H

#include "apr.h"
#include "apr_errno.h"
#include "limit/aura_addr.h"

/* States, the low two bits of a record's word; the rest is a sequence. */
#define AURA_READER_FREE     0
#define AURA_READER_READING  1
#define AURA_READER_SHED     2
#define AURA_READER_STATE(w) ((w) & 3)

/* The default width of an IPv6 holder (AuraReadingIPv6Prefix): one
 * site, as RIRs assign them; a host has any number of /64s. */
#define AURA_DEFAULT_READING_V6_PREFIX 48

/** One connection reading its first request (128 bytes). */
typedef struct {
    volatile apr_uint64_t word;     /* seq << 2 | state */
    apr_uint64_t listener;          /* keyed hash of the listener */
    apr_uint64_t holder;            /* keyed hash of the holder prefix */
    apr_uint64_t since;             /* apr_time_t it was counted in */
    volatile apr_uint64_t deadline; /* apr_time_t: HTTP/2 preface and
                                       SETTINGS due; 0: none */
    apr_uint32_t cap;               /* the listener's budget then */
    apr_uint16_t port;              /* the listener's port */
    unsigned char bits;             /* the holder prefix's width */
    unsigned char h2;               /* 1: it sent an HTTP/2 preface */
    unsigned char prefix[17];       /* the holder: aura_prefix_bytes() */
    unsigned char local[17];        /* the listener's address, as prefix */
    char pad[46];
} aura_conn_reader_t;

/** The records of a journal of n u32 records: one per 4. */
#define AURA_CONN_READERS(records) ((records) / 4)

/**
 * Claim a free record for a connection (owner only): writes the fields
 * then publishes the word.
 * @return the word it now holds (state READING)
 */
apr_uint64_t aura_reader_claim(aura_conn_reader_t *r,
                               const aura_conn_reader_t *from);

/**
 * Free a record (owner only).
 * @return the state it had: READING, or SHED when it was shed
 */
int aura_reader_release(aura_conn_reader_t *r);

/**
 * Mark a reading record SHED, if its word is still seen.
 * @return APR_SUCCESS, or APR_EBUSY when it changed meanwhile
 */
apr_status_t aura_reader_shed(aura_conn_reader_t *r, apr_uint64_t seen);

/** A reader of one listener, as a shedder saw it. */
typedef struct {
    apr_uint64_t holder;
    apr_uint64_t since;
    apr_uint64_t word;              /* for aura_reader_shed() */
    apr_uint64_t index;             /* the caller's: where the record is */
} aura_reader_view_t;

/**
 * Append the READING records of listener among r[0..n) to out.
 * @param base added to each record's position to make its index
 * @param room the most out may take
 * @return the number appended
 */
apr_size_t aura_readers_collect(aura_conn_reader_t *r, apr_size_t n,
                                apr_uint64_t listener, apr_uint64_t base,
                                aura_reader_view_t *out, apr_size_t room);

typedef enum {
    AURA_READERS_REFUSE = 0,        /* the newcomer is the one to close */
    AURA_READERS_SHED               /* shed v[*victim], admit it */
} aura_readers_pick_e;

/** What aura_readers_pick() saw. */
typedef struct {
    apr_size_t victim;              /* SHED: its position in v */
    apr_uint64_t top;               /* the largest holder's slots */
    apr_uint64_t mine;              /* the newcomer's holder's slots */
    apr_uint64_t holders;           /* distinct holders */
} aura_readers_choice_t;

/**
 * Whom to shed when the budget is full: the oldest reader of the holder
 * with the most readers (ties: the holder whose oldest reader is the
 * oldest), unless the newcomer's holder has readers and would not stay
 * below that holder (mine + 1 >= top), or there is no reader to shed.
 * @param v the listener's readers, any order (sorted in place)
 * @param n how many
 * @param newcomer the newcomer's holder hash
 * @param out what was seen and, for SHED, the victim
 */
aura_readers_pick_e aura_readers_pick(aura_reader_view_t *v, apr_size_t n,
                                      apr_uint64_t newcomer,
                                      aura_readers_choice_t *out);

#endif /* AURA_READERS_H */
