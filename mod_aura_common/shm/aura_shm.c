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
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "fleet/aura_fleet_conf.h"
#include "fleet/aura_fleet_table.h"
#include "limit/aura_conntable.h"
#include "limit/aura_readers.h"
#include "limit/aura_gcra_table.h"
#include "limit/aura_limit.h"
#include "limit/aura_limit_conf.h"
#include "limit/aura_quota_share.h"
#include "control/aura_control_conf.h"
#include "resilience/aura_breaker_fsm.h"
#include "resilience/aura_resilience_conf.h"
#include "shm/aura_layout.h"
#include "shm/aura_shm.h"

#include "http_core.h"
#include "util_mutex.h"
#include "mpm_common.h"
#include "ap_mpm.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include <jansson.h>
#include <stdlib.h>

#define AURA_SHM_MAGIC    0x41555241u /* "AURA" */
/* A change of meaning that no sizeof or offsetof shows (how the bits of
 * a breaker word or a TAT are read) must bump this.  A change of layout
 * needs nothing: the fingerprint below sees it. */
#define AURA_SHM_ENCODING 2u      /* 2: a half-open breaker's since_ms
                                      is when it went half-open */
#define AURA_MUTEX_TYPE   "aura-shm"
/* "-2": the retained data of builds before the fingerprint had another
 * shape; a new key makes such a build's segment a stranger, dropped
 * with the old process image, instead of misread. */
#define AURA_RETAINED_KEY "mod_aura_common-shm-2"
/* The sum of the tables may not exceed this (each directive has its own
 * bound; this one bounds their sum, and keeps every total far from
 * overflowing 64 bits). */
#if APR_SIZEOF_VOIDP >= 8
#define AURA_SHM_MAX      (APR_UINT64_C(4) << 30)
#else
#define AURA_SHM_MAX      (APR_UINT64_C(1) << 30)
#endif
#define AURA_TABLES_MAX   (AURA_MAX_ZONES + 1)

/*
 * Layout (offsets from the base, all 64-byte aligned):
 *
 *   +-----------------------------+ 0
 *   | aura_shm_header_t           |  magic, encoding, size, fingerprint,
 *   |                             |  identity, counters, offsets below
 *   +-----------------------------+ JWKS_OFFSET = APR_ALIGN(header, 64)
 *   | aura_shm_jwks_t [16]        |  one JWKS document per VirtualHost
 *   +-----------------------------+ tables_offset
 *   | aura_shm_table_t [tables]   |  the directory of the rate-limit
 *   |                             |  tables: 1 = the actor fallback,
 *   |                             |  2.. = the zones in name order
 *   +-----------------------------+ table 1's offset
 *   | aura_fallback_slot_t        |  the actor fallback's records
 *   |   [sets * 8]                |  (AuraRateLimitEntries)
 *   +-----------------------------+ table 2's offset ...
 *   | aura_limiter_slot_t         |  one GCRA table per zone (its
 *   |   [sets * 8]  per zone      |  entries=, else AuraRateLimitEntries)
 *   +-----------------------------+ targets_offset
 *   | aura_target_slot_t          |  breakers of dedicated PostgREST
 *   |   [targets]                 |  targets (AuraTargetBreakerEntries)
 *   +-----------------------------+ cap.procs_offset
 *   | aura_cap_proc_t [procs]     |  what each child holds of the
 *   |                             |  in-flight caps (aura_bulkhead.c):
 *   |                             |  2 x ServerLimit, at least 32
 *   +-----------------------------+ conns_offset
 *   | aura_conn_slot_t            |  open connections per (listener,
 *   |   [conn_sets * 8]           |  address): AuraMaxConnectionsPer-
 *   |                             |  Address (aura_conntable.h)
 *   +-----------------------------+ journals_offset
 *   | aura_conn_journal_t + u32   |  one journal per child process
 *   |   [records], 64-aligned,    |  (ServerLimit), records = 8 x
 *   |   aura_conn_reader_t        |  ThreadLimit: what a killed child
 *   |   [records / 4], stride 64- |  leaves counted is reclaimed; its
 *   |   aligned, x journals       |  connections reading their first
 *   |                             |  request (aura_readers.h)
 *   +-----------------------------+ cap.recs_offset
 *   | aura_stream_rec_t [recs]    |  one record per open stream
 *   |                             |  (aura_streamtab.h): ServerLimit
 *   |                             |  x ThreadLimit, at least 64
 *   +-----------------------------+ control.offset
 *   | aura_control_t [slots]      |  the incident controls
 *   |                             |  (AuraControlSlots)
 *   +-----------------------------+ fleet.offset
 *   | aura_fleet_event_t [256]    |  the fleet view (aura_fleet_table.h):
 *   | aura_fleet_slot_t [slots]   |  recent changes, then the latest
 *   |                             |  snapshot of each instance
 *   |                             |  (AuraFleetMaxInstances; none
 *   |                             |  without AuraFleet On)
 *   +-----------------------------+ size
 *
 * A zone's table is its own: a flood of addresses that fills it puts
 * that zone, and no other, into the fail-open state of aura_gcra_table.h.
 *
 * The segment is kept across a restart only when the new configuration
 * and build would lay it out identically: same fingerprint (a hash of
 * the layout table below, of the encoding and of the geometry: the
 * tables' names and sizes, the targets), same size, and a directory
 * that passes validate_segment().  Reordering zones keeps it (tables
 * are laid out in name order); adding, removing or resizing one
 * rebuilds it (AURA00002 says which).
 */
struct aura_shm_header_t {
    /* The first four words are read from a segment of another build
     * (rebuild_reason()): never move them. */
    apr_uint32_t magic;
    apr_uint32_t encoding;           /* AURA_SHM_ENCODING */
    apr_uint64_t size;
    apr_uint64_t fingerprint;        /* layout table, encoding, geometry */
    apr_uint64_t layout;             /* the layout table's alone */
    apr_time_t created;              /* when this segment was built */
    unsigned char hash_key[16];      /* keyed hashing of attacker keys */
    char id[33];                     /* hex of 16 random bytes */
    char pad[7];
    volatile apr_uint64_t configs;   /* configuration passes seen */
    apr_uint64_t tables;             /* records of the table directory */
    apr_uint64_t tables_offset;      /* of the directory */
    apr_uint64_t targets_offset;     /* of the target table */
    apr_uint64_t target_slots;       /* slots of the target table */
    volatile apr_uint64_t counters[AURA_CTR_COUNT];
    volatile apr_uint64_t breakers[AURA_BREAKERS];
    volatile apr_uint64_t flags[AURA_FLAG_COUNT];
    volatile apr_uint64_t requests[AURA_PLANES][AURA_SVC_COUNT + 1]
                                  [AURA_STATUS_CLASSES];
    volatile apr_uint64_t latency[AURA_PLANES][AURA_LATENCY_BUCKETS];
    volatile apr_uint64_t latency_sum_us[AURA_PLANES];
    /* who holds each breaker's half-open probes (aura_breaker_fsm.h) */
    volatile apr_uint64_t holders[AURA_BREAKERS][AURA_BRK_HOLDERS];
    aura_cap_shm_t cap;              /* in-flight caps (aura_bulkhead.c) */
    /* The connection table and the children's journals: sized from the
     * MPM's hard limits (ServerLimit, ThreadLimit), which a graceful
     * restart cannot change, so a graceful never rebuilds them. */
    apr_uint64_t conns_offset;
    apr_uint64_t conn_sets;
    apr_uint64_t journals_offset;
    apr_uint64_t journals;
    apr_uint64_t journal_records;
    apr_uint64_t journal_stride;
    /* The audit chain's head (aura_audit.c, under its own mutex). */
    aura_audit_shm_t audit;
    /* The incident controls (aura_control.c, under aura-control). */
    aura_control_shm_t control;
    /* The fleet view's block (fleet/aura_fleet_table.c, under the
     * aura-fleet mutex). */
    aura_fleet_shm_t fleet;
};

