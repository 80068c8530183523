/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_h2c.h: an HTTP/1.1 request that httpd turns into stream 1 of an
 * HTTP/2 connection (Upgrade: h2c, aura_h2c.c).
 */
#ifndef AURA_H2C_H
#define AURA_H2C_H

#include "aura.h"

/* aura_h2c.c */
void aura_h2c_register(void);

#endif /* AURA_H2C_H */
