/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_keystore.c: API key lookups, cached per child.
 *
 * The cache is a fixed array of AuraKeyCacheSize slots (a power of two),
 * direct-mapped by a 128-bit tag of the key: two SipHash-2-4 under keys
 * drawn at child start, a keyed PRF, so no one can make a key whose tag
 * matches another's (the store's SHA-256 is computed only on a miss: it
 * was 3.9k of the 6k instructions of a cached key check).  O(1),
 * bounded, no eviction policy to get wrong; a colliding key simply takes
 * the slot.  The slot keeps the actor (a prefix of the SHA-256), so a hit
 * needs nothing else.  Unknown keys are
 * cached too (negative entries), so a flood of the same bad key costs
 * one query per TTL, not one per request; distinct junk keys cycle
 * through the slots without growing memory.  Entries live at most
 * AuraKeyCacheTTL: a key revoked in the database stops working within
 * that time on every child (the NATS invalidation broadcast, later, makes
 * it immediate).  A thread mutex guards the array: O(1) copies inside,
 * no I/O.
 *
 * While the store cannot answer (no answer within AuraDBTimeout, its
 * breaker open, a failed connect, an error of Postgres: anything but an
 * answer), an entry past its TTL is still used for up to
 * AuraKeyCacheStaleMax more (issue #16): clients with cached keys keep
 * working through an outage longer than the TTL, a key never seen gets
 * 503.  An answer of the store always wins: a key found revoked is
 * refused at once.  The invalidation broadcast empties the slots of its
 * project (expires = 0), so a rotated key is never served stale.
 *
 * A key's lifecycle (issue #32): each slot keeps the key's own expiry
 * (the store's expires_at) and its scopes.  Expiry is decided on every
 * use against this host's clock, from the cache as from the store, so a
 * key stops at its expires_at on every child of every instance without
 * any message (a stale entry too: it keeps its expiry).  Each slot also
 * keeps the key's SHA-256 and a "used" flag set when the key is
 * accepted; the last-used flush (aura_keyused.c) takes the flagged
 * hashes with aura_keystore_take_used() and writes them in one UPDATE.
 * A flag lives in its slot: a key accepted once and whose slot another
 * key takes before the next flush is missed (a key in use is flagged
 * again by its next request).
 */
#include "core/aura_module.h"
#include "auth/aura_apikey.h"
#include "auth/aura_identity.h"
#include "auth/aura_keylife.h"
#include "auth/aura_keystore.h"
#include "core/aura_config.h"
#include "core/aura_request.h"
#include "core/aura_siphash.h"
#include "nats/aura_nats.h"
#include "shm/aura_shm.h"
#include "store/aura_db.h"
#include "store/aura_store_conf.h"
#include "trace/aura_tracing.h"

#include "apr_atomic.h"
#include "apr_thread_mutex.h"
#include "apr_strings.h"
#include "util_filter.h"

#include <libpq-fe.h>

/* found: what the store said about a key. */
#define KEY_UNKNOWN 0
#define KEY_FOUND   1
#define KEY_BAD_ROW 2      /* found, but a value cannot be an identity */

/* Each field holds its longest valid value and the NUL: a value that
 * does not fit is refused whole (KEY_BAD_ROW), never cut, or two ids
 * sharing a prefix would become one tenant. */
typedef struct {
    apr_uint64_t tag[2];
    apr_time_t expires;    /* 0: empty slot */
    int found;
    char actor[sizeof(AURA_KEY_ACTOR_PREFIX) + AURA_KEY_ACTOR_HEX];
    char project[AURA_ID_MAX + 1];
    char org[AURA_ID_MAX + 1];
    char plan[AURA_PLAN_MAX + 1];
    char role[sizeof("service_role")];
    apr_time_t key_expires;  /* the key's expires_at; 0: none */
    int used;                /* accepted since the last flush */
    int has_scopes;          /* 0: every service */
    char hash[65];           /* the store's SHA-256, for the flush */
    char scopes[AURA_KEY_SCOPES_MAX + 1];
} key_slot_t;

/* Written in child_init only. */
static key_slot_t *slots;
static apr_uint32_t slot_mask;
static apr_thread_mutex_t *slots_mutex;
static apr_interval_time_t cache_ttl;
static apr_interval_time_t cache_stale;
static int track_used;          /* AuraKeyLastUsedInterval > 0 */
static unsigned char tag_keys[2][AURA_SIPHASH_KEY_LEN];

/* The cache's destructor, run when the child pool goes, just before its
 * mutex is destroyed (registered after it: cleanups run last-in-first-
 * out).  The NATS connection, whose invalidation handler locks that
 * mutex and writes the slots, must be closed by then: aura_nats.c closes
 * it in a pre-cleanup, which runs before every cleanup.  Should a change
 * ever break that order, this says so instead of letting a late
 * invalidation run into a destroyed mutex. */
static apr_status_t cache_cleanup(void *data)
{
    server_rec *s = data;

    if (aura_nats_conn()) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, AURA_LOGNO(01800)
                     "child exit (pid %" APR_PID_T_FMT "): the key cache "
                     "is released while the NATS connection is still "
                     "open; a key invalidation could run into it "
                     "(report this as a bug)", getpid());
    }
    return APR_SUCCESS;
}