_Static_assert(sizeof(apr_uint64_t) == 8 && __atomic_always_lock_free(8, 0),
               "shared counters need lock-free 64-bit atomics");

/* Every struct that lives in the segment, every member of each: what
 * decides, with the geometry, whether a kept segment can be read by
 * this build.  A member added to one of these structs must be added
 * here (a struct added to the segment too); the unit test of
 * aura_layout.c shows that one moved offset changes the hash. */
#define M(type, member) AURA_LAYOUT_MEMBER(type, member)
static const aura_layout_row_t layout_rows[] = {
    AURA_LAYOUT_STRUCT(aura_shm_header_t),
    M(aura_shm_header_t, magic), M(aura_shm_header_t, encoding),
    M(aura_shm_header_t, size), M(aura_shm_header_t, fingerprint),
    M(aura_shm_header_t, layout), M(aura_shm_header_t, created),
    M(aura_shm_header_t, hash_key), M(aura_shm_header_t, id),
    M(aura_shm_header_t, pad), M(aura_shm_header_t, configs),
    M(aura_shm_header_t, tables), M(aura_shm_header_t, tables_offset),
    M(aura_shm_header_t, targets_offset),
    M(aura_shm_header_t, target_slots), M(aura_shm_header_t, counters),
    M(aura_shm_header_t, breakers), M(aura_shm_header_t, flags),
    M(aura_shm_header_t, requests), M(aura_shm_header_t, latency),
    M(aura_shm_header_t, latency_sum_us), M(aura_shm_header_t, holders),
    M(aura_shm_header_t, cap),
    M(aura_shm_header_t, conns_offset), M(aura_shm_header_t, conn_sets),
    M(aura_shm_header_t, journals_offset), M(aura_shm_header_t, journals),
    M(aura_shm_header_t, journal_records),
    M(aura_shm_header_t, journal_stride), M(aura_shm_header_t, audit),
    M(aura_shm_header_t, control),
    AURA_LAYOUT_STRUCT(aura_control_shm_t),
    M(aura_control_shm_t, generation), M(aura_control_shm_t, offset),
    M(aura_control_shm_t, slots), M(aura_control_shm_t, full_logged),
    M(aura_control_shm_t, instance), M(aura_control_shm_t, pad),
    AURA_LAYOUT_STRUCT(aura_control_t),
    M(aura_control_t, kind), M(aura_control_t, lifted),
    M(aura_control_t, updated), M(aura_control_t, expires),
    M(aura_control_t, id), M(aura_control_t, target),
    M(aura_control_t, value), M(aura_control_t, by),
    M(aura_control_t, reason),
    AURA_LAYOUT_STRUCT(aura_audit_shm_t),
    M(aura_audit_shm_t, known), M(aura_audit_shm_t, seq),
    M(aura_audit_shm_t, dev), M(aura_audit_shm_t, ino),
    M(aura_audit_shm_t, size), M(aura_audit_shm_t, hash),
    M(aura_audit_shm_t, pad),
    AURA_LAYOUT_STRUCT(aura_cap_shm_t),
    M(aura_cap_shm_t, in_flight), M(aura_cap_shm_t, refused),
    M(aura_cap_shm_t, logged), M(aura_cap_shm_t, reclaimed),
    M(aura_cap_shm_t, unrecorded), M(aura_cap_shm_t, procs_offset),
    M(aura_cap_shm_t, procs), M(aura_cap_shm_t, streams),
    M(aura_cap_shm_t, stream_refused), M(aura_cap_shm_t, stream_logged),
    M(aura_cap_shm_t, limited), M(aura_cap_shm_t, limited_logged),
    M(aura_cap_shm_t, converted), M(aura_cap_shm_t, cut),
    M(aura_cap_shm_t, recs_reclaimed), M(aura_cap_shm_t, late),
    M(aura_cap_shm_t, late_cut), M(aura_cap_shm_t, recs_offset),
    M(aura_cap_shm_t, recs), M(aura_cap_shm_t, shed),
    M(aura_cap_shm_t, shed_logged),
    AURA_LAYOUT_STRUCT(aura_cap_proc_t),
    M(aura_cap_proc_t, owner), M(aura_cap_proc_t, held),
    AURA_LAYOUT_STRUCT(aura_shm_jwks_t),
    M(aura_shm_jwks_t, last_refresh), M(aura_shm_jwks_t, version),
    M(aura_shm_jwks_t, len), M(aura_shm_jwks_t, doc),
    AURA_LAYOUT_STRUCT(aura_shm_table_t),
    M(aura_shm_table_t, name), M(aura_shm_table_t, offset),
    M(aura_shm_table_t, sets), M(aura_shm_table_t, full),
    M(aura_shm_table_t, rejected), M(aura_shm_table_t, full_logged),
    AURA_LAYOUT_STRUCT(aura_limiter_slot_t),
    M(aura_limiter_slot_t, key), M(aura_limiter_slot_t, tat),
    AURA_LAYOUT_STRUCT(aura_fallback_slot_t),
    M(aura_fallback_slot_t, key), M(aura_fallback_slot_t, until),
    M(aura_fallback_slot_t, seen), M(aura_fallback_slot_t, local),
    AURA_LAYOUT_STRUCT(aura_target_slot_t),
    M(aura_target_slot_t, key), M(aura_target_slot_t, word),
    M(aura_target_slot_t, used), M(aura_target_slot_t, holders),
    M(aura_target_slot_t, name),
    AURA_LAYOUT_STRUCT(aura_conn_slot_t),
    M(aura_conn_slot_t, word), M(aura_conn_slot_t, logged),
    AURA_LAYOUT_STRUCT(aura_conn_journal_t),
    M(aura_conn_journal_t, owner), M(aura_conn_journal_t, reclaimed),
    AURA_LAYOUT_STRUCT(aura_stream_rec_t),
    M(aura_stream_rec_t, owner), M(aura_stream_rec_t, addr),
    M(aura_stream_rec_t, actor), M(aura_stream_rec_t, what),
    M(aura_stream_rec_t, prefix),
    AURA_LAYOUT_STRUCT(aura_conn_reader_t),
    M(aura_conn_reader_t, word), M(aura_conn_reader_t, listener),
    M(aura_conn_reader_t, holder), M(aura_conn_reader_t, since),
    M(aura_conn_reader_t, deadline), M(aura_conn_reader_t, cap),
    M(aura_conn_reader_t, port), M(aura_conn_reader_t, bits),
    M(aura_conn_reader_t, h2), M(aura_conn_reader_t, prefix),
    M(aura_conn_reader_t, local), M(aura_conn_reader_t, pad),
    /* The fleet view's block (aura_fleet_table.h). */
    M(aura_shm_header_t, fleet),
    AURA_LAYOUT_STRUCT(aura_fleet_shm_t),
    M(aura_fleet_shm_t, offset), M(aura_fleet_shm_t, slots),
    M(aura_fleet_shm_t, seq), M(aura_fleet_shm_t, published),
    M(aura_fleet_shm_t, publish_failed), M(aura_fleet_shm_t, too_big),
    M(aura_fleet_shm_t, received), M(aura_fleet_shm_t, malformed),
    M(aura_fleet_shm_t, duplicate), M(aura_fleet_shm_t, full),
    M(aura_fleet_shm_t, events),
    AURA_LAYOUT_STRUCT(aura_fleet_slot_t),
    M(aura_fleet_slot_t, used), M(aura_fleet_slot_t, first_seen),
    M(aura_fleet_slot_t, last_seen), M(aura_fleet_slot_t, reported),
    M(aura_fleet_slot_t, digest), M(aura_fleet_slot_t, len),
    M(aura_fleet_slot_t, bytes),
    AURA_LAYOUT_STRUCT(aura_fleet_digest_t),
    M(aura_fleet_digest_t, instance), M(aura_fleet_digest_t, epoch),
    M(aura_fleet_digest_t, node), M(aura_fleet_digest_t, seq),
    M(aura_fleet_digest_t, sent), M(aura_fleet_digest_t, interval),
    M(aura_fleet_digest_t, fallback), M(aura_fleet_digest_t, nbreakers),
    M(aura_fleet_digest_t, breakers),
    AURA_LAYOUT_STRUCT(aura_fleet_brk_t),
    M(aura_fleet_brk_t, name), M(aura_fleet_brk_t, state),
    M(aura_fleet_brk_t, pad),
    AURA_LAYOUT_STRUCT(aura_fleet_event_t),
    M(aura_fleet_event_t, time), M(aura_fleet_event_t, kind),
    M(aura_fleet_event_t, instance), M(aura_fleet_event_t, what),
    M(aura_fleet_event_t, from), M(aura_fleet_event_t, to),
};
#undef M

