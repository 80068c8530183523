/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_jwt.c: verification of compact JWS bearer tokens (RS256, ES256,
 * HS256) against a key set built at configuration time from PEM files,
 * HMAC secrets and JWKS documents.  Pure: APR, jansson and OpenSSL
 * only, no httpd.h, so t/unit/test_jwt.c links it as it is.
 *
 * Every step is done here, on purpose.  libjwt 1.10.2 (Debian 12),
 * which the first versions called for the signature, checks a
 * signature and nothing else and lets the token steer it
 * (APACHE-NOTES.md section (h)); what that taught is kept below:
 *  - A NULL or empty key must never mean "no signature": "alg":"none"
 *    is refused before a key is looked for, an empty secret never
 *    enters the set.
 *  - The token must not choose the algorithm: a public key PEM used as
 *    an HMAC secret verifies a forged HS256 token (algorithm
 *    confusion).  So alg must be exactly a JWA name in the policy's
 *    allow-list, the key is chosen by kid and its type pins the
 *    algorithm (a secret only ever verifies HS256, a public key only
 *    RS256 or ES256).  Keys the header offers (jwk, jku, x5u, x5c) are
 *    never used.
 *  - Only P-256 keys enter the set as ES256 keys; RSA keys of 2048 to
 *    8192 bits as RS256 keys.
 *  - exp, nbf, iat, iss, aud and sub are read from the payload with
 *    jansson (integers or reals), and a token without exp is refused.
 *  - typ: absent or "JWT", or the one explicit type the policy names
 *    (RFC 8725 section 3.11: "logout+jwt" for a back-channel
 *    logout_token).  libjwt refused every explicitly typed token, which
 *    is why the signature is no longer its business.
 *  - base64url is decoded strictly (charset, no padding, canonical
 *    trailing bits, exactly three parts), after a length bound and
 *    never onto the stack for an unbounded length.
 *  - Header and payload are parsed with JSON_REJECT_DUPLICATES: no
 *    "last one wins".
 *  - OpenSSL's error queue is cleared after every failure: a stale
 *    queue confuses the next OpenSSL user on the thread (mod_ssl).
 *  - HMAC signatures are compared with CRYPTO_memcmp() on the decoded
 *    MAC, never as texts with strcmp() (CVE-2024-25189).
 *  - Public keys are parsed once, when the set is built (PEM, or JWK ->
 *    EVP_PKEY_fromdata), and used as they are by every verify; caching
 *    verified tokens is the caller's business.
 *
 * Threads: a key set is written only while it is built (configuration
 * time, one thread) and only read afterwards; verification keeps no
 * state between calls and has no static mutable data, so any number of
 * worker threads may verify concurrently (OpenSSL 3 lets them share a
 * public key).  Memory: everything comes from the pool handed in;
 * jansson and OpenSSL objects of a verify are freed explicitly before
 * it returns (nothing is registered on the request pool); the set's
 * public keys are freed by a cleanup of the set's pool.
 */
#include "auth/aura_jwt.h"
#include "auth/aura_identity.h"

#include "apr_lib.h"
#include "apr_strings.h"
#include "apr_tables.h"

#include <jansson.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <limits.h>
#include <string.h>

/* 9999-12-31T23:59:59Z: claim times beyond are clamped there, so the
 * conversion to microseconds and "exp + leeway" cannot overflow. */
#define MAX_CLAIM_SECONDS 253402300799.0

#define EC_P256_COORD 32

/* The longest signature verified, in bytes: an RSA modulus of
 * AURA_JWT_MAX_RSA_BITS. */
#define AURA_JWT_MAX_RSA_BITS 8192
#define AURA_JWT_MAX_SIG (AURA_JWT_MAX_RSA_BITS / 8)

#define SET_ERR(err, text) do { if (err) { *(err) = (text); } } while (0)

typedef struct {
    const char *kid;            /* NULL: the key has no kid */
    unsigned int alg;           /* exactly one AURA_JWT_* bit */
    const unsigned char *key;   /* HS256: the secret; else NULL */
    apr_size_t key_len;
    EVP_PKEY *pkey;             /* RS256, ES256: the public key; else
                                 * NULL.  Only read once the set is built
                                 * (OpenSSL 3 lets threads share a key
                                 * for verification); freed with the
                                 * set's pool. */
} jwt_key_t;

struct aura_jwt_keyset_t {
    apr_pool_t *pool;
    apr_array_header_t *keys;   /* of jwt_key_t */
};

typedef struct {
    const char *name;           /* exact JWA name */
    unsigned int bit;
} alg_def_t;

static const alg_def_t alg_defs[] = {
    { "RS256", AURA_JWT_RS256 },
    { "ES256", AURA_JWT_ES256 },
    { "HS256", AURA_JWT_HS256 },
};

#define N_ALGS (sizeof(alg_defs) / sizeof(alg_defs[0]))

static const alg_def_t *alg_by_name(const char *name, apr_size_t len)
{
    apr_size_t i;

    for (i = 0; i < N_ALGS; i++) {
        if (strlen(alg_defs[i].name) == len
            && !memcmp(alg_defs[i].name, name, len)) {
            return &alg_defs[i];
        }
    }
    return NULL;
}

