/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_logout_token.h: the claims of an OpenID Connect Back-Channel
 * Logout 1.0 logout_token (section 2.4), pure logic (aura_logout_token.c:
 * APR and jansson only, so the unit tests link it as the module does).
 * The signature, iss, aud, exp and iat are aura_jwt_verify()'s, as for
 * every token; what this adds is the rest of section 2.6: the events
 * claim, jti, sub and/or sid, no nonce.
 */
#ifndef AURA_LOGOUT_TOKEN_H
#define AURA_LOGOUT_TOKEN_H

#include "apr_pools.h"

#define AURA_LOGOUT_EVENT "http://schemas.openid.net/event/backchannel-logout"

/* The explicit type of a logout_token (section 2.4, RFC 8725). */
#define AURA_LOGOUT_TYP "logout+jwt"

/* What a valid logout_token says (strings in the pool). */
typedef struct {
    const char *sub;       /* NULL when absent */
    const char *sid;       /* NULL when absent */
    const char *jti;
    apr_int64_t iat;       /* seconds */
} aura_logout_claims_t;

/**
 * Check a verified logout_token's payload: iat a number; jti a
 * non-empty string; events an object with the member AURA_LOGOUT_EVENT
 * whose value is a JSON object; sub and/or sid present, each a
 * non-empty string of visible characters without ':' in none of the
 * scope (they may hold ':'), at most max_id bytes; nonce absent.
 * @param json the payload as verified (aura_jwt_claims_t.claims_json)
 * @return NULL and *out filled, or what is wrong (static text), for
 *         the error_description
 */
const char *aura_logout_token_check(apr_pool_t *p, const char *json,
                                    apr_size_t max_id,
                                    aura_logout_claims_t *out);

#endif /* AURA_LOGOUT_TOKEN_H */
