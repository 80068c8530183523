/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_shm.c: the one shared-memory segment of mod_aura (breakers,
 * limiters and metrics live in it as later tables), and the one global
 * mutex that guards slot allocation in those tables.
 *
 * Lifetime: the segment is created once, in the parent's post_config of
 * the real configuration pass, from s->process->pool (which outlives
 * every restart) and its handle is kept in retained data.  Each later
 * generation finds it there, so `apachectl -k graceful` keeps every
 * breaker and limiter (a reset would reopen every breaker and forgive
 * every abuser).  It is rebuilt only when its size or layout changed.
 * It is anonymous (mmap MAP_SHARED|MAP_ANONYMOUS on this platform):
 * children inherit it at fork, and nothing is left behind after stop.
 *
 * No pointers inside the segment: offsets and 1-based indexes only.
 * Counters change by atomic operations; the mutex (pconf lifetime,
 * re-opened in child_init) is for allocation and eviction only.
 */
#include "aura_private.h"

#include "http_core.h"
#include "util_mutex.h"
#include "mpm_common.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include <jansson.h>

#define AURA_SHM_MAGIC    0x41555241u /* "AURA" */
#define AURA_SHM_LAYOUT   8u
#define AURA_MUTEX_TYPE   "aura-shm"
#define AURA_RETAINED_KEY "mod_aura_common-shm"

/*
 * Layout (offsets from the base, all 8-byte aligned):
 *
 *   +-----------------------------+ 0
 *   | aura_shm_header_t           |  magic, layout, size, identity,
 *   |                             |  counters
 *   +-----------------------------+ JWKS_OFFSET = APR_ALIGN(header, 64)
 *   | aura_shm_jwks_t [16]        |  one JWKS document per VirtualHost
 *   |                             |  (version, last refresh, bytes)
 *   +-----------------------------+ LIMITER_OFFSET = APR_ALIGN(..., 64)
 *   | aura_limiter_slot_t         |  the rate limiters' GCRA table:
 *   |   [sets * 8]                |  AuraRateLimitEntries rounded up
 *   +-----------------------------+ targets_offset(sets)
 *   | aura_target_slot_t          |  breakers of dedicated PostgREST
 *   |   [targets]                 |  targets (AuraTargetBreakerEntries)
 *   +-----------------------------+ size
 *
 * The two tables' dimensions are the segment's geometry: a restart that
 * changes either rebuilds it (not its size alone: two geometries may
 * have the same size).
 */
struct aura_shm_header_t {
    apr_uint32_t magic;
    apr_uint32_t layout;
    apr_uint64_t size;
    apr_time_t created;              /* when this segment was built */
    unsigned char hash_key[16];      /* keyed hashing of attacker keys */
    char id[33];                     /* hex of 16 random bytes */
    char pad[7];
    volatile apr_uint64_t configs;   /* configuration passes seen */
    apr_uint64_t limiter_sets;       /* sets of the limiter table */
    apr_uint64_t target_slots;       /* slots of the target table */
    volatile apr_uint64_t counters[AURA_CTR_COUNT];
    volatile apr_uint64_t breakers[AURA_BREAKERS];
    volatile apr_uint64_t flags[AURA_FLAG_COUNT];
    volatile apr_uint64_t requests[AURA_PLANES][AURA_SVC_COUNT + 1]
                                  [AURA_STATUS_CLASSES];
    volatile apr_uint64_t latency[AURA_PLANES][AURA_LATENCY_BUCKETS];
    volatile apr_uint64_t latency_sum_us[AURA_PLANES];
};

_Static_assert(sizeof(apr_uint64_t) == 8 && __atomic_always_lock_free(8, 0),
               "shared counters need lock-free 64-bit atomics");

typedef struct {
    apr_uint64_t sets;               /* limiter table */
    apr_uint64_t targets;            /* target breaker table */
} geometry_t;

typedef struct {
    apr_shm_t *shm;
    apr_size_t size;
    apr_uint32_t layout;
    geometry_t geometry;
} aura_shm_retained_t;

/* Written in post_config (parent) and child_init only. */
static aura_shm_header_t *shm_base;
static apr_global_mutex_t *shm_mutex;

#define JWKS_OFFSET APR_ALIGN(sizeof(aura_shm_header_t), 64)
#define LIMITER_OFFSET \
    APR_ALIGN(JWKS_OFFSET + AURA_JWKS_SLOTS * sizeof(aura_shm_jwks_t), 64)

static apr_size_t targets_offset(apr_uint64_t sets)
{
    return APR_ALIGN(LIMITER_OFFSET + sets * AURA_LIMITER_WAYS
                     * sizeof(aura_limiter_slot_t), 64);
}

