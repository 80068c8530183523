/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_envelope.h: the HTTP <-> NATS envelope of DESIGN.md section 8 and
 * docs/envelope.md, as pure functions over APR tables and nats.c
 * messages.  No httpd.h here: t/unit/test_envelope.c links this file
 * as it is.
 */
#ifndef AURA_ENVELOPE_H
#define AURA_ENVELOPE_H

#include <nats/nats.h>

#include "apr_pools.h"
#include "apr_tables.h"

/* The gateway's own envelope headers, in this exact case. */
#define AURA_HDR_METHOD     "Aura-Method"
#define AURA_HDR_PATH       "Aura-Path"
#define AURA_HDR_QUERY      "Aura-Query"
#define AURA_HDR_REQUEST_ID "Aura-Request-Id"
#define AURA_HDR_PLANE      "Aura-Plane"
#define AURA_HDR_STATUS     "Aura-Status"
#define AURA_HDR_PROJECT    "Aura-Project"
#define AURA_HDR_ORG        "Aura-Org"
#define AURA_HDR_ROLE       "Aura-Role"
#define AURA_HDR_KEY_ROLE   "Aura-Key-Role"
#define AURA_HDR_ACTOR      "Aura-Actor"
/* W3C trace context, as the gateway sets it (lower case, as W3C and the
 * forwarded client headers spell it). */
#define AURA_HDR_TRACEPARENT "traceparent"
#define AURA_HDR_TRACESTATE  "tracestate"
/* The project the gateway verified, under the name clients send it with
 * (lower case on NATS, as every forwarded client header was before the
 * gateway owned it): never the client's value. */
#define AURA_HDR_X_PROJECT_ID "x-project-id"

/** One HTTP request as it goes onto NATS. */
typedef struct {
    const char *method;
    const char *path;          /**< raw (still percent-encoded) path */
    const char *query;         /**< without '?'; NULL when absent */
    const char *request_id;
    const char *plane;
    const apr_table_t *headers;/**< the client's request headers */
    const char *body;
    apr_size_t body_len;
    const char *reply;         /**< the reply subject; NULL for none */
    /* The verified identity; NULL members are not sent. */
    const char *project;
    const char *org;
    const char *role;
    const char *key_role;
    const char *actor;
    /* The trace context the gateway forwards (NULL: not sent). */
    const char *traceparent;
    const char *tracestate;
} aura_envelope_req_t;

/** One NATS reply as it becomes an HTTP response. */
typedef struct {
    int status;                /**< 200..599 */
    apr_table_t *headers;      /**< response headers, names as sent */
    const char *body;          /**< points into the reply message */
    apr_size_t body_len;
} aura_envelope_reply_t;

/**
 * Whether a client request header crosses to the service.  Drops
 * hop-by-hop headers (RFC 9110 section 7.6.1, plus those the request's
 * Connection header names), Content-Length (the payload length rules),
 * credentials of the gateway (apikey, X-API-Key), anything in the
 * gateway's namespace (aura_envelope_own_header()), and the names NATS
 * uses for its own status line (Status, Description).
 * @param name header name, any case
 * @param connection the request's Connection header value, or NULL
 * @return 1 to forward, 0 to drop
 */
int aura_envelope_request_header_ok(const char *name,
                                    const char *connection);

/**
 * The gateway's namespace, the one rule for both paths and both
 * directions (DESIGN.md section 9): aura-*, X-Request-Id, X-Project-Id,
 * traceparent and tracestate, in any case and with '_' and '-' treated
 * alike ("Aura_Role", "x_request_id", "X_Project_Id"), since CGI, WSGI,
 * Rack and PHP-FPM map both spellings to one variable.  No client header
 * and no service header with such a name ever crosses: the gateway sets
 * its own.
 * @param name header name; NULL is not in it
 * @return 1 when it is
 */
int aura_envelope_own_header(const char *name);

