/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_jwt.c: libFuzzer harness for bearer token verification
 * (mod_aura_common/auth/aura_jwt.c): aura_jwt_verify against a fixed key set,
 * with the policy taken from the input, and aura_jwt_parse_algs.
 *
 * aura-fuzz: -max_len=2048
 *
 * Input: two bytes of flags, then the mode's text.
 *  byte 0: bit 0 sign mode; bits 1-3 the allowed algorithms (RS256,
 *          ES256, HS256; none set: all three); bit 4 an issuer is
 *          required; bit 5 an audience is required; bit 6 the audience
 *          must be exact; bit 7 sub is required.
 *  byte 1: bits 0-1 the signing key of sign mode (the HS256 secret
 *          "hs1", the RSA key, the P-256 key, the secret "hs2"); bits
 *          2-3 the leeway (0, 30 s, 3600 s: the directive's range, 1 us);
 *          bits 4-5 max_len (default, 256, 1024, 65536: the directive's
 *          range); bit 6 sign mode flips a bit of the signature; bit 7
 *          the key set without kids (one HS256 secret, the RSA key).
 *  byte 2: bit 0 audience_any (other audiences tolerated); bit 1 the
 *          token must name the project "proj-1" in its claim
 *          "project_id"; bits 2-3 sub_max (default, 16, 255, 1024).
 *  raw mode: the rest is the token (cut at a NUL), as a client sends it.
 *    It is also an algorithm list for aura_jwt_parse_algs.
 *  sign mode: the rest is "header JSON\0payload JSON": the harness signs
 *    base64url(header).base64url(payload) with the chosen key, so the
 *    claim checks see any payload with a valid signature.
 *
 * Invariants: a token is valid only with an allowed algorithm, an exp
 * not past (leeway included), the policy's issuer, audience, project
 * and subject, and a sub (when there is one) of at most sub_max bytes
 * without a control character and not starting with "key:" in any case
 * (it becomes Aura-Actor, where "key:" names an API key);
 * a raw token is valid only if its signature is exactly the base64url
 * HMAC of its signing input under the secret its kid names (so no other
 * spelling of a signature is accepted, and no RS256/ES256 token is
 * forged); a signed token is valid only if its header names the
 * algorithm of the key that signed it (no algorithm confusion) and never
 * with a flipped signature bit; the claims are zeroed on refusal.
 *
 * AURA_FUZZ_JWT_MINT=DIR fuzz/bin/fuzz_jwt writes the seed corpus (valid
 * and near-valid tokens signed with the fixed secrets) to DIR and exits:
 * how fuzz/corpus/jwt/ was made.
 */
#include "aura_fuzz.h"

#include "apr_lib.h"
#include "apr_strings.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "auth/aura_identity.h"
#include "auth/aura_jwt.h"

/* The fixed secrets: what the seed tokens are signed with. */
static const char secret_hs1[] = "aura-fuzz-hs256-secret-number-one-0123";
static const char secret_hs2[] = "aura-fuzz-hs256-secret-number-two-4567";
static const char secret_nokid[] = "aura-fuzz-hs256-secret-without-kid-89ab";

#define NOW_S 1767225600LL                      /* 2026-01-01T00:00:00Z */
#define ISSUER "https://auth.aura.example"
#define AUDIENCE "aura-data"
#define PROJECT_CLAIM "project_id"
#define PROJECT "proj-1"

static EVP_PKEY *rsa_key, *ec_key;
/* AURA_FUZZ_VERBOSE=1: print each verdict (to check the seeds). */
static int verbose;
static aura_jwt_keyset_t *ks_kids, *ks_nokid;

static const char *pub_pem(apr_pool_t *p, EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL;
    long n;
    const char *pem;

    if (!b || !PEM_write_bio_PUBKEY(b, k)) {
        abort();
    }
    n = BIO_get_mem_data(b, &data);
    pem = apr_pstrmemdup(p, data, (apr_size_t)n);
    BIO_free(b);
    return pem;
}

static void add_pem(aura_jwt_keyset_t *ks, const char *kid, EVP_PKEY *k)
{
    const char *err = NULL;
    const char *pem = pub_pem(aura_fuzz_root, k);

    if (aura_jwt_keyset_add_pem(ks, kid, pem, strlen(pem), &err)
        != APR_SUCCESS) {
        fprintf(stderr, "fuzz_jwt: key: %s\n", err);
        abort();
    }
}

static void add_secret(aura_jwt_keyset_t *ks, const char *kid,
                       const char *secret)
{
    const char *err = NULL;

    if (aura_jwt_keyset_add_secret(ks, kid, (const unsigned char *)secret,
                                   strlen(secret), &err) != APR_SUCCESS) {
        fprintf(stderr, "fuzz_jwt: secret: %s\n", err);
        abort();
    }
}

/* ------------------------------------------------------------------ */
/* Signing (the harness's side, independent of aura_jwt.c)             */

static char *b64url(apr_pool_t *p, const unsigned char *d, size_t n)
{
    static const char a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *out = apr_palloc(p, n / 3 * 4 + 5), *o = out;
    size_t i;

    for (i = 0; i + 2 < n; i += 3) {
        *o++ = a[d[i] >> 2];
        *o++ = a[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *o++ = a[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)];
        *o++ = a[d[i + 2] & 63];
    }
    if (n - i == 1) {
        *o++ = a[d[i] >> 2];
        *o++ = a[(d[i] & 3) << 4];
    }
    else if (n - i == 2) {
        *o++ = a[d[i] >> 2];
        *o++ = a[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *o++ = a[(d[i + 1] & 15) << 2];
    }
    *o = '\0';
    return out;
}

static char *hs256(apr_pool_t *p, const char *secret, const char *input)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;

    if (!HMAC(EVP_sha256(), secret, (int)strlen(secret),
              (const unsigned char *)input, strlen(input), md, &len)) {
        abort();
    }
    return b64url(p, md, len);
}

/* RS256: PKCS#1 v1.5 over SHA-256; ES256: r || s, 32 bytes each. */
static char *pk_sign(apr_pool_t *p, EVP_PKEY *k, int ec, const char *input)
{
    unsigned char sig[1024], rs[64];
    size_t sig_len = sizeof(sig);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    char *out;

    if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k) != 1
        || EVP_DigestSign(md, sig, &sig_len, (const unsigned char *)input,
                          strlen(input)) != 1) {
        abort();
    }
    EVP_MD_CTX_free(md);
    if (!ec) {
        return b64url(p, sig, sig_len);
    }
    {
        const unsigned char *d = sig;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &d, (long)sig_len);

        if (!es || BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, 32) != 32
            || BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + 32, 32) != 32) {
            abort();
        }
        ECDSA_SIG_free(es);
    }
    out = b64url(p, rs, sizeof(rs));
    return out;
}

