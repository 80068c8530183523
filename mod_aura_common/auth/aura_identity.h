/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_identity.h: the rules every value that becomes identity must
 * pass (a token's sub, the key store's project, org and plan) and the
 * parsing of the Authorization header, as pure functions (APR only, no
 * httpd.h: t/unit/test_identity.c links them as they are, and a fuzzer
 * can).
 */
#ifndef AURA_IDENTITY_H
#define AURA_IDENTITY_H

#include "apr.h"

/** Longest sub (Aura-Actor) accepted from a token, in bytes. */
#define AURA_SUB_MAX 255
/** Longest project or organization id, in bytes (as the management
 *  plane's X-Project-Id and path ids). */
#define AURA_ID_MAX 64
/** Longest plan name from the key store, in bytes. */
#define AURA_PLAN_MAX 31

/** A key's actor (Aura-Actor, quota id): this prefix and the first
 *  AURA_KEY_ACTOR_HEX hex digits of the key's SHA-256, never the key.
 *  The gateway's own namespace: no user's actor may start with it. */
#define AURA_KEY_ACTOR_PREFIX "key:"
#define AURA_KEY_ACTOR_HEX 16

/**
 * Whether a value may become identity text: 1 to max bytes, none of
 * them a C0 control character (NUL, CR, LF, TAB...) or DEL.  len is the
 * value's real length (e.g. json_string_length()), so a NUL inside it
 * (JSON "\u0000") is seen rather than cut at.
 * @return 1 when acceptable, 0 otherwise (also for s NULL)
 */
int aura_identity_text_ok(const char *s, apr_size_t len, apr_size_t max);

/**
 * Whether a value that would become a user's actor (a token's sub)
 * falls in the namespace of the keys' actors: it starts with
 * AURA_KEY_ACTOR_PREFIX compared in any case ("key:", "KEY:", "Key:").
 * Such a user would share a key's Aura-Actor, quota and stream budget
 * (and a service that compares without case would not tell them
 * apart), so it is refused, never rewritten.
 * @param s the value (need not be NUL-terminated); NULL: 0
 * @param len its length in bytes
 * @return 1 when reserved, 0 otherwise
 */
int aura_identity_actor_reserved(const char *s, apr_size_t len);

/**
 * Whether s is an id: 1 to max characters of [A-Za-z0-9._-], the rule of
 * the management plane for project and organization ids.
 * @return 1 when acceptable, 0 otherwise (also for s NULL)
 */
int aura_identity_id_ok(const char *s, apr_size_t max);

typedef enum {
    AURA_AUTHZ_NONE = 0,     /**< no Authorization header */
    AURA_AUTHZ_BEARER,       /**< exactly one well-formed Bearer token */
    AURA_AUTHZ_MALFORMED     /**< anything else */
} aura_authz_e;

/**
 * Parse the value of an Authorization header.  The only form accepted is
 * RFC 6750's: "Bearer" (any case), one or more spaces (SP only, not
 * TAB), then a b64token (1*( ALPHA / DIGIT / "-" / "." / "_" / "~" /
 * "+" / "/" ) *"=") and nothing after it.  Everything else is
 * MALFORMED: an empty value, another scheme (Basic, JWT), a bare token,
 * a TAB or comma after Bearer, a second credential after the token
 * (which is also how two Authorization headers look once httpd has
 * merged them into "a, b").
 * @param value the header value, or NULL when there is none
 * @param token set to the token inside value on BEARER, else NULL
 * @return what the value is
 */
aura_authz_e aura_authz_parse(const char *value, const char **token);

#endif /* AURA_IDENTITY_H */
