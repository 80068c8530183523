/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fleet_conf.h: the fleet view's directives (aura_fleet_conf.c),
 * their defaults and the getters that apply them.  All global: one
 * instance, one name, one publisher.
 */
#ifndef AURA_FLEET_CONF_H
#define AURA_FLEET_CONF_H

#include "core/aura_config.h"

#define AURA_FLEET_DEFAULT_INTERVAL  apr_time_from_sec(1)
#define AURA_FLEET_DEFAULT_SUBJECT   "aura.fleet"
#define AURA_FLEET_DEFAULT_INSTANCES 32
#define AURA_FLEET_MAX_INSTANCES     1024
#define AURA_FLEET_DEFAULT_GONE      apr_time_from_sec(30)

typedef struct aura_fleet_conf_t {
    const char *instance;            /* AuraInstanceName; NULL: host */
    int on;                          /* AuraFleet, AURA_UNSET (Off) */
    apr_interval_time_t interval;    /* AuraFleetInterval */
    const char *subject;             /* AuraFleetSubject */
    int max_instances;               /* AuraFleetMaxInstances */
    apr_interval_time_t gone_after;  /* AuraFleetGoneAfter */
} aura_fleet_conf_t;

/* NULL when no fleet directive was given (every getter then answers the
 * default). */
static APR_INLINE const aura_fleet_conf_t *
aura_fleet_conf(const server_rec *s)
{
    return aura_server_conf(s)->fleet;
}

static APR_INLINE int aura_fleet_conf_on(const aura_fleet_conf_t *f)
{
    return f && f->on == 1;
}

static APR_INLINE apr_interval_time_t
aura_fleet_conf_interval(const aura_fleet_conf_t *f)
{
    return f && f->interval != AURA_UNSET ? f->interval
                                          : AURA_FLEET_DEFAULT_INTERVAL;
}

static APR_INLINE const char *
aura_fleet_conf_subject(const aura_fleet_conf_t *f)
{
    return f && f->subject ? f->subject : AURA_FLEET_DEFAULT_SUBJECT;
}

/* The instance slots the shared segment reserves: none when the fleet
 * view is off (it then costs no memory). */
static APR_INLINE int aura_fleet_conf_slots(const aura_fleet_conf_t *f)
{
    if (!aura_fleet_conf_on(f)) {
        return 0;
    }
    return f->max_instances != AURA_UNSET ? f->max_instances
                                          : AURA_FLEET_DEFAULT_INSTANCES;
}

static APR_INLINE apr_interval_time_t
aura_fleet_conf_gone_after(const aura_fleet_conf_t *f)
{
    return f && f->gone_after != AURA_UNSET ? f->gone_after
                                            : AURA_FLEET_DEFAULT_GONE;
}

const char *aura_set_instance_name(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_fleet(cmd_parms *cmd, void *d, int on);
const char *aura_set_fleet_interval(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_fleet_subject(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_fleet_instances(cmd_parms *cmd, void *d,
                                     const char *a);
const char *aura_set_fleet_gone(cmd_parms *cmd, void *d, const char *a);

#define AURA_FLEET_DIRECTIVES \
    AP_INIT_TAKE1("AuraInstanceName", aura_set_instance_name, NULL, \
                  RSRC_CONF, \
                  "This instance's name in the fleet view (default: the " \
                  "host name)"), \
    AP_INIT_FLAG("AuraFleet", aura_set_fleet, NULL, RSRC_CONF, \
                 "Whether this instance publishes its state on NATS and " \
                 "keeps every instance's for the console's fleet view"), \
    AP_INIT_TAKE1("AuraFleetInterval", aura_set_fleet_interval, NULL, \
                  RSRC_CONF, \
                  "How often this instance publishes its snapshot " \
                  "(100ms to 60s)"), \
    AP_INIT_TAKE1("AuraFleetSubject", aura_set_fleet_subject, NULL, \
                  RSRC_CONF, \
                  "The NATS subject prefix of the fleet's snapshots " \
                  "(<prefix>.snapshot.<instance>)"), \
    AP_INIT_TAKE1("AuraFleetMaxInstances", aura_set_fleet_instances, NULL, \
                  RSRC_CONF, \
                  "How many instances the fleet view keeps (1 to 1024; " \
                  "16 KiB of shared memory each)"), \
    AP_INIT_TAKE1("AuraFleetGoneAfter", aura_set_fleet_gone, NULL, \
                  RSRC_CONF, \
                  "After how long without a snapshot an instance is " \
                  "shown as gone (1s to 1d)")

#endif /* AURA_FLEET_CONF_H */
