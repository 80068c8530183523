/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_shm.h: the one shared segment that outlives graceful restarts and
 * every table in it (aura_shm.c lays them out; the concerns count into
 * them).
 */
#ifndef AURA_SHM_H
#define AURA_SHM_H

#include "aura.h"
#include "apr_global_mutex.h"
#include "audit/aura_audit_record.h"
#include "control/aura_control_record.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "fleet/aura_fleet_table.h"
#include "limit/aura_conntable.h"
#include "limit/aura_gcra_table.h"
#include "limit/aura_quota_share.h"
#include "limit/aura_readers.h"
#include "resilience/aura_breaker_fsm.h"
#include "resilience/aura_endrule.h"
#include "resilience/aura_streamtab.h"

/* aura_shm.c: the one segment that outlives graceful restarts. */
typedef struct aura_shm_header_t aura_shm_header_t;
apr_status_t aura_shm_pre_config(apr_pool_t *pconf);
int aura_shm_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *s);
apr_status_t aura_shm_post_config(apr_pool_t *pconf, apr_pool_t *ptemp,
                                  server_rec *s);
apr_status_t aura_shm_child_init(apr_pool_t *pchild, server_rec *s);
aura_shm_header_t *aura_shm(void);
/* The audit chain's head; NULL before post_config. */
aura_audit_shm_t *aura_shm_audit(void);
/* The fleet view's block (aura_fleet_table.h): its header, and in
 * *block the ring of changes followed by the instance slots; NULL when
 * the fleet view is off or before post_config. */
aura_fleet_shm_t *aura_shm_fleet(void **block);


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
    AURA_CTR_ANON_REJECTED,    /* 429 actor-quota of anonymous requests */
    AURA_CTR_CONN_SHED,        /* readers closed to admit a newcomer */
    AURA_CTR_CONN_PREFACE_TIMEOUT, /* HTTP/2 preface + SETTINGS too late */
    AURA_CTR_SPANS_RECORDED,   /* spans of sampled requests, finished */
    AURA_CTR_SPANS_EXPORTED,   /* spans a collector accepted */
    AURA_CTR_SPANS_DROPPED_QUEUE, /* spans dropped: exporter queue full */
    AURA_CTR_SPANS_DROPPED_EXPORT, /* spans dropped: their batch failed */
    AURA_CTR_TRACE_EXPORT_FAILURES, /* batches a collector did not take */
    AURA_CTR_KEY_USED_WRITTEN, /* API keys whose last-used time was written */
    AURA_CTR_KEY_USED_LOST,    /* ... whose batch the key store refused */
    AURA_CTR_COUNT
} aura_counter_e;
void aura_count(aura_counter_e c);
void aura_count_n(aura_counter_e c, apr_uint64_t n);

/* Requests by plane, service and status class, and a latency histogram
 * per plane (aura_metrics.c reads them, aura_accesslog.c records). */
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
    AURA_FLAG_ANON_LOGGED,     /* second of the last anonymous refusal line */
    AURA_FLAG_SHED_LOGGED,     /* second of the last "reader shed" line */
    AURA_FLAG_PREFACE_LOGGED,  /* second of the last "preface late" line */
    AURA_FLAG_TRACE_QUEUED,    /* spans in the exporters' queues or being
                                  posted, all children together */
    AURA_FLAG_COUNT
} aura_flag_e;
volatile apr_uint64_t *aura_shm_flag(aura_flag_e f);

/* The breakers of dedicated PostgREST targets (aura_breaker.c). */
/* Slots a target's hash may use, from its home slot on. */
#define AURA_TARGET_PROBE_RUN 16
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
/* The reading-connection records of journal i (aura_readers.h), n of
 * them; NULL when there is no segment (or no such journal). */
aura_conn_reader_t *aura_shm_readers(apr_uint64_t i, apr_uint32_t *n);
/* Walk the target table (n slots): NULL, or what is wrong
 * (aura_breaker_base.c). */
const char *aura_breaker_validate_targets(aura_target_slot_t *t,
                                          apr_uint64_t n, apr_pool_t *p);

/* The rate-limit tables: one per zone, one for the actor quota's local
 * fallback.  The directory of the segment has one record per table
 * (fixed size, offsets from the base, no pointers); only aura_shm.c
 * lays them out, aura_limit_ip.c and aura_limit_actor.c count into them. */
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
 * slots of table AURA_TABLE_ACTOR are records of aura_quota_share.h: take
 * them with aura_shm_actor_table(), never as limiter slots. */
aura_shm_table_t *aura_shm_table(int n, aura_limiter_slot_t **slots,
                                 apr_uint64_t *sets);
