/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_jwks.c: libFuzzer harness for the key set builders of
 * mod_aura_common/auth/aura_jwt.c: aura_jwt_keyset_add_jwks, whose input is
 * the JWKS an identity service publishes over NATS (AuraJWKSSubject),
 * and aura_jwt_keyset_add_pem (key files).
 *
 * aura-fuzz: -max_len=8192
 *
 * Input: the first byte picks the mode (even: JWKS, odd: PEM), the rest
 * is the document.  The set already holds one HS256 secret (kid "hs1").
 *
 * Invariants: a JWKS is accepted exactly when it adds a key, and the set
 * then holds that many more keys, never more than the document's "keys"
 * array has members; a refused document leaves the set as it was; a PEM
 * adds one key or none.  A key added from a JWKS can verify a token: an
 * "oct" key with kid "o1" is checked by verifying a token the harness
 * signs with it.  Everything is freed per input (one pool), OpenSSL and
 * jansson objects included.
 *
 * AURA_FUZZ_JWKS_MINT=DIR fuzz/bin/fuzz_jwks writes the seed corpus
 * (JWKS and PEM documents of freshly generated keys) to DIR and exits:
 * how fuzz/corpus/jwks/ was made.
 */
#include "aura_fuzz.h"

#include "apr_strings.h"

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "auth/aura_jwt.h"

static const char secret_hs1[] = "aura-fuzz-hs256-secret-number-one-0123";

/* AURA_FUZZ_VERBOSE=1: print what each input added (to check seeds). */
static int verbose;

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64url(apr_pool_t *p, const unsigned char *d, size_t n)
{
    char *out = apr_palloc(p, n / 3 * 4 + 5), *o = out;
    size_t i;

    for (i = 0; i + 2 < n; i += 3) {
        *o++ = b64[d[i] >> 2];
        *o++ = b64[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *o++ = b64[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)];
        *o++ = b64[d[i + 2] & 63];
    }
    if (n - i == 1) {
        *o++ = b64[d[i] >> 2];
        *o++ = b64[(d[i] & 3) << 4];
    }
    else if (n - i == 2) {
        *o++ = b64[d[i] >> 2];
        *o++ = b64[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *o++ = b64[(d[i + 1] & 15) << 2];
    }
    *o = '\0';
    return out;
}

/* base64url to bytes as a JWK field is read (up to two '=' of padding,
 * no length 4n+1, unused bits zero); -1 otherwise. */
static int unb64url(apr_pool_t *p, const char *s, unsigned char **out,
                    size_t *out_len)
{
    size_t len = strlen(s), i, n = 0;
    unsigned int acc = 0, bits = 0;
    unsigned char *buf;

    for (i = 0; i < 2 && len && s[len - 1] == '='; i++) {
        len--;
    }
    if (len % 4 == 1) {
        return -1;
    }
    buf = apr_palloc(p, len + 1);
    for (i = 0; i < len; i++) {
        const char *c = strchr(b64, s[i]);

        if (!c || !*c) {
            return -1;
        }
        acc = (acc << 6) | (unsigned int)(c - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (unsigned char)(acc >> bits);
        }
        acc &= 0xff;
    }
    if (acc & ((1u << bits) - 1)) {
        return -1;
    }
    *out = buf;
    *out_len = n;
    return 0;
}

/* If the document added an oct key "o1" (the set's only kid o1 of type
 * HS256), a token signed with its k must verify. */
static void check_oct_key(apr_pool_t *p, const aura_jwt_keyset_t *ks,
                          const char *doc, size_t len)
{
    json_t *root = json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL);
    json_t *keys = json_object_get(root, "keys"), *jwk;
    unsigned char *k = NULL, md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    size_t i, k_len = 0, found = 0;
    const char *kval = NULL;
    char *input, *token;
    aura_jwt_policy_t pol;
    aura_jwt_result_e rv;

    json_array_foreach(keys, i, jwk) {
        const char *kid = json_string_value(json_object_get(jwk, "kid"));
        const char *kty = json_string_value(json_object_get(jwk, "kty"));

        if (kid && kty && !strcmp(kid, "o1") && !strcmp(kty, "oct")) {
            found++;
            kval = json_string_value(json_object_get(jwk, "k"));
        }
    }
    /* One candidate, plain (no use/alg to refuse it): it must work. */
    if (found != 1 || !kval || unb64url(p, kval, &k, &k_len) != 0
        || k_len < AURA_JWT_MIN_SECRET_LEN) {
        json_decref(root);
        return;
    }
    json_array_foreach(keys, i, jwk) {
        const char *kid = json_string_value(json_object_get(jwk, "kid"));

        if (kid && !strcmp(kid, "o1")
            && (json_object_get(jwk, "use") || json_object_get(jwk, "alg"))) {
            json_decref(root);
            return;
        }
    }
    json_decref(root);
    {
        static const char h[] = "{\"alg\":\"HS256\",\"kid\":\"o1\"}";
        static const char c[] = "{\"sub\":\"u\",\"exp\":4000000000}";

        input = apr_pstrcat(p, b64url(p, (const unsigned char *)h,
                                      sizeof(h) - 1), ".",
                            b64url(p, (const unsigned char *)c,
                                   sizeof(c) - 1), NULL);
    }
    if (!HMAC(EVP_sha256(), k, (int)k_len, (const unsigned char *)input,
              strlen(input), md, &md_len)) {
        abort();
    }
    token = apr_pstrcat(p, input, ".", b64url(p, md, md_len), NULL);
    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(1767225600);
    pol.algs = AURA_JWT_HS256;
    rv = aura_jwt_verify(p, ks, &pol, token, NULL);
    if (rv != AURA_JWT_OK) {
        fprintf(stderr, "fuzz_jwks: the oct key o1 does not verify: %s\n",
                aura_jwt_result_text(rv));
    }
    AURA_FUZZ_ASSERT(rv == AURA_JWT_OK);
}

