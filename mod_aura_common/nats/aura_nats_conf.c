/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nats_conf.c: the directives of the NATS connection every child
 * opens (aura_nats.c): servers, name, timeouts, reconnects.  Global
 * only: one connection per child serves every VirtualHost.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "nats/aura_nats_conf.h"

#include "http_core.h"
#include "apr_strings.h"

#define MAX_NATS_WAIT       apr_time_from_sec(600)

const char *aura_set_nats_servers(cmd_parms *cmd, void *dummy,
                                  const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    if (ap_strstr_c(arg, "://") == NULL
        || (strncasecmp(arg, "nats://", 7) && strncasecmp(arg, "tls://", 6))
        || strlen(arg) < 8) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS URL "
                            "(nats://host:port or tls://host:port)",
                            cmd->cmd->name, arg);
    }
    if (!c->nats_servers) {
        c->nats_servers = apr_array_make(cmd->pool, 2, sizeof(const char *));
    }
    APR_ARRAY_PUSH(c->nats_servers, const char *) = arg;
    return NULL;
}

const char *aura_set_nats_name(cmd_parms *cmd, void *dummy,
                               const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    aura_cmd_server_conf(cmd)->nats_name = arg;
    return NULL;
}

const char *aura_set_nats_time(cmd_parms *cmd, void *dummy,
                               const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    /* The field is chosen by the command table's cmd_data offset. */
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    return aura_parse_duration(cmd, arg, apr_time_from_msec(10),
                               MAX_NATS_WAIT, field);
}

const char *aura_set_nats_max_reconnect(cmd_parms *cmd, void *dummy,
                                        const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd);
    char *end;
    apr_int64_t n;

    (void)dummy;
    if (err) {
        return err;
    }
    if (!strcasecmp(arg, "unlimited")) {
        c->nats_max_reconnect = -1;
        return NULL;
    }
    n = apr_strtoi64(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || n < 0 || n > 1000000) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not 'unlimited' or a "
                            "number of attempts between 0 and 1000000",
                            cmd->cmd->name, arg);
    }
    c->nats_max_reconnect = (int)n;
    return NULL;
}
