/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_request.c: the request state, one struct per request behind
 * aura_request_t (aura_request.h), and the plane of the request's
 * VirtualHost.  The bottom layer: it calls nothing of mod_aura_common
 * but the configuration, so every stage may read and write it.  What
 * mod_aura_proxy needs of it goes through typed functions (aura.h), not
 * r->notes: the budget is a duration, never a decimal string parsed
 * back.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_request.h"

/* The public part first: aura_request_t's address is the state's. */
typedef struct {
    aura_request_t pub;
    aura_request_private_t priv;
} request_state_t;

/* Here, not with the routing stage: every layer asks it (the JWKS
 * fetcher, the access log), and the routing stage calls those. */
AURA_DECLARE(aura_plane_e) aura_server_plane(const server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);

    return c->plane == AURA_UNSET ? AURA_PLANE_NONE : (aura_plane_e)c->plane;
}

AURA_DECLARE(aura_request_t *) aura_request_get(request_rec *r)
{
    aura_request_t *rq;

    /* Internal redirects (ErrorDocument) start a new request_rec; the
     * state, request id included, belongs to the original. */
    for (; r; r = r->prev) {
        rq = ap_get_module_config(r->request_config, &aura_common_module);
        if (rq) {
            return rq;
        }
    }
    return NULL;
}

aura_request_t *aura_request_make(request_rec *r)
{
    request_state_t *st = apr_pcalloc(r->pool, sizeof(*st));

    st->pub.priv = &st->priv;
    ap_set_module_config(r->request_config, &aura_common_module, &st->pub);
    return &st->pub;
}

aura_request_private_t *aura_request_private(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);

    return rq ? rq->priv : NULL;
}

const aura_route_t *aura_request_route(request_rec *r)
{
    aura_request_private_t *p = aura_request_private(r);

    return p && p->route.r == r ? &p->route : NULL;
}

const char *aura_request_problem(request_rec *r, const char **detail)
{
    aura_request_private_t *p = aura_request_private(r);

    if (!p || p->problem_of != r) {
        *detail = NULL;
        return NULL;
    }
    *detail = p->problem_detail;
    return p->problem_type;
}

/* The route when it goes through mod_proxy. */
static const aura_route_t *proxied(request_rec *r)
{
    const aura_route_t *route = aura_request_route(r);

    return route && (route->kind == AURA_ROUTE_HTTP
                     || route->kind == AURA_ROUTE_DB_TARGET) ? route : NULL;
}

AURA_DECLARE(const char *) aura_upstream_origin(request_rec *r)
{
    const aura_route_t *route = proxied(r);

    return route ? route->origin : NULL;
}

AURA_DECLARE(apr_interval_time_t) aura_upstream_budget(request_rec *r)
{
    const aura_route_t *route = proxied(r);

    return route ? route->budget : 0;
}
