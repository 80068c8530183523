/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_mint_jwt.c: make JWTs and JWKs for the tests and the demo,
 * well-formed or deliberately broken: alg "none", HS256 keyed with a
 * public key PEM (the algorithm-confusion attack), any typ, any header
 * or payload text byte for byte.  Tokens are built and signed here with
 * jansson and OpenSSL rather than with libjwt, because libjwt 1.10.2
 * rewrites typ to "JWT" and orders the header itself; the verifier's
 * own unit test covers tokens libjwt emits.
 *
 * Exit status: 0 printed, 1 runtime error (unreadable file, wrong key
 * type, signing failed), 2 usage.
 */
#include <jansson.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "aura_mint_jwt"

#define MAX_FILE       (1024 * 1024)
#define MAX_AUD        16
#define MAX_CLAIMS     32
#define DEFAULT_EXP_IN 300

static const char usage_text[] =
"usage: " PROG " [--alg RS256|ES256|HS256|none] [--key FILE] [--kid KID]\n"
"           [--sub S] [--iss I] [--aud A]... [--exp-in SECONDS | --no-exp]\n"
"           [--nbf-in SECONDS] [--now EPOCH] [--no-iat]\n"
"           [--claim NAME=JSON]... [--project ID]\n"
"           [--typ T] [--hs-secret-file FILE]\n"
"           [--raw-header JSON] [--raw-payload JSON]\n"
"       " PROG " --jwk PUBKEY.pem [--kid KID]\n"
"       " PROG " --jwk-secret FILE [--kid KID]\n"
"\n"
"Prints a compact JWS on stdout (default alg RS256).\n"
"  --key FILE         RS256/ES256: PEM private key; HS256: the secret\n"
"                     (raw file bytes; a PEM file here gives the\n"
"                     alg-confusion token)\n"
"  --hs-secret-file   HS256 secret file (same as --key for HS256)\n"
"  --alg none         \"header.payload.\" without signature (no key)\n"
"  --exp-in N         exp = now + N (default 300; may be negative)\n"
"  --no-exp           no exp claim\n"
"  --nbf-in N         nbf = now + N (may be negative)\n"
"  --now EPOCH        the clock (default: time(NULL)); iat = now\n"
"  --no-iat           no iat claim\n"
"  --aud A            once: \"aud\":\"A\"; repeated: an array\n"
"  --claim NAME=JSON  any claim, JSON value (e.g. role='\"admin\"',\n"
"                     exp='1.5e9'); overrides the options above\n"
"  --project ID       \"aura_project\":\"ID\", the claim the data plane\n"
"                     binds a token to the API key's project with\n"
"  --typ T            header typ (default JWT; empty: no typ)\n"
"  --raw-header JSON  header text used as is (--kid/--typ ignored)\n"
"  --raw-payload JSON payload text used as is (claim options ignored)\n"
"  --jwk PEM          print the JWK of an RSA or EC P-256 key (public,\n"
"                     private or certificate PEM): use sig, alg, kid\n"
"  --jwk-secret FILE  print an oct JWK (alg HS256) of the file's bytes\n"
"Exit: 0 printed, 1 error, 2 usage.\n";

static void usage(const char *why) __attribute__((noreturn));
static void fail(const char *what) __attribute__((noreturn));

static void usage(const char *why)
{
    if (why) {
        fprintf(stderr, PROG ": %s\n", why);
    }
    fputs(usage_text, stderr);
    exit(2);
}

