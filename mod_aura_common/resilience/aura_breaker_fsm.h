/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_breaker_fsm.h: the circuit-breaker state machine as pure logic on one
 * 64-bit word per upstream, so that the shared table can keep it in
 * shared memory and every process and thread update it with one
 * compare-and-swap, without the global mutex.  No httpd.h: cmocka links
 * it as it is.  Times are milliseconds on the caller's monotonic clock,
 * passed in.
 *
 * closed --threshold consecutive failures--> open --cooldown--> half-open
 * half-open admits at most `probes` probes at once; a probe's success
 * closes it, its failure opens it again (and restarts the cooldown).
 *
 * Every function that changes the word does so with at most one
 * successful CAS, and only the caller whose CAS made a transition gets it
 * back as a change value: log the change it returns and each transition
 * is logged once across all processes.
 */
#ifndef AURA_BREAKER_FSM_H
#define AURA_BREAKER_FSM_H

#include "apr.h"
#include "apr_errno.h"

/*
 * The word, least significant bit first.  Zero is "closed, no failures",
 * so a zero-filled segment needs no initialisation.
 *
 *   63                              32 31                  10 9      2 1 0
 *  +----------------------------------+----------------------+--------+---+
 *  |             since_ms             |       failures       |in_fligh|st |
 *  +----------------------------------+----------------------+--------+---+
 *
 *  st        2 bits  aura_breaker_state_e (3 is never written; read as open)
 *  in_flight 8 bits  probes handed out and not yet returned (half-open
 *                    only, else 0); hence probes <= 255
 *  failures 22 bits  consecutive failures, saturating at
 *                    AURA_BRK_MAX_FAILURES; hence the threshold bound
 *  since_ms 32 bits  the caller's clock modulo 2^32 at the last
 *                    transition: open: when it opened; half-open: when
 *                    it went half-open (or the probe-timeout started a
 *                    new round); closed: when it closed (0 if it never
 *                    opened)
 *
 * (state, since_ms) names a period of the breaker: two periods in the
 * same state are at least a cooldown apart, so their since_ms differ
 * (modulo 2^32 ms, ~49.7 days, far beyond any request).  A ticket
 * remembers the period it was granted in, and the period-aware verdicts
 * (aura_breaker_verdict_held()) count only in that period: a request
 * that began before the last transition is no evidence about the new
 * period (issue #16: late 504s of requests admitted before the breaker
 * opened used to push the breaker that had closed again toward opening).
 *
 * The word must be 8-byte aligned (apr_atomic_cas64 on a shared segment).
 */
#define AURA_BRK_MAX_FAILURES  0x3fffffU       /* 2^22 - 1 */
#define AURA_BRK_MAX_PROBES    255U
#define AURA_BRK_MAX_COOLDOWN  0x7fffffffU     /* 2^31 - 1 ms, ~24.8 days */

/** A breaker's configuration; build it with aura_breaker_conf_init(). */
typedef struct {
    apr_uint32_t threshold;   /**< consecutive failures that open it */
    apr_uint32_t cooldown_ms; /**< time open before a probe may pass */
    apr_uint32_t probes;      /**< probes in flight allowed in half-open */
    /** A probe without a verdict for this long is taken as lost (its
     *  process died): the next request gets a new one.  0: never (the
     *  default of aura_breaker_conf_init(); set it after). */
    apr_uint32_t probe_ttl_ms;
} aura_breaker_conf_t;

typedef enum {
    AURA_BRK_CLOSED = 0,
    AURA_BRK_OPEN,
    AURA_BRK_HALF_OPEN
} aura_breaker_state_e;

/** What acquire() grants: the verdict functions need it back. */
typedef enum {
    AURA_BRK_DENY = 0,
    AURA_BRK_PASS,
    AURA_BRK_PROBE
} aura_breaker_ticket_e;

/** The transition this call made, to be logged by its caller only. */
typedef enum {
    AURA_BRK_SAME = 0,
    AURA_BRK_TO_OPEN,
    AURA_BRK_TO_HALF_OPEN,
    AURA_BRK_TO_CLOSED
} aura_breaker_change_e;

/**
 * Set up a configuration.
 * @param c the configuration to fill
 * @param threshold consecutive failures that open it
 *        (1..AURA_BRK_MAX_FAILURES)
 * @param cooldown_ms time open before a probe may pass
 *        (1..AURA_BRK_MAX_COOLDOWN)
 * @param probes probes in flight allowed in half-open
 *        (1..AURA_BRK_MAX_PROBES)
 * @return APR_SUCCESS, or APR_EINVAL when a value is out of range (*c is
 *         then left untouched)
 */
apr_status_t aura_breaker_conf_init(aura_breaker_conf_t *c,
                                    apr_uint32_t threshold,
                                    apr_uint32_t cooldown_ms,
                                    apr_uint32_t probes);

