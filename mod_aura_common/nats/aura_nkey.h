/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nkey.h: NATS nkeys and creds files (aura_nkey.c), pure code.
 *
 * An nkey seed is the base32 text (RFC 4648 alphabet, no padding) of
 * two prefix bytes, the 32-byte Ed25519 seed and a CRC16 (XMODEM,
 * little endian) of what precedes it; a public key is one prefix byte,
 * the 32-byte public key and the CRC16.  A creds file (NATS
 * decentralized auth) holds a user JWT and a user seed, each between
 * "-----BEGIN ...-----" and "------END ...------" marker lines.
 */
#ifndef AURA_NKEY_H
#define AURA_NKEY_H

#include <stddef.h>

#define AURA_NKEY_RAW        32   /* Ed25519 seed or public key bytes */
#define AURA_NKEY_SIG        64   /* Ed25519 signature bytes */
#define AURA_NKEY_PUB_LEN    56   /* encoded public key characters */
#define AURA_NKEY_SEED_LEN   58   /* encoded seed characters */

/* The key types (their prefix byte). */
#define AURA_NKEY_OPERATOR   (14 << 3)   /* 'O' */
#define AURA_NKEY_ACCOUNT    (0)         /* 'A' */
#define AURA_NKEY_USER       (20 << 3)   /* 'U' */

/* Decodes an encoded seed (len characters, no surrounding blanks) into
 * its 32 raw bytes and its key type.  0 on success, else -1 (wrong
 * length or alphabet, not a seed, bad checksum). */
int aura_nkey_decode_seed(const char *text, size_t len,
                          unsigned char raw[AURA_NKEY_RAW], int *type);

/* Encodes a seed of the given type; out gets AURA_NKEY_SEED_LEN + 1
 * bytes (NUL-terminated). */
void aura_nkey_encode_seed(int type, const unsigned char raw[AURA_NKEY_RAW],
                           char out[AURA_NKEY_SEED_LEN + 1]);

/* Encodes a public key of the given type; out gets AURA_NKEY_PUB_LEN + 1
 * bytes. */
void aura_nkey_encode_public(int type, const unsigned char pub[AURA_NKEY_RAW],
                             char out[AURA_NKEY_PUB_LEN + 1]);

/* The public key of a raw seed (Ed25519 through OpenSSL).  0 or -1. */
int aura_nkey_public_of(const unsigned char seed[AURA_NKEY_RAW],
                        unsigned char pub[AURA_NKEY_RAW]);

/* Signs data with the raw seed (Ed25519).  0 or -1. */
int aura_nkey_sign(const unsigned char seed[AURA_NKEY_RAW],
                   const unsigned char *data, size_t len,
                   unsigned char sig[AURA_NKEY_SIG]);

/* A span of the input buffer. */
typedef struct {
    const char *p;
    size_t len;
} aura_span_t;

/* Finds the user JWT and the seed of a creds file (buf, len bytes, not
 * necessarily NUL-terminated).  0 on success, else -1 with *why set to
 * a static sentence.  The spans point into buf. */
int aura_creds_parse(const char *buf, size_t len, aura_span_t *jwt,
                     aura_span_t *seed, const char **why);

/* Finds the seed of an nkey seed file: the whole file (blanks around
 * it ignored) or its "BEGIN USER NKEY SEED" block.  0 or -1 (*why). */
int aura_seedfile_parse(const char *buf, size_t len, aura_span_t *seed,
                        const char **why);

#endif /* AURA_NKEY_H */