/**
 * Remove every header of the gateway's namespace (any spelling,
 * aura_envelope_own_header()) from t: what a client sent on the HTTP
 * path, what an upstream answered on responses.
 */
void aura_unset_owned(apr_pool_t *p, apr_table_t *t);
/* Removes from t every header whose name match() says yes to (the names
 * collected first, in p only when there is one). */
void aura_table_unset_if(apr_pool_t *p, apr_table_t *t,
                         int (*match)(const char *name));

/**
 * The response headers only the gateway sets, besides its namespace:
 * the security headers (AuraSecurityHeader: set, or removed, on every
 * response), its rate limits (RateLimit, RateLimit-Policy: clients back
 * off on them), and the headers whose effect reaches past the one
 * response to the whole host, origin or site that every service shares
 * (Strict-Transport-Security with includeSubDomains, Clear-Site-Data,
 * NEL, Report-To, Expect-CT, Public-Key-Pins[-Report-Only]).  Exact
 * names, any case: a browser reads no other spelling.  No service or
 * upstream header of these names reaches a client (DESIGN.md section
 * 10).
 * @param name header name; NULL is not one
 * @return 1 when it is one of them
 */
int aura_envelope_response_owned(const char *name);

/**
 * Whether a reply header becomes a response header: not in the
 * gateway's namespace (aura_envelope_own_header(): a service cannot add
 * a second X-Request-Id), not one only the gateway sets
 * (aura_envelope_response_owned()), not hop-by-hop, not Content-Length,
 * not Status/Description.
 * @return 1 to keep, 0 to drop
 */
int aura_envelope_reply_header_ok(const char *name);

/**
 * The head of a 101 Switching Protocols as the client gets it (the 101
 * of a WebSocket through mod_proxy, which passes no request filter): the
 * upstream's status line and header lines, minus those in the gateway's
 * namespace (aura_envelope_own_header()), those only the gateway sets
 * (aura_envelope_response_owned()) and those named in replaced, then the
 * gateway's lines, then the blank line.  Any other head (not
 * "HTTP/1.1 101 ") is returned as it is.
 * @param p pool for the result
 * @param head the upstream's head, status line to blank line included
 * @param len its length
 * @param lines the gateway's header lines, "Name: value\r\n" each
 * @param replaced names the gateway sets itself, any case; NULL-terminated
 * @param out_len the result's length
 * @return the head to send (not NUL-terminated)
 */
char *aura_envelope_upgrade_head(apr_pool_t *p, const char *head,
                                 apr_size_t len, const char *lines,
                                 const char *const *replaced,
                                 apr_size_t *out_len);

/**
 * Parse Aura-Status.
 * @return the status (200..599), or 0 when missing or not exactly three
 *         digits in that range.
 */
int aura_envelope_parse_status(const char *value);

/**
 * Build the NATS request message for an HTTP request.  Headers with an
 * empty value are not sent (nats.c cannot parse them back), so an empty
 * query string sends no Aura-Query.
 * @param p pool for scratch strings
 * @param subject the service subject
 * @param in the request
 * @param out the message; the caller owns it and calls natsMsg_Destroy
 * @return NATS_OK, or the nats.c status of the failing call (*out NULL)
 */
natsStatus aura_envelope_encode(apr_pool_t *p, const char *subject,
                                const aura_envelope_req_t *in,
                                natsMsg **out);

/**
 * Read a service's reply.
 * @param p pool for the header table
 * @param reply the reply message (still owned by the caller; out->body
 *        points into it, so keep it until the body is sent)
 * @param out the decoded reply
 * @param err set to a short reason on failure (static string)
 * @return APR_SUCCESS, or APR_EINVAL for a malformed reply (502)
 */
apr_status_t aura_envelope_decode(apr_pool_t *p, natsMsg *reply,
                                  aura_envelope_reply_t *out,
                                  const char **err);

#endif /* AURA_ENVELOPE_H */
