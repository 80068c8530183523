/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nkey.c: NATS nkeys and creds files, pure code (aura_nkey.h).
 *
 * The gateway cannot hand nats.c a creds file: nats.c 3.4.1 reads it at
 * connect time, in the child, after the privileges are dropped, and the
 * file is the parent's.  So the parent reads it, keeps the JWT and the
 * raw seed in memory, and the child answers the server's nonce itself
 * (a signature callback): that needs the seed decoded, done here, and
 * Ed25519, done by OpenSSL's EVP.
 */
#include "nats/aura_nkey.h"

#include <string.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>

#define PREFIX_SEED     (18 << 3)       /* 'S' */
#define SEED_BYTES      (2 + AURA_NKEY_RAW + 2)
#define PUB_BYTES       (1 + AURA_NKEY_RAW + 2)

static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

static unsigned int crc16(const unsigned char *p, size_t n)
{
    unsigned int crc = 0;
    size_t i;
    int b;

    for (i = 0; i < n; i++) {
        crc ^= (unsigned int)p[i] << 8;
        for (b = 0; b < 8; b++) {
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) : (crc << 1);
            crc &= 0xffff;
        }
    }
    return crc;
}

/* out must hold (n * 8 + 4) / 5 + 1 characters. */
static void b32_encode(const unsigned char *in, size_t n, char *out)
{
    unsigned int acc = 0;
    int bits = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            *out++ = b32[(acc >> bits) & 31];
        }
    }
    if (bits > 0) {
        *out++ = b32[(acc << (5 - bits)) & 31];
    }
    *out = '\0';
}

/* Decodes exactly want bytes from len characters; -1 on a character
 * outside the alphabet or a length that does not give want bytes. */
static int b32_decode(const char *in, size_t len, unsigned char *out,
                      size_t want)
{
    unsigned int acc = 0;
    int bits = 0;
    size_t i, n = 0;

    if (len != (want * 8 + 4) / 5) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        const char *c = (in[i] != '\0') ? strchr(b32, in[i]) : NULL;

        if (!c) {
            return -1;
        }
        acc = (acc << 5) | (unsigned int)(c - b32);
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    /* The last character's spare bits must be zero: else two texts
     * would decode to one key. */
    return (n == want && (acc & ((1u << bits) - 1)) == 0) ? 0 : -1;
}

int aura_nkey_decode_seed(const char *text, size_t len,
                          unsigned char raw[AURA_NKEY_RAW], int *type)
{
    unsigned char buf[SEED_BYTES];
    unsigned int crc;
    int rc = -1;

    if (text && len == AURA_NKEY_SEED_LEN
        && b32_decode(text, len, buf, sizeof(buf)) == 0) {
        crc = (unsigned int)buf[SEED_BYTES - 2]
              | ((unsigned int)buf[SEED_BYTES - 1] << 8);
        if (crc == crc16(buf, SEED_BYTES - 2)
            && (buf[0] & 0xf8) == PREFIX_SEED) {
            *type = ((buf[0] & 7) << 5) | ((buf[1] & 0xf8) >> 3);
            memcpy(raw, buf + 2, AURA_NKEY_RAW);
            rc = 0;
        }
    }
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc;
}

void aura_nkey_encode_seed(int type, const unsigned char raw[AURA_NKEY_RAW],
                           char out[AURA_NKEY_SEED_LEN + 1])
{
    unsigned char buf[SEED_BYTES];
    unsigned int crc;

    buf[0] = (unsigned char)(PREFIX_SEED | (type >> 5));
    buf[1] = (unsigned char)((type & 31) << 3);
    memcpy(buf + 2, raw, AURA_NKEY_RAW);
    crc = crc16(buf, SEED_BYTES - 2);
    buf[SEED_BYTES - 2] = (unsigned char)(crc & 0xff);
    buf[SEED_BYTES - 1] = (unsigned char)(crc >> 8);
    b32_encode(buf, sizeof(buf), out);
    OPENSSL_cleanse(buf, sizeof(buf));
}

void aura_nkey_encode_public(int type, const unsigned char pub[AURA_NKEY_RAW],
                             char out[AURA_NKEY_PUB_LEN + 1])
{
    unsigned char buf[PUB_BYTES];
    unsigned int crc;

    buf[0] = (unsigned char)type;
    memcpy(buf + 1, pub, AURA_NKEY_RAW);
    crc = crc16(buf, PUB_BYTES - 2);
    buf[PUB_BYTES - 2] = (unsigned char)(crc & 0xff);
    buf[PUB_BYTES - 1] = (unsigned char)(crc >> 8);
    b32_encode(buf, sizeof(buf), out);
}

int aura_nkey_public_of(const unsigned char seed[AURA_NKEY_RAW],
                        unsigned char pub[AURA_NKEY_RAW])
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL,
                                               seed, AURA_NKEY_RAW);
    size_t n = AURA_NKEY_RAW;
    int ok;

    if (!k) {
        return -1;
    }
    ok = EVP_PKEY_get_raw_public_key(k, pub, &n) == 1 && n == AURA_NKEY_RAW;
    EVP_PKEY_free(k);
    return ok ? 0 : -1;
}

