/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_jwt.h: verification of compact JWS bearer tokens (RS256, ES256,
 * HS256) against a set of keys built at configuration time, as pure
 * functions over APR, jansson, libjwt and OpenSSL.  No httpd.h here:
 * t/unit/test_jwt.c links this file as it is.
 *
 * A key set is built once (pconf, or a pool the JWKS refresh owns) and is
 * then read-only: any number of threads may verify against it
 * concurrently.  aura_jwt_verify() allocates only from the pool it is
 * given (r->pool) and keeps no state between calls.
 */
#ifndef AURA_JWT_H
#define AURA_JWT_H

#include "apr_errno.h"
#include "apr_pools.h"
#include "apr_time.h"

/** A set of verification keys.  Opaque; immutable once built; read by
 *  many threads. */
typedef struct aura_jwt_keyset_t aura_jwt_keyset_t;

/* Algorithm bits, for aura_jwt_policy_t.algs. */
#define AURA_JWT_RS256 0x1
#define AURA_JWT_ES256 0x2
#define AURA_JWT_HS256 0x4

/** Smallest HMAC secret aura_jwt_keyset_add_secret() accepts, in bytes
 *  (RFC 7518 section 3.2: at least the hash output size). */
#define AURA_JWT_MIN_SECRET_LEN 32

/** Smallest RSA modulus accepted, in bits, from a PEM or a JWKS. */
#define AURA_JWT_MIN_RSA_BITS 2048

/** Length bound used when aura_jwt_policy_t.max_len is 0. */
#define AURA_JWT_DEFAULT_MAX_LEN 8192

/**
 * Create an empty key set.
 * @param p pool that owns the set, its keys and their PEM texts (the
 *        set needs no cleanup: everything in it is pool memory)
 * @return the set (never NULL: APR aborts on allocation failure)
 */
aura_jwt_keyset_t *aura_jwt_keyset_make(apr_pool_t *p);

/**
 * Add the keys of a JWKS document ({"keys":[...]}, RFC 7517).
 *
 * Accepted: kty "RSA" (n, e; modulus of at least AURA_JWT_MIN_RSA_BITS)
 * as RS256; kty "EC" with crv "P-256" (x, y: 32 bytes each after
 * base64url decoding, shorter values left-padded, the point must be on
 * the curve) as ES256; kty "oct" (k, at least AURA_JWT_MIN_SECRET_LEN
 * bytes) as HS256.  Skipped without error: a member that is not an
 * object, an unknown kty or curve, "use" present and not "sig", "alg"
 * present and not the algorithm of the key's type, a "kid" that is not
 * a string, a key whose fields do not decode, and a key whose kid and
 * type are already in the set (the first one wins).  A key without kid
 * is added without one.  Key fields are base64url; trailing '=' padding
 * is tolerated here (configuration input), never in tokens.  "key_ops",
 * "x5c" and "x5t" are ignored.  Public keys are converted once to an
 * SPKI PEM kept in the set's pool.
 * @param ks the set
 * @param json the document (need not be NUL-terminated)
 * @param len its length in bytes
 * @param added set to the number of keys added (0 on failure); may be NULL
 * @param err set on failure to a short reason (static string)
 * @return APR_SUCCESS when at least one key was added; APR_EINVAL when
 *         the document is not JSON, is not an object, has no "keys"
 *         array, or has no usable key (the set is then unchanged)
 */
apr_status_t aura_jwt_keyset_add_jwks(aura_jwt_keyset_t *ks,
                                      const char *json, apr_size_t len,
                                      int *added, const char **err);

/**
 * Add a public key from PEM text: a SubjectPublicKeyInfo ("BEGIN PUBLIC
 * KEY"), an X.509 certificate ("BEGIN CERTIFICATE", its public key is
 * taken; validity dates and chain are not checked) or, as OpenSSL 3
 * reads it too, a PKCS#1 "BEGIN RSA PUBLIC KEY".  The key is stored as
 * SPKI PEM, the only form libjwt reads.  RSA (at least
 * AURA_JWT_MIN_RSA_BITS) becomes an RS256 key, EC on P-256 an ES256 key;
 * other types and curves are refused.  Private keys are refused.
 * @param ks the set
 * @param kid key id, copied; NULL for a key without kid
 * @param pem the PEM text (need not be NUL-terminated)
 * @param len its length in bytes
 * @param err set on failure to a short reason (static string)
 * @return APR_SUCCESS, or APR_EINVAL (unparsable, unsupported type or
 *         curve, RSA too short, kid already in the set for that type)
 */
apr_status_t aura_jwt_keyset_add_pem(aura_jwt_keyset_t *ks, const char *kid,
                                     const char *pem, apr_size_t len,
                                     const char **err);