aura_shm_table_t *aura_shm_actor_table(aura_fallback_slot_t **slots,
                                       apr_uint64_t *sets);
const unsigned char *aura_shm_hash_key(void);
/** Fill a JSON object with the segment's identity and counters. */
struct json_t;
/* walk: also walk every table (slots used, and whether each is valid). */
void aura_shm_describe(struct json_t *obj, int walk, apr_pool_t *p);

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

/* ---- in-flight caps (aura_bulkhead.c) --------------------------------
 * Counters of the requests the whole instance has in flight to each
 * service and from each plane, in the shared segment, and one record
 * per child process of what it holds, so that the slots of a child that
 * died (SIGKILL, a crash) are given back by the parent. */
/* The traffic classes of aura_shed.h (AURA_CLASS_COUNT). */
#define AURA_SHED_CLASSES 4
#define AURA_CAP_COUNTERS (AURA_SVC_COUNT + AURA_PLANES) /* services, then
                                                            planes */
/* "auto": percentages of the instance's workers (MaxRequestWorkers). */
#define AURA_CAP_AUTO_SERVICE_PCT 50
/* The planes' percentages: core/aura_plane.h. */
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
    /* The long-lived budget (aura_streams.c): open streams by service
     * and by plane, in the same order as in_flight. */
    volatile apr_uint64_t streams[AURA_CAP_COUNTERS];
    volatile apr_uint64_t stream_refused[AURA_CAP_COUNTERS]; /* 503s */
    volatile apr_uint64_t stream_logged[AURA_CAP_COUNTERS];
    /* 429 stream-limit by the cap that refused (AURA_STREAM_OVER_*),
     * and the table full: [AURA_STREAM_OVER_ADDRESS] ... */
    volatile apr_uint64_t limited[AURA_STREAM_TABLE_FULL + 1];
    volatile apr_uint64_t limited_logged[AURA_STREAM_TABLE_FULL + 1];
    volatile apr_uint64_t converted;   /* NATS replies that became streams */
    volatile apr_uint64_t cut;         /* streams ended at their maximum
                                          duration (NATS routes) */
    volatile apr_uint64_t recs_reclaimed; /* stream records of the dead */
    volatile apr_uint64_t late;        /* HTTP responses that became
                                          streams after AuraStreamAfter */
    volatile apr_uint64_t late_cut;    /* ... or were cut: their address
                                          or actor had its share */
    apr_uint64_t recs_offset;          /* of the stream records */
    apr_uint64_t recs;                 /* their number */
    /* 503 load-shed by class (aura_shed.h), and the second of the last
     * log line of each. */
    volatile apr_uint64_t shed[AURA_SHED_CLASSES];
    volatile apr_uint64_t shed_logged[AURA_SHED_CLASSES];
    /* Streams ended with their credential, by reason (aura_endrule.h,
     * aura_streamend.c); [AURA_END_ALIVE] unused. */
    volatile apr_uint64_t cred_ended[AURA_END_REASONS];
} aura_cap_shm_t;
/* One child's holdings: held[i] of in_flight[i], held[AURA_CAP_COUNTERS
 * + i] of streams[i].  owner: its pid, 0 free, with AURA_CAP_RECLAIM
 * set while a reclaim empties it. */
#define AURA_CAP_RECLAIM (APR_UINT64_C(1) << 62)
#define AURA_CAP_HELD    (2 * AURA_CAP_COUNTERS)
typedef struct {
    volatile apr_uint64_t owner;
    volatile apr_uint64_t held[AURA_CAP_HELD];
} aura_cap_proc_t;
/* aura_shm.c: the counters, and the records (*n of them). */
aura_cap_shm_t *aura_shm_cap(aura_cap_proc_t **procs, apr_uint64_t *n);
/* aura_shm.c: the records of the open streams (aura_streamtab.h), *n
 * of them; NULL without a segment. */
aura_stream_rec_t *aura_shm_streams(apr_uint64_t *n);

/* ---- incident controls (control/aura_control.c) ---------------------
 * The table of controls (aura_control_record.h), AuraControlSlots
 * records; written under the aura-control mutex only, read by each
 * child when the generation moved. */
typedef struct {
    volatile apr_uint64_t generation;  /* +1 by every change */
    apr_uint64_t offset;               /* of the records */
    apr_uint64_t slots;                /* their number */
    volatile apr_uint64_t full_logged; /* second of the last "full" line */
    char instance[33];                 /* this instance's id on NATS */
    char pad[7];
} aura_control_shm_t;
/* aura_shm.c: the table and its records (*n); NULL without a segment. */
aura_control_shm_t *aura_shm_control(aura_control_t **slots,
                                     apr_uint64_t *n);

#endif /* AURA_SHM_H */
