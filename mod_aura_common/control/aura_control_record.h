/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_control_record.h: an incident control (docs/console.md,
 * "Incident controls") as a record, pure logic (aura_control_record.c:
 * APR, jansson and OpenSSL only, no httpd.h, so the unit tests link it
 * as the module does): its validation and canonical form, its id, its
 * JSON form on NATS, the rule that merges two copies of it, and the
 * matching of an address or a path against its target.
 *
 * A control is fixed-size and holds no pointer: the same struct is a
 * slot of the shared segment's control table (aura_control.c).
 *
 * Times are wall-clock microseconds (apr_time_t): a control set on one
 * instance expires at the same moment on every instance, which assumes
 * their clocks agree (NTP); "updated" is the revision that decides which
 * of two copies wins.
 */
#ifndef AURA_CONTROL_RECORD_H
#define AURA_CONTROL_RECORD_H

#include "apr_pools.h"
#include "apr_time.h"

#define AURA_CONTROL_ID_HEX     16
#define AURA_CONTROL_TARGET_MAX 160
#define AURA_CONTROL_VALUE_MAX  31
#define AURA_CONTROL_BY_MAX     63
#define AURA_CONTROL_REASON_MAX 200
/* Nothing is permanent: an incident control cannot be forgotten. */
#define AURA_CONTROL_TTL_MAX    apr_time_from_sec(7 * 24 * 3600)
#define AURA_CONTROL_TTL_MIN    apr_time_from_sec(1)
/* A record on NATS is at most this long: anything longer is no record. */
#define AURA_CONTROL_WIRE_MAX   2048
/* Retry-After a maintenance may name (its value), in seconds. */
#define AURA_CONTROL_RETRY_MAX  86400

/* The kinds, in the order they were built.  0 is a free slot. */
typedef enum {
    AURA_CONTROL_FREE = 0,
    AURA_CONTROL_MAINTENANCE,   /* target: a path prefix */
    AURA_CONTROL_BLOCK,         /* addr:<ip/cidr>, key:<16 hex>,
                                   actor:<sub> */
    AURA_CONTROL_DRAIN,         /* a service name */
    AURA_CONTROL_BREAKER,       /* a service name; value open|closed */
    AURA_CONTROL_RATE,          /* a rate-limit zone; value <n>r/s|r/m */
    AURA_CONTROL_QUOTA,         /* a plan; value requests per window */
    AURA_CONTROL_REVOKE,        /* sub:|sid:|jti:<scope>:<id>; value the
                                   issue time revoked (aura_revoke_index.h) */
    AURA_CONTROL_KINDS
} aura_control_kind_e;

/* What a block names (the prefix of its target). */
typedef enum {
    AURA_BLOCK_NONE = 0,
    AURA_BLOCK_ADDR,
    AURA_BLOCK_KEY,
    AURA_BLOCK_ACTOR
} aura_block_e;

typedef struct aura_control_t {
    apr_uint32_t kind;                  /* aura_control_kind_e */
    apr_uint32_t lifted;                /* 1: a tombstone */
    apr_int64_t updated;                /* µs, wall clock: the revision */
    apr_int64_t expires;                /* µs, wall clock */
    char id[AURA_CONTROL_ID_HEX + 1];
    char target[AURA_CONTROL_TARGET_MAX + 1];
    char value[AURA_CONTROL_VALUE_MAX + 1];
    char by[AURA_CONTROL_BY_MAX + 1];   /* the operator (r->user) */
    char reason[AURA_CONTROL_REASON_MAX + 1];
} aura_control_t;

/* An address block's network. */
typedef struct {
    int family;                         /* 4 or 6 */
    int bits;
    unsigned char addr[16];
} aura_control_net_t;

/** "maintenance", "block"...; NULL for no kind. */
const char *aura_control_kind_name(int kind);
/** The kind of a name; AURA_CONTROL_FREE when none. */
int aura_control_kind_of(const char *name);
/** What a block's target names (AURA_BLOCK_NONE: not a block target). */
aura_block_e aura_control_block_of(const char *target);

