/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keylife.c: an API key's lifecycle rules (issue #32 point 1):
 * expiry, scope names and scope matching.  Pure: the key store
 * (aura_keystore.c) and the data plane's door call them with the time
 * and the strings they hold.
 */
#include "auth/aura_keylife.h"

#include <string.h>

int aura_key_expired(apr_time_t expires_at, apr_time_t now)
{
    return expires_at != 0 && now >= expires_at;
}

static int scope_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int aura_key_scope_name_ok(const char *s, apr_size_t len)
{
    apr_size_t i;

    if (!s || len == 0 || len > AURA_KEY_SCOPE_MAX) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        if (!scope_char(s[i])) {
            return 0;
        }
    }
    return 1;
}

int aura_key_scopes_ok(const char *list, long count)
{
    const char *p = list;
    long n = 0;

    if (!list || count < 0 || strlen(list) > AURA_KEY_SCOPES_MAX) {
        return 0;
    }
    if (count == 0) {
        return *list == '\0';
    }
    for (;;) {
        const char *end = strchr(p, ',');
        apr_size_t len = end ? (apr_size_t)(end - p) : strlen(p);

        if (!aura_key_scope_name_ok(p, len)) {
            return 0;
        }
        n++;
        if (!end) {
            break;
        }
        p = end + 1;
    }
    return n == count;
}

/* Whether the list holds name exactly (not a prefix of another). */
static int list_has(const char *list, const char *name)
{
    apr_size_t len = strlen(name);
    const char *p = list;

    if (len == 0) {
        return 0;
    }
    while (*p) {
        const char *end = strchr(p, ',');
        apr_size_t n = end ? (apr_size_t)(end - p) : strlen(p);

        if (n == len && !memcmp(p, name, len)) {
            return 1;
        }
        if (!end) {
            break;
        }
        p = end + 1;
    }
    return 0;
}

int aura_key_scope_allows(const char *scopes, const char *service,
                          const char *group)
{
    if (!scopes) {
        return 1;
    }
    return (service && list_has(scopes, service))
           || (group && list_has(scopes, group));
}
