/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nats_auth.c: TLS and credentials on the child's NATS connection.
 *
 * Everything comes from memory: the parent read the files at
 * configuration time (aura_nats_conf.c), and the child, which runs as
 * the unprivileged user, could not read them again.  nats.c 3.4.1 only
 * reads a creds file itself, at connect time, so the JWT is handed over
 * by a callback and the server's nonce is signed here (Ed25519 with the
 * seed, aura_nkey.c) instead of by nats.c.
 *
 * When the server refuses the connection (the TLS handshake fails, the
 * credentials are refused, expired or revoked) nats.c keeps retrying in
 * the background and the routes answer 503 at once (aura_natsproxy.c
 * asks whether the connection is up); aura_nats_report() says why in
 * the error log.  While connected, nats.c keeps the reason as the
 * connection's last error (and calls the error handler).  While it
 * retries a connect, it does not: measured with nats.c 3.4.1, the last
 * error then only says "No server available for connection", the real
 * reason stays in the reconnect thread's own error stack.  So the
 * report starts a probe: one connect with the same options, without
 * retries, on a thread of its own, whose status and error text are the
 * reason ("SSL handshake error: ... unable to get local issuer
 * certificate", "Authorization Violation").  One probe at a time, at
 * most one every PROBE_EVERY seconds per child, only while the
 * connection is down.
 */
#include "core/aura_module.h"
#include "nats/aura_nats_auth.h"
#include "nats/aura_nats_conf.h"
#include "nats/aura_nkey.h"

#include "apr_atomic.h"
#include "apr_strings.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_EVERY 2       /* seconds */

/* nats.c frees what the callbacks return (malloc'd). */
static natsStatus user_jwt(char **jwt, char **err_text, void *closure)
{
    const aura_nats_sec_t *sec = closure;

    *jwt = strdup(sec->jwt);
    if (!*jwt) {
        *err_text = strdup("out of memory");
        return NATS_NO_MEMORY;
    }
    return NATS_OK;
}

static natsStatus sign_nonce(char **err_text, unsigned char **sig,
                             int *sig_len, const char *nonce, void *closure)
{
    const aura_nats_sec_t *sec = closure;
    unsigned char *out = malloc(AURA_NKEY_SIG);

    if (!out || aura_nkey_sign(sec->seed, (const unsigned char *)nonce,
                               strlen(nonce), out) != 0) {
        free(out);
        *err_text = strdup("cannot sign the server's nonce with the seed");
        return NATS_ERR;
    }
    *sig = out;
    *sig_len = AURA_NKEY_SIG;
    return NATS_OK;
}

static natsStatus tls_options(natsOptions *o, const aura_nats_sec_t *sec)
{
    natsStatus s = NATS_OK;

    if (!sec->ca_pem && !sec->cert_pem && !sec->server_name) {
        return NATS_OK;
    }
    /* TLS even with nats:// URLs; the server's certificate verified. */
    s = natsOptions_SetSecure(o, true);
    if (s == NATS_OK && sec->ca_pem) {
        s = natsOptions_SetCATrustedCertificates(o, sec->ca_pem);
    }
    if (s == NATS_OK && sec->cert_pem) {
        s = natsOptions_SetCertificatesChain(o, sec->cert_pem, sec->key_pem);
    }
    if (s == NATS_OK && sec->server_name) {
        s = natsOptions_SetExpectedHostname(o, sec->server_name);
    }
    return s;
}

natsStatus aura_nats_secure_options(natsOptions *o,
                                    const aura_server_conf_t *c)
{
    const aura_nats_sec_t *sec = aura_conf_nats_sec(c);
    natsStatus s;

    if (!sec) {
        return NATS_OK;
    }
    s = tls_options(o, sec);
    if (s == NATS_OK && sec->jwt) {
        s = natsOptions_SetUserCredentialsCallbacks(
            o, user_jwt, (void *)sec, sign_nonce, (void *)sec);
    }
    else if (s == NATS_OK && sec->seed) {
        s = natsOptions_SetNKey(o, sec->nkey_pub, sign_nonce, (void *)sec);
    }
    if (s == NATS_OK && sec->inbox_prefix) {
        /* nats.c's own request inboxes follow the same prefix, so one
         * subscribe permission covers every reply. */
        s = natsOptions_SetCustomInboxPrefix(o, sec->inbox_prefix);
    }
    return s;
}

static int has(const char *text, const char *word)
{
    return text && ap_strcasestr(text, word) != NULL;
}

/* What an operator should look at, from nats.c's status and text. */
static const char *classify(natsStatus err, const char *text)
{
    if (err == NATS_SSL_ERROR || has(text, "SSL") || has(text, "TLS")
        || has(text, "certificate")) {
        return "TLS handshake failed (check AuraNATSCAFile, "
               "AuraNATSServerName and the client certificate)";
    }
    if (has(text, "expired")) {
        return "credentials expired (User Authentication Expired)";
    }
    if (has(text, "revoked")) {
        return "credentials revoked";
    }
    if (has(text, "authorization violation")
        || has(text, "authentication")
        || err == NATS_CONNECTION_AUTH_FAILED) {
        return "authorization violation (the server refused the "
               "credentials)";
    }
    if (has(text, "permissions violation") || err == NATS_NOT_PERMITTED) {
        return "permissions violation (the user may not publish or "
               "subscribe there)";
    }
    return NULL;
}

/* Seconds of the last report (or probe) + 1 (0: never): one a second
 * (every PROBE_EVERY seconds) at most, whichever thread asks. */
static volatile apr_uint32_t last_report;
static volatile apr_uint32_t last_probe;
static volatile apr_uint32_t last_ask;
static volatile apr_uint32_t probing;

static int take_turn(volatile apr_uint32_t *last, apr_uint32_t every)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now()) + 1;
    apr_uint32_t was = apr_atomic_read32(last);

    return (was == 0 || now >= was + every)
           && apr_atomic_cas32(last, now, was) == was;
}

