/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_path.h: the raw request path's admission rule (docs/envelope.md,
 * "One path"; issue #15 point 5), as one pure function.  A path that
 * passes decodes, in one pass of percent-decoding, to the very path
 * httpd's own normalization produces (no dot-segment to remove, no
 * slash to merge, no encoded slash to keep), so the path every rule
 * decides on (Location, LocationMatch, AuraScope, the /v1/db router) is
 * the path a service or upstream receives.  No httpd.h: cmocka and
 * libFuzzer link it as it is.
 */
#ifndef AURA_PATH_H
#define AURA_PATH_H

#include "apr.h"
#include "apr_errno.h"

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
 *   except the last one (a trailing slash, or the root "/").
 *
 * @param raw the path bytes (need not be NUL-terminated)
 * @param len their number
 * @param why set to a static phrase on refusal, untouched otherwise;
 *        may be NULL
 * @return APR_SUCCESS when accepted, APR_EINVAL when refused.
 */
apr_status_t aura_path_check(const char *raw, apr_size_t len,
                             const char **why);

#endif /* AURA_PATH_H */