static void mint_seeds(const char *dir);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *mint = getenv("AURA_FUZZ_JWKS_MINT");

    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    verbose = getenv("AURA_FUZZ_VERBOSE") != NULL;
    if (mint) {
        mint_seeds(mint);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    aura_jwt_keyset_t *ks;
    const char *err = NULL;
    apr_pool_t *p;
    apr_status_t rv;
    int before, after, added = -1;
    unsigned int mode;

    if (size < 1) {
        return 0;
    }
    mode = aura_fuzz_byte(&data, &size);
    p = aura_fuzz_pool();
    ks = aura_jwt_keyset_make(p);
    AURA_FUZZ_ASSERT(aura_jwt_keyset_add_secret(
                         ks, "hs1", (const unsigned char *)secret_hs1,
                         strlen(secret_hs1), &err) == APR_SUCCESS);
    before = aura_jwt_keyset_count(ks);
    if (!(mode & 1)) {
        json_t *root = json_loadb((const char *)data, size, 0, NULL);
        json_t *keys = json_object_get(root, "keys");
        int members = json_is_array(keys) ? (int)json_array_size(keys) : 0;

        json_decref(root);
        rv = aura_jwt_keyset_add_jwks(ks, (const char *)data, size, &added,
                                      &err);
        after = aura_jwt_keyset_count(ks);
        if (rv == APR_SUCCESS) {
            AURA_FUZZ_ASSERT(added >= 1 && added <= members);
            AURA_FUZZ_ASSERT(after == before + added);
            check_oct_key(p, ks, (const char *)data, size);
        }
        else {
            AURA_FUZZ_ASSERT(rv == APR_EINVAL && added == 0);
            AURA_FUZZ_ASSERT(err != NULL);
            AURA_FUZZ_ASSERT(after == before);
        }
    }
    else {
        const char *kid = (mode & 2) ? "pem1" : NULL;

        rv = aura_jwt_keyset_add_pem(ks, kid, (const char *)data, size, &err);
        after = aura_jwt_keyset_count(ks);
        AURA_FUZZ_ASSERT(rv == APR_SUCCESS ? after == before + 1
                         : after == before && err != NULL);
    }
    if (verbose) {
        fprintf(stderr, "fuzz_jwks: %d key(s) added%s%s\n", after - before,
                err ? ": " : "", err ? err : "");
    }
    apr_pool_destroy(p);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Seeds: AURA_FUZZ_JWKS_MINT=fuzz/corpus/jwks fuzz/bin/fuzz_jwks      */

static void write_seed(const char *dir, const char *name, int mode,
                       const char *body)
{
    char *path = apr_pstrcat(aura_fuzz_root, dir, "/", name, NULL);
    FILE *f = fopen(path, "wb");

    if (!f) {
        perror(path);
        exit(1);
    }
    fputc(mode, f);
    fputs(body, f);
    fclose(f);
}

static char *bn_field(EVP_PKEY *k, const char *name)
{
    BIGNUM *bn = NULL;
    unsigned char buf[1024];
    int n;

    if (!EVP_PKEY_get_bn_param(k, name, &bn)) {
        abort();
    }
    n = BN_bn2bin(bn, buf);
    BN_free(bn);
    return b64url(aura_fuzz_root, buf, (size_t)n);
}

static char *pem_of(EVP_PKEY *k, int private)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL, *out;
    long n;

    if (!b || !(private ? PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0,
                                                   NULL, NULL)
                        : PEM_write_bio_PUBKEY(b, k))) {
        abort();
    }
    n = BIO_get_mem_data(b, &data);
    out = apr_pstrmemdup(aura_fuzz_root, data, (apr_size_t)n);
    BIO_free(b);
    return out;
}

