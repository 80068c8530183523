/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keystore.h: API key lookups, cached per child (aura_keystore.c).
 */
#ifndef AURA_KEYSTORE_H
#define AURA_KEYSTORE_H

#include "aura.h"
/* AURA_KEY_ACTOR_PREFIX, AURA_KEY_ACTOR_HEX: a key's actor, in the pure
 * identity rules so that the token check refuses the same namespace. */
#include "auth/aura_identity.h"

/* aura_keystore.c */
void aura_keystore_child_init(apr_pool_t *pchild, server_rec *s);
/* AuraKeyCacheStaleMax: how long past their TTL the store's cached
 * answers may be used while it cannot answer (0: never). */
apr_interval_time_t aura_keystore_stale_max(void);
void aura_keystore_register(void);
/* The last-used flush (aura_keyused.c): the hashes of at most max keys
 * accepted since the last call, as a Postgres text[] literal
 * ("{h1,h2}") in p; their flags are cleared.  *n: how many. */
char *aura_keystore_take_used(apr_pool_t *p, int max, int *n);
/* The key store's word on a key now, outside any request (an open
 * stream's check, aura_streamend.c): APR_SUCCESS with its expires_at
 * (0: none), APR_NOTFOUND (unknown or revoked), anything else when the
 * store did not answer (aura_db_query_bg). */
apr_status_t aura_keystore_recheck(server_rec *s, apr_pool_t *p,
                                   const char *hash, apr_time_t *expires);
void aura_nats_publish_invalidation(request_rec *r, const char *project);

#endif /* AURA_KEYSTORE_H */