static const alg_def_t *alg_by_bit(unsigned int bit)
{
    apr_size_t i;

    for (i = 0; i < N_ALGS; i++) {
        if (alg_defs[i].bit == bit) {
            return &alg_defs[i];
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* base64url (RFC 4648 section 5)                                      */

static int b64url_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '-') {
        return 62;
    }
    if (c == '_') {
        return 63;
    }
    return -1;
}

/* How many bytes len base64url characters (unpadded) decode to, plus
 * room for a NUL: what a buffer for b64url_decode_into() needs. */
#define B64URL_DECODED_MAX(len) ((len) / 4 * 3 + 3)

/* Strict decoding into buf (cap bytes, at least B64URL_DECODED_MAX(len)
 * after any padding is dropped), NUL-terminated: base64url alphabet
 * only, no length of the form 4n+1, unused trailing bits zero (one
 * encoding per value).  allow_pad tolerates trailing '=' (JWK fields,
 * configuration input); tokens never get it.  Returns 0 or -1. */
static int b64url_decode_into(const char *s, apr_size_t len, int allow_pad,
                              unsigned char *buf, apr_size_t cap,
                              apr_size_t *out_len)
{
    unsigned int acc = 0, bits = 0;
    apr_size_t i, n = 0;

    if (allow_pad) {
        for (i = 0; i < 2 && len && s[len - 1] == '='; i++) {
            len--;
        }
    }
    if (len % 4 == 1 || cap < B64URL_DECODED_MAX(len)) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        int v = b64url_value((unsigned char)s[i]);

        if (v < 0) {
            return -1;
        }
        acc = ((acc << 6) | (unsigned int)v) & 0xfff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (unsigned char)(acc >> bits);
        }
    }
    if (acc & ((1u << bits) - 1)) {
        return -1;
    }
    buf[n] = '\0';
    *out_len = n;
    return 0;
}

/* The same into a pool buffer of the right size. */
static int b64url_decode(apr_pool_t *p, const char *s, apr_size_t len,
                         int allow_pad, unsigned char **out,
                         apr_size_t *out_len)
{
    unsigned char *buf = apr_palloc(p, B64URL_DECODED_MAX(len));

    if (b64url_decode_into(s, len, allow_pad, buf, B64URL_DECODED_MAX(len),
                           out_len) != 0) {
        return -1;
    }
    *out = buf;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Key set                                                             */

aura_jwt_keyset_t *aura_jwt_keyset_make(apr_pool_t *p)
{
    aura_jwt_keyset_t *ks = apr_pcalloc(p, sizeof(*ks));

    ks->pool = p;
    ks->keys = apr_array_make(p, 4, sizeof(jwt_key_t));
    return ks;
}

int aura_jwt_keyset_count(const aura_jwt_keyset_t *ks)
{
    return ks ? ks->keys->nelts : 0;
}

/* A new slot for a key of type alg.  A kid may appear once per key
 * type: with two, which one verifies would depend on the order of the
 * set. */
static jwt_key_t *push_key(aura_jwt_keyset_t *ks, const char *kid,
                           unsigned int alg, const char **err)
{
    jwt_key_t *k;
    int i;

    for (i = 0; kid && i < ks->keys->nelts; i++) {
        const jwt_key_t *o = &APR_ARRAY_IDX(ks->keys, i, jwt_key_t);

        if (o->alg == alg && o->kid && !strcmp(o->kid, kid)) {
            SET_ERR(err, "a key with this kid and type is already set");
            return NULL;
        }
    }
    k = apr_array_push(ks->keys);
    memset(k, 0, sizeof(*k));
    k->kid = kid ? apr_pstrdup(ks->pool, kid) : NULL;
    k->alg = alg;
    return k;
}

static apr_status_t free_pkey(void *pkey)
{
    EVP_PKEY_free(pkey);
    return APR_SUCCESS;
}

/* Which algorithm a public key may verify: RSA of at least
 * AURA_JWT_MIN_RSA_BITS -> RS256, EC on P-256 -> ES256, nothing else. */
static apr_status_t classify_pkey(EVP_PKEY *pkey, unsigned int *alg,
                                  const char **err)
{
    int id = EVP_PKEY_get_base_id(pkey);

    if (id == EVP_PKEY_RSA) {
        if (EVP_PKEY_get_bits(pkey) < AURA_JWT_MIN_RSA_BITS) {
            SET_ERR(err, "RSA key shorter than 2048 bits");
            return APR_EINVAL;
        }
        /* Bounds the signature buffer, and the cost of one verify a
         * stranger can ask for. */
        if (EVP_PKEY_get_bits(pkey) > AURA_JWT_MAX_RSA_BITS) {
            SET_ERR(err, "RSA key longer than 8192 bits");
            return APR_EINVAL;
        }
        *alg = AURA_JWT_RS256;
        return APR_SUCCESS;
    }
    if (id == EVP_PKEY_EC) {
        char name[80];
        size_t name_len = 0;
        int nid = NID_undef;

        if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME,
                                           name, sizeof(name), &name_len)) {
            nid = OBJ_sn2nid(name);
            if (nid == NID_undef) {
                nid = EC_curve_nist2nid(name);
            }
        }
        if (nid != NID_X9_62_prime256v1) {
            SET_ERR(err, "EC key not on curve P-256 (the only one for "
                    "ES256)");
            return APR_EINVAL;
        }
        *alg = AURA_JWT_ES256;
        return APR_SUCCESS;
    }
    SET_ERR(err, "key type not supported (RSA or EC P-256 only)");
    return APR_EINVAL;
}

/* Check a public key and add it to the set, parsed once: every verify
 * uses it as it is. */
static apr_status_t add_pkey(aura_jwt_keyset_t *ks, const char *kid,
                             EVP_PKEY *pkey, const char **err)
{
    EVP_PKEY_CTX *ctx = NULL;
    jwt_key_t *k;
    unsigned int alg = 0;
    apr_status_t rv;

    rv = classify_pkey(pkey, &alg, err);
    if (rv != APR_SUCCESS) {
        goto done;
    }
    rv = APR_EINVAL;
    ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (!ctx || EVP_PKEY_public_check(ctx) != 1) {
        SET_ERR(err, "public key fails its consistency check");
        goto done;
    }
    if (!(k = push_key(ks, kid, alg, err)) || !EVP_PKEY_up_ref(pkey)) {
        goto done;
    }
    k->pkey = pkey;
    apr_pool_cleanup_register(ks->pool, pkey, free_pkey,
                              apr_pool_cleanup_null);
    rv = APR_SUCCESS;
done:
    EVP_PKEY_CTX_free(ctx);
    ERR_clear_error();
    return rv;
}

