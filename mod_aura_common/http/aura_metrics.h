/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_metrics.h: the /metrics handler (aura_metrics.c).
 */
#ifndef AURA_METRICS_H
#define AURA_METRICS_H

#include "aura.h"

/* aura_metrics.c */
int aura_metrics_handler(request_rec *r);
const char *aura_set_metrics_token(cmd_parms *cmd, void *dummy,
                                   const char *path);

/* The command table's entry (mod_aura_common.c assembles the table). */
#define AURA_METRICS_DIRECTIVES \
    AP_INIT_TAKE1("AuraMetricsTokenFile", aura_set_metrics_token, NULL, \
                  RSRC_CONF, \
                  "File holding the bearer token /metrics (SetHandler " \
                  "aura-metrics) answers to")

#endif /* AURA_METRICS_H */
