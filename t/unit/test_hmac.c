/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_hmac.c: cmocka tests of the HS256 signature check that
 * mod_aura_common/auth/aura_jwt.c does itself (aura_jwt_hmac_ok(), issue
 * #29 point 6), linked from libaura_pure.a exactly as the module links
 * it:
 *  - the check, case by case: the right MAC, a wrong one, truncated,
 *    longer, padded, standard base64 ('+' '/'), non-canonical
 *    base64url, another input or secret, another algorithm's name;
 *  - algorithm confusion through aura_jwt_verify(): an RSA public key
 *    never verifies an HMAC and an HMAC secret never an RS256 token,
 *    even when both share a kid;
 *  - whole tokens through aura_jwt_verify(): a signature of another
 *    secret, or with one character changed, fails for HS256 as for
 *    RS256 (aura_jwt.c no longer calls libjwt, whose HMAC check ended
 *    in a text comparison).
 *
 * Keys: one RSA 2048 key per group (OpenSSL 3); tokens are signed here
 * by hand.  The clock is the constant NOW_S.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aura_unit.h"

#include "apr_general.h"
#include "apr_pools.h"
#include "apr_strings.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "auth/aura_jwt.h"

#define NOW_S 1700000000

static const char secret[] = "aura-test-hmac-secret-0123456789";
static const char other_secret[] = "aura-test-hmac-secret-9876543210";

/* ------------------------------------------------------------------ */
/* Fixture                                                             */

static struct {
    apr_pool_t *pool;
    EVP_PKEY *rsa;
    const char *rsa_pub;        /* SPKI PEM */
} fx;

static int group_setup(void **state)
{
    BIO *bio;
    char *data = NULL;
    long len;

    (void)state;
    if (apr_initialize() != APR_SUCCESS
        || apr_pool_create(&fx.pool, NULL) != APR_SUCCESS) {
        return -1;
    }
    fx.rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    bio = BIO_new(BIO_s_mem());
    if (!fx.rsa || !bio || !PEM_write_bio_PUBKEY(bio, fx.rsa)
        || (len = BIO_get_mem_data(bio, &data)) <= 0) {
        BIO_free(bio);
        return -1;
    }
    fx.rsa_pub = apr_pstrmemdup(fx.pool, data, (apr_size_t)len);
    BIO_free(bio);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    EVP_PKEY_free(fx.rsa);
    apr_pool_destroy(fx.pool);
    apr_terminate();
    return 0;
}

/* HMAC-SHA-256 of input under key, raw. */
static void mac256(const char *key, size_t key_len, const char *input,
                   unsigned char out[32])
{
    unsigned int len = 0;

    assert_non_null(HMAC(EVP_sha256(), key, (int)key_len,
                         (const unsigned char *)input, strlen(input), out,
                         &len));
    assert_int_equal(len, 32);
}

static const char *hs256_sig(apr_pool_t *p, const char *key,
                             size_t key_len, const char *input)
{
    unsigned char mac[32];

    mac256(key, key_len, input, mac);
    return b64url(p, mac, sizeof(mac));
}

static const char *rs256_sig(apr_pool_t *p, const char *input)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char sig[512];
    size_t len = sizeof(sig);
    const char *out = NULL;

    if (md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, fx.rsa) == 1
        && EVP_DigestSign(md, sig, &len, (const unsigned char *)input,
                          strlen(input)) == 1) {
        out = b64url(p, sig, len);
    }
    EVP_MD_CTX_free(md);
    assert_non_null(out);
    return out;
}

/* header.payload, the JWS signing input. */
static const char *signing_input(apr_pool_t *p, const char *header,
                                 const char *payload)
{
    return apr_pstrcat(p, b64url(p, header, strlen(header)), ".",
                       b64url(p, payload, strlen(payload)), NULL);
}

/* ------------------------------------------------------------------ */
/* aura_jwt_hmac_ok                                                    */