/* The size of a record of table i (0-based): the actor fallback's
 * records are aura_quota_share.h's, the zones' aura_gcra_table.h's. */
static apr_uint64_t slot_size(apr_uint64_t i)
{
    return i == 0 ? sizeof(aura_fallback_slot_t)
                  : sizeof(aura_limiter_slot_t);
}

/* One rate-limit table of the geometry. */
typedef struct {
    const char *name;                /* the zone; "" for the actor table */
    apr_uint64_t sets;
    apr_uint64_t offset;
} table_geometry_t;

/* Records of the in-flight caps: one per child process, and as many
 * again for the children of an old generation still finishing (event
 * and worker may run more processes than ServerLimit slots for a
 * while) and for records not yet reclaimed.  ServerLimit cannot change
 * on a graceful restart, so neither does this. */
#define CAP_RECORDS_MIN 32
#define CAP_RECORDS_MAX 65536

static apr_uint64_t cap_records(void)
{
    int limit = 0;

    if (ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &limit) != APR_SUCCESS
        || limit < CAP_RECORDS_MIN / 2) {
        limit = CAP_RECORDS_MIN / 2;
    }
    return limit > CAP_RECORDS_MAX / 2 ? CAP_RECORDS_MAX
                                       : (apr_uint64_t)limit * 2;
}

/* Records of the open streams (aura_streamtab.h): one per thread the
 * MPM can ever run, ServerLimit x ThreadLimit (neither changes on a
 * graceful restart), since every stream holds a worker thread. */
#define STREAM_RECORDS_MIN 64
#define STREAM_RECORDS_MAX 65536

static apr_uint64_t stream_records(void)
{
    int daemons = 0, threads = 0;
    apr_uint64_t n;

    if (ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &daemons) != APR_SUCCESS
        || ap_mpm_query(AP_MPMQ_HARD_LIMIT_THREADS, &threads) != APR_SUCCESS
        || daemons < 1 || threads < 1) {
        return STREAM_RECORDS_MIN;
    }
    n = (apr_uint64_t)daemons * (apr_uint64_t)threads;
    return n < STREAM_RECORDS_MIN ? STREAM_RECORDS_MIN
           : n > STREAM_RECORDS_MAX ? STREAM_RECORDS_MAX : n;
}

/* What the configuration asks of the segment. */
typedef struct {
    int ntables;
    table_geometry_t t[AURA_TABLES_MAX];
    apr_uint64_t tables_offset;
    apr_uint64_t targets_offset;
    apr_uint64_t targets;
    apr_uint64_t procs_offset;
    apr_uint64_t procs;
    apr_uint64_t conns_offset;
    apr_uint64_t conn_sets;
    apr_uint64_t journals_offset;
    apr_uint64_t journals;
    apr_uint64_t journal_records;
    apr_uint64_t journal_stride;
    apr_uint64_t recs_offset;
    apr_uint64_t recs;
    apr_uint64_t control_offset;
    apr_uint64_t control_slots;
    apr_uint64_t fleet_offset;
    apr_uint64_t fleet_slots;
    apr_uint64_t size;
    apr_uint64_t layout;
    apr_uint64_t fingerprint;
} geometry_t;

typedef struct {
    apr_shm_t *shm;
    apr_size_t size;
} aura_shm_retained_t;

/* Written in post_config (parent) and child_init only. */
static aura_shm_header_t *shm_base;
static apr_global_mutex_t *shm_mutex;

#define JWKS_OFFSET APR_ALIGN(sizeof(aura_shm_header_t), 64)

