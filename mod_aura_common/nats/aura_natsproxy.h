/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_natsproxy.h: the handler of NATS-routed Locations (aura_natsproxy.c).
 */
#ifndef AURA_NATSPROXY_H
#define AURA_NATSPROXY_H

#include "aura.h"

/* aura_natsproxy.c */
int aura_natsproxy_handler(request_rec *r);

#endif /* AURA_NATSPROXY_H */
