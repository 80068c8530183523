/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_config.h: mod_aura_common's configuration: the per-server and per-dir
 * structs, the defaults the getters apply, the argument parsers the
 * directive handlers of every concern share.
 */
#ifndef AURA_CONFIG_H
#define AURA_CONFIG_H

#include "aura.h"
#include "apr_hash.h"
#include "apr_tables.h"
#include "limit/aura_limit.h"

/* "Not set at this level" for numbers and times, so that merging can tell
 * an explicit value from an inherited default. */
#define AURA_UNSET (-1)

/* Each concern's defaults sit next to its getters, in the concern's
 * *_conf.h (e.g. nats/aura_nats_conf.h): a reader finds a field's
 * directive, default and getter together, and no use site writes
 * "x != AURA_UNSET ? x : default". */

/* A Location's upstream budget (AuraTimeout). */
#define AURA_DEFAULT_TIMEOUT           apr_time_from_sec(30)

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

/* The security headers (AuraSecurityHeader; aura_headers_conf.c): the
 * four set by default, then Strict-Transport-Security. */
#define AURA_SECURITY_HEADERS 5
extern const char *const aura_security_header_names[AURA_SECURITY_HEADERS];
/* The value of a security header turned off (compared by address). */
extern const char aura_security_off[];

/* An http(s) upstream as the HTTP path uses it, put together once when
 * AuraService is read (aura_route_conf.c), so that a request only adds
 * its own path: "proxy:" and the origin (the pooled worker's name),
 * for plain HTTP and for a WebSocket upgrade (ws(s)://). */
typedef struct aura_http_upstream_t {
    const char *origin;           /* scheme://host[:port] */
    const char *ws_origin;        /* ws(s)://host[:port] */
    const char *filename;         /* "proxy:" origin base-path */
    const char *ws_filename;      /* "proxy:" ws_origin base-path */
} aura_http_upstream_t;

typedef struct {
    int service;                  /* aura_service_e, AURA_UNSET */
    int upstream_kind;            /* aura_upstream_kind_e */
    const char *upstream;         /* NATS subject or http(s) URL */
    const aura_http_upstream_t *http; /* an http(s) upstream, prepared */
    apr_interval_time_t timeout;  /* AuraTimeout, AURA_UNSET */
    int health_detail;            /* AuraHealthDetail, AURA_UNSET */
    int public_route;             /* AuraPublic, AURA_UNSET */
    int streaming;                /* AuraStreaming, AURA_UNSET */
    /* AuraSecurityHeader, by index of aura_security_header_names: the
     * value, aura_security_off, or NULL (unset at this level): read on
     * every response, so no table to search. */
    const char *security_headers[AURA_SECURITY_HEADERS];
    const struct aura_zone_t *zone;   /* AuraRateLimit; NULL = unset,
                                         &aura_zone_off = off */
    const struct aura_quota_t *quota; /* AuraActorQuota; NULL = unset,
                                         &aura_quota_off = off */
    apr_hash_t *plan_quotas;          /* AuraPlanQuota: plan -> quota */
    int retries;                      /* AuraRetries, AURA_UNSET */
    const char *location;             /* the <Location> prefix AuraService
                                         was set in; NULL for a regex */
    apr_size_t location_len;          /* its length */
    int db_router;                    /* AuraDBRouter, AURA_UNSET */
    /* Streaming Locations on the HTTP path, AURA_UNSET each: */
    apr_interval_time_t stream_idle;        /* AuraStreamIdleTimeout */
    apr_interval_time_t stream_first_byte;  /* AuraStreamFirstByteTimeout */
    apr_interval_time_t stream_max;         /* AuraStreamMaxDuration */
    apr_interval_time_t stream_after;       /* AuraStreamAfter */
    /* NATS streamed replies: where acknowledgements may go. */
    const char *stream_ack_prefix;          /* AuraStreamAckPrefix */
    int abandon_check;                /* AuraAbandonCheck, AURA_UNSET (on) */
    int max_in_flight;                /* AuraServiceMaxInFlight (aura_cap.h
                                         encoding), AURA_UNSET */
    /* AuraShedding: how much of the caps each class may fill
     * (aura_shed.h); NULL: the defaults. */
    const struct aura_shed_conf_t *shed;
    /* The long-lived budget (aura_streams.c), aura_cap.h encoding,
     * AURA_UNSET each: */
    int max_streams;                  /* AuraServiceMaxStreams */
    int stream_per_address;           /* AuraStreamMaxPerAddress */
    int stream_per_actor;             /* AuraStreamMaxPerActor */
    int forward_token;                /* AuraForwardToken, AURA_UNSET (On
                                         with AuraDBRouter On, else Off) */
    /* The path of the nearest <Location> (or <Directory>) this config
     * comes from, as written: the operator's console answers the paths
     * below it (console/aura_console.c).  NULL at server level. */
    const char *section;
    /* AuraKeyScope: the group name a scoped API key may name to call
     * this Location (aura_keylife.h); NULL unset. */
    const char *key_scope;
    /* AuraBackchannelLogout (auth/aura_logout.h); NULL unset. */
    const struct aura_logout_conf_t *logout;
} aura_dir_conf_t;