typedef enum {
    SIG_RIGHT,          /* the MAC, unpadded base64url (43 characters) */
    SIG_BIT_FLIPPED,    /* one bit of the MAC changed, re-encoded */
    SIG_LAST_BYTE,      /* the MAC's last byte changed, re-encoded */
    SIG_TRUNCATED_1,    /* the first 42 characters */
    SIG_TRUNCATED_HALF, /* the first 22 characters */
    SIG_FIRST_31_BYTES, /* 31 bytes of the MAC, encoded (42 characters) */
    SIG_EXTRA_CHAR,     /* 44 characters: "A" appended */
    SIG_PADDED,         /* "=" appended */
    SIG_NONCANONICAL,   /* the last character's unused bits set */
    SIG_BAD_CHAR,       /* a '.' in the middle */
    SIG_NUL_INSIDE,     /* sig_len counts a NUL in the middle */
    SIG_EMPTY,
    SIG_NULL,
    SIG_SHA512_MAC,     /* HMAC-SHA-512 of the input (86 characters) */
    SIG_RSA             /* an RS256 signature of the input */
} sig_e;

typedef struct {
    const char *name;
    const char *alg;            /* what the verifier is asked to check */
    sig_e sig;
    const char *key;            /* what signs: NULL = secret */
    const char *input;          /* what is verified: NULL = the input
                                   signed */
    const char *verify_key;     /* what verifies: NULL = secret */
    apr_size_t verify_len;      /* 0: strlen(verify_key) */
    int want;
} hmac_case_t;

#define INPUT "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9"

