/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_private.h: what the files of mod_aura_common share among
 * themselves and never export: config structs, the log tag macro,
 * internal functions.  Only aura.h is the plane modules' contract.
 */
#ifndef AURA_PRIVATE_H
#define AURA_PRIVATE_H

#include "aura.h"
#include "aura_gcra.h"
#include "aura_limiter.h"
#include "aura_breaker_fsm.h"
#include "aura_cap.h"
#include "aura_fallback.h"
#include "aura_conntable.h"

#include "http_log.h"
#include "apr_shm.h"
#include "apr_global_mutex.h"
#include "apr_hash.h"

APLOG_USE_MODULE(aura_common);
extern module AP_MODULE_DECLARE_DATA aura_common_module;

/* "Not set at this level" for numbers and times, so that merging can tell
 * an explicit value from an inherited default. */
#define AURA_UNSET (-1)

/* Defaults, applied by the getters so that UNSET survives every merge. */
#define AURA_DEFAULT_NATS_URL          "nats://127.0.0.1:4222"
#define AURA_DEFAULT_NATS_CONNECT      apr_time_from_sec(2)
#define AURA_DEFAULT_NATS_RECONNECT    apr_time_from_msec(250)
#define AURA_DEFAULT_NATS_PING         apr_time_from_sec(30)
#define AURA_DEFAULT_TIMEOUT           apr_time_from_sec(30)
#define AURA_DEFAULT_DB_POOL_MAX       8
#define AURA_DEFAULT_DB_TIMEOUT        apr_time_from_sec(2)
#define AURA_DEFAULT_KEY_CACHE_TTL     apr_time_from_sec(10)
#define AURA_DEFAULT_KEY_CACHE_STALE   apr_time_from_sec(300)
#define AURA_DEFAULT_KEY_CACHE_SIZE    4096
#define AURA_DEFAULT_KEY_INVALIDATION  "aura.keys.invalidate"
#define AURA_DEFAULT_CORS_METHODS \
    "GET, POST, PUT, PATCH, DELETE, OPTIONS"
#define AURA_DEFAULT_CORS_HEADERS \
    "apikey, x-api-key, authorization, content-type, x-request-id, " \
    "traceparent, tracestate, prefer, range, x-client-info, x-project-id"
#define AURA_DEFAULT_CORS_EXPOSE \
    "X-Request-Id, Retry-After, RateLimit, RateLimit-Policy, Content-Range"
#define AURA_DEFAULT_CORS_MAX_AGE      600

#define AURA_HANDLER_SERVICE "aura-service"
#define AURA_HANDLER_HEALTH  "aura-health"

/** The services of DESIGN.md section 1; indexes into aura_service_names. */
typedef enum {
    AURA_SVC_AUTH = 0,
    AURA_SVC_DB,
    AURA_SVC_STORAGE,
    AURA_SVC_FUNCTIONS,
    AURA_SVC_REALTIME,
    AURA_SVC_NOTIFICATIONS,
    AURA_SVC_AI,
    AURA_SVC_PROVISIONER,
    AURA_SVC_CONTROL,
    AURA_SVC_COUNT
} aura_service_e;

extern const char *const aura_service_names[AURA_SVC_COUNT];

typedef enum {
    AURA_UPSTREAM_NATS = 1,
    AURA_UPSTREAM_HTTP
} aura_upstream_kind_e;

typedef struct {
    int service;                  /* aura_service_e, AURA_UNSET */
    int upstream_kind;            /* aura_upstream_kind_e */
    const char *upstream;         /* NATS subject or http(s) URL */
    apr_interval_time_t timeout;  /* AuraTimeout, AURA_UNSET */
    int health_detail;            /* AuraHealthDetail, AURA_UNSET */
    int public_route;             /* AuraPublic, AURA_UNSET */
    int streaming;                /* AuraStreaming, AURA_UNSET */
    int scope;                    /* AuraScope (aura_scope_e), UNSET */
    int require_role;             /* AuraRequireRole (aura_role_e), UNSET */
    int key_rotation;             /* AuraKeyRotation, AURA_UNSET */
    apr_table_t *security_headers;/* AuraSecurityHeader: name -> value
                                     ("off" removes); NULL = unset */
    const struct aura_zone_t *zone;   /* AuraRateLimit; NULL = unset,
                                         &aura_zone_off = off */
    const struct aura_quota_t *quota; /* AuraActorQuota; NULL = unset,
                                         &aura_quota_off = off */
    apr_hash_t *plan_quotas;          /* AuraPlanQuota: plan -> quota */
    int retries;                      /* AuraRetries, AURA_UNSET */
    const char *location;             /* the <Location> prefix AuraService
                                         was set in; NULL for a regex */
    int db_router;                    /* AuraDBRouter, AURA_UNSET */
    /* Streaming Locations on the HTTP path, AURA_UNSET each: */
    apr_interval_time_t stream_idle;        /* AuraStreamIdleTimeout */
    apr_interval_time_t stream_first_byte;  /* AuraStreamFirstByteTimeout */
    apr_interval_time_t stream_max;         /* AuraStreamMaxDuration */
    const char *token_project_claim;  /* AuraTokenProjectClaim: a claim
                                         name or "off"; NULL = unset */
    /* NATS streamed replies: where acknowledgements may go. */
    const char *stream_ack_prefix;          /* AuraStreamAckPrefix */
    int abandon_check;                /* AuraAbandonCheck, AURA_UNSET (on) */
    int max_in_flight;                /* AuraServiceMaxInFlight (aura_cap.h
                                         encoding), AURA_UNSET */
} aura_dir_conf_t;

/* The access log's status of a request whose client went away before
 * its answer (nginx's "client closed request"; never sent). */
