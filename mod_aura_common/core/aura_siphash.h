/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_siphash.h: SipHash-2-4 (Aumasson and Bernstein, 2012), a keyed
 * 64-bit hash.  The rate limiter indexes a shared table by the client's
 * address: with an unkeyed hash an attacker could pick addresses that
 * all land in one victim's bucket set and evict it; with a secret
 * random key (made when the shared segment is built) it cannot.
 */
#ifndef AURA_SIPHASH_H
#define AURA_SIPHASH_H

#include "apr.h"

#define AURA_SIPHASH_KEY_LEN 16

/**
 * SipHash-2-4 of data under key.
 * @param key 16 secret bytes
 * @param data the bytes to hash (may be NULL when len is 0)
 * @param len their length
 * @return the 64-bit tag, as the reference implementation's
 *         little-endian output read as a number
 */
apr_uint64_t aura_siphash24(const unsigned char key[AURA_SIPHASH_KEY_LEN],
                            const void *data, apr_size_t len);

#endif /* AURA_SIPHASH_H */
