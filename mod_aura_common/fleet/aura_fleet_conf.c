/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet_conf.c: the fleet view's directives (aura_fleet_conf.h).
 * Global only: the publisher and the instance slots are the server's.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "fleet/aura_fleet_conf.h"
#include "fleet/aura_fleet_snap.h"
#include "nats/aura_subject.h"

#include "apr_strings.h"

static aura_fleet_conf_t *fleet_of(cmd_parms *cmd)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    if (!c->fleet) {
        c->fleet = apr_pcalloc(cmd->pool, sizeof(*c->fleet));
        c->fleet->on = AURA_UNSET;
        c->fleet->interval = AURA_UNSET;
        c->fleet->max_instances = AURA_UNSET;
        c->fleet->gone_after = AURA_UNSET;
    }
    return c->fleet;
}

const char *aura_set_instance_name(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    if (err) {
        return err;
    }
    if (!aura_fleet_name_ok(a)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not 1 to %d printable "
                            "characters", cmd->cmd->name, a,
                            AURA_FLEET_NAME_MAX - 1);
    }
    fleet_of(cmd)->instance = a;
    return NULL;
}

const char *aura_set_fleet(cmd_parms *cmd, void *d, int on)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    if (err) {
        return err;
    }
    fleet_of(cmd)->on = on ? 1 : 0;
    return NULL;
}

const char *aura_set_fleet_interval(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    return err ? err
               : aura_parse_duration(cmd, a, apr_time_from_msec(100),
                                     apr_time_from_sec(60),
                                     &fleet_of(cmd)->interval);
}

const char *aura_set_fleet_subject(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    if (err) {
        return err;
    }
    if (!aura_subject_literal(a) || strlen(a) > 128) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a literal NATS "
                            "subject of at most 128 characters (no "
                            "wildcards)", cmd->cmd->name, a);
    }
    fleet_of(cmd)->subject = a;
    return NULL;
}

const char *aura_set_fleet_instances(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    return err ? err
               : aura_parse_int(cmd, a, 1, AURA_FLEET_MAX_INSTANCES,
                                &fleet_of(cmd)->max_instances);
}

const char *aura_set_fleet_gone(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    return err ? err
               : aura_parse_duration(cmd, a, apr_time_from_sec(1),
                                     apr_time_from_sec(86400),
                                     &fleet_of(cmd)->gone_after);
}
