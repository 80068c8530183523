/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nats_conf.c: the directives of the NATS connection every child
 * opens (aura_nats.c): servers, name, timeouts, reconnects, TLS and
 * credentials.  Global only: one connection per child serves every
 * VirtualHost.
 *
 * The TLS and credential files are read here, by the parent, while it
 * still has the privileges to read them: nats.c would read a creds file
 * at connect time, in a child that runs as the unprivileged user.  The
 * children inherit the bytes.  What is read is checked now (a PEM
 * certificate, a key, a creds file, a seed), so a wrong file stops
 * `apachectl -t` rather than the first connect; the contents never reach
 * a log.  Every buffer holding a secret is wiped when pconf goes.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "nats/aura_nats_conf.h"

#include "nats/aura_nkey.h"
#include "nats/aura_subject.h"

#include "http_core.h"
#include "http_log.h"
#include "apr_strings.h"
#include "apr_file_io.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#define MAX_NATS_WAIT       apr_time_from_sec(600)
#define MAX_NATS_FILE       (1024 * 1024)

const char *aura_set_nats_servers(cmd_parms *cmd, void *dummy,
                                  const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    if (ap_strstr_c(arg, "://") == NULL
        || (strncasecmp(arg, "nats://", 7) && strncasecmp(arg, "tls://", 6))
        || strlen(arg) < 8) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS URL "
                            "(nats://host:port or tls://host:port)",
                            cmd->cmd->name, arg);
    }
    if (!c->nats_servers) {
        c->nats_servers = apr_array_make(cmd->pool, 2, sizeof(const char *));
    }
    APR_ARRAY_PUSH(c->nats_servers, const char *) = arg;
    return NULL;
}

const char *aura_set_nats_name(cmd_parms *cmd, void *dummy,
                               const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    aura_cmd_server_conf(cmd)->nats_name = arg;
    return NULL;
}

const char *aura_set_nats_time(cmd_parms *cmd, void *dummy,
                               const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    /* The field is chosen by the command table's cmd_data offset. */
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    return aura_parse_duration(cmd, arg, apr_time_from_msec(10),
                               MAX_NATS_WAIT, field);
}

const char *aura_set_nats_max_reconnect(cmd_parms *cmd, void *dummy,
                                        const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd);
    char *end;
    apr_int64_t n;

    (void)dummy;
    if (err) {
        return err;
    }
    if (!strcasecmp(arg, "unlimited")) {
        c->nats_max_reconnect = -1;
        return NULL;
    }
    n = apr_strtoi64(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || n < 0 || n > 1000000) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not 'unlimited' or a "
                            "number of attempts between 0 and 1000000",
                            cmd->cmd->name, arg);
    }
    c->nats_max_reconnect = (int)n;
    return NULL;
}

/* --- TLS and credentials --- */

typedef struct {
    void *p;
    apr_size_t n;
} secret_t;

static apr_status_t wipe_secret(void *data)
{
    secret_t *s = data;

    OPENSSL_cleanse(s->p, s->n);
    return APR_SUCCESS;
}

/* Wiped when the pool goes (pconf: at restart and at exit). */
static void *secret_alloc(apr_pool_t *p, apr_size_t n)
{
    secret_t *s = apr_palloc(p, sizeof(*s));

    s->p = apr_pcalloc(p, n);
    s->n = n;
    apr_pool_cleanup_register(p, s, wipe_secret, apr_pool_cleanup_null);
    return s->p;
}

static aura_nats_sec_t *sec_of(cmd_parms *cmd)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    if (!c->nats_sec) {
        c->nats_sec = apr_pcalloc(cmd->pool, sizeof(*c->nats_sec));
    }
    return c->nats_sec;
}

