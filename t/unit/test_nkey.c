/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_nkey.c: nkey seeds, Ed25519 signatures and creds files
 * (aura_nkey.c).  The signature vector was made by nats.c's own
 * nats_Sign() from the seed below; the test also asks nats_Sign() again
 * on other input, so the two implementations are compared live.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include <stdlib.h>
#include <nats/nats.h>

#include "nats/aura_nkey.h"

/* raw seed bytes i * 7 + 1, user type */
#define SEED "SUAACCAPCYOSIKZSHFAEOTSVLRRWU4LYP6DI3FE3UKU3BN56YXGNHWVCJA"
#define PUB  "UDSAGCMYZ7K22FZDYFU7SVVKBOPLQYM3LGJL2YJMFL2CR26HT6G7AGME"
#define JWT  "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJzdWIiOiJVIn0.c2ln"

static const unsigned char nonce_sig[64] = {
0xf0, 0xa9, 0xd1, 0xbb, 0xa5, 0xfc, 0x98, 0x36,
0x18, 0x3c, 0x5d, 0x53, 0xc8, 0x9d, 0x81, 0x06,
0x00, 0xb4, 0xfe, 0x02, 0x2b, 0x91, 0xc9, 0x40,
0x36, 0x72, 0x47, 0xd7, 0x6b, 0x8f, 0x77, 0x4f,
0xb6, 0x32, 0x55, 0x12, 0x98, 0xba, 0xc0, 0xe2,
0x85, 0xa1, 0x80, 0xc0, 0x72, 0xd8, 0x13, 0xb9,
0x13, 0x53, 0x3e, 0x6c, 0xa1, 0x81, 0x56, 0xa2,
0xd3, 0x24, 0x93, 0xe7, 0x20, 0x42, 0x16, 0x0e,
};

static void raw_seed(unsigned char raw[32])
{
    int i;

    for (i = 0; i < 32; i++) {
        raw[i] = (unsigned char)(i * 7 + 1);
    }
}

static void test_decode(void **state)
{
    unsigned char raw[32], want[32];
    int type = -1;

    (void)state;
    raw_seed(want);
    assert_int_equal(aura_nkey_decode_seed(SEED, strlen(SEED), raw, &type), 0);
    assert_int_equal(type, AURA_NKEY_USER);
    assert_memory_equal(raw, want, 32);
}

static void test_decode_malformed(void **state)
{
    static const char *rows[] = {
        "", "SU", SEED "A", "SUAACCAPCYOSIKZSHFAEOTSVLRRWU4LYP6DI3FE3UKU3BN56YXGNHWVCJ",
        /* the last character's spare bits set; one changed character,
         * which the checksum catches */
        "SUAACCAPCYOSIKZSHFAEOTSVLRRWU4LYP6DI3FE3UKU3BN56YXGNHWVCJB",
        "SUAACCAPCYOSIKZSHFAEOTSVLRRWU4LYP6DI3FE3UKU3BN56YXGNHWVCKA",
        /* lower case, padding, a digit outside the alphabet */
        "suaaccapcyosikzshfaeotsvlrrwu4lyp6di3fe3uku3bn56yxgnhwvcja",
        "SUAACCAPCYOSIKZSHFAEOTSVLRRWU4LYP6DI3FE3UKU3BN56YXGNHWVC==",
        "SUAACCAPCYOSIKZSHFAEOTSVLRRWU4LYP6DI3FE3UKU3BN56YXGNHWVC18",
        /* a public key is no seed */
        PUB "AA",
    };
    unsigned char raw[32];
    int type;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (aura_nkey_decode_seed(rows[i], strlen(rows[i]), raw, &type) == 0) {
            fail_msg("row %zu '%s' decoded", i, rows[i]);
        }
    }
    assert_int_equal(aura_nkey_decode_seed(NULL, 58, raw, &type), -1);
}

static void test_encode_roundtrip(void **state)
{
    unsigned char raw[32], pub[32], back[32];
    char s[AURA_NKEY_SEED_LEN + 1], p[AURA_NKEY_PUB_LEN + 1];
    int type;

    (void)state;
    raw_seed(raw);
    aura_nkey_encode_seed(AURA_NKEY_USER, raw, s);
    assert_string_equal(s, SEED);
    assert_int_equal(aura_nkey_public_of(raw, pub), 0);
    aura_nkey_encode_public(AURA_NKEY_USER, pub, p);
    assert_string_equal(p, PUB);
    aura_nkey_encode_seed(AURA_NKEY_ACCOUNT, raw, s);
    assert_true(!strncmp(s, "SA", 2));
    assert_int_equal(aura_nkey_decode_seed(s, strlen(s), back, &type), 0);
    assert_int_equal(type, AURA_NKEY_ACCOUNT);
    aura_nkey_encode_seed(AURA_NKEY_OPERATOR, raw, s);
    assert_true(!strncmp(s, "SO", 2));
    aura_nkey_encode_public(AURA_NKEY_ACCOUNT, pub, p);
    assert_int_equal(p[0], 'A');
}

