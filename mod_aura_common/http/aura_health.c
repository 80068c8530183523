/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_health.c: the "aura-health" handler (SetHandler aura-health on
 * /health of both planes; no key, no token: DESIGN.md section 8).
 * Liveness answers 200 whenever this child can answer at all; with
 * ?ready it answers 503 unless this child's NATS connection is up, so a
 * load balancer stops sending traffic to an instance that cannot reach
 * its services.  AuraHealthDetail On adds the live state aura_state.c
 * collects (the shared segment's identity and counters: operators and
 * the test-suite use them to see that a graceful restart kept the
 * segment; breakers, in-flight, limiter tables), the same that
 * server-status shows (aura_status.c).
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "http/aura_health.h"
#include "http/aura_state.h"
#include "nats/aura_nats.h"

#include "http_protocol.h"
#include "apr_strings.h"

#include <jansson.h>
#include <stdlib.h>

/* "ready", "ready=1", "x=1&ready": the parameter's presence counts. */
static int wants(const request_rec *r, const char *name)
{
    const char *a = r->args;
    apr_size_t n = strlen(name);

    while (a && *a) {
        if (!strncmp(a, name, n) && (a[n] == '\0' || a[n] == '&'
                                     || a[n] == '=')) {
            return 1;
        }
        a = strchr(a, '&');
        a = a ? a + 1 : NULL;
    }
    return 0;
}

static json_t *describe(request_rec *r, int connected)
{
    json_t *o = json_object();
    aura_request_t *rq = aura_request_get(r);

    json_object_set_new(o, "status", json_string(connected ? "ok"
                                                           : "degraded"));
    json_object_set_new(o, "nats", json_string(aura_nats_state()));
    if (rq) {
        json_object_set_new(o, "plane",
                            json_string(aura_plane_name(rq->plane)));
    }
    if (aura_dir_conf(r)->health_detail == 1) {
        /* ?tables walks every rate-limit table: a few ms for the
         * default sizes, so only when asked. */
        aura_state_describe(o, r, wants(r, "tables"));
    }
    return o;
}

int aura_health_handler(request_rec *r)
{
    int connected;
    json_t *o;
    char *text;

    if (!r->handler || strcmp(r->handler, AURA_HANDLER_HEALTH)) {
        return DECLINED;
    }
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    connected = aura_nats_connected();
    o = describe(r, connected);
    text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!text) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    r->status = (!connected && wants(r, "ready")) ? HTTP_SERVICE_UNAVAILABLE
                                               : HTTP_OK;
    ap_set_content_type(r, "application/json");
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    ap_rputs(text, r);
    ap_rputs("\n", r);
    free(text);
    return OK;
}