static int contains(const char *hay, apr_size_t len, const char *needle)
{
    apr_size_t n = strlen(needle), i;

    for (i = 0; i + n <= len; i++) {
        if (!memcmp(hay + i, needle, n)) {
            return 1;
        }
    }
    return 0;
}

/* Never prompt on a terminal for a pass phrase (httpd is detached). */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static EVP_PKEY *read_pem_pubkey(const char *pem, int len)
{
    EVP_PKEY *pkey = NULL;
    X509 *x509 = NULL;
    BIO *bio;

    bio = BIO_new_mem_buf(pem, len);
    if (bio) {
        pkey = PEM_read_bio_PUBKEY(bio, NULL, no_passphrase, NULL);
        BIO_free(bio);
    }
    if (pkey) {
        return pkey;
    }
    bio = BIO_new_mem_buf(pem, len);
    if (bio) {
        x509 = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);
        BIO_free(bio);
    }
    if (x509) {
        pkey = X509_get_pubkey(x509);   /* a new reference */
        X509_free(x509);
    }
    return pkey;
}

apr_status_t aura_jwt_keyset_add_pem(aura_jwt_keyset_t *ks, const char *kid,
                                     const char *pem, apr_size_t len,
                                     const char **err)
{
    EVP_PKEY *pkey;
    apr_status_t rv;

    if (!pem || len == 0 || len > INT_MAX) {
        SET_ERR(err, "empty PEM");
        return APR_EINVAL;
    }
    /* A private key where a public one belongs is an operator mistake
     * worth stopping: the gateway never needs one. */
    if (contains(pem, len, "PRIVATE KEY-----")) {
        SET_ERR(err, "PEM holds a private key; give the public key or "
                "certificate");
        return APR_EINVAL;
    }
    pkey = read_pem_pubkey(pem, (int)len);
    if (!pkey) {
        ERR_clear_error();
        SET_ERR(err, "not a PEM public key (BEGIN PUBLIC KEY) or "
                "certificate");
        return APR_EINVAL;
    }
    rv = add_pkey(ks, kid, pkey, err);
    EVP_PKEY_free(pkey);
    return rv;
}

apr_status_t aura_jwt_keyset_add_secret(aura_jwt_keyset_t *ks,
                                        const char *kid,
                                        const unsigned char *secret,
                                        apr_size_t len, const char **err)
{
    jwt_key_t *k;

    if (!secret || len < AURA_JWT_MIN_SECRET_LEN) {
        SET_ERR(err, "HMAC secret shorter than 32 bytes");
        return APR_EINVAL;
    }
    if (len > INT_MAX) {
        SET_ERR(err, "key material empty or too large");
        return APR_EINVAL;
    }
    if (!(k = push_key(ks, kid, AURA_JWT_HS256, err))) {
        return APR_EINVAL;
    }
    k->key = apr_pmemdup(ks->pool, secret, len);
    k->key_len = len;
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* JWKS                                                                */

/* A base64url member of a JWK, decoded into tmp; -1 if absent, not a
 * string, empty or not base64url. */
static int jwk_field(apr_pool_t *tmp, json_t *jwk, const char *name,
                     unsigned char **out, apr_size_t *out_len)
{
    json_t *v = json_object_get(jwk, name);

    if (!json_is_string(v) || json_string_length(v) == 0) {
        return -1;
    }
    if (b64url_decode(tmp, json_string_value(v), json_string_length(v), 1,
                      out, out_len) != 0 || *out_len == 0) {
        return -1;
    }
    return 0;
}

static EVP_PKEY *pkey_fromdata(const char *type, OSSL_PARAM_BLD *bld)
{
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    EVP_PKEY *pkey = NULL;

    if (params && ctx && EVP_PKEY_fromdata_init(ctx) == 1
        && EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY,
                             params) != 1) {
        pkey = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return pkey;
}

static EVP_PKEY *jwk_rsa(apr_pool_t *tmp, json_t *jwk)
{
    unsigned char *n, *e;
    apr_size_t n_len, e_len;
    BIGNUM *bn_n = NULL, *bn_e = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    EVP_PKEY *pkey = NULL;

    if (jwk_field(tmp, jwk, "n", &n, &n_len) != 0
        || jwk_field(tmp, jwk, "e", &e, &e_len) != 0
        || n_len > INT_MAX || e_len > INT_MAX) {
        return NULL;
    }
    bn_n = BN_bin2bn(n, (int)n_len, NULL);
    bn_e = BN_bin2bn(e, (int)e_len, NULL);
    bld = OSSL_PARAM_BLD_new();
    if (bn_n && bn_e && bld
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n)
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e)) {
        pkey = pkey_fromdata("RSA", bld);
    }
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    return pkey;
}

