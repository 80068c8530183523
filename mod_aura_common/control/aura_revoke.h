/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_revoke.h: the check of a verified token against the revocations
 * in force (aura_revoke.c; docs/security.md, "Token revocation").  The
 * revocations themselves are incident controls of kind "revoke"
 * (control/aura_control.c holds them, aura_revoke_index.h says what
 * they name).
 */
#ifndef AURA_REVOKE_H
#define AURA_REVOKE_H

#include "aura.h"
#include "auth/aura_jwt.h"

/* The scope of the management plane's console tokens. */
#define AURA_REVOKE_SCOPE_MGMT "mgmt"

/**
 * Whether a token is revoked: a lookup in this child's index, no lock
 * but a read lock, no I/O, nothing when no revocation is in force.
 * Whoever holds a token for long (an open stream) can call it again.
 * @param scope the project (data plane) or AURA_REVOKE_SCOPE_MGMT
 * @param sub, sid, jti the token's claims, NULL when absent
 * @param iat its iat in seconds, -1 when absent (then any revocation
 *        of its sub, sid or jti revokes it)
 * @return 0, or what revokes it (aura_revoke_e: sub, sid, jti)
 */
int aura_revoked(apr_pool_t *p, const char *scope, const char *sub,
                 const char *sid, const char *jti, apr_int64_t iat);

/**
 * aura_revoked() on a verified token's payload (its JSON): sid, jti and
 * iat read from it.  0 at once when no revocation is in force.  For an
 * open stream's check (resilience/aura_streamend.c) and the request's.
 */
int aura_revoked_claims(apr_pool_t *p, const char *scope, const char *sub,
                        const char *claims_json);

/** The scope of r's token: AURA_REVOKE_SCOPE_MGMT on the management
 *  plane, the request's project on the data plane (NULL: none). */
const char *aura_revoke_scope(request_rec *r);

/**
 * After a token is verified: 401 token-revoked (WWW-Authenticate
 * Bearer error="invalid_token") when it is revoked, else OK.
 */
int aura_revoke_check(request_rec *r, const aura_jwt_claims_t *claims);

#endif /* AURA_REVOKE_H */