/**
 * Ask to contact the upstream, right before doing so.
 * @param word the shared word
 * @param c the configuration
 * @param now_ms the caller's monotonic clock, ms (it may wrap modulo 2^32)
 * @param change set to the transition this call made, or AURA_BRK_SAME
 *        (may be NULL)
 * @param retry_after_ms on DENY, ms until asking again may succeed: the
 *        cooldown left when open; when half-open and full, 1000 (or the
 *        cooldown if shorter): a probe's verdict may come at any moment,
 *        and no time says when; 0 otherwise (may be NULL)
 * @return PASS when closed (no write to the word); PROBE when half-open
 *         with fewer than c->probes probes in flight, or when open with
 *         the cooldown over and this caller's CAS moved it to half-open
 *         (*change = TO_HALF_OPEN); DENY otherwise.
 *
 * A PROBE must be handed back exactly once: by aura_breaker_success(),
 * aura_breaker_failure() or aura_breaker_release() (an r->pool cleanup),
 * or half-open stays full.  A reading that predates the opening by at
 * most the cooldown (a caller that read its clock before another opened
 * the breaker) counts as "just opened"; any other difference counts
 * modulo 2^32, so a breaker left open and idle for a multiple of 2^32 ms
 * (~49.7 days) waits at most one cooldown more.
 */
aura_breaker_ticket_e aura_breaker_acquire(volatile apr_uint64_t *word,
                                           const aura_breaker_conf_t *c,
                                           apr_uint32_t now_ms,
                                           aura_breaker_change_e *change,
                                           apr_uint32_t *retry_after_ms);

/**
 * The upstream answered well (period-blind: the Redis breaker's verdict
 * follows its acquire within one short call; requests use
 * aura_breaker_verdict_held()).
 * @param word the shared word
 * @param c the configuration
 * @param t the ticket acquire() returned for this request
 * @param now_ms the caller's clock, ms
 * @return TO_CLOSED when a PROBE closed it (failures and in-flight 0);
 *         else SAME: a PASS resets the failures if still closed; a PASS
 *         or PROBE arriving after the state moved on, and DENY, change
 *         nothing.
 */
aura_breaker_change_e aura_breaker_success(volatile apr_uint64_t *word,
                                           const aura_breaker_conf_t *c,
                                           aura_breaker_ticket_e t,
                                           apr_uint32_t now_ms);

/**
 * The upstream failed (the caller decides what counts as a failure).
 * @param word the shared word
 * @param c the configuration
 * @param t the ticket acquire() returned for this request
 * @param now_ms the caller's clock, ms: the cooldown starts here
 * @return TO_OPEN when a PASS reached the threshold while closed, or a
 *         PROBE failed while half-open (in-flight 0, cooldown restarted);
 *         else SAME: a PASS below the threshold only counts; a PASS or
 *         PROBE arriving after the state moved on, and DENY, change
 *         nothing.
 */
aura_breaker_change_e aura_breaker_failure(volatile apr_uint64_t *word,
                                           const aura_breaker_conf_t *c,
                                           aura_breaker_ticket_e t,
                                           apr_uint32_t now_ms);

/**
 * Give back a PROBE that was never used (the client went away) without
 * a verdict: in-flight -1 if still half-open.  PASS and DENY: no-op.
 */
void aura_breaker_release(volatile apr_uint64_t *word,
                          aura_breaker_ticket_e t);

/**
 * Read-only view for metrics and health.
 * @param word a value read from the shared word (apr_atomic_read64)
 * @param failures set to the consecutive failures (may be NULL)
 * @param in_flight set to the probes in flight (may be NULL)
 * @return the state
 */
aura_breaker_state_e aura_breaker_state(apr_uint64_t word,
                                        apr_uint32_t *failures,
                                        apr_uint32_t *in_flight);

/**
 * Read-only view: the since_ms field (see the layout above), e.g. for
 * "open for N s" in health output.  Modulo 2^32, like now_ms.
 */
apr_uint32_t aura_breaker_since(apr_uint64_t word);

