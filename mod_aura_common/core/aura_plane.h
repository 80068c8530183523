/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_plane.h: the plane registry (aura_plane.c), the one place of
 * mod_aura_common that knows which planes there are: each plane's name,
 * the module that gives it its policy, its slot in the per-plane tables
 * and the defaults that differ by plane.  Everything else of
 * mod_aura_common asks here instead of branching on a plane.
 */
#ifndef AURA_PLANE_H
#define AURA_PLANE_H

#include "aura.h"

/* The planes that serve requests (data, management): the size of the
 * per-plane tables of the shared segment. */
#define AURA_PLANES 2

/* AuraPlaneMaxInFlight auto: percentages of the instance's workers. */
#define AURA_CAP_AUTO_DATA_PCT 70
#define AURA_CAP_AUTO_MGMT_PCT 20
/* AuraStreamMaxOpen auto: half of each plane's share, so that the
 * plane's short requests always keep the other half (aura_streams.c). */
#define AURA_STREAM_AUTO_DATA_PCT 35
#define AURA_STREAM_AUTO_MGMT_PCT 10

/** What mod_aura_common needs to know of one plane. */
typedef struct {
    aura_plane_e plane;
    /** AuraPlane's word, the value of Aura-Plane, the metrics label. */
    const char *name;
    /** Slot in the per-plane tables (request metrics, in-flight caps),
     *  0 .. AURA_PLANES - 1. */
    int index;
    /** The module that gives the plane its policy, as
     *  ap_find_linked_module() knows it, and as an operator writes it;
     *  NULL for no plane. */
    const char *module_file;
    const char *module_name;
    /** AuraPlaneMaxInFlight auto, in percent of the workers. */
    int cap_auto_pct;
    /** 1: AuraMaxConnectionsPerAddress and AuraMaxReadingConnections
     *  default to auto on the plane's VirtualHost, 0: off. */
    int conns_auto;
    int reading_auto;
    /** AuraStreamMaxOpen auto, in percent of the workers. */
    int stream_auto_pct;
} aura_plane_info_t;

/**
 * The registry's entry of a plane.
 * @param plane an aura_plane_e, or AURA_UNSET (the AuraPlane field of a
 *        server that has none)
 * @return never NULL: the entry of no plane for anything but a plane
 */
const aura_plane_info_t *aura_plane_info(int plane);

/**
 * The plane of a slot of the per-plane tables.
 * @param index 0 .. AURA_PLANES - 1
 */
const aura_plane_info_t *aura_plane_at(int index);

/**
 * AuraPlane's words, in any case.
 * @return APR_SUCCESS with *out set, or APR_EINVAL
 */
apr_status_t aura_plane_parse(const char *word, aura_plane_e *out);

/** The words aura_plane_parse() accepts, for a message:
 *  "data | management | none", allocated from p. */
const char *aura_plane_words(apr_pool_t *p);

#endif /* AURA_PLANE_H */