/* Names in aura_shm_describe(), indexed by aura_counter_e. */
static const char *const counter_names[AURA_CTR_COUNT] = {
    "requests", "key_cache_hits", "key_cache_misses", "jwt_verifications",
    "ip_rejected", "ip_table_full", "actor_rejected", "actor_redis",
    "actor_fallback", "redis_errors", "breaker_opened", "breaker_rejected",
    "nats_retries", "nats_no_responders", "nats_timeouts", "http_timeouts",
    "db_nats", "db_http", "db_unresolved", "targets_full",
    "breaker_half_opened", "breaker_closed", "actor_lease"
};

static geometry_t geometry_of(server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    geometry_t g;

    g.sets = aura_limiter_sets(c->limiter_entries != AURA_UNSET
                               ? (apr_uint64_t)c->limiter_entries
                               : AURA_DEFAULT_LIMITER_ENTRIES);
    /* A power of two: the slot is the hash's low bits. */
    for (g.targets = 16;
         g.targets < (apr_uint64_t)(c->target_entries != AURA_UNSET
                                    ? c->target_entries
                                    : AURA_DEFAULT_TARGET_ENTRIES);
         g.targets <<= 1) {
        continue;
    }
    return g;
}

static apr_size_t segment_size(const geometry_t *g)
{
    return APR_ALIGN(targets_offset(g->sets)
                     + g->targets * sizeof(aura_target_slot_t), 64);
}

aura_limiter_slot_t *aura_shm_limiter(apr_uint64_t *sets)
{
    if (!shm_base) {
        return NULL;
    }
    *sets = shm_base->limiter_sets;
    return (aura_limiter_slot_t *)((char *)shm_base + LIMITER_OFFSET);
}

aura_target_slot_t *aura_shm_targets(apr_uint64_t *n)
{
    if (!shm_base) {
        return NULL;
    }
    *n = shm_base->target_slots;
    return (aura_target_slot_t *)((char *)shm_base
                                  + targets_offset(shm_base->limiter_sets));
}

volatile apr_uint64_t *aura_shm_breaker(int i)
{
    return shm_base && i >= 0 && i < AURA_BREAKERS ? &shm_base->breakers[i]
                                                   : NULL;
}

volatile apr_uint64_t *aura_shm_flag(aura_flag_e f)
{
    return shm_base ? &shm_base->flags[f] : NULL;
}

const unsigned char *aura_shm_hash_key(void)
{
    return shm_base ? shm_base->hash_key : NULL;
}

/* Upper bounds of the latency buckets, in seconds (Prometheus' le). */
const double aura_latency_bounds[AURA_LATENCY_BUCKETS - 1] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
};

void aura_shm_record(aura_plane_e plane, int service, int status,
                     apr_interval_time_t duration)
{
    int p = plane == AURA_PLANE_MGMT ? 1 : 0;
    int svc = service >= 0 && service < AURA_SVC_COUNT ? service
                                                       : AURA_SVC_COUNT;
    int cls = status >= 100 && status < 600 ? status / 100 - 1 : 4;
    double secs = (double)duration / APR_USEC_PER_SEC;
    int b;

    if (!shm_base) {
        return;
    }
    for (b = 0; b < AURA_LATENCY_BUCKETS - 1
                && secs > aura_latency_bounds[b]; b++) {
        continue;
    }
    apr_atomic_inc64(&shm_base->requests[p][svc][cls]);
    apr_atomic_inc64(&shm_base->latency[p][b]);
    apr_atomic_add64(&shm_base->latency_sum_us[p],
                     duration > 0 ? (apr_uint64_t)duration : 0);
}

void aura_shm_traffic(aura_traffic_t *out)
{
    int p, i, j;

    memset(out, 0, sizeof(*out));
    if (!shm_base) {
        return;
    }
    for (p = 0; p < AURA_PLANES; p++) {
        for (i = 0; i <= AURA_SVC_COUNT; i++) {
            for (j = 0; j < AURA_STATUS_CLASSES; j++) {
                out->requests[p][i][j] =
                    apr_atomic_read64(&shm_base->requests[p][i][j]);
            }
        }
        for (i = 0; i < AURA_LATENCY_BUCKETS; i++) {
            out->latency[p][i] = apr_atomic_read64(&shm_base->latency[p][i]);
        }
        out->latency_sum_us[p] =
            apr_atomic_read64(&shm_base->latency_sum_us[p]);
    }
}

apr_uint64_t aura_shm_counter(aura_counter_e c)
{
    return shm_base ? apr_atomic_read64(&shm_base->counters[c]) : 0;
}

void aura_count(aura_counter_e c)
{
    if (shm_base) {
        apr_atomic_inc64(&shm_base->counters[c]);
    }
}

aura_shm_jwks_t *aura_shm_jwks(int slot)
{
    if (!shm_base || slot < 0 || slot >= AURA_JWKS_SLOTS) {
        return NULL;
    }
    return (aura_shm_jwks_t *)((char *)shm_base + JWKS_OFFSET) + slot;
}

apr_global_mutex_t *aura_shm_mutex(void)
{
    return shm_mutex;
}

