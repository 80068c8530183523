/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_scopes.c: libFuzzer harness for an API key's scope list
 * (mod_aura_common/auth/aura_keylife.c), which comes from the key
 * store's scopes text[] column: whoever can write a key's row (a
 * tenant's own service, a migration gone wrong) chooses it.
 *
 * aura-fuzz: -max_len=1200
 *
 * Input: one byte, the array's element count as Postgres would report
 * it (0..254; 255 stands for -1, a broken count), then the list, the
 * request's service and its Location group, separated by NUL bytes (a
 * missing part is NULL, an empty one "").
 *
 * Oracle: a second reading of the same rules written here the plain way
 * (split on every ',', check each name's length and characters, count
 * the names).  aura_key_scopes_ok() must agree with it; for a list it
 * accepts, aura_key_scope_allows() must admit a request exactly when
 * its service or group is one of the names, compared whole (never a
 * prefix, never an empty name), and a NULL list admits everything.
 */
#include "aura_fuzz.h"

#include "auth/aura_keylife.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    return 0;
}

static int name_char(unsigned char c)
{
    return strchr("abcdefghijklmnopqrstuvwxyz"
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", c) && c;
}

/* The list's names, split on every ','; -1 when one is invalid. */
static long model_names(const char *list, const char **names, long cap)
{
    long n = 0;
    const char *p = list;

    if (!*list) {
        return 0;
    }
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p), i;

        if (len == 0 || len > AURA_KEY_SCOPE_MAX) {
            return -1;
        }
        for (i = 0; i < len; i++) {
            if (!name_char((unsigned char)p[i])) {
                return -1;
            }
        }
        if (n < cap) {
            names[n] = p;
        }
        n++;
        if (!end) {
            return n;
        }
        p = end + 1;
    }
}

static int model_ok(const char *list, long count)
{
    const char *names[1];
    long n;

    if (count < 0 || strlen(list) > AURA_KEY_SCOPES_MAX) {
        return 0;
    }
    n = model_names(list, names, 0);
    return n >= 0 && n == count;
}

static int model_has(const char *list, const char *name)
{
    size_t len = name ? strlen(name) : 0;
    const char *p = list;

    if (!len) {
        return 0;
    }
    for (;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        if (n == len && !strncmp(p, name, len)) {
            return 1;
        }
        if (!end) {
            return 0;
        }
        p = end + 1;
    }
}

/* The next NUL-terminated part of the input; NULL once it is used up. */
static const char *next_part(apr_pool_t *p, const uint8_t **d, size_t *n)
{
    const uint8_t *nul;
    size_t len;
    const char *s;

    if (*n == 0) {
        return NULL;
    }
    nul = memchr(*d, 0, *n);
    len = nul ? (size_t)(nul - *d) : *n;
    s = aura_fuzz_strndup(p, *d, len);
    *d += nul ? len + 1 : len;
    *n -= nul ? len + 1 : len;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p;
    const char *list, *service, *group;
    long count;
    int ok;

    if (size < 1) {
        return 0;
    }
    p = aura_fuzz_pool();
    count = data[0] == 255 ? -1 : (long)data[0];
    data++;
    size--;
    list = next_part(p, &data, &size);
    service = next_part(p, &data, &size);
    group = next_part(p, &data, &size);
    if (!list) {
        list = "";
    }

    ok = aura_key_scopes_ok(list, count);
    AURA_FUZZ_ASSERT(ok == model_ok(list, count));
    AURA_FUZZ_ASSERT(aura_key_scope_allows(NULL, service, group) == 1);
    if (ok) {
        int want = model_has(list, service) || model_has(list, group);

        AURA_FUZZ_ASSERT(aura_key_scope_allows(list, service, group)
                         == want);
        /* An empty list admits nothing; a scoped key on a Location with
         * neither service nor group is refused. */
        AURA_FUZZ_ASSERT(!aura_key_scope_allows(list, NULL, NULL));
        if (!*list) {
            AURA_FUZZ_ASSERT(!want);
        }
    }
    apr_pool_destroy(p);
    return 0;
}