/**
 * Check a kind's target and value, and write their canonical form (an
 * address block's network with its host bits cleared and its width,
 * "addr:10.0.0.0/8"; a key's hex in lower case), so that two spellings
 * of one control are one control.
 * @param target, value as given (value may be NULL: "")
 * @param ctarget AURA_CONTROL_TARGET_MAX + 1 bytes
 * @param cvalue AURA_CONTROL_VALUE_MAX + 1 bytes
 * @return NULL, or what is wrong (static text or in p)
 */
const char *aura_control_canon(apr_pool_t *p, int kind, const char *target,
                               const char *value, char *ctarget,
                               char *cvalue);

/** The id of (kind, canonical target): 16 lower-case hex digits of
 *  their SHA-256, and a NUL, into out. */
void aura_control_id(int kind, const char *target,
                     char out[AURA_CONTROL_ID_HEX + 1]);

/**
 * A ttl as the API takes it: "90" (seconds), "90s", "10m", "2h", "7d".
 * @return APR_SUCCESS with *out; APR_EINVAL when it is no duration or
 *         lies outside [AURA_CONTROL_TTL_MIN, AURA_CONTROL_TTL_MAX]
 */
apr_status_t aura_control_ttl(const char *text, apr_interval_time_t *out);

/** The record as one line of JSON (no newline), in p. */
char *aura_control_encode(apr_pool_t *p, const aura_control_t *c);

/**
 * A record from NATS (hostile input): at most AURA_CONTROL_WIRE_MAX
 * bytes of JSON, every field present and of its type, each string
 * within its bound and printable, the target and value in canonical
 * form for the kind, the id that of (kind, target).
 * @return NULL and *out filled, or what is wrong (static text or in p)
 */
const char *aura_control_decode(apr_pool_t *p, const char *buf,
                                apr_size_t len, aura_control_t *out);

/**
 * The merge rule: whether copy a replaces copy b of the same control
 * (same id).  The later revision (updated) wins; at equal revisions a
 * tombstone wins, then the later expiry, then the greater value, by and
 * reason (bytewise): every instance picks the same copy.
 * @return 1 when a wins, 0 when b stays (equal copies: 0)
 */
int aura_control_newer(const aura_control_t *a, const aura_control_t *b);

/** 1 when c is in force at now: not lifted, not expired. */
int aura_control_active(const aura_control_t *c, apr_time_t now);

/** Parse "<ip>" or "<ip>/<bits>" (IPv4 or IPv6): APR_SUCCESS or
 *  APR_EINVAL.  An IPv4-mapped IPv6 network is taken as IPv4. */
apr_status_t aura_control_net_parse(const char *text,
                                    aura_control_net_t *net);
/** 1 when the address (family 4 or 6, 4 or 16 bytes; an IPv4-mapped
 *  IPv6 address is its IPv4 address) lies in net. */
int aura_control_net_match(const aura_control_net_t *net, int family,
                           const unsigned char *addr);

/** A rate control's value, "<n>r/s" or "<n>r/m" (n 1-1000000):
 *  APR_SUCCESS with the rate and its period (1 or 60 s), or APR_EINVAL. */
apr_status_t aura_control_rate_value(const char *value, apr_uint64_t *rate,
                                     apr_uint64_t *period_s);

/** Whether rate/period a is below rate/period b (fewer requests per
 *  second), exactly. */
int aura_control_rate_below(apr_uint64_t a_rate, apr_uint64_t a_period,
                            apr_uint64_t b_rate, apr_uint64_t b_period);

/** 1 when path is prefix or below it: "/v1/storage" matches
 *  "/v1/storage" and "/v1/storage/x", never "/v1/storagex". */
int aura_control_path_match(const char *prefix, const char *path);

#endif /* AURA_CONTROL_RECORD_H */
