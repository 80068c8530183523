/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_control_nats.h: the incident controls across the fleet, over
 * NATS (aura_control_nats.c).
 */
#ifndef AURA_CONTROL_NATS_H
#define AURA_CONTROL_NATS_H

#include "aura.h"
#include "control/aura_control_record.h"

/* From register_hooks: lives on the child's NATS connection. */
void aura_control_nats_register(void);

/**
 * Send a control this instance just set, updated or lifted to every
 * instance (<subject>.set), flushed.
 * @return 1 when sent; 0 when not (logged): the other instances learn
 *         it at their next sync
 */
int aura_control_publish(request_rec *r, const aura_control_t *c);

#endif /* AURA_CONTROL_NATS_H */
