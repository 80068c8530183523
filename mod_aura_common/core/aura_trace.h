/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_trace.h: W3C Trace Context (https://www.w3.org/TR/trace-context/)
 * traceparent parsing and formatting, as pure logic.  The gateway keeps
 * an inbound trace when its traceparent is valid, else starts one; it
 * always becomes the parent of what it sends upstream (a span id of its
 * own).  No httpd.h: cmocka links it as it is.
 */
#ifndef AURA_TRACE_H
#define AURA_TRACE_H

#include "apr.h"

#define AURA_TRACEPARENT_LEN 55

typedef struct {
    char trace_id[33];      /**< 32 lower-case hex, not all zero */
    char parent_id[17];     /**< 16 lower-case hex, not all zero */
    unsigned int flags;     /**< trace-flags (bit 0: sampled) */
} aura_traceparent_t;

/**
 * Parse a traceparent value: "00-<trace-id>-<parent-id>-<flags>".  A
 * higher version is read the same way when its first 55 characters are
 * well-formed and the next is '-' or nothing (the spec's forward
 * compatibility); version ff never is.
 * @return 1 when valid (*out filled), 0 otherwise
 */
int aura_traceparent_parse(const char *value, aura_traceparent_t *out);

/**
 * Format version 00 of t into out (56 bytes: 55 and the NUL).
 */
void aura_traceparent_format(const aura_traceparent_t *t, char *out);

/**
 * Lower-case hex of n random bytes into out (2n + 1 bytes), avoiding
 * the all-zero value the spec forbids.
 * @param rnd n bytes of randomness from the caller
 */
void aura_trace_hex_id(const unsigned char *rnd, apr_size_t n, char *out);

#endif /* AURA_TRACE_H */