/* The server's or the TLS library's text, as one printable line of at
 * most 255 bytes: it comes from the other end of a socket and must not
 * forge log lines. */
static const char *printable(const char *text, char *buf, apr_size_t size)
{
    apr_size_t i;

    if (!text || !*text) {
        return "-";
    }
    for (i = 0; text[i] && i + 1 < size; i++) {
        buf[i] = (text[i] < ' ' || text[i] == 0x7f) ? '?' : text[i];
    }
    buf[i] = '\0';
    return buf;
}

static void log_reason(server_rec *s, natsStatus err, const char *text)
{
    const char *why = classify(err, text);
    char buf[256];

    if (!why || !take_turn(&last_report, 1)) {
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(01320)
                 "NATS connection refused: %s: %s (%s); NATS routes "
                 "answer 503", why, natsStatus_GetText(err),
                 printable(text, buf, sizeof(buf)));
}

static natsStatus probe_options(apr_pool_t *p, const aura_server_conf_t *c,
                                natsOptions **out)
{
    natsOptions *o = NULL;
    int n;
    const char **urls = aura_conf_nats_servers(p, c, &n);
    natsStatus st = natsOptions_Create(&o);

    if (st != NATS_OK) {
        return st;
    }
    st = natsOptions_SetServers(o, urls, n);
    if (st == NATS_OK) {
        st = natsOptions_SetAllowReconnect(o, false);
    }
    if (st == NATS_OK) {
        st = natsOptions_SetTimeout(o, apr_time_as_msec(
            aura_conf_nats_connect_timeout(c)));
    }
    if (st == NATS_OK) {
        st = aura_nats_secure_options(o, c);
    }
    if (st != NATS_OK) {
        natsOptions_Destroy(o);
        return st;
    }
    *out = o;
    return NATS_OK;
}

/* The probe's thread: one connect, its reason logged, nothing kept. */
static void *probe_main(void *arg)
{
    server_rec *s = arg;
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    apr_pool_t *p = NULL;
    natsStatus st = NATS_NO_MEMORY;
    const char *text = NULL;

    if (apr_pool_create(&p, NULL) == APR_SUCCESS) {
        st = probe_options(p, aura_server_conf(s), &o);
    }
    if (st == NATS_OK) {
        st = natsConnection_Connect(&nc, o);
        text = nats_GetLastError(NULL);
        natsOptions_Destroy(o);
    }
    if (nc) {
        natsConnection_Destroy(nc);     /* it worked: nothing to say */
    }
    else {
        log_reason(s, st, text);
    }
    if (p) {
        apr_pool_destroy(p);
    }
    apr_atomic_set32(&probing, 0);
    return NULL;
}

static void start_probe(server_rec *s)
{
    pthread_attr_t attr;
    pthread_t t;

    if (apr_atomic_cas32(&probing, 1, 0) != 0) {
        return;
    }
    if (!take_turn(&last_probe, PROBE_EVERY)) {
        apr_atomic_set32(&probing, 0);
        return;
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, probe_main, s) != 0) {
        apr_atomic_set32(&probing, 0);
    }
    pthread_attr_destroy(&attr);
}

void aura_nats_report(server_rec *s, natsConnection *nc, natsStatus err)
{
    const char *text = NULL;

    if (err != NATS_OK) {
        /* nats.c's error handler: the server's text is in this thread's
         * last error, set for the callback.  The connection's own may
         * already be cleared by the reconnect thread: credentials that
         * expired were then reported as refused on reconnect. */
        text = nats_GetLastError(NULL);
    }
    else if (!take_turn(&last_ask, 1)) {
        /* Every refused request asks: the connection's lock is taken at
         * most once a second per child, not once a request. */
        return;
    }
    else if (nc) {
        err = natsConnection_GetLastError(nc, &text);
    }
    if (classify(err, text)) {
        log_reason(s, err, text);
    }
    else if (nc && aura_conf_nats_sec(aura_server_conf(s))
             && natsConnection_Status(nc) != NATS_CONN_STATUS_CONNECTED) {
        /* Retrying a connect: nats.c kept no reason, ask for one.  Only
         * on a secured bus: a plain one that is down only says that it
         * is down (AURA00011), and the probe would add nothing. */
        start_probe(s);
    }
}
