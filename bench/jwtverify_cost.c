/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * jwtverify_cost.c: the benchmark driver of bench/jwtverify, never built
 * nor run by CI.  What one RS256 or ES256 bearer token costs to verify,
 * before and after aura_jwt.c checked public-key signatures itself:
 *
 *   libjwt ALG N   jwt_decode() with the key's SPKI PEM, N times: the
 *                  call aura_jwt.c made for every RS256/ES256 token
 *                  until it checked signatures with OpenSSL (libjwt
 *                  parses the PEM again on each call);
 *   aura ALG N     aura_jwt_verify() N times: the whole verification as
 *                  the gateway does it now (syntax, header, key choice,
 *                  payload, signature with the EVP_PKEY parsed once,
 *                  claims).
 *
 * ALG is RS256 (RSA 2048) or ES256 (P-256).  The key pair is made here,
 * the token signed by libjwt (typ JWT, kid k1, sub, exp in an hour).
 * Prints "<mode> <alg> <ns per verify>" after 100 warm-up verifies;
 * exits 1 if a verify fails (a benchmark of a refusal would be
 * meaningless).
 */
#include "auth/aura_jwt.h"

#include "apr_general.h"
#include "apr_pools.h"

#include <jwt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char *pub_pem;
    char *priv_pem;
    char *token;
} fixture_t;

static char *pem_of(EVP_PKEY *k, int priv)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL, *out;
    long n;

    if (!b || !(priv ? PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL,
                                                NULL)
                     : PEM_write_bio_PUBKEY(b, k))) {
        abort();
    }
    n = BIO_get_mem_data(b, &data);
    out = strndup(data, (size_t)n);
    BIO_free(b);
    return out;
}

static void make_fixture(const char *alg, fixture_t *f)
{
    int ec = !strcmp(alg, "ES256");
    EVP_PKEY *k = ec ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
                     : EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    jwt_t *jwt = NULL;

    if (!k) {
        abort();
    }
    f->pub_pem = pem_of(k, 0);
    f->priv_pem = pem_of(k, 1);
    if (jwt_new(&jwt)
        || jwt_set_alg(jwt, ec ? JWT_ALG_ES256 : JWT_ALG_RS256,
                       (unsigned char *)f->priv_pem,
                       (int)strlen(f->priv_pem))
        || jwt_add_header(jwt, "kid", "k1")
        || jwt_add_grant(jwt, "sub", "bench-user")
        || jwt_add_grant_int(jwt, "iat", (long)time(NULL))
        || jwt_add_grant_int(jwt, "exp", (long)time(NULL) + 3600)
        || !(f->token = jwt_encode_str(jwt))) {
        abort();
    }
    jwt_free(jwt);
    EVP_PKEY_free(k);
}

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int one_libjwt(const fixture_t *f)
{
    jwt_t *jwt = NULL;
    int ok = jwt_decode(&jwt, f->token, (unsigned char *)f->pub_pem,
                        (int)strlen(f->pub_pem)) == 0;

    jwt_free(jwt);
    return ok;
}

static int one_aura(apr_pool_t *p, const aura_jwt_keyset_t *ks,
                    const aura_jwt_policy_t *pol, const fixture_t *f)
{
    aura_jwt_claims_t out;
    int ok = aura_jwt_verify(p, ks, pol, f->token, &out) == AURA_JWT_OK;

    apr_pool_clear(p);
    return ok;
}

int main(int argc, char **argv)
{
    apr_pool_t *root, *p;
    aura_jwt_keyset_t *ks;
    aura_jwt_policy_t pol;
    fixture_t f;
    const char *err = NULL;
    long i, n;
    int aura, ok = 1;
    double t0;

    if (argc != 4 || (strcmp(argv[1], "libjwt") && strcmp(argv[1], "aura"))
        || (strcmp(argv[2], "RS256") && strcmp(argv[2], "ES256"))
        || (n = atol(argv[3])) <= 0) {
        fprintf(stderr, "usage: %s libjwt|aura RS256|ES256 N\n", argv[0]);
        return 2;
    }
    aura = !strcmp(argv[1], "aura");
    if (apr_initialize() != APR_SUCCESS
        || apr_pool_create(&root, NULL) != APR_SUCCESS
        || apr_pool_create(&p, root) != APR_SUCCESS) {
        return 1;
    }
    make_fixture(argv[2], &f);
    ks = aura_jwt_keyset_make(root);
    if (aura_jwt_keyset_add_pem(ks, "k1", f.pub_pem, strlen(f.pub_pem),
                                &err) != APR_SUCCESS) {
        fprintf(stderr, "key: %s\n", err);
        return 1;
    }
    memset(&pol, 0, sizeof(pol));
    pol.algs = AURA_JWT_RS256 | AURA_JWT_ES256;
    pol.leeway = apr_time_from_sec(30);
    for (i = 0; i < 100; i++) {
        pol.now = apr_time_now();
        ok &= aura ? one_aura(p, ks, &pol, &f) : one_libjwt(&f);
    }
    t0 = now_ns();
    for (i = 0; i < n; i++) {
        ok &= aura ? one_aura(p, ks, &pol, &f) : one_libjwt(&f);
    }
    if (!ok) {
        fprintf(stderr, "a verify failed\n");
        return 1;
    }
    printf("%s %s %.0f\n", argv[1], argv[2], (now_ns() - t0) / (double)n);
    apr_pool_destroy(root);
    apr_terminate();
    return 0;
}