static void fail(const char *what)
{
    fprintf(stderr, PROG ": %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

typedef struct {
    const char *alg;
    const char *key_file;
    const char *secret_file;
    const char *kid;
    const char *sub;
    const char *iss;
    const char *aud[MAX_AUD];
    int n_aud;
    long long exp_in;
    int no_exp, has_exp_in, no_iat;
    long long nbf_in;
    int has_nbf;
    long long now;
    const char *claims[MAX_CLAIMS];
    int n_claims;
    const char *typ;
    const char *raw_header;
    const char *raw_payload;
    const char *jwk_file;
    const char *jwk_secret_file;
} opts_t;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static char *b64url(const unsigned char *d, size_t len)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *out = malloc(len / 3 * 4 + 5);
    size_t i, o = 0;

    if (!out) {
        fail("out of memory");
    }
    for (i = 0; i + 2 < len; i += 3) {
        out[o++] = alphabet[d[i] >> 2];
        out[o++] = alphabet[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        out[o++] = alphabet[((d[i + 1] & 0xf) << 2) | (d[i + 2] >> 6)];
        out[o++] = alphabet[d[i + 2] & 0x3f];
    }
    if (len - i == 1) {
        out[o++] = alphabet[d[i] >> 2];
        out[o++] = alphabet[(d[i] & 3) << 4];
    }
    else if (len - i == 2) {
        out[o++] = alphabet[d[i] >> 2];
        out[o++] = alphabet[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        out[o++] = alphabet[(d[i + 1] & 0xf) << 2];
    }
    out[o] = '\0';
    return out;
}

/* The whole file, NUL-terminated (*len excludes the NUL). */
static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    size_t n;

    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        exit(1);
    }
    buf = malloc(MAX_FILE + 1);
    if (!buf) {
        fail("out of memory");
    }
    n = fread(buf, 1, MAX_FILE + 1, f);
    if (ferror(f) || n > MAX_FILE) {
        fprintf(stderr, PROG ": %s: unreadable or larger than 1 MiB\n",
                path);
        exit(1);
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static long long parse_seconds(const char *opt, const char *s)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v > 100000000000LL
        || v < -100000000000LL) {
        fprintf(stderr, PROG ": %s: not a number of seconds: %s\n", opt, s);
        usage(NULL);
    }
    return v;
}

/* Public or private key PEM, or certificate. */
static EVP_PKEY *read_any_key(const char *path)
{
    size_t len;
    unsigned char *pem = read_file(path, &len);
    EVP_PKEY *pkey = NULL;
    X509 *x509;
    BIO *bio;

    bio = BIO_new_mem_buf(pem, (int)len);
    pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (!pkey) {
        bio = BIO_new_mem_buf(pem, (int)len);
        pkey = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
        BIO_free(bio);
    }
    if (!pkey) {
        bio = BIO_new_mem_buf(pem, (int)len);
        x509 = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
        BIO_free(bio);
        if (x509) {
            pkey = X509_get_pubkey(x509);
            X509_free(x509);
        }
    }
    free(pem);
    if (!pkey) {
        fprintf(stderr, PROG ": %s: no PEM key or certificate\n", path);
        exit(1);
    }
    ERR_clear_error();
    return pkey;
}

static int is_p256(EVP_PKEY *pkey)
{
    char name[80];
    size_t len = 0;
    int nid;

    if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_EC
        || !EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME,
                                           name, sizeof(name), &len)) {
        return 0;
    }
    nid = OBJ_sn2nid(name);
    if (nid == NID_undef) {
        nid = EC_curve_nist2nid(name);
    }
    return nid == NID_X9_62_prime256v1;
}

/* A BIGNUM parameter as base64url, padded to pad bytes when pad > 0. */
static char *bn_param(EVP_PKEY *pkey, const char *name, int pad)
{
    BIGNUM *bn = NULL;
    unsigned char buf[1024];
    int len;

    if (!EVP_PKEY_get_bn_param(pkey, name, &bn)
        || BN_num_bytes(bn) > (int)sizeof(buf)) {
        BN_free(bn);
        fail("cannot read the key's parameters");
    }
    len = pad > 0 ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
    BN_free(bn);
    if (len <= 0) {
        fail("cannot read the key's parameters");
    }
    return b64url(buf, (size_t)len);
}

static void print_json(json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);

    if (!s) {
        fail("cannot serialize JSON");
    }
    printf("%s\n", s);
    free(s);
    json_decref(obj);
}

/* ------------------------------------------------------------------ */
/* JWK                                                                 */

