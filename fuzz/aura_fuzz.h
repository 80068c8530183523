/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_fuzz.h: what the libFuzzer harnesses (fuzz/fuzz_*.c) share.  A
 * harness links libaura_pure built with clang's coverage instrumentation
 * (Makefile.in, "fuzz" target) and is run by build/fuzz.
 *
 * Rules for every harness: an invariant that does not hold calls
 * AURA_FUZZ_ASSERT, which prints the failed condition and aborts, so
 * libFuzzer keeps the input as a crash artifact; every allocation is
 * freed before LLVMFuzzerTestOneInput returns (LeakSanitizer runs), and
 * APR memory comes from a pool created and destroyed per input.
 */
#ifndef AURA_FUZZ_H
#define AURA_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apr_general.h"
#include "apr_pools.h"

#define AURA_FUZZ_ASSERT(cond) do {                                       \
        if (!(cond)) {                                                    \
            fprintf(stderr, "%s:%d: invariant violated: %s\n",            \
                    __FILE__, __LINE__, #cond);                           \
            abort();                                                      \
        }                                                                 \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* APR once per process: libFuzzer calls the harness from one thread,
 * so a global pool is the parent of one pool per input. */
static apr_pool_t *aura_fuzz_root;

static inline void aura_fuzz_apr_init(void)
{
    if (apr_initialize() != APR_SUCCESS
        || apr_pool_create(&aura_fuzz_root, NULL) != APR_SUCCESS) {
        fprintf(stderr, "fuzz: APR initialisation failed\n");
        abort();
    }
}

static inline apr_pool_t *aura_fuzz_pool(void)
{
    apr_pool_t *p = NULL;

    if (apr_pool_create(&p, aura_fuzz_root) != APR_SUCCESS) {
        abort();
    }
    return p;
}

/* Input bytes as a NUL-terminated string, cut at the first NUL (the
 * functions under test take C strings, as httpd hands them). */
static inline char *aura_fuzz_strndup(apr_pool_t *p, const uint8_t *d,
                                      size_t n)
{
    char *s = apr_palloc(p, n + 1);

    memcpy(s, d, n);
    s[n] = '\0';
    return s;
}

/* Consume one byte of the input (0 when none is left). */
static inline unsigned int aura_fuzz_byte(const uint8_t **d, size_t *n)
{
    unsigned int b;

    if (!*n) {
        return 0;
    }
    b = **d;
    (*d)++;
    (*n)--;
    return b;
}

/* Consume 8 bytes as a little-endian 64-bit value (missing bytes 0). */
static inline uint64_t aura_fuzz_u64(const uint8_t **d, size_t *n)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 8; i++) {
        v |= (uint64_t)aura_fuzz_byte(d, n) << (8 * i);
    }
    return v;
}

#endif /* AURA_FUZZ_H */