apr_status_t aura_shm_pre_config(apr_pool_t *pconf)
{
    return ap_mutex_register(pconf, AURA_MUTEX_TYPE, NULL, APR_LOCK_DEFAULT,
                             0);
}

static apr_status_t build_segment(aura_shm_retained_t *ret, apr_size_t size,
                                  const geometry_t *g, server_rec *s)
{
    aura_shm_header_t *h;
    unsigned char rnd[16];
    apr_status_t rv;
    int i;

    rv = apr_shm_create(&ret->shm, size, NULL, s->process->pool);
    if (rv != APR_SUCCESS) {
        ret->shm = NULL;
        return rv;
    }
    h = apr_shm_baseaddr_get(ret->shm);
    memset(h, 0, size);
    h->magic = AURA_SHM_MAGIC;
    h->layout = AURA_SHM_LAYOUT;
    h->size = size;
    h->limiter_sets = g->sets;
    h->target_slots = g->targets;
    h->created = apr_time_now();
    rv = apr_generate_random_bytes(h->hash_key, sizeof(h->hash_key));
    if (rv == APR_SUCCESS) {
        rv = apr_generate_random_bytes(rnd, sizeof(rnd));
    }
    if (rv != APR_SUCCESS) {
        apr_shm_destroy(ret->shm);
        ret->shm = NULL;
        return rv;
    }
    for (i = 0; i < 16; i++) {
        apr_snprintf(h->id + 2 * i, 3, "%02x", rnd[i]);
    }
    ret->size = size;
    ret->layout = AURA_SHM_LAYOUT;
    ret->geometry = *g;
    return APR_SUCCESS;
}

apr_status_t aura_shm_post_config(apr_pool_t *pconf, server_rec *s)
{
    aura_shm_retained_t *ret;
    geometry_t g = geometry_of(s);
    apr_size_t size = segment_size(&g);
    apr_status_t rv;

    ret = ap_retained_data_get(AURA_RETAINED_KEY);
    if (!ret) {
        ret = ap_retained_data_create(AURA_RETAINED_KEY, sizeof(*ret));
    }
    if (ret->shm && (ret->size != size || ret->layout != AURA_SHM_LAYOUT
                     || memcmp(&ret->geometry, &g, sizeof(g)))) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, AURA_LOGNO(00002)
                     "shared segment rebuilt: size %" APR_SIZE_T_FMT
                     " -> %" APR_SIZE_T_FMT " bytes, layout %u -> %u "
                     "(breaker and limiter state starts afresh)",
                     ret->size, size, ret->layout, AURA_SHM_LAYOUT);
        /* Old children keep their own mapping until they exit. */
        apr_shm_destroy(ret->shm);
        ret->shm = NULL;
    }
    if (!ret->shm) {
        rv = build_segment(ret, size, &g, s);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s, AURA_LOGNO(00003)
                         "cannot create the shared segment of %"
                         APR_SIZE_T_FMT " bytes", size);
            return rv;
        }
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, AURA_LOGNO(00004)
                     "shared segment created: %" APR_SIZE_T_FMT " bytes",
                     size);
    }
    shm_base = apr_shm_baseaddr_get(ret->shm);
    apr_atomic_inc64(&shm_base->configs);

    rv = ap_global_mutex_create(&shm_mutex, NULL, AURA_MUTEX_TYPE, NULL, s,
                                pconf, 0);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s, AURA_LOGNO(00005)
                     "cannot create the %s mutex", AURA_MUTEX_TYPE);
        return rv;
    }
    return APR_SUCCESS;
}

apr_status_t aura_shm_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv;

    rv = apr_global_mutex_child_init(&shm_mutex,
                                     apr_global_mutex_lockfile(shm_mutex),
                                     pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, AURA_LOGNO(00006)
                     "cannot re-open the %s mutex in this child",
                     AURA_MUTEX_TYPE);
    }
    return rv;
}

aura_shm_header_t *aura_shm(void)
{
    return shm_base;
}

void aura_shm_describe(json_t *obj)
{
    int i;

    if (!shm_base) {
        return;
    }
    json_object_set_new(obj, "id", json_string(shm_base->id));
    json_object_set_new(obj, "size", json_integer((json_int_t)
                                                  shm_base->size));
    json_object_set_new(obj, "created",
                        json_integer((json_int_t)
                                     apr_time_sec(shm_base->created)));
    json_object_set_new(obj, "configs",
                        json_integer((json_int_t)
                                     apr_atomic_read64(&shm_base->configs)));
    json_object_set_new(obj, "target_entries",
                        json_integer((json_int_t)shm_base->target_slots));
    json_object_set_new(obj, "limiter_entries",
                        json_integer((json_int_t)(shm_base->limiter_sets
                                                  * AURA_LIMITER_WAYS)));
    for (i = 0; i < AURA_CTR_COUNT; i++) {
        json_object_set_new(obj, counter_names[i],
                            json_integer((json_int_t)apr_atomic_read64(
                                &shm_base->counters[i])));
    }
}
