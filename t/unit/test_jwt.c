/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_jwt.c: cmocka tests of JWT verification and key sets
 * (mod_aura_common/auth/aura_jwt.c, APACHE-NOTES.md section (h)), linked from
 * libaura_pure.a exactly as the module links it.  Every case is a row of
 * a table walked by a loop; a regression row names its issue.
 *
 * Keys are generated once per group with OpenSSL 3 (RSA 2048 twice, EC
 * P-256, EC P-384, an EC P-256 key whose x coordinate has a leading zero
 * byte, RSA 1024, a self-signed certificate).  Tokens are signed in the
 * test: with libjwt (what a well-behaved issuer emits) or by hand
 * (base64url header.payload + HMAC / EVP signatures) for the malicious
 * ones.  The clock is the constant NOW_S; the leeway is 60 s.
 *
 * Pools: apr_initialize() and the key sets once per group (group pool),
 * one APR pool per test.  Every OpenSSL, libjwt and jansson object is
 * freed, so the binary stays clean under valgrind --leak-check=full and
 * -fsanitize=address,undefined.
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
#include "apr_thread_proc.h"

#include <jwt.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "auth/aura_jwt.h"

#define NOW_S     1700000000
#define LEEWAY_S  60
#define MAX_JWK   6

/* ------------------------------------------------------------------ */
/* Fixture                                                             */

typedef struct {
    EVP_PKEY *pkey;
    const char *priv_pem;       /* group pool */
    const char *pub_pem;        /* SPKI, group pool */
    const char *n, *e;          /* RSA: base64url */
    const char *x, *y;          /* EC: base64url, big-endian, unpadded
                                   for ec_lz (31 bytes) */
} test_key_t;

typedef enum {
    KS_ALL,         /* rsa "rsa1", ec "ec1", secret "hs1" */
    KS_NOKID,       /* rsa, ec, secret, no kid */
    KS_RSA_NOKID,   /* rsa only, no kid */
    KS_OCT,         /* secret "hs1" only */
    KS_TWO_RSA,     /* rsa "a", rsa2 "b" */
    KS_JWKS,        /* from a JWKS: "jrsa", "jec", "joct" */
    KS_CERT,        /* rsa from a certificate, "cert1" */
    KS_EC_LZ,       /* JWKS: ec_lz with a 31-byte x, no kid */
    KS_EMPTY,
    KS_COUNT
} ks_e;

static const char secret1[] = "aura-test-hmac-secret-0123456789";
static const char secret2[] = "aura-test-hmac-secret-9876543210";

static struct {
    apr_pool_t *pool;
    test_key_t rsa, rsa2, ec, ec384, ec_lz, rsa1024;
    const char *cert_pem;
    const char *rsa_pkcs1_pem;  /* BEGIN RSA PUBLIC KEY */
    const char *jwks;
    aura_jwt_keyset_t *ks[KS_COUNT];
} fx;

static const char *bio_text(apr_pool_t *p, BIO *bio)
{
    char *data = NULL;
    long len = BIO_get_mem_data(bio, &data);
    const char *s = (len > 0 && data) ? apr_pstrmemdup(p, data, len) : NULL;

    BIO_free(bio);
    return s;
}

static const char *priv_pem(apr_pool_t *p, EVP_PKEY *k)
{
    BIO *bio = BIO_new(BIO_s_mem());

    if (!bio || !PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL,
                                          NULL)) {
        BIO_free(bio);
        return NULL;
    }
    return bio_text(p, bio);
}

static const char *pub_pem(apr_pool_t *p, EVP_PKEY *k)
{
    BIO *bio = BIO_new(BIO_s_mem());

    if (!bio || !PEM_write_bio_PUBKEY(bio, k)) {
        BIO_free(bio);
        return NULL;
    }
    return bio_text(p, bio);
}

/* A BIGNUM parameter as base64url: pad > 0 pads to that many bytes. */
static const char *bn_param(apr_pool_t *p, EVP_PKEY *k, const char *name,
                            int pad)
{
    BIGNUM *bn = NULL;
    unsigned char buf[1024];
    int len;

    if (!EVP_PKEY_get_bn_param(k, name, &bn)) {
        return NULL;
    }
    len = pad > 0 ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
    BN_free(bn);
    return len > 0 ? b64url(p, buf, len) : NULL;
}

static int make_key(test_key_t *k, const char *type, const char *curve,
                    size_t bits)
{
    apr_pool_t *p = fx.pool;

    k->pkey = curve ? EVP_PKEY_Q_keygen(NULL, NULL, type, curve)
                    : EVP_PKEY_Q_keygen(NULL, NULL, type, bits);
    if (!k->pkey) {
        return -1;
    }
    k->priv_pem = priv_pem(p, k->pkey);
    k->pub_pem = pub_pem(p, k->pkey);
    if (!curve) {
        k->n = bn_param(p, k->pkey, OSSL_PKEY_PARAM_RSA_N, 0);
        k->e = bn_param(p, k->pkey, OSSL_PKEY_PARAM_RSA_E, 0);
    }
    else {
        int size = strcmp(curve, "P-256") ? 48 : 32;

        k->x = bn_param(p, k->pkey, OSSL_PKEY_PARAM_EC_PUB_X, size);
        k->y = bn_param(p, k->pkey, OSSL_PKEY_PARAM_EC_PUB_Y, size);
    }
    return (k->priv_pem && k->pub_pem && (k->n || k->x)) ? 0 : -1;
}

/* An EC P-256 key whose x has one leading zero byte (1 key in 256): its
 * JWK carries a 31-byte x, which the key set must left-pad. */
static int make_ec_lz(void)
{
    int i;

    for (i = 0; i < 20000; i++) {
        BIGNUM *x = NULL;
        EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        int short_x;

        if (!k || !EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, &x)) {
            EVP_PKEY_free(k);
            return -1;
        }
        /* Exactly one zero byte: 1 key in 65,536 has two, whose x
         * would be 30 bytes and fail the fixture's length check. */
        short_x = BN_num_bytes(x) == 31;
        BN_free(x);
        if (short_x) {
            fx.ec_lz.pkey = k;
            fx.ec_lz.priv_pem = priv_pem(fx.pool, k);
            fx.ec_lz.pub_pem = pub_pem(fx.pool, k);
            fx.ec_lz.x = bn_param(fx.pool, k, OSSL_PKEY_PARAM_EC_PUB_X, 0);
            fx.ec_lz.y = bn_param(fx.pool, k, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
            return 0;
        }
        EVP_PKEY_free(k);
    }
    return -1;
}

static const char *make_cert(EVP_PKEY *k)
{
    X509 *x = X509_new();
    X509_NAME *name;
    BIO *bio = NULL;
    const char *pem = NULL;

    if (x && X509_set_version(x, 2)
        && ASN1_INTEGER_set(X509_get_serialNumber(x), 1)
        && X509_gmtime_adj(X509_getm_notBefore(x), 0)
        && X509_gmtime_adj(X509_getm_notAfter(x), 3600)
        && X509_set_pubkey(x, k)
        && (name = X509_get_subject_name(x))
        && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                      (const unsigned char *)"aura-test",
                                      -1, -1, 0)
        && X509_set_issuer_name(x, name)
        && X509_sign(x, k, EVP_sha256())
        && (bio = BIO_new(BIO_s_mem()))
        && PEM_write_bio_X509(bio, x)) {
        pem = bio_text(fx.pool, bio);
        bio = NULL;
    }
    BIO_free(bio);
    X509_free(x);
    return pem;
}

/* "BEGIN RSA PUBLIC KEY" (PKCS#1), which libjwt cannot read. */
static const char *make_pkcs1(EVP_PKEY *k)
{
    OSSL_ENCODER_CTX *ctx;
    unsigned char *data = NULL;
    size_t len = 0;
    const char *pem = NULL;

    ctx = OSSL_ENCODER_CTX_new_for_pkey(k, EVP_PKEY_PUBLIC_KEY, "PEM",
                                        "type-specific", NULL);
    if (ctx && OSSL_ENCODER_to_data(ctx, &data, &len)) {
        pem = apr_pstrmemdup(fx.pool, (const char *)data, len);
    }
    OPENSSL_free(data);
    OSSL_ENCODER_CTX_free(ctx);
    return pem;
}

static const char *jwk_rsa(apr_pool_t *p, const test_key_t *k,
                           const char *extra)
{
    return apr_psprintf(p, "{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"%s\"%s}",
                        k->n, k->e, extra);
}

static const char *jwk_ec(apr_pool_t *p, const char *crv,
                          const char *x, const char *y, const char *extra)
{
    return apr_psprintf(p, "{\"kty\":\"EC\",\"crv\":\"%s\",\"x\":\"%s\","
                        "\"y\":\"%s\"%s}", crv, x, y, extra);
}

static const char *jwk_oct(apr_pool_t *p, const void *k, size_t len,
                           const char *extra)
{
    return apr_psprintf(p, "{\"kty\":\"oct\",\"k\":\"%s\"%s}",
                        b64url(p, k, len), extra);
}

static int build_keysets(void)
{
    apr_pool_t *p = fx.pool;
    const unsigned char *s1 = (const unsigned char *)secret1;
    int i, added = 0, rv = 0;

    for (i = 0; i < KS_COUNT; i++) {
        fx.ks[i] = aura_jwt_keyset_make(p);
    }
#define PEM(set, kid, k) \
    rv |= aura_jwt_keyset_add_pem(fx.ks[set], kid, (k).pub_pem, \
                                  strlen((k).pub_pem), NULL)
    PEM(KS_ALL, "rsa1", fx.rsa);
    PEM(KS_ALL, "ec1", fx.ec);
    rv |= aura_jwt_keyset_add_secret(fx.ks[KS_ALL], "hs1", s1, 32, NULL);
    PEM(KS_NOKID, NULL, fx.rsa);
    PEM(KS_NOKID, NULL, fx.ec);
    rv |= aura_jwt_keyset_add_secret(fx.ks[KS_NOKID], NULL, s1, 32, NULL);
    PEM(KS_RSA_NOKID, NULL, fx.rsa);
    rv |= aura_jwt_keyset_add_secret(fx.ks[KS_OCT], "hs1", s1, 32, NULL);
    PEM(KS_TWO_RSA, "a", fx.rsa);
    PEM(KS_TWO_RSA, "b", fx.rsa2);
#undef PEM
    rv |= aura_jwt_keyset_add_pem(fx.ks[KS_CERT], "cert1", fx.cert_pem,
                                  strlen(fx.cert_pem), NULL);

    fx.jwks = apr_pstrcat(p, "{\"keys\":[",
        jwk_rsa(p, &fx.rsa, ",\"kid\":\"jrsa\",\"use\":\"sig\","
                "\"alg\":\"RS256\""), ",",
        jwk_ec(p, "P-256", fx.ec.x, fx.ec.y, ",\"kid\":\"jec\""), ",",
        jwk_oct(p, secret1, 32, ",\"kid\":\"joct\",\"alg\":\"HS256\""),
        "]}", NULL);
    rv |= aura_jwt_keyset_add_jwks(fx.ks[KS_JWKS], fx.jwks, strlen(fx.jwks),
                                   &added, NULL);
    if (added != 3) {
        return -1;
    }
    {
        const char *doc = apr_pstrcat(p, "{\"keys\":[",
            jwk_ec(p, "P-256", fx.ec_lz.x, fx.ec_lz.y, ""), "]}", NULL);

        rv |= aura_jwt_keyset_add_jwks(fx.ks[KS_EC_LZ], doc, strlen(doc),
                                       &added, NULL);
    }
    return rv == APR_SUCCESS && added == 1 ? 0 : -1;
}

