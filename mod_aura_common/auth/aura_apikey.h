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

#endif /* AURA_APIKEY_H */
