/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nkeygen: NATS nkeys and JWT signatures for the tests, made with
 * the gateway's own nkey code (mod_aura_common/nats/aura_nkey.c) and
 * OpenSSL, so a test needs neither nsc nor node.
 *
 *   aura_nkeygen gen O|A|U    prints "<seed> <public key>" of a new key
 *   aura_nkeygen sign SEED    prints the base64url Ed25519 signature of
 *                             standard input (a JWT's "header.claims")
 */
#include "nats/aura_nkey.h"

#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

static int gen(const char *kind)
{
    unsigned char raw[AURA_NKEY_RAW], pub[AURA_NKEY_RAW];
    char s[AURA_NKEY_SEED_LEN + 1], p[AURA_NKEY_PUB_LEN + 1];
    int type = !strcmp(kind, "O") ? AURA_NKEY_OPERATOR
             : !strcmp(kind, "A") ? AURA_NKEY_ACCOUNT
             : !strcmp(kind, "U") ? AURA_NKEY_USER : -1;

    if (type < 0 || RAND_bytes(raw, sizeof(raw)) != 1
        || aura_nkey_public_of(raw, pub) != 0) {
        return 2;
    }
    aura_nkey_encode_seed(type, raw, s);
    aura_nkey_encode_public(type, pub, p);
    printf("%s %s\n", s, p);
    return 0;
}

static int sign(const char *seed)
{
    static unsigned char in[1 << 16];
    unsigned char raw[AURA_NKEY_RAW], sig[AURA_NKEY_SIG];
    unsigned char b64[128];
    size_t n = fread(in, 1, sizeof(in), stdin);
    int type, len, i, j;

    if (aura_nkey_decode_seed(seed, strlen(seed), raw, &type) != 0
        || aura_nkey_sign(raw, in, n, sig) != 0) {
        return 2;
    }
    len = EVP_EncodeBlock(b64, sig, sizeof(sig));
    for (i = j = 0; i < len; i++) {     /* base64url, no padding */
        unsigned char c = b64[i];

        if (c == '=') {
            break;
        }
        b64[j++] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    b64[j] = '\0';
    printf("%s\n", b64);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "gen")) {
        return gen(argv[2]);
    }
    if (argc == 3 && !strcmp(argv[1], "sign")) {
        return sign(argv[2]);
    }
    fprintf(stderr, "usage: aura_nkeygen gen O|A|U | sign SEED\n");
    return 2;
}