/* Names in aura_shm_describe(), indexed by aura_counter_e. */
static const char *const counter_names[AURA_CTR_COUNT] = {
    "requests", "key_cache_hits", "key_cache_misses", "jwt_verifications",
    "ip_rejected", "ip_table_full", "actor_rejected", "actor_redis",
    "actor_fallback", "redis_errors", "breaker_opened", "breaker_rejected",
    "nats_retries", "nats_no_responders", "nats_timeouts", "http_timeouts",
    "db_nats", "db_http", "db_unresolved", "targets_full",
    "breaker_half_opened", "breaker_closed", "actor_lease",
    "stream_ack_refused", "breaker_probe_recovered", "conn_refused",
    "conn_table_full", "conn_reclaimed", "conn_busy", "gone_before_send",
    "gone_waiting", "late_replies", "anon_rejected", "conn_shed",
    "conn_preface_timeout", "spans_recorded", "spans_exported",
    "spans_dropped_queue", "spans_dropped_export", "trace_export_failures"
};

/* *off += n, 64-byte aligned, refused beyond AURA_SHM_MAX (so never
 * near a wrap: each n is below it too). */
static int grow(apr_uint64_t *off, apr_uint64_t n)
{
    if (n > AURA_SHM_MAX || *off > AURA_SHM_MAX - n) {
        return 0;
    }
    *off = APR_ALIGN(*off + n, 64);
    return *off <= AURA_SHM_MAX;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(aura_zone_t *const *)a)->name,
                  (*(aura_zone_t *const *)b)->name);
}

/* The connection table and the journals, from the MPM's hard limits:
 * a child holds at most ThreadLimit connections in a worker, and the
 * event MPM keeps up to AsyncRequestWorkerFactor (2 by default) more
 * per thread waiting without one: 4 connections per thread leave
 * room, 2 records each.  After a journal's records come its reading
 * connections' records (aura_readers.h), one per 4 records: a child
 * has at most ThreadLimit connections reading in a worker, and as many
 * again waiting for the MPM (an HTTP/2 preface).
 * The table has twice the slots of all journals together, so a set
 * fills only by chance.  Bounded so that a huge ServerLimit cannot ask
 * for more than the segment may have. */
static apr_uint64_t readers_at(apr_uint64_t records)
{
    return APR_ALIGN(sizeof(aura_conn_journal_t)
                     + records * sizeof(apr_uint32_t), 64);
}

static void conn_geometry(geometry_t *g)
{
    int daemons = 0, threads = 0;

    if (ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &daemons) != APR_SUCCESS
        || daemons < 1) {
        daemons = 1;
    }
    if (ap_mpm_query(AP_MPMQ_HARD_LIMIT_THREADS, &threads) != APR_SUCCESS
        || threads < 1) {
        threads = 1;
    }
    g->journals = (apr_uint64_t)(daemons < 65536 ? daemons : 65536);
    /* Two counts a connection at most: its address's, and its
     * listener's while it reads its first request. */
    g->journal_records = 8 * (apr_uint64_t)(threads < 16384 ? threads
                                                            : 16384);
    g->journal_stride = readers_at(g->journal_records)
                        + AURA_CONN_READERS(g->journal_records)
                          * sizeof(aura_conn_reader_t);
    g->conn_sets = aura_conn_sets(2 * g->journals * g->journal_records);
    if (g->conn_sets * AURA_CONN_WAYS < 1024) {
        g->conn_sets = aura_conn_sets(1024);
    }
    if (g->conn_sets * AURA_CONN_WAYS > (APR_UINT64_C(1) << 22)) {
        g->conn_sets = aura_conn_sets(APR_UINT64_C(1) << 22);
    }
}

/* How many tables, of which sizes, and how many target slots: from the
 * zones (in name order, so reordering them keeps the segment) and the
 * server's settings.  NULL, or why not. */
static const char *size_tables(apr_pool_t *pconf, apr_pool_t *p,
                               server_rec *s, geometry_t *g)
{
    const aura_server_conf_t *c = aura_server_conf(s);
    apr_array_header_t *zones = apr_array_copy(p, aura_zones(pconf));
    apr_uint64_t entries = aura_conf_limiter_entries(c);
    int i;

    if (zones->nelts + 1 > AURA_TABLES_MAX) {
        return apr_psprintf(p, "%d zones, more than %d", zones->nelts,
                            AURA_MAX_ZONES);
    }
    qsort(zones->elts, zones->nelts, sizeof(aura_zone_t *), by_name);
    g->ntables = zones->nelts + 1;
    g->t[0].name = "";
    g->t[0].sets = aura_limiter_sets(entries);
    for (i = 0; i < zones->nelts; i++) {
        const aura_zone_t *z = APR_ARRAY_IDX(zones, i, aura_zone_t *);

        g->t[1 + i].name = z->name;
        g->t[1 + i].sets = aura_limiter_sets(z->entries ? z->entries
                                                        : entries);
    }
    /* A power of two: the slot is the hash's low bits. */
    g->control_slots = (apr_uint64_t)aura_conf_control_slots(c);
    for (g->targets = 16;
         g->targets < (apr_uint64_t)aura_conf_target_entries(c);
         g->targets <<= 1) {
        continue;
    }
    return NULL;
}

/* Every table's offset, one after the other from the JWKS slots on, and
 * the segment's size.  NULL, or what does not fit. */
static const char *place_tables(apr_pool_t *p, geometry_t *g)
{
    apr_uint64_t off = JWKS_OFFSET;
    int i;

    if (!grow(&off, (apr_uint64_t)AURA_JWKS_SLOTS
                    * sizeof(aura_shm_jwks_t))) {
        return "the JWKS slots do not fit";
    }
    g->tables_offset = off;
    if (!grow(&off, (apr_uint64_t)g->ntables * sizeof(aura_shm_table_t))) {
        return "the table directory does not fit";
    }
    for (i = 0; i < g->ntables; i++) {
        g->t[i].offset = off;
        /* sets <= 2^21 (entries <= 2^24), slots of 32 bytes at most:
         * no wrap. */
        if (!grow(&off, g->t[i].sets * AURA_LIMITER_WAYS
                        * slot_size((apr_uint64_t)i))) {
            return apr_psprintf(p, "the rate-limit tables need more than "
                                "the %" APR_UINT64_T_FMT " MiB a segment "
                                "may have (at %s)",
                                (apr_uint64_t)(AURA_SHM_MAX >> 20),
                                *g->t[i].name ? g->t[i].name
                                              : "the actor fallback table");
        }
    }
    g->targets_offset = off;
    if (!grow(&off, g->targets * sizeof(aura_target_slot_t))) {
        return "the target breaker table does not fit";
    }
    g->procs = cap_records();
    g->procs_offset = off;
    if (!grow(&off, g->procs * sizeof(aura_cap_proc_t))) {
        return "the process records of the in-flight caps do not fit";
    }
    conn_geometry(g);
    g->conns_offset = off;
    if (!grow(&off, g->conn_sets * AURA_CONN_WAYS
                    * sizeof(aura_conn_slot_t))) {
        return "the connection table does not fit";
    }
    g->journals_offset = off;
    if (!grow(&off, g->journals * g->journal_stride)) {
        return "the journals of the children (ServerLimit) do not fit";
    }
    g->recs = stream_records();
    g->recs_offset = off;
    if (!grow(&off, g->recs * sizeof(aura_stream_rec_t))) {
        return "the records of the open streams do not fit";
    }
    g->control_offset = off;
    if (!grow(&off, g->control_slots * sizeof(aura_control_t))) {
        return "the table of incident controls does not fit";
    }
    g->fleet_offset = off;
    if (!grow(&off, aura_fleet_region_size(g->fleet_slots))) {
        return "the fleet view's instances (AuraFleetMaxInstances) do "
               "not fit";
    }
    g->size = off;
    return NULL;
}

