/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_exporter.h: the per-child OTLP/HTTP exporter (aura_exporter.c).
 */
#ifndef AURA_EXPORTER_H
#define AURA_EXPORTER_H

#include "aura.h"

/** post_config: libcurl's global set-up, once, before any child. */
void aura_exporter_post_config(server_rec *s);

/** child_init: the exporter thread and its queue, when tracing is on;
 *  stopped and joined by a pre-cleanup of pchild. */
void aura_exporter_child_init(apr_pool_t *pchild, server_rec *s);

/**
 * Queue a request's spans for export; never waits.  Takes json (a
 * fragment made by aura_otlp_spans(), malloc'd): freed here when the
 * queue is full (the spans counted as dropped) or once exported.
 * @param spans how many spans the fragment holds
 */
void aura_exporter_enqueue(char *json, apr_size_t len, int spans);

#endif /* AURA_EXPORTER_H */
