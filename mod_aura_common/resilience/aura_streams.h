/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_streams.h: the long-lived budget (aura_streams.c): streams take
 * a record under the per-address and per-actor caps and a slot of their
 * plane's and service's stream budgets, instead of their service's
 * in-flight slot.
 */
#ifndef AURA_STREAMS_H
#define AURA_STREAMS_H

#include "aura.h"
#include "core/aura_config.h"
#include "resilience/aura_bulkhead.h"

struct json_t;

/* AuraStreamMaxDuration when a streaming Location does not set it. */
#define AURA_STREAM_MAX_DEFAULT apr_time_from_sec(3600)
/* AuraStreamAfter when the Location does not set it. */
#define AURA_STREAM_AFTER_DEFAULT apr_time_from_sec(10)

/* A request known to be long-lived before it is sent (a streaming
 * Location, a WebSocket upgrade): OK with *hold (NULL when there is no
 * segment), or 429 stream-limit / 503 stream-saturated /
 * 503 service-saturated, noted with Retry-After. */
int aura_stream_enter(request_rec *r, int service, aura_cap_hold_t **hold);
/* A short request (hold from aura_cap_enter()) that turned out to be a
 * stream (Aura-Stream: begin, or a response still being sent after
 * AuraStreamAfter): OK, its service's in-flight slot given back; or the
 * refusal's status (429 stream-limit, 503 stream-saturated), noted,
 * and the hold as it was. */
int aura_stream_convert(request_rec *r, int service, aura_cap_hold_t *hold,
                        int late);
/* AuraStreamAfter, else AURA_STREAM_AFTER_DEFAULT. */
apr_interval_time_t aura_stream_after(const aura_dir_conf_t *d);
/* Counts a stream ended at its maximum duration (late 0), or a response
 * cut because it could not become a stream (late 1). */
void aura_stream_count_cut(int late);
/* The Location's maximum duration of a stream (AuraStreamMaxDuration,
 * else AURA_STREAM_MAX_DEFAULT). */
apr_interval_time_t aura_stream_max_duration(const aura_dir_conf_t *d);
void aura_stream_describe(struct json_t *obj);
void aura_stream_metrics(request_rec *r);
const char *aura_set_stream_max_open(cmd_parms *cmd, void *dummy,
                                     const char *arg);
const char *aura_set_max_streams(cmd_parms *cmd, void *dirv,
                                 const char *arg);
const char *aura_set_stream_per_address(cmd_parms *cmd, void *dirv,
                                        const char *arg);
const char *aura_set_stream_per_actor(cmd_parms *cmd, void *dirv,
                                      const char *arg);

#endif /* AURA_STREAMS_H */