#define AURA_STATUS_CLIENT_GONE 499

/* A stage-1 zone (AuraRateLimitZone), as nginx's limit_req_zone: global,
 * named, picked by Locations.  Each zone has a table of its own in the
 * shared segment (entries=), so a flood that fills one zone's table
 * cannot push another zone into its fail-open state.  Tables are laid
 * out in name order, so reordering the zones keeps the segment. */
typedef struct aura_zone_t {
    const char *name;
    apr_uint64_t rate;          /* requests per period */
    apr_uint64_t period_s;      /* 1 (r/s) or 60 (r/m) */
    apr_uint64_t burst;
    aura_gcra_t gcra;
    const char *defined_at;     /* file:line, NULL for the built-in */
    apr_uint64_t entries;       /* entries=; 0: AuraRateLimitEntries */
    int table;                  /* its table in the segment, 1-based (0:
                                   none), set in post_config */
} aura_zone_t;

/* A stage-2 quota (AuraActorQuota, AuraPlanQuota). */
typedef struct aura_quota_t {
    apr_int64_t limit;          /* requests per window */
    apr_int64_t window_s;
} aura_quota_t;

extern const aura_zone_t aura_zone_off;
extern const aura_quota_t aura_quota_off;

#define AURA_DEFAULT_ZONE            "default"
#define AURA_DEFAULT_ZONE_RATE       100
#define AURA_DEFAULT_ZONE_BURST      1000
#define AURA_DEFAULT_LIMITER_ENTRIES 65536
#define AURA_MIN_LIMITER_ENTRIES     64
#define AURA_MAX_LIMITER_ENTRIES     (1 << 24)
#define AURA_MAX_ZONES               64        /* "default" included */
#define AURA_DEFAULT_IPV6_PREFIX     64

typedef struct {
    int plane;                             /* aura_plane_e, AURA_UNSET */
    apr_array_header_t *nats_servers;      /* const char *, NULL = unset */
    const char *nats_name;
    apr_interval_time_t nats_connect_timeout;
    apr_interval_time_t nats_reconnect_wait;
    int nats_max_reconnect;                /* -2 unset, -1 unlimited */
    apr_interval_time_t nats_ping_interval;
    const char *db_params;                 /* AuraDBParams (conninfo) */
    int db_pool_max;
    apr_interval_time_t db_timeout;
    apr_interval_time_t key_cache_ttl;
    apr_interval_time_t key_cache_stale;   /* AuraKeyCacheStaleMax */
    const char *key_invalidation_subject;  /* AuraKeyInvalidationSubject */
    int key_cache_size;
    apr_array_header_t *jwt_sources;       /* aura_jwt_source_t; NULL unset */
    unsigned int jwt_algs;                 /* 0 = unset */
    apr_interval_time_t jwt_leeway;
    const char *jwt_issuer;
    const char *jwt_audience;
    int jwt_max_len;
    apr_interval_time_t jwks_refresh;
    struct aura_jwt_state_t *jwt;          /* built in post_config */
    apr_array_header_t *cors_origins;      /* AuraCORSAllowOrigin */
    const char *cors_star_at;              /* file:line of a "*" in it */
    const char *cors_methods;
    const char *cors_headers;
    const char *cors_expose;
    int cors_max_age;
    /* Rate limits (aura_ratelimit.c).  Zones live in the config pool
     * (aura_zones()), not here: they are global. */
    int limiter_entries;                   /* AuraRateLimitEntries */
    int ipv6_prefix;                       /* AuraRateLimitIPv6Prefix */
    int instances;                         /* AuraInstances */
    /* Redis, for the actor quota (aura_redis.c); host NULL = no Redis. */
    const char *redis_host;                /* AuraRedisServer */
    int redis_port;
    int redis_db;
    apr_interval_time_t redis_timeout;     /* AuraRedisTimeout */
    apr_interval_time_t redis_retry;       /* AuraRedisRetryInterval */
    int redis_pool_max;                    /* AuraRedisPoolMax */
    apr_array_header_t *breakers;          /* AuraBreaker lines
                                              (aura_breaker_setting_t) */
    apr_interval_time_t target_sweep;      /* AuraTargetSweepInterval */
    int target_entries;                    /* AuraTargetBreakerEntries */
    const char *metrics_token;             /* AuraMetricsTokenFile's */
    int jwt_aud_any;                       /* AuraJWTAudienceMatch any: 1,
                                              all: 0, AURA_UNSET */
    int plane_max_in_flight;               /* AuraPlaneMaxInFlight
                                              (aura_cap.h), AURA_UNSET */
    /* Connections per address (aura_connlimit.c), read from the
     * listener's VirtualHost (c->base_server). */
    int max_conns;                         /* AuraMaxConnectionsPerAddress:
                                              n, 0 = off, AURA_CONN_AUTO,
                                              AURA_UNSET */
    int max_reading;                       /* AuraMaxReadingConnections,
                                              as max_conns */
    apr_array_header_t *conn_exempt;       /* AuraConnectionLimitExempt
                                              (apr_ipsubnet_t *); NULL
                                              unset */
} aura_server_conf_t;

/* AuraMaxConnectionsPerAddress auto: a third of MaxRequestWorkers (at
 * least 2), so that one address can hold at most a third of the workers
 * through one listener, and a third stays free even when it holds both
 * planes' listeners.  The default on a plane's VirtualHost; off on
 * others (loading mod_aura_common changes nothing for them). */
#define AURA_CONN_AUTO     (-2)
#define AURA_CONN_MAX      1000000