static int print_jwk(const opts_t *o)
{
    json_t *jwk = json_object();

    if (o->jwk_secret_file) {
        size_t len;
        unsigned char *secret = read_file(o->jwk_secret_file, &len);
        char *k = b64url(secret, len);

        json_object_set_new(jwk, "kty", json_string("oct"));
        json_object_set_new(jwk, "k", json_string(k));
        json_object_set_new(jwk, "use", json_string("sig"));
        json_object_set_new(jwk, "alg", json_string("HS256"));
        free(k);
        free(secret);
    }
    else {
        EVP_PKEY *pkey = read_any_key(o->jwk_file);
        char *a, *b;

        if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_RSA) {
            a = bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, 0);
            b = bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, 0);
            json_object_set_new(jwk, "kty", json_string("RSA"));
            json_object_set_new(jwk, "n", json_string(a));
            json_object_set_new(jwk, "e", json_string(b));
            json_object_set_new(jwk, "use", json_string("sig"));
            json_object_set_new(jwk, "alg", json_string("RS256"));
        }
        else if (is_p256(pkey)) {
            a = bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_X, 32);
            b = bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
            json_object_set_new(jwk, "kty", json_string("EC"));
            json_object_set_new(jwk, "crv", json_string("P-256"));
            json_object_set_new(jwk, "x", json_string(a));
            json_object_set_new(jwk, "y", json_string(b));
            json_object_set_new(jwk, "use", json_string("sig"));
            json_object_set_new(jwk, "alg", json_string("ES256"));
        }
        else {
            fail("--jwk: the key is neither RSA nor EC P-256");
        }
        free(a);
        free(b);
        EVP_PKEY_free(pkey);
    }
    if (o->kid) {
        json_object_set_new(jwk, "kid", json_string(o->kid));
    }
    print_json(jwk);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Token                                                               */

static char *header_text(const opts_t *o)
{
    json_t *h;
    char *s;

    if (o->raw_header) {
        return strdup(o->raw_header);
    }
    h = json_object();
    json_object_set_new(h, "alg", json_string(o->alg));
    if (*o->typ) {
        json_object_set_new(h, "typ", json_string(o->typ));
    }
    if (o->kid) {
        json_object_set_new(h, "kid", json_string(o->kid));
    }
    s = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    return s;
}

static char *payload_text(const opts_t *o)
{
    json_t *c;
    char *s;
    int i;

    if (o->raw_payload) {
        return strdup(o->raw_payload);
    }
    c = json_object();
    if (o->iss) {
        json_object_set_new(c, "iss", json_string(o->iss));
    }
    if (o->sub) {
        json_object_set_new(c, "sub", json_string(o->sub));
    }
    if (o->n_aud == 1) {
        json_object_set_new(c, "aud", json_string(o->aud[0]));
    }
    else if (o->n_aud > 1) {
        json_t *a = json_array();

        for (i = 0; i < o->n_aud; i++) {
            json_array_append_new(a, json_string(o->aud[i]));
        }
        json_object_set_new(c, "aud", a);
    }
    if (!o->no_iat) {
        json_object_set_new(c, "iat", json_integer(o->now));
    }
    if (o->has_nbf) {
        json_object_set_new(c, "nbf", json_integer(o->now + o->nbf_in));
    }
    if (!o->no_exp) {
        json_object_set_new(c, "exp", json_integer(o->now + o->exp_in));
    }
    for (i = 0; i < o->n_claims; i++) {
        const char *eq = strchr(o->claims[i], '=');
        char *name = strndup(o->claims[i], (size_t)(eq - o->claims[i]));
        json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);

        if (!name || !v) {
            fprintf(stderr, PROG ": --claim %s: the value is not JSON "
                    "(strings need quotes: name='\"text\"')\n", o->claims[i]);
            exit(2);
        }
        json_object_set_new(c, name, v);
        free(name);
    }
    s = json_dumps(c, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(c);
    return s;
}

static char *sign_hmac(const unsigned char *key, size_t key_len,
                       const char *input)
{
    static const unsigned char empty[1] = { 0 };
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;

    /* An empty secret is allowed on purpose (a test of what a verifier
     * must never accept); HMAC() wants a non-NULL key. */
    if (!HMAC(EVP_sha256(), key_len ? key : empty, (int)key_len,
              (const unsigned char *)input, strlen(input), md, &md_len)) {
        fail("HMAC failed");
    }
    return b64url(md, md_len);
}

