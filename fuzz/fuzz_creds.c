/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_creds.c: libFuzzer harness for the NATS creds and nkey seed files
 * the parent reads at configuration time (AuraNATSCredentials,
 * AuraNATSNKeySeed: mod_aura_common/nats/aura_nkey.c).
 *
 * aura-fuzz: -max_len=4096
 *
 * Input: the file's bytes (not NUL-terminated).
 *
 * Invariants:
 *  - the spans a parse returns lie inside the input;
 *  - an accepted JWT is three non-empty base64url parts;
 *  - an accepted seed decodes as a user seed, and encoding that raw
 *    seed again gives exactly the same text (one text per key: spare
 *    bits and checksum are checked);
 *  - the first 58 bytes, decoded as a seed, round-trip the same way.
 */
#include "aura_fuzz.h"

#include "nats/aura_nkey.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void within(const uint8_t *data, size_t size, const aura_span_t *s)
{
    AURA_FUZZ_ASSERT((const uint8_t *)s->p >= data);
    AURA_FUZZ_ASSERT((const uint8_t *)s->p + s->len <= data + size);
}

static void seed_roundtrips(const char *text, size_t len, int want_user)
{
    unsigned char raw[AURA_NKEY_RAW];
    char again[AURA_NKEY_SEED_LEN + 1];
    int type = -1;

    if (aura_nkey_decode_seed(text, len, raw, &type) != 0) {
        AURA_FUZZ_ASSERT(!want_user);
        return;
    }
    AURA_FUZZ_ASSERT(len == AURA_NKEY_SEED_LEN);
    AURA_FUZZ_ASSERT(!want_user || type == AURA_NKEY_USER);
    aura_nkey_encode_seed(type, raw, again);
    AURA_FUZZ_ASSERT(!memcmp(again, text, AURA_NKEY_SEED_LEN));
}

static void jwt_shaped(const aura_span_t *j)
{
    size_t i, dots = 0;

    AURA_FUZZ_ASSERT(j->len >= 5 && j->p[0] != '.'
                     && j->p[j->len - 1] != '.');
    for (i = 0; i < j->len; i++) {
        if (j->p[i] == '.') {
            AURA_FUZZ_ASSERT(j->p[i - 1] != '.');
            dots++;
        }
    }
    AURA_FUZZ_ASSERT(dots == 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    aura_span_t jwt, seed;
    const char *why = NULL;

    if (aura_creds_parse(buf, size, &jwt, &seed, &why) == 0) {
        within(data, size, &jwt);
        within(data, size, &seed);
        jwt_shaped(&jwt);
        seed_roundtrips(seed.p, seed.len, 1);
    }
    else {
        AURA_FUZZ_ASSERT(why != NULL);
    }
    why = NULL;
    if (aura_seedfile_parse(buf, size, &seed, &why) == 0) {
        within(data, size, &seed);
        seed_roundtrips(seed.p, seed.len, 1);
    }
    else {
        AURA_FUZZ_ASSERT(why != NULL);
    }
    if (size >= AURA_NKEY_SEED_LEN) {
        seed_roundtrips(buf, AURA_NKEY_SEED_LEN, 0);
    }
    return 0;
}