static void test_sign_vector(void **state)
{
    unsigned char raw[32], sig[64], *ns = NULL;
    const char *msg = "a longer nonce: 0123456789abcdef";
    int nl = 0;

    (void)state;
    raw_seed(raw);
    assert_int_equal(aura_nkey_sign(raw, (const unsigned char *)"nonce-abc",
                                    9, sig), 0);
    assert_memory_equal(sig, nonce_sig, 64);
    /* And nats.c agrees on another input, now (nats_Sign needs the
     * library open). */
    assert_int_equal(nats_Open(-1), NATS_OK);
    assert_int_equal(nats_Sign(SEED, msg, &ns, &nl), NATS_OK);
    assert_int_equal(nl, 64);
    assert_int_equal(aura_nkey_sign(raw, (const unsigned char *)msg,
                                    strlen(msg), sig), 0);
    assert_memory_equal(sig, ns, 64);
    free(ns);
}

static void test_creds(void **state)
{
    static const char creds[] =
        "-----BEGIN NATS USER JWT-----\n" JWT "\n"
        "------END NATS USER JWT------\n\n"
        "************************* IMPORTANT *************************\n"
        "NKEY Seed printed below can be used to sign and prove identity.\n\n"
        "-----BEGIN USER NKEY SEED-----\r\n" SEED "\r\n"
        "------END USER NKEY SEED------\n";
    aura_span_t jwt, seed;
    const char *why = NULL;

    (void)state;
    assert_int_equal(aura_creds_parse(creds, strlen(creds), &jwt, &seed,
                                      &why), 0);
    assert_int_equal(jwt.len, strlen(JWT));
    assert_memory_equal(jwt.p, JWT, jwt.len);
    assert_int_equal(seed.len, strlen(SEED));
    assert_memory_equal(seed.p, SEED, seed.len);
}

static void test_creds_malformed(void **state)
{
    static const char *rows[] = {
        "",
        "garbage\n",
        /* a seed file is no creds file */
        "-----BEGIN USER NKEY SEED-----\n" SEED "\n------END USER NKEY SEED------\n",
        /* JWT without its END marker */
        "-----BEGIN NATS USER JWT-----\n" JWT "\n"
        "-----BEGIN USER NKEY SEED-----\n" SEED "\n------END USER NKEY SEED------\n",
        /* not a JWT */
        "-----BEGIN NATS USER JWT-----\nnot a jwt\n------END NATS USER JWT------\n"
        "-----BEGIN USER NKEY SEED-----\n" SEED "\n------END USER NKEY SEED------\n",
        "-----BEGIN NATS USER JWT-----\na..b\n------END NATS USER JWT------\n"
        "-----BEGIN USER NKEY SEED-----\n" SEED "\n------END USER NKEY SEED------\n",
        /* no seed */
        "-----BEGIN NATS USER JWT-----\n" JWT "\n------END NATS USER JWT------\n",
        /* a bad seed, an account seed */
        "-----BEGIN NATS USER JWT-----\n" JWT "\n------END NATS USER JWT------\n"
        "-----BEGIN USER NKEY SEED-----\nSUAAAA\n------END USER NKEY SEED------\n",
        "-----BEGIN NATS USER JWT-----\n" JWT "\n------END NATS USER JWT------\n"
        "-----BEGIN USER NKEY SEED-----\n"
        "SAAACCAPCYOSIKZSHFAEOTSVLRRWU4LYP6DI3FE3UKU3BN56YXGNHWVCJA"
        "\n------END USER NKEY SEED------\n",
        /* truncated after BEGIN */
        "-----BEGIN NATS USER JWT-----\n",
    };
    aura_span_t jwt, seed;
    const char *why;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        why = NULL;
        if (aura_creds_parse(rows[i], strlen(rows[i]), &jwt, &seed, &why) == 0) {
            fail_msg("row %zu parsed", i);
        }
        assert_non_null(why);
    }
}

static void test_seedfile(void **state)
{
    static const char bare[] = "\n  " SEED "  \n\n";
    static const char block[] =
        "-----BEGIN USER NKEY SEED-----\n" SEED "\n------END USER NKEY SEED------\n";
    aura_span_t seed;
    const char *why = NULL;

    (void)state;
    assert_int_equal(aura_seedfile_parse(bare, strlen(bare), &seed, &why), 0);
    assert_memory_equal(seed.p, SEED, seed.len);
    assert_int_equal(aura_seedfile_parse(block, strlen(block), &seed, &why), 0);
    assert_memory_equal(seed.p, SEED, seed.len);
    assert_int_equal(aura_seedfile_parse("", 0, &seed, &why), -1);
    assert_int_equal(aura_seedfile_parse(SEED "\n" SEED "\n", 118, &seed,
                                         &why), -1);
    assert_int_equal(aura_seedfile_parse(PUB "\n", 57, &seed, &why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_decode_malformed),
        cmocka_unit_test(test_encode_roundtrip),
        cmocka_unit_test(test_sign_vector),
        cmocka_unit_test(test_creds),
        cmocka_unit_test(test_creds_malformed),
        cmocka_unit_test(test_seedfile),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