enum { SIGN_HS1, SIGN_RSA, SIGN_EC, SIGN_HS2 };

static const char *const sign_alg[] = { "HS256", "RS256", "ES256", "HS256" };

static char *sign_token(apr_pool_t *p, int how, int nokid,
                        const char *header, size_t hlen,
                        const char *payload, size_t plen)
{
    char *input = apr_pstrcat(p,
                              b64url(p, (const unsigned char *)header, hlen),
                              ".",
                              b64url(p, (const unsigned char *)payload, plen),
                              NULL);
    const char *sig;

    switch (how) {
    case SIGN_HS1:
        sig = hs256(p, nokid ? secret_nokid : secret_hs1, input);
        break;
    case SIGN_RSA:
        sig = pk_sign(p, rsa_key, 0, input);
        break;
    case SIGN_EC:
        sig = pk_sign(p, ec_key, 1, input);
        break;
    default:
        sig = hs256(p, secret_hs2, input);
        break;
    }
    return apr_pstrcat(p, input, ".", sig, NULL);
}

/* ------------------------------------------------------------------ */
/* Invariants                                                          */

static void check_parse_algs(const char *list)
{
    const char *err = NULL;
    unsigned int bits = aura_jwt_parse_algs(list, &err);
    char *copy = strdup(list), *tok, *last = NULL;
    unsigned int want = 0;
    int bad = 0;

    if (!copy) {
        abort();
    }
    for (tok = apr_strtok(copy, " \t\n\r\f\v", &last); tok;
         tok = apr_strtok(NULL, " \t\n\r\f\v", &last)) {
        if (!strcmp(tok, "RS256")) {
            want |= AURA_JWT_RS256;
        }
        else if (!strcmp(tok, "ES256")) {
            want |= AURA_JWT_ES256;
        }
        else if (!strcmp(tok, "HS256")) {
            want |= AURA_JWT_HS256;
        }
        else {
            bad = 1;
        }
    }
    free(copy);
    AURA_FUZZ_ASSERT(bits == (bad ? 0 : want));
    AURA_FUZZ_ASSERT(bits ? err == NULL : err != NULL);
}

