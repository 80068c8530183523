/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_revoke_index.c: see aura_revoke_index.h.
 */
#include "control/aura_revoke_index.h"
#include "control/aura_control_record.h"
#include "core/aura_siphash.h"

#include "apr_strings.h"
#include "apr_lib.h"

#include <string.h>

typedef struct {
    apr_uint64_t hash;
    apr_int64_t before;          /* seconds */
    apr_time_t expires;          /* µs; 0: a free slot */
} rslot_t;

struct aura_revoke_index_t {
    unsigned char key[AURA_SIPHASH_KEY_LEN];
    apr_uint64_t mask;           /* slots - 1 */
    apr_uint64_t max, count;
    rslot_t *slots;
};

static const char *const names[] = { NULL, "sub", "sid", "jti" };

const char *aura_revoke_name(aura_revoke_e what)
{
    return what > AURA_REVOKE_NONE && what <= AURA_REVOKE_JTI
           ? names[what] : NULL;
}

aura_revoke_e aura_revoke_kind_of(const char *target)
{
    int i;

    for (i = AURA_REVOKE_SUB; i <= AURA_REVOKE_JTI; i++) {
        if (!strncmp(target, names[i], 3) && target[3] == ':') {
            return (aura_revoke_e)i;
        }
    }
    return AURA_REVOKE_NONE;
}

/* Visible ASCII or UTF-8 bytes: no control character, no space. */
static int visible(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c <= 0x20 || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

static int before_ok(const char *v)
{
    apr_int64_t n = 0;
    const char *s = v;

    if (!*s || (*s == '0' && s[1]) || strlen(s) > 12) {
        return 0;
    }
    for (; *s; s++) {
        if (!apr_isdigit(*s)) {
            return 0;
        }
        n = n * 10 + (*s - '0');
    }
    return n >= 1 && n <= AURA_REVOKE_BEFORE_MAX;
}

const char *aura_revoke_canon(const char *target, const char *value,
                              char *ctarget, char *cvalue)
{
    const char *scope, *colon;

    if (aura_revoke_kind_of(target) == AURA_REVOKE_NONE) {
        return "a revocation's target is sub:<scope>:<subject>, "
               "sid:<scope>:<session> or jti:<scope>:<token id>";
    }
    scope = target + 4;
    colon = strchr(scope, ':');
    if (!colon || colon == scope || !colon[1] || !visible(target)) {
        return "a revocation's target names a scope (the project, or "
               "mgmt for console tokens) and an id, both non-empty "
               "visible text: sub:proj-a:user-1";
    }
    if (strlen(target) > AURA_CONTROL_TARGET_MAX) {
        return "the target is too long";
    }
    if (!value || !before_ok(value)) {
        return "a revocation's value is the time (seconds since the "
               "epoch) at or before which the tokens were issued";
    }
    strcpy(ctarget, target);
    strcpy(cvalue, value);
    return NULL;
}

apr_time_t aura_revoke_expiry(apr_int64_t before,
                              apr_interval_time_t horizon,
                              apr_interval_time_t ttl, apr_time_t now)
{
    apr_time_t last;

    /* before is at most year 9999 (before_ok) and horizon a few days:
     * no overflow. */
    if (before < 0) {
        before = 0;
    }
    else if (before > AURA_REVOKE_BEFORE_MAX) {
        before = AURA_REVOKE_BEFORE_MAX;
    }
    last = apr_time_from_sec(before + 1) + (horizon > 0 ? horizon : 0);
    return ttl > 0 && now + ttl > last ? now + ttl : last;
}

const char *aura_revoke_target(apr_pool_t *p, aura_revoke_e what,
                               const char *scope, const char *id)
{
    if (!aura_revoke_name(what) || !scope || !*scope || strchr(scope, ':')
        || !id || !*id) {
        return NULL;
    }
    return apr_pstrcat(p, names[what], ":", scope, ":", id, NULL);
}

aura_revoke_index_t *aura_revoke_index_make(apr_pool_t *p, apr_uint64_t n)
{
    aura_revoke_index_t *ix = apr_pcalloc(p, sizeof(*ix));
    apr_uint64_t size = 16;

    while (size < 2 * n) {
        size <<= 1;
    }
    ix->mask = size - 1;
    ix->max = n;
    ix->slots = apr_pcalloc(p, (apr_size_t)size * sizeof(rslot_t));
    if (apr_generate_random_bytes(ix->key, sizeof(ix->key))
        != APR_SUCCESS) {
        /* Still an index: collisions merely become guessable. */
        memset(ix->key, 0x5a, sizeof(ix->key));
    }
    return ix;
}

void aura_revoke_index_clear(aura_revoke_index_t *ix)
{
    memset(ix->slots, 0, (apr_size_t)(ix->mask + 1) * sizeof(rslot_t));
    ix->count = 0;
}

apr_uint64_t aura_revoke_index_count(const aura_revoke_index_t *ix)
{
    return ix->count;
}

static apr_uint64_t hash_of(const aura_revoke_index_t *ix, const char *t)
{
    return aura_siphash24(ix->key, t, strlen(t));
}

int aura_revoke_index_add(aura_revoke_index_t *ix, const char *target,
                          apr_int64_t before, apr_time_t expires)
{
    apr_uint64_t h = hash_of(ix, target), i = h & ix->mask;

    /* Linear probing: at most half full, so a free slot is near. */
    for (; ix->slots[i].expires; i = (i + 1) & ix->mask) {
        if (ix->slots[i].hash == h) {
            if (before > ix->slots[i].before) {
                ix->slots[i].before = before;
            }
            if (expires > ix->slots[i].expires) {
                ix->slots[i].expires = expires;
            }
            return 1;
        }
    }
    if (ix->count >= ix->max || expires <= 0) {
        return 0;
    }
    ix->slots[i].hash = h;
    ix->slots[i].before = before;
    ix->slots[i].expires = expires;
    ix->count++;
    return 1;
}

int aura_revoke_index_find(const aura_revoke_index_t *ix,
                           const char *target, apr_time_t now,
                           apr_int64_t *before)
{
    apr_uint64_t h, i;

    if (!ix->count) {
        return 0;
    }
    h = hash_of(ix, target);
    for (i = h & ix->mask; ix->slots[i].expires; i = (i + 1) & ix->mask) {
        if (ix->slots[i].hash == h) {
            if (ix->slots[i].expires <= now) {
                return 0;
            }
            *before = ix->slots[i].before;
            return 1;
        }
    }
    return 0;
}

aura_revoke_e aura_revoke_match(const aura_revoke_index_t *ix,
                                apr_pool_t *p, const char *scope,
                                const char *sub, const char *sid,
                                const char *jti, apr_int64_t iat,
                                apr_time_t now)
{
    const char *ids[] = { NULL, sub, sid, jti };
    int i;

    for (i = AURA_REVOKE_SUB; i <= AURA_REVOKE_JTI; i++) {
        const char *t = aura_revoke_target(p, (aura_revoke_e)i, scope,
                                           ids[i]);
        apr_int64_t before;

        if (t && aura_revoke_index_find(ix, t, now, &before)
            && (iat < 0 || iat <= before)) {
            return (aura_revoke_e)i;
        }
    }
    return AURA_REVOKE_NONE;
}