/* The whole file, NUL-terminated, in a buffer wiped with pconf. */
static const char *read_whole(cmd_parms *cmd, const char *path,
                              char **buf, apr_size_t *len)
{
    apr_file_t *f;
    apr_finfo_t fi;
    apr_status_t rv;
    char err[128];

    rv = apr_file_open(&f, path, APR_FOPEN_READ, 0, cmd->temp_pool);
    if (rv == APR_SUCCESS) {
        rv = apr_file_info_get(&fi, APR_FINFO_SIZE, f);
        if (rv == APR_SUCCESS && (fi.size <= 0 || fi.size > MAX_NATS_FILE)) {
            apr_file_close(f);
            return apr_psprintf(cmd->pool, "%s: '%s' is empty or larger "
                                "than 1 MiB", cmd->cmd->name, path);
        }
    }
    if (rv == APR_SUCCESS) {
        *len = (apr_size_t)fi.size;
        *buf = secret_alloc(cmd->pool, *len + 1);
        rv = apr_file_read_full(f, *buf, *len, NULL);
        apr_file_close(f);
    }
    if (rv != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: cannot read '%s': %s",
                            cmd->cmd->name, path,
                            apr_strerror(rv, err, sizeof(err)));
    }
    return NULL;
}

static int no_passphrase(char *buf, int size, int rw, void *u)
{
    (void)buf; (void)size; (void)rw; (void)u;
    return 0;
}

/* 1 when the PEM text holds a certificate (want_key 0) or an
 * unencrypted private key (want_key 1). */
static int pem_holds(const char *pem, apr_size_t len, int want_key)
{
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    int ok = 0;

    if (b && want_key) {
        EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);

        ok = k != NULL;
        EVP_PKEY_free(k);
    }
    else if (b) {
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

        ok = x != NULL;
        X509_free(x);
    }
    BIO_free(b);
    ERR_clear_error();
    return ok;
}

/* Keeps the raw seed (wiped with pconf) and its public key. */
static const char *keep_seed(cmd_parms *cmd, aura_nats_sec_t *sec,
                             const aura_span_t *text)
{
    unsigned char *raw = secret_alloc(cmd->pool, AURA_NKEY_RAW);
    unsigned char pub[AURA_NKEY_RAW];
    char *enc = apr_palloc(cmd->pool, AURA_NKEY_PUB_LEN + 1);
    int type;

    if (aura_nkey_decode_seed(text->p, text->len, raw, &type) != 0
        || aura_nkey_public_of(raw, pub) != 0) {
        return "the seed cannot be used";
    }
    aura_nkey_encode_public(type, pub, enc);
    sec->seed = raw;
    sec->nkey_pub = enc;
    return NULL;
}

static const char *load_creds(cmd_parms *cmd, aura_nats_sec_t *sec,
                              const char *buf, apr_size_t len)
{
    aura_span_t jwt, seed;
    const char *why = NULL;
    char *copy;

    if (aura_creds_parse(buf, len, &jwt, &seed, &why) != 0
        || (why = keep_seed(cmd, sec, &seed)) != NULL) {
        return why;
    }
    copy = secret_alloc(cmd->pool, jwt.len + 1);
    memcpy(copy, jwt.p, jwt.len);
    sec->jwt = copy;
    return NULL;
}

static const char *load_seed(cmd_parms *cmd, aura_nats_sec_t *sec,
                             const char *buf, apr_size_t len)
{
    aura_span_t seed;
    const char *why = NULL;

    if (aura_seedfile_parse(buf, len, &seed, &why) != 0) {
        return why;
    }
    return keep_seed(cmd, sec, &seed);
}

