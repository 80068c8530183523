/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_redact.h: the one rule that keeps credentials and one-time codes
 * in URLs out of the logs (docs/logging.md, "Redaction").  Pure
 * functions (APR only, no httpd.h): t/unit/test_redact.c links them as
 * they are.
 */
#ifndef AURA_REDACT_H
#define AURA_REDACT_H

#include "apr_pools.h"

/* What a redacted value becomes. */
#define AURA_REDACTED "REDACTED"

/* A parameter name longer than this (as sent) is redacted unread. */
#define AURA_REDACT_NAME_MAX 256

/**
 * Whether a query parameter's name looks like a credential or a one-time
 * code (docs/logging.md, "Redaction").  The name is percent-decoded (up
 * to three times: a double-encoded name decodes further in some stacks)
 * and split into tokens at every character that is not an ASCII letter
 * or digit, at a change from lower to upper case ("otpCode",
 * "OTPCode") and before a digit ("cvv2"); the tokens, lower-cased and
 * joined, are its flat form: "Api-Key", "api_key", "API.KEY",
 * "%61pi%5Fkey" are all "apikey".  It looks like a credential when
 * - the flat form contains key, token, secret, passw, passphrase,
 *   passcode, pwd, auth, jwt, bearer, signature, cred, session, sessid,
 *   cookie, ticket, hmac, nonce, magic, csrf, xsrf, saml, assertion or
 *   verifier; or
 * - a token is pass, sig, sid, pin, mfa, tfa, 2fa, cvv, cvc or csc, or
 *   begins or ends with otp; or
 * - a token ends with code or codes, unless what qualifies it (the rest
 *   of the token, or the token before a bare "code") names an ordinary
 *   code: country, zip, postal, status, error, currency, language, bar,
 *   op, uni... ("country_code", "zipcode", "statusCode").
 * The rule errs toward redacting.
 * @param name the name as sent (not NUL-terminated)
 * @param len its length; above AURA_REDACT_NAME_MAX the answer is yes
 */
int aura_redact_name(const char *name, apr_size_t len);

/**
 * A parameter name's flat form, as aura_redact_name reads it: decoded up
 * to three times, ASCII letters and digits only, lower case.  What names
 * a parameter "apikey" in any spelling (aura_apikey.c).
 * @param name the name as sent (not NUL-terminated)
 * @param len its length
 * @param out NUL-terminated flat form
 * @return 1, or 0 (out untouched) when len > AURA_REDACT_NAME_MAX
 */
int aura_param_name_flat(const char *name, apr_size_t len,
                         char out[AURA_REDACT_NAME_MAX + 1]);

/**
 * A query string (without '?') whose credential-looking parameters
 * (aura_redact_name) have AURA_REDACTED as their value.  Parameters are
 * separated by '&', ';' (read as a separator by CGI.pm, PHP's
 * arg_separator and others) or '#'; a name without '=' has no value to
 * hide.
 * @return q itself when nothing is redacted (NULL for NULL), else a copy
 *         from p
 */
const char *aura_redact_query(apr_pool_t *p, const char *q);

/**
 * The same for a URI (path, '?', query, maybe '#fragment'): what follows
 * the first '?' or '#' is a query.
 * @return s itself when nothing is redacted, else a copy from p
 */
const char *aura_redact_uri(apr_pool_t *p, const char *s);

/**
 * The same for a request line, "METHOD URI PROTOCOL": the query runs to
 * the last space (the protocol is kept), so a value with a space in it
 * is hidden whole.
 * @return s itself when nothing is redacted, else a copy from p
 */
const char *aura_redact_request_line(apr_pool_t *p, const char *s);

/**
 * A URL without its user information: "nats://user:pass@host:4222" is
 * "nats://host:4222".  For what an operator's page shows of a server the
 * gateway is connected to (server-status, /health): a password set in
 * the URL must not be shown with it.  Only the authority of the first
 * URL is looked at ("scheme://" up to the next '/', '?', '#' or space);
 * its last '@' ends the user information (a password may hold '@').
 * @return s itself when it has none (NULL for NULL), else a copy from p
 */
const char *aura_redact_userinfo(apr_pool_t *p, const char *s);

#endif /* AURA_REDACT_H */