/* The fingerprint a segment is reused by: the layout of every shared
 * struct (layout_rows, kept in g->layout too) and of this geometry. */
static apr_uint64_t fingerprint_of(geometry_t *g)
{
    apr_uint64_t h;
    int i;

    g->layout = aura_layout_fingerprint(layout_rows, sizeof(layout_rows)
                                                     / sizeof(layout_rows[0]));
    h = aura_layout_mix(g->layout, AURA_SHM_ENCODING);
    h = aura_layout_mix(h, AURA_JWKS_SLOTS);
    h = aura_layout_mix(h, AURA_LIMITER_WAYS);
    /* Also in the counter array's sizeof; named here for the reader. */
    h = aura_layout_mix(h, AURA_CTR_COUNT);
    h = aura_layout_mix(h, (apr_uint64_t)g->ntables);
    for (i = 0; i < g->ntables; i++) {
        h = aura_layout_mix_str(h, g->t[i].name);
        h = aura_layout_mix(h, g->t[i].sets);
        h = aura_layout_mix(h, g->t[i].offset);
    }
    h = aura_layout_mix(h, g->targets);
    h = aura_layout_mix(h, g->targets_offset);
    h = aura_layout_mix(h, g->procs);
    h = aura_layout_mix(h, g->procs_offset);
    h = aura_layout_mix(h, g->conns_offset);
    h = aura_layout_mix(h, g->conn_sets);
    h = aura_layout_mix(h, g->journals_offset);
    h = aura_layout_mix(h, g->journals);
    h = aura_layout_mix(h, g->journal_records);
    h = aura_layout_mix(h, g->journal_stride);
    h = aura_layout_mix(h, g->recs);
    h = aura_layout_mix(h, g->recs_offset);
    h = aura_layout_mix(h, g->control_slots);
    h = aura_layout_mix(h, g->control_offset);
    h = aura_layout_mix(h, g->fleet_offset);
    h = aura_layout_mix(h, g->fleet_slots);
    return aura_layout_mix(h, g->size);
}

/* The geometry of this configuration, its offsets and fingerprint.
 * NULL, or why it cannot be laid out. */
static const char *geometry_of(apr_pool_t *pconf, apr_pool_t *p,
                               server_rec *s, geometry_t *g)
{
    const char *why;

    memset(g, 0, sizeof(*g));
    g->fleet_slots = (apr_uint64_t)aura_fleet_conf_slots(
        aura_fleet_conf(s));
    why = size_tables(pconf, p, s, g);
    if (!why) {
        why = place_tables(p, g);
    }
    if (!why) {
        g->fingerprint = fingerprint_of(g);
    }
    return why;
}

static aura_shm_table_t *directory(aura_shm_header_t *h)
{
    return (aura_shm_table_t *)((char *)h + h->tables_offset);
}

aura_shm_table_t *aura_shm_table(int n, aura_limiter_slot_t **slots,
                                 apr_uint64_t *sets)
{
    aura_shm_table_t *t;

    if (!shm_base || n < 1 || (apr_uint64_t)n > shm_base->tables) {
        return NULL;
    }
    t = directory(shm_base) + (n - 1);
    *slots = (aura_limiter_slot_t *)((char *)shm_base + t->offset);
    *sets = t->sets;
    return t;
}

aura_shm_table_t *aura_shm_actor_table(aura_fallback_slot_t **slots,
                                       apr_uint64_t *sets)
{
    aura_shm_table_t *t;

    if (!shm_base || shm_base->tables < AURA_TABLE_ACTOR) {
        return NULL;
    }
    t = directory(shm_base) + (AURA_TABLE_ACTOR - 1);
    *slots = (aura_fallback_slot_t *)((char *)shm_base + t->offset);
    *sets = t->sets;
    return t;
}

static int zone_table(const char *name)
{
    apr_uint64_t i;

    for (i = 0; shm_base && i < shm_base->tables; i++) {
        if (!strcmp(directory(shm_base)[i].name, name)) {
            return (int)i + 1;
        }
    }
    return 0;
}

aura_target_slot_t *aura_shm_targets(apr_uint64_t *n)
{
    if (!shm_base) {
        return NULL;
    }
    *n = shm_base->target_slots;
    return (aura_target_slot_t *)((char *)shm_base
                                  + shm_base->targets_offset);
}

aura_cap_shm_t *aura_shm_cap(aura_cap_proc_t **procs, apr_uint64_t *n)
{
    if (!shm_base) {
        return NULL;
    }
    *procs = (aura_cap_proc_t *)((char *)shm_base
                                 + shm_base->cap.procs_offset);
    *n = shm_base->cap.procs;
    return &shm_base->cap;
}

aura_stream_rec_t *aura_shm_streams(apr_uint64_t *n)
{
    if (!shm_base) {
        return NULL;
    }
    *n = shm_base->cap.recs;
    return (aura_stream_rec_t *)((char *)shm_base
                                 + shm_base->cap.recs_offset);
}

aura_conn_slot_t *aura_shm_conns(apr_uint64_t *sets)
{
    if (!shm_base) {
        return NULL;
    }
    *sets = shm_base->conn_sets;
    return (aura_conn_slot_t *)((char *)shm_base + shm_base->conns_offset);
}

aura_conn_journal_t *aura_shm_journal(apr_uint64_t i, apr_uint32_t *records,
                                      apr_uint64_t *n)
{
    if (!shm_base || i >= shm_base->journals) {
        return NULL;
    }
    *records = (apr_uint32_t)shm_base->journal_records;
    *n = shm_base->journals;
    return (aura_conn_journal_t *)((char *)shm_base
                                   + shm_base->journals_offset
                                   + i * shm_base->journal_stride);
}