static const hmac_case_t hmac_cases[] = {
    { "the right MAC", "HS256", SIG_RIGHT, .want = 1 },
    { "one bit flipped", "HS256", SIG_BIT_FLIPPED, .want = 0 },
    { "last byte changed", "HS256", SIG_LAST_BYTE, .want = 0 },
    { "truncated by one character", "HS256", SIG_TRUNCATED_1, .want = 0 },
    { "truncated to half", "HS256", SIG_TRUNCATED_HALF, .want = 0 },
    { "31 bytes of the MAC, encoded", "HS256", SIG_FIRST_31_BYTES,
      .want = 0 },
    { "one character too many", "HS256", SIG_EXTRA_CHAR, .want = 0 },
    { "padded with '='", "HS256", SIG_PADDED, .want = 0 },
    { "non-canonical base64url (unused bits set)", "HS256",
      SIG_NONCANONICAL, .want = 0 },
    { "a character outside base64url", "HS256", SIG_BAD_CHAR, .want = 0 },
    { "a NUL inside the signature", "HS256", SIG_NUL_INSIDE, .want = 0 },
    { "empty signature", "HS256", SIG_EMPTY, .want = 0 },
    { "no signature", "HS256", SIG_NULL, .want = 0 },
    { "an HMAC-SHA-512 (wrong length)", "HS256", SIG_SHA512_MAC,
      .want = 0 },
    { "signed with another secret", "HS256", SIG_RIGHT,
      .key = other_secret, .want = 0 },
    { "verified with another secret", "HS256", SIG_RIGHT,
      .verify_key = other_secret, .want = 0 },
    { "another input (payload swapped)", "HS256", SIG_RIGHT,
      .input = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9", .want = 0 },
    { "input one character longer", "HS256", SIG_RIGHT,
      .input = INPUT "x", .want = 0 },
    { "empty secret", "HS256", SIG_RIGHT, .verify_key = "",
      .verify_len = 0, .want = 0 },
    /* Only HS256 is an HMAC here: the right MAC under another name. */
    { "alg RS256", "RS256", SIG_RIGHT, .want = 0 },
    { "alg ES256", "ES256", SIG_RIGHT, .want = 0 },
    { "alg none", "none", SIG_RIGHT, .want = 0 },
    { "alg hs256 (JWA names are case-sensitive)", "hs256", SIG_RIGHT,
      .want = 0 },
    { "alg HS384 (not accepted by the gateway)", "HS384", SIG_RIGHT,
      .want = 0 },
    { "alg HS512 with an HMAC-SHA-512", "HS512", SIG_SHA512_MAC,
      .want = 0 },
    { "alg NULL", NULL, SIG_RIGHT, .want = 0 },
    /* An RS256 signature is no HMAC, whatever key checks it. */
    { "an RS256 signature, checked as HS256", "HS256", SIG_RSA, .want = 0 },
    { "an RS256 signature, the public PEM as secret", "HS256", SIG_RSA,
      .verify_key = "PEM", .want = 0 },
};

/* The signature of case c over INPUT, and its length. */
static const char *make_sig(apr_pool_t *p, const hmac_case_t *c,
                            apr_size_t *len)
{
    const char *key = c->key ? c->key : secret;
    unsigned char mac[64];
    char *s;

    mac256(key, strlen(key), INPUT, mac);
    switch (c->sig) {
    case SIG_NULL:
        *len = 0;
        return NULL;
    case SIG_EMPTY:
        s = "";
        break;
    case SIG_BIT_FLIPPED:
        mac[7] ^= 0x10;
        s = (char *)b64url(p, mac, 32);
        break;
    case SIG_LAST_BYTE:
        mac[31] ^= 0x01;
        s = (char *)b64url(p, mac, 32);
        break;
    case SIG_TRUNCATED_1:
        s = apr_pstrndup(p, b64url(p, mac, 32), 42);
        break;
    case SIG_TRUNCATED_HALF:
        s = apr_pstrndup(p, b64url(p, mac, 32), 22);
        break;
    case SIG_FIRST_31_BYTES:
        s = (char *)b64url(p, mac, 31);
        break;
    case SIG_EXTRA_CHAR:
        s = apr_pstrcat(p, b64url(p, mac, 32), "A", NULL);
        break;
    case SIG_PADDED:
        s = apr_pstrcat(p, b64url(p, mac, 32), "=", NULL);
        break;
    case SIG_NONCANONICAL: {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
            "abcdefghijklmnopqrstuvwxyz0123456789-_";

        /* 32 bytes = 43 characters, the last with 2 unused bits. */
        s = apr_pstrdup(p, b64url(p, mac, 32));
        s[42] = alphabet[(strchr(alphabet, s[42]) - alphabet) | 1];
        break;
    }
    case SIG_BAD_CHAR:
        s = apr_pstrdup(p, b64url(p, mac, 32));
        s[20] = '.';
        break;
    case SIG_NUL_INSIDE:
        s = apr_pstrdup(p, b64url(p, mac, 32));
        s[20] = '\0';
        *len = 43;
        return s;
    case SIG_SHA512_MAC: {
        unsigned int n = 0;

        assert_non_null(HMAC(EVP_sha512(), key, (int)strlen(key),
                             (const unsigned char *)INPUT, strlen(INPUT),
                             mac, &n));
        s = (char *)b64url(p, mac, n);
        break;
    }
    case SIG_RSA:
        s = (char *)rs256_sig(p, INPUT);
        break;
    default:
        s = (char *)b64url(p, mac, 32);
    }
    *len = strlen(s);
    return s;
}

static void test_hmac_cases(void **state)
{
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(hmac_cases) / sizeof(hmac_cases[0]); i++) {
        const hmac_case_t *c = &hmac_cases[i];
        const char *input = c->input ? c->input : INPUT;
        const char *vkey = c->verify_key ? c->verify_key : secret;
        apr_size_t vlen, sig_len = 0;
        const char *sig = make_sig(p, c, &sig_len);
        int got;

        if (c->verify_key && !strcmp(c->verify_key, "PEM")) {
            vkey = fx.rsa_pub;
        }
        vlen = c->verify_key && !*c->verify_key ? 0 : strlen(vkey);
        got = aura_jwt_hmac_ok(c->alg, input, strlen(input), sig, sig_len,
                               (const unsigned char *)vkey, vlen);
        if (got != c->want) {
            print_error("row %zu \"%s\": expected %d, got %d\n", i, c->name,
                        c->want, got);
        }
        assert_int_equal(got, c->want);
    }
}

