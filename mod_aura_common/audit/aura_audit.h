/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_audit.h: the audit log writer (aura_audit.c) and its directive,
 * AuraAuditLog (global).  The record format is aura_audit_record.h's;
 * the exported calls are aura_audit_entry_from() and aura_audit_write()
 * in aura.h; docs/audit.md is the operator's guide.
 */
#ifndef AURA_AUDIT_H
#define AURA_AUDIT_H

#include "aura.h"
#include "audit/aura_audit_record.h"

/* AuraAuditLog: the file and this instance's id in its records. */
typedef struct aura_audit_conf_t {
    const char *path;          /* resolved against ServerRoot */
    const char *instance;      /* NULL: the host name */
} aura_audit_conf_t;

#define AURA_AUDIT_MUTEX_TYPE "aura-audit"

apr_status_t aura_audit_pre_config(apr_pool_t *pconf);
/* 0 (logged) when AuraAuditSubject is set without AuraAuditLog. */
int aura_audit_check_config(server_rec *s);
apr_status_t aura_audit_post_config(apr_pool_t *pconf, server_rec *s);
void aura_audit_child_init(apr_pool_t *pchild, server_rec *s);

const char *aura_set_audit_log(cmd_parms *cmd, void *d, const char *path,
                               const char *instance);
const char *aura_set_audit_subject(cmd_parms *cmd, void *d,
                                   const char *subject);

#define AURA_AUDIT_DIRECTIVES \
    AP_INIT_TAKE12("AuraAuditLog", aura_set_audit_log, NULL, RSRC_CONF, \
                   "The file the audit records of the management " \
                   "plane's mutations are appended to (hash-chained JSON " \
                   "lines), and this instance's id in them (default: " \
                   "the host name)"), \
    AP_INIT_TAKE1("AuraAuditSubject", aura_set_audit_subject, NULL, \
                  RSRC_CONF, \
                  "A NATS subject every audit record is also published " \
                  "on, once it is in the AuraAuditLog file")

#endif /* AURA_AUDIT_H */
