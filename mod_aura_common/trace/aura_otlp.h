/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_otlp.h: the OTLP/JSON encoding of spans (aura_otlp.c), as the
 * OpenTelemetry protocol specification defines it for OTLP/HTTP with
 * Content-Type application/json: an ExportTraceServiceRequest whose
 * trace and span ids are lower-case hex (not base64), whose times are
 * decimal strings of nanoseconds, and whose enums are numbers.
 *
 * A request's spans are encoded once, in the worker that served it, as
 * a fragment: the span objects separated by commas, without brackets.
 * The exporter joins the fragments of a batch between a head and a
 * tail made once per child (the resource and the scope), so a batch
 * costs it no JSON work.  The fragment is written by hand (cheap), the
 * head with jansson.  Pure logic: no httpd.h.
 */
#ifndef AURA_OTLP_H
#define AURA_OTLP_H

#include "trace/aura_span.h"
#include "apr_tables.h"

/** The scope every span is reported under. */
#define AURA_OTLP_SCOPE "mod_aura"

/**
 * The set's spans as a fragment of the spans array.
 * @param len its length
 * @return a malloc'd string (free() it), NULL when the set is empty or
 *         on an allocation failure
 */
char *aura_otlp_spans(const aura_spanset_t *set, apr_size_t *len);

/**
 * What comes before the first fragment of a batch: the resource with
 * its attributes and the scope.
 * @param resource key, value, key, value... (const char *), all strings
 * @param version the scope's version
 * @return a string in p, NULL when an attribute is not valid UTF-8
 */
const char *aura_otlp_head(apr_pool_t *p,
                           const apr_array_header_t *resource,
                           const char *version);

/** What comes after the last fragment of a batch. */
#define AURA_OTLP_TAIL "]}]}]}"

#endif /* AURA_OTLP_H */
