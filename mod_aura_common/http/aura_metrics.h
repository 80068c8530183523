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

#endif /* AURA_METRICS_H */