aura_conn_reader_t *aura_shm_readers(apr_uint64_t i, apr_uint32_t *n)
{
    if (!shm_base || i >= shm_base->journals) {
        return NULL;
    }
    *n = (apr_uint32_t)AURA_CONN_READERS(shm_base->journal_records);
    return (aura_conn_reader_t *)((char *)shm_base
                                  + shm_base->journals_offset
                                  + i * shm_base->journal_stride
                                  + readers_at(shm_base->journal_records));
}

volatile apr_uint64_t *aura_shm_breaker(int i)
{
    return shm_base && i >= 0 && i < AURA_BREAKERS ? &shm_base->breakers[i]
                                                   : NULL;
}

volatile apr_uint64_t *aura_shm_breaker_holders(int i)
{
    return shm_base && i >= 0 && i < AURA_BREAKERS ? shm_base->holders[i]
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
    int p = aura_plane_info(plane)->index;
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

void aura_count_n(aura_counter_e c, apr_uint64_t n)
{
    if (shm_base && n) {
        apr_atomic_add64(&shm_base->counters[c], n);
    }
}

aura_audit_shm_t *aura_shm_audit(void)
{
    return shm_base ? &shm_base->audit : NULL;
}

aura_control_shm_t *aura_shm_control(aura_control_t **slots,
                                     apr_uint64_t *n)
{
    if (!shm_base) {
        return NULL;
    }
    *slots = (aura_control_t *)((char *)shm_base + shm_base->control.offset);
    *n = shm_base->control.slots;
    return &shm_base->control;
}

aura_fleet_shm_t *aura_shm_fleet(void **block)
{
    if (!shm_base || !shm_base->fleet.slots) {
        return NULL;
    }
    *block = (char *)shm_base + shm_base->fleet.offset;
    return &shm_base->fleet;
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

/* The directory of h, checked against the segment's bounds: each
 * table inside the segment, after the previous one, a power of two of
 * sets, names terminated, the actor's table first and the zones in
 * strictly increasing name order (so a name finds one table). */
static const char *check_directory(const aura_shm_header_t *h,
                                   apr_pool_t *p)
{
    const aura_shm_table_t *d;
    apr_uint64_t i, end;

    if (h->tables < 1 || h->tables > AURA_TABLES_MAX
        || h->tables_offset < JWKS_OFFSET || h->tables_offset % 64
        || h->tables_offset > h->size
        || h->tables * sizeof(*d) > h->size - h->tables_offset
        || h->targets_offset > h->size || h->targets_offset % 64
        || h->target_slots * sizeof(aura_target_slot_t)
           > h->size - h->targets_offset
        || h->cap.procs_offset % 64
        || h->cap.procs_offset < h->targets_offset
                                 + h->target_slots
                                   * sizeof(aura_target_slot_t)
        || h->cap.procs_offset > h->size
        || h->cap.procs > CAP_RECORDS_MAX
        || h->cap.procs * sizeof(aura_cap_proc_t)
           > h->size - h->cap.procs_offset) {
        return "the header's offsets lie outside the segment";
    }
    if (h->conns_offset % 64 || h->conns_offset > h->size
        || !h->conn_sets || (h->conn_sets & (h->conn_sets - 1))
        || h->conn_sets > (APR_UINT64_C(1) << 22)
        || h->conn_sets * AURA_CONN_WAYS * sizeof(aura_conn_slot_t)
           > h->size - h->conns_offset
        || h->journals_offset % 64 || h->journals_offset > h->size
        || h->journals > 65536 || h->journal_stride > (APR_UINT64_C(1) << 23)
        || h->journal_records > (APR_UINT64_C(1) << 17)
        || readers_at(h->journal_records)
           + AURA_CONN_READERS(h->journal_records)
             * sizeof(aura_conn_reader_t) > h->journal_stride
        || h->journals * h->journal_stride > h->size - h->journals_offset) {
        return "the connection table lies outside the segment";
    }
    if (h->cap.recs_offset % 64 || h->cap.recs_offset > h->size
        || h->cap.recs > STREAM_RECORDS_MAX
        || h->cap.recs * sizeof(aura_stream_rec_t)
           > h->size - h->cap.recs_offset) {
        return "the records of the open streams lie outside the segment";
    }
    if (h->control.offset % 64 || h->control.offset > h->size
        || h->control.slots > AURA_CONTROL_SLOTS_MAX
        || h->control.slots * sizeof(aura_control_t)
           > h->size - h->control.offset) {
        return "the table of incident controls lies outside the segment";
    }
    if (h->fleet.offset % 64 || h->fleet.offset > h->size
        || h->fleet.slots > AURA_FLEET_MAX_INSTANCES
        || aura_fleet_region_size(h->fleet.slots)
           > h->size - h->fleet.offset) {
        return "the fleet view's block lies outside the segment";
    }
    d = (const aura_shm_table_t *)((const char *)h + h->tables_offset);
    end = h->tables_offset + h->tables * sizeof(*d);
    for (i = 0; i < h->tables; i++) {
        const char *name = d[i].name;
        apr_uint64_t sets = d[i].sets;

        if (!memchr(name, '\0', AURA_TABLE_NAME)) {
            return apr_psprintf(p, "table %" APR_UINT64_T_FMT ": its name "
                                "is not terminated", i + 1);
        }
        if (!sets || (sets & (sets - 1))
            || sets > (apr_uint64_t)AURA_MAX_LIMITER_ENTRIES) {
            return apr_psprintf(p, "table %" APR_UINT64_T_FMT " (%s): %"
                                APR_UINT64_T_FMT " sets", i + 1, name, sets);
        }
        if (d[i].offset % 64 || d[i].offset < end
            || d[i].offset > h->targets_offset
            || sets * AURA_LIMITER_WAYS * slot_size(i)
               > h->targets_offset - d[i].offset) {
            return apr_psprintf(p, "table %" APR_UINT64_T_FMT " (%s) lies "
                                "outside its place", i + 1, name);
        }
        if (i == 0 ? *name != '\0'
                   : !*name || (i > 1 && strcmp(d[i - 1].name, name) >= 0)) {
            return apr_psprintf(p, "table %" APR_UINT64_T_FMT " (%s) is "
                                "out of order", i + 1, name);
        }
        end = d[i].offset + sets * AURA_LIMITER_WAYS * slot_size(i);
    }
    return NULL;
}

/* A walk of table i (0-based) of h, by the validator of its records. */
static apr_status_t census(aura_shm_header_t *h, apr_uint64_t i,
                           apr_uint64_t now, aura_limiter_census_t *c)
{
    aura_shm_table_t *t = directory(h) + i;
    char *slots = (char *)h + t->offset;

    if (i == 0) {
        return aura_fallback_validate((aura_fallback_slot_t *)slots,
                                      t->sets, now, c);
    }
    return aura_limiter_validate((aura_limiter_slot_t *)slots, t->sets,
                                 now, c);
}

/* The directory, then every slot of every table (aura_limiter_validate,
 * aura_breaker_validate_targets).  NULL, or what is wrong. */
static const char *validate(aura_shm_header_t *h, apr_pool_t *p)
{
    const char *why = check_directory(h, p);
    apr_uint64_t i, now = aura_clock_ns();

    if (!why) {
        why = aura_breaker_validate_targets(
            (aura_target_slot_t *)((char *)h + h->targets_offset),
            h->target_slots, p);
    }

    for (i = 0; !why && i < h->tables; i++) {
        aura_shm_table_t *t = directory(h) + i;
        aura_limiter_census_t c;

        if (census(h, i, now, &c) != APR_SUCCESS) {
            why = apr_psprintf(p, "table %" APR_UINT64_T_FMT " (%s): %"
                               APR_UINT64_T_FMT " keys in the wrong set",
                               i + 1, t->name, c.misplaced);
        }
    }
    return why;
}

static const char *validate_segment(apr_pool_t *p)
{
    return shm_base ? validate(shm_base, p) : "no segment";
}

/* Why the segment h cannot be kept for geometry g (NULL: it can). */
static const char *rebuild_reason(aura_shm_header_t *h, const geometry_t *g,
                                  apr_pool_t *p)
{
    apr_array_header_t *why = apr_array_make(p, 4, sizeof(char *));
    const aura_shm_table_t *d;
    apr_uint64_t i;
    int j;

    if (h->magic != AURA_SHM_MAGIC) {
        return "its header is not mod_aura's";
    }
    if (h->layout != g->layout || h->encoding != AURA_SHM_ENCODING) {
        return "the shared structures changed (another build of "
               "mod_aura_common)";
    }
    if (h->fingerprint == g->fingerprint && h->size == g->size) {
        const char *bad = validate(h, p);

        return bad ? apr_pstrcat(p, "it failed validation: ", bad, NULL)
                   : NULL;
    }
    /* Same structures, another geometry: name the difference. */
    if (check_directory(h, p)) {
        return "the geometry changed";
    }
    d = directory(h);
    for (j = 0; j < g->ntables; j++) {
        const char *name = g->t[j].name;

        for (i = 0; i < h->tables && strcmp(d[i].name, name); i++) {
            continue;
        }
        if (i == h->tables) {
            APR_ARRAY_PUSH(why, char *) = apr_psprintf(p, "zone %s added",
                                                       name);
        }
        else if (d[i].sets != g->t[j].sets) {
            APR_ARRAY_PUSH(why, char *) = apr_psprintf(
                p, "%s%s: %" APR_UINT64_T_FMT " -> %" APR_UINT64_T_FMT
                " entries", *name ? "zone " : "the actor fallback table "
                "(AuraRateLimitEntries)", name,
                d[i].sets * AURA_LIMITER_WAYS,
                g->t[j].sets * AURA_LIMITER_WAYS);
        }
    }
    for (i = 0; i < h->tables; i++) {
        for (j = 0; j < g->ntables && strcmp(d[i].name, g->t[j].name); j++) {
            continue;
        }
        if (j == g->ntables) {
            APR_ARRAY_PUSH(why, char *) = apr_psprintf(p, "zone %s removed",
                                                       d[i].name);
        }
    }
    if (h->journals != g->journals
        || h->journal_records != g->journal_records) {
        APR_ARRAY_PUSH(why, char *) = "ServerLimit or ThreadLimit (the "
                                      "connection table's size)";
    }
    if (h->target_slots != g->targets) {
        APR_ARRAY_PUSH(why, char *) = apr_psprintf(
            p, "AuraTargetBreakerEntries: %" APR_UINT64_T_FMT " -> %"
            APR_UINT64_T_FMT, h->target_slots, g->targets);
    }
    if (h->cap.recs != g->recs) {
        APR_ARRAY_PUSH(why, char *) = apr_psprintf(
            p, "records of the open streams (ServerLimit x ThreadLimit): %"
            APR_UINT64_T_FMT " -> %" APR_UINT64_T_FMT, h->cap.recs,
            g->recs);
    }
    if (h->cap.procs != g->procs) {
        APR_ARRAY_PUSH(why, char *) = apr_psprintf(
            p, "process records of the in-flight caps (2 x ServerLimit): %"
            APR_UINT64_T_FMT " -> %" APR_UINT64_T_FMT, h->cap.procs,
            g->procs);
    }
    if (h->control.slots != g->control_slots) {
        APR_ARRAY_PUSH(why, char *) = apr_psprintf(
            p, "AuraControlSlots: %" APR_UINT64_T_FMT " -> %"
            APR_UINT64_T_FMT, h->control.slots, g->control_slots);
    }
    if (!why->nelts) {
        return "the geometry changed";
    }
    for (j = 1; j < why->nelts; j++) {
        APR_ARRAY_IDX(why, 0, char *) = apr_pstrcat(
            p, APR_ARRAY_IDX(why, 0, char *), ", ",
            APR_ARRAY_IDX(why, j, char *), NULL);
    }
    return APR_ARRAY_IDX(why, 0, char *);
}

static apr_status_t build_segment(aura_shm_retained_t *ret,
                                  const geometry_t *g, server_rec *s)
{
    aura_shm_header_t *h;
    unsigned char rnd[16];
    apr_status_t rv;
    int i;

    rv = apr_shm_create(&ret->shm, (apr_size_t)g->size, NULL,
                        s->process->pool);
    if (rv != APR_SUCCESS) {
        ret->shm = NULL;
        return rv;
    }
    h = apr_shm_baseaddr_get(ret->shm);
    memset(h, 0, (apr_size_t)g->size);
    h->magic = AURA_SHM_MAGIC;
    h->encoding = AURA_SHM_ENCODING;
    h->size = g->size;
    h->fingerprint = g->fingerprint;
    h->layout = g->layout;
    h->tables = (apr_uint64_t)g->ntables;
    h->tables_offset = g->tables_offset;
    h->targets_offset = g->targets_offset;
    h->target_slots = g->targets;
    h->cap.procs_offset = g->procs_offset;
    h->cap.procs = g->procs;
    h->cap.recs_offset = g->recs_offset;
    h->cap.recs = g->recs;
    h->conns_offset = g->conns_offset;
    h->conn_sets = g->conn_sets;
    h->journals_offset = g->journals_offset;
    h->journals = g->journals;
    h->journal_records = g->journal_records;
    h->journal_stride = g->journal_stride;
    h->control.offset = g->control_offset;
    h->control.slots = g->control_slots;
    h->fleet.offset = g->fleet_offset;
    h->fleet.slots = g->fleet_slots;
    for (i = 0; i < g->ntables; i++) {
        aura_shm_table_t *t = directory(h) + i;

        /* Names were checked at 32 characters; refuse, never cut. */
        if (strlen(g->t[i].name) >= sizeof(t->name)) {
            rv = APR_EINVAL;
            break;
        }
        strcpy(t->name, g->t[i].name);
        t->offset = g->t[i].offset;
        t->sets = g->t[i].sets;
    }
    h->created = apr_time_now();
    if (rv == APR_SUCCESS) {
        rv = apr_generate_random_bytes(h->hash_key, sizeof(h->hash_key));
    }
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
    ret->size = (apr_size_t)g->size;
    return APR_SUCCESS;
}

/* Also under apachectl -t: a configuration whose tables cannot be laid
 * out does not start. */
int aura_shm_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *s)
{
    geometry_t g;
    const char *err = geometry_of(pconf, ptemp, s, &g);

    (void)plog;
    if (err) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                     AURA_LOGNO(00601) "the shared segment cannot be laid "
                     "out: %s (lower AuraRateLimitEntries or the zones' "
                     "entries=)", err);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return OK;
}

