/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_path.h: the raw request path's admission rule (docs/envelope.md,
 * "One path"; issue #15 point 5), as one pure function.  A path that
 * passes decodes, in one pass of percent-decoding, to the very path
 * httpd's own normalization produces (no dot-segment to remove, no
 * slash to merge, no encoded slash to keep), so the path every rule
 * decides on (Location, LocationMatch, AuraScope, the /v1/db router) is
 * the path a service or upstream receives.  A ";" is refused too unless
 * the caller allows it (issue #29 point 4): a rule keeps "keys;x" as a
 * name where a service reads "keys".  No httpd.h: cmocka and
 * libFuzzer link it as it is.
 */
#ifndef AURA_PATH_H
#define AURA_PATH_H

#include "apr.h"
#include "apr_errno.h"

/* aura_path_check's flags. */
/** Admit ";parameters" (raw ";" or %3B) in segments: only where every
 *  service behind the VirtualHost takes ";" as a character of a name
 *  (AuraPathParams allow, data plane).  Without it they are refused,
 *  since Tomcat, Spring and Jetty drop them and find-my-way (Fastify)
 *  cuts the path there, while httpd's rules keep them. */
#define AURA_PATH_ALLOW_PARAMS 0x1

/** Returned for a path refused only for its ";parameters": the path is
 *  otherwise normal, the client may send it without them. */
#define AURA_PATH_EPARAMS (APR_OS_START_USERERR + 2900)

/**
 * Check a raw request path (as the client sent it, before any decoding;
 * the query and fragment already cut off).
 *
 * Refused, with a static phrase in *why:
 * - a path that is empty or does not start with "/";
 * - a raw space, control character (NUL included) or backslash;
 * - an invalid percent-escape ("%", "%4", "%zz");
 * - an escape decoding to "/", "\" or a control character (NUL, 0x01 to
 *   0x1f, 0x7f);
 * - a dot-segment: a segment that decodes to "." or "..", also when it
 *   is followed by ";parameters" (Tomcat and Spring drop those before
 *   resolving: "..;x" is ".." there);
 * - an empty segment ("//", or a segment that is only ";parameters"),
 *   except the last one (a trailing slash, or the root "/");
 * - unless flags has AURA_PATH_ALLOW_PARAMS, a ";" (raw, %3B or %3b)
 *   anywhere: reported only when nothing above applies.
 *
 * @param raw the path bytes (need not be NUL-terminated)
 * @param len their number
 * @param flags 0 or AURA_PATH_ALLOW_PARAMS
 * @param why set to a static phrase on refusal, untouched otherwise;
 *        may be NULL
 * @return APR_SUCCESS when accepted; AURA_PATH_EPARAMS when refused only
 *         for a ";"; APR_EINVAL when refused for anything else.
 */
apr_status_t aura_path_check(const char *raw, apr_size_t len, int flags,
                             const char **why);

#endif /* AURA_PATH_H */
