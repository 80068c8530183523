/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_unit.h: what the cmocka tests share: one APR pool per test,
 * handed to the test through cmocka's state.
 */
#ifndef AURA_UNIT_H
#define AURA_UNIT_H

#include "apr_pools.h"

static inline int pool_setup(void **state)
{
    apr_pool_t *p = NULL;

    if (apr_pool_create(&p, NULL) != APR_SUCCESS) {
        return -1;
    }
    *state = p;
    return 0;
}

static inline int pool_teardown(void **state)
{
    apr_pool_destroy((apr_pool_t *)*state);
    *state = NULL;
    return 0;
}

#endif /* AURA_UNIT_H */