typedef struct {
    int plane;                             /* aura_plane_e, AURA_UNSET */
    apr_array_header_t *nats_servers;      /* const char *, NULL = unset */
    const char *nats_name;
    apr_interval_time_t nats_connect_timeout;
    apr_interval_time_t nats_reconnect_wait;
    int nats_max_reconnect;                /* -2 unset, -1 unlimited */
    apr_interval_time_t nats_ping_interval;
    struct aura_nats_sec_t *nats_sec;      /* TLS and credentials, NULL =
                                              none (aura_nats_conf.h) */
    const char *db_params;                 /* AuraDBParams (conninfo) */
    int db_pool_max;
    apr_interval_time_t db_timeout;
    apr_interval_time_t key_cache_ttl;
    apr_interval_time_t key_cache_stale;   /* AuraKeyCacheStaleMax */
    const char *key_invalidation_subject;  /* AuraKeyInvalidationSubject */
    apr_interval_time_t key_last_used;     /* AuraKeyLastUsedInterval */
    int key_cache_size;
    apr_array_header_t *jwt_sources;       /* aura_jwt_source_t; NULL unset */
    unsigned int jwt_algs;                 /* 0 = unset */
    apr_interval_time_t jwt_leeway;
    const char *jwt_issuer;
    int jwt_max_len;
    apr_interval_time_t jwks_refresh;
    struct aura_jwt_state_t *jwt;          /* built in post_config */
    const char *cors_methods;
    const char *cors_headers;
    const char *cors_expose;
    int cors_max_age;
    /* Rate limits (aura_limit_ip.c).  Zones live in the config pool
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
    int plane_max_in_flight;               /* AuraPlaneMaxInFlight
                                              (aura_cap.h), AURA_UNSET */
    int stream_max_open;                   /* AuraStreamMaxOpen
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
    int reading_v6_prefix;                 /* AuraReadingIPv6Prefix */
    apr_interval_time_t h2_preface_timeout; /* AuraH2PrefaceTimeout */
    /* Tracing (trace/aura_trace_conf.h), global; NULL: no AuraTrace*
     * directive at all. */
    struct aura_trace_conf_t *trace;
    /* AuraTraceTrustParent (trace/aura_trace_conf.h), per VirtualHost;
     * NULL: unset (none trusted). */
    struct aura_trace_trust_t *trace_trust;
    /* AuraAuditLog (audit/aura_audit.h), global; NULL: no audit log. */
    struct aura_audit_conf_t *audit;
    /* AuraAuditSubject, global; NULL: records are not published. */
    const char *audit_subject;
    /* AuraControlSlots, AuraControlSubject (control/aura_control_conf.h),
     * global; NULL: neither. */
    struct aura_control_conf_t *control;
    /* The fleet view (fleet/aura_fleet_conf.h), global; NULL: no fleet
     * directive at all. */
    struct aura_fleet_conf_t *fleet;
    /* AuraTokenMaxLifetime (auth/aura_jwt_conf.h), per VirtualHost,
     * AURA_UNSET. */
    apr_interval_time_t token_max_life;
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

#define AURA_NATS_RECONNECT_UNSET (-2)

/* aura_config.c: the bottom layer every concern reads its configuration
 * through; it calls nothing above it.  The command table and the
 * start-up checks are the hook glue's (mod_aura_common.c). */
void *aura_create_server_conf(apr_pool_t *p, server_rec *s);
void *aura_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
void *aura_create_dir_conf(apr_pool_t *p, char *dir);
void *aura_merge_dir_conf(apr_pool_t *p, void *basev, void *addv);
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
/* Sets the int field at the command table's offset (cmd->info) of the
 * dir conf to the flag's value. */
const char *aura_set_dir_flag(cmd_parms *cmd, void *dirv, int on);

/* Plane directives (moving to the plane modules): their handlers are
 * aura_config.c's until mod_aura_mgmt / mod_aura_data take them. */
const char *aura_set_plane(cmd_parms *cmd, void *dummy, const char *arg);

#define AURA_PLANE_DIRECTIVES \
    AP_INIT_TAKE1("AuraPlane", aura_set_plane, NULL, RSRC_CONF, \
                  "The plane this VirtualHost serves: " \
                  "data | management | none"), \
    AP_INIT_FLAG("AuraPublic", aura_set_dir_flag, \
                 (void *)APR_OFFSETOF(aura_dir_conf_t, public_route), \
                 ACCESS_CONF, "Whether this Location needs no credential"), \
    AP_INIT_FLAG("AuraStreaming", aura_set_dir_flag, \
                 (void *)APR_OFFSETOF(aura_dir_conf_t, streaming), \
                 ACCESS_CONF, \
                 "Whether this Location streams (WebSocket, SSE): the " \
                 "apikey query parameter is accepted there"), \
    AP_INIT_FLAG("AuraForwardToken", aura_set_dir_flag, \
                 (void *)APR_OFFSETOF(aura_dir_conf_t, forward_token), \
                 RSRC_CONF | ACCESS_CONF, \
                 "Data plane: whether the user's verified bearer token " \
                 "goes on to the service in Authorization")

#endif /* AURA_CONFIG_H */
