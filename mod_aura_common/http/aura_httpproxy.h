/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_httpproxy.h: the HTTP path through mod_proxy (aura_httpproxy.c).
 */
#ifndef AURA_HTTPPROXY_H
#define AURA_HTTPPROXY_H

#include "aura.h"
#include "core/aura_config.h"
#include "core/aura_request.h"

/* aura_httpproxy.c: the HTTP path through mod_proxy, for the routes the
 * routing stage (aura_route.c) sends there.  claim fills route (origin,
 * budget) from the Location's upstream; target points r at url (and
 * route at ws(s):// for an upgrade); fixups runs once the route is
 * final. */
int aura_http_claim(request_rec *r, const aura_dir_conf_t *d,
                    aura_route_t *route);
void aura_http_target(request_rec *r, aura_route_t *route, const char *url);
int aura_http_fixups(request_rec *r, const aura_route_t *route);
void aura_http_register(void);
void aura_http_insert_filter(request_rec *r);

#endif /* AURA_HTTPPROXY_H */
