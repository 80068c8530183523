/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_connlimit.h: connections per address (aura_connlimit.c).
 */
#ifndef AURA_CONNLIMIT_H
#define AURA_CONNLIMIT_H

#include "aura.h"
#include "limit/aura_addr.h"

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

#endif /* AURA_CONNLIMIT_H */