static char *sign_pkey(const opts_t *o, const char *input)
{
    EVP_PKEY *pkey = read_any_key(o->key_file);
    int want_ec = !strcmp(o->alg, "ES256");
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    char *out;

    if (EVP_PKEY_get_base_id(pkey) != (want_ec ? EVP_PKEY_EC : EVP_PKEY_RSA)
        || (want_ec && !is_p256(pkey))) {
        fail(want_ec ? "--alg ES256 needs an EC P-256 private key"
                     : "--alg RS256 needs an RSA private key");
    }
    if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pkey) != 1
        || EVP_DigestSign(md, NULL, &sig_len, (const unsigned char *)input,
                          strlen(input)) != 1
        || !(sig = malloc(sig_len))
        || EVP_DigestSign(md, sig, &sig_len, (const unsigned char *)input,
                          strlen(input)) != 1) {
        fail("signing failed (is --key a private key?)");
    }
    if (want_ec) {
        /* JWS wants r || s, 32 bytes each (RFC 7518 section 3.4), not
         * OpenSSL's DER. */
        const unsigned char *p = sig;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)sig_len);
        unsigned char rs[64];

        if (!es || BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, 32) != 32
            || BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + 32, 32) != 32) {
            fail("cannot convert the ECDSA signature");
        }
        ECDSA_SIG_free(es);
        out = b64url(rs, sizeof(rs));
    }
    else {
        out = b64url(sig, sig_len);
    }
    free(sig);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pkey);
    return out;
}

static int print_token(const opts_t *o)
{
    char *h = header_text(o), *c = payload_text(o);
    char *hb, *cb, *input, *sig;
    size_t len;

    if (!h || !c) {
        fail("cannot serialize JSON");
    }
    hb = b64url((const unsigned char *)h, strlen(h));
    cb = b64url((const unsigned char *)c, strlen(c));
    len = strlen(hb) + strlen(cb) + 2;
    input = malloc(len);
    if (!input) {
        fail("out of memory");
    }
    snprintf(input, len, "%s.%s", hb, cb);

    if (!strcmp(o->alg, "none")) {
        sig = strdup("");
    }
    else if (!strcmp(o->alg, "HS256")) {
        const char *file = o->secret_file ? o->secret_file : o->key_file;
        unsigned char *secret = read_file(file, &len);

        sig = sign_hmac(secret, len, input);
        free(secret);
    }
    else {
        sig = sign_pkey(o, input);
    }
    printf("%s.%s\n", input, sig);
    free(sig);
    free(input);
    free(hb);
    free(cb);
    free(h);
    free(c);
    return 0;
}

/* ------------------------------------------------------------------ */

enum {
    O_ALG = 256, O_KEY, O_KID, O_SUB, O_ISS, O_AUD, O_EXP_IN, O_NBF_IN,
    O_NO_EXP, O_NOW, O_CLAIM, O_PROJECT, O_TYP, O_HS_SECRET, O_RAW_HEADER,
    O_RAW_PAYLOAD, O_JWK, O_JWK_SECRET, O_NO_IAT, O_HELP
};

static const struct option long_opts[] = {
    { "alg",            required_argument, NULL, O_ALG },
    { "key",            required_argument, NULL, O_KEY },
    { "kid",            required_argument, NULL, O_KID },
    { "sub",            required_argument, NULL, O_SUB },
    { "iss",            required_argument, NULL, O_ISS },
    { "aud",            required_argument, NULL, O_AUD },
    { "exp-in",         required_argument, NULL, O_EXP_IN },
    { "nbf-in",         required_argument, NULL, O_NBF_IN },
    { "no-exp",         no_argument,       NULL, O_NO_EXP },
    { "no-iat",         no_argument,       NULL, O_NO_IAT },
    { "now",            required_argument, NULL, O_NOW },
    { "claim",          required_argument, NULL, O_CLAIM },
    { "project",        required_argument, NULL, O_PROJECT },
    { "typ",            required_argument, NULL, O_TYP },
    { "hs-secret-file", required_argument, NULL, O_HS_SECRET },
    { "raw-header",     required_argument, NULL, O_RAW_HEADER },
    { "raw-payload",    required_argument, NULL, O_RAW_PAYLOAD },
    { "jwk",            required_argument, NULL, O_JWK },
    { "jwk-secret",     required_argument, NULL, O_JWK_SECRET },
    { "help",           no_argument,       NULL, O_HELP },
    { NULL, 0, NULL, 0 }
};