/* The token's header, decoded by the harness (it is valid if verify
 * said so, so the base64url and the JSON are well-formed). */
static json_t *token_header(apr_pool_t *p, const char *token)
{
    const char *dot = strchr(token, '.');
    unsigned char *buf;
    size_t n = (size_t)(dot - token), i, o = 0;
    unsigned int acc = 0, bits = 0;

    buf = apr_palloc(p, n + 1);
    for (i = 0; i < n; i++) {
        const char *a =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        const char *c = strchr(a, token[i]);

        AURA_FUZZ_ASSERT(c && *c);
        acc = (acc << 6) | (unsigned int)(c - a);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (unsigned char)(acc >> bits);
        }
    }
    return json_loadb((const char *)buf, o, 0, NULL);
}

static void check_valid(apr_pool_t *p, const aura_jwt_policy_t *pol,
                        const aura_jwt_claims_t *c, const char *token,
                        size_t max)
{
    unsigned int bit;
    json_t *claims;

    AURA_FUZZ_ASSERT(strlen(token) <= max);
    AURA_FUZZ_ASSERT(c->alg != NULL);
    bit = !strcmp(c->alg, "RS256") ? AURA_JWT_RS256
          : !strcmp(c->alg, "ES256") ? AURA_JWT_ES256
          : !strcmp(c->alg, "HS256") ? AURA_JWT_HS256 : 0;
    AURA_FUZZ_ASSERT(bit && (pol->algs & bit));
    AURA_FUZZ_ASSERT(c->exp != 0);
    AURA_FUZZ_ASSERT(pol->now <= c->exp + pol->leeway);
    if (pol->require_sub) {
        AURA_FUZZ_ASSERT(c->sub && *c->sub);
    }
    if (c->sub) {
        apr_size_t max = pol->sub_max ? pol->sub_max : AURA_SUB_MAX;
        const char *q;

        AURA_FUZZ_ASSERT(strlen(c->sub) <= max);
        for (q = c->sub; *q; q++) {
            AURA_FUZZ_ASSERT((unsigned char)*q >= 0x20 && *q != 0x7f);
        }
        /* Never a key's actor (Aura-Actor "key:<hex>"). */
        AURA_FUZZ_ASSERT(strncasecmp(c->sub, "key:", 4) != 0);
    }
    if (pol->issuer) {
        AURA_FUZZ_ASSERT(c->iss && !strcmp(c->iss, pol->issuer));
    }
    AURA_FUZZ_ASSERT(c->claims_json != NULL);
    claims = json_loads(c->claims_json, 0, NULL);
    AURA_FUZZ_ASSERT(json_is_object(claims));
    AURA_FUZZ_ASSERT(json_is_number(json_object_get(claims, "exp")));
    if (pol->project_claim) {
        json_t *pc = json_object_get(claims, pol->project_claim);

        AURA_FUZZ_ASSERT(json_is_string(pc)
                         && !strcmp(json_string_value(pc), pol->project));
    }
    if (pol->audience) {
        json_t *aud = json_object_get(claims, "aud");

        if (json_is_string(aud)) {
            AURA_FUZZ_ASSERT(!strcmp(json_string_value(aud), pol->audience));
        }
        else {
            AURA_FUZZ_ASSERT(json_is_array(aud) && json_array_size(aud));
            if (pol->audience_exact) {
                AURA_FUZZ_ASSERT(json_array_size(aud) == 1);
            }
            if (!pol->audience_any) {
                size_t i;
                json_t *m;

                /* The OpenID Connect reading: no other audience. */
                json_array_foreach(aud, i, m) {
                    AURA_FUZZ_ASSERT(!strcmp(json_string_value(m),
                                             pol->audience));
                }
            }
        }
    }
    if (pol->max_lifetime) {
        /* AuraTokenMaxLifetime: iat there, and exp - iat within the
         * limit plus the leeway (c->exp is the clamped exp). */
        json_t *iat = json_object_get(claims, "iat");
        double d;

        AURA_FUZZ_ASSERT(json_is_number(iat));
        d = json_number_value(iat);
        if (d > -253402300799.0 && d < 253402300799.0) {
            AURA_FUZZ_ASSERT(c->exp - (apr_time_t)(d * APR_USEC_PER_SEC)
                             <= pol->max_lifetime + pol->leeway);
        }
    }
    json_decref(claims);
    (void)p;
}

