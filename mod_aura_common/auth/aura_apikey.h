/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_apikey.h: API key parsing, pure functions (APR and OpenSSL only,
 * no httpd.h: t/unit/test_apikey.c links them as they are).
 */
#ifndef AURA_APIKEY_H
#define AURA_APIKEY_H

#include "apr_pools.h"

/* Keys longer than this are refused before any hashing or lookup. */
#define AURA_APIKEY_MAX 256
#define AURA_APIKEY_MIN 16

/* The query parameter that may carry a key (streaming Locations only). */
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
 * Take the apikey parameter out of a query string.
 * @param p pool for the results
 * @param args the query string without '?', or NULL
 * @param key set to the decoded value of the first apikey parameter, or
 *        NULL when there is none
 * @param rest set to the query without any apikey parameter (NULL when
 *        nothing is left)
 * @return APR_SUCCESS; APR_EINVAL when apikey appears more than once or
 *         its value does not decode (ambiguous: refuse the request)
 */
apr_status_t aura_apikey_from_query(apr_pool_t *p, const char *args,
                                    const char **key, const char **rest);

#endif /* AURA_APIKEY_H */
