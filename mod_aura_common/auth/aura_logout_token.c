/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_logout_token.c: see aura_logout_token.h.
 */
#include "auth/aura_logout_token.h"

#include "apr_strings.h"

#include <jansson.h>
#include <string.h>

/* A non-empty string of visible characters (no space, no control
 * character) of at most max bytes, copied into p; NULL otherwise. */
static const char *id_of(apr_pool_t *p, json_t *v, apr_size_t max)
{
    const char *s;
    apr_size_t n, i;

    if (!json_is_string(v)) {
        return NULL;
    }
    s = json_string_value(v);
    n = json_string_length(v);
    if (!n || n > max || strlen(s) != n) {
        return NULL;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c <= 0x20 || c == 0x7f) {
            return NULL;
        }
    }
    return apr_pstrdup(p, s);
}

static const char *check(apr_pool_t *p, json_t *o, apr_size_t max_id,
                         aura_logout_claims_t *out)
{
    json_t *v, *events;

    /* Section 2.4: a logout_token is no ID token; a nonce would let it
     * pass for one, so it is refused. */
    if (json_object_get(o, "nonce")) {
        return "a logout_token must not contain a nonce claim";
    }
    events = json_object_get(o, "events");
    if (!json_is_object(events)
        || !json_is_object(json_object_get(events, AURA_LOGOUT_EVENT))) {
        return "the events claim must be an object with the member "
               AURA_LOGOUT_EVENT;
    }
    v = json_object_get(o, "iat");
    if (!json_is_number(v) || json_number_value(v) < 1) {
        return "the iat claim is required";
    }
    out->iat = (apr_int64_t)json_number_value(v);
    if (!(out->jti = id_of(p, json_object_get(o, "jti"), max_id))) {
        return "the jti claim is required (a non-empty string)";
    }
    if ((v = json_object_get(o, "sub"))
        && !(out->sub = id_of(p, v, max_id))) {
        return "the sub claim must be a non-empty string";
    }
    if ((v = json_object_get(o, "sid"))
        && !(out->sid = id_of(p, v, max_id))) {
        return "the sid claim must be a non-empty string";
    }
    if (!out->sub && !out->sid) {
        return "a logout_token names a sub, a sid or both";
    }
    return NULL;
}

const char *aura_logout_token_check(apr_pool_t *p, const char *json,
                                    apr_size_t max_id,
                                    aura_logout_claims_t *out)
{
    json_t *o;
    const char *err;

    memset(out, 0, sizeof(*out));
    o = json ? json_loads(json, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return "the logout_token's payload is not a JSON object";
    }
    err = check(p, o, max_id, out);
    json_decref(o);
    if (err) {
        memset(out, 0, sizeof(*out));
    }
    return err;
}
