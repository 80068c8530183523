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
 * gateway's namespace (aura-*), and the names NATS uses for its own
 * status line (Status, Description).
 * @param name header name, any case
 * @param connection the request's Connection header value, or NULL
 * @return 1 to forward, 0 to drop
 */
int aura_envelope_request_header_ok(const char *name,
                                    const char *connection);

/**
 * Whether a header name is in the gateway's namespace (aura-*, any
 * case): no client and no service may set one.
 * @return 1 when it is
 */
int aura_envelope_own_header(const char *name);

/**
 * Whether a reply header becomes a response header: not Aura-*, not
 * hop-by-hop, not Content-Length, not Status/Description.
 * @return 1 to keep, 0 to drop
 */
int aura_envelope_reply_header_ok(const char *name);

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
