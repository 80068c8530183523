/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_dbtarget.h: the /v1/db router's decision (DESIGN.md section 3) as
 * one pure function: given the request's method and path under /v1/db/
 * and what Postgres says of the project, where the request goes.  No
 * httpd.h: cmocka links it as it is.
 */
#ifndef AURA_DBROUTE_H
#define AURA_DBROUTE_H

#include "apr.h"
#include "apr_pools.h"

/** What the projects table says of a project (NULL fields: unknown). */
typedef struct {
    const char *db_kind;     /**< postgres | mongodb */
    const char *topology;    /**< shared | dedicated */
    const char *target;      /**< dedicated PostgREST base URL, or NULL */
} aura_db_project_t;

typedef enum {
    AURA_DBR_NATS = 0,       /**< to aura-db over NATS */
    AURA_DBR_HTTP,           /**< straight to the dedicated PostgREST */
    AURA_DBR_UNRESOLVED      /**< dedicated, no usable target: 503, never
                                  a shared fallback */
} aura_dbroute_e;

/**
 * Decide one request.
 * @param method the HTTP method
 * @param rest the path after "/v1/db/" (no leading slash), undecoded
 * @param project the project's row; NULL when the project is unknown
 *        (treated as dedicated and unresolved: fail closed)
 * @param why set to a static phrase saying which row of the table
 *        decided (for logs and tests)
 */
aura_dbroute_e aura_dbroute_decide(const char *method, const char *rest,
                                   const aura_db_project_t *project,
                                   const char **why);

/**
 * Whether a target from the projects table is usable: http:// or
 * https://, a host, an optional port, and no path, query, fragment or
 * user info (a target is an origin; PostgREST's paths are the
 * request's).
 */
int aura_dbroute_target_ok(const char *target);

/**
 * The PostgREST URL for a CRUD request: target + "/" + rest (+ "?" +
 * query when not empty), allocated from p.
 */
const char *aura_dbroute_url(apr_pool_t *p, const char *target,
                             const char *rest, const char *query);

#endif /* AURA_DBROUTE_H */