static EVP_PKEY *jwk_ec(apr_pool_t *tmp, json_t *jwk)
{
    unsigned char *x, *y;
    apr_size_t x_len, y_len;
    unsigned char point[1 + 2 * EC_P256_COORD];
    OSSL_PARAM_BLD *bld;
    EVP_PKEY *pkey = NULL;

    if (!json_is_string(json_object_get(jwk, "crv"))
        || strcmp(json_string_value(json_object_get(jwk, "crv")), "P-256")
        || jwk_field(tmp, jwk, "x", &x, &x_len) != 0
        || jwk_field(tmp, jwk, "y", &y, &y_len) != 0
        || x_len > EC_P256_COORD || y_len > EC_P256_COORD) {
        return NULL;
    }
    /* Uncompressed point 04 || x || y, coordinates left-padded to 32
     * bytes (some encoders drop leading zero bytes). */
    memset(point, 0, sizeof(point));
    point[0] = 0x04;
    memcpy(point + 1 + EC_P256_COORD - x_len, x, x_len);
    memcpy(point + 1 + 2 * EC_P256_COORD - y_len, y, y_len);

    bld = OSSL_PARAM_BLD_new();
    if (bld
        && OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                           "P-256", 0)
        && OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY,
                                            point, sizeof(point))) {
        pkey = pkey_fromdata("EC", bld);
    }
    OSSL_PARAM_BLD_free(bld);
    return pkey;
}

/* One member of "keys": APR_SUCCESS if added, anything else if skipped. */
static apr_status_t jwk_add(aura_jwt_keyset_t *ks, apr_pool_t *tmp,
                            json_t *jwk)
{
    json_t *use = json_object_get(jwk, "use");
    json_t *alg = json_object_get(jwk, "alg");
    json_t *kidv = json_object_get(jwk, "kid");
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    const char *kid = json_string_value(kidv);
    const alg_def_t *def;
    unsigned int bit;
    EVP_PKEY *pkey = NULL;
    apr_status_t rv;

    if (!json_is_object(jwk) || !kty
        || (use && (!json_is_string(use)
                    || strcmp(json_string_value(use), "sig")))
        || (kidv && !kid)) {
        return APR_EINVAL;
    }
    if (!strcmp(kty, "RSA")) {
        bit = AURA_JWT_RS256;
    }
    else if (!strcmp(kty, "EC")) {
        bit = AURA_JWT_ES256;
    }
    else if (!strcmp(kty, "oct")) {
        bit = AURA_JWT_HS256;
    }
    else {
        return APR_EINVAL;
    }
    def = alg_by_bit(bit);
    if (alg && (!json_is_string(alg)
                || strcmp(json_string_value(alg), def->name))) {
        return APR_EINVAL;
    }
    if (bit == AURA_JWT_HS256) {
        unsigned char *k;
        apr_size_t k_len;

        if (jwk_field(tmp, jwk, "k", &k, &k_len) != 0) {
            return APR_EINVAL;
        }
        return aura_jwt_keyset_add_secret(ks, kid, k, k_len, NULL);
    }
    pkey = (bit == AURA_JWT_RS256) ? jwk_rsa(tmp, jwk) : jwk_ec(tmp, jwk);
    if (!pkey) {
        ERR_clear_error();
        return APR_EINVAL;
    }
    rv = add_pkey(ks, kid, pkey, NULL);
    EVP_PKEY_free(pkey);
    return rv;
}

apr_status_t aura_jwt_keyset_add_jwks(aura_jwt_keyset_t *ks,
                                      const char *json, apr_size_t len,
                                      int *added, const char **err)
{
    json_t *root, *keys, *jwk;
    json_error_t jerr;
    apr_pool_t *tmp;
    size_t i;
    int n = 0;

    if (added) {
        *added = 0;
    }
    root = json ? json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr)
                : NULL;
    if (!root) {
        SET_ERR(err, "JWKS is not valid JSON");
        return APR_EINVAL;
    }
    keys = json_object_get(root, "keys");
    if (!json_is_object(root) || !json_is_array(keys)) {
        json_decref(root);
        SET_ERR(err, "JWKS has no \"keys\" array");
        return APR_EINVAL;
    }
    apr_pool_create(&tmp, ks->pool);
    json_array_foreach(keys, i, jwk) {
        if (jwk_add(ks, tmp, jwk) == APR_SUCCESS) {
            n++;
        }
    }
    apr_pool_destroy(tmp);
    json_decref(root);
    if (n == 0) {
        SET_ERR(err, "JWKS has no usable key (RSA, EC P-256 or oct of at "
                "least 32 bytes, for signatures)");
        return APR_EINVAL;
    }
    if (added) {
        *added = n;
    }
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Verification                                                        */

typedef struct {
    const char *token;
    apr_size_t len;
    apr_size_t dot1, dot2;      /* offsets of the two dots */
} parts_t;

typedef struct {
    json_t *json;               /* owned: the header object */
    const alg_def_t *alg;
    const char *kid;            /* pool copy, NULL when absent */
} header_t;

/* Does a base64url part have a valid length and zero unused bits in its
 * last character?  Checked for all three parts: libjwt's lenient decoder
 * would accept several spellings of one signature (a token could change
 * without its signature failing). */
static int canonical_end(const char *s, apr_size_t len)
{
    int last;

    if (len % 4 == 1) {
        return 0;
    }
    if (len % 4 == 0) {
        return 1;
    }
    last = b64url_value((unsigned char)s[len - 1]);
    return !(last & (len % 4 == 2 ? 0xf : 0x3));
}

static aura_jwt_result_e split_token(const char *token, apr_size_t len,
                                     parts_t *t)
{
    apr_size_t i, dots = 0;

    t->token = token;
    t->len = len;
    for (i = 0; i < len; i++) {
        if (token[i] == '.') {
            if (dots == 2) {
                return AURA_JWT_MALFORMED;
            }
            if (dots++ == 0) {
                t->dot1 = i;
            }
            else {
                t->dot2 = i;
            }
        }
        else if (b64url_value((unsigned char)token[i]) < 0) {
            return AURA_JWT_MALFORMED;
        }
    }
    if (dots != 2 || t->dot1 == 0 || t->dot2 == t->dot1 + 1
        || !canonical_end(token, t->dot1)
        || !canonical_end(token + t->dot1 + 1, t->dot2 - t->dot1 - 1)
        || !canonical_end(token + t->dot2 + 1, len - t->dot2 - 1)) {
        return AURA_JWT_MALFORMED;
    }
    return AURA_JWT_OK;
}

