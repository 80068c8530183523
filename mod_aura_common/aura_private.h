/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_private.h: what the files of mod_aura_common share among
 * themselves and never export: config structs, the log tag macro,
 * internal functions.  Only aura.h is the plane modules' contract.
 */
#ifndef AURA_PRIVATE_H
#define AURA_PRIVATE_H

#include "aura.h"

#include "http_log.h"
#include "apr_shm.h"
#include "apr_global_mutex.h"

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
} aura_dir_conf_t;

typedef struct {
    int plane;                             /* aura_plane_e, AURA_UNSET */
    apr_array_header_t *nats_servers;      /* const char *, NULL = unset */
    const char *nats_name;
    apr_interval_time_t nats_connect_timeout;
    apr_interval_time_t nats_reconnect_wait;
    int nats_max_reconnect;                /* -2 unset, -1 unlimited */
    apr_interval_time_t nats_ping_interval;
} aura_server_conf_t;

#define AURA_NATS_RECONNECT_UNSET (-2)

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

/* aura_shm.c: the one segment that outlives graceful restarts. */
typedef struct aura_shm_header_t aura_shm_header_t;
apr_status_t aura_shm_pre_config(apr_pool_t *pconf);
apr_status_t aura_shm_post_config(apr_pool_t *pconf, server_rec *s);
apr_status_t aura_shm_child_init(apr_pool_t *pchild, server_rec *s);
aura_shm_header_t *aura_shm(void);
void aura_shm_count_request(void);
/** Fill a JSON object with the segment's identity and counters. */
struct json_t;
void aura_shm_describe(struct json_t *obj);

/* aura_nats.c: the per-child connection. */
struct __natsConnection;
void aura_nats_child_init(apr_pool_t *pchild, server_rec *s);
struct __natsConnection *aura_nats_conn(void);
apr_int64_t aura_nats_max_payload(void);
const char *aura_nats_state(void);

/* aura_route.c */
apr_off_t aura_declared_length(request_rec *r);
int aura_map_to_storage(request_rec *r);
int aura_too_large(request_rec *r, apr_int64_t limit);

/* aura_natsproxy.c */
int aura_natsproxy_handler(request_rec *r);

/* aura_problem.c */
void aura_problem_register(void);
void aura_insert_problem_filter(request_rec *r);

/* aura_reqid.c */
const char *aura_reqid_pick(request_rec *r);

/* aura_health.c */
int aura_health_handler(request_rec *r);

#endif /* AURA_PRIVATE_H */
