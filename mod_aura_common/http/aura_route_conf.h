/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_route_conf.h: the directives of a Location's route
 * (aura_route_conf.c): its service and upstream, its budget, streaming
 * timeouts and acknowledgements, the /v1/db router, the abandon check,
 * /health's detail; their defaults and the getters that apply them.
 */
#ifndef AURA_ROUTE_CONF_H
#define AURA_ROUTE_CONF_H

#include "core/aura_config.h"
#include "nats/aura_subject.h"

/* Where a streamed NATS reply's acknowledgements may go
 * (AURA_STREAM_ACK_PREFIX_DEFAULT unless AuraStreamAckPrefix). */
static APR_INLINE const char *
aura_conf_stream_ack_prefix(const aura_dir_conf_t *d)
{
    return d->stream_ack_prefix ? d->stream_ack_prefix
                                : AURA_STREAM_ACK_PREFIX_DEFAULT;
}

/* Remembers the first AuraService with an http(s) upstream (or
 * AuraDBRouter On): such a route needs the proxy modules. */
void aura_set_service_seen(cmd_parms *cmd);
/* file:line of that first line, or NULL when there is none. */
const char *aura_http_route_at(apr_pool_t *pconf);

const char *aura_set_service(cmd_parms *cmd, void *dirv, const char *name,
                             const char *upstream);
const char *aura_set_timeout(cmd_parms *cmd, void *dirv, const char *arg);
const char *aura_set_stream_time(cmd_parms *cmd, void *dirv,
                                 const char *arg);
const char *aura_set_stream_ack_prefix(cmd_parms *cmd, void *dirv,
                                       const char *arg);
const char *aura_set_db_router(cmd_parms *cmd, void *dirv, int on);
const char *aura_set_health_detail(cmd_parms *cmd, void *dirv, int on);
const char *aura_set_abandon_check(cmd_parms *cmd, void *dirv, int on);

/* The command table's entries (mod_aura_common.c assembles the table). */
#define AURA_ROUTE_DIRECTIVES \
    AP_INIT_TAKE2("AuraService", aura_set_service, NULL, ACCESS_CONF, \
                  "The service of this Location and its upstream: " \
                  "nats:<subject> or an http(s):// URL"), \
    AP_INIT_TAKE1("AuraTimeout", aura_set_timeout, NULL, ACCESS_CONF, \
                  "Upstream budget of this Location (all attempts)"), \
    AP_INIT_FLAG("AuraHealthDetail", aura_set_health_detail, NULL, \
                 ACCESS_CONF, \
                 "Whether /health also reports shared-memory details"), \
    AP_INIT_FLAG("AuraAbandonCheck", aura_set_abandon_check, NULL, \
                 RSRC_CONF | ACCESS_CONF, \
                 "Whether a request whose client closed its connection is " \
                 "given up (never sent, its wait ended)"), \
    AP_INIT_FLAG("AuraDBRouter", aura_set_db_router, NULL, ACCESS_CONF, \
                 "Whether this Location is the /v1/db router: CRUD of a " \
                 "project with a dedicated PostgREST goes straight to it"), \
    AP_INIT_TAKE1("AuraStreamIdleTimeout", aura_set_stream_time, \
                  (void *)APR_OFFSETOF(aura_dir_conf_t, stream_idle), \
                  RSRC_CONF | ACCESS_CONF, \
                  "Streaming HTTP routes: longest silence of the upstream " \
                  "between two reads, instead of AuraTimeout"), \
    AP_INIT_TAKE1("AuraStreamFirstByteTimeout", aura_set_stream_time, \
                  (void *)APR_OFFSETOF(aura_dir_conf_t, stream_first_byte), \
                  RSRC_CONF | ACCESS_CONF, \
                  "Streaming HTTP routes: how long the upstream may take " \
                  "to start answering"), \
    AP_INIT_TAKE1("AuraStreamMaxDuration", aura_set_stream_time, \
                  (void *)APR_OFFSETOF(aura_dir_conf_t, stream_max), \
                  RSRC_CONF | ACCESS_CONF, \
                  "Streaming routes and streamed NATS replies: longest a " \
                  "stream may last (not WebSocket tunnels)"), \
    AP_INIT_TAKE1("AuraStreamAfter", aura_set_stream_time, \
                  (void *)APR_OFFSETOF(aura_dir_conf_t, stream_after), \
                  RSRC_CONF | ACCESS_CONF, \
                  "HTTP routes: a response still being sent after this " \
                  "long becomes a stream (the long-lived budget)"), \
    AP_INIT_TAKE1("AuraStreamAckPrefix", aura_set_stream_ack_prefix, NULL, \
                  RSRC_CONF | ACCESS_CONF, \
                  "Streamed NATS replies: the subject prefix under which " \
                  "the gateway publishes acknowledgements and cancels")

#endif /* AURA_ROUTE_CONF_H */