/* One AuraBreaker line; 0 = not set by this line. */
typedef struct {
    int service;                /* aura_service_e, -1 for "*",
                                   AURA_SVC_COUNT for "postgrest" (the
                                   dedicated targets),
                                   AURA_BREAKER_SETTING_STORE for
                                   "store" (the key store) */
    apr_uint32_t threshold;
    apr_uint32_t cooldown_ms;
    apr_uint32_t probes;
    apr_uint32_t probe_ttl_ms;
} aura_breaker_setting_t;
#define AURA_BREAKER_SETTING_STORE (AURA_SVC_COUNT + 1)

#define AURA_DEFAULT_BREAKER_THRESHOLD    5
#define AURA_DEFAULT_BREAKER_COOLDOWN_MS  30000
#define AURA_DEFAULT_BREAKER_PROBES       1
/* Longer than the longest budget of the sample (functions, 380 s). */
#define AURA_DEFAULT_BREAKER_PROBE_TTL_MS 400000
#define AURA_DEFAULT_RETRIES              2
#define AURA_DEFAULT_TARGET_SWEEP         apr_time_from_sec(60)
/* Retries may be at most this share of the requests waiting on an
 * upstream, across all children, but always this many (Envoy's retry
 * budget: 20 %, at least 3). */
#define AURA_RETRY_BUDGET_PERCENT         20
#define AURA_RETRY_BUDGET_MIN             3

/* One AuraJWTKeyFile / AuraJWTSecretFile, read at config time. */
typedef enum {
    AURA_JWT_SRC_JWKS = 1,   /* a JWKS document: refreshed on unknown kid */
    AURA_JWT_SRC_PEM,        /* an SPKI public key or a certificate */
    AURA_JWT_SRC_SECRET,     /* an HS256 secret */
    AURA_JWT_SRC_NATS        /* a JWKS fetched from a NATS subject (the
                                identity service), on first use and on
                                unknown kid */
} aura_jwt_src_kind_e;

typedef struct {
    aura_jwt_src_kind_e kind;
    const char *path;        /* file, or NATS subject for _NATS */
    const char *kid;
    const char *data;        /* the file as read at config time */
    apr_size_t len;
} aura_jwt_source_t;

#define AURA_DEFAULT_JWT_ALGS       "RS256 ES256"
/* The claim a data-plane user token names its project in
 * (AuraTokenProjectClaim). */
#define AURA_DEFAULT_TOKEN_PROJECT_CLAIM "aura_project"
#define AURA_DEFAULT_JWT_LEEWAY     apr_time_from_sec(60)
#define AURA_DEFAULT_JWKS_REFRESH   apr_time_from_sec(30)

/* Management plane: where a request names what it concerns. */
typedef enum {
    AURA_SCOPE_PROJECT_HEADER = 0,   /* X-Project-Id (shared routes) */
    AURA_SCOPE_PROJECT_PATH,         /* /v1/projects/{project}/... */
    AURA_SCOPE_ORG_PATH              /* /v1/orgs/{org}/... */
} aura_scope_e;

/* Organization roles, in rank order. */
typedef enum {
    AURA_ROLE_MEMBER = 1,
    AURA_ROLE_ADMIN,
    AURA_ROLE_OWNER
} aura_role_e;

#define AURA_CONSOLE_AUDIENCE "aurabase-control"

/* Postgres statements (aura_db.c). */
typedef enum {
    AURA_DB_KEY_LOOKUP = 0,
    AURA_DB_PROJECT_ROLE,
    AURA_DB_ORG_ROLE,
    AURA_DB_PROJECT_TOPOLOGY,
    AURA_DB_STMT_COUNT
} aura_db_stmt_e;

/* A key's actor: this prefix and the first 16 hex digits of the key's
 * SHA-256, never the key. */
#define AURA_KEY_ACTOR_PREFIX "key:"
#define AURA_KEY_ACTOR_HEX 16

/* What the key store says about a key. */
typedef struct {
    const char *project;
    const char *org;
    const char *plan;
    const char *key_role;
    const char *actor;      /**< set whatever the answer, for the logs */
} aura_key_identity_t;

#define AURA_NATS_RECONNECT_UNSET (-2)

#define AURA_DEFAULT_REDIS_TIMEOUT   apr_time_from_msec(100)
#define AURA_DEFAULT_REDIS_RETRY     apr_time_from_sec(1)
#define AURA_DEFAULT_REDIS_POOL_MAX  8

/* aura_redis.c: the per-child Redis pool and the sliding-window script
 * of the actor quota (DESIGN.md section 8). */
typedef struct {
    int admitted;
    apr_int64_t granted;        /* requests admitted and counted (lease) */
    apr_int64_t limit;          /* the limit the script applied */
    apr_int64_t remaining;      /* requests left in the window (>= 0) */
    apr_int64_t reset_ms;       /* ms until the current window ends */
    apr_int64_t retry_after_ms; /* refused: ms until one would pass */
    apr_int64_t count;          /* Redis: the window's count after this */
    apr_uint64_t window;        /* Redis: the window's number */
} aura_quota_result_t;
/* Local admissions handed over to Redis (aura_fallback.h): count
 * requests of window number window, where the instance had last seen
 * Redis count seen; instances is AuraInstances. */
typedef struct {
    apr_int64_t count;
    apr_uint64_t window;
    apr_int64_t seen;
    apr_int64_t instances;
} aura_quota_handover_t;
void aura_redis_child_init(apr_pool_t *pchild, server_rec *s);
int aura_redis_configured(void);
apr_interval_time_t aura_redis_call_max(void);
/* One check-and-count of key against limit per window_ms, for up to
 * want requests at once, after the hand-over h (NULL: none).
 * APR_SUCCESS with *out filled, or an error
 * status (connect, timeout, bad reply): the caller then falls back and
 * feeds the Redis breaker. */
