/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_status.h: mod_aura's section of server-status (aura_status.c).
 */
#ifndef AURA_STATUS_H
#define AURA_STATUS_H

#include "aura.h"

/* Registers the optional status hook (harmless without mod_status). */
void aura_status_register(void);

#endif /* AURA_STATUS_H */