static void parse_args(int argc, char **argv, opts_t *o)
{
    int c;

    memset(o, 0, sizeof(*o));
    o->alg = "RS256";
    o->typ = "JWT";
    o->exp_in = DEFAULT_EXP_IN;
    o->now = (long long)time(NULL);
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case O_ALG:         o->alg = optarg;                         break;
        case O_KEY:         o->key_file = optarg;                    break;
        case O_KID:         o->kid = optarg;                         break;
        case O_SUB:         o->sub = optarg;                         break;
        case O_ISS:         o->iss = optarg;                         break;
        case O_NO_EXP:      o->no_exp = 1;                           break;
        case O_NO_IAT:      o->no_iat = 1;                           break;
        case O_TYP:         o->typ = optarg;                         break;
        case O_HS_SECRET:   o->secret_file = optarg;                 break;
        case O_RAW_HEADER:  o->raw_header = optarg;                  break;
        case O_RAW_PAYLOAD: o->raw_payload = optarg;                 break;
        case O_JWK:         o->jwk_file = optarg;                    break;
        case O_JWK_SECRET:  o->jwk_secret_file = optarg;             break;
        case O_NOW:         o->now = parse_seconds("--now", optarg); break;
        case O_EXP_IN:
            o->exp_in = parse_seconds("--exp-in", optarg);
            o->has_exp_in = 1;
            break;
        case O_NBF_IN:
            o->nbf_in = parse_seconds("--nbf-in", optarg);
            o->has_nbf = 1;
            break;
        case O_AUD:
            if (o->n_aud == MAX_AUD) {
                usage("too many --aud");
            }
            o->aud[o->n_aud++] = optarg;
            break;
        case O_CLAIM:
            if (o->n_claims == MAX_CLAIMS) {
                usage("too many --claim");
            }
            if (!strchr(optarg, '=') || *optarg == '=') {
                usage("--claim wants NAME=JSON");
            }
            o->claims[o->n_claims++] = optarg;
            break;
        case O_PROJECT: {
            /* An id ([A-Za-z0-9._-]): no JSON escaping needed.  Static:
             * the last --project wins, as a later --claim would. */
            static char claim[512];

            if (o->n_claims == MAX_CLAIMS) {
                usage("too many --claim");
            }
            if (strpbrk(optarg, "\"\\")
                || snprintf(claim, sizeof(claim), "aura_project=\"%s\"",
                            optarg) >= (int)sizeof(claim)) {
                usage("--project wants an id");
            }
            o->claims[o->n_claims++] = claim;
            break;
        }
        case O_HELP:
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        default:
            usage(NULL);
        }
    }
    if (optind != argc) {
        usage("unexpected argument");
    }
}

static void check_args(const opts_t *o)
{
    if (o->jwk_file || o->jwk_secret_file) {
        if (o->jwk_file && o->jwk_secret_file) {
            usage("--jwk and --jwk-secret exclude each other");
        }
        return;
    }
    if (o->no_exp && o->has_exp_in) {
        usage("--no-exp and --exp-in exclude each other");
    }
    if (!strcmp(o->alg, "none")) {
        if (o->key_file || o->secret_file) {
            usage("--alg none takes no key");
        }
    }
    else if (!strcmp(o->alg, "HS256")) {
        if (!!o->key_file == !!o->secret_file) {
            usage("--alg HS256 needs one of --key or --hs-secret-file");
        }
    }
    else if (!strcmp(o->alg, "RS256") || !strcmp(o->alg, "ES256")) {
        if (!o->key_file || o->secret_file) {
            usage("--alg RS256/ES256 needs --key (a PEM private key)");
        }
    }
    else {
        usage("--alg must be RS256, ES256, HS256 or none");
    }
}

int main(int argc, char **argv)
{
    opts_t o;

    parse_args(argc, argv, &o);
    check_args(&o);
    if (o.jwk_file || o.jwk_secret_file) {
        return print_jwk(&o);
    }
    return print_token(&o);
}
