/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keyused.h: the keys' last-used flush (aura_keyused.c).
 */
#ifndef AURA_KEYUSED_H
#define AURA_KEYUSED_H

#include "aura.h"

/* From child_init, after the key store's and the Postgres pool's. */
void aura_keyused_child_init(apr_pool_t *pchild, server_rec *s);

#endif /* AURA_KEYUSED_H */