/* ---- tickets that know their period and their holder ----------------
 *
 * A probe lost with its process (SIGKILL, a crash) never gets a verdict:
 * half-open stays full and, without a record of who holds it, only the
 * probe-timeout could tell.  So each breaker has AURA_BRK_HOLDERS holder
 * records beside its word, one 64-bit word each:
 *
 *   63                 32 31                    10 9          0
 *  +---------------------+------------------------+------------+
 *  |     deadline_ms     |          pid           | period tag |
 *  +---------------------+------------------------+------------+
 *
 *  deadline_ms 32 bits  the caller's clock when the probe is stale
 *                       (granted + the route's budget + a margin)
 *  pid         22 bits  the holding process (Linux pids are < 2^22;
 *                       a larger pid is not recorded)
 *  tag         10 bits  the low bits of the half-open period's since_ms
 *
 * 0 is a free record (a pid is never 0).  A probe claims a free record,
 * or one of another period, by CAS right after it got its PROBE.  A
 * request that finds half-open full looks at the records of the current
 * period: a holder that is dead (the caller's alive() says so), or past
 * its deadline, loses its probe to that request by CAS on the record;
 * the in-flight count is unchanged (the probe changes hands).  Every
 * verdict or release of a recorded probe first clears its record by CAS
 * from its own value: if that fails, the probe was taken over and the
 * ticket gives no verdict and returns nothing.  So each probe has
 * exactly one owner.  A probe that got no record (more than
 * AURA_BRK_HOLDERS at once, a pid too large, or its process died between
 * the two CASes) is recovered by the probe-timeout only.
 *
 * The records must be 8-byte aligned, like the word.
 */
#define AURA_BRK_HOLDERS 4

/** Is the process pid alive?  0: certainly dead (e.g. kill(pid, 0)
 *  failed with ESRCH); anything else: alive or unknown. */
typedef int aura_breaker_alive_fn(apr_uint32_t pid, void *baton);

/** Who asks, for how long, and how to tell a dead holder. */
typedef struct {
    apr_uint32_t pid;           /**< the caller's process */
    apr_uint32_t hold_ms;       /**< a probe is stale after this long */
    aura_breaker_alive_fn *alive;   /**< NULL: never take over the living */
    void *baton;                /**< passed to alive() */
} aura_breaker_who_t;

/** A ticket: what aura_breaker_acquire_held() granted. */
typedef struct {
    aura_breaker_ticket_e ticket;
    aura_breaker_change_e change;   /**< the transition it made */
    apr_uint32_t period;        /**< since_ms of the period granted in */
    apr_uint32_t retry_after_ms;    /**< on DENY, as aura_breaker_acquire */
    int holder;                 /**< its holder record, -1: none */
    apr_uint64_t mine;          /**< the record's value while it holds */
    int took_over;              /**< it took a dead or stale holder's probe */
    apr_uint32_t lost_pid;      /**< then: that holder's pid */
} aura_breaker_grant_t;

/**
 * aura_breaker_acquire(), plus the period, the holder record, and the
 * recovery of a probe lost with its holder.
 * @param word the shared word
 * @param holders its AURA_BRK_HOLDERS records (NULL: none)
 * @param c the configuration
 * @param now_ms the caller's clock, ms
 * @param who the caller; who->alive is called without any lock, at most
 *        AURA_BRK_HOLDERS times, only when half-open is full
 * @param g filled: ticket, change, period, retry_after_ms, holder...
 * @return g->ticket: PASS and PROBE as aura_breaker_acquire(); also
 *         PROBE when half-open was full but a probe of this period was
 *         held by a dead process or past its deadline (g->took_over)
 */
aura_breaker_ticket_e aura_breaker_acquire_held(volatile apr_uint64_t *word,
                                                volatile apr_uint64_t *holders,
                                                const aura_breaker_conf_t *c,
                                                apr_uint32_t now_ms,
                                                const aura_breaker_who_t *who,
                                                aura_breaker_grant_t *g);

/**
 * The verdict of a granted ticket, counted only in the period it was
 * granted in: a failure or a success of a request that began before the
 * breaker's last transition changes nothing (a success of an older
 * period is dropped too: it says the service worked then, not now; the
 * new period's own requests and probes decide).  A probe that was taken
 * over gives no verdict.
 * @param ok nonzero: success; 0: failure
 * @return the transition made (to be logged), or AURA_BRK_SAME
 */
aura_breaker_change_e aura_breaker_verdict_held(volatile apr_uint64_t *word,
                                                volatile apr_uint64_t *holders,
                                                const aura_breaker_conf_t *c,
                                                const aura_breaker_grant_t *g,
                                                int ok, apr_uint32_t now_ms);

/**
 * Give back a granted ticket without a verdict (see
 * aura_breaker_release()): in-flight -1 only if its period is still the
 * current one and it was not taken over.
 */
void aura_breaker_release_held(volatile apr_uint64_t *word,
                               volatile apr_uint64_t *holders,
                               const aura_breaker_grant_t *g);

/**
 * Read-only view of a holder record.
 * @param rec a value read from a record
 * @param period the word's since_ms: only records of that period count
 * @param pid set to the holder's pid (may be NULL)
 * @param deadline_ms set to its deadline (may be NULL)
 * @return 1 when rec holds a probe of that period, else 0
 */
int aura_breaker_holder(apr_uint64_t rec, apr_uint32_t period,
                        apr_uint32_t *pid, apr_uint32_t *deadline_ms);

#endif /* AURA_BREAKER_FSM_H */
