/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keylife.h: an API key's lifecycle rules, pure functions (APR
 * only, no httpd.h: t/unit/test_keylife.c links them as they are):
 * whether a key has expired, which scope names are valid, whether a
 * key's scopes admit a request (issue #32 point 1).
 */
#ifndef AURA_KEYLIFE_H
#define AURA_KEYLIFE_H

#include "apr_time.h"

/* A scope name: 1 to AURA_KEY_SCOPE_MAX characters of [A-Za-z0-9._-]
 * (a service name such as "db", or an AuraKeyScope group). */
#define AURA_KEY_SCOPE_MAX 63
/* A key's scopes as the key cache keeps them: the names joined by ',',
 * at most this many bytes (a longer list is refused whole). */
#define AURA_KEY_SCOPES_MAX 255

/**
 * Whether a key with this expiry has expired at now.
 * @param expires_at the key's expires_at (apr_time_t, µs since the
 *        epoch); 0 for a key without one
 * @return 1 when now is at or past expires_at, 0 otherwise
 */
int aura_key_expired(apr_time_t expires_at, apr_time_t now);

/**
 * Whether s is a valid scope name (see AURA_KEY_SCOPE_MAX).
 * @param s the name
 * @param len its length
 */
int aura_key_scope_name_ok(const char *s, apr_size_t len);

/**
 * Whether a scope list read from the key store is usable: count names,
 * each valid, joined by single ',', no longer than AURA_KEY_SCOPES_MAX.
 * The count is the array's own (cardinality): an element holding a ','
 * would otherwise read as two scopes and widen the key.  An empty list
 * (count 0, "") is valid: a key that may call nothing.
 * @param list the names joined by ','
 * @param count how many elements the stored array has
 */
int aura_key_scopes_ok(const char *list, long count);

/**
 * Whether a key's scopes admit a request: the list names the request's
 * service or its Location group, compared exactly.
 * @param scopes the key's valid scope list (aura_key_scopes_ok); NULL:
 *        the key has no scopes (every service)
 * @param service the Location's service name ("db", ...); NULL: none
 * @param group the Location's AuraKeyScope group; NULL: none
 * @return 1 when admitted, 0 when not (a scoped key on a Location that
 *         has neither service nor group is not: fail closed)
 */
int aura_key_scope_allows(const char *scopes, const char *service,
                          const char *group);

#endif /* AURA_KEYLIFE_H */
