/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_health.h: the /health handler (aura_health.c).
 */
#ifndef AURA_HEALTH_H
#define AURA_HEALTH_H

#include "aura.h"

/* aura_health.c */
int aura_health_handler(request_rec *r);

#endif /* AURA_HEALTH_H */
