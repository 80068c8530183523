/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_store_conf.c: the key store's directives: the Postgres connection
 * of the key lookup (aura_db.c), the per-child cache of its answers
 * (aura_keystore.c) and the NATS subject that invalidates it.  Global
 * only: the pool and the cache are per child, shared by every
 * VirtualHost.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "auth/aura_keylife.h"
#include "nats/aura_subject.h"
#include "store/aura_store_conf.h"

#include "http_core.h"
#include "apr_strings.h"

const char *aura_set_db_params(cmd_parms *cmd, void *dummy,
                               const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    /* The conninfo may hold a password: it is never logged, and an error
     * here does not repeat it. */
    if (!ap_strchr_c(arg, '=')) {
        return apr_psprintf(cmd->pool, "%s: not a libpq conninfo string "
                            "(keyword=value ...)", cmd->cmd->name);
    }
    aura_cmd_server_conf(cmd)->db_params = arg;
    return NULL;
}

const char *aura_set_db_pool_max(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    return err ? err : aura_parse_int(cmd, arg, 1, 1024,
                                      &aura_cmd_server_conf(cmd)->db_pool_max);
}

const char *aura_set_store_time(cmd_parms *cmd, void *dummy,
                                const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    const char *err = aura_global_only(cmd);
    /* 0 is allowed for the key cache (no caching at all), never for the
     * database budget: without one a query could wait forever. */
    apr_interval_time_t min =
        field == &c->db_timeout ? apr_time_from_msec(10) : 0;

    (void)dummy;
    if (err) {
        return err;
    }
    return aura_parse_duration(cmd, arg, min, apr_time_from_sec(3600),
                               field);
}

const char *aura_set_key_cache_size(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    int n;
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (!err) {
        err = aura_parse_int(cmd, arg, 16, 1 << 22, &n);
    }
    if (err) {
        return err;
    }
    if (n & (n - 1)) {
        return apr_psprintf(cmd->pool, "%s: %d is not a power of two",
                            cmd->cmd->name, n);
    }
    aura_cmd_server_conf(cmd)->key_cache_size = n;
    return NULL;
}

const char *aura_set_invalidation_subject(cmd_parms *cmd, void *dummy,
                                          const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    if (!aura_subject_literal(arg)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject",
                            cmd->cmd->name, arg);
    }
    aura_cmd_server_conf(cmd)->key_invalidation_subject = arg;
    return NULL;
}

/* A Location's group for scoped keys (issue #32): a name a key's scopes
 * can hold, so the same rule as theirs (aura_keylife.h).  A Location
 * without one is reached by the keys whose scopes name its service. */
const char *aura_set_key_scope(cmd_parms *cmd, void *dirv, const char *arg)
{
    aura_dir_conf_t *d = dirv;

    if (!aura_key_scope_name_ok(arg, strlen(arg))) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a scope name "
                            "(1 to %d of [A-Za-z0-9._-])", cmd->cmd->name,
                            arg, AURA_KEY_SCOPE_MAX);
    }
    d->key_scope = arg;
    return NULL;
}
