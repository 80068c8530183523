/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_revoke_index.h: token revocations (docs/security.md, "Token
 * revocation"), pure logic (aura_revoke_index.c: APR only, no httpd.h,
 * so the unit tests link it as the module does): the canonical form of
 * a revocation's target and value, and the per-child hash index that
 * the request path looks a token up in.
 *
 * A revocation is an incident control of kind "revoke"
 * (aura_control_record.h): it travels, merges, expires and is audited
 * as the other controls do.  Its target names what is revoked and in
 * which scope, "sub:<scope>:<subject>", "sid:<scope>:<session>" or
 * "jti:<scope>:<token id>", where the scope is the project the token is
 * bound to on the data plane, or "mgmt" for the management plane's
 * console tokens (a sub is unique only per issuer).  The scope holds no
 * ':' (the rest may), so a target reads one way only.  Its value is the
 * time, in seconds since the epoch, at or before which the tokens it
 * names were issued (their iat).
 *
 * Why an index and not the controls' scan: every request that carries
 * a token looks up three targets; with 10,000 users revoked a scan
 * would read 10,000 records per request, the index reads one or two
 * slots per target.
 */
#ifndef AURA_REVOKE_INDEX_H
#define AURA_REVOKE_INDEX_H

#include "apr_pools.h"
#include "apr_time.h"

/* What a revocation names (its target's prefix). */
typedef enum {
    AURA_REVOKE_NONE = 0,
    AURA_REVOKE_SUB,
    AURA_REVOKE_SID,
    AURA_REVOKE_JTI
} aura_revoke_e;

/* The latest issue time a value may name: year 9999. */
#define AURA_REVOKE_BEFORE_MAX 253402300799L

/* How far ahead of the gateway's clock the console takes a
 * revocation's time, in seconds: an operator's `date +%s` on a machine
 * whose clock runs ahead.  Further ahead, a revocation would be a block
 * of the subject until then, and its expiry (its time plus the token
 * horizon) could pass AURA_REVOKE_TTL_MAX. */
#define AURA_REVOKE_AHEAD_MAX 300

/* The longest a revocation may live after its revision (a record that
 * says more is refused): the longest token horizon, AuraTokenMaxLifetime
 * (7 days at most) plus twice AuraJWTLeeway (1 h at most), from a time
 * at most 1 h ahead (a logout_token's iat may lie the leeway ahead;
 * the console takes AURA_REVOKE_AHEAD_MAX), plus a second: 7 days 3 h
 * and a second, rounded up to 8 days.  So the 7 days of the other
 * controls never cut a revocation short. */
#define AURA_REVOKE_TTL_MAX apr_time_from_sec(8 * 86400)

/**
 * When a revocation of the tokens issued at or before `before` may end:
 * not before every token it names has died.  A token's iat is read in
 * whole seconds (its fraction dropped), so the tokens it names were
 * issued before before + 1 s, and each is accepted at most horizon
 * after its iat.
 * @param before the revocation's time (seconds since the epoch)
 * @param horizon the longest a token is accepted after its iat
 *        (AuraTokenMaxLifetime + 2 x AuraJWTLeeway, the largest of the
 *        VirtualHosts'; aura_token_horizon())
 * @param ttl the operator's ttl, 0 for none
 * @param now wall clock
 * @return the later of now + ttl and (before + 1 s) + horizon; at or
 *         before now (no ttl) when every token it names has died
 */
apr_time_t aura_revoke_expiry(apr_int64_t before,
                              apr_interval_time_t horizon,
                              apr_interval_time_t ttl, apr_time_t now);

/**
 * Check a revocation's target and value and write their canonical form
 * (the same text: only checked).
 * @param ctarget AURA_CONTROL_TARGET_MAX + 1 bytes
 * @param cvalue AURA_CONTROL_VALUE_MAX + 1 bytes
 * @return NULL, or what is wrong (static text)
 */
const char *aura_revoke_canon(const char *target, const char *value,
                              char *ctarget, char *cvalue);

/** What a target names (AURA_REVOKE_NONE: no revocation target). */
aura_revoke_e aura_revoke_kind_of(const char *target);

/** "sub", "sid", "jti" (NULL for NONE). */
const char *aura_revoke_name(aura_revoke_e what);

/** The target "<what>:<scope>:<id>" in p, NULL when scope is empty or
 *  holds a ':' or id is empty. */
const char *aura_revoke_target(apr_pool_t *p, aura_revoke_e what,
                               const char *scope, const char *id);

/* A child's index: open addressing over a power of two of slots, keyed
 * by a keyed 64-bit hash (SipHash, random key per index, so that nobody
 * can make two targets collide on purpose). */
typedef struct aura_revoke_index_t aura_revoke_index_t;

/** An index for at most n revocations (2n slots or more), in p. */
aura_revoke_index_t *aura_revoke_index_make(apr_pool_t *p, apr_uint64_t n);

/** Forget every revocation (before it is made again). */
void aura_revoke_index_clear(aura_revoke_index_t *ix);

/** How many revocations it holds. */
apr_uint64_t aura_revoke_index_count(const aura_revoke_index_t *ix);

/**
 * Add a revocation; a second one of the same target keeps the later
 * time.  Refused (0) when the index holds its n already.
 * @param before the value (seconds); expires: µs, wall clock
 */
int aura_revoke_index_add(aura_revoke_index_t *ix, const char *target,
                          apr_int64_t before, apr_time_t expires);

/** 1 with *before when a revocation of target is in force at now. */
int aura_revoke_index_find(const aura_revoke_index_t *ix,
                           const char *target, apr_time_t now,
                           apr_int64_t *before);

/**
 * Whether a token is revoked: a revocation of its sub, sid or jti in
 * scope whose time is at or after its iat.  A token without iat (iat
 * < 0) was issued at an unknown time: any revocation that names it
 * revokes it (fail closed).
 * @param sub, sid, jti may be NULL (not looked up)
 * @return the first that revokes it (sub, sid, jti), or NONE
 */
aura_revoke_e aura_revoke_match(const aura_revoke_index_t *ix,
                                apr_pool_t *p, const char *scope,
                                const char *sub, const char *sid,
                                const char *jti, apr_int64_t iat,
                                apr_time_t now);

#endif /* AURA_REVOKE_INDEX_H */