/* Decode one part as a JSON object; text is the decoded JSON. */
static aura_jwt_result_e decode_object(apr_pool_t *p, const char *s,
                                       apr_size_t len, json_t **obj,
                                       const char **text)
{
    unsigned char *buf;
    apr_size_t buf_len;
    json_error_t jerr;

    *obj = NULL;
    if (b64url_decode(p, s, len, 0, &buf, &buf_len) != 0
        || memchr(buf, '\0', buf_len)) {
        return AURA_JWT_MALFORMED;
    }
    *obj = json_loadb((const char *)buf, buf_len, JSON_REJECT_DUPLICATES,
                      &jerr);
    if (!*obj) {
        return AURA_JWT_MALFORMED;
    }
    if (!json_is_object(*obj)) {
        json_decref(*obj);
        *obj = NULL;
        return AURA_JWT_MALFORMED;
    }
    if (text) {
        *text = (const char *)buf;
    }
    return AURA_JWT_OK;
}

/* typ absent or "JWT" (RFC 7519 section 5.1) is any token; an explicit
 * type (RFC 8725 section 3.11) only where the policy names it: a
 * "logout+jwt" token is a logout_token and nothing else, so it can
 * never pass for a bearer token.  RFC 7515 section 4.1.9: compared in
 * any case, "application/" may be left out. */
static int typ_ok(json_t *typ, const aura_jwt_policy_t *pol)
{
    const char *v = json_string_value(typ);

    if (!v || strlen(v) != json_string_length(typ)) {
        return 0;
    }
    if (!strcasecmp(v, "JWT")) {
        return 1;
    }
    if (!strncasecmp(v, "application/", 12)) {
        v += 12;
    }
    return pol->typ && !strcasecmp(v, pol->typ);
}

static aura_jwt_result_e parse_header(apr_pool_t *p, const parts_t *t,
                                      const aura_jwt_policy_t *pol,
                                      header_t *h)
{
    json_t *typ, *alg, *kid;
    aura_jwt_result_e rv;

    rv = decode_object(p, t->token, t->dot1, &h->json, NULL);
    if (rv != AURA_JWT_OK) {
        return rv;
    }
    typ = json_object_get(h->json, "typ");
    alg = json_object_get(h->json, "alg");
    kid = json_object_get(h->json, "kid");
    if ((typ && !typ_ok(typ, pol))
        || json_object_get(h->json, "crit")
        || (kid && !json_is_string(kid))
        || !json_is_string(alg)) {
        return AURA_JWT_MALFORMED;
    }
    h->kid = kid ? apr_pstrdup(p, json_string_value(kid)) : NULL;
    h->alg = alg_by_name(json_string_value(alg), json_string_length(alg));
    if (!h->alg || !(pol->algs & h->alg->bit)) {
        return AURA_JWT_ALG_NOT_ALLOWED;
    }
    return AURA_JWT_OK;
}

static aura_jwt_result_e select_key(const aura_jwt_keyset_t *ks,
                                    const header_t *h, const jwt_key_t **key)
{
    int i, kid_seen = 0, matches = 0;

    *key = NULL;
    for (i = 0; ks && i < ks->keys->nelts; i++) {
        const jwt_key_t *k = &APR_ARRAY_IDX(ks->keys, i, jwt_key_t);

        if (h->kid) {
            if (!k->kid || strcmp(k->kid, h->kid)) {
                continue;
            }
            kid_seen = 1;
        }
        if (k->alg == h->alg->bit) {
            *key = k;
            matches++;
        }
    }
    if (h->kid) {
        /* add_key keeps (kid, type) unique: at most one match. */
        if (!kid_seen) {
            return AURA_JWT_UNKNOWN_KID;
        }
        return *key ? AURA_JWT_OK : AURA_JWT_ALG_NOT_ALLOWED;
    }
    if (matches != 1) {
        *key = NULL;
        return AURA_JWT_UNKNOWN_KID;
    }
    return AURA_JWT_OK;
}

/* ------------------------------------------------------------------ */
/* HMAC signatures, checked here                                       */

/* libjwt 1.10.2 checks an HMAC signature by encoding the MAC it
 * computed in base64url and comparing the two texts with strcmp(): the
 * time taken grows with the number of leading characters a forged
 * signature has right, which lets it be found one character at a time
 * (CVE-2024-25189).  Debian's 1.10.2-1+deb12u1 backports a loop
 * (jwt_strcmp) for it; upstream 1.10.2 and other builds do not.  So
 * this file checks HMAC signatures itself, whatever libjwt is linked:
 * the signature part is decoded strictly, must be exactly the MAC's
 * length, and is compared with CRYPTO_memcmp(), whose time depends on
 * the length alone (public: the algorithm's).  One row per HMAC
 * algorithm the gateway accepts (AuraJWTAlgorithms knows HS256 only). */
typedef struct {
    const char *name;               /* exact JWA name */
    const EVP_MD *(*md)(void);
    apr_size_t len;                 /* MAC bytes */
} hmac_def_t;

static const hmac_def_t hmac_defs[] = {
    { "HS256", EVP_sha256, 32 },
};

#define N_HMACS (sizeof(hmac_defs) / sizeof(hmac_defs[0]))