/* Each zone learns its table (by name, from the directory itself). */
static void assign_tables(apr_pool_t *pconf)
{
    apr_array_header_t *zones = aura_zones(pconf);
    int i;

    for (i = 0; i < zones->nelts; i++) {
        aura_zone_t *z = APR_ARRAY_IDX(zones, i, aura_zone_t *);

        z->table = zone_table(z->name);
    }
}

apr_status_t aura_shm_post_config(apr_pool_t *pconf, apr_pool_t *ptemp,
                                  server_rec *s)
{
    aura_shm_retained_t *ret;
    geometry_t g;
    const char *why = geometry_of(pconf, ptemp, s, &g);
    apr_status_t rv;

    if (why) {
        return APR_EINVAL;         /* check_config said why */
    }
    ret = ap_retained_data_get(AURA_RETAINED_KEY);
    if (!ret) {
        ret = ap_retained_data_create(AURA_RETAINED_KEY, sizeof(*ret));
    }
    if (ret->shm
        && (why = rebuild_reason(apr_shm_baseaddr_get(ret->shm), &g,
                                 ptemp))) {
        aura_shm_header_t *old = apr_shm_baseaddr_get(ret->shm);

        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, AURA_LOGNO(00002)
                     "shared segment rebuilt: size %" APR_SIZE_T_FMT
                     " -> %" APR_UINT64_T_FMT " bytes, fingerprint %016"
                     APR_UINT64_T_HEX_FMT " -> %016" APR_UINT64_T_HEX_FMT
                     ", because %s (breaker and limiter state starts "
                     "afresh)", ret->size, g.size,
                     old->magic == AURA_SHM_MAGIC ? old->fingerprint : 0,
                     g.fingerprint, why);
        /* Old children keep their own mapping until they exit. */
        apr_shm_destroy(ret->shm);
        ret->shm = NULL;
    }
    if (!ret->shm) {
        rv = build_segment(ret, &g, s);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s, AURA_LOGNO(00003)
                         "cannot create the shared segment of %"
                         APR_UINT64_T_FMT " bytes", g.size);
            return rv;
        }
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, AURA_LOGNO(00004)
                     "shared segment created: %" APR_UINT64_T_FMT " bytes, "
                     "%d rate-limit tables, fingerprint %016"
                     APR_UINT64_T_HEX_FMT, g.size, g.ntables,
                     g.fingerprint);
    }
    shm_base = apr_shm_baseaddr_get(ret->shm);
    apr_atomic_inc64(&shm_base->configs);
    assign_tables(pconf);

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