apr_status_t aura_redis_quota(request_rec *r, const char *key,
                              apr_int64_t limit, apr_int64_t window_ms,
                              apr_int64_t want,
                              const aura_quota_handover_t *h,
                              aura_quota_result_t *out);

/* aura_config.c */
extern const command_rec aura_cmds[];
void *aura_create_server_conf(apr_pool_t *p, server_rec *s);
void *aura_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
void *aura_create_dir_conf(apr_pool_t *p, char *dir);
void *aura_merge_dir_conf(apr_pool_t *p, void *basev, void *addv);
int aura_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                      apr_pool_t *ptemp, server_rec *s);
aura_dir_conf_t *aura_dir_conf(request_rec *r);
aura_server_conf_t *aura_server_conf(const server_rec *s);
apr_interval_time_t aura_route_timeout(const aura_dir_conf_t *d);
/* Argument parsers the directive handlers of every file share. */
const char *aura_parse_duration(cmd_parms *cmd, const char *arg,
                                apr_interval_time_t min,
                                apr_interval_time_t max,
                                apr_interval_time_t *out);
const char *aura_parse_int(cmd_parms *cmd, const char *arg, int min,
                           int max, int *out);
const char *aura_global_only(cmd_parms *cmd);
aura_server_conf_t *aura_cmd_server_conf(cmd_parms *cmd);

/* aura_limitconf.c: the rate-limit and Redis directives. */
apr_array_header_t *aura_zones(apr_pool_t *pconf);
const char *aura_set_rate_limit_zone(cmd_parms *cmd, void *dummy,
                                     const char *args);
const char *aura_set_rate_limit(cmd_parms *cmd, void *dirv,
                                const char *arg);
const char *aura_set_actor_quota(cmd_parms *cmd, void *dirv,
                                 const char *limit, const char *window);
const char *aura_set_plan_quota(cmd_parms *cmd, void *dirv,
                                const char *plan, const char *limit,
                                const char *window);
const char *aura_set_limit_int(cmd_parms *cmd, void *dummy,
                               const char *arg);
const char *aura_set_redis_server(cmd_parms *cmd, void *dummy,
                                  const char *arg);
const char *aura_set_redis_time(cmd_parms *cmd, void *dummy,
                                const char *arg);

/* aura_shm.c: the one segment that outlives graceful restarts. */
typedef struct aura_shm_header_t aura_shm_header_t;
apr_status_t aura_shm_pre_config(apr_pool_t *pconf);
int aura_shm_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *s);
apr_status_t aura_shm_post_config(apr_pool_t *pconf, apr_pool_t *ptemp,
                                  server_rec *s);
/* Walk the table directory and every table: NULL, or what is wrong. */
const char *aura_shm_validate(apr_pool_t *p);
apr_status_t aura_shm_child_init(apr_pool_t *pchild, server_rec *s);
aura_shm_header_t *aura_shm(void);

/* Counters summed across children (metrics, /health detail, tests). */
typedef enum {
    AURA_CTR_REQUESTS = 0,     /* requests claimed by a plane */
    AURA_CTR_KEY_HITS,         /* API key found in the child's cache */
    AURA_CTR_KEY_MISSES,       /* API key looked up in Postgres */
    AURA_CTR_JWT_VERIFY,       /* bearer token signatures checked */
    AURA_CTR_IP_REJECTED,      /* 429 from stage 1 */
    AURA_CTR_IP_TABLE_FULL,    /* admitted: no slot in the table */
    AURA_CTR_ACTOR_REJECTED,   /* 429 from stage 2 */
    AURA_CTR_ACTOR_REDIS,      /* stage 2 decided by Redis */
    AURA_CTR_ACTOR_FALLBACK,   /* stage 2 decided by the local share */
    AURA_CTR_REDIS_ERRORS,     /* failed Redis calls */
    AURA_CTR_BREAKER_OPENED,   /* a service breaker opened */
    AURA_CTR_BREAKER_REJECTED, /* 503 breaker-open */
    AURA_CTR_NATS_RETRIES,     /* requests sent again after no responders */
    AURA_CTR_NATS_NO_RESPONDERS, /* no responders, retries spent */
    AURA_CTR_NATS_TIMEOUTS,    /* route budget spent waiting for a reply */
    AURA_CTR_HTTP_TIMEOUTS,    /* route budget spent on an HTTP upstream */
    AURA_CTR_DB_NATS,          /* /v1/db requests routed to aura-db */
    AURA_CTR_DB_HTTP,          /* /v1/db requests sent to a PostgREST */
    AURA_CTR_DB_UNRESOLVED,    /* /v1/db requests refused: no target */
    AURA_CTR_TARGETS_FULL,     /* a target went without a breaker */
    AURA_CTR_BREAKER_HALF_OPENED, /* a breaker let its first probe out */
    AURA_CTR_BREAKER_CLOSED,   /* a probe's success closed a breaker */
    AURA_CTR_ACTOR_LEASE,      /* stage 2 decided from a child's lease */
    AURA_CTR_STREAM_ACK_REFUSED, /* streams aborted: ack subject refused */
    AURA_CTR_BREAKER_PROBE_RECOVERED, /* a probe lost with its holder
                                         (dead, or past its deadline)
                                         taken over */
    AURA_CTR_CONN_REFUSED,     /* connections closed: address at its cap */
    AURA_CTR_CONN_TABLE_FULL,  /* connections admitted uncounted */
    AURA_CTR_CONN_RECLAIMED,   /* counted out for a child that died */
    AURA_CTR_CONN_BUSY,        /* closed: listener's readers at its cap */
    AURA_CTR_GONE_BEFORE_SEND, /* client gone before its request was sent */
    AURA_CTR_GONE_WAITING,     /* client gone while its reply was awaited */
    AURA_CTR_LATE_REPLIES,     /* replies dropped: their request was gone */
    AURA_CTR_COUNT
} aura_counter_e;
void aura_count(aura_counter_e c);

