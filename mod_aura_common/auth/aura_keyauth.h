/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keyauth.h: the API key door (aura_keyauth.c).
 */
#ifndef AURA_KEYAUTH_H
#define AURA_KEYAUTH_H

#include "aura.h"

/* aura_keyauth.c */
void aura_take_query_key(request_rec *r, aura_request_t *rq);

#endif /* AURA_KEYAUTH_H */
