/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_console.h: the operator's console (aura_console.c), the
 * "aura-console" handler an operator mounts in a Location of their
 * choice (docs/console.md).  Its parts answer the paths below that
 * Location: each is a aura_console_fn, listed once in aura_console.c.
 */
#ifndef AURA_CONSOLE_H
#define AURA_CONSOLE_H

#include "aura.h"

#define AURA_HANDLER_CONSOLE "aura-console"

struct json_t;

/* The header every mutation must carry (aura_console_gate.c): a page of
 * another origin cannot send it without a CORS preflight, which the
 * console never grants. */
#define AURA_CONSOLE_CSRF_HEADER "X-Aura-CSRF"

/**
 * One part of the console.
 * @param r the request, its operator verified (r->user)
 * @param rest what follows the part's path ("" or "/..."), decoded
 * @return an HTTP status or OK, as a handler
 */
typedef int aura_console_fn(request_rec *r, const char *rest);

/* aura_console.c */
int aura_console_handler(request_rec *r);
/* The Location's path the console is mounted at, without a trailing
 * slash ("" at the root), for links. */
const char *aura_console_base(request_rec *r);

/* aura_console_gate.c */
/* OK when httpd authenticated the request (r->user): the operator's
 * credential is httpd's own authentication of that Location, which
 * tenants' console tokens never pass; else HTTP_FORBIDDEN, logged. */
int aura_console_operator(request_rec *r);
/* For POST and DELETE: OK when the request cannot come from a page of
 * another site (the header above, Origin and Sec-Fetch-Site), else
 * HTTP_FORBIDDEN with its problem noted. */
int aura_console_mutation_ok(request_rec *r);
/* The headers every console answer carries: never cached, never framed. */
void aura_console_headers(request_rec *r);
/* Write a JSON document as the answer (status r->status). */
int aura_console_json(request_rec *r, struct json_t *doc);

/* aura_console_controls.c: the incident controls' API, page and
 * assets (docs/console.md, "Incident controls"). */
int aura_console_controls_api(request_rec *r, const char *rest);
int aura_console_controls_page(request_rec *r, const char *rest);
int aura_console_controls_js(request_rec *r, const char *rest);
int aura_console_controls_css(request_rec *r, const char *rest);

#endif /* AURA_CONSOLE_H */
