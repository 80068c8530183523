/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_nats_auth.h: TLS and credentials on the child's NATS connection,
 * and the reason it is down, told once (aura_nats_auth.c).
 */
#ifndef AURA_NATS_AUTH_H
#define AURA_NATS_AUTH_H

#include "core/aura_config.h"

#include <nats/nats.h>

/* Hands the TLS material, the expected server name, the credentials and
 * the inbox prefix of AuraNATS* to the options. */
natsStatus aura_nats_secure_options(natsOptions *o,
                                    const aura_server_conf_t *c);

/* Logs why the connection failed or was refused (a TLS handshake, an
 * authorization violation, expired credentials, a permissions
 * violation), at most once a second per child and without secrets.
 * err is the status nats.c reported, NATS_OK to read the connection's
 * last error. */
void aura_nats_report(server_rec *s, natsConnection *nc, natsStatus err);

#endif /* AURA_NATS_AUTH_H */