/* The unpadded base64url length of n bytes. */
#define B64URL_LEN(n) (((n) * 4 + 2) / 3)

int aura_jwt_hmac_ok(const char *alg, const char *input,
                     apr_size_t input_len, const char *sig,
                     apr_size_t sig_len, const unsigned char *secret,
                     apr_size_t secret_len)
{
    const hmac_def_t *def = NULL;
    unsigned char want[EVP_MAX_MD_SIZE];
    unsigned char got[B64URL_DECODED_MAX(B64URL_LEN(EVP_MAX_MD_SIZE))];
    unsigned int want_len = 0;
    apr_size_t got_len = 0, i;
    int ok;

    for (i = 0; alg && i < N_HMACS; i++) {
        if (!strcmp(hmac_defs[i].name, alg)) {
            def = &hmac_defs[i];
        }
    }
    if (!def || !input || !sig || !secret || secret_len == 0
        || secret_len > INT_MAX) {
        return 0;
    }
    /* Any other length (truncated, padded, a longer MAC's) is refused
     * before anything is computed: the length is no secret. */
    if (sig_len != B64URL_LEN(def->len)
        || b64url_decode_into(sig, sig_len, 0, got, sizeof(got), &got_len)
           != 0
        || got_len != def->len) {
        return 0;
    }
    if (!HMAC(def->md(), secret, (int)secret_len,
              (const unsigned char *)input, input_len, want, &want_len)
        || want_len != def->len) {
        ERR_clear_error();
        return 0;
    }
    ok = CRYPTO_memcmp(want, got, def->len) == 0;
    /* The right MAC of this input is a valid signature for it. */
    OPENSSL_cleanse(want, sizeof(want));
    return ok;
}

/* ------------------------------------------------------------------ */
/* RS256 and ES256 signatures                                          */

/* JWS carries an ES256 signature as R and S, 32 bytes each, big-endian
 * (RFC 7518 section 3.4); OpenSSL verifies the DER of ECDSA-Sig-Value.
 * Returns the DER length (0 on failure) written into der. */
static int es256_der(const unsigned char *rs, unsigned char *der,
                     int cap)
{
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(rs, EC_P256_COORD, NULL);
    BIGNUM *sv = BN_bin2bn(rs + EC_P256_COORD, EC_P256_COORD, NULL);
    unsigned char *out = der;
    int n = 0;

    if (sig && r && sv && ECDSA_SIG_set0(sig, r, sv)) {
        r = sv = NULL;                  /* owned by sig now */
        if (i2d_ECDSA_SIG(sig, NULL) <= cap) {
            n = i2d_ECDSA_SIG(sig, &out);
        }
    }
    BN_free(r);
    BN_free(sv);
    ECDSA_SIG_free(sig);
    return n > 0 ? n : 0;
}

/* A public-key signature (RS256: RSASSA-PKCS1-v1_5, ES256: ECDSA P-256,
 * both over SHA-256) of input, checked with OpenSSL and the key parsed
 * when the set was built.  libjwt 1.10 is not used for it: it parses
 * the header again from the token, refuses any typ but "JWT" (so an
 * explicitly typed token, RFC 8725 section 3.11, such as a back-channel
 * logout_token of typ "logout+jwt", could never be verified), and
 * re-reads the PEM on every call.  The signature's length is the
 * key's (RSA: the modulus; ES256: 64 bytes): anything else is refused
 * before any arithmetic. */
