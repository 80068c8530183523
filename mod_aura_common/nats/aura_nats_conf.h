/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nats_conf.h: the NATS connection's directives (aura_nats_conf.c),
 * their defaults and the getters that apply them.
 */
#ifndef AURA_NATS_CONF_H
#define AURA_NATS_CONF_H

#include "core/aura_config.h"

#define AURA_DEFAULT_NATS_URL          "nats://127.0.0.1:4222"
#define AURA_DEFAULT_NATS_NAME         "mod_aura"
#define AURA_DEFAULT_NATS_CONNECT      apr_time_from_sec(2)
#define AURA_DEFAULT_NATS_RECONNECT    apr_time_from_msec(250)
#define AURA_DEFAULT_NATS_MAX_RECONNECT (-1)     /* unlimited */
#define AURA_DEFAULT_NATS_PING         apr_time_from_sec(30)

/* TLS material and credentials, read by the parent at configuration
 * time (before it drops privileges): the children inherit the bytes.
 * The secrets (key, JWT, seed) are wiped when pconf goes. */
typedef struct aura_nats_sec_t {
    const char *ca_file, *ca_pem;           /* AuraNATSCAFile */
    const char *cert_file, *cert_pem;       /* AuraNATSCertificate */
    const char *key_file, *key_pem;         /* AuraNATSCertificateKey */
    const char *server_name;                /* AuraNATSServerName */
    const char *creds_file, *jwt;           /* AuraNATSCredentials */
    const char *seed_file;                  /* AuraNATSNKeySeed */
    const unsigned char *seed;              /* raw 32 bytes, either file */
    const char *nkey_pub;                   /* the seed's public key */
    const char *inbox_prefix;               /* AuraNATSInboxPrefix */
} aura_nats_sec_t;

/* The server URLs (n of them) to hand to natsOptions_SetServers. */
static APR_INLINE const char **
aura_conf_nats_servers(apr_pool_t *p, const aura_server_conf_t *c, int *n)
{
    const char **urls;

    if (c->nats_servers) {
        *n = c->nats_servers->nelts;
        return (const char **)c->nats_servers->elts;
    }
    urls = apr_pcalloc(p, sizeof(*urls));
    urls[0] = AURA_DEFAULT_NATS_URL;
    *n = 1;
    return urls;
}

static APR_INLINE const char *
aura_conf_nats_name(const aura_server_conf_t *c)
{
    return c->nats_name ? c->nats_name : AURA_DEFAULT_NATS_NAME;
}

static APR_INLINE apr_interval_time_t
aura_conf_nats_connect_timeout(const aura_server_conf_t *c)
{
    return c->nats_connect_timeout != AURA_UNSET ? c->nats_connect_timeout
                                                 : AURA_DEFAULT_NATS_CONNECT;
}

static APR_INLINE apr_interval_time_t
aura_conf_nats_reconnect_wait(const aura_server_conf_t *c)
{
    return c->nats_reconnect_wait != AURA_UNSET ? c->nats_reconnect_wait
                                                : AURA_DEFAULT_NATS_RECONNECT;
}

/* -1: unlimited. */
static APR_INLINE int
aura_conf_nats_max_reconnect(const aura_server_conf_t *c)
{
    return c->nats_max_reconnect != AURA_NATS_RECONNECT_UNSET
               ? c->nats_max_reconnect : AURA_DEFAULT_NATS_MAX_RECONNECT;
}

static APR_INLINE apr_interval_time_t
aura_conf_nats_ping_interval(const aura_server_conf_t *c)
{
    return c->nats_ping_interval != AURA_UNSET ? c->nats_ping_interval
                                               : AURA_DEFAULT_NATS_PING;
}

/* The security settings, NULL when none is set. */
static APR_INLINE const aura_nats_sec_t *
aura_conf_nats_sec(const aura_server_conf_t *c)
{
    return c->nats_sec;
}

/* The reply inbox prefix: AuraNATSInboxPrefix, or nats.c's "_INBOX". */
static APR_INLINE const char *
aura_conf_nats_inbox_prefix(const aura_server_conf_t *c)
{
    return c->nats_sec && c->nats_sec->inbox_prefix
               ? c->nats_sec->inbox_prefix : "_INBOX";
}