/* A raw token that verifies is HS256, and its signature is exactly the
 * HMAC the secret its kid names gives. */
static void check_raw_valid(apr_pool_t *p, const char *token, int nokid)
{
    json_t *h = token_header(p, token);
    const char *kid, *secret, *last_dot = strrchr(token, '.');
    char *input;

    AURA_FUZZ_ASSERT(h != NULL);
    AURA_FUZZ_ASSERT(!strcmp(json_string_value(json_object_get(h, "alg")),
                             "HS256"));
    kid = json_string_value(json_object_get(h, "kid"));
    if (nokid) {
        secret = secret_nokid;
    }
    else {
        AURA_FUZZ_ASSERT(kid != NULL);
        secret = !strcmp(kid, "hs1") ? secret_hs1
                 : !strcmp(kid, "hs2") ? secret_hs2 : NULL;
        AURA_FUZZ_ASSERT(secret != NULL);
    }
    input = apr_pstrmemdup(p, token, (apr_size_t)(last_dot - token));
    AURA_FUZZ_ASSERT(!strcmp(last_dot + 1, hs256(p, secret, input)));
    json_decref(h);
}

static void check_signed_valid(apr_pool_t *p, const char *token, int how)
{
    json_t *h = token_header(p, token);

    AURA_FUZZ_ASSERT(h != NULL);
    AURA_FUZZ_ASSERT(!strcmp(json_string_value(json_object_get(h, "alg")),
                             sign_alg[how]));
    json_decref(h);
}

/* ------------------------------------------------------------------ */

static void mint_seeds(const char *dir);

/* The key sets hold their public keys until their pool goes: destroyed
 * at exit, before LeakSanitizer looks (APR's pools are mmap()ed, so it
 * cannot see that the pool still points at them). */
static apr_pool_t *keys_pool;

