/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_trace_conf.h: the AuraTrace* directives (aura_trace_conf.c), all
 * global (the main server's, one exporter per child) but
 * AuraTraceTrustParent (per VirtualHost: whose sampling decision a
 * plane honours), their defaults and getters.  Tracing is on when
 * AuraTraceEndpoint is set.
 */
#ifndef AURA_TRACE_CONF_H
#define AURA_TRACE_CONF_H

#include "aura.h"
#include "apr_network_io.h"
#include "apr_tables.h"

#define AURA_TRACE_DEFAULT_SERVICE   "mod_aura"
#define AURA_TRACE_DEFAULT_QUEUE     2048
#define AURA_TRACE_DEFAULT_BATCH     512
#define AURA_TRACE_DEFAULT_TIMEOUT   apr_time_from_sec(10)
/* Bytes a queued span may take on average before the queue counts as
 * full by size (spans are a few hundred bytes; attribute values are cut
 * at 256): the queue's memory is at most its size times this. */
#define AURA_TRACE_SPAN_BYTES        2048

typedef struct aura_trace_conf_t {
    const char *endpoint;        /* AuraTraceEndpoint, with /v1/traces */
    apr_array_header_t *headers; /* AuraTraceHeader: "Name: value" */
    const char *ca_file;         /* AuraTraceCACertificateFile */
    const char *cert_file;       /* AuraTraceClientCertificate */
    const char *key_file;
    int verify;                  /* AuraTraceVerify, AURA_UNSET (on) */
    int ratio_ppm;               /* AuraTraceSampleRatio, AURA_UNSET (1) */
    apr_array_header_t *resource; /* AuraTraceResource: key, value, ... */
    int queue;                   /* AuraTraceQueueSize, AURA_UNSET */
    int batch;                   /* AuraTraceBatchSize, AURA_UNSET */
    apr_interval_time_t timeout; /* AuraTraceExportTimeout, AURA_UNSET */
    const char *batch_at;        /* where AuraTraceBatchSize was set */
} aura_trace_conf_t;

/* AuraTraceTrustParent of one scope.  "none" and "any" stand alone;
 * addresses and networks add up over the lines of one scope. */
typedef enum {
    AURA_TRUST_NONE = 0,
    AURA_TRUST_ANY,
    AURA_TRUST_LIST
} aura_trust_mode_e;

typedef struct aura_trace_trust_t {
    aura_trust_mode_e mode;
    apr_array_header_t *subnets; /* apr_ipsubnet_t *, AURA_TRUST_LIST */
} aura_trace_trust_t;

/** The tracing configuration of s, NULL when tracing is off. */
const aura_trace_conf_t *aura_trace_conf(const server_rec *s);
int aura_trace_conf_ratio(const aura_trace_conf_t *t);
int aura_trace_conf_queue(const aura_trace_conf_t *t);
int aura_trace_conf_batch(const aura_trace_conf_t *t);
apr_interval_time_t aura_trace_conf_timeout(const aura_trace_conf_t *t);
/** The resource attributes with service.name first unless set. */
const apr_array_header_t *aura_trace_conf_resource(apr_pool_t *p,
                                                   const aura_trace_conf_t *t);
/**
 * Whether s (a request's server) honours the sampling decision of an
 * inbound traceparent from sa (r->useragent_addr: the client as
 * mod_remoteip established it, else the peer).
 * @return 1 when AuraTraceTrustParent names it (or says any), else 0
 */
int aura_trace_trusts_parent(const server_rec *s, apr_sockaddr_t *sa);
/** check_config: the directives agree with each other; 0 when not (a
 *  message logged). */
int aura_trace_check_config(server_rec *s);

const char *aura_set_trace_endpoint(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_trace_header(cmd_parms *cmd, void *d, const char *name,
                                  const char *value);
const char *aura_set_trace_ca(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_trace_cert(cmd_parms *cmd, void *d, const char *cert,
                                const char *key);
const char *aura_set_trace_verify(cmd_parms *cmd, void *d, int on);
const char *aura_set_trace_ratio(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_trace_resource(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_trace_number(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_trace_timeout(cmd_parms *cmd, void *d, const char *a);
const char *aura_set_trace_trust(cmd_parms *cmd, void *d, const char *a);

#define AURA_TRACE_DIRECTIVES \
    AP_INIT_TAKE1("AuraTraceEndpoint", aura_set_trace_endpoint, NULL, \
                  RSRC_CONF, \
                  "The OTLP/HTTP collector spans are exported to " \
                  "(http(s)://host:port[/path]; /v1/traces is added); " \
                  "tracing is off without it"), \
    AP_INIT_TAKE2("AuraTraceHeader", aura_set_trace_header, NULL, \
                  RSRC_CONF, \
                  "A request header sent to the collector with every " \
                  "export (name and value; repeatable)"), \
    AP_INIT_TAKE1("AuraTraceCACertificateFile", aura_set_trace_ca, NULL, \
                  RSRC_CONF, \
                  "The CA certificates (PEM) an https collector is " \
                  "verified with, instead of the system's"), \
    AP_INIT_TAKE2("AuraTraceClientCertificate", aura_set_trace_cert, NULL, \
                  RSRC_CONF, \
                  "The client certificate and key files (PEM) presented " \
                  "to an https collector"), \
    AP_INIT_FLAG("AuraTraceVerify", aura_set_trace_verify, NULL, \
                 RSRC_CONF, \
                 "Whether an https collector's certificate and name are " \
                 "verified"), \
    AP_INIT_TAKE1("AuraTraceSampleRatio", aura_set_trace_ratio, NULL, \
                  RSRC_CONF, \
                  "The share (0 to 1) of requests sampled; a " \
                  "traceparent from a client AuraTraceTrustParent " \
                  "names follows its sampled flag"), \
    AP_INIT_TAKE1("AuraTraceResource", aura_set_trace_resource, NULL, \
                  RSRC_CONF, \
                  "A resource attribute of the exported spans, " \
                  "key=value (repeatable; service.name is mod_aura " \
                  "unless set)"), \
    AP_INIT_TAKE1("AuraTraceQueueSize", aura_set_trace_number, \
                  (void *)APR_OFFSETOF(aura_trace_conf_t, queue), \
                  RSRC_CONF, \
                  "Spans each child keeps waiting for export; more are " \
                  "dropped and counted"), \
    AP_INIT_TAKE1("AuraTraceBatchSize", aura_set_trace_number, \
                  (void *)APR_OFFSETOF(aura_trace_conf_t, batch), \
                  RSRC_CONF, \
                  "Spans at most in one export request"), \
    AP_INIT_TAKE1("AuraTraceExportTimeout", aura_set_trace_timeout, NULL, \
                  RSRC_CONF, \
                  "How long one export request may take, connection " \
                  "included"), \
    AP_INIT_ITERATE("AuraTraceTrustParent", aura_set_trace_trust, NULL, \
                    RSRC_CONF, \
                    "Clients (addresses, networks, none or any) whose " \
                    "traceparent sampled flag is honoured; others are " \
                    "sampled by the ratio")

#endif /* AURA_TRACE_CONF_H */