/* Requests by plane, service and status class, and a latency histogram
 * per plane (aura_metrics.c reads them, aura_accesslog.c records). */
#define AURA_PLANES          2                  /* data, management */
#define AURA_STATUS_CLASSES  5                  /* 1xx .. 5xx */
#define AURA_LATENCY_BUCKETS 12                 /* the last is +Inf */
extern const double aura_latency_bounds[AURA_LATENCY_BUCKETS - 1];
void aura_shm_record(aura_plane_e plane, int service, int status,
                     apr_interval_time_t duration);
typedef struct {
    apr_uint64_t requests[AURA_PLANES][AURA_SVC_COUNT + 1]
                         [AURA_STATUS_CLASSES];
    apr_uint64_t latency[AURA_PLANES][AURA_LATENCY_BUCKETS];
    apr_uint64_t latency_sum_us[AURA_PLANES];
} aura_traffic_t;
/* A consistent-enough copy of the traffic tables (each word atomic). */
void aura_shm_traffic(aura_traffic_t *out);
apr_uint64_t aura_shm_counter(aura_counter_e c);

/* Circuit breaker words (aura_breaker.h), one per protected upstream. */
#define AURA_BREAKER_REDIS 0
#define AURA_BREAKERS      16
/* The key store's (aura_db.c): the last slot, clear of the services'
 * 1 + aura_service_e (aura_db.c checks it at compile time). */
#define AURA_BREAKER_STORE (AURA_BREAKERS - 1)
volatile apr_uint64_t *aura_shm_breaker(int i);
/* Its AURA_BRK_HOLDERS probe holder records (aura_breaker_fsm.h). */
volatile apr_uint64_t *aura_shm_breaker_holders(int i);

/* Shared flags and timestamps for log-once decisions. */
typedef enum {
    AURA_FLAG_REDIS_DOWN = 0,  /* 1 while the quota runs on the fallback */
    AURA_FLAG_ACTIVE,          /* requests waiting on an upstream now */
    AURA_FLAG_RETRYING,        /* of which retries */
    AURA_FLAG_TARGETS_LOGGED,  /* second of the last "targets full" line */
    AURA_FLAG_CONNS_LOGGED,    /* second of the last "connections full" */
    AURA_FLAG_COUNT
} aura_flag_e;
volatile apr_uint64_t *aura_shm_flag(aura_flag_e f);

/* The breakers of dedicated PostgREST targets (aura_breaker.c). */
#define AURA_DEFAULT_TARGET_ENTRIES 1024
typedef struct {
    volatile apr_uint64_t key;   /* keyed hash of the target; 0: free */
    volatile apr_uint64_t word;  /* its breaker (aura_breaker_fsm.h) */
    volatile apr_uint64_t used;  /* ms clock of its last request */
    /* who holds its half-open probes (aura_breaker_fsm.h) */
    volatile apr_uint64_t holders[AURA_BRK_HOLDERS];
    char name[104];              /* the target, for /health (truncated) */
} aura_target_slot_t;
aura_target_slot_t *aura_shm_targets(apr_uint64_t *n);
/* The connection table (its sets), and journal i of n with its number
 * of records; NULL when there is no segment (or no such journal). */
aura_conn_slot_t *aura_shm_conns(apr_uint64_t *sets);
aura_conn_journal_t *aura_shm_journal(apr_uint64_t i, apr_uint32_t *records,
                                      apr_uint64_t *n);
/* Walk the target table (n slots): NULL, or what is wrong. */
const char *aura_breaker_validate_targets(aura_target_slot_t *t,
                                          apr_uint64_t n, apr_pool_t *p);

/* The rate-limit tables: one per zone, one for the actor quota's local
 * fallback.  The directory of the segment has one record per table
 * (fixed size, offsets from the base, no pointers); only aura_shm.c
 * lays them out, aura_ratelimit.c and aura_quota.c count into them. */
#define AURA_TABLE_NAME  40          /* a zone name (32) and its NUL */
#define AURA_TABLE_ACTOR 1           /* the actor fallback's table */
typedef struct {
    char name[AURA_TABLE_NAME];      /* the zone; "" for the actor table */
    apr_uint64_t offset;             /* of its slots from the base */
    apr_uint64_t sets;               /* a power of two, 8 slots each */
    volatile apr_uint64_t full;      /* admitted for want of a slot */
    volatile apr_uint64_t rejected;  /* refused (429) */
    volatile apr_uint64_t full_logged; /* second of its last "full" line */
} aura_shm_table_t;
/* Table n (1-based), its slots and sets; NULL when there is none.  The
 * slots of table AURA_TABLE_ACTOR are records of aura_fallback.h: take
 * them with aura_shm_actor_table(), never as limiter slots. */
aura_shm_table_t *aura_shm_table(int n, aura_limiter_slot_t **slots,
                                 apr_uint64_t *sets);
aura_shm_table_t *aura_shm_actor_table(aura_fallback_slot_t **slots,
                                       apr_uint64_t *sets);
/* The table of a zone name (1-based), 0 when it has none. */
int aura_shm_zone_table(const char *name);
const unsigned char *aura_shm_hash_key(void);
/** Fill a JSON object with the segment's identity and counters. */
struct json_t;
/* walk: also walk every table (slots used, aura_shm_validate()). */
void aura_shm_describe(struct json_t *obj, int walk, apr_pool_t *p);

