/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_store_conf.h: the key store's directives (aura_store_conf.c): the
 * Postgres connection (aura_db.c) and the per-child key cache with its
 * invalidation subject (aura_keystore.c, aura_nats.c); their defaults
 * and the getters that apply them.
 */
#ifndef AURA_STORE_CONF_H
#define AURA_STORE_CONF_H

#include "core/aura_config.h"

#define AURA_DEFAULT_DB_POOL_MAX       8
#define AURA_DEFAULT_DB_TIMEOUT        apr_time_from_sec(2)
#define AURA_DEFAULT_KEY_CACHE_TTL     apr_time_from_sec(10)
#define AURA_DEFAULT_KEY_CACHE_STALE   apr_time_from_sec(300)
#define AURA_DEFAULT_KEY_CACHE_SIZE    4096
#define AURA_DEFAULT_KEY_INVALIDATION  "aura.keys.invalidate"
#define AURA_DEFAULT_KEY_LAST_USED     apr_time_from_sec(60)

static APR_INLINE int aura_conf_db_pool_max(const aura_server_conf_t *c)
{
    return c->db_pool_max != AURA_UNSET ? c->db_pool_max
                                        : AURA_DEFAULT_DB_POOL_MAX;
}

static APR_INLINE apr_interval_time_t
aura_conf_db_timeout(const aura_server_conf_t *c)
{
    return c->db_timeout != AURA_UNSET ? c->db_timeout
                                       : AURA_DEFAULT_DB_TIMEOUT;
}

static APR_INLINE apr_interval_time_t
aura_conf_key_cache_ttl(const aura_server_conf_t *c)
{
    return c->key_cache_ttl != AURA_UNSET ? c->key_cache_ttl
                                          : AURA_DEFAULT_KEY_CACHE_TTL;
}

static APR_INLINE apr_interval_time_t
aura_conf_key_cache_stale(const aura_server_conf_t *c)
{
    return c->key_cache_stale != AURA_UNSET ? c->key_cache_stale
                                            : AURA_DEFAULT_KEY_CACHE_STALE;
}

static APR_INLINE int aura_conf_key_cache_size(const aura_server_conf_t *c)
{
    return c->key_cache_size != AURA_UNSET ? c->key_cache_size
                                           : AURA_DEFAULT_KEY_CACHE_SIZE;
}

static APR_INLINE const char *
aura_conf_key_invalidation_subject(const aura_server_conf_t *c)
{
    return c->key_invalidation_subject ? c->key_invalidation_subject
                                       : AURA_DEFAULT_KEY_INVALIDATION;
}

/* AuraKeyLastUsedInterval: how often a child writes the last-used time
 * of the keys it accepted (0: never). */
static APR_INLINE apr_interval_time_t
aura_conf_key_last_used(const aura_server_conf_t *c)
{
    return c->key_last_used != AURA_UNSET ? c->key_last_used
                                          : AURA_DEFAULT_KEY_LAST_USED;
}

const char *aura_set_db_params(cmd_parms *cmd, void *dummy,
                               const char *arg);
const char *aura_set_db_pool_max(cmd_parms *cmd, void *dummy,
                                 const char *arg);
const char *aura_set_store_time(cmd_parms *cmd, void *dummy,
                                const char *arg);
const char *aura_set_key_cache_size(cmd_parms *cmd, void *dummy,
                                    const char *arg);
const char *aura_set_invalidation_subject(cmd_parms *cmd, void *dummy,
                                          const char *arg);
const char *aura_set_key_scope(cmd_parms *cmd, void *dirv, const char *arg);

/* The command table's entries (mod_aura_common.c assembles the table). */
#define AURA_STORE_DIRECTIVES \
    AP_INIT_TAKE1("AuraDBParams", aura_set_db_params, NULL, RSRC_CONF, \
                  "libpq connection string of the key store"), \
    AP_INIT_TAKE1("AuraDBPoolMax", aura_set_db_pool_max, NULL, RSRC_CONF, \
                  "Postgres connections per child process, at most"), \
    AP_INIT_TAKE1("AuraDBTimeout", aura_set_store_time, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, db_timeout), \
                  RSRC_CONF, \
                  "Budget of one key store query, connection wait " \
                  "included"), \
    AP_INIT_TAKE1("AuraKeyCacheTTL", aura_set_store_time, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, key_cache_ttl), \
                  RSRC_CONF, \
                  "How long a child trusts a cached key lookup (0: never)"), \
    AP_INIT_TAKE1("AuraKeyCacheStaleMax", aura_set_store_time, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, key_cache_stale), \
                  RSRC_CONF, \
                  "How long past its TTL a cached key lookup is still used " \
                  "while the key store is unavailable (0: never)"), \
    AP_INIT_TAKE1("AuraKeyCacheSize", aura_set_key_cache_size, NULL, \
                  RSRC_CONF, \
                  "Cached key lookups per child process (a power of two)"), \
    AP_INIT_TAKE1("AuraKeyInvalidationSubject", aura_set_invalidation_subject, \
                  NULL, RSRC_CONF, \
                  "NATS subject of key invalidations (payload: a project " \
                  "id)"), \
    AP_INIT_TAKE1("AuraKeyLastUsedInterval", aura_set_store_time, \
                  (void *)APR_OFFSETOF(aura_server_conf_t, key_last_used), \
                  RSRC_CONF, \
                  "How often each child writes the last-used time of the " \
                  "API keys it accepted (0: never)"), \
    AP_INIT_TAKE1("AuraKeyScope", aura_set_key_scope, NULL, ACCESS_CONF, \
                  "The group name an API key's scopes may name to call " \
                  "this Location")

#endif /* AURA_STORE_CONF_H */
