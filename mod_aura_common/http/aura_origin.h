/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_origin.h: what AuraCORSAllowOrigin accepts as an origin, as a
 * pure function (APR only, no httpd.h: t/unit/test_origin.c links it).
 */
#ifndef AURA_ORIGIN_H
#define AURA_ORIGIN_H

#include "apr_pools.h"

/**
 * Parse an allowed origin as a browser would send it in Origin (RFC
 * 6454 serialization): "http://" or "https://", a host (a DNS name of
 * letters, digits, '-' and '_' in non-empty labels, an IPv4 address, or
 * an IPv6 address in brackets), and an optional port from 1 to 65535,
 * written without leading zeros and never the scheme's default (80,
 * 443: a browser leaves it out, so it would never match).  Nothing
 * else: no wildcard, no userinfo, no path (not even "/"), no query, no
 * fragment, no whitespace, no non-ASCII (an IDN host is written in its
 * xn-- form), not "null".
 * @param p pool for the result
 * @param in the configured value
 * @param out set to the origin in lower case (what browsers send), or
 *        NULL when refused
 * @param why set to what is wrong (a static string) when refused
 * @return APR_SUCCESS, or APR_EINVAL when it is not such an origin
 */
apr_status_t aura_origin_parse(apr_pool_t *p, const char *in,
                               const char **out, const char **why);

/**
 * The URL a WebSocket upgrade of an http(s) upstream goes to: url with
 * its scheme made ws:// (http://) or wss:// (https://); mod_proxy_http
 * tunnels an upgrade for ws(s):// workers.
 * @param p pool for the result
 * @param url "http://..." or "https://..." (any case)
 */
const char *aura_ws_url(apr_pool_t *p, const char *url);

#endif /* AURA_ORIGIN_H */