/* aura_nats.c: the per-child connection. */
struct __natsConnection;
struct __natsMsg;
void aura_nats_child_init(apr_pool_t *pchild, server_rec *s);
struct __natsConnection *aura_nats_conn(void);
apr_int64_t aura_nats_max_payload(void);
const char *aura_nats_state(void);
/* natsMsg_Destroy() for the request path: small messages are freed in
 * batches (one wake of nats.c's freeing thread per batch). */
void aura_nats_msg_release(struct __natsMsg *m);
/* The same as a pool cleanup: a message that lives as long as a pool. */
apr_status_t aura_nats_msg_cleanup(void *m);

/* aura_inbox.c: per-request reply inboxes on the child's one reply
 * subscription.  Statuses are natsStatus values. */
typedef struct aura_inbox_t aura_inbox_t;
int aura_inbox_child_init(struct __natsConnection *nc);
void aura_inbox_child_exit(void);
/* Wakes every waiting request (the connection was lost). */
void aura_inbox_wake_all(void);
/* An inbox that lives as long as p; NATS_OK, or why not. */
int aura_inbox_open(apr_pool_t *p, aura_inbox_t **inbox);
/* The reply subject that reaches the inbox. */
const char *aura_inbox_subject(const aura_inbox_t *inbox);
/* This child's reply inbox prefix ("_INBOX.<nuid>"), NULL before
 * child_init subscribed. */
const char *aura_inbox_prefix(void);
/* Next message on the inbox before deadline (wall clock).  NATS_OK
 * (*msg is the caller's to destroy), NATS_TIMEOUT, NATS_NO_RESPONDERS,
 * NATS_SLOW_CONSUMER (messages were dropped over its limits; once), or
 * NATS_CONNECTION_DISCONNECTED. */
int aura_inbox_next(aura_inbox_t *inbox, apr_time_t deadline,
                    struct __natsMsg **msg);
/* Messages dropped over the inbox's limits so far. */
apr_int64_t aura_inbox_dropped(aura_inbox_t *inbox);

/* aura_route.c */
apr_off_t aura_declared_length(request_rec *r);
int aura_map_to_storage(request_rec *r);
int aura_too_large(request_rec *r, apr_int64_t limit);

/* aura_db.c: the per-child Postgres pool. */
struct pg_result;
void aura_db_child_init(apr_pool_t *pchild, server_rec *s);
int aura_db_configured(void);
/* APR_SUCCESS; APR_ENOTIMPL without AuraDBParams; APR_EAGAIN when the
 * key store's breaker is open (nothing was tried); APR_TIMEUP when no
 * answer came within AuraDBTimeout (connect, wait or statement);
 * APR_EGENERAL when Postgres answered with an error. */
apr_status_t aura_db_query(request_rec *r, aura_db_stmt_e id,
                           const char *const *params,
                           struct pg_result **out);
/* The Retry-After of a 503 store-unavailable after aura_db_query()
 * failed for r: the breaker's cooldown left, else "1". */
const char *aura_db_retry_after(request_rec *r);

/* aura_keystore.c */
void aura_keystore_child_init(apr_pool_t *pchild, server_rec *s);
/* A well-formed key's identity: APR_NOTFOUND for an unknown or revoked
 * key, APR_EINVAL when its row holds a value that cannot be an identity
 * (an id longer than AURA_ID_MAX or outside [A-Za-z0-9._-], a plan that
 * is not printable: logged, refused whole, never truncated), another
 * error when the store cannot say.  id->actor is set in every case. */
apr_status_t aura_keystore_lookup(request_rec *r, const char *key,
                                  aura_key_identity_t *id);
void aura_keystore_invalidate_project(const char *project);
/* AuraKeyCacheStaleMax: how long past their TTL the store's cached
 * answers may be used while it cannot answer (0: never). */
apr_interval_time_t aura_keystore_stale_max(void);
void aura_keystore_register(void);
void aura_insert_rotation_filter(request_rec *r);
void aura_nats_publish_invalidation(request_rec *r, const char *project);

/* aura_jwks.c: JWT keys per VirtualHost, refreshed across children. */
const char *aura_jwks_read_source(cmd_parms *cmd, aura_jwt_source_t *src);
apr_status_t aura_jwks_post_config(apr_pool_t *pconf, server_rec *s);
void aura_jwks_child_init(apr_pool_t *pchild, server_rec *s);

/* aura_shm.c: the JWKS documents, one slot per VirtualHost. */
#define AURA_JWKS_SLOTS   16
#define AURA_JWKS_DOC_MAX 65536
typedef struct {
    volatile apr_uint64_t last_refresh;   /* apr_time_t of the last fetch */
    volatile apr_uint64_t version;        /* 0: the config-time document */
    apr_uint32_t len;
    char doc[AURA_JWKS_DOC_MAX];
} aura_shm_jwks_t;
aura_shm_jwks_t *aura_shm_jwks(int slot);
apr_global_mutex_t *aura_shm_mutex(void);

/* aura_ratelimit.c: stage 1, and what both stages share. */
apr_status_t aura_ratelimit_post_config(apr_pool_t *pconf, server_rec *s);
apr_uint64_t aura_clock_ns(void);
apr_uint64_t aura_ceil_div(apr_uint64_t a, apr_uint64_t b);
/* Keyed hash (the segment's secret) of a stage tag, a name, bytes; 0
 * when tag, name and bytes exceed 512 bytes together (refused, never
 * cut: callers must not use 0 as a key). */
#define AURA_LIMITER_KEY_MAX 512
apr_uint64_t aura_limiter_key(const char *tag, const char *name,
                              const unsigned char *bytes, apr_size_t n);
/* Count and log (once a minute per table) a request admitted for want
 * of a slot in table n. */