/**
 * Add an HMAC secret for HS256.
 * @param ks the set
 * @param kid key id, copied; NULL for a key without kid
 * @param secret raw bytes, copied
 * @param len at least AURA_JWT_MIN_SECRET_LEN (a short secret can be
 *        brute-forced offline from a single token)
 * @param err set on failure to a short reason (static string)
 * @return APR_SUCCESS, or APR_EINVAL (too short, kid already in the set
 *         for HS256)
 */
apr_status_t aura_jwt_keyset_add_secret(aura_jwt_keyset_t *ks,
                                        const char *kid,
                                        const unsigned char *secret,
                                        apr_size_t len, const char **err);

/** @return the number of keys in the set (0 for NULL) */
int aura_jwt_keyset_count(const aura_jwt_keyset_t *ks);

/** What a token must satisfy. */
typedef struct {
    apr_time_t now;                 /**< the caller passes the clock */
    apr_interval_time_t leeway;     /**< for exp / nbf / iat; <0 means 0 */
    unsigned int algs;              /**< allow-list bitmask AURA_JWT_* */
    const char *issuer;             /**< NULL: not checked; else iss must
                                         equal it (case-sensitive) */
    const char *audience;           /**< NULL: not checked */
    int audience_exact;             /**< 1: aud must be exactly that
                                         string, or an array whose ONLY
                                         member is it; 0: see
                                         audience_any */
    apr_size_t max_len;             /**< tokens longer are refused before
                                         any parsing; 0: the default
                                         AURA_JWT_DEFAULT_MAX_LEN */
    int require_sub;                /**< 1: sub must be a non-empty
                                         string */
    /* Since 0.5.0: */
    int audience_any;               /**< with audience_exact 0: 1: aud an
                                         array CONTAINING audience (other
                                         audiences tolerated); 0 (the
                                         OpenID Connect reading): every
                                         member of an aud array must be
                                         audience */
    apr_size_t sub_max;             /**< longest sub accepted; 0: the
                                         default AURA_SUB_MAX */
    const char *project_claim;      /**< NULL: not checked; else the
                                         payload must have this claim, a
                                         string equal to project */
    const char *project;            /**< the project the token must name
                                         (with project_claim; NULL then
                                         refuses every token) */
    const char *typ;                /**< NULL: typ absent or "JWT" only;
                                         else this explicit type too
                                         ("logout+jwt"), in any case,
                                         "application/" optional */
    apr_interval_time_t max_lifetime; /**< AuraTokenMaxLifetime: iat is
                                         required and exp - iat may be at
                                         most this plus the leeway; 0:
                                         no limit (iat optional) */
} aura_jwt_policy_t;

/** What a valid token says.  Strings are copies in the verify pool. */
typedef struct {
    const char *sub;         /**< NULL when absent */
    const char *kid;         /**< from the header, NULL if none */
    const char *alg;         /**< "RS256" | "ES256" | "HS256" */
    const char *iss;         /**< NULL when absent */
    apr_time_t exp;          /**< never 0 on success (exp is required) */
    const char *claims_json; /**< the whole payload JSON text, for later
                                  use (role claims etc.) */
} aura_jwt_claims_t;

typedef enum {
    AURA_JWT_OK = 0,
    AURA_JWT_TOO_LARGE,
    AURA_JWT_MALFORMED,
    AURA_JWT_ALG_NOT_ALLOWED,
    AURA_JWT_UNKNOWN_KID,
    AURA_JWT_BAD_SIGNATURE,
    AURA_JWT_EXPIRED,
    AURA_JWT_NOT_YET_VALID,
    AURA_JWT_NO_EXP,
    AURA_JWT_BAD_ISSUER,
    AURA_JWT_BAD_AUDIENCE,
    AURA_JWT_NO_SUBJECT,
    AURA_JWT_BAD_SUBJECT,    /**< sub too long or with a control char */
    AURA_JWT_BAD_PROJECT,    /**< project_claim absent or not project */
    /* Since 0.5.0: */
    AURA_JWT_RESERVED_SUBJECT, /**< sub in the keys' actor namespace */
    AURA_JWT_NO_IAT,         /**< max_lifetime set and iat absent */
    AURA_JWT_TOO_LONG_LIVED  /**< exp - iat beyond max_lifetime + leeway */
} aura_jwt_result_e;

/** The last value of aura_jwt_result_e (for range checks). */
#define AURA_JWT_RESULT_LAST AURA_JWT_TOO_LONG_LIVED