void aura_keystore_child_init(apr_pool_t *pchild, server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    int n = aura_conf_key_cache_size(c);

    cache_ttl = aura_conf_key_cache_ttl(c);
    cache_stale = aura_conf_key_cache_stale(c);
    track_used = aura_conf_key_last_used(c) > 0;
    slots = apr_pcalloc(pchild, sizeof(*slots) * (apr_size_t)n);
    slot_mask = (apr_uint32_t)n - 1;
    /* Without secret tag keys the cache is off (slots NULL): a guessable
     * tag would let a key borrow another's identity. */
    if (apr_generate_random_bytes(&tag_keys[0][0], sizeof(tag_keys))
        != APR_SUCCESS) {
        slots = NULL;
    }
    if (apr_thread_mutex_create(&slots_mutex, APR_THREAD_MUTEX_DEFAULT,
                                pchild) != APR_SUCCESS) {
        slots_mutex = NULL;
    }
    apr_pool_cleanup_register(pchild, s, cache_cleanup,
                              apr_pool_cleanup_null);
}

static void tag_of(const char *key, apr_uint64_t tag[2])
{
    apr_size_t len = strlen(key);

    tag[0] = aura_siphash24(tag_keys[0], key, len);
    tag[1] = aura_siphash24(tag_keys[1], key, len);
}

static key_slot_t *slot_of(const apr_uint64_t tag[2])
{
    return &slots[tag[0] & slot_mask];
}

/* APR_SUCCESS, or APR_ENOSPC when src does not fit whole (nothing is
 * written then). */
static apr_status_t copy_field(char *dst, apr_size_t size, const char *src)
{
    apr_size_t n = strlen(src);

    if (n >= size) {
        return APR_ENOSPC;
    }
    memcpy(dst, src, n + 1);
    return APR_SUCCESS;
}

/* Column 4: the expiry in µs since the epoch (the lookup clamps it to
 * a positive value); *at 0 for NULL.  APR_EINVAL when it is not one. */
static apr_status_t row_expiry(PGresult *res, apr_time_t *at)
{
    const char *v = PQgetvalue(res, 0, 4);
    char *end = NULL;

    *at = 0;
    if (PQgetisnull(res, 0, 4)) {
        return APR_SUCCESS;
    }
    *at = (apr_time_t)apr_strtoi64(v, &end, 10);
    return *v && end && !*end && *at > 0 ? APR_SUCCESS : APR_EINVAL;
}

/* Columns 5 and 6: the scopes joined by ',' and their count, as
 * aura_key_scopes_ok() wants them (NULL: every service). */
static int row_scopes_ok(PGresult *res)
{
    char *end = NULL;
    long n;

    if (PQgetisnull(res, 0, 5)) {
        return 1;
    }
    n = strtol(PQgetvalue(res, 0, 6), &end, 10);
    return end && !*end && aura_key_scopes_ok(PQgetvalue(res, 0, 5), n);
}

/* The first field of the row that cannot become identity, or NULL.
 * The ids follow the management plane's rule (aura_identity_id_ok), the
 * plan is printable text, the role one of the two the schema allows;
 * the scopes are names (aura_keylife.h): a list that cannot be read is
 * refused whole, never read wider or narrower than it is. */
