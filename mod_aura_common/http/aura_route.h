/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_route.h: the routing stage (aura_route.c).
 */
#ifndef AURA_ROUTE_H
#define AURA_ROUTE_H

#include "aura.h"

/* aura_route.c */
apr_off_t aura_declared_length(request_rec *r);
int aura_map_to_storage(request_rec *r);
/* fixups: the /v1/db router's refinement of the route, then the HTTP
 * path's checks (aura_http_fixups). */
int aura_route_fixups(request_rec *r);
int aura_too_large(request_rec *r, apr_int64_t limit);

#endif /* AURA_ROUTE_H */
