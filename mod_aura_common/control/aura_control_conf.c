/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_control_conf.c: AuraControlSlots and AuraControlSubject (see
 * aura_control_conf.h).  Both global: the table is one per instance,
 * and every instance of a fleet must use the same subject.
 */
#include "core/aura_module.h"
#include "control/aura_control_conf.h"
#include "nats/aura_subject.h"

#include "apr_strings.h"

#include <stdlib.h>

static aura_control_conf_t *conf_of(cmd_parms *cmd)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    if (!c->control) {
        c->control = apr_pcalloc(cmd->pool, sizeof(*c->control));
        c->control->slots = AURA_UNSET;
    }
    return c->control;
}

const char *aura_set_control_slots(cmd_parms *cmd, void *d,
                                   const char *arg)
{
    const char *err = aura_global_only(cmd);
    char *end;
    long n;

    (void)d;
    if (err) {
        return err;
    }
    n = strtol(arg, &end, 10);
    if (!*arg || *end || n < AURA_CONTROL_SLOTS_MIN
        || n > AURA_CONTROL_SLOTS_MAX) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a number from %d "
                            "to %d", cmd->cmd->name, arg,
                            AURA_CONTROL_SLOTS_MIN, AURA_CONTROL_SLOTS_MAX);
    }
    conf_of(cmd)->slots = (int)n;
    return NULL;
}

const char *aura_set_control_subject(cmd_parms *cmd, void *d,
                                     const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    if (err) {
        return err;
    }
    /* Room for ".sync" in a subject of sane length. */
    if (!aura_subject_literal(arg) || strlen(arg) > 200) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject "
                            "(literal, at most 200 characters)",
                            cmd->cmd->name, arg);
    }
    conf_of(cmd)->subject = arg;
    return NULL;
}