static int pkey_signature_ok(const jwt_key_t *key, const char *input,
                             apr_size_t input_len, const char *sig,
                             apr_size_t sig_len)
{
    unsigned char raw[B64URL_DECODED_MAX(B64URL_LEN(AURA_JWT_MAX_SIG))];
    unsigned char der[EC_P256_COORD * 2 + 16];
    const unsigned char *check = raw;
    apr_size_t raw_len = 0, want;
    size_t check_len;
    EVP_MD_CTX *ctx;
    int ok = 0;

    want = key->alg == AURA_JWT_ES256 ? 2 * EC_P256_COORD
                                      : (apr_size_t)EVP_PKEY_get_size(key->pkey);
    if (want == 0 || want > AURA_JWT_MAX_SIG
        || sig_len != B64URL_LEN(want)
        || b64url_decode_into(sig, sig_len, 0, raw, sizeof(raw), &raw_len)
           != 0
        || raw_len != want) {
        return 0;
    }
    check_len = raw_len;
    if (key->alg == AURA_JWT_ES256) {
        int n = es256_der(raw, der, (int)sizeof(der));

        if (!n) {
            ERR_clear_error();
            return 0;
        }
        check = der;
        check_len = (size_t)n;
    }
    ctx = EVP_MD_CTX_new();
    ok = ctx
         && EVP_DigestVerifyInit_ex(ctx, NULL, "SHA256", NULL, NULL,
                                    key->pkey, NULL) == 1
         && EVP_DigestVerify(ctx, check, check_len,
                             (const unsigned char *)input, input_len) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

/* The signature with the selected key only: HMAC and public keys here,
 * each with the algorithm the header named and the key's type pinned. */
static aura_jwt_result_e check_signature(const parts_t *t,
                                         const header_t *h,
                                         const jwt_key_t *key)
{
    const char *sig = t->token + t->dot2 + 1;
    apr_size_t sig_len = t->len - t->dot2 - 1;

    if (sig_len == 0 || key->alg != h->alg->bit) {
        return AURA_JWT_BAD_SIGNATURE;
    }
    if (key->alg == AURA_JWT_HS256) {
        return key->key && key->key_len
               && aura_jwt_hmac_ok(h->alg->name, t->token, t->dot2, sig,
                                   sig_len, key->key, key->key_len)
               ? AURA_JWT_OK : AURA_JWT_BAD_SIGNATURE;
    }
    return key->pkey
           && pkey_signature_ok(key, t->token, t->dot2, sig, sig_len)
           ? AURA_JWT_OK : AURA_JWT_BAD_SIGNATURE;
}

static apr_time_t claim_time(json_t *v)
{
    double d = json_number_value(v);

    if (d > MAX_CLAIM_SECONDS) {
        d = MAX_CLAIM_SECONDS;
    }
    else if (d < -MAX_CLAIM_SECONDS) {
        d = -MAX_CLAIM_SECONDS;
    }
    return (apr_time_t)(d * APR_USEC_PER_SEC);
}

/* Registered claims of the wrong JSON type make the token malformed,
 * whether or not the policy looks at them. */
static int claim_types_ok(json_t *c)
{
    json_t *v, *m;
    size_t i;

    if (((v = json_object_get(c, "exp")) && !json_is_number(v))
        || ((v = json_object_get(c, "nbf")) && !json_is_number(v))
        || ((v = json_object_get(c, "iat")) && !json_is_number(v))
        || ((v = json_object_get(c, "iss")) && !json_is_string(v))
        || ((v = json_object_get(c, "sub")) && !json_is_string(v))) {
        return 0;
    }
    v = json_object_get(c, "aud");
    if (v && !json_is_string(v)) {
        if (!json_is_array(v)) {
            return 0;
        }
        json_array_foreach(v, i, m) {
            if (!json_is_string(m)) {
                return 0;
            }
        }
    }
    return 1;
}

static int audience_ok(json_t *aud, const aura_jwt_policy_t *pol)
{
    json_t *m;
    size_t i;

    if (!pol->audience) {
        return 1;
    }
    if (json_is_string(aud)) {
        return !strcmp(json_string_value(aud), pol->audience);
    }
    if (!json_is_array(aud)) {
        return 0;
    }
    if (pol->audience_exact) {
        return json_array_size(aud) == 1
               && !strcmp(json_string_value(json_array_get(aud, 0)),
                          pol->audience);
    }
    if (pol->audience_any) {
        json_array_foreach(aud, i, m) {
            if (!strcmp(json_string_value(m), pol->audience)) {
                return 1;
            }
        }
        return 0;
    }
    /* OpenID Connect Core 3.1.3.7: a token that also names an audience
     * we do not trust is not ours to accept (that party may hold it,
     * and replay it here). */
    json_array_foreach(aud, i, m) {
        if (strcmp(json_string_value(m), pol->audience)) {
            return 0;
        }
    }
    return json_array_size(aud) > 0;
}

/* sub becomes Aura-Actor, a log field and part of quota keys: bounded,
 * no control characters, checked on its JSON length (a "\u0000" inside
 * would otherwise cut it short, and two subs would look alike). */
static int subject_ok(json_t *sub, const aura_jwt_policy_t *pol)
{
    apr_size_t max = pol->sub_max ? pol->sub_max : AURA_SUB_MAX;

    return aura_identity_text_ok(json_string_value(sub),
                                 json_string_length(sub), max);
}

/* The token names the API key's project: a user of one project is not
 * a user of every project that shares the issuer. */
static int project_ok(json_t *c, const aura_jwt_policy_t *pol)
{
    json_t *v;

    if (!pol->project_claim) {
        return 1;
    }
    v = json_object_get(c, pol->project_claim);
    return pol->project && json_is_string(v)
           && json_string_length(v) == strlen(pol->project)
           && !strcmp(json_string_value(v), pol->project);
}

/* AuraTokenMaxLifetime: a token names when it was issued and lives no
 * longer than the limit (the leeway on top, as for exp), so that the
 * gateway knows when every token issued before a given time has died:
 * what lets a revocation end without reviving the tokens it names
 * (docs/security.md 3.16).  exp - iat is the issuer's own arithmetic:
 * no clock of ours in it. */
static aura_jwt_result_e check_lifetime(json_t *c,
                                        const aura_jwt_policy_t *pol,
                                        apr_time_t exp,
                                        apr_interval_time_t leeway)
{
    json_t *iat;

    if (pol->max_lifetime <= 0) {
        return AURA_JWT_OK;
    }
    iat = json_object_get(c, "iat");
    if (!iat) {
        return AURA_JWT_NO_IAT;
    }
    /* Both clamped to year +-9999 in µs: the difference fits. */
    if (exp - claim_time(iat) > pol->max_lifetime + leeway) {
        return AURA_JWT_TOO_LONG_LIVED;
    }
    return AURA_JWT_OK;
}

static aura_jwt_result_e check_claims(json_t *c, const aura_jwt_policy_t *pol,
                                      apr_time_t *exp)
{
    apr_interval_time_t leeway = pol->leeway > 0 ? pol->leeway : 0;
    aura_jwt_result_e rv;
    json_t *v, *sub;

    if (!claim_types_ok(c)) {
        return AURA_JWT_MALFORMED;
    }
    v = json_object_get(c, "exp");
    if (!v) {
        return AURA_JWT_NO_EXP;
    }
    *exp = claim_time(v);
    if (pol->now > *exp + leeway) {
        return AURA_JWT_EXPIRED;
    }
    v = json_object_get(c, "nbf");
    if (v && pol->now + leeway < claim_time(v)) {
        return AURA_JWT_NOT_YET_VALID;
    }
    v = json_object_get(c, "iat");
    if (v && claim_time(v) > pol->now + leeway) {
        return AURA_JWT_NOT_YET_VALID;
    }
    if ((rv = check_lifetime(c, pol, *exp, leeway)) != AURA_JWT_OK) {
        return rv;
    }
    v = json_object_get(c, "iss");
    if (pol->issuer && (!v || strcmp(json_string_value(v), pol->issuer))) {
        return AURA_JWT_BAD_ISSUER;
    }
    if (!audience_ok(json_object_get(c, "aud"), pol)) {
        return AURA_JWT_BAD_AUDIENCE;
    }
    sub = json_object_get(c, "sub");
    if (pol->require_sub && (!sub || json_string_length(sub) == 0)) {
        return AURA_JWT_NO_SUBJECT;
    }
    if (sub && !subject_ok(sub, pol)) {
        return AURA_JWT_BAD_SUBJECT;
    }
    /* A user whose sub reads "key:<hex>" would be a key's actor:
     * Aura-Actor, quota bucket and stream budget (issue #29). */
    if (sub && aura_identity_actor_reserved(json_string_value(sub),
                                            json_string_length(sub))) {
        return AURA_JWT_RESERVED_SUBJECT;
    }
    if (!project_ok(c, pol)) {
        return AURA_JWT_BAD_PROJECT;
    }
    return AURA_JWT_OK;
}

static const char *claim_str(apr_pool_t *p, json_t *c, const char *name)
{
    const char *s = json_string_value(json_object_get(c, name));

    return s ? apr_pstrdup(p, s) : NULL;
}

aura_jwt_result_e aura_jwt_verify(apr_pool_t *p, const aura_jwt_keyset_t *ks,
                                  const aura_jwt_policy_t *pol,
                                  const char *token, aura_jwt_claims_t *out)
{
    apr_size_t max = pol->max_len ? pol->max_len : AURA_JWT_DEFAULT_MAX_LEN;
    header_t h = { NULL, NULL, NULL };
    json_t *claims = NULL;
    const char *claims_text = NULL;
    const jwt_key_t *key = NULL;
    apr_time_t exp = 0;
    parts_t t = { NULL, 0, 0, 0 };
    aura_jwt_result_e rv;

    if (out) {
        memset(out, 0, sizeof(*out));
    }
    if (!token) {
        return AURA_JWT_MALFORMED;
    }
    if (max == (apr_size_t)-1) {
        max--;
    }
    t.len = strnlen(token, max + 1);
    if (t.len > max) {
        return AURA_JWT_TOO_LARGE;
    }
    rv = split_token(token, t.len, &t);
    if (rv == AURA_JWT_OK) {
        rv = parse_header(p, &t, pol, &h);
    }
    if (rv == AURA_JWT_OK) {
        rv = select_key(ks, &h, &key);
    }
    if (rv == AURA_JWT_OK) {
        rv = decode_object(p, token + t.dot1 + 1, t.dot2 - t.dot1 - 1,
                           &claims, &claims_text);
    }
    if (rv == AURA_JWT_OK) {
        rv = check_signature(&t, &h, key);
    }
    if (rv == AURA_JWT_OK) {
        rv = check_claims(claims, pol, &exp);
    }
    if (rv == AURA_JWT_OK && out) {
        out->sub = claim_str(p, claims, "sub");
        out->iss = claim_str(p, claims, "iss");
        out->kid = h.kid;
        out->alg = h.alg->name;
        out->exp = exp;
        out->claims_json = claims_text;
    }
    json_decref(claims);
    json_decref(h.json);
    return rv;
}

const char *aura_jwt_result_text(aura_jwt_result_e r)
{
    switch (r) {
    case AURA_JWT_OK:
        return "token valid";
    case AURA_JWT_TOO_LARGE:
        return "token too large";
    case AURA_JWT_MALFORMED:
        return "token malformed";
    case AURA_JWT_ALG_NOT_ALLOWED:
        return "token algorithm not allowed";
    case AURA_JWT_UNKNOWN_KID:
        return "token signing key unknown";
    case AURA_JWT_BAD_SIGNATURE:
        return "token signature invalid";
    case AURA_JWT_EXPIRED:
        return "token expired";
    case AURA_JWT_NOT_YET_VALID:
        return "token not yet valid";
    case AURA_JWT_NO_EXP:
        return "token has no expiry";
    case AURA_JWT_BAD_ISSUER:
        return "token issuer not accepted";
    case AURA_JWT_BAD_AUDIENCE:
        return "token audience not accepted";
    case AURA_JWT_NO_SUBJECT:
        return "token has no subject";
    case AURA_JWT_BAD_SUBJECT:
        return "token subject too long or not printable";
    case AURA_JWT_BAD_PROJECT:
        return "token not for the API key's project";
    case AURA_JWT_RESERVED_SUBJECT:
        return "token subject reserved for API keys";
    case AURA_JWT_NO_IAT:
        return "token has no issue time";
    case AURA_JWT_TOO_LONG_LIVED:
        return "token outlives AuraTokenMaxLifetime";
    }
    return "token invalid";
}

unsigned int aura_jwt_parse_algs(const char *list, const char **err)
{
    unsigned int bits = 0;
    const char *s = list;

    while (s && *s) {
        const alg_def_t *def;
        const char *end;

        while (apr_isspace(*s)) {
            s++;
        }
        if (!*s) {
            break;
        }
        for (end = s; *end && !apr_isspace(*end); end++) {
        }
        if (end - s == 4 && !strncasecmp(s, "none", 4)) {
            SET_ERR(err, "algorithm \"none\" is never accepted");
            return 0;
        }
        def = alg_by_name(s, (apr_size_t)(end - s));
        if (!def) {
            SET_ERR(err, "unknown algorithm (accepted: RS256 ES256 HS256, "
                    "case-sensitive)");
            return 0;
        }
        bits |= def->bit;
        s = end;
    }
    if (!bits) {
        SET_ERR(err, "empty algorithm list");
    }
    return bits;
}