static int group_setup(void **state)
{
    (void)state;
    if (apr_initialize() != APR_SUCCESS
        || apr_pool_create(&fx.pool, NULL) != APR_SUCCESS) {
        return -1;
    }
    if (make_key(&fx.rsa, "RSA", NULL, 2048)
        || make_key(&fx.rsa2, "RSA", NULL, 2048)
        || make_key(&fx.rsa1024, "RSA", NULL, 1024)
        || make_key(&fx.ec, "EC", "P-256", 0)
        || make_key(&fx.ec384, "EC", "P-384", 0)
        || make_ec_lz()
        || !(fx.cert_pem = make_cert(fx.rsa.pkey))
        || !(fx.rsa_pkcs1_pem = make_pkcs1(fx.rsa.pkey))
        || strlen(fx.ec_lz.x) != 42     /* 31 bytes */
        || build_keysets()) {
        print_error("fixture setup failed\n");
        ERR_print_errors_fp(stderr);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    EVP_PKEY_free(fx.rsa.pkey);
    EVP_PKEY_free(fx.rsa2.pkey);
    EVP_PKEY_free(fx.rsa1024.pkey);
    EVP_PKEY_free(fx.ec.pkey);
    EVP_PKEY_free(fx.ec384.pkey);
    EVP_PKEY_free(fx.ec_lz.pkey);
    apr_pool_destroy(fx.pool);
    apr_terminate();
    return 0;
}

/* ------------------------------------------------------------------ */
/* Token signing                                                       */

typedef enum {
    K_NONE,         /* raw: empty signature part */
    K_RSA,
    K_RSA2,
    K_EC,
    K_EC_LZ,
    K_EC_DER,       /* raw: ES256 signature left in DER (not r||s) */
    K_HS,
    K_HS2,          /* another 32-byte secret */
    K_RSA_PUB_HMAC  /* HMAC keyed with the RSA public key PEM text */
} key_e;

static EVP_PKEY *pkey_of(key_e k)
{
    switch (k) {
    case K_RSA:
        return fx.rsa.pkey;
    case K_RSA2:
        return fx.rsa2.pkey;
    case K_EC:
    case K_EC_DER:
        return fx.ec.pkey;
    case K_EC_LZ:
        return fx.ec_lz.pkey;
    default:
        return NULL;
    }
}

/* libjwt's signing key: private PEM, or secret bytes. */
static const char *libjwt_key(key_e k, int *len)
{
    const char *s;

    switch (k) {
    case K_RSA:
        s = fx.rsa.priv_pem;
        break;
    case K_RSA2:
        s = fx.rsa2.priv_pem;
        break;
    case K_EC:
        s = fx.ec.priv_pem;
        break;
    case K_EC_LZ:
        s = fx.ec_lz.priv_pem;
        break;
    case K_HS:
        s = secret1;
        break;
    case K_HS2:
        s = secret2;
        break;
    case K_RSA_PUB_HMAC:
        s = fx.rsa.pub_pem;
        break;
    default:
        return NULL;
    }
    *len = (int)strlen(s);
    return s;
}

static const char *hmac_sig(apr_pool_t *p, const char *key, size_t key_len,
                            const char *input)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;

    if (!HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)input,
              strlen(input), md, &md_len)) {
        return NULL;
    }
    return b64url(p, md, md_len);
}

static const char *evp_sig(apr_pool_t *p, key_e k, const char *input)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char sig[1024];
    size_t sig_len = sizeof(sig);
    const char *out = NULL;

    if (md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pkey_of(k))
        && EVP_DigestSign(md, sig, &sig_len, (const unsigned char *)input,
                          strlen(input))) {
        if (k == K_EC || k == K_EC_LZ) {      /* DER -> r || s */
            const unsigned char *d = sig;
            ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &d, (long)sig_len);
            unsigned char rs[64];

            if (es && BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, 32) == 32
                && BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + 32, 32) == 32) {
                out = b64url(p, rs, 64);
            }
            ECDSA_SIG_free(es);
        }
        else {
            out = b64url(p, sig, sig_len);
        }
    }
    EVP_MD_CTX_free(md);
    return out;
}

/* header.payload.signature, by hand. */
static const char *sign_raw(apr_pool_t *p, const char *header,
                            const char *payload, key_e k)
{
    const char *input = apr_pstrcat(p, b64url(p, header, strlen(header)),
                                    ".", b64url(p, payload, strlen(payload)),
                                    NULL);
    const char *sig;
    int len = 0;

    switch (k) {
    case K_NONE:
        sig = "";
        break;
    case K_HS:
    case K_HS2:
    case K_RSA_PUB_HMAC: {
        const char *key = libjwt_key(k, &len);

        sig = hmac_sig(p, key, len, input);
        break;
    }
    default:
        sig = evp_sig(p, k, input);
    }
    assert_non_null(sig);
    return apr_pstrcat(p, input, ".", sig, NULL);
}

/* What an ordinary issuer emits: libjwt, header {"typ":"JWT","alg":..}
 * plus kid. */
static const char *sign_libjwt(apr_pool_t *p, const char *alg, key_e k,
                               const char *kid, const char *grants)
{
    jwt_t *jwt = NULL;
    char *tok = NULL;
    const char *out = NULL;
    const char *key;
    int len = 0;

    key = libjwt_key(k, &len);
    assert_non_null(key);
    if (jwt_new(&jwt) == 0
        && jwt_add_grants_json(jwt, grants) == 0
        && (!kid || jwt_add_header(jwt, "kid", kid) == 0)
        && jwt_set_alg(jwt, jwt_str_alg(alg), (const unsigned char *)key,
                       len) == 0) {
        tok = jwt_encode_str(jwt);
    }
    if (tok) {
        out = apr_pstrdup(p, tok);
        free(tok);
    }
    jwt_free(jwt);
    assert_non_null(out);
    return out;
}

/* ------------------------------------------------------------------ */
/* aura_jwt_verify                                                     */

typedef enum { SIGN_LIBJWT, SIGN_RAW, SIGN_LITERAL } signer_e;

typedef enum {
    MUT_NONE,
    MUT_FLIP_SIG,       /* change one character inside the signature */
    MUT_SWAP_PAYLOAD,   /* replace the payload part, keep the signature */
    MUT_DROP_SIG,       /* "h.p": cut the last dot and signature */
    MUT_NONCANON_SIG    /* last signature character: unused bits set */
} mut_e;

typedef struct {
    const char *name;
    const char *issue;
    signer_e signer;
    key_e key;
    const char *alg;            /* libjwt */
    const char *kid;            /* libjwt */
    const char *header;         /* raw */
    const char *payload;        /* libjwt grants, raw payload; literal:
                                   the token (NULL: a NULL token) */
    mut_e mut;
    const char *alt;            /* MUT_SWAP_PAYLOAD */
    ks_e ks;
    /* policy; 0/NULL: the defaults (all three algs, 60 s, 8192) */
    unsigned int algs;
    const char *iss;
    const char *aud;
    int aud_exact;
    int require_sub;
    apr_size_t max_len;
    int aud_any;
    apr_size_t sub_max;
    const char *project_claim;
    const char *project;
    const char *typ;            /* the policy's explicit type */
    long max_life_s;            /* AuraTokenMaxLifetime; 0: no limit */
    aura_jwt_result_e want;
    /* OK rows */
    const char *want_sub;
    const char *want_iss;
    apr_time_t want_exp;        /* 0: not checked */
} verify_case_t;

#define P_OK   "{\"sub\":\"u1\",\"exp\":1700000300}"
#define SUB90  "0123456789012345678901234567890123456789" \
               "0123456789012345678901234567890123456789" "0123456789"
#define SUB255 SUB90 SUB90 "012345678901234567890123456789" \
               "012345678901234567890123456789012345678901234"
#define H_RS   "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"rsa1\"}"
#define H_ES   "{\"alg\":\"ES256\",\"typ\":\"JWT\",\"kid\":\"ec1\"}"
#define H_HS   "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"hs1\"}"
#define EXP_OK APR_INT64_C(1700000300000000)

#define LIBJWT(a, k, id) .signer = SIGN_LIBJWT, .alg = a, .key = k, .kid = id
#define RAW(h, k)        .signer = SIGN_RAW, .header = h, .key = k
#define HS_RAW(p)        RAW(H_HS, K_HS), .payload = p, .ks = KS_ALL
#define LITERAL(t)       .signer = SIGN_LITERAL, .payload = t