static const char *bad_field(PGresult *res)
{
    const char *plan = PQgetvalue(res, 0, 3);
    const char *role = PQgetvalue(res, 0, 1);
    apr_time_t at;

    if (row_expiry(res, &at) != APR_SUCCESS) {
        return "expiry";
    }
    if (!row_scopes_ok(res)) {
        return "scopes";
    }

    if (!aura_identity_id_ok(PQgetvalue(res, 0, 0), AURA_ID_MAX)) {
        return "project id";
    }
    if (!aura_identity_id_ok(PQgetvalue(res, 0, 2), AURA_ID_MAX)) {
        return "organization id";
    }
    if (!aura_identity_text_ok(plan, strlen(plan), AURA_PLAN_MAX)) {
        return "plan";
    }
    if (strcmp(role, "anon") && strcmp(role, "service_role")) {
        return "role";
    }
    return NULL;
}

/* Cache hit: copy the identity out under the lock, and flag the key
 * as used when it is accepted (found, not past its own expiry).  grace:
 * how long past its TTL an entry still counts (0, or
 * AuraKeyCacheStaleMax while the store is unavailable). */
static int cache_get(const apr_uint64_t tag[2], apr_time_t now,
                     apr_interval_time_t grace, key_slot_t *out)
{
    key_slot_t *s;
    int hit = 0;

    if (!slots || !slots_mutex || cache_ttl == 0) {
        return 0;
    }
    apr_thread_mutex_lock(slots_mutex);
    s = slot_of(tag);
    if (s->expires && s->expires + grace > now
        && s->tag[0] == tag[0] && s->tag[1] == tag[1]) {
        if (track_used && s->found == KEY_FOUND
            && !aura_key_expired(s->key_expires, now)) {
            s->used = 1;
        }
        *out = *s;
        hit = 1;
    }
    apr_thread_mutex_unlock(slots_mutex);
    return hit;
}

/* Stored even with AuraKeyCacheTTL 0, when cache_get() never hits: the
 * slot still carries the used flag to the last-used flush.  A flag the
 * same key set before is kept. */
static void cache_put(const key_slot_t *e)
{
    key_slot_t *s;
    int used;

    if (!slots || !slots_mutex) {
        return;
    }
    apr_thread_mutex_lock(slots_mutex);
    s = slot_of(e->tag);
    used = s->used && s->tag[0] == e->tag[0] && s->tag[1] == e->tag[1];
    *s = *e;
    s->used |= used;
    apr_thread_mutex_unlock(slots_mutex);
}

char *aura_keystore_take_used(apr_pool_t *p, int max, int *n)
{
    apr_size_t cap = (apr_size_t)max * 65 + 3;
    char *out = apr_palloc(p, cap);
    char *w = out;
    apr_uint32_t i;

    *n = 0;
    *w++ = '{';
    if (slots && slots_mutex) {
        apr_thread_mutex_lock(slots_mutex);
        for (i = 0; i <= slot_mask && *n < max; i++) {
            if (slots[i].used) {
                slots[i].used = 0;
                if (*n) {
                    *w++ = ',';
                }
                memcpy(w, slots[i].hash, 64);
                w += 64;
                (*n)++;
            }
        }
        apr_thread_mutex_unlock(slots_mutex);
    }
    *w++ = '}';
    *w = '\0';
    return out;
}

static apr_status_t lookup_db(request_rec *r, const char *hash,
                              key_slot_t *e)
{
    const char *params[1] = { hash };
    PGresult *res;
    apr_status_t rv = aura_db_query(r, AURA_DB_KEY_LOOKUP, params, &res);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    e->found = PQntuples(res) == 1 ? KEY_FOUND : KEY_UNKNOWN;
    if (e->found) {
        const char *bad = bad_field(res);

        if (bad
            || copy_field(e->project, sizeof(e->project),
                          PQgetvalue(res, 0, 0)) != APR_SUCCESS
            || copy_field(e->role, sizeof(e->role),
                          PQgetvalue(res, 0, 1)) != APR_SUCCESS
            || copy_field(e->org, sizeof(e->org),
                          PQgetvalue(res, 0, 2)) != APR_SUCCESS
            || copy_field(e->plan, sizeof(e->plan),
                          PQgetvalue(res, 0, 3)) != APR_SUCCESS
            || row_expiry(res, &e->key_expires) != APR_SUCCESS
            || copy_field(e->scopes, sizeof(e->scopes),
                          PQgetvalue(res, 0, 5)) != APR_SUCCESS) {
            /* A server-side fault, logged once per cache TTL and child
             * (the row is cached as bad); the client gets the answer of
             * an unusable key.  The value is not logged: it may hold the
             * very control characters that make it unusable. */
            ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(00301)
                          "key store row of API key %s refused: its %s is "
                          "not a valid identity (ids: 1 to %d of "
                          "[A-Za-z0-9._-]; plan: 1 to %d printable bytes)",
                          e->actor, bad ? bad : "value", AURA_ID_MAX,
                          AURA_PLAN_MAX);
            memset(e->project, 0, sizeof(e->project));
            memset(e->org, 0, sizeof(e->org));
            e->found = KEY_BAD_ROW;
        }
        else {
            e->has_scopes = !PQgetisnull(res, 0, 5);
        }
    }
    return APR_SUCCESS;
}

