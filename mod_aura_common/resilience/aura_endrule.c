/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_endrule.c: the pure rules of ending a stream with its credential
 * (aura_endrule.h).  No state, no locks: every caller passes its own.
 */
#include "resilience/aura_endrule.h"

#include <string.h>

static const char *const reason_names[AURA_END_REASONS] = {
    "alive", "key_revoked", "key_expired", "token_expired",
    "token_revoked", "blocked"
};

const char *aura_end_reason_name(int reason)
{
    if (reason < 0 || reason >= AURA_END_REASONS) {
        return "unknown";
    }
    return reason_names[reason];
}

int aura_end_by_clock(apr_time_t key_expires, apr_time_t token_exp,
                      apr_time_t now)
{
    /* The key first: a project's key outlives the user's session, and
     * its end is the operator's decision, reported as such. */
    if (key_expires > 0 && now >= key_expires) {
        return AURA_END_KEY_EXPIRED;
    }
    if (token_exp > 0 && now >= token_exp) {
        return AURA_END_TOKEN_EXPIRED;
    }
    return AURA_END_ALIVE;
}

apr_size_t aura_ws_close_frame(unsigned char *buf, unsigned int code,
                               const char *reason)
{
    apr_size_t rlen = reason ? strlen(reason) : 0;

    if (rlen > AURA_WS_CLOSE_MAX - 4) {
        rlen = AURA_WS_CLOSE_MAX - 4;
    }
    buf[0] = 0x88;                       /* FIN, opcode 8 (close) */
    buf[1] = (unsigned char)(2 + rlen);  /* unmasked: server to client */
    buf[2] = (unsigned char)((code >> 8) & 0xff);
    buf[3] = (unsigned char)(code & 0xff);
    if (rlen) {
        memcpy(buf + 4, reason, rlen);
    }
    return 4 + rlen;
}

/* The header's full length once its first two bytes are known. */
static unsigned int header_length(const unsigned char *h)
{
    unsigned int n = 2, len7 = h[1] & 0x7f;

    if (len7 == 126) {
        n += 2;
    }
    else if (len7 == 127) {
        n += 8;
    }
    if (h[1] & 0x80) {
        n += 4;              /* a mask (a client's frame; tolerated) */
    }
    return n;
}

/* The payload length of a complete header; -1 for a length with its
 * most significant bit set (RFC 6455 5.2 forbids it). */
static int payload_length(const unsigned char *h, apr_uint64_t *len)
{
    unsigned int len7 = h[1] & 0x7f, i;

    if (len7 < 126) {
        *len = len7;
        return 0;
    }
    if (len7 == 126) {
        *len = ((apr_uint64_t)h[2] << 8) | h[3];
        return 0;
    }
    if (h[2] & 0x80) {
        return -1;
    }
    *len = 0;
    for (i = 0; i < 8; i++) {
        *len = (*len << 8) | h[2 + i];
    }
    return 0;
}

int aura_ws_track(aura_ws_tracker_t *t, const unsigned char *data,
                  apr_size_t len)
{
    while (len > 0) {
        if (t->left > 0) {
            apr_size_t n = t->left < len ? (apr_size_t)t->left : len;

            t->left -= n;
            data += n;
            len -= n;
            continue;
        }
        /* In a header: two bytes say how long it is. */
        t->hdr[t->hdr_have++] = *data++;
        len--;
        if (t->hdr_have == 2) {
            t->hdr_need = header_length(t->hdr);
        }
        if (t->hdr_have >= 2 && t->hdr_have == t->hdr_need) {
            if (payload_length(t->hdr, &t->left) < 0) {
                return -1;
            }
            t->hdr_have = 0;
            t->hdr_need = 0;
        }
    }
    return 0;
}

int aura_ws_at_boundary(const aura_ws_tracker_t *t)
{
    return t->left == 0 && t->hdr_have == 0;
}
