/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_apikey.h: API key parsing, pure functions (APR and OpenSSL only,
 * no httpd.h: t/unit/test_apikey.c links them as they are).
 */
#ifndef AURA_APIKEY_H
#define AURA_APIKEY_H

#include "apr_pools.h"
#include "apr_tables.h"

/* Keys longer than this are refused before any hashing or lookup. */
#define AURA_APIKEY_MAX 256
#define AURA_APIKEY_MIN 16

/* The query parameter that may carry a key (streaming Locations only),
 * in its flat form: every spelling of it is taken out of the query. */
#define AURA_APIKEY_PARAM "apikey"

/**
 * Whether a key is well-formed: AURA_APIKEY_MIN to AURA_APIKEY_MAX
 * characters of [A-Za-z0-9._~-].  Anything else is refused without a
 * database lookup (an attacker's junk must cost nothing).
 */
int aura_apikey_well_formed(const char *key);

/**
 * Lower-case hex SHA-256 of the key: what the key store holds.
 * @param out 65 bytes
 */
void aura_apikey_hash(const char *key, char out[65]);

/**
 * Whether a query parameter's name is the key parameter in some
 * spelling: its flat form (aura_param_name_flat: decoded up to three
 * times, ASCII letters and digits only, lower case) is "apikey" or
 * "xapikey".  "APIKEY", "api%6Bey", "api_key", "Api-Key", "x-api-key",
 * "apikey[]" all are.
 * @param name the name as sent (not NUL-terminated)
 * @param len its length; a name longer than AURA_REDACT_NAME_MAX is not
 */
int aura_apikey_param_name(const char *name, apr_size_t len);

/**
 * Take every key parameter (aura_apikey_param_name) out of a query
 * string.  Parameters are separated by '&' or ';'.
 * @param p pool for the results
 * @param args the query string without '?', or NULL
 * @param keys set to the values of the key parameters, form-decoded (%XX
 *        and '+'), in order (const char *; "" for a parameter without
 *        '='; NULL for a value with a bad escape or a NUL); NULL when
 *        there is none
 * @param rest set to the query without them: the other parameters in
 *        order, each after the separator that preceded it, empty ones
 *        dropped (NULL when nothing is left); args itself when there is
 *        no key parameter
 * @return how many key parameters there were.  More than one, or one
 *         whose value is NULL, is ambiguous: the caller refuses it.
 */
int aura_apikey_from_query(apr_pool_t *p, const char *args,
                           apr_array_header_t **keys, const char **rest);

/** What an Authorization bearer is, next to the request's API key. */
typedef enum {
    AURA_BEARER_TOKEN = 0,   /**< anything else: verified as a token */
    AURA_BEARER_SAME_KEY,    /**< byte for byte the request's own key */
    AURA_BEARER_OTHER_KEY    /**< shaped like a key, and not that one */
} aura_bearer_kind_e;

/**
 * Whether two keys are the same, in time that does not depend on where
 * they first differ (CRYPTO_memcmp): the bearer is the client's, the
 * key a secret it may be guessing byte by byte.  Only the lengths are
 * compared first: a key's length is no secret (the form is public).
 * @return 1 when equal, 0 otherwise (also when either is NULL)
 */
int aura_apikey_equal(const char *a, const char *b);

/**
 * Whether a bearer credential has the form of an API key rather than of
 * a token: aura_apikey_well_formed(), and not a JWS compact
 * serialization (three parts joined by exactly two '.'), which is
 * verified as a token whatever its characters.
 */
int aura_apikey_shaped(const char *s);

/**
 * The SDK rule (issue #30): stock SDKs of this space send the project
 * key both as apikey and as "Authorization: Bearer <key>" when nobody is
 * signed in.  A bearer that is exactly the key presented in the same
 * request is no user token (SAME_KEY: the request is what the key makes
 * it); one shaped like a key but another (OTHER_KEY) is refused by the
 * caller with its own problem type; anything else is a token, verified
 * as before (an invalid one stays a 401, never a downgrade).
 * The shape is decided from the string alone, never by a key lookup:
 * whether some other string is a key of some project is not something
 * a holder of one key may learn from the answer.
 * @param token the bearer (aura_authz_parse); NULL: TOKEN
 * @param key the API key the request presented; NULL: never SAME_KEY
 */
aura_bearer_kind_e aura_apikey_bearer_kind(const char *token,
                                           const char *key);

#endif /* AURA_APIKEY_H */