void aura_limiter_full(request_rec *r, int n);
/* Sets header to "policy";k1=a;k2=b (draft-ietf-httpapi-ratelimit-headers). */
void aura_limit_header(request_rec *r, const char *name, const char *policy,
                       char k1, apr_uint64_t a, char k2, apr_uint64_t b);
/* The 429: Retry-After, RateLimit with r=0, the problem noted. */
int aura_limit_refuse(request_rec *r, const char *type, const char *policy,
                      apr_uint64_t retry_s, const char *why);

/* aura_breaker.c: per-service breakers in the shared segment. */
typedef struct aura_breaker_hold_t aura_breaker_hold_t;
apr_status_t aura_breaker_post_config(apr_pool_t *pconf, server_rec *s);
/* OK with *hold set (NULL: no breaker), or 503 breaker-open noted. */
int aura_breaker_enter(request_rec *r, int service,
                       aura_breaker_hold_t **hold);
/* The same for a dedicated PostgREST target's own breaker. */
int aura_breaker_enter_target(request_rec *r, const char *target,
                              aura_breaker_hold_t **hold);
/* The outcome; a hold without one is released by r->pool's cleanup. */
void aura_breaker_verdict(aura_breaker_hold_t *hold, int success);
/* The verdict of an HTTP status the upstream answered with. */
int aura_breaker_status_ok(int status);
/* Who asks for a probe (aura_breaker_fsm.h): this process, holding it
 * for at most budget plus a margin, dead when kill(pid, 0) says ESRCH;
 * for breakers used outside aura_breaker_enter() (the key store's). */
void aura_breaker_who(aura_breaker_who_t *who, apr_interval_time_t budget);
void aura_breaker_describe(struct json_t *obj);
const char *aura_set_breaker(cmd_parms *cmd, void *dummy, const char *args);
const char *aura_set_retries(cmd_parms *cmd, void *dirv, const char *arg);
const char *aura_set_target_sweep(cmd_parms *cmd, void *dummy,
                                  const char *arg);

/* aura_problem.c: the problem type a refusing stage noted (also read by
 * the access log's limit, breaker and problem fields). */
#define AURA_NOTE_PROBLEM_TYPE "aura-problem-type"

/* aura_httpproxy.c: the HTTP path through mod_proxy. */
#define AURA_NOTE_TARGET "aura-db-target"   /* a dedicated PostgREST */
int aura_http_claim(request_rec *r, const aura_dir_conf_t *d);
void aura_http_target(request_rec *r, const char *origin, const char *url,
                      apr_interval_time_t budget);
int aura_http_fixups(request_rec *r);
void aura_http_register(void);
void aura_http_insert_filter(request_rec *r);
/* Removes every header of the gateway's namespace (any spelling,
 * aura_envelope_own_header()) from t. */
void aura_unset_owned(apr_pool_t *p, apr_table_t *t);
/* Whether aura_auth_bearer() verified r's token (aura_jwks.c); the
 * forwarding paths drop Authorization from headers when it did not. */
int aura_bearer_verified(const request_rec *r);
void aura_forward_credentials(request_rec *r, apr_table_t *headers);

/* aura_dbrouter.c: /v1/db (AuraDBRouter On).  OK: nothing to do or
 * decided (the request may now be a proxy request); else an error
 * status with the problem noted. */
int aura_db_route(request_rec *r);
void aura_dbrouter_child_init(apr_pool_t *pchild, server_rec *s);
/* Remember that a Location has an HTTP upstream (check_config). */
void aura_set_service_seen(cmd_parms *cmd);

/* aura_quota.c: stage 2. */
apr_status_t aura_quota_post_config(apr_pool_t *pconf, server_rec *s);

/* aura_auth.c */
void aura_take_query_key(request_rec *r, aura_request_t *rq);

/* aura_headers.c: CORS and security headers on every response. */
void aura_headers_register(void);
void aura_insert_headers_filter(request_rec *r);
/* For an upgrade mod_proxy is about to forward: the upstream's 101,
 * which mod_proxy_http writes past every request filter, gets the
 * gateway's X-Request-Id and security headers. */
void aura_headers_arm_upgrade(request_rec *r);

/* aura_natsproxy.c */
int aura_natsproxy_handler(request_rec *r);

/* aura_gone.c: whether r's client has gone (closed or reset its
 * connection), looked at without reading a byte of it. */
int aura_client_gone(request_rec *r);
/* Marks r as abandoned at stage ("before-send" or "waiting"): logged,
 * counted, the connection marked aborted, status 499 and the problem
 * note client-gone for the access log.  Returns DONE: nothing is
 * answered, the worker is free at once. */
int aura_client_abandoned(request_rec *r, const char *stage,
                          const char *upstream);
/* Longest wait between two looks at the client. */
#define AURA_GONE_SLICE apr_time_from_msec(200)
/* aura_inbox_next() in slices of AURA_GONE_SLICE, giving up (NATS_TIMEOUT,
 * *gone set to 1) as soon as r's client is gone. */
int aura_inbox_next_unless_gone(request_rec *r, aura_inbox_t *inbox,
                                apr_time_t deadline,
                                struct __natsMsg **msg, int *gone);

/* ---- in-flight caps (aura_bulkhead.c) --------------------------------
 * Counters of the requests the whole instance has in flight to each
 * service and from each plane, in the shared segment, and one record
 * per child process of what it holds, so that the slots of a child that
 * died (SIGKILL, a crash) are given back by the parent. */
#define AURA_CAP_COUNTERS (AURA_SVC_COUNT + AURA_PLANES) /* services, then
                                                            planes */