int aura_nkey_sign(const unsigned char seed[AURA_NKEY_RAW],
                   const unsigned char *data, size_t len,
                   unsigned char sig[AURA_NKEY_SIG])
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL,
                                               seed, AURA_NKEY_RAW);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t n = AURA_NKEY_SIG;
    int ok = 0;

    if (k && md && EVP_DigestSignInit(md, NULL, NULL, NULL, k) == 1) {
        ok = EVP_DigestSign(md, sig, &n, data, len) == 1
             && n == AURA_NKEY_SIG;
    }
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(k);
    return ok ? 0 : -1;
}

/* --- creds files --- */

/* The line starting at *pos (ends at '\n' or the end), without its
 * '\r\n' and surrounding blanks; *pos moves past it.  0 at the end. */
static int next_line(const char *buf, size_t len, size_t *pos,
                     aura_span_t *line)
{
    size_t s = *pos, e;

    if (s >= len) {
        return 0;
    }
    for (e = s; e < len && buf[e] != '\n'; e++) {
    }
    *pos = e < len ? e + 1 : e;
    while (s < e && (buf[s] == ' ' || buf[s] == '\t')) {
        s++;
    }
    while (e > s && (buf[e - 1] == '\r' || buf[e - 1] == ' '
                     || buf[e - 1] == '\t')) {
        e--;
    }
    line->p = buf + s;
    line->len = e - s;
    return 1;
}

static int contains(const aura_span_t *l, const char *word)
{
    size_t n = strlen(word), i;

    for (i = 0; i + n <= l->len; i++) {
        if (!memcmp(l->p + i, word, n)) {
            return 1;
        }
    }
    return 0;
}

/* "---...BEGIN|END...---": at least three dashes on both ends. */
static int is_marker(const aura_span_t *l, const char *what)
{
    return l->len >= 6 && !strncmp(l->p, "---", 3)
           && !strncmp(l->p + l->len - 3, "---", 3) && contains(l, what);
}

/* The content of the block whose BEGIN marker contains label: the one
 * non-blank line after it, followed by an END marker. */
static int find_block(const char *buf, size_t len, const char *label,
                      aura_span_t *out)
{
    size_t pos = 0;
    aura_span_t l;

    while (next_line(buf, len, &pos, &l)) {
        if (!is_marker(&l, "BEGIN") || !contains(&l, label)) {
            continue;
        }
        do {
            if (!next_line(buf, len, &pos, &l)) {
                return -1;
            }
        } while (l.len == 0);
        *out = l;
        if (!next_line(buf, len, &pos, &l) || !is_marker(&l, "END")) {
            return -1;
        }
        return 0;
    }
    return -1;
}

/* Three base64url parts: header.claims.signature. */
static int jwt_shaped(const aura_span_t *j)
{
    size_t i, dots = 0;

    for (i = 0; i < j->len; i++) {
        char c = j->p[i];

        if (c == '.') {
            if (i == 0 || i + 1 == j->len || j->p[i - 1] == '.') {
                return 0;
            }
            dots++;
        }
        else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
                   || (c >= '0' && c <= '9') || c == '-' || c == '_'
                   || c == '=')) {
            return 0;
        }
    }
    return dots == 2;
}

static int user_seed(const aura_span_t *s, const char **why)
{
    unsigned char raw[AURA_NKEY_RAW];
    int type = -1, rc;

    rc = aura_nkey_decode_seed(s->p, s->len, raw, &type);
    OPENSSL_cleanse(raw, sizeof(raw));
    if (rc != 0) {
        *why = "the seed is not a valid nkey seed (base32, checksum)";
        return -1;
    }
    if (type != AURA_NKEY_USER) {
        *why = "the seed is not a user nkey seed (SU...)";
        return -1;
    }
    return 0;
}

int aura_creds_parse(const char *buf, size_t len, aura_span_t *jwt,
                     aura_span_t *seed, const char **why)
{
    if (!buf || find_block(buf, len, "JWT", jwt) != 0) {
        *why = "no user JWT between BEGIN/END NATS USER JWT markers";
        return -1;
    }
    if (!jwt_shaped(jwt)) {
        *why = "the user JWT is not a JWT (header.claims.signature)";
        return -1;
    }
    if (find_block(buf, len, "NKEY SEED", seed) != 0) {
        *why = "no seed between BEGIN/END USER NKEY SEED markers";
        return -1;
    }
    return user_seed(seed, why);
}

int aura_seedfile_parse(const char *buf, size_t len, aura_span_t *seed,
                        const char **why)
{
    size_t pos = 0;
    aura_span_t l;

    if (!buf) {
        *why = "empty";
        return -1;
    }
    if (find_block(buf, len, "NKEY SEED", seed) != 0) {
        /* A bare seed: the one non-blank line of the file. */
        seed->len = 0;
        while (next_line(buf, len, &pos, &l)) {
            if (l.len && seed->len) {
                *why = "more than one line: not an nkey seed file";
                return -1;
            }
            if (l.len) {
                *seed = l;
            }
        }
    }
    if (!seed->len) {
        *why = "no nkey seed in it";
        return -1;
    }
    return user_seed(seed, why);
}