apr_interval_time_t aura_keystore_stale_max(void)
{
    return cache_stale;
}

/* Second of the last "serving stale" line of this child. */
static volatile apr_uint32_t last_stale_logged;
#define STALE_LOG_INTERVAL 60

/* The store failed with rv: the expired entry of tag, if it is no more
 * than AuraKeyCacheStaleMax past its TTL.  Logged once a minute per
 * child, so an operator sees that answers rest on old entries. */
static int stale_get(request_rec *r, const apr_uint64_t tag[2],
                     apr_time_t now, apr_status_t rv, key_slot_t *out)
{
    apr_uint32_t sec = (apr_uint32_t)apr_time_sec(now);
    apr_uint32_t last;

    if (cache_stale == 0 || !cache_get(tag, now, cache_stale, out)) {
        return 0;
    }
    last = apr_atomic_read32(&last_stale_logged);
    if ((last == 0 || sec - last >= STALE_LOG_INTERVAL)
        && apr_atomic_cas32(&last_stale_logged, sec, last) == last) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r, AURA_LOGNO(01205)
                      "key store unavailable: serving cached API keys past "
                      "their AuraKeyCacheTTL, each for at most "
                      "AuraKeyCacheStaleMax (%" APR_TIME_T_FMT " s) more "
                      "(logged once a minute per child)",
                      apr_time_sec(cache_stale));
    }
    return 1;
}

/* The key r is admitted with, should r become a stream that must end
 * with it (aura_streamend.c).  The last key looked up for r wins: the
 * data plane's door looks up the query's other keys (to refuse a
 * service_role one) before the key it admits the request with. */
static void remember_key(request_rec *r, const key_slot_t *e,
                         const aura_key_identity_t *id)
{
    aura_request_private_t *p = aura_request_private(r);

    if (!p) {
        return;
    }
    memcpy(p->cred.key_hash, e->hash, sizeof(p->cred.key_hash));
    p->cred.key_actor = id->actor;
    p->cred.key_project = id->project;
    p->cred.key_expires = e->key_expires;
}

apr_status_t aura_keystore_recheck(server_rec *s, apr_pool_t *p,
                                   const char *hash, apr_time_t *expires)
{
    const char *params[1] = { hash };
    struct pg_result *res;
    apr_status_t rv = aura_db_query_bg(s, p, AURA_DB_KEY_LOOKUP, params,
                                       &res);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (PQntuples(res) != 1) {
        return APR_NOTFOUND;
    }
    return row_expiry(res, expires);
}