/* "auto": percentages of the instance's workers (MaxRequestWorkers). */
#define AURA_CAP_AUTO_SERVICE_PCT 50
#define AURA_CAP_AUTO_DATA_PCT    70
#define AURA_CAP_AUTO_MGMT_PCT    20
typedef struct {
    volatile apr_uint64_t in_flight[AURA_CAP_COUNTERS];
    volatile apr_uint64_t refused[AURA_CAP_COUNTERS];  /* 503s, by the cap
                                                          that refused */
    volatile apr_uint64_t logged[AURA_CAP_COUNTERS];   /* second of the
                                                          last log line */
    volatile apr_uint64_t reclaimed;   /* slots given back for the dead */
    volatile apr_uint64_t unrecorded;  /* children that found no record */
    apr_uint64_t procs_offset;         /* of the process records */
    apr_uint64_t procs;                /* their number */
} aura_cap_shm_t;
/* One child's holdings.  owner: its pid, 0 free, with AURA_CAP_RECLAIM
 * set while a reclaim empties it. */
#define AURA_CAP_RECLAIM (APR_UINT64_C(1) << 62)
typedef struct {
    volatile apr_uint64_t owner;
    volatile apr_uint64_t held[AURA_CAP_COUNTERS];
} aura_cap_proc_t;
/* aura_shm.c: the counters, and the records (*n of them). */
aura_cap_shm_t *aura_shm_cap(aura_cap_proc_t **procs, apr_uint64_t *n);
typedef struct aura_cap_hold_t aura_cap_hold_t;
apr_status_t aura_cap_post_config(apr_pool_t *pconf, server_rec *s);
void aura_cap_child_init(apr_pool_t *pchild, server_rec *s);
void aura_cap_register(void);
/* Right before an upstream call: OK with *hold (NULL when no segment),
 * or 503 service-saturated noted with Retry-After. */
int aura_cap_enter(request_rec *r, int service, aura_cap_hold_t **hold);
/* Gives the slots back now (also done by r->pool's cleanup). */
void aura_cap_leave(aura_cap_hold_t *hold);
void aura_cap_describe(struct json_t *obj);
const char *aura_set_max_in_flight(cmd_parms *cmd, void *dirv,
                                   const char *arg);
const char *aura_set_plane_max_in_flight(cmd_parms *cmd, void *dummy,
                                         const char *arg);
void aura_cap_metrics(request_rec *r);
/* ---- end of in-flight caps ------------------------------------------- */

/* aura_problem.c */
void aura_problem_register(void);
void aura_insert_problem_filter(request_rec *r);

/* aura_reqid.c */
/* Draws the child's key of the request id and trace generator. */
void aura_reqid_child_init(void);
const char *aura_reqid_pick(request_rec *r);
/* Sets rq's trace id, traceparent and tracestate from r's headers. */
void aura_trace_begin(request_rec *r, aura_request_t *rq);

/* aura_accesslog.c: %{name}^au for mod_log_config, the traffic tables. */
void aura_accesslog_pre_config(apr_pool_t *pconf);
int aura_accesslog_check(apr_pool_t *ptemp);
int aura_log_transaction(request_rec *r);
/* aura_redact.c's rule on the request line and the unparsed URI. */
void aura_redact_request(request_rec *r);
/* The same on the query string, right before mod_log_config. */
int aura_redact_log_transaction(request_rec *r);

/* aura_metrics.c */
int aura_metrics_handler(request_rec *r);
const char *aura_set_metrics_token(cmd_parms *cmd, void *dummy,
                                   const char *path);

/* aura_connlimit.c: AuraMaxConnectionsPerAddress. */
void aura_connlimit_register(void);
apr_status_t aura_connlimit_post_config(apr_pool_t *pconf, server_rec *s);
void aura_connlimit_child_init(apr_pool_t *pchild, server_rec *s);
void aura_connlimit_describe(struct json_t *obj);
const char *aura_set_max_conns(cmd_parms *cmd, void *dummy, const char *arg);
const char *aura_set_conn_exempt(cmd_parms *cmd, void *dummy,
                                 const char *arg);
const char *aura_set_max_reading(cmd_parms *cmd, void *dummy,
                                 const char *arg);
/* The client address as key bytes: family, then the address (IPv4, an
 * IPv4-mapped IPv6 address as IPv4, IPv6 cut to v6_prefix bits); out
 * holds 17 bytes.  Returns the length. */
apr_size_t aura_address_bytes(const apr_sockaddr_t *sa, int v6_prefix,
                              unsigned char *out);

/* aura_health.c */
int aura_health_handler(request_rec *r);

/* ---- streamed NATS replies (aura_stream.c) ---------------------------
 * docs/envelope.md, "Streamed replies".  nats.c types by their struct
 * tags, as for the connection above; statuses are natsStatus values. */

/** What a reply's Aura-Stream header (any case) says. */
typedef enum {
    AURA_STREAM_NONE = 0,   /* no Aura-Stream: a plain reply */
    AURA_STREAM_BEGIN,
    AURA_STREAM_END,
    AURA_STREAM_INVALID     /* repeated, or another value */
} aura_stream_mark_e;

/* Classify m; *why says what is wrong for AURA_STREAM_INVALID. */
aura_stream_mark_e aura_stream_mark(struct __natsMsg *m, const char **why);
/* Relays a stream whose begin message r's status and headers came from
 * (already applied); body is the begin message's payload.  Returns OK
 * (an abort mid-body is logged, the connection closed). */
int aura_stream_relay(request_rec *r, aura_inbox_t *inbox,
                      struct __natsMsg *begin, const char *body,
                      apr_size_t body_len, const char *subject);
/* ---- end of streamed NATS replies ------------------------------------ */

#endif /* AURA_PRIVATE_H */
