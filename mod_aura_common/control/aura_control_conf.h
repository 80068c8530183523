/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_control_conf.h: the directives of the incident controls
 * (aura_control_conf.c), both global: AuraControlSlots (the size of the
 * shared table) and AuraControlSubject (the NATS subjects the instances
 * share them on).  Defaults are applied by the getters.
 */
#ifndef AURA_CONTROL_CONF_H
#define AURA_CONTROL_CONF_H

#include "aura.h"
#include "core/aura_config.h"

#define AURA_CONTROL_SLOTS_DEFAULT 256
#define AURA_CONTROL_SLOTS_MIN     16
#define AURA_CONTROL_SLOTS_MAX     65536
/* Not "aura.control": that is the aura-control service's subject. */
#define AURA_CONTROL_SUBJECT_DEFAULT "aura.gateway.controls"

typedef struct aura_control_conf_t {
    int slots;                  /* AURA_UNSET */
    const char *subject;        /* NULL: unset */
} aura_control_conf_t;

static APR_INLINE int aura_conf_control_slots(const aura_server_conf_t *c)
{
    return c->control && c->control->slots != AURA_UNSET
           ? c->control->slots : AURA_CONTROL_SLOTS_DEFAULT;
}

static APR_INLINE const char *
aura_conf_control_subject(const aura_server_conf_t *c)
{
    return c->control && c->control->subject ? c->control->subject
                                             : AURA_CONTROL_SUBJECT_DEFAULT;
}

const char *aura_set_control_slots(cmd_parms *cmd, void *d,
                                   const char *arg);
const char *aura_set_control_subject(cmd_parms *cmd, void *d,
                                     const char *arg);

#define AURA_CONTROL_DIRECTIVES \
    AP_INIT_TAKE1("AuraControlSlots", aura_set_control_slots, NULL, \
                  RSRC_CONF, "How many incident controls the shared " \
                  "table holds (16-65536)"), \
    AP_INIT_TAKE1("AuraControlSubject", aura_set_control_subject, NULL, \
                  RSRC_CONF, "NATS subject prefix the instances share " \
                  "incident controls on (<subject>.set, <subject>.sync)")

#endif /* AURA_CONTROL_CONF_H */