static void destroy_keys(void)
{
    apr_pool_destroy(keys_pool);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *mint = getenv("AURA_FUZZ_JWT_MINT");

    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    rsa_key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    ec_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!rsa_key || !ec_key) {
        abort();
    }
    keys_pool = aura_fuzz_pool();
    atexit(destroy_keys);
    ks_kids = aura_jwt_keyset_make(keys_pool);
    add_secret(ks_kids, "hs1", secret_hs1);
    add_secret(ks_kids, "hs2", secret_hs2);
    add_pem(ks_kids, "rsa1", rsa_key);
    add_pem(ks_kids, "ec1", ec_key);
    ks_nokid = aura_jwt_keyset_make(keys_pool);
    add_secret(ks_nokid, NULL, secret_nokid);
    add_pem(ks_nokid, NULL, rsa_key);
    verbose = getenv("AURA_FUZZ_VERBOSE") != NULL;
    if (mint) {
        mint_seeds(mint);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const apr_interval_time_t leeways[] = {
        0, APR_USEC_PER_SEC * 30, APR_USEC_PER_SEC * 3600, 1
    };
    static const apr_size_t max_lens[] = { 0, 256, 1024, 65536 };
    aura_jwt_policy_t pol;
    aura_jwt_claims_t out;
    aura_jwt_result_e rv;
    static const apr_size_t sub_maxes[] = { 0, 16, 255, 1024 };
    static const apr_interval_time_t max_lives[] = {
        0, APR_USEC_PER_SEC, APR_USEC_PER_SEC * 3600,
        APR_USEC_PER_SEC * 86400
    };
    unsigned int b0, b1, b2;
    int sign, how, nokid;
    const aura_jwt_keyset_t *ks;
    apr_pool_t *p;
    const char *token;
    size_t max;

    if (size < 3) {
        return 0;
    }
    b0 = aura_fuzz_byte(&data, &size);
    b1 = aura_fuzz_byte(&data, &size);
    b2 = aura_fuzz_byte(&data, &size);
    sign = b0 & 1;
    memset(&pol, 0, sizeof(pol));
    pol.now = apr_time_from_sec(NOW_S);
    pol.algs = (b0 >> 1) & 7 ? (b0 >> 1) & 7
               : AURA_JWT_RS256 | AURA_JWT_ES256 | AURA_JWT_HS256;
    pol.issuer = b0 & 0x10 ? ISSUER : NULL;
    pol.audience = b0 & 0x20 ? AUDIENCE : NULL;
    pol.audience_exact = (b0 & 0x40) != 0;
    pol.require_sub = (b0 & 0x80) != 0;
    how = (int)(b1 & 3);
    pol.leeway = leeways[(b1 >> 2) & 3];
    pol.max_len = max_lens[(b1 >> 4) & 3];
    nokid = (b1 & 0x80) != 0;
    pol.audience_any = (b2 & 1) != 0;
    pol.project_claim = b2 & 2 ? PROJECT_CLAIM : NULL;
    pol.project = b2 & 2 ? PROJECT : NULL;
    pol.sub_max = sub_maxes[(b2 >> 2) & 3];
    pol.max_lifetime = max_lives[(b2 >> 4) & 3];
    ks = nokid ? ks_nokid : ks_kids;
    max = pol.max_len ? pol.max_len : AURA_JWT_DEFAULT_MAX_LEN;

    p = aura_fuzz_pool();
    if (!sign) {
        token = aura_fuzz_strndup(p, data, size);
        check_parse_algs(token);
    }
    else {
        const uint8_t *nul = memchr(data, '\0', size);
        size_t hlen = nul ? (size_t)(nul - data) : size;
        size_t plen = nul ? size - hlen - 1 : 0;
        char *t = sign_token(p, how, nokid, (const char *)data, hlen,
                             nul ? (const char *)nul + 1 : "", plen);

        if (b1 & 0x40) {
            /* Flip one bit of the signature's first character: still
             * base64url, never the same signature. */
            char *sig = strrchr(t, '.') + 1;

            *sig = *sig == 'A' ? 'B' : 'A';
        }
        token = t;
    }

    memset(&out, 0x5a, sizeof(out));
    rv = aura_jwt_verify(p, ks, &pol, token, &out);
    AURA_FUZZ_ASSERT(rv >= AURA_JWT_OK && rv <= AURA_JWT_RESULT_LAST);
    AURA_FUZZ_ASSERT(aura_jwt_result_text(rv) != NULL);
    if (verbose) {
        fprintf(stderr, "fuzz_jwt: %s\n", aura_jwt_result_text(rv));
    }
    if (rv == AURA_JWT_OK) {
        check_valid(p, &pol, &out, token, max);
        if (!sign) {
            check_raw_valid(p, token, nokid);
        }
        else {
            AURA_FUZZ_ASSERT(!(b1 & 0x40));
            check_signed_valid(p, token, how);
        }
    }
    else {
        static const aura_jwt_claims_t zero;

        AURA_FUZZ_ASSERT(!memcmp(&out, &zero, sizeof(out)));
        if (strlen(token) > max) {
            AURA_FUZZ_ASSERT(rv == AURA_JWT_TOO_LARGE);
        }
    }
    apr_pool_destroy(p);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Seeds: AURA_FUZZ_JWT_MINT=fuzz/corpus/jwt fuzz/bin/fuzz_jwt          */

static void write_seed(const char *dir, const char *name, unsigned int b0,
                       unsigned int b1, unsigned int b2, const char *body,
                       size_t len)
{
    char *path = apr_pstrcat(aura_fuzz_root, dir, "/", name, NULL);
    FILE *f = fopen(path, "wb");

    if (!f) {
        perror(path);
        exit(1);
    }
    fputc((int)b0, f);
    fputc((int)b1, f);
    fputc((int)b2, f);
    fwrite(body, 1, len, f);
    fclose(f);
}

static void mint_seeds(const char *dir)
{
    static const struct {
        const char *name;
        unsigned int b0, b1;
        const char *header, *payload;
        unsigned int b2;
    } seeds[] = {
        { "hs1-valid", 0x00, 0x00, "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"hs1\"}",
          "{\"sub\":\"user-1\",\"exp\":2000000000,\"iat\":1767225000,"
          "\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"role\":\"authenticated\"}", 0 },
        { "hs1-strict-policy", 0xf8, 0x04, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"user-1\",\"exp\":2000000000,\"nbf\":1767225000,"
          "\"iss\":\"" ISSUER "\",\"aud\":[\"" AUDIENCE "\"]}", 0 },
        { "hs1-aud-array", 0x20, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000,\"aud\":[\"other\",\"" AUDIENCE "\"]}",
          0x01 },
        { "hs1-aud-array-strict", 0x20, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000,\"aud\":[\"other\",\"" AUDIENCE "\"]}",
          0x00 },
        { "hs1-project", 0x80, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000,\"" PROJECT_CLAIM "\":\"" PROJECT "\"}",
          0x02 },
        { "hs1-project-other", 0x80, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000,\"" PROJECT_CLAIM "\":\"proj-2\"}",
          0x02 },
        { "hs1-sub-control", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"a\\nAura-Role: x\",\"exp\":2000000000}", 0x00 },
        { "hs1-sub-max16", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"0123456789abcdefg\",\"exp\":2000000000}", 0x04 },
        { "hs2-valid-real-exp", 0x00, 0x03, "{\"alg\":\"HS256\",\"kid\":\"hs2\"}",
          "{\"sub\":\"u\",\"exp\":1767225600.5}", 0 },
        { "hs1-expired", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":1767225500}", 0 },
        { "hs1-expired-in-leeway", 0x00, 0x04, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":1767225590}", 0 },
        { "hs1-nbf-future", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000,\"nbf\":1900000000}", 0 },
        { "hs1-no-exp", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\"}", 0 },
        { "hs1-huge-exp", 0x00, 0x0c, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":1e300,\"iat\":-1e300,\"nbf\":-9223372036854775808}", 0 },
        { "hs1-sub-types", 0x80, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"\",\"exp\":2000000000}", 0 },
        { "hs1-dup-claims", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"a\",\"sub\":\"b\",\"exp\":2000000000}", 0 },
        { "hs1-nul-sub", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"a\\u0000b\",\"exp\":2000000000}", 0 },
        { "hs1-long-sub", 0x80, 0x30, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
          "\"exp\":2000000000}", 0 },
        { "hs-nokid", 0x00, 0x80, "{\"alg\":\"HS256\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}", 0 },
        { "alg-none", 0x00, 0x00, "{\"alg\":\"none\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}", 0 },
        { "alg-lowercase", 0x00, 0x00, "{\"alg\":\"hs256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}", 0 },
        { "alg-confusion-kid-rsa", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"rsa1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}", 0 },
        { "typ-at-jwt", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\",\"typ\":\"at+jwt\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}", 0 },
        { "crit", 0x00, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\",\"crit\":[\"x\"]}",
          "{\"sub\":\"u\",\"exp\":2000000000}", 0 },
        { "alg-not-allowed", 0x02, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}", 0 },
    };
    static const struct {
        const char *name;
        unsigned int b0, b1;
        const char *header, *payload;
    } signed_seeds[] = {
        { "sign-hs1", 0x01, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000,\"iss\":\"" ISSUER "\"}" },
        { "sign-rsa", 0x01, 0x01, "{\"alg\":\"RS256\",\"kid\":\"rsa1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}" },
        { "sign-ec", 0x01, 0x02, "{\"alg\":\"ES256\",\"kid\":\"ec1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000,\"aud\":\"" AUDIENCE "\"}" },
        { "sign-rsa-as-hs", 0x01, 0x01, "{\"alg\":\"HS256\",\"kid\":\"rsa1\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}" },
        { "sign-hs2-tampered", 0x01, 0x43, "{\"alg\":\"HS256\",\"kid\":\"hs2\"}",
          "{\"sub\":\"u\",\"exp\":2000000000}" },
        { "sign-nokid-rsa", 0x01, 0x81, "{\"alg\":\"RS256\"}",
          "{\"sub\":\"u\",\"exp\":2000000000,\"aud\":[\"a\",\"b\"]}" },
        { "sign-claim-types", 0x01, 0x00, "{\"alg\":\"HS256\",\"kid\":\"hs1\"}",
          "{\"sub\":1,\"exp\":\"2000000000\",\"aud\":[1]}" },
    };
    size_t i;

    for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
        int nokid = (seeds[i].b1 & 0x80) != 0;
        const char *secret = strstr(seeds[i].header, "\"hs2\"") ? secret_hs2
                             : nokid ? secret_nokid : secret_hs1;
        char *input = apr_pstrcat(aura_fuzz_root,
            b64url(aura_fuzz_root, (const unsigned char *)seeds[i].header,
                   strlen(seeds[i].header)), ".",
            b64url(aura_fuzz_root, (const unsigned char *)seeds[i].payload,
                   strlen(seeds[i].payload)), NULL);
        char *tok = apr_pstrcat(aura_fuzz_root, input, ".",
                                hs256(aura_fuzz_root, secret, input), NULL);

        write_seed(dir, seeds[i].name, seeds[i].b0, seeds[i].b1,
                   seeds[i].b2, tok,
                   strlen(tok));
    }
    for (i = 0; i < sizeof(signed_seeds) / sizeof(signed_seeds[0]); i++) {
        size_t hl = strlen(signed_seeds[i].header);
        size_t pl = strlen(signed_seeds[i].payload);
        char *body = apr_palloc(aura_fuzz_root, hl + pl + 1);

        memcpy(body, signed_seeds[i].header, hl);
        body[hl] = '\0';
        memcpy(body + hl + 1, signed_seeds[i].payload, pl);
        write_seed(dir, signed_seeds[i].name, signed_seeds[i].b0,
                   signed_seeds[i].b1, 0, body, hl + pl + 1);
    }
    /* Not tokens: malformed shapes and algorithm lists. */
    write_seed(dir, "malformed-padding", 0, 0, 0, "eyJhbGciOiJIUzI1NiJ9.e30=.", 26);
    write_seed(dir, "malformed-four-parts", 0, 0, 0, "a.b.c.d", 7);
    write_seed(dir, "algs-list", 0, 0, 0, "RS256 ES256\tHS256", 17);
    write_seed(dir, "algs-none", 0, 0, 0, "RS256 none", 10);
}
