/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_subject.c: which subjects a service may make the gateway publish
 * on.  A stream message's reply subject is chosen by the service (or by
 * anyone who can publish on the gateway's inbox), and the gateway
 * publishes its acknowledgement and its cancel there with its own NATS
 * credentials: without a rule, a service could make the gateway send an
 * empty message to aura.keys.invalidate, to another service's request
 * subject, or into the gateway's own inboxes.  The rule: a literal
 * subject under the Location's ack prefix, outside the gateway's inbox.
 * Pure: no allocation, no httpd.h.
 */
#include "nats/aura_subject.h"

#include "apr_lib.h"

#include <string.h>

int aura_subject_literal(const char *s)
{
    apr_size_t token = 0;
    const char *c;

    if (!s || !*s) {
        return 0;
    }
    for (c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;

        if (u <= ' ' || u >= 0x7f || *c == '*' || *c == '>') {
            return 0;
        }
        if (*c == '.') {
            if (!token) {
                return 0;
            }
            token = 0;
        }
        else {
            token++;
        }
    }
    return token > 0;
}

int aura_subject_ack_prefix_ok(const char *prefix)
{
    apr_size_t n = prefix ? strlen(prefix) : 0;
    char buf[AURA_STREAM_ACK_MAX + 1];

    if (n < 2 || n > AURA_STREAM_ACK_MAX - 1 || prefix[n - 1] != '.') {
        return 0;
    }
    memcpy(buf, prefix, n - 1);
    buf[n - 1] = '\0';
    return aura_subject_literal(buf);
}

const char *aura_subject_ack_refused(const char *subject, const char *prefix,
                                     const char *own)
{
    apr_size_t plen = strlen(prefix), olen = own ? strlen(own) : 0;

    if (strlen(subject) > AURA_STREAM_ACK_MAX) {
        return "longer than 255 bytes";
    }
    if (!aura_subject_literal(subject)) {
        return "not a literal subject (an empty token, whitespace, a "
               "control character or a wildcard)";
    }
    if (strncmp(subject, prefix, plen) || !subject[plen]) {
        return "outside the Location's AuraStreamAckPrefix";
    }
    if (olen && !strncmp(subject, own, olen)
        && (subject[olen] == '.' || !subject[olen])) {
        return "under the gateway's own reply inbox";
    }
    return NULL;
}
