/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_endrule.h: the pure rules of ending an open stream with its
 * credential (issue #32 point 3), APR only, no httpd.h, so that
 * t/unit/test_endrule.c links them as they are: why a credential is
 * over by its clock alone, the names of the reasons, the WebSocket
 * close frame the client gets, and where a WebSocket frame ends in the
 * byte stream a tunnel relays (a close frame goes between two frames,
 * never inside one).
 */
#ifndef AURA_ENDRULE_H
#define AURA_ENDRULE_H

#include "apr.h"
#include "apr_time.h"

/* Why a stream's credential is no longer alive.  ALIVE is 0. */
typedef enum {
    AURA_END_ALIVE = 0,
    AURA_END_KEY_REVOKED,
    AURA_END_KEY_EXPIRED,
    AURA_END_TOKEN_EXPIRED,
    AURA_END_TOKEN_REVOKED,
    AURA_END_BLOCKED,
    AURA_END_REASONS
} aura_end_reason_e;

/** The reason's name as /metrics and the logs say it ("key_revoked",
 *  ...); "alive" for AURA_END_ALIVE, "unknown" out of range. */
const char *aura_end_reason_name(int reason);

/**
 * What the clock alone says of a credential at now: the key's expiry,
 * then the token's exp.
 * @param key_expires the key's expires_at (µs); 0: no key or no expiry
 * @param token_exp the token's exp (µs); 0: no token
 * @param now wall clock
 * @return AURA_END_KEY_EXPIRED, AURA_END_TOKEN_EXPIRED or AURA_END_ALIVE
 */
int aura_end_by_clock(apr_time_t key_expires, apr_time_t token_exp,
                      apr_time_t now);

/* RFC 6455 section 7.4.1: 1008, policy violation. */
#define AURA_WS_CLOSE_POLICY 1008
/* A server's close frame: 2 header bytes, the code, a short reason
 * (control frames carry at most 125 bytes). */
#define AURA_WS_CLOSE_MAX 127

/**
 * A server-to-client close frame (FIN, opcode 8, unmasked) with code
 * and reason (cut at 123 bytes) in buf.
 * @return its length (4 + the reason's)
 */
apr_size_t aura_ws_close_frame(unsigned char *buf, unsigned int code,
                               const char *reason);

/* Where the byte stream from the server stands: inside a frame's header
 * (hdr_have bytes of hdr_need read), or inside its payload (left bytes
 * to go).  All zero: between two frames. */
typedef struct {
    unsigned char hdr[14];
    unsigned int hdr_have;
    unsigned int hdr_need;
    apr_uint64_t left;
} aura_ws_tracker_t;

/**
 * Feed bytes the server sent (in order) to the tracker.
 * @return 0, or -1 when the stream is not WebSocket framing the tracker
 *         can follow (a 64-bit length with its top bit set): the caller
 *         then never places a frame of its own in it
 */
int aura_ws_track(aura_ws_tracker_t *t, const unsigned char *data,
                  apr_size_t len);

/** Whether the tracker stands between two frames. */
int aura_ws_at_boundary(const aura_ws_tracker_t *t);

#endif /* AURA_ENDRULE_H */