/* The rate-limit tables: {"<zone>": {entries, full, rejected}}, and,
 * when walk is set, what a walk of each finds (used, limited) and
 * whether the segment is valid (validate_segment()). */
static void describe_tables(json_t *obj, int walk, apr_pool_t *p)
{
    json_t *zones = json_object();
    apr_uint64_t i, now = aura_clock_ns();

    for (i = 0; i < shm_base->tables; i++) {
        aura_shm_table_t *t = directory(shm_base) + i;
        json_t *o = json_object();

        json_object_set_new(o, "entries", json_integer((json_int_t)
                            (t->sets * AURA_LIMITER_WAYS)));
        json_object_set_new(o, "full", json_integer((json_int_t)
                            apr_atomic_read64(&t->full)));
        json_object_set_new(o, "rejected", json_integer((json_int_t)
                            apr_atomic_read64(&t->rejected)));
        if (walk) {
            aura_limiter_census_t c;

            census(shm_base, i, now, &c);
            json_object_set_new(o, "used", json_integer((json_int_t)c.used));
            json_object_set_new(o, "limited",
                                json_integer((json_int_t)c.limited));
        }
        if (i == 0) {
            json_object_set_new(obj, "actor_table", o);
        }
        else {
            json_object_set_new(zones, t->name, o);
        }
    }
    json_object_set_new(obj, "zones", zones);
    if (walk) {
        const char *why = validate_segment(p);

        json_object_set_new(obj, "valid", json_boolean(!why));
        if (why) {
            json_object_set_new(obj, "invalid", json_string(why));
        }
    }
}

void aura_shm_describe(json_t *obj, int walk, apr_pool_t *p)
{
    apr_uint64_t i, entries = 0;
    char fp[17];

    if (!shm_base) {
        return;
    }
    json_object_set_new(obj, "id", json_string(shm_base->id));
    json_object_set_new(obj, "size", json_integer((json_int_t)
                                                  shm_base->size));
    apr_snprintf(fp, sizeof(fp), "%016" APR_UINT64_T_HEX_FMT,
                 shm_base->fingerprint);
    json_object_set_new(obj, "fingerprint", json_string(fp));
    json_object_set_new(obj, "created",
                        json_integer((json_int_t)
                                     apr_time_sec(shm_base->created)));
    json_object_set_new(obj, "configs",
                        json_integer((json_int_t)
                                     apr_atomic_read64(&shm_base->configs)));
    json_object_set_new(obj, "target_entries",
                        json_integer((json_int_t)shm_base->target_slots));
    for (i = 0; i < shm_base->tables; i++) {
        entries += directory(shm_base)[i].sets * AURA_LIMITER_WAYS;
    }
    /* All tables together: the memory the limiters take, /16 bytes. */
    json_object_set_new(obj, "limiter_entries",
                        json_integer((json_int_t)entries));
    describe_tables(obj, walk, p);
    for (i = 0; i < AURA_CTR_COUNT; i++) {
        json_object_set_new(obj, counter_names[i],
                            json_integer((json_int_t)apr_atomic_read64(
                                &shm_base->counters[i])));
    }
}
