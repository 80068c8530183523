/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keystore.h: API key lookups, cached per child (aura_keystore.c).
 */
#ifndef AURA_KEYSTORE_H
#define AURA_KEYSTORE_H

#include "aura.h"

/* A key's actor: this prefix and the first 16 hex digits of the key's
 * SHA-256, never the key. */
#define AURA_KEY_ACTOR_PREFIX "key:"
#define AURA_KEY_ACTOR_HEX 16

/* What the key store says about a key. */
typedef struct {
    const char *project;
    const char *org;
    const char *plan;
    const char *key_role;
    const char *actor;      /**< set whatever the answer, for the logs */
} aura_key_identity_t;

/* aura_keystore.c */
void aura_keystore_child_init(apr_pool_t *pchild, server_rec *s);
/* A well-formed key's identity: APR_NOTFOUND for an unknown or revoked
 * key, APR_EINVAL when its row holds a value that cannot be an identity
 * (an id longer than AURA_ID_MAX or outside [A-Za-z0-9._-], a plan that
 * is not printable: logged, refused whole, never truncated), another
 * error when the store cannot say.  id->actor is set in every case. */
apr_status_t aura_keystore_lookup(request_rec *r, const char *key,
                                  aura_key_identity_t *id);
void aura_keystore_invalidate_project(const char *project);
/* AuraKeyCacheStaleMax: how long past their TTL the store's cached
 * answers may be used while it cannot answer (0: never). */
apr_interval_time_t aura_keystore_stale_max(void);
void aura_keystore_register(void);
void aura_nats_publish_invalidation(request_rec *r, const char *project);

#endif /* AURA_KEYSTORE_H */
