/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_reqid.c: the request id.  An inbound X-Request-Id is kept when it
 * is well-formed (1 to 128 characters of [A-Za-z0-9._:+/=-]: what UUIDs,
 * ULIDs and base64 ids use) so a trace can cross several gateways;
 * anything else is replaced, because the id is copied into log lines and
 * upstream headers and must not carry an attacker's bytes there.
 */
#include "aura_private.h"

#include "apr_lib.h"

#define REQID_MAX 128

static int reqid_char(char c)
{
    return apr_isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-'
           || c == '+' || c == '/' || c == '=';
}

static int reqid_ok(const char *id)
{
    apr_size_t n = 0;

    for (; id[n]; n++) {
        if (n >= REQID_MAX || !reqid_char(id[n])) {
            return 0;
        }
    }
    return n > 0;
}

const char *aura_reqid_pick(request_rec *r)
{
    const char *in = apr_table_get(r->headers_in, "X-Request-Id");
    unsigned char rnd[16];
    char *id;
    int i;

    if (in && reqid_ok(in)) {
        return in;
    }
    /* Unpredictability is not needed, uniqueness is: the insecure
     * generator never blocks and is cheap. */
    ap_random_insecure_bytes(rnd, sizeof(rnd));
    id = apr_palloc(r->pool, 2 * sizeof(rnd) + 1);
    for (i = 0; i < (int)sizeof(rnd); i++) {
        id[2 * i] = "0123456789abcdef"[rnd[i] >> 4];
        id[2 * i + 1] = "0123456789abcdef"[rnd[i] & 0x0f];
    }
    id[2 * sizeof(rnd)] = '\0';
    return id;
}