/* Checks what a file holds and keeps it; a sentence on failure. */
static const char *load_file(cmd_parms *cmd, aura_nats_sec_t *sec,
                             int which, const char *path, const char *buf,
                             apr_size_t len)
{
    switch (which) {
    case AURA_NATS_CA:
        sec->ca_file = path;
        sec->ca_pem = buf;
        return pem_holds(buf, len, 0) ? NULL : "holds no PEM certificate";
    case AURA_NATS_CERT:
        sec->cert_file = path;
        sec->cert_pem = buf;
        return pem_holds(buf, len, 0) ? NULL : "holds no PEM certificate";
    case AURA_NATS_KEY:
        sec->key_file = path;
        sec->key_pem = buf;
        return pem_holds(buf, len, 1)
               ? NULL : "holds no unencrypted PEM private key";
    case AURA_NATS_CREDS:
        sec->creds_file = path;
        return load_creds(cmd, sec, buf, len);
    default:
        sec->seed_file = path;
        return load_seed(cmd, sec, buf, len);
    }
}

const char *aura_set_nats_file(cmd_parms *cmd, void *dummy,
                               const char *arg)
{
    int which = (int)(apr_uintptr_t)cmd->info;
    const char *err = aura_global_only(cmd);
    const char *path = ap_server_root_relative(cmd->pool, arg);
    aura_nats_sec_t *sec;
    apr_size_t len = 0;
    char *buf = NULL;

    (void)dummy;
    if (err) {
        return err;
    }
    if (!path) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a valid path",
                            cmd->cmd->name, arg);
    }
    sec = sec_of(cmd);
    if ((which == AURA_NATS_CREDS && sec->seed_file)
        || (which == AURA_NATS_SEED && sec->creds_file)) {
        return apr_psprintf(cmd->pool, "%s: AuraNATSCredentials and "
                            "AuraNATSNKeySeed exclude each other (the creds "
                            "file already holds a seed)", cmd->cmd->name);
    }
    err = read_whole(cmd, path, &buf, &len);
    if (!err && (err = load_file(cmd, sec, which, path, buf, len))) {
        err = apr_psprintf(cmd->pool, "%s: '%s' %s", cmd->cmd->name, path,
                           err);
    }
    return err;
}

const char *aura_set_nats_server_name(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    sec_of(cmd)->server_name = arg;
    return NULL;
}

const char *aura_set_nats_inbox_prefix(cmd_parms *cmd, void *dummy,
                                       const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    /* A literal subject (no wildcard), short enough for the inbox
     * subjects built from it (aura_inbox.c: 64 bytes with the nuid). */
    if (!aura_subject_literal(arg) || strlen(arg) > 32) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject of "
                            "at most 32 characters without wildcards",
                            cmd->cmd->name, arg);
    }
    sec_of(cmd)->inbox_prefix = arg;
    return NULL;
}

static int cert_matches_key(const aura_nats_sec_t *sec)
{
    BIO *cb = BIO_new_mem_buf(sec->cert_pem, -1);
    BIO *kb = BIO_new_mem_buf(sec->key_pem, -1);
    X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, no_passphrase,
                                               NULL) : NULL;
    int ok = x && k && X509_check_private_key(x, k) == 1;

    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cb);
    BIO_free(kb);
    ERR_clear_error();
    return ok;
}

int aura_nats_check_config(server_rec *s)
{
    const aura_nats_sec_t *sec = aura_conf_nats_sec(aura_server_conf(s));

    if (!sec || (!sec->cert_pem && !sec->key_pem)) {
        return 0;
    }
    if (!sec->cert_pem || !sec->key_pem) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                     AURA_LOGNO(01321) "%s '%s' needs %s as well",
                     sec->cert_pem ? "AuraNATSCertificate"
                                   : "AuraNATSCertificateKey",
                     sec->cert_pem ? sec->cert_file : sec->key_file,
                     sec->cert_pem ? "AuraNATSCertificateKey"
                                   : "AuraNATSCertificate");
        return -1;
    }
    if (!cert_matches_key(sec)) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                     AURA_LOGNO(01322) "AuraNATSCertificate '%s' does not match "
                     "AuraNATSCertificateKey '%s' (X509_check_private_key)",
                     sec->cert_file, sec->key_file);
        return -1;
    }
    return 0;
}