static apr_status_t key_lookup(request_rec *r, const char *key,
                               aura_key_identity_t *id)
{
    key_slot_t e;
    apr_uint64_t tag[2];
    apr_time_t now = apr_time_now();
    apr_status_t rv;

    tag_of(key, tag);
    if (cache_get(tag, now, 0, &e)) {
        aura_count(AURA_CTR_KEY_HITS);
    }
    else {
        char hash[65];

        aura_count(AURA_CTR_KEY_MISSES);
        memset(&e, 0, sizeof(e));
        e.tag[0] = tag[0];
        e.tag[1] = tag[1];
        /* Hashed once: the database, the actor and the last-used flush
         * use it. */
        aura_apikey_hash(key, hash);
        memcpy(e.hash, hash, sizeof(e.hash));
        apr_snprintf(e.actor, sizeof(e.actor), "%s%.*s",
                     AURA_KEY_ACTOR_PREFIX, AURA_KEY_ACTOR_HEX, hash);
        rv = lookup_db(r, hash, &e);
        if (rv != APR_SUCCESS) {
            /* The clock read after the store's wait: staleness is
             * judged when the answer is given. */
            if (!stale_get(r, tag, apr_time_now(), rv, &e)) {
                id->actor = apr_pstrdup(r->pool, e.actor);
                return rv;
            }
        }
        else {
            e.expires = now + cache_ttl;
            e.used = track_used && e.found == KEY_FOUND
                     && !aura_key_expired(e.key_expires, apr_time_now());
            cache_put(&e);
        }
    }
    id->actor = apr_pstrdup(r->pool, e.actor);
    if (e.found == KEY_UNKNOWN) {
        return APR_NOTFOUND;
    }
    if (e.found == KEY_BAD_ROW) {
        return APR_EINVAL;
    }
    id->project = apr_pstrdup(r->pool, e.project);
    id->org = apr_pstrdup(r->pool, e.org);
    id->plan = apr_pstrdup(r->pool, e.plan);
    id->key_role = apr_pstrdup(r->pool, e.role);
    id->expires_at = e.key_expires;
    id->scopes = e.has_scopes ? apr_pstrdup(r->pool, e.scopes) : NULL;
    remember_key(r, &e, id);
    /* The clock now, after any wait for the store: a key is over at its
     * expiry whatever path answered. */
    if (aura_key_expired(e.key_expires, apr_time_now())) {
        return AURA_KEY_EXPIRED;
    }
    return APR_SUCCESS;
}

/* Drops every cached lookup of a project's keys: called on the NATS
 * thread when an invalidation arrives (the lock, an O(size) scan, no
 * I/O), so a rotated key stops working on every child at once; the TTL
 * is only the backstop. */
static void invalidate_project(const char *project)
{
    apr_uint32_t i;
    int dropped = 0;

    if (!slots || !slots_mutex || !project || !*project) {
        return;
    }
    apr_thread_mutex_lock(slots_mutex);
    for (i = 0; i <= slot_mask; i++) {
        if (slots[i].expires && !strcmp(slots[i].project, project)) {
            slots[i].expires = 0;
            dropped++;
        }
    }
    apr_thread_mutex_unlock(slots_mutex);
    (void)dropped;
}

/* After aura-control answered a key rotation (AuraKeyRotation On) with
 * 2xx, tell every child of every gateway instance; the filter runs when
 * the response headers are final, before the client sees them. */
static ap_filter_rec_t *rotation_filter;

static apr_status_t rotation_out_filter(ap_filter_t *f,
                                        apr_bucket_brigade *bb)
{
    request_rec *r = f->r;
    aura_request_t *rq = aura_request_get(r);

    if (rq && rq->project && r->status >= 200 && r->status < 300) {
        aura_nats_publish_invalidation(r, rq->project);
    }
    ap_remove_output_filter(f);
    return ap_pass_brigade(f->next, bb);
}

void aura_keystore_register(void)
{
    aura_nats_on_invalidation(invalidate_project);
    rotation_filter = ap_register_output_filter("AURA_KEY_ROTATION",
                                                rotation_out_filter, NULL,
                                                AP_FTYPE_CONTENT_SET);
}

/* Whether a request rotates keys is the management plane's policy
 * (AuraKeyRotation, mod_aura_mgmt); the broadcast is the mechanism. */
AURA_DECLARE(void) aura_keys_rotation_watch(request_rec *r)
{
    if (aura_request_get(r)) {
        ap_add_output_filter_handle(rotation_filter, NULL, r, r->connection);
    }
}

/* The lookup as the server span's child "aura.key.lookup": an error
 * when the store could not answer (a key not found is an answer). */
AURA_DECLARE(apr_status_t) aura_key_lookup(request_rec *r, const char *key,
                                           aura_key_identity_t *id)
{
    int span = aura_tracing_stage(r, "aura.key.lookup");
    apr_status_t rv = key_lookup(r, key, id);

    if (rv == APR_SUCCESS || rv == APR_NOTFOUND || rv == AURA_KEY_EXPIRED) {
        aura_tracing_end(r, span, AURA_SPAN_UNSET, NULL);
    }
    else {
        aura_tracing_end(r, span, AURA_SPAN_ERROR, "store-unavailable");
    }
    return rv;
}