/**
 * Verify a compact JWS (header.payload.signature).
 *
 * Order of the checks, first failure wins:
 *  1. length (strnlen, so an unterminated huge buffer is not walked):
 *     TOO_LARGE;
 *  2. syntax: exactly three parts, only base64url characters, no
 *     padding, canonical base64url, header and payload non-empty: else
 *     MALFORMED (an empty signature part is syntactically allowed so
 *     that "alg":"none" tokens are reported as such);
 *  3. header (decoded here with jansson, duplicate names rejected): a
 *     JSON object; typ absent, "JWT" in any case, or the policy's
 *     explicit typ; crit absent; kid absent or a string; alg a
 *     string: else MALFORMED.  alg not exactly
 *     "RS256", "ES256" or "HS256", or not in pol->algs ("none" always
 *     refused): ALG_NOT_ALLOWED;
 *  4. key: with a kid, the key with that kid (none: UNKNOWN_KID) whose
 *     type matches alg (a kid of another type: ALG_NOT_ALLOWED); without
 *     kid, the only key of alg's type (none or several: UNKNOWN_KID).
 *     The key type pins the algorithm: an HS256 token never meets a
 *     public key PEM, an RS256 token never meets a secret;
 *  5. payload: a JSON object without duplicate names or NUL: MALFORMED;
 *  6. signature: empty, or refused with that key alone: BAD_SIGNATURE.
 *     HS256 by aura_jwt_hmac_ok() (constant time), RS256 and ES256
 *     with OpenSSL and the key parsed when the set was built, the
 *     signature exactly the key's length;
 *  7. claims (read here from the payload): registered claims of the wrong
 *     JSON type (exp/nbf/iat not numbers, iss/sub not strings, aud not a
 *     string or an array of strings): MALFORMED; exp absent: NO_EXP;
 *     now > exp + leeway: EXPIRED; now + leeway < nbf, or iat > now +
 *     leeway: NOT_YET_VALID; with max_lifetime, iat absent: NO_IAT,
 *     exp - iat > max_lifetime + leeway: TOO_LONG_LIVED; iss:
 *     BAD_ISSUER; aud: BAD_AUDIENCE; sub: NO_SUBJECT; sub longer than
 *     sub_max or holding a control character or DEL
 *     (aura_identity_text_ok(), on the JSON length, so "\u0000" is
 *     seen): BAD_SUBJECT, whether or not require_sub is set; sub
 *     starting with "key:" in any case, the namespace of the keys'
 *     actors (aura_identity_actor_reserved()): RESERVED_SUBJECT,
 *     whether or not require_sub is set;
 *     project_claim absent, not a string or not equal to project:
 *     BAD_PROJECT.  exp/nbf/iat may be integers or reals (seconds);
 *     values beyond year 9999 are clamped there.
 *
 * @param p pool for every allocation (the request pool); nothing is
 *        registered on it: all library objects are freed before return
 * @param ks the key set (read only); NULL acts as an empty set
 * @param pol the policy (not NULL)
 * @param token the token (without "Bearer "); NULL: MALFORMED
 * @param out filled on AURA_JWT_OK, zeroed otherwise; may be NULL
 * @return AURA_JWT_OK or the reason of the refusal
 */
aura_jwt_result_e aura_jwt_verify(apr_pool_t *p, const aura_jwt_keyset_t *ks,
                                  const aura_jwt_policy_t *pol,
                                  const char *token, aura_jwt_claims_t *out);

/**
 * Check a JWS HMAC signature (RFC 7515 section 5.2, RFC 7518 section
 * 3.2) in constant time: the MAC of input under secret is computed with
 * OpenSSL and compared with CRYPTO_memcmp() to the decoded signature,
 * never as text (libjwt 1.10.2 uses strcmp(), a timing oracle).
 * @param alg the JWA name; "HS256" is the only HMAC the gateway
 *        accepts: any other name ("RS256", "ES256", "HS384", "none",
 *        NULL) is refused, so a public key can never verify as an HMAC
 *        secret through here
 * @param input the JWS signing input as sent (header "." payload)
 * @param input_len its length
 * @param sig the signature part as sent
 * @param sig_len its length
 * @param secret the HMAC key; secret_len its length, not 0
 * @return 1 when sig is the unpadded, canonical base64url of exactly the
 *         MAC; 0 otherwise: another length (truncated, padded, longer),
 *         a character outside base64url, unused trailing bits set, a
 *         wrong MAC, an unknown alg, an empty secret, an OpenSSL failure
 *         (its error queue is cleared).  Allocates nothing; thread-safe.
 */
int aura_jwt_hmac_ok(const char *alg, const char *input,
                     apr_size_t input_len, const char *sig,
                     apr_size_t sig_len, const unsigned char *secret,
                     apr_size_t secret_len);

/**
 * @return a short text for a result, safe to show a client ("token
 *         expired"); never contains token content (static string)
 */
const char *aura_jwt_result_text(aura_jwt_result_e r);

/**
 * Parse an algorithm list such as "RS256 ES256" (names separated by
 * white space, case-sensitive as in RFC 7518).
 * @param list the list
 * @param err set on failure to a short reason (static string)
 * @return the bitmask, or 0 with *err for an empty list, an unknown
 *         name, or "none"
 */
unsigned int aura_jwt_parse_algs(const char *list, const char **err);

#endif /* AURA_JWT_H */