/* Standard base64 ('+' '/' for '-' '_') only differs from the right
 * signature when the MAC's encoding has a '-' or '_': find inputs where
 * it does and check that the other spelling is refused there. */
static void test_hmac_standard_base64(void **state)
{
    apr_pool_t *p = *state;
    int tried, found = 0;

    for (tried = 0; tried < 200 && found < 5; tried++) {
        const char *input = apr_psprintf(p, INPUT "%d", tried);
        const char *right = hs256_sig(p, secret, strlen(secret), input);
        char *std = apr_pstrdup(p, right);
        char *c;

        if (!strpbrk(std, "-_")) {
            continue;
        }
        for (c = std; *c; c++) {
            *c = *c == '-' ? '+' : *c == '_' ? '/' : *c;
        }
        assert_int_equal(aura_jwt_hmac_ok("HS256", input, strlen(input),
                                          right, strlen(right),
                                          (const unsigned char *)secret,
                                          strlen(secret)), 1);
        assert_int_equal(aura_jwt_hmac_ok("HS256", input, strlen(input),
                                          std, strlen(std),
                                          (const unsigned char *)secret,
                                          strlen(secret)), 0);
        found++;
    }
    assert_int_equal(found, 5);
}

/* ------------------------------------------------------------------ */
/* Through aura_jwt_verify: confusion, and libjwt never sees HS256     */

#define P_OK "{\"sub\":\"u1\",\"exp\":1700000300}"

static aura_jwt_policy_t policy(void)
{
    aura_jwt_policy_t pol;

    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(NOW_S);
    pol.leeway = apr_time_from_sec(60);
    pol.algs = AURA_JWT_RS256 | AURA_JWT_ES256 | AURA_JWT_HS256;
    return pol;
}

static const char *hs256_token(apr_pool_t *p, const char *header,
                               const char *key, size_t key_len)
{
    const char *input = signing_input(p, header, P_OK);

    return apr_pstrcat(p, input, ".", hs256_sig(p, key, key_len, input),
                       NULL);
}

static const char *rs256_token(apr_pool_t *p, const char *header)
{
    const char *input = signing_input(p, header, P_OK);

    return apr_pstrcat(p, input, ".", rs256_sig(p, input), NULL);
}

static aura_jwt_result_e verify(apr_pool_t *p, const aura_jwt_keyset_t *ks,
                                const char *token)
{
    aura_jwt_policy_t pol = policy();

    return aura_jwt_verify(p, ks, &pol, token, NULL);
}