static void mint_seeds(const char *dir)
{
    apr_pool_t *p = aura_fuzz_root;
    EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    EVP_PKEY *rsa1k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    EVP_PKEY *ec384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    unsigned char pub[200];
    size_t pub_len = 0;
    char *n, *e, *n1k, *e1k, *x, *y, *jr, *je, *jo;
    const char *k32 = b64url(p, (const unsigned char *)
                             "0123456789abcdef0123456789abcdef", 32);

    if (!rsa || !rsa1k || !ec || !ec384
        || !EVP_PKEY_get_octet_string_param(ec, OSSL_PKEY_PARAM_PUB_KEY, pub,
                                            sizeof(pub), &pub_len)
        || pub_len != 65) {
        abort();
    }
    n = bn_field(rsa, OSSL_PKEY_PARAM_RSA_N);
    e = bn_field(rsa, OSSL_PKEY_PARAM_RSA_E);
    n1k = bn_field(rsa1k, OSSL_PKEY_PARAM_RSA_N);
    e1k = bn_field(rsa1k, OSSL_PKEY_PARAM_RSA_E);
    x = b64url(p, pub + 1, 32);
    y = b64url(p, pub + 33, 32);
    jr = apr_psprintf(p, "{\"kty\":\"RSA\",\"kid\":\"r1\",\"use\":\"sig\","
                      "\"alg\":\"RS256\",\"n\":\"%s\",\"e\":\"%s\"}", n, e);
    je = apr_psprintf(p, "{\"kty\":\"EC\",\"kid\":\"e1\",\"crv\":\"P-256\","
                      "\"x\":\"%s\",\"y\":\"%s\"}", x, y);
    jo = apr_psprintf(p, "{\"kty\":\"oct\",\"kid\":\"o1\",\"k\":\"%s\"}", k32);

    write_seed(dir, "jwks-all", 0,
               apr_psprintf(p, "{\"keys\":[%s,%s,%s]}", jr, je, jo));
    write_seed(dir, "jwks-rsa", 0, apr_psprintf(p, "{\"keys\":[%s]}", jr));
    write_seed(dir, "jwks-ec", 0, apr_psprintf(p, "{\"keys\":[%s]}", je));
    write_seed(dir, "jwks-oct", 0, apr_psprintf(p, "{\"keys\":[%s]}", jo));
    write_seed(dir, "jwks-oct-padded", 0, apr_psprintf(p,
               "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"o1\",\"k\":\"%s==\"}]}",
               k32));
    write_seed(dir, "jwks-oct-short", 0,
               "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"o1\",\"k\":\"c2hvcnQ\"}]}");
    write_seed(dir, "jwks-rsa-1024", 0, apr_psprintf(p,
               "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"r2\",\"n\":\"%s\","
               "\"e\":\"%s\"}]}", n1k, e1k));
    write_seed(dir, "jwks-ec-p384-curve", 0, apr_psprintf(p,
               "{\"keys\":[{\"kty\":\"EC\",\"kid\":\"e2\",\"crv\":\"P-384\","
               "\"x\":\"%s\",\"y\":\"%s\"}]}", x, y));
    write_seed(dir, "jwks-ec-off-curve", 0, apr_psprintf(p,
               "{\"keys\":[{\"kty\":\"EC\",\"kid\":\"e3\",\"crv\":\"P-256\","
               "\"x\":\"%s\",\"y\":\"%s\"}]}", x, x));
    write_seed(dir, "jwks-ec-short-coord", 0,
               "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AQ\","
               "\"y\":\"Ag\"}]}");
    write_seed(dir, "jwks-dup-kid", 0,
               apr_psprintf(p, "{\"keys\":[%s,%s,%s]}", jo, jo, jr));
    write_seed(dir, "jwks-skips", 0, apr_psprintf(p,
               "{\"keys\":[1,\"x\",{\"kty\":\"RSA\",\"use\":\"enc\",\"n\":\"%s\","
               "\"e\":\"%s\"},{\"kty\":\"oct\",\"alg\":\"RS256\",\"k\":\"%s\"},"
               "{\"kty\":\"oct\",\"kid\":7,\"k\":\"%s\"},{\"kty\":\"OKP\"},%s]}",
               n, e, k32, k32, je));
    write_seed(dir, "jwks-no-keys", 0, "{\"keys\":{}}");
    write_seed(dir, "jwks-dup-names", 0, "{\"keys\":[],\"keys\":[]}");
    write_seed(dir, "jwks-not-json", 0, "{\"keys\":[");
    write_seed(dir, "jwks-x5c", 0, apr_psprintf(p,
               "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"r3\",\"n\":\"%s\","
               "\"e\":\"%s\",\"x5c\":[\"MIIB\"],\"key_ops\":[\"verify\"]}]}",
               n, e));
    write_seed(dir, "pem-rsa", 1, pem_of(rsa, 0));
    write_seed(dir, "pem-ec-kid", 3, pem_of(ec, 0));
    write_seed(dir, "pem-ec384", 1, pem_of(ec384, 0));
    write_seed(dir, "pem-rsa-1024", 1, pem_of(rsa1k, 0));
    write_seed(dir, "pem-private", 1, pem_of(ec, 1));
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(rsa1k);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(ec384);
}
