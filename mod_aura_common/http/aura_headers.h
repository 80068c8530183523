/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_headers.h: CORS and security headers on every response (aura_headers.c).
 */
#ifndef AURA_HEADERS_H
#define AURA_HEADERS_H

#include "aura.h"

/* aura_headers.c: CORS and security headers on every response. */
void aura_headers_register(void);
void aura_insert_headers_filter(request_rec *r);
/* The same on an error response httpd makes (insert_error_filter). */
void aura_insert_headers_error_filter(request_rec *r);
/* For an upgrade mod_proxy is about to forward: the upstream's 101,
 * which mod_proxy_http writes past every request filter, gets the
 * gateway's X-Request-Id and security headers. */
void aura_headers_arm_upgrade(request_rec *r);

#endif /* AURA_HEADERS_H */