static void test_alg_confusion(void **state)
{
    apr_pool_t *p = *state;
    const unsigned char *s = (const unsigned char *)secret;
    const char *pem = fx.rsa_pub;
    aura_jwt_keyset_t *rsa_only = aura_jwt_keyset_make(p);
    aura_jwt_keyset_t *secret_only = aura_jwt_keyset_make(p);
    aura_jwt_keyset_t *shared_kid = aura_jwt_keyset_make(p);

    assert_int_equal(aura_jwt_keyset_add_pem(rsa_only, "k", pem,
                                             strlen(pem), NULL),
                     APR_SUCCESS);
    assert_int_equal(aura_jwt_keyset_add_secret(secret_only, "k", s,
                                                strlen(secret), NULL),
                     APR_SUCCESS);
    /* One kid, two key types: the header's alg picks the type. */
    assert_int_equal(aura_jwt_keyset_add_pem(shared_kid, "k", pem,
                                             strlen(pem), NULL),
                     APR_SUCCESS);
    assert_int_equal(aura_jwt_keyset_add_secret(shared_kid, "k", s,
                                                strlen(secret), NULL),
                     APR_SUCCESS);

    /* HS256 signed with the RSA public key's PEM as the secret. */
    assert_int_equal(verify(p, rsa_only, hs256_token(p,
                         "{\"alg\":\"HS256\",\"kid\":\"k\"}", pem,
                         strlen(pem))), AURA_JWT_ALG_NOT_ALLOWED);
    assert_int_equal(verify(p, rsa_only, hs256_token(p,
                         "{\"alg\":\"HS256\"}", pem, strlen(pem))),
                     AURA_JWT_UNKNOWN_KID);
    assert_int_equal(verify(p, shared_kid, hs256_token(p,
                         "{\"alg\":\"HS256\",\"kid\":\"k\"}", pem,
                         strlen(pem))), AURA_JWT_BAD_SIGNATURE);
    /* An RS256 token never meets the secret. */
    assert_int_equal(verify(p, secret_only, rs256_token(p,
                         "{\"alg\":\"RS256\",\"kid\":\"k\"}")),
                     AURA_JWT_ALG_NOT_ALLOWED);
    assert_int_equal(verify(p, secret_only, rs256_token(p,
                         "{\"alg\":\"RS256\"}")), AURA_JWT_UNKNOWN_KID);
    /* An RS256 signature under an HS256 header, the PEM as the secret:
     * not a MAC of anything. */
    {
        const char *input = signing_input(p,
            "{\"alg\":\"HS256\",\"kid\":\"k\"}", P_OK);

        assert_int_equal(verify(p, shared_kid, apr_pstrcat(p, input, ".",
                                    rs256_sig(p, input), NULL)),
                         AURA_JWT_BAD_SIGNATURE);
    }
    /* And each key still verifies its own kind. */
    assert_int_equal(verify(p, shared_kid, hs256_token(p,
                         "{\"alg\":\"HS256\",\"kid\":\"k\"}", secret,
                         strlen(secret))), AURA_JWT_OK);
    assert_int_equal(verify(p, shared_kid, rs256_token(p,
                         "{\"alg\":\"RS256\",\"kid\":\"k\"}")), AURA_JWT_OK);
}

/* libjwt 1.10.2 compares HMAC signatures as text (strcmp): HS256 tokens,
 * good or bad, must never be handed to it. */
static void test_whole_tokens(void **state)
{
    apr_pool_t *p = *state;
    aura_jwt_keyset_t *ks = aura_jwt_keyset_make(p);
    const char *h = "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"hs\"}";
    const char *good, *bad;
    char *flipped;

    assert_int_equal(aura_jwt_keyset_add_secret(ks, "hs",
                         (const unsigned char *)secret, strlen(secret),
                         NULL), APR_SUCCESS);
    assert_int_equal(aura_jwt_keyset_add_pem(ks, "rs", fx.rsa_pub,
                                             strlen(fx.rsa_pub), NULL),
                     APR_SUCCESS);
    good = hs256_token(p, h, secret, strlen(secret));
    bad = hs256_token(p, h, other_secret, strlen(other_secret));
    flipped = apr_pstrdup(p, good);
    flipped[strlen(flipped) - 10] =
        flipped[strlen(flipped) - 10] == 'A' ? 'B' : 'A';

    assert_int_equal(verify(p, ks, good), AURA_JWT_OK);
    assert_int_equal(verify(p, ks, bad), AURA_JWT_BAD_SIGNATURE);
    assert_int_equal(verify(p, ks, flipped), AURA_JWT_BAD_SIGNATURE);

    good = rs256_token(p, "{\"alg\":\"RS256\",\"kid\":\"rs\"}");
    flipped = apr_pstrdup(p, good);
    flipped[strlen(flipped) - 10] =
        flipped[strlen(flipped) - 10] == 'A' ? 'B' : 'A';
    assert_int_equal(verify(p, ks, good), AURA_JWT_OK);
    assert_int_equal(verify(p, ks, flipped), AURA_JWT_BAD_SIGNATURE);
}

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hmac_cases,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_hmac_standard_base64,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_alg_confusion,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_whole_tokens,
                                        pool_setup, pool_teardown),
    };

    return cmocka_run_group_tests_name("hmac", tests, group_setup,
                                       group_teardown);
}
