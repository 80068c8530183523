/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_connlimit.h: connections per address (aura_connlimit.c).
 */
#ifndef AURA_CONNLIMIT_H
#define AURA_CONNLIMIT_H

#include "aura.h"

struct json_t;

/* aura_connlimit.c: AuraMaxConnectionsPerAddress. */
void aura_connlimit_register(void);
apr_status_t aura_connlimit_post_config(apr_pool_t *pconf, server_rec *s);
void aura_connlimit_child_init(apr_pool_t *pchild, server_rec *s);
void aura_connlimit_describe(struct json_t *obj, apr_pool_t *p);
const char *aura_set_max_conns(cmd_parms *cmd, void *dummy, const char *arg);
const char *aura_set_conn_exempt(cmd_parms *cmd, void *dummy,
                                 const char *arg);
const char *aura_set_max_reading(cmd_parms *cmd, void *dummy,
                                 const char *arg);
const char *aura_set_reading_v6_prefix(cmd_parms *cmd, void *dummy,
                                       const char *arg);
const char *aura_set_h2_preface_timeout(cmd_parms *cmd, void *dummy,
                                        const char *arg);
/* The client address as key bytes: family, then the address (IPv4, an
 * IPv4-mapped IPv6 address as IPv4, IPv6 cut to v6_prefix bits); out
 * holds 17 bytes.  Returns the length. */
apr_size_t aura_address_bytes(const apr_sockaddr_t *sa, int v6_prefix,
                              unsigned char *out);

#endif /* AURA_CONNLIMIT_H */