const char *aura_set_nats_file(cmd_parms *cmd, void *dummy,
                               const char *arg);
const char *aura_set_nats_server_name(cmd_parms *cmd, void *dummy,
                                      const char *arg);
const char *aura_set_nats_inbox_prefix(cmd_parms *cmd, void *dummy,
                                       const char *arg);
/* check_config: the certificate and its key belong together, creds and
 * a seed file exclude each other.  0 or -1 (logged). */
int aura_nats_check_config(server_rec *s);

const char *aura_set_nats_servers(cmd_parms *cmd, void *dummy,
                                  const char *arg);
const char *aura_set_nats_name(cmd_parms *cmd, void *dummy,
                               const char *arg);
const char *aura_set_nats_time(cmd_parms *cmd, void *dummy,
                               const char *arg);
const char *aura_set_nats_max_reconnect(cmd_parms *cmd, void *dummy,
                                        const char *arg);

#define NATS_TIME(name, field, help)                                        \
    AP_INIT_TAKE1(name, aura_set_nats_time,                                 \
                  (void *)APR_OFFSETOF(aura_server_conf_t, field),          \
                  RSRC_CONF, help)

/* Which file a NATS_FILE directive reads (its cmd_data). */
enum { AURA_NATS_CA = 1, AURA_NATS_CERT, AURA_NATS_KEY, AURA_NATS_CREDS,
       AURA_NATS_SEED };

#define NATS_FILE(name, which, help)                                        \
    AP_INIT_TAKE1(name, aura_set_nats_file, (void *)(apr_uintptr_t)(which),  \
                  RSRC_CONF, help)

/* The command table's entries (mod_aura_common.c assembles the table). */
#define AURA_NATS_DIRECTIVES \
    AP_INIT_ITERATE("AuraNATSServers", aura_set_nats_servers, NULL, RSRC_CONF, \
                    "NATS server URLs (one, or several of a cluster)"), \
    AP_INIT_TAKE1("AuraNATSName", aura_set_nats_name, NULL, RSRC_CONF, \
                  "Connection name shown by the NATS server"), \
    NATS_TIME("AuraNATSConnectTimeout", nats_connect_timeout, \
              "Timeout of one attempt to connect to a NATS server"), \
    NATS_TIME("AuraNATSReconnectWait", nats_reconnect_wait, \
              "Wait between reconnect attempts to the same NATS server"), \
    AP_INIT_TAKE1("AuraNATSMaxReconnect", aura_set_nats_max_reconnect, NULL, \
                  RSRC_CONF, \
                  "Reconnect attempts before giving up: a number or " \
                  "unlimited"), \
    NATS_TIME("AuraNATSPingInterval", nats_ping_interval, \
              "Interval of the keep-alive PING to the NATS server"), \
    NATS_FILE("AuraNATSCAFile", AURA_NATS_CA, \
              "PEM file of the CAs that sign the NATS servers' certificates"), \
    NATS_FILE("AuraNATSCertificate", AURA_NATS_CERT, \
              "PEM file of the gateway's TLS client certificate for NATS"), \
    NATS_FILE("AuraNATSCertificateKey", AURA_NATS_KEY, \
              "PEM file of the private key of AuraNATSCertificate"), \
    AP_INIT_TAKE1("AuraNATSServerName", aura_set_nats_server_name, NULL, \
                  RSRC_CONF, \
                  "Name the NATS servers' certificates must carry"), \
    NATS_FILE("AuraNATSCredentials", AURA_NATS_CREDS, \
              "NATS creds file (user JWT and nkey seed) to authenticate with"), \
    NATS_FILE("AuraNATSNKeySeed", AURA_NATS_SEED, \
              "File of the NATS user nkey seed to authenticate with"), \
    AP_INIT_TAKE1("AuraNATSInboxPrefix", aura_set_nats_inbox_prefix, NULL, \
                  RSRC_CONF, \
                  "Subject prefix of the gateway's NATS reply inboxes")

#endif /* AURA_NATS_CONF_H */