static const verify_case_t verify_cases[] = {
    /* valid, as issued by libjwt */
    { "RS256, kid", NULL, LIBJWT("RS256", K_RSA, "rsa1"), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_OK, .want_sub = "u1",
      .want_exp = EXP_OK },
    { "RS256, no kid", NULL, LIBJWT("RS256", K_RSA, NULL), .payload = P_OK,
      .ks = KS_NOKID, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "ES256, kid", NULL, LIBJWT("ES256", K_EC, "ec1"), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "ES256, no kid", NULL, LIBJWT("ES256", K_EC, NULL), .payload = P_OK,
      .ks = KS_NOKID, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "HS256, kid", NULL, LIBJWT("HS256", K_HS, "hs1"), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "HS256, no kid", NULL, LIBJWT("HS256", K_HS, NULL), .payload = P_OK,
      .ks = KS_NOKID, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "only the allowed alg", NULL, LIBJWT("ES256", K_EC, "ec1"),
      .payload = P_OK, .ks = KS_ALL, .algs = AURA_JWT_ES256,
      .want = AURA_JWT_OK, .want_sub = "u1" },

    /* valid, by hand */
    { "RS256 raw", NULL, RAW(H_RS, K_RSA), .payload = P_OK, .ks = KS_ALL,
      .want = AURA_JWT_OK, .want_sub = "u1", .want_exp = EXP_OK },
    { "ES256 raw", NULL, RAW(H_ES, K_EC), .payload = P_OK, .ks = KS_ALL,
      .want = AURA_JWT_OK, .want_sub = "u1" },
    { "HS256 raw", NULL, HS_RAW(P_OK), .want = AURA_JWT_OK,
      .want_sub = "u1" },
    { "typ absent", NULL,
      RAW("{\"alg\":\"HS256\",\"kid\":\"hs1\"}", K_HS), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "typ \"jwt\" in lower case", NULL,
      RAW("{\"alg\":\"HS256\",\"typ\":\"jwt\",\"kid\":\"hs1\"}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_OK,
      .want_sub = "u1" },

    /* keys from a JWKS, a certificate, a 31-byte EC x */
    { "JWKS RSA", NULL, LIBJWT("RS256", K_RSA, "jrsa"), .payload = P_OK,
      .ks = KS_JWKS, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "JWKS EC", NULL, LIBJWT("ES256", K_EC, "jec"), .payload = P_OK,
      .ks = KS_JWKS, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "JWKS oct", NULL, LIBJWT("HS256", K_HS, "joct"), .payload = P_OK,
      .ks = KS_JWKS, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "JWKS, no kid, one key of the type", NULL,
      LIBJWT("ES256", K_EC, NULL), .payload = P_OK, .ks = KS_JWKS,
      .want = AURA_JWT_OK, .want_sub = "u1" },
    { "JWKS, kid of another key", NULL, LIBJWT("RS256", K_RSA, "jec"),
      .payload = P_OK, .ks = KS_JWKS, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "certificate", NULL, LIBJWT("RS256", K_RSA, "cert1"),
      .payload = P_OK, .ks = KS_CERT, .want = AURA_JWT_OK,
      .want_sub = "u1" },
    { "certificate, no kid", NULL, LIBJWT("RS256", K_RSA, NULL),
      .payload = P_OK, .ks = KS_CERT, .want = AURA_JWT_OK,
      .want_sub = "u1" },
    { "EC JWK with a 31-byte x, left-padded", NULL,
      LIBJWT("ES256", K_EC_LZ, NULL), .payload = P_OK, .ks = KS_EC_LZ,
      .want = AURA_JWT_OK, .want_sub = "u1" },
    { "EC JWK key, token of another EC key", NULL,
      LIBJWT("ES256", K_EC, NULL), .payload = P_OK, .ks = KS_EC_LZ,
      .want = AURA_JWT_BAD_SIGNATURE },

    /* alg none */
    { "alg none, empty signature part", NULL,
      RAW("{\"alg\":\"none\",\"typ\":\"JWT\"}", K_NONE), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "alg none, no signature part", NULL,
      RAW("{\"alg\":\"none\",\"typ\":\"JWT\"}", K_NONE), .payload = P_OK,
      .mut = MUT_DROP_SIG, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "alg none, with a signature", NULL,
      RAW("{\"alg\":\"none\",\"kid\":\"hs1\"}", K_HS), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "alg None", NULL, RAW("{\"alg\":\"None\"}", K_NONE), .payload = P_OK,
      .ks = KS_NOKID, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "alg NONE, set without kids", NULL, RAW("{\"alg\":\"NONE\"}", K_NONE),
      .payload = P_OK, .ks = KS_NOKID, .want = AURA_JWT_ALG_NOT_ALLOWED },

    /* algorithm and key type confusion */
    { "RS256 header, kid of an oct key", NULL,
      RAW("{\"alg\":\"RS256\",\"kid\":\"hs1\"}", K_HS), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "RS256, set holds only an oct key", NULL,
      LIBJWT("RS256", K_RSA, NULL), .payload = P_OK, .ks = KS_OCT,
      .want = AURA_JWT_UNKNOWN_KID },
    { "HS256 keyed with the RSA public PEM, kid of the RSA key", NULL,
      RAW("{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"rsa1\"}",
          K_RSA_PUB_HMAC), .payload = P_OK, .ks = KS_ALL,
      .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "HS256 keyed with the RSA public PEM, by libjwt", NULL,
      LIBJWT("HS256", K_RSA_PUB_HMAC, "rsa1"), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "HS256 keyed with the RSA public PEM, only RSA allowed", NULL,
      LIBJWT("HS256", K_RSA_PUB_HMAC, "rsa1"), .payload = P_OK,
      .ks = KS_ALL, .algs = AURA_JWT_RS256,
      .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "HS256 keyed with the RSA public PEM, no kid", NULL,
      RAW("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", K_RSA_PUB_HMAC),
      .payload = P_OK, .ks = KS_RSA_NOKID, .want = AURA_JWT_UNKNOWN_KID },
    { "HS256, policy allows RS256 only", NULL,
      LIBJWT("HS256", K_HS, "hs1"), .payload = P_OK, .ks = KS_ALL,
      .algs = AURA_JWT_RS256, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "ES256, policy allows RS256 and HS256", NULL,
      LIBJWT("ES256", K_EC, "ec1"), .payload = P_OK, .ks = KS_ALL,
      .algs = AURA_JWT_RS256 | AURA_JWT_HS256,
      .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "ES256 header, kid of the RSA key", NULL,
      RAW("{\"alg\":\"ES256\",\"kid\":\"rsa1\"}", K_EC), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "alg rs256 (libjwt takes it)", NULL,
      RAW("{\"alg\":\"rs256\",\"kid\":\"rsa1\"}", K_RSA), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "alg RS384", NULL, RAW("{\"alg\":\"RS384\",\"kid\":\"rsa1\"}", K_RSA),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "alg PS256", NULL, RAW("{\"alg\":\"PS256\",\"kid\":\"rsa1\"}", K_RSA),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "alg HS256 with trailing space", NULL,
      RAW("{\"alg\":\"HS256 \",\"kid\":\"hs1\"}", K_HS), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_ALG_NOT_ALLOWED },
    { "header jku is never followed", NULL,
      RAW("{\"alg\":\"RS256\",\"jku\":\"https://evil.test/jwks\"}", K_RSA2),
      .payload = P_OK, .ks = KS_RSA_NOKID,
      .want = AURA_JWT_BAD_SIGNATURE },

    /* key selection */
    { "unknown kid", NULL, LIBJWT("RS256", K_RSA, "nope"), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_UNKNOWN_KID },
    { "kid, keys without kid", NULL, LIBJWT("RS256", K_RSA, "rsa1"),
      .payload = P_OK, .ks = KS_NOKID, .want = AURA_JWT_UNKNOWN_KID },
    { "two RSA keys, no kid in the token", NULL,
      LIBJWT("RS256", K_RSA, NULL), .payload = P_OK, .ks = KS_TWO_RSA,
      .want = AURA_JWT_UNKNOWN_KID },
    { "two RSA keys, kid b", NULL, LIBJWT("RS256", K_RSA2, "b"),
      .payload = P_OK, .ks = KS_TWO_RSA, .want = AURA_JWT_OK,
      .want_sub = "u1" },
    { "two RSA keys, kid a, signed by b", NULL,
      LIBJWT("RS256", K_RSA2, "a"), .payload = P_OK, .ks = KS_TWO_RSA,
      .want = AURA_JWT_BAD_SIGNATURE },
    { "empty key set", NULL, LIBJWT("RS256", K_RSA, NULL), .payload = P_OK,
      .ks = KS_EMPTY, .want = AURA_JWT_UNKNOWN_KID },
    { "kid not a string", NULL,
      RAW("{\"alg\":\"HS256\",\"kid\":5}", K_HS), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "kid empty string", NULL,
      RAW("{\"alg\":\"HS256\",\"kid\":\"\"}", K_HS), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_UNKNOWN_KID },

    /* signatures */
    { "RS256 flipped signature byte", NULL, RAW(H_RS, K_RSA),
      .payload = P_OK, .mut = MUT_FLIP_SIG, .ks = KS_ALL,
      .want = AURA_JWT_BAD_SIGNATURE },
    { "ES256 flipped signature byte", NULL, RAW(H_ES, K_EC),
      .payload = P_OK, .mut = MUT_FLIP_SIG, .ks = KS_ALL,
      .want = AURA_JWT_BAD_SIGNATURE },
    { "HS256 flipped signature byte", NULL, HS_RAW(P_OK),
      .mut = MUT_FLIP_SIG, .want = AURA_JWT_BAD_SIGNATURE },
    { "RS256 payload swapped", NULL, RAW(H_RS, K_RSA), .payload = P_OK,
      .mut = MUT_SWAP_PAYLOAD,
      .alt = "{\"sub\":\"admin\",\"exp\":1700000300}", .ks = KS_ALL,
      .want = AURA_JWT_BAD_SIGNATURE },
    { "HS256 payload swapped", NULL, HS_RAW(P_OK), .mut = MUT_SWAP_PAYLOAD,
      .alt = "{\"sub\":\"admin\",\"exp\":1700000300}",
      .want = AURA_JWT_BAD_SIGNATURE },
    { "HS256 with another secret", NULL, LIBJWT("HS256", K_HS2, "hs1"),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_BAD_SIGNATURE },
    { "RS256 signed by another key", NULL, RAW(H_RS, K_RSA2),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_BAD_SIGNATURE },
    { "ES256 signature in DER", NULL, RAW(H_ES, K_EC_DER), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_BAD_SIGNATURE },
    { "RS256 empty signature", NULL, RAW(H_RS, K_NONE), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_BAD_SIGNATURE },
    { "HS256 empty signature", NULL, RAW(H_HS, K_NONE), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_BAD_SIGNATURE },
    { "RS256 non-canonical base64url signature", NULL, RAW(H_RS, K_RSA),
      .payload = P_OK, .mut = MUT_NONCANON_SIG, .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "HS256 non-canonical base64url signature", NULL, HS_RAW(P_OK),
      .mut = MUT_NONCANON_SIG, .want = AURA_JWT_MALFORMED },

    /* exp, nbf, iat (now 1700000000, leeway 60) */
    { "expired beyond the leeway", NULL,
      HS_RAW("{\"sub\":\"u1\",\"exp\":1699999939}"),
      .want = AURA_JWT_EXPIRED },
    { "expired, at the leeway's edge", NULL,
      HS_RAW("{\"sub\":\"u1\",\"exp\":1699999940}"), .want = AURA_JWT_OK,
      .want_sub = "u1", .want_exp = APR_INT64_C(1699999940000000) },
    { "expired, inside the leeway", NULL,
      HS_RAW("{\"sub\":\"u1\",\"exp\":1699999941}"), .want = AURA_JWT_OK,
      .want_sub = "u1" },
    { "expired long ago", NULL, HS_RAW("{\"sub\":\"u1\",\"exp\":1}"),
      .want = AURA_JWT_EXPIRED },
    { "exp negative", NULL, HS_RAW("{\"sub\":\"u1\",\"exp\":-5}"),
      .want = AURA_JWT_EXPIRED },
    { "exp a real", NULL,
      HS_RAW("{\"sub\":\"u1\",\"exp\":1700000300.5}"), .want = AURA_JWT_OK,
      .want_sub = "u1", .want_exp = APR_INT64_C(1700000300500000) },
    { "exp a real, expired", NULL,
      HS_RAW("{\"sub\":\"u1\",\"exp\":1699999939.5}"),
      .want = AURA_JWT_EXPIRED },
    { "exp a real in exponent notation", NULL,
      HS_RAW("{\"sub\":\"u1\",\"exp\":1.7000003e9}"), .want = AURA_JWT_OK,
      .want_sub = "u1", .want_exp = EXP_OK },
    { "exp far future, clamped", NULL,
      HS_RAW("{\"sub\":\"u1\",\"exp\":1e300}"), .want = AURA_JWT_OK,
      .want_sub = "u1", .want_exp = APR_INT64_C(253402300799000000) },
    { "exp too big an integer for jansson", NULL,
      HS_RAW("{\"exp\":99999999999999999999999}"),
      .want = AURA_JWT_MALFORMED },
    { "exp missing", NULL, HS_RAW("{\"sub\":\"u1\"}"),
      .want = AURA_JWT_NO_EXP },
    { "exp missing, empty payload", NULL, HS_RAW("{}"),
      .want = AURA_JWT_NO_EXP },
    { "exp a string", NULL, HS_RAW("{\"sub\":\"u1\",\"exp\":\"1700000300\"}"),
      .want = AURA_JWT_MALFORMED },
    { "exp null", NULL, HS_RAW("{\"sub\":\"u1\",\"exp\":null}"),
      .want = AURA_JWT_MALFORMED },
    { "exp true", NULL, HS_RAW("{\"sub\":\"u1\",\"exp\":true}"),
      .want = AURA_JWT_MALFORMED },
    { "nbf in the future", NULL,
      HS_RAW("{\"exp\":1700000300,\"nbf\":1700000061}"),
      .want = AURA_JWT_NOT_YET_VALID },
    { "nbf at the leeway's edge", NULL,
      HS_RAW("{\"exp\":1700000300,\"nbf\":1700000060}"),
      .want = AURA_JWT_OK },
    { "nbf in the past", NULL,
      HS_RAW("{\"exp\":1700000300,\"nbf\":1600000000}"),
      .want = AURA_JWT_OK },
    { "nbf a string", NULL,
      HS_RAW("{\"exp\":1700000300,\"nbf\":\"0\"}"),
      .want = AURA_JWT_MALFORMED },
    { "iat in the future", NULL,
      HS_RAW("{\"exp\":1700000300,\"iat\":1700000061}"),
      .want = AURA_JWT_NOT_YET_VALID },
    { "iat inside the leeway", NULL,
      HS_RAW("{\"exp\":1700000300,\"iat\":1700000060}"),
      .want = AURA_JWT_OK },
    { "iat a real in the past", NULL,
      HS_RAW("{\"exp\":1700000300,\"iat\":1699999000.25}"),
      .want = AURA_JWT_OK },
    { "iat an array", NULL, HS_RAW("{\"exp\":1700000300,\"iat\":[]}"),
      .want = AURA_JWT_MALFORMED },

    /* AuraTokenMaxLifetime (issue #32: revocations held for the longest
     * token lifetime): 3600 s here, the leeway (60 s) on top. */
    { "max lifetime: no iat", "#32",
      HS_RAW("{\"sub\":\"u1\",\"exp\":1700000300}"), .max_life_s = 3600,
      .want = AURA_JWT_NO_IAT },
    { "no max lifetime: no iat is fine", "#32",
      HS_RAW("{\"sub\":\"u1\",\"exp\":1700000300}"),
      .want = AURA_JWT_OK, .want_sub = "u1" },
    { "max lifetime: exp - iat exactly the limit", "#32",
      HS_RAW("{\"sub\":\"u1\",\"iat\":1699999000,\"exp\":1700002600}"),
      .max_life_s = 3600, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "max lifetime: the limit plus the leeway", "#32",
      HS_RAW("{\"sub\":\"u1\",\"iat\":1699999000,\"exp\":1700002660}"),
      .max_life_s = 3600, .want = AURA_JWT_OK, .want_sub = "u1" },
    { "max lifetime: a second over the limit plus the leeway", "#32",
      HS_RAW("{\"sub\":\"u1\",\"iat\":1699999000,\"exp\":1700002661}"),
      .max_life_s = 3600, .want = AURA_JWT_TOO_LONG_LIVED },
    { "max lifetime: half a second over", "#32",
      HS_RAW("{\"iat\":1699999000,\"exp\":1700002660.5}"),
      .max_life_s = 3600, .want = AURA_JWT_TOO_LONG_LIVED },
    { "max lifetime: exp far away, clamped", "#32",
      HS_RAW("{\"iat\":1699999000,\"exp\":1e300}"),
      .max_life_s = 3600, .want = AURA_JWT_TOO_LONG_LIVED },
    { "max lifetime: iat far in the past, clamped", "#32",
      HS_RAW("{\"iat\":-1e300,\"exp\":1700000300}"),
      .max_life_s = 3600, .want = AURA_JWT_TOO_LONG_LIVED },
    { "max lifetime: iat after exp", "#32",
      HS_RAW("{\"iat\":1700000030,\"exp\":1700000010}"),
      .max_life_s = 3600, .want = AURA_JWT_OK },
    { "max lifetime: one second, met", "#32",
      HS_RAW("{\"iat\":1699999999,\"exp\":1700000000}"),
      .max_life_s = 1, .want = AURA_JWT_OK },
    { "max lifetime: expired without iat says expired", "#32",
      HS_RAW("{\"exp\":1699999000}"), .max_life_s = 3600,
      .want = AURA_JWT_EXPIRED },
    { "max lifetime: no exp says no exp", "#32",
      HS_RAW("{\"iat\":1699999000}"), .max_life_s = 3600,
      .want = AURA_JWT_NO_EXP },
    { "max lifetime: iat in the future says not yet valid", "#32",
      HS_RAW("{\"iat\":1700000061,\"exp\":1800000000}"),
      .max_life_s = 3600, .want = AURA_JWT_NOT_YET_VALID },
    { "max lifetime: an RS256 token over it", "#32",
      RAW(H_RS, K_RSA), .ks = KS_ALL,
      .payload = "{\"sub\":\"u1\",\"iat\":1699990000,\"exp\":1700000300}",
      .max_life_s = 3600, .want = AURA_JWT_TOO_LONG_LIVED },

    /* aud */
    { "aud string, exact", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":\"api\"}"), .aud = "api",
      .aud_exact = 1, .want = AURA_JWT_OK },
    { "aud string, non-exact", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":\"api\"}"), .aud = "api",
      .want = AURA_JWT_OK },
    { "aud [api], exact", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\"]}"), .aud = "api",
      .aud_exact = 1, .want = AURA_JWT_OK },
    { "aud [api, x], exact", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\",\"x\"]}"), .aud = "api",
      .aud_exact = 1, .want = AURA_JWT_BAD_AUDIENCE },
    /* Since 0.5.0 an untrusted extra audience is refused unless the
     * policy says any (AuraJWTAudienceMatch any): these two rows were OK
     * by default before. */
    { "aud [api, x], any", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\",\"x\"]}"), .aud = "api",
      .aud_any = 1, .want = AURA_JWT_OK },
    { "aud [x, api], any", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"x\",\"api\"]}"), .aud = "api",
      .aud_any = 1, .want = AURA_JWT_OK },
    { "aud [api, x], all (the default)", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\",\"x\"]}"), .aud = "api",
      .want = AURA_JWT_BAD_AUDIENCE },
    { "aud [x, api], all (the default)", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"x\",\"api\"]}"), .aud = "api",
      .want = AURA_JWT_BAD_AUDIENCE },
    { "aud [api], all", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\"]}"), .aud = "api",
      .want = AURA_JWT_OK },
    { "aud [api, api], all", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\",\"api\"]}"),
      .aud = "api", .want = AURA_JWT_OK },
    { "aud [api, API], all", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\",\"API\"]}"),
      .aud = "api", .want = AURA_JWT_BAD_AUDIENCE },
    { "aud [x, y], any", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"x\",\"y\"]}"), .aud = "api",
      .aud_any = 1, .want = AURA_JWT_BAD_AUDIENCE },
    { "aud [], any", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[]}"), .aud = "api",
      .aud_any = 1, .want = AURA_JWT_BAD_AUDIENCE },
    { "aud [api, x], exact beats any", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\",\"x\"]}"), .aud = "api",
      .aud_exact = 1, .aud_any = 1, .want = AURA_JWT_BAD_AUDIENCE },

    /* sub: bounded, printable (identity) */
    { "sub of 255 bytes", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"" SUB255 "\"}"),
      .require_sub = 1, .want = AURA_JWT_OK, .want_sub = SUB255 },
    { "sub of 256 bytes", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"x" SUB255 "\"}"),
      .require_sub = 1, .want = AURA_JWT_BAD_SUBJECT },
    { "sub of 600 bytes", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"" SUB255 SUB255 SUB90 "\"}"),
      .require_sub = 1, .want = AURA_JWT_BAD_SUBJECT },
    { "sub longer than sub_max", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"abcdef\"}"),
      .require_sub = 1, .sub_max = 5, .want = AURA_JWT_BAD_SUBJECT },
    { "sub as long as sub_max", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"abcde\"}"),
      .require_sub = 1, .sub_max = 5, .want = AURA_JWT_OK,
      .want_sub = "abcde" },
    { "sub with \\u0000 (jansson refuses it)", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"a\\u0000b\"}"),
      .require_sub = 1, .want = AURA_JWT_MALFORMED },
    { "sub with CR LF", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"a\\r\\nAura-Role: x\"}"),
      .require_sub = 1, .want = AURA_JWT_BAD_SUBJECT },
    { "sub with a tab", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"a\\tb\"}"),
      .require_sub = 1, .want = AURA_JWT_BAD_SUBJECT },
    { "sub with \\u001f", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"a\\u001fb\"}"),
      .require_sub = 1, .want = AURA_JWT_BAD_SUBJECT },
    { "sub with DEL", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"a\\u007fb\"}"),
      .require_sub = 1, .want = AURA_JWT_BAD_SUBJECT },
    { "sub with non-ASCII letters", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"J\\u00fcrgen\"}"),
      .require_sub = 1, .want = AURA_JWT_OK, .want_sub = "J\xc3\xbcrgen" },
    { "sub with CR, sub not required", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"a\\rb\"}"),
      .want = AURA_JWT_BAD_SUBJECT },

    /* sub: never in the keys' actor namespace (issue #29 point 6) */
    { "sub key:<hex>, a key's actor", "#29",
      HS_RAW("{\"exp\":1700000300,\"sub\":\"key:0123456789abcdef\"}"),
      .require_sub = 1, .want = AURA_JWT_RESERVED_SUBJECT },
    { "sub key:<hex>, sub not required", "#29",
      HS_RAW("{\"exp\":1700000300,\"sub\":\"key:0123456789abcdef\"}"),
      .want = AURA_JWT_RESERVED_SUBJECT },
    { "sub KEY:<hex>", "#29",
      HS_RAW("{\"exp\":1700000300,\"sub\":\"KEY:0123456789ABCDEF\"}"),
      .want = AURA_JWT_RESERVED_SUBJECT },
    { "sub key: alone", "#29",
      HS_RAW("{\"exp\":1700000300,\"sub\":\"key:\"}"),
      .want = AURA_JWT_RESERVED_SUBJECT },
    { "sub key:<hex>, RS256", "#29", RAW(H_RS, K_RSA),
      .payload = "{\"exp\":1700000300,\"sub\":\"key:0123456789abcdef\"}",
      .ks = KS_ALL, .want = AURA_JWT_RESERVED_SUBJECT },
    { "sub keys:1", "#29",
      HS_RAW("{\"exp\":1700000300,\"sub\":\"keys:1\"}"),
      .want = AURA_JWT_OK, .want_sub = "keys:1" },
    { "sub monkey:1", "#29",
      HS_RAW("{\"exp\":1700000300,\"sub\":\"monkey:1\"}"),
      .want = AURA_JWT_OK, .want_sub = "monkey:1" },
    { "sub key", "#29",
      HS_RAW("{\"exp\":1700000300,\"sub\":\"key\"}"),
      .want = AURA_JWT_OK, .want_sub = "key" },

    /* project claim */
    { "project claim equal", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\",\"aura_project\":\"p1\"}"),
      .project_claim = "aura_project", .project = "p1",
      .want = AURA_JWT_OK, .want_sub = "u" },
    { "project claim of another project", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\",\"aura_project\":\"p2\"}"),
      .project_claim = "aura_project", .project = "p1",
      .want = AURA_JWT_BAD_PROJECT },
    { "project claim absent", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\"}"),
      .project_claim = "aura_project", .project = "p1",
      .want = AURA_JWT_BAD_PROJECT },
    { "project claim a prefix", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\",\"aura_project\":\"p\"}"),
      .project_claim = "aura_project", .project = "p1",
      .want = AURA_JWT_BAD_PROJECT },
    { "project claim an array", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\",\"aura_project\":[\"p1\"]}"),
      .project_claim = "aura_project", .project = "p1",
      .want = AURA_JWT_BAD_PROJECT },
    { "project claim under another name", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\",\"project\":\"p1\"}"),
      .project_claim = "aura_project", .project = "p1",
      .want = AURA_JWT_BAD_PROJECT },
    { "project claim, configured name", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\",\"https://x/p\":\"p1\"}"),
      .project_claim = "https://x/p", .project = "p1",
      .want = AURA_JWT_OK, .want_sub = "u" },
    { "project claim, no project to match", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\",\"aura_project\":\"p1\"}"),
      .project_claim = "aura_project", .want = AURA_JWT_BAD_PROJECT },
    { "project claim not checked", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"u\",\"aura_project\":\"p2\"}"),
      .project = "p1", .want = AURA_JWT_OK, .want_sub = "u" },
    { "aud [x, y], non-exact", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"x\",\"y\"]}"), .aud = "api",
      .want = AURA_JWT_BAD_AUDIENCE },
    { "aud other string", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":\"apix\"}"), .aud = "api",
      .want = AURA_JWT_BAD_AUDIENCE },
    { "aud differs in case", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":\"API\"}"), .aud = "api",
      .aud_exact = 1, .want = AURA_JWT_BAD_AUDIENCE },
    { "aud missing", NULL, HS_RAW("{\"exp\":1700000300}"), .aud = "api",
      .want = AURA_JWT_BAD_AUDIENCE },
    { "aud [], exact", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[]}"), .aud = "api",
      .aud_exact = 1, .want = AURA_JWT_BAD_AUDIENCE },
    { "aud [], non-exact", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[]}"), .aud = "api",
      .want = AURA_JWT_BAD_AUDIENCE },
    { "aud a number", NULL, HS_RAW("{\"exp\":1700000300,\"aud\":5}"),
      .aud = "api", .want = AURA_JWT_MALFORMED },
    { "aud array with a number", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"api\",5]}"), .aud = "api",
      .want = AURA_JWT_MALFORMED },
    { "aud not checked", NULL,
      HS_RAW("{\"exp\":1700000300,\"aud\":[\"x\",\"y\"]}"),
      .want = AURA_JWT_OK },

    /* iss */
    { "iss equal", NULL,
      HS_RAW("{\"exp\":1700000300,\"iss\":\"https://idp.test\"}"),
      .iss = "https://idp.test", .want = AURA_JWT_OK,
      .want_iss = "https://idp.test" },
    { "iss mismatch", NULL,
      HS_RAW("{\"exp\":1700000300,\"iss\":\"https://evil.test\"}"),
      .iss = "https://idp.test", .want = AURA_JWT_BAD_ISSUER },
    { "iss differs in case", NULL,
      HS_RAW("{\"exp\":1700000300,\"iss\":\"https://IDP.test\"}"),
      .iss = "https://idp.test", .want = AURA_JWT_BAD_ISSUER },
    { "iss missing", NULL, HS_RAW("{\"exp\":1700000300}"),
      .iss = "https://idp.test", .want = AURA_JWT_BAD_ISSUER },
    { "iss a number", NULL, HS_RAW("{\"exp\":1700000300,\"iss\":1}"),
      .want = AURA_JWT_MALFORMED },
    { "iss not checked", NULL,
      HS_RAW("{\"exp\":1700000300,\"iss\":\"anyone\"}"),
      .want = AURA_JWT_OK, .want_iss = "anyone" },

    /* sub */
    { "sub required, missing", NULL, HS_RAW("{\"exp\":1700000300}"),
      .require_sub = 1, .want = AURA_JWT_NO_SUBJECT },
    { "sub required, empty", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"\"}"), .require_sub = 1,
      .want = AURA_JWT_NO_SUBJECT },
    { "sub required, present", NULL, HS_RAW(P_OK), .require_sub = 1,
      .want = AURA_JWT_OK, .want_sub = "u1" },
    { "sub a number", NULL, HS_RAW("{\"exp\":1700000300,\"sub\":7}"),
      .want = AURA_JWT_MALFORMED },
    { "sub not required, missing", NULL, HS_RAW("{\"exp\":1700000300}"),
      .want = AURA_JWT_OK, .want_sub = NULL },
    { "sub with \\u0000", NULL,
      HS_RAW("{\"exp\":1700000300,\"sub\":\"a\\u0000b\"}"),
      .want = AURA_JWT_MALFORMED },

    /* size */
    { "longer than max_len", NULL, LIBJWT("RS256", K_RSA, "rsa1"),
      .payload = P_OK, .ks = KS_ALL, .max_len = 100,
      .want = AURA_JWT_TOO_LARGE },
    { "garbage longer than max_len", NULL, LITERAL("!!!!!!!!!!!!"),
      .ks = KS_ALL, .max_len = 10, .want = AURA_JWT_TOO_LARGE },

    /* syntax */
    { "NULL token", NULL, LITERAL(NULL), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "empty token", NULL, LITERAL(""), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "a.b", NULL, LITERAL("a.b"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "....", NULL, LITERAL("...."), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "..", NULL, LITERAL(".."), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "a.b.c.d", NULL, LITERAL("a.b.c.d"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "a.b.c (4n+1 lengths)", NULL, LITERAL("a.b.c"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "empty header", NULL, LITERAL(".e30.c2ln"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "empty payload", NULL,
      LITERAL("eyJhbGciOiJIUzI1NiJ9..c2ln"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "padding =", NULL,
      LITERAL("eyJhbGciOiJIUzI1NiJ9.e30=.c2ln"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "non-base64 character", NULL,
      LITERAL("eyJhbGciOiJIUzI1NiJ9.e30.c2$n"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "standard base64 + and /", NULL,
      LITERAL("eyJhbGciOiJIUzI1NiJ9.e30.c+l/"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "leading space", NULL,
      LITERAL(" eyJhbGciOiJIUzI1NiJ9.e30.c2ln"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "trailing newline", NULL,
      LITERAL("eyJhbGciOiJIUzI1NiJ9.e30.c2ln\n"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "Bearer prefix left on", NULL,
      LITERAL("Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln"), .ks = KS_ALL,
      .want = AURA_JWT_MALFORMED },
    { "header not JSON", NULL, LITERAL("bm90IGpzb24.e30.c2ln"),
      .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "header an array", NULL, RAW("[\"HS256\"]", K_HS), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "header with trailing data", NULL,
      RAW("{\"alg\":\"HS256\",\"kid\":\"hs1\"} x", K_HS), .payload = P_OK,
      .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "header alg twice", NULL,
      RAW("{\"alg\":\"HS256\",\"kid\":\"hs1\",\"alg\":\"none\"}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "alg missing", NULL, RAW("{\"typ\":\"JWT\",\"kid\":\"hs1\"}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "alg a number", NULL, RAW("{\"alg\":256,\"kid\":\"hs1\"}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "typ at+jwt (RFC 9068)", NULL,
      RAW("{\"alg\":\"HS256\",\"typ\":\"at+jwt\",\"kid\":\"hs1\"}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },

    /* explicit typing (RFC 8725 3.11): only where the policy names it */
#define H_RS_LOGOUT "{\"alg\":\"RS256\",\"typ\":\"logout+jwt\",\"kid\":\"rsa1\"}"
    { "typ logout+jwt, logout policy", NULL, RAW(H_RS_LOGOUT, K_RSA),
      .payload = P_OK, .ks = KS_ALL, .typ = "logout+jwt",
      .want = AURA_JWT_OK, .want_sub = "u1" },
    { "typ logout+jwt, ES256, logout policy", NULL,
      RAW("{\"alg\":\"ES256\",\"typ\":\"logout+jwt\",\"kid\":\"ec1\"}",
          K_EC),
      .payload = P_OK, .ks = KS_ALL, .typ = "logout+jwt",
      .want = AURA_JWT_OK, .want_sub = "u1" },
    { "typ application/Logout+JWT, logout policy", NULL,
      RAW("{\"alg\":\"HS256\",\"typ\":\"application/Logout+JWT\","
          "\"kid\":\"hs1\"}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .typ = "logout+jwt",
      .want = AURA_JWT_OK, .want_sub = "u1" },
    { "typ JWT, logout policy", NULL, RAW(H_RS, K_RSA), .payload = P_OK,
      .ks = KS_ALL, .typ = "logout+jwt", .want = AURA_JWT_OK,
      .want_sub = "u1" },
    { "typ logout+jwt as a bearer token", NULL, RAW(H_RS_LOGOUT, K_RSA),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "typ at+jwt, logout policy", NULL,
      RAW("{\"alg\":\"RS256\",\"typ\":\"at+jwt\",\"kid\":\"rsa1\"}",
          K_RSA),
      .payload = P_OK, .ks = KS_ALL, .typ = "logout+jwt",
      .want = AURA_JWT_MALFORMED },
    { "typ logout+jwt with a NUL, logout policy", NULL,
      RAW("{\"alg\":\"RS256\",\"typ\":\"logout+jwt\\u0000x\","
          "\"kid\":\"rsa1\"}", K_RSA),
      .payload = P_OK, .ks = KS_ALL, .typ = "logout+jwt",
      .want = AURA_JWT_MALFORMED },
    { "typ logout+jwt, signature flipped", NULL, RAW(H_RS_LOGOUT, K_RSA),
      .payload = P_OK, .mut = MUT_FLIP_SIG, .ks = KS_ALL,
      .typ = "logout+jwt", .want = AURA_JWT_BAD_SIGNATURE },
    { "typ a number", NULL,
      RAW("{\"alg\":\"HS256\",\"typ\":1,\"kid\":\"hs1\"}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "crit header", NULL,
      RAW("{\"alg\":\"HS256\",\"kid\":\"hs1\",\"crit\":[\"exp\"]}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "crit header, empty", NULL,
      RAW("{\"alg\":\"HS256\",\"kid\":\"hs1\",\"crit\":[]}", K_HS),
      .payload = P_OK, .ks = KS_ALL, .want = AURA_JWT_MALFORMED },
    { "payload not JSON", NULL, HS_RAW("not json"),
      .want = AURA_JWT_MALFORMED },
    { "payload an array", NULL, HS_RAW("[1700000300]"),
      .want = AURA_JWT_MALFORMED },
    { "payload a string", NULL, HS_RAW("\"x\""),
      .want = AURA_JWT_MALFORMED },
    { "payload sub twice", NULL,
      HS_RAW("{\"sub\":\"u1\",\"exp\":1700000300,\"sub\":\"admin\"}"),
      .want = AURA_JWT_MALFORMED },
};

static const char *build_token(apr_pool_t *p, const verify_case_t *c)
{
    const char *tok;
    char *t, *sig;

    switch (c->signer) {
    case SIGN_LITERAL:
        return c->payload;
    case SIGN_LIBJWT:
        tok = sign_libjwt(p, c->alg, c->key, c->kid, c->payload);
        break;
    default:
        tok = sign_raw(p, c->header, c->payload, c->key);
    }
    t = apr_pstrdup(p, tok);
    sig = strrchr(t, '.') + 1;
    switch (c->mut) {
    case MUT_NONE:
        break;
    case MUT_FLIP_SIG: {
        char *m = sig + strlen(sig) / 2;

        *m = (*m == 'A') ? 'B' : 'A';
        break;
    }
    case MUT_SWAP_PAYLOAD: {
        char *dot1 = strchr(t, '.');

        t = apr_pstrcat(p, apr_pstrndup(p, t, dot1 - t + 1),
                        b64url(p, c->alt, strlen(c->alt)), ".", sig, NULL);
        break;
    }
    case MUT_DROP_SIG:
        sig[-1] = '\0';
        break;
    case MUT_NONCANON_SIG: {
        /* RS256 (256 bytes, 4 spare bits) and HS256 (32 bytes, 2 spare
         * bits): set the lowest unused bit of the last character. */
        char *last = sig + strlen(sig) - 1;
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
            "abcdefghijklmnopqrstuvwxyz0123456789-_";
        const char *pos = strchr(alphabet, *last);

        assert_non_null(pos);
        assert_int_not_equal(strlen(sig) % 4, 0);
        *last = alphabet[(pos - alphabet) | 1];
        break;
    }
    }
    return t;
}

static aura_jwt_policy_t policy_of(const verify_case_t *c)
{
    aura_jwt_policy_t pol;

    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(NOW_S);
    pol.leeway = apr_time_from_sec(LEEWAY_S);
    pol.algs = c->algs ? c->algs
                       : AURA_JWT_RS256 | AURA_JWT_ES256 | AURA_JWT_HS256;
    pol.issuer = c->iss;
    pol.audience = c->aud;
    pol.audience_exact = c->aud_exact;
    pol.max_len = c->max_len;
    pol.require_sub = c->require_sub;
    pol.audience_any = c->aud_any;
    pol.sub_max = c->sub_max;
    pol.project_claim = c->project_claim;
    pol.project = c->project;
    pol.typ = c->typ;
    pol.max_lifetime = apr_time_from_sec(c->max_life_s);
    return pol;
}

static const char *expected_alg(const verify_case_t *c)
{
    if (c->signer == SIGN_LIBJWT) {
        return c->alg;
    }
    return strstr(c->header, "RS256") ? "RS256"
           : strstr(c->header, "ES256") ? "ES256" : "HS256";
}

static void test_verify(void **state)
{
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(verify_cases) / sizeof(verify_cases[0]); i++) {
        const verify_case_t *c = &verify_cases[i];
        const char *tok = build_token(p, c);
        aura_jwt_policy_t pol = policy_of(c);
        aura_jwt_claims_t out;
        aura_jwt_result_e got;

        got = aura_jwt_verify(p, fx.ks[c->ks], &pol, tok, &out);
        if (got != c->want) {
            print_error("row %zu \"%s\"%s%s: expected %d (%s), got %d (%s)\n",
                        i, c->name, c->issue ? " issue " : "",
                        c->issue ? c->issue : "", c->want,
                        aura_jwt_result_text(c->want), got,
                        aura_jwt_result_text(got));
        }
        assert_int_equal(got, c->want);
        if (got != AURA_JWT_OK) {
            assert_null(out.sub);
            assert_null(out.alg);
            assert_null(out.claims_json);
            assert_true(out.exp == 0);
            continue;
        }
        if (c->want_sub) {
            assert_string_equal(out.sub, c->want_sub);
        }
        else {
            assert_null(out.sub);
        }
        if (c->want_iss) {
            assert_string_equal(out.iss, c->want_iss);
        }
        else {
            assert_null(out.iss);
        }
        if (c->want_exp) {
            assert_true(out.exp == c->want_exp);
        }
        assert_true(out.exp != 0);
        assert_string_equal(out.alg, expected_alg(c));
        assert_non_null(out.claims_json);
        if (c->signer == SIGN_RAW) {
            assert_string_equal(out.claims_json, c->payload);
        }
        if (c->signer == SIGN_LIBJWT && c->kid) {
            assert_string_equal(out.kid, c->kid);
        }
        else if (c->signer == SIGN_LIBJWT) {
            assert_null(out.kid);
        }
    }
}

/* The confusion tokens above are real attacks: libjwt alone takes them. */
static void test_libjwt_alone_is_fooled(void **state)
{
    apr_pool_t *p = *state;
    aura_jwt_policy_t pol;
    aura_jwt_claims_t out;
    jwt_t *jwt = NULL;
    const char *tok;

    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(NOW_S);
    pol.algs = AURA_JWT_RS256 | AURA_JWT_HS256;

    tok = sign_raw(p, "{\"alg\":\"HS256\",\"typ\":\"JWT\"}", P_OK,
                   K_RSA_PUB_HMAC);
    assert_int_equal(jwt_decode(&jwt, tok,
                                (const unsigned char *)fx.rsa.pub_pem,
                                (int)strlen(fx.rsa.pub_pem)), 0);
    jwt_free(jwt);
    jwt = NULL;
    assert_int_not_equal(aura_jwt_verify(p, fx.ks[KS_RSA_NOKID], &pol, tok,
                                         &out), AURA_JWT_OK);
    assert_int_not_equal(aura_jwt_verify(p, fx.ks[KS_ALL], &pol, tok, &out),
                         AURA_JWT_OK);

    tok = sign_raw(p, "{\"alg\":\"none\"}", P_OK, K_NONE);
    assert_int_equal(jwt_decode(&jwt, tok, NULL, 0), 0);
    jwt_free(jwt);
    assert_int_equal(aura_jwt_verify(p, fx.ks[KS_ALL], &pol, tok, &out),
                     AURA_JWT_ALG_NOT_ALLOWED);
}

static void test_max_len_boundary(void **state)
{
    apr_pool_t *p = *state;
    const char *tok = sign_libjwt(p, "ES256", K_EC, "ec1", P_OK);
    aura_jwt_policy_t pol;

    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(NOW_S);
    pol.algs = AURA_JWT_ES256;
    pol.max_len = strlen(tok);
    assert_int_equal(aura_jwt_verify(p, fx.ks[KS_ALL], &pol, tok, NULL),
                     AURA_JWT_OK);
    pol.max_len = strlen(tok) - 1;
    assert_int_equal(aura_jwt_verify(p, fx.ks[KS_ALL], &pol, tok, NULL),
                     AURA_JWT_TOO_LARGE);
    /* 0: the default bound */
    pol.max_len = 0;
    assert_int_equal(aura_jwt_verify(p, fx.ks[KS_ALL], &pol, tok, NULL),
                     AURA_JWT_OK);
    {
        char *big = apr_palloc(p, AURA_JWT_DEFAULT_MAX_LEN + 2);

        memset(big, 'A', AURA_JWT_DEFAULT_MAX_LEN + 1);
        big[AURA_JWT_DEFAULT_MAX_LEN + 1] = '\0';
        assert_int_equal(aura_jwt_verify(p, fx.ks[KS_ALL], &pol, big, NULL),
                         AURA_JWT_TOO_LARGE);
    }
}

/* ------------------------------------------------------------------ */
/* Key sets: PEM and secrets                                           */

typedef enum {
    SRC_RSA_PUB, SRC_EC_PUB, SRC_EC384_PUB, SRC_RSA_PRIV, SRC_EC_PRIV,
    SRC_CERT, SRC_PKCS1, SRC_RSA1024_PUB, SRC_GARBAGE, SRC_EMPTY,
    SRC_SECRET_31, SRC_SECRET_32, SRC_SECRET_64, SRC_SECRET_0,
    SRC_TRUNCATED_PEM
} src_e;

typedef struct {
    const char *name;
    const char *issue;
    src_e src;
    const char *kid;
    apr_status_t want;
} add_case_t;

/* Applied in order to one fresh set per run: duplicates are detected
 * against the rows before. */
static const add_case_t add_cases[] = {
    { "RSA SPKI",                 NULL, SRC_RSA_PUB,     "k1", APR_SUCCESS },
    { "same kid, same type",      NULL, SRC_RSA_PUB,     "k1", APR_EINVAL },
    { "same kid, EC",             NULL, SRC_EC_PUB,      "k1", APR_SUCCESS },
    { "same kid, secret",         NULL, SRC_SECRET_32,   "k1", APR_SUCCESS },
    { "same kid, secret again",   NULL, SRC_SECRET_64,   "k1", APR_EINVAL },
    { "RSA SPKI, no kid",         NULL, SRC_RSA_PUB,     NULL, APR_SUCCESS },
    { "RSA SPKI, no kid again",   NULL, SRC_RSA_PUB,     NULL, APR_SUCCESS },
    { "EC P-256 SPKI",            NULL, SRC_EC_PUB,      "k2", APR_SUCCESS },
    { "EC P-384 SPKI",            NULL, SRC_EC384_PUB,   "k3", APR_EINVAL },
    { "RSA private key",          NULL, SRC_RSA_PRIV,    "k4", APR_EINVAL },
    { "EC private key",           NULL, SRC_EC_PRIV,     "k5", APR_EINVAL },
    { "certificate",              NULL, SRC_CERT,        "k6", APR_SUCCESS },
    { "PKCS#1 RSA PUBLIC KEY",    NULL, SRC_PKCS1,       "k7", APR_SUCCESS },
    { "RSA 1024",                 NULL, SRC_RSA1024_PUB, "k8", APR_EINVAL },
    { "garbage",                  NULL, SRC_GARBAGE,     "k9", APR_EINVAL },
    { "empty PEM",                NULL, SRC_EMPTY,       "ka", APR_EINVAL },
    { "truncated PEM",            NULL, SRC_TRUNCATED_PEM, "kb",
      APR_EINVAL },
    { "secret of 31 bytes",       NULL, SRC_SECRET_31,   "kc", APR_EINVAL },
    { "secret of 0 bytes",        NULL, SRC_SECRET_0,    "kd", APR_EINVAL },
    { "secret of 64 bytes",       NULL, SRC_SECRET_64,   "ke", APR_SUCCESS },
    { "secret of 32, no kid",     NULL, SRC_SECRET_32,   NULL, APR_SUCCESS },
};

static void test_keyset_add(void **state)
{
    apr_pool_t *p = *state;
    aura_jwt_keyset_t *ks = aura_jwt_keyset_make(p);
    static const unsigned char secret64[64] = { 1, 2, 3 };
    int expected_count = 0;
    size_t i;

    assert_int_equal(aura_jwt_keyset_count(ks), 0);
    assert_int_equal(aura_jwt_keyset_count(NULL), 0);
    for (i = 0; i < sizeof(add_cases) / sizeof(add_cases[0]); i++) {
        const add_case_t *c = &add_cases[i];
        const char *pem = NULL, *err = NULL;
        apr_status_t got;

        switch (c->src) {
        case SRC_RSA_PUB:     pem = fx.rsa.pub_pem;      break;
        case SRC_EC_PUB:      pem = fx.ec.pub_pem;       break;
        case SRC_EC384_PUB:   pem = fx.ec384.pub_pem;    break;
        case SRC_RSA_PRIV:    pem = fx.rsa.priv_pem;     break;
        case SRC_EC_PRIV:     pem = fx.ec.priv_pem;      break;
        case SRC_CERT:        pem = fx.cert_pem;         break;
        case SRC_PKCS1:       pem = fx.rsa_pkcs1_pem;    break;
        case SRC_RSA1024_PUB: pem = fx.rsa1024.pub_pem;  break;
        case SRC_GARBAGE:     pem = "-----BEGIN PUBLIC KEY-----\nAAAA\n"
                                    "-----END PUBLIC KEY-----\n"; break;
        case SRC_EMPTY:       pem = "";                  break;
        case SRC_TRUNCATED_PEM:
            pem = apr_pstrndup(p, fx.rsa.pub_pem, 100);
            break;
        default:
            break;
        }
        switch (c->src) {
        case SRC_SECRET_31:
            got = aura_jwt_keyset_add_secret(ks, c->kid,
                      (const unsigned char *)secret1, 31, &err);
            break;
        case SRC_SECRET_32:
            got = aura_jwt_keyset_add_secret(ks, c->kid,
                      (const unsigned char *)secret1, 32, &err);
            break;
        case SRC_SECRET_64:
            got = aura_jwt_keyset_add_secret(ks, c->kid, secret64, 64, &err);
            break;
        case SRC_SECRET_0:
            got = aura_jwt_keyset_add_secret(ks, c->kid, NULL, 0, &err);
            break;
        default:
            assert_non_null(pem);
            got = aura_jwt_keyset_add_pem(ks, c->kid, pem, strlen(pem),
                                          &err);
        }
        if (got != c->want) {
            print_error("row %zu \"%s\": expected %d, got %d (%s)\n", i,
                        c->name, c->want, got, err ? err : "");
        }
        assert_int_equal(got, c->want);
        if (got == APR_SUCCESS) {
            expected_count++;
        }
        else {
            assert_non_null(err);
            assert_true(err[0] != '\0');
        }
        assert_int_equal(aura_jwt_keyset_count(ks), expected_count);
    }
}

/* A PEM need not be NUL-terminated: only len bytes are read.  Keys
 * given as a certificate or as PKCS#1 ("BEGIN RSA PUBLIC KEY", which
 * libjwt cannot read) are stored as SPKI and verify. */
static void test_keyset_pem_forms(void **state)
{
    apr_pool_t *p = *state;
    aura_jwt_keyset_t *ks = aura_jwt_keyset_make(p);
    size_t len = strlen(fx.ec.pub_pem);
    char *buf = apr_palloc(p, len + 8);
    aura_jwt_policy_t pol;
    const char *tok;

    memcpy(buf, fx.ec.pub_pem, len);
    memset(buf + len, 'Z', 8);          /* no NUL anywhere after */
    assert_int_equal(aura_jwt_keyset_add_pem(ks, "x", buf, len, NULL),
                     APR_SUCCESS);
    assert_int_equal(aura_jwt_keyset_add_pem(ks, "y", buf, len - 30, NULL),
                     APR_EINVAL);
    assert_int_equal(aura_jwt_keyset_add_pem(ks, "pkcs1", fx.rsa_pkcs1_pem,
                                             strlen(fx.rsa_pkcs1_pem),
                                             NULL), APR_SUCCESS);

    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(NOW_S);
    pol.algs = AURA_JWT_RS256 | AURA_JWT_ES256;
    tok = sign_libjwt(p, "ES256", K_EC, "x", P_OK);
    assert_int_equal(aura_jwt_verify(p, ks, &pol, tok, NULL), AURA_JWT_OK);
    tok = sign_libjwt(p, "RS256", K_RSA, "pkcs1", P_OK);
    assert_int_equal(aura_jwt_verify(p, ks, &pol, tok, NULL), AURA_JWT_OK);
}

/* ------------------------------------------------------------------ */
/* Key sets: JWKS                                                      */

typedef enum {
    J_END = 0,
    J_RSA,          /* fx.rsa; extra appended */
    J_RSA_PADDED,   /* n and e with '=' padding */
    J_RSA1024,
    J_EC,           /* fx.ec P-256 */
    J_EC384,        /* fx.ec384 with crv P-384 */
    J_EC384_AS_256, /* P-384 coordinates claiming P-256 */
    J_EC_OFFCURVE,  /* x of ec, y of ec_lz */
    J_EC_LONG_X,    /* x of 33 bytes */
    J_OCT,          /* secret1 */
    J_OCT_SHORT,    /* 31 bytes */
    J_RAW           /* extra is the whole member */
} jwk_kind_e;

typedef struct {
    jwk_kind_e kind;
    const char *extra;
} jwk_spec_t;

typedef struct {
    const char *name;
    const char *issue;
    const char *doc;            /* literal document, or NULL: members */
    jwk_spec_t members[MAX_JWK];
    apr_status_t want;
    int want_added;
} jwks_case_t;

static const jwks_case_t jwks_cases[] = {
    { "not JSON", NULL, "{\"keys\":[", { { J_END, NULL } }, APR_EINVAL, 0 },
    { "empty document", NULL, "", { { J_END, NULL } }, APR_EINVAL, 0 },
    { "an array", NULL, "[]", { { J_END, NULL } }, APR_EINVAL, 0 },
    { "no keys", NULL, "{}", { { J_END, NULL } }, APR_EINVAL, 0 },
    { "keys an object", NULL, "{\"keys\":{}}", { { J_END, NULL } },
      APR_EINVAL, 0 },
    { "keys empty", NULL, "{\"keys\":[]}", { { J_END, NULL } },
      APR_EINVAL, 0 },
    { "duplicate keys member", NULL, "{\"keys\":[],\"keys\":[]}",
      { { J_END, NULL } }, APR_EINVAL, 0 },
    { "RSA, EC, oct", NULL, NULL,
      { { J_RSA, ",\"kid\":\"r\",\"use\":\"sig\",\"alg\":\"RS256\"" },
        { J_EC, ",\"kid\":\"e\",\"use\":\"sig\",\"alg\":\"ES256\"" },
        { J_OCT, ",\"kid\":\"o\",\"use\":\"sig\",\"alg\":\"HS256\"" } },
      APR_SUCCESS, 3 },
    { "no kid, no use, no alg", NULL, NULL,
      { { J_RSA, "" }, { J_EC, "" }, { J_OCT, "" } }, APR_SUCCESS, 3 },
    { "EC P-384 only", NULL, NULL, { { J_EC384, ",\"kid\":\"e\"" } },
      APR_EINVAL, 0 },
    { "EC P-384 skipped, RSA kept", NULL, NULL,
      { { J_EC384, ",\"kid\":\"e\"" }, { J_RSA, ",\"kid\":\"r\"" } },
      APR_SUCCESS, 1 },
    { "P-384 coordinates claiming P-256", NULL, NULL,
      { { J_EC384_AS_256, "" }, { J_RSA, "" } }, APR_SUCCESS, 1 },
    { "EC point not on the curve", NULL, NULL,
      { { J_EC_OFFCURVE, "" }, { J_RSA, "" } }, APR_SUCCESS, 1 },
    { "EC x of 33 bytes", NULL, NULL,
      { { J_EC_LONG_X, "" }, { J_RSA, "" } }, APR_SUCCESS, 1 },
    { "use enc skipped", NULL, NULL,
      { { J_RSA, ",\"kid\":\"r\",\"use\":\"enc\"" },
        { J_EC, ",\"kid\":\"e\"" } }, APR_SUCCESS, 1 },
    { "use enc only", NULL, NULL,
      { { J_RSA, ",\"use\":\"enc\"" } }, APR_EINVAL, 0 },
    { "use not a string", NULL, NULL,
      { { J_RSA, ",\"use\":1" }, { J_EC, "" } }, APR_SUCCESS, 1 },
    { "alg contradicts type", NULL, NULL,
      { { J_RSA, ",\"alg\":\"ES256\"" }, { J_EC, ",\"alg\":\"HS256\"" },
        { J_OCT, ",\"alg\":\"RS256\"" }, { J_OCT, ",\"alg\":\"none\"" } },
      APR_EINVAL, 0 },
    { "alg RS512 on RSA", NULL, NULL,
      { { J_RSA, ",\"alg\":\"RS512\"" }, { J_EC, "" } }, APR_SUCCESS, 1 },
    { "kid not a string", NULL, NULL,
      { { J_RSA, ",\"kid\":7" }, { J_EC, "" } }, APR_SUCCESS, 1 },
    { "oct of 31 bytes", NULL, NULL,
      { { J_OCT_SHORT, "" }, { J_EC, "" } }, APR_SUCCESS, 1 },
    { "RSA 1024", NULL, NULL,
      { { J_RSA1024, "" }, { J_EC, "" } }, APR_SUCCESS, 1 },
    { "padded fields tolerated", NULL, NULL,
      { { J_RSA_PADDED, "" } }, APR_SUCCESS, 1 },
    { "same kid and type twice", NULL, NULL,
      { { J_RSA, ",\"kid\":\"r\"" }, { J_RSA, ",\"kid\":\"r\"" } },
      APR_SUCCESS, 1 },
    { "same kid, two types", NULL, NULL,
      { { J_RSA, ",\"kid\":\"r\"" }, { J_EC, ",\"kid\":\"r\"" } },
      APR_SUCCESS, 2 },
    { "members not usable", NULL, NULL,
      { { J_RAW, "5" }, { J_RAW, "{}" }, { J_RAW, "{\"kty\":\"OKP\","
          "\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaa"
          "PcHURo\"}" }, { J_RAW, "{\"kty\":\"RSA\",\"n\":\"!!\",\"e\":"
          "\"AQAB\"}" }, { J_RAW, "{\"kty\":\"oct\"}" },
        { J_RAW, "{\"kty\":\"EC\",\"crv\":\"P-256\"}" } },
      APR_EINVAL, 0 },
};

static const char *jwk_member(apr_pool_t *p, const jwk_spec_t *m)
{
    unsigned char x33[33];
    const char *ex = m->extra ? m->extra : "";

    switch (m->kind) {
    case J_RSA:
        return jwk_rsa(p, &fx.rsa, ex);
    case J_RSA_PADDED:
        return apr_psprintf(p, "{\"kty\":\"RSA\",\"n\":\"%s==\","
                            "\"e\":\"%s=\"%s}", fx.rsa.n, fx.rsa.e, ex);
    case J_RSA1024:
        return jwk_rsa(p, &fx.rsa1024, ex);
    case J_EC:
        return jwk_ec(p, "P-256", fx.ec.x, fx.ec.y, ex);
    case J_EC384:
        return jwk_ec(p, "P-384", fx.ec384.x, fx.ec384.y, ex);
    case J_EC384_AS_256:
        return jwk_ec(p, "P-256", fx.ec384.x, fx.ec384.y, ex);
    case J_EC_OFFCURVE:
        return jwk_ec(p, "P-256", fx.ec.x, fx.ec_lz.y, ex);
    case J_EC_LONG_X: {
        BIGNUM *x = NULL;

        assert_true(EVP_PKEY_get_bn_param(fx.ec.pkey,
                                          OSSL_PKEY_PARAM_EC_PUB_X, &x));
        assert_int_equal(BN_bn2binpad(x, x33, 33), 33);
        BN_free(x);
        return jwk_ec(p, "P-256", b64url(p, x33, 33), fx.ec.y, ex);
    }
    case J_OCT:
        return jwk_oct(p, secret1, 32, ex);
    case J_OCT_SHORT:
        return jwk_oct(p, secret1, 31, ex);
    case J_RAW:
        return ex;
    default:
        return NULL;
    }
}

static void test_keyset_jwks(void **state)
{
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(jwks_cases) / sizeof(jwks_cases[0]); i++) {
        const jwks_case_t *c = &jwks_cases[i];
        aura_jwt_keyset_t *ks = aura_jwt_keyset_make(p);
        const char *doc = c->doc, *err = NULL;
        int added = -1, j;
        apr_status_t got;

        if (!doc) {
            doc = "{\"keys\":[";
            for (j = 0; j < MAX_JWK && c->members[j].kind != J_END; j++) {
                doc = apr_pstrcat(p, doc, j ? "," : "",
                                  jwk_member(p, &c->members[j]), NULL);
            }
            doc = apr_pstrcat(p, doc, "]}", NULL);
        }
        got = aura_jwt_keyset_add_jwks(ks, doc, strlen(doc), &added, &err);
        if (got != c->want || added != c->want_added) {
            print_error("row %zu \"%s\"%s%s: expected %d/%d, got %d/%d "
                        "(%s)\n", i, c->name, c->issue ? " issue " : "",
                        c->issue ? c->issue : "", c->want, c->want_added,
                        got, added, err ? err : "");
        }
        assert_int_equal(got, c->want);
        assert_int_equal(added, c->want_added);
        assert_int_equal(aura_jwt_keyset_count(ks), c->want_added);
        if (got != APR_SUCCESS) {
            assert_non_null(err);
        }
    }
}

/* The JWKS of the fixture verifies what the PEM set verifies, and a
 * JWKS key keeps its kid. */
static void test_jwks_round_trip(void **state)
{
    apr_pool_t *p = *state;
    aura_jwt_policy_t pol;
    aura_jwt_claims_t out;
    static const struct {
        const char *alg;
        key_e key;
        const char *kid;
    } rows[] = {
        { "RS256", K_RSA, "jrsa" }, { "ES256", K_EC, "jec" },
        { "HS256", K_HS, "joct" },
    };
    size_t i;

    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(NOW_S);
    pol.algs = AURA_JWT_RS256 | AURA_JWT_ES256 | AURA_JWT_HS256;
    pol.require_sub = 1;
    assert_int_equal(aura_jwt_keyset_count(fx.ks[KS_JWKS]), 3);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *tok = sign_libjwt(p, rows[i].alg, rows[i].key,
                                      rows[i].kid, P_OK);

        assert_int_equal(aura_jwt_verify(p, fx.ks[KS_JWKS], &pol, tok,
                                         &out), AURA_JWT_OK);
        assert_string_equal(out.kid, rows[i].kid);
        assert_string_equal(out.alg, rows[i].alg);
        assert_string_equal(out.sub, "u1");
        /* same token, same key as PEM/secret: same verdict */
        tok = sign_libjwt(p, rows[i].alg, rows[i].key, NULL, P_OK);
        assert_int_equal(aura_jwt_verify(p, fx.ks[KS_NOKID], &pol, tok,
                                         &out), AURA_JWT_OK);
    }
}

/* ------------------------------------------------------------------ */
/* aura_jwt_parse_algs, aura_jwt_result_text                           */

typedef struct {
    const char *list;
    unsigned int want;
    const char *issue;
} algs_case_t;

static const algs_case_t algs_cases[] = {
    { "RS256 ES256",        AURA_JWT_RS256 | AURA_JWT_ES256, NULL },
    { "RS256",              AURA_JWT_RS256, NULL },
    { "ES256",              AURA_JWT_ES256, NULL },
    { "HS256",              AURA_JWT_HS256, NULL },
    { "HS256 RS256 ES256",  AURA_JWT_RS256 | AURA_JWT_ES256
                            | AURA_JWT_HS256, NULL },
    { "  RS256\tES256  ",   AURA_JWT_RS256 | AURA_JWT_ES256, NULL },
    { "RS256 RS256",        AURA_JWT_RS256, NULL },
    { "none",               0, NULL },
    { "NONE",               0, NULL },
    { "RS256 none",         0, NULL },
    { "rs256",              0, NULL },
    { "RS256 es256",        0, NULL },
    { "RS384",              0, NULL },
    { "PS256",              0, NULL },
    { "RS256,ES256",        0, NULL },
    { "RS2566",             0, NULL },
    { "RS25",               0, NULL },
    { "",                   0, NULL },
    { "   ",                0, NULL },
    { NULL,                 0, NULL },
};

static void test_parse_algs(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(algs_cases) / sizeof(algs_cases[0]); i++) {
        const algs_case_t *c = &algs_cases[i];
        const char *err = NULL;
        unsigned int got = aura_jwt_parse_algs(c->list, &err);

        if (got != c->want) {
            print_error("row %zu: \"%s\": expected %#x, got %#x\n", i,
                        c->list ? c->list : "(null)", c->want, got);
        }
        assert_int_equal(got, c->want);
        if (!got) {
            assert_non_null(err);
            assert_true(err[0] != '\0');
        }
    }
}

static void test_result_text(void **state)
{
    int r, s;

    (void)state;
    for (r = AURA_JWT_OK; r <= AURA_JWT_RESULT_LAST; r++) {
        const char *t = aura_jwt_result_text((aura_jwt_result_e)r);

        assert_non_null(t);
        assert_true(strlen(t) > 0 && strlen(t) < 40);
        for (s = AURA_JWT_OK; s < r; s++) {
            assert_string_not_equal(t,
                aura_jwt_result_text((aura_jwt_result_e)s));
        }
    }
    assert_string_equal(aura_jwt_result_text(AURA_JWT_EXPIRED),
                        "token expired");
    assert_string_equal(aura_jwt_result_text(AURA_JWT_NO_IAT),
                        "token has no issue time");
    assert_string_equal(aura_jwt_result_text(AURA_JWT_TOO_LONG_LIVED),
                        "token outlives AuraTokenMaxLifetime");
    assert_string_equal(aura_jwt_result_text((aura_jwt_result_e)999),
                        "token invalid");
}

/* ------------------------------------------------------------------ */
/* Concurrency: one key set, many threads                              */

#define N_THREADS 4
#define N_ROUNDS  40

typedef struct {
    const char *tokens[4];
    aura_jwt_result_e want[4];
    apr_pool_t *pool;           /* unmanaged: its own allocator */
    int failures;
} thread_job_t;

static void *APR_THREAD_FUNC verify_thread(apr_thread_t *thd, void *data)
{
    thread_job_t *job = data;
    aura_jwt_policy_t pol;
    int i, j;

    (void)thd;
    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(NOW_S);
    pol.leeway = apr_time_from_sec(LEEWAY_S);
    pol.algs = AURA_JWT_RS256 | AURA_JWT_ES256 | AURA_JWT_HS256;
    for (i = 0; i < N_ROUNDS; i++) {
        for (j = 0; j < 4; j++) {
            aura_jwt_claims_t out;

            if (aura_jwt_verify(job->pool, fx.ks[KS_ALL], &pol,
                                job->tokens[j], &out) != job->want[j]) {
                job->failures++;
            }
        }
        apr_pool_clear(job->pool);
    }
    return NULL;
}

static void test_threads(void **state)
{
    apr_pool_t *p = *state;
    thread_job_t jobs[N_THREADS];
    apr_thread_t *thr[N_THREADS];
    const char *tokens[4];
    int i;

    tokens[0] = sign_libjwt(p, "RS256", K_RSA, "rsa1", P_OK);
    tokens[1] = sign_libjwt(p, "ES256", K_EC, "ec1", P_OK);
    tokens[2] = sign_libjwt(p, "HS256", K_HS, "hs1", P_OK);
    tokens[3] = sign_libjwt(p, "RS256", K_RSA2, "rsa1", P_OK);
    for (i = 0; i < N_THREADS; i++) {
        memcpy(jobs[i].tokens, tokens, sizeof(tokens));
        jobs[i].want[0] = jobs[i].want[1] = jobs[i].want[2] = AURA_JWT_OK;
        jobs[i].want[3] = AURA_JWT_BAD_SIGNATURE;
        jobs[i].failures = 0;
        assert_int_equal(apr_pool_create_unmanaged(&jobs[i].pool),
                         APR_SUCCESS);
    }
    for (i = 0; i < N_THREADS; i++) {
        assert_int_equal(apr_thread_create(&thr[i], NULL, verify_thread,
                                           &jobs[i], p), APR_SUCCESS);
    }
    for (i = 0; i < N_THREADS; i++) {
        apr_status_t rv;

        assert_int_equal(apr_thread_join(&rv, thr[i]), APR_SUCCESS);
        apr_pool_destroy(jobs[i].pool);
        assert_int_equal(jobs[i].failures, 0);
    }
}

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_verify,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_libjwt_alone_is_fooled,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_max_len_boundary,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_keyset_add,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_keyset_pem_forms,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_keyset_jwks,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_jwks_round_trip,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_parse_algs,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_result_text,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_threads,
                                        pool_setup, pool_teardown),
    };

    return cmocka_run_group_tests_name("jwt", tests, group_setup,
                                       group_teardown);
}
