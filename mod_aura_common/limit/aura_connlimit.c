/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_connlimit.c: AuraMaxConnectionsPerAddress, a cap on the
 * connections one client address holds open to one listener, counted
 * across every child in the shared segment (aura_conntable.h) and
 * enforced when the connection starts, before a byte of it is read.
 *
 * Why at the connection: httpd 2.4 reads a request's headers in a
 * worker thread that blocks until they are complete (the event MPM too:
 * ap_read_request() is synchronous), so 200 connections dribbling
 * headers hold 200 workers, and nothing that acts on a request (the
 * rate limit, the breakers) ever runs for them.  Counting happens in a
 * pre_connection hook (after the event MPM's, before mod_ssl's or
 * anything that allocates); past the cap the hook returns an error,
 * and every MPM then closes the socket at once: no response, no
 * lingering, as mod_qos's QS_SrvMaxConnPerIP does.  A 503 was not
 * written on purpose: on a TLS or HTTP/2 listener a plain-text answer
 * would be garbage, and a response costs a write on a connection
 * being refused.  The connection is counted out by a c->pool cleanup,
 * or earlier under the event MPM: when httpd starts its lingering
 * close (pre_close_connection), which the listener thread finishes
 * without a worker.  Otherwise a client that reopens each connection
 * the server closed (a 408 from mod_reqtimeout) is counted twice while
 * the old one lingers, and reaches a cap it stays under.  Under prefork
 * and worker the lingering close holds the worker: it stays counted.
 *
 * The cap is read from the listener's VirtualHost (c->base_server: at
 * this point the name-based VirtualHost is not known, only the address
 * and port it came in on), and the count is per (local address and
 * port, client address): the data plane's and the management plane's
 * listeners count apart.  IPv6 clients count by their leading
 * AuraRateLimitIPv6Prefix bits, as the rate limiter keys them.
 *
 * The reading budget (AuraMaxReadingConnections) counts, per listener,
 * the connections still sending their first request.  When it is full
 * the newcomer is not simply closed: that handed the listener to
 * whoever filled it first (18 half-sent requests from 3 addresses
 * closed every other connection, issue #28).  Instead the holder (an
 * address; an IPv6 prefix of AuraReadingIPv6Prefix bits, /48 by
 * default, so that one host with many /64s is one holder) that holds
 * the most reading slots loses its oldest reader, unless the newcomer's
 * own holder has readers and would not stay below that holder after
 * the swap: then the newcomer is the one past its share, and is closed
 * (aura_readers.h has the rule and why).
 * Each reading connection has a record in its child's journal; a
 * shedder in any child marks the victim's record, and the owning child
 * shuts the victim's socket down from a thread of its own (every 10 ms;
 * SHED_EVERY says why not mod_watchdog): shutdown(2) wakes the worker
 * blocked reading it, or the MPM polling it, and the connection ends as
 * if the client had closed it.  The socket is shut down through a
 * duplicate descriptor the child keeps while the connection reads, so
 * a descriptor number reused by another connection is never touched.
 * The newcomer is counted in at once, over the budget, until the
 * victim is gone (by a quarter of the budget at most).
 *
 * HTTP/2: a connection counts as reading until its preface and client
 * SETTINGS have arrived (an input filter above mod_ssl counts the bytes
 * mod_http2 reads), not until its first stream, and from its first
 * HTTP/2 read on it has AuraH2PrefaceTimeout to send them; past it the
 * same thread sheds it.  A bare preface held a reading slot for 60 s.
 *
 * Killed children: each child claims a journal in the segment at
 * child_init and records there the slot of every connection it counts
 * in (aura_conntable.h); the parent's child_status hook reclaims the
 * journal of a child that exited, and every new child sweeps journals
 * whose owner no longer exists.  Written in child_init only: this
 * child's journal, its free-record stack (guarded by a thread mutex of
 * the child pool) and, in post_config, the auto cap.
 */
#include "core/aura_clock.h"
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_plane.h"
#include "core/aura_siphash.h"
#include "limit/aura_connlimit.h"
#include "limit/aura_conntable.h"
#include "limit/aura_limit.h"
#include "limit/aura_limit_conf.h"
#include "limit/aura_readers.h"
#include "shm/aura_shm.h"

#include "http_connection.h"
#include "http_protocol.h"
#include "ap_mpm.h"
#include "mpm_common.h"
#include "apr_atomic.h"
#include "apr_strings.h"
#include "apr_thread_mutex.h"
#include "apr_thread_proc.h"

#include <jansson.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* A refused address is logged at most once per this many seconds. */
#define LOG_INTERVAL 60

/* How often each child's reader thread looks for readers to close.
 * Not mod_watchdog: its 100 ms slice is too coarse, a shed reader holds
 * its worker and a slot of the budget until it is closed, and a legitimate
 * newcomer every few ms then found a quarter of the budget still being
 * shed (85 of 100 served instead of 100).  A scan of this child's
 * records (2 x ThreadLimit words) every 10 ms costs nothing. */
#define SHED_EVERY    apr_time_from_msec(10)

/* The input filter that sees an HTTP/2 preface and SETTINGS go by. */
#define READING_FILTER "AURA_READING"
static ap_filter_rec_t *reading_filter_handle;
static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN 24
#define H2_HEAD_LEN    (H2_PREFACE_LEN + 9)     /* and a frame header */

/* Written in post_config (the auto caps, the MPM's kind) and child_init
 * (the rest). */
static int auto_cap = 2;
static int auto_reading = 1;
static int async_mpm;               /* lingering closes hold no worker */
static aura_conn_journal_t *journal;
static apr_uint32_t *free_stack;
static apr_uint32_t free_top;
static apr_thread_mutex_t *journal_lock;
static int can_shed;                /* this child's reader thread runs */
static volatile apr_uint32_t shed_stop;
static apr_thread_t *shed_thread;
static server_rec *shed_server;

/* This child's reading records (in its journal), and per record the
 * duplicate descriptor of the connection's socket (-1: none) and
 * whether it was shut down already; both and the free stack under
 * journal_lock. */
typedef struct {
    int fd;
    int shut;
} local_reader_t;
static aura_conn_reader_t *my_readers;
static apr_uint32_t my_nreaders;
static local_reader_t *local_readers;
static apr_uint32_t *reader_free;
static apr_uint32_t reader_top;

/* One count a connection holds (its address's, or its listener's
 * while it reads its first request), for release(). */
typedef struct {
    apr_uint64_t slot;
    apr_int64_t record;             /* its journal record, -1: none */
    apr_int64_t reader;             /* its reading record, -1: none */
    volatile apr_uint32_t done;     /* released already (an HTTP/2
                                       stream may release its master's
                                       count from another thread) */
} held_t;

/* The counts a client connection holds, in its conn_config. */
typedef struct {
    held_t *address;
    held_t *reading;                /* NULL once its request is read */
    const aura_server_conf_t *sc;   /* its listener's configuration */
    unsigned char head[H2_HEAD_LEN];/* its first bytes, as read */
    apr_uint64_t seen;              /* bytes read while it reads */
    int h2;                         /* HTTP/2 reads started */
    int watched;                    /* 0: the filter only passes on */
} conn_counts_t;

apr_status_t aura_connlimit_post_config(apr_pool_t *pconf, server_rec *s)
{
    int daemons = 0, threads = 0, workers;

    (void)pconf;
    (void)s;
    if (ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons) != APR_SUCCESS
        || daemons < 1) {
        daemons = 1;
    }
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS
        || threads < 1) {
        threads = 1;
    }
    workers = daemons * threads;
    auto_cap = workers / 3 > 2 ? workers / 3 : 2;
    auto_reading = 2 * workers / 3 > 1 ? 2 * workers / 3 : 1;
    if (ap_mpm_query(AP_MPMQ_IS_ASYNC, &async_mpm) != APR_SUCCESS) {
        async_mpm = 0;
    }
    return APR_SUCCESS;
}

/* The reading cap of the listener: 0 when off. */
static int reading_cap_of(const aura_server_conf_t *c)
{
    int n = c->max_reading;

    if (n == AURA_UNSET) {
        n = aura_plane_info(c->plane)->reading_auto ? AURA_CONN_AUTO : 0;
    }
    return n == AURA_CONN_AUTO ? auto_reading : n;
}

/* The cap of the listener whose VirtualHost is s: 0 when off. */
static int cap_of(const aura_server_conf_t *c)
{
    int n = c->max_conns;

    if (n == AURA_UNSET) {
        n = aura_plane_info(c->plane)->conns_auto ? AURA_CONN_AUTO : 0;
    }
    return n == AURA_CONN_AUTO ? auto_cap : n;
}

static int exempt(const aura_server_conf_t *c, apr_sockaddr_t *sa)
{
    int i;

    for (i = 0; c->conn_exempt && i < c->conn_exempt->nelts; i++) {
        if (apr_ipsubnet_test(APR_ARRAY_IDX(c->conn_exempt, i,
                                            apr_ipsubnet_t *), sa)) {
            return 1;
        }
    }
    return 0;
}

/* The key: the listener (local address and port), then the client. */
static apr_uint64_t key_of(const conn_rec *c, const aura_server_conf_t *sc)
{
    unsigned char buf[2 + 17 + 17];
    apr_size_t n;
    int prefix = aura_conf_ipv6_prefix(sc);

    buf[0] = (unsigned char)(c->local_addr->port >> 8);
    buf[1] = (unsigned char)(c->local_addr->port & 0xff);
    n = 2 + aura_address_bytes(c->local_addr, 128, buf + 2);
    n += aura_address_bytes(c->client_addr, prefix, buf + n);
    return aura_siphash24(aura_shm_hash_key(), buf, n);
}

static void release(held_t *h)
{
    apr_uint64_t sets;
    aura_conn_slot_t *slots = aura_shm_conns(&sets);

    if (apr_atomic_cas32(&h->done, 1, 0) != 0) {
        return;
    }
    /* The record first: a child killed between the two leaves one
     * connection counted (the address loses one of its cap until the
     * slot empties), never one counted out twice. */
    if (h->record >= 0 && journal) {
        AURA_CONN_RECORDS(journal)[h->record] = 0;
        apr_thread_mutex_lock(journal_lock);
        free_stack[free_top++] = (apr_uint32_t)h->record;
        apr_thread_mutex_unlock(journal_lock);
    }
    /* Its reading record: the duplicate descriptor is closed under the
     * lock the reader thread shuts sockets down under. */
    if (h->reader >= 0 && my_readers) {
        local_reader_t *l = &local_readers[h->reader];

        apr_thread_mutex_lock(journal_lock);
        aura_reader_release(&my_readers[h->reader]);
        if (l->fd >= 0) {
            close(l->fd);
            l->fd = -1;
        }
        reader_free[reader_top++] = (apr_uint32_t)h->reader;
        apr_thread_mutex_unlock(journal_lock);
    }
    if (slots) {
        aura_conn_leave(slots, h->slot);
    }
}

/* The listener's key (local address and port alone). */
static apr_uint64_t listener_key(const conn_rec *c)
{
    unsigned char buf[2 + 17 + 1];
    apr_size_t n;

    buf[0] = (unsigned char)(c->local_addr->port >> 8);
    buf[1] = (unsigned char)(c->local_addr->port & 0xff);
    n = 2 + aura_address_bytes(c->local_addr, 128, buf + 2);
    buf[n++] = 'R';                 /* never an address's key */
    return aura_siphash24(aura_shm_hash_key(), buf, n);
}

static apr_status_t conn_leave(void *data)
{
    release(data);
    return APR_SUCCESS;
}

/* A record of this child's journal for slot, -1 when there is none
 * free (the connection stays counted; only a kill would leak it). */
static apr_int64_t record(apr_uint64_t slot)
{
    apr_uint32_t r;

    if (!journal) {
        return -1;
    }
    apr_thread_mutex_lock(journal_lock);
    if (!free_top) {
        apr_thread_mutex_unlock(journal_lock);
        return -1;
    }
    r = free_stack[--free_top];
    apr_thread_mutex_unlock(journal_lock);
    AURA_CONN_RECORDS(journal)[r] = (apr_uint32_t)(slot + 1);
    return r;
}

/* A count the connection now holds, released by c->pool's cleanup
 * (or earlier, by release()). */
static held_t *hold(conn_rec *c, apr_uint64_t slot)
{
    held_t *h = apr_palloc(c->pool, sizeof(*h));

    h->slot = slot;
    h->done = 0;
    h->reader = -1;
    h->record = record(slot);
    apr_pool_cleanup_register(c->pool, h, conn_leave, apr_pool_cleanup_null);
    return h;
}

static conn_counts_t *counts_of(conn_rec *c)
{
    conn_counts_t *n = ap_get_module_config(c->conn_config,
                                            &aura_common_module);

    if (!n) {
        n = apr_pcalloc(c->pool, sizeof(*n));
        ap_set_module_config(c->conn_config, &aura_common_module, n);
    }
    return n;
}

static void log_refused(conn_rec *c, aura_conn_slot_t *s,
                        apr_uint64_t count, int cap)
{
    if (!aura_log_due(&s->logged, LOG_INTERVAL)) {
        return;
    }
    ap_log_cerror(APLOG_MARK, APLOG_WARNING, 0, c, AURA_LOGNO(00900)
                  "connection from %s to %s:%u closed at once: the "
                  "address has %" APR_UINT64_T_FMT " open to this "
                  "listener, AuraMaxConnectionsPerAddress %d (logged once "
                  "a minute per address)", c->client_ip, c->local_ip,
                  (unsigned)c->local_addr->port, count, cap);
}

static void log_full(conn_rec *c)
{
    volatile apr_uint64_t *last = aura_shm_flag(AURA_FLAG_CONNS_LOGGED);

    if (!last || !aura_log_due(last, LOG_INTERVAL)) {
        return;
    }
    ap_log_cerror(APLOG_MARK, APLOG_WARNING, 0, c, AURA_LOGNO(00901)
                  "connection table full: a connection from %s admitted "
                  "without a per-address count (fail-open; logged once a "
                  "minute)", c->client_ip);
}

/* Once a minute (per listener) at most: the listener's readers were at
 * the budget and the newcomer's holder had readers enough not to shed
 * another's (aura_readers_pick()). */
static void log_busy(conn_rec *c, aura_conn_slot_t *s, int cap,
                     const aura_readers_choice_t *ch)
{
    if (!aura_log_due(&s->logged, LOG_INTERVAL)) {
        return;
    }
    ap_log_cerror(APLOG_MARK, APLOG_WARNING, 0, c, AURA_LOGNO(00906)
                  "connection from %s to %s:%u closed at once: %d "
                  "connections of this listener are still sending their "
                  "first request, AuraMaxReadingConnections %d, and its "
                  "address holds %" APR_UINT64_T_FMT " of them (the largest "
                  "of the %" APR_UINT64_T_FMT " holders: %" APR_UINT64_T_FMT
                  "; logged once a minute per listener)", c->client_ip,
                  c->local_ip, (unsigned)c->local_addr->port, cap, cap,
                  ch->mine, ch->holders, ch->top);
}

/* Once a minute at most: a reader was shed for a newcomer. */
static void log_shed(conn_rec *c, const aura_conn_reader_t *victim,
                     const aura_readers_choice_t *ch, int cap)
{
    volatile apr_uint64_t *last = aura_shm_flag(AURA_FLAG_SHED_LOGGED);
    apr_interval_time_t age = apr_time_now() - (apr_time_t)victim->since;
    char who[64];

    aura_prefix_text(victim->prefix, victim->bits, who, sizeof(who));
    ap_log_cerror(APLOG_MARK, APLOG_DEBUG, 0, c, AURA_LOGNO(01501)
                  "reading budget of %s:%u full (%d): shed a connection "
                  "of %s (%" APR_UINT64_T_FMT " reading, reading for %"
                  APR_TIME_T_FMT " ms) for one from %s", c->local_ip,
                  (unsigned)c->local_addr->port, cap, who, ch->top,
                  apr_time_as_msec(age), c->client_ip);
    if (!last || !aura_log_due(last, LOG_INTERVAL)) {
        return;
    }
    ap_log_cerror(APLOG_MARK, APLOG_WARNING, 0, c, AURA_LOGNO(01502)
                  "connection of %s to %s:%u shed: the listener's %d "
                  "reading slots (AuraMaxReadingConnections) were taken, "
                  "%s held %" APR_UINT64_T_FMT " of them, the most of %"
                  APR_UINT64_T_FMT " holders, and this was its oldest "
                  "(reading for %" APR_TIME_T_FMT " ms); a connection from "
                  "%s took its place (logged once a minute)", who,
                  c->local_ip, (unsigned)c->local_addr->port, cap, who,
                  ch->top, ch->holders, apr_time_as_msec(age),
                  c->client_ip);
}

/* The reading record of a connection, as far as the connection tells:
 * its listener, its holder (the address cut to a prefix), the time. */
static void describe_reader(const conn_rec *c, const aura_server_conf_t *sc,
                            int cap, aura_conn_reader_t *me)
{
    const apr_sockaddr_t *la = c->local_addr;
    int v6 = aura_conf_reading_v6_prefix(sc);
    unsigned char buf[8 + 17];

    memset(me, 0, sizeof(*me));
    me->listener = listener_key(c);
    aura_address_bytes(c->client_addr, v6, me->prefix);
    me->bits = (unsigned char)(me->prefix[0] == 6 ? v6 : 32);
    memcpy(buf, &me->listener, 8);
    memcpy(buf + 8, me->prefix, 17);
    me->holder = aura_siphash24(aura_shm_hash_key(), buf, sizeof(buf));
    aura_address_bytes(la, 128, me->local);
    me->port = la->port;
    me->cap = (apr_uint32_t)cap;
    me->since = (apr_uint64_t)apr_time_now();
}

/* Give the reading count h a record of this child, so that it can be
 * shed: a duplicate of the socket's descriptor (for shutdown(2) from
 * the reader thread) and the shared record.  Without a free record
 * (or descriptor) it stays counted but cannot be shed. */
static void track(void *csd, held_t *h, const aura_conn_reader_t *me)
{
    apr_os_sock_t fd;
    apr_uint32_t i;
    int dup_fd;

    if (!my_readers || !csd
        || apr_os_sock_get(&fd, (apr_socket_t *)csd) != APR_SUCCESS
        || (dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        return;
    }
    apr_thread_mutex_lock(journal_lock);
    if (!reader_top) {
        apr_thread_mutex_unlock(journal_lock);
        close(dup_fd);
        return;
    }
    i = reader_free[--reader_top];
    local_readers[i].fd = dup_fd;
    local_readers[i].shut = 0;
    apr_thread_mutex_unlock(journal_lock);
    aura_reader_claim(&my_readers[i], me);
    h->reader = i;
}

/* The reading count of a connection: hold it, track it. */
static void admit_reading(conn_rec *c, void *csd, apr_uint64_t slot,
                          const aura_server_conf_t *sc,
                          const aura_conn_reader_t *me)
{
    conn_counts_t *n = counts_of(c);

    n->reading = hold(c, slot);
    n->sc = sc;
    track(csd, n->reading, me);
    /* The filter that ends the reading of an HTTP/2 connection, where
     * the listener speaks it (tracked or not: only the preface timeout
     * needs the record). */
    if (ap_is_allowed_protocol(c, NULL, c->base_server, "h2")
        || ap_is_allowed_protocol(c, NULL, c->base_server, "h2c")) {
        n->watched = 1;
        ap_add_input_filter_handle(reading_filter_handle, n, NULL, c);
    }
}

/* The budget is full: shed the oldest reader of the holder that holds
 * the most (aura_readers_pick()), and count the newcomer in over the
 * budget until the victim's child has closed it (a shed reader holds
 * its worker until that child's next SHED_EVERY tick).  By a quarter
 * of the budget (and one) at most: beyond, the newcomer is refused, so
 * that sheds pending cannot take the workers the budget leaves to the
 * other listeners.
 * OK, or an error status to refuse the newcomer. */
static int shed_for(conn_rec *c, void *csd, const aura_server_conf_t *sc,
                    const aura_conn_reader_t *me, aura_conn_slot_t *slots,
                    apr_uint64_t sets, apr_uint64_t lslot, int cap)
{
    apr_uint64_t i, n = 1, k, room, slot = 0, count = 0;
    apr_uint32_t per = 0, records;
    aura_reader_view_t *v;
    aura_readers_choice_t ch;
    int tries;

    memset(&ch, 0, sizeof(ch));
    if (can_shed && aura_shm_journal(0, &records, &n)
        && aura_shm_readers(0, &per) && per) {
        room = n * per < 2 * (apr_uint64_t)cap + 1 ? n * per
                                                   : 2 * (apr_uint64_t)cap + 1;
        v = apr_palloc(c->pool, room * sizeof(*v));
        for (tries = 0; tries < 3; tries++) {
            aura_conn_reader_t *r, seen;

            for (i = 0, k = 0; i < n && k < room; i++) {
                if ((r = aura_shm_readers(i, &per)) != NULL) {
                    k += aura_readers_collect(r, per, me->listener, i * per,
                                              v + k, room - k);
                }
            }
            if (aura_readers_pick(v, k, me->holder, &ch) != AURA_READERS_SHED
                || aura_conn_enter(slots, sets, me->listener,
                                   (apr_uint64_t)cap + cap / 4 + 1,
                                   &slot, &count) != AURA_CONN_ADMITTED) {
                break;
            }
            r = aura_shm_readers(v[ch.victim].index / per, &per)
                + v[ch.victim].index % per;
            /* Read before the compare-and-swap: if it succeeds, the
             * record was this connection's all along. */
            memcpy(&seen, r, sizeof(seen));
            if (aura_reader_shed(r, v[ch.victim].word) == APR_SUCCESS) {
                admit_reading(c, csd, slot, sc, me);
                aura_count(AURA_CTR_CONN_SHED);
                log_shed(c, &seen, &ch, cap);
                return OK;
            }
            aura_conn_leave(slots, slot);
        }
    }
    aura_count(AURA_CTR_CONN_BUSY);
    log_busy(c, &slots[lslot], cap, &ch);
    return HTTP_SERVICE_UNAVAILABLE;
}

/* The listener's count of connections reading their first request:
 * OK (counted, or no cap), or an error status when it is full and the
 * newcomer is the one to close. */
static int enter_reading(conn_rec *c, void *csd,
                         const aura_server_conf_t *sc,
                         aura_conn_slot_t *slots, apr_uint64_t sets)
{
    int cap = reading_cap_of(sc);
    apr_uint64_t slot = 0, count = 0;
    aura_conn_reader_t me;

    if (cap <= 0) {
        return OK;
    }
    describe_reader(c, sc, cap, &me);
    switch (aura_conn_enter(slots, sets, me.listener, (apr_uint64_t)cap,
                            &slot, &count)) {
    case AURA_CONN_ADMITTED:
        admit_reading(c, csd, slot, sc, &me);
        return OK;
    case AURA_CONN_FULL:
        aura_count(AURA_CTR_CONN_TABLE_FULL);
        log_full(c);
        return OK;
    default:
        return shed_for(c, csd, sc, &me, slots, sets, slot, cap);
    }
}

/* This connection's reading ends (HTTP/2: preface and SETTINGS read). */
static void reading_done(conn_counts_t *n)
{
    if (n->reading) {
        release(n->reading);
        n->reading = NULL;
    }
}

/* Input filter of a reading connection, above mod_ssl (plain bytes):
 * HTTP/1.1 reads its request line by lines, and post_read_request
 * counts it out, so the first line read removes the filter.  mod_http2
 * reads bytes: its first read starts AuraH2PrefaceTimeout, and once the
 * preface and a whole client SETTINGS frame went by, the connection no
 * longer counts as reading.  Speculative reads (mod_http2 peeking for a
 * preface) are not consumed, so not counted. */
static apr_status_t reading_in(ap_filter_t *f, apr_bucket_brigade *bb,
                               ap_input_mode_t mode, apr_read_type_e block,
                               apr_off_t readbytes)
{
    conn_counts_t *n = f->ctx;
    apr_status_t rv;
    apr_bucket *b;

    /* Never removed, only idle: removing it from inside its first
     * GETLINE read (a connection filter, f->r NULL: the request's
     * chains are not fixed up) left HTTP/1.1 requests hanging in
     * ap_discard_request_body. */
    if (!n->watched || !n->reading || mode == AP_MODE_GETLINE) {
        n->watched = 0;
        return ap_get_brigade(f->next, bb, mode, block, readbytes);
    }
    if (mode == AP_MODE_READBYTES && !n->h2) {
        n->h2 = 1;
        if (n->reading->reader >= 0) {
            aura_conn_reader_t *r = &my_readers[n->reading->reader];

            r->h2 = 1;
            apr_atomic_set64(&r->deadline, (apr_uint64_t)
                             (apr_time_now()
                              + aura_conf_h2_preface_timeout(n->sc)));
        }
    }
    rv = ap_get_brigade(f->next, bb, mode, block, readbytes);
    if (rv != APR_SUCCESS || mode != AP_MODE_READBYTES) {
        return rv;
    }
    for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb);
         b = APR_BUCKET_NEXT(b)) {
        const char *data;
        apr_size_t len, k;

        if (APR_BUCKET_IS_METADATA(b)) {
            continue;
        }
        if (apr_bucket_read(b, &data, &len, APR_BLOCK_READ) != APR_SUCCESS) {
            return rv;
        }
        for (k = 0; k < len && n->seen + k < H2_HEAD_LEN; k++) {
            n->head[n->seen + k] = (unsigned char)data[k];
        }
        n->seen += len;
    }
    if (memcmp(n->head, h2_preface, n->seen < H2_PREFACE_LEN
                                    ? (apr_size_t)n->seen : H2_PREFACE_LEN)) {
        /* Not HTTP/2: it stays reading until its request or its end. */
        n->watched = 0;
    }
    else if (n->seen >= H2_HEAD_LEN
             && (n->head[H2_PREFACE_LEN + 3] != 4      /* not SETTINGS */
                 || n->seen >= H2_HEAD_LEN
                               + ((apr_uint64_t)n->head[H2_PREFACE_LEN] << 16
                                  | n->head[H2_PREFACE_LEN + 1] << 8
                                  | n->head[H2_PREFACE_LEN + 2]))) {
        ap_log_cerror(APLOG_MARK, APLOG_TRACE1, 0, f->c,
                      "HTTP/2 preface and SETTINGS read: no longer reading");
        reading_done(n);
        n->watched = 0;
    }
    return rv;
}

/* Every SHED_EVERY in every child: shut down the sockets of this
 * child's readers that were shed (by any child) or whose HTTP/2
 * preface is late.  Under journal_lock, so that a record's descriptor
 * is never closed (release()) while it is shut down. */
static void watch_readers(server_rec *s)
{
    apr_time_t now = apr_time_now();
    apr_uint32_t i, late = 0;
    aura_conn_reader_t one;

    apr_thread_mutex_lock(journal_lock);
    if (reader_top == my_nreaders) {            /* none tracked */
        apr_thread_mutex_unlock(journal_lock);
        return;
    }
    for (i = 0; i < my_nreaders; i++) {
        aura_conn_reader_t *r = &my_readers[i];
        local_reader_t *l = &local_readers[i];
        apr_uint64_t w, due;

        if (l->fd < 0 || l->shut) {
            continue;
        }
        w = apr_atomic_read64(&r->word);
        due = apr_atomic_read64(&r->deadline);
        if (AURA_READER_STATE(w) == AURA_READER_READING && due
            && (apr_uint64_t)now > due
            && aura_reader_shed(r, w) == APR_SUCCESS) {
            if (!late++) {
                memcpy(&one, r, sizeof(one));
            }
            w = apr_atomic_read64(&r->word);
        }
        if (AURA_READER_STATE(w) == AURA_READER_SHED) {
            shutdown(l->fd, SHUT_RDWR);
            l->shut = 1;
        }
    }
    apr_thread_mutex_unlock(journal_lock);
    for (i = 0; i < late; i++) {
        aura_count(AURA_CTR_CONN_PREFACE_TIMEOUT);
    }
    if (late) {
        volatile apr_uint64_t *last = aura_shm_flag(AURA_FLAG_PREFACE_LOGGED);
        char who[64];

        if (last && aura_log_due(last, LOG_INTERVAL)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(01503)
                         "%u HTTP/2 connection(s) closed (one of %s to "
                         "port %u): no preface and SETTINGS within "
                         "AuraH2PrefaceTimeout (logged once a minute)",
                         late, aura_prefix_text(one.prefix, one.bits, who,
                                                sizeof(who)),
                         (unsigned)one.port);
        }
    }
}

/* Returns instead of apr_thread_exit(): pthread_exit()'s forced unwind
 * made AddressSanitizer report a stack-use-after-scope in its own
 * thread teardown at every child's exit; nothing reads the exit value. */
static void *APR_THREAD_FUNC shed_loop(apr_thread_t *t, void *data)
{
    (void)t;
    (void)data;
    while (!apr_atomic_read32(&shed_stop)) {
        watch_readers(shed_server);
        apr_sleep(SHED_EVERY);
    }
    return NULL;
}

/* pchild's pre-cleanup: the thread ends before journal_lock goes. */
static apr_status_t shed_join(void *data)
{
    apr_status_t rv;

    (void)data;
    apr_atomic_set32(&shed_stop, 1);
    apr_thread_join(&rv, shed_thread);
    can_shed = 0;
    return APR_SUCCESS;
}

/* child_init: the thread that closes this child's shed readers. */
static void start_shedding(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv;

    shed_server = s;
    rv = apr_thread_create(&shed_thread, NULL, shed_loop, NULL, pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, AURA_LOGNO(01500)
                     "cannot start the reader thread: in this child a full "
                     "AuraMaxReadingConnections closes the newcomer instead "
                     "of the largest holder's oldest reader, and "
                     "AuraH2PrefaceTimeout is not enforced");
        return;
    }
    apr_pool_pre_cleanup_register(pchild, NULL, shed_join);
    can_shed = 1;
}

/* post_read_request: the connection's first request is read; it no
 * longer counts as reading (HTTP/2: the first stream's request counts
 * its master connection out). */
static int conn_request_read(request_rec *r)
{
    conn_rec *c = r->connection->master ? r->connection->master
                                        : r->connection;
    conn_counts_t *n = ap_get_module_config(c->conn_config,
                                            &aura_common_module);

    if (n && n->reading) {
        release(n->reading);
        n->reading = NULL;
    }
    return DECLINED;
}

/* pre_close_connection: the lingering close starts; under the event
 * MPM it holds no worker, so the connection counts out now. */
static int conn_closing(conn_rec *c)
{
    conn_counts_t *n;

    if (!async_mpm || c->master) {
        return OK;
    }
    n = ap_get_module_config(c->conn_config, &aura_common_module);
    if (n) {
        if (n->reading) {
            release(n->reading);
        }
        if (n->address) {
            release(n->address);
        }
        ap_set_module_config(c->conn_config, &aura_common_module, NULL);
    }
    return OK;
}

/* Not OK, DECLINED or DONE: the MPM closes the socket without running
 * the connection (the event MPM at once; the others skip processing
 * because of c->aborted). */
static int refuse(conn_rec *c)
{
    c->aborted = 1;
    c->keepalive = AP_CONN_CLOSE;
    return HTTP_SERVICE_UNAVAILABLE;
}

/* pre_connection: count the connection in, or close it at once. */
static int conn_enter(conn_rec *c, void *csd)
{
    const aura_server_conf_t *sc;
    aura_conn_slot_t *slots;
    apr_uint64_t sets, slot = 0, count = 0;
    int cap;

    /* HTTP/2 streams and mod_proxy's backend connections are not
     * client connections. */
    if (c->master || c->outgoing || !c->client_addr || !c->local_addr
        || !c->base_server) {
        return DECLINED;
    }
    sc = aura_server_conf(c->base_server);
    cap = cap_of(sc);
    if (!(slots = aura_shm_conns(&sets)) || exempt(sc, c->client_addr)) {
        return DECLINED;
    }
    /* The address's count first: one address flooding the listener is
     * refused there, without ever touching the count every address
     * shares. */
    switch (cap > 0 ? aura_conn_enter(slots, sets, key_of(c, sc),
                                      (apr_uint64_t)cap, &slot, &count)
                    : AURA_CONN_FULL) {
    case AURA_CONN_ADMITTED:
        counts_of(c)->address = hold(c, slot);
        break;
    case AURA_CONN_FULL:
        if (cap > 0) {
            aura_count(AURA_CTR_CONN_TABLE_FULL);
            log_full(c);
        }
        break;
    default:
        aura_count(AURA_CTR_CONN_REFUSED);
        log_refused(c, &slots[slot], count, cap);
        ap_log_cerror(APLOG_MARK, APLOG_DEBUG, 0, c, AURA_LOGNO(00902)
                      "connection refused: %s has %" APR_UINT64_T_FMT
                      " open (cap %d)", c->client_ip, count, cap);
        return refuse(c);
    }
    /* Refused here, the address's count goes with c->pool's cleanup. */
    return enter_reading(c, csd, sc, slots, sets) == OK ? DECLINED
                                                        : refuse(c);
}

/* Reclaim journal i when it belongs to owner (a dead process). */
static apr_uint64_t reclaim_one(apr_uint64_t i, apr_uint64_t owner)
{
    apr_uint64_t sets, n = 0, njournals, k;
    apr_uint32_t records;
    aura_conn_slot_t *slots = aura_shm_conns(&sets);
    aura_conn_journal_t *j = aura_shm_journal(i, &records, &njournals);
    apr_uint32_t per = 0, r;
    aura_conn_reader_t *readers = aura_shm_readers(i, &per);

    /* Its reading records first, while the owner word still names the
     * dead owner (no new child can claim the journal yet): shedders
     * must not pick a connection nobody will close. */
    for (r = 0; readers && j && r < per
                && apr_atomic_read64(&j->owner) == owner; r++) {
        aura_reader_release(&readers[r]);
    }
    if (!slots || !j
        || aura_conn_reclaim(j, records, owner, slots,
                             sets * AURA_CONN_WAYS, &n) != APR_SUCCESS) {
        return 0;
    }
    for (k = 0; k < n; k++) {
        aura_count(AURA_CTR_CONN_RECLAIMED);
    }
    return n;
}

/* The connections a journal still records (read only). */
static apr_uint64_t recorded(aura_conn_journal_t *j, apr_uint32_t records)
{
    apr_uint64_t n = 0;
    apr_uint32_t k;

    for (k = 0; k < records; k++) {
        n += AURA_CONN_RECORDS(j)[k] != 0;
    }
    return n;
}

/* Parent: a child exited; count out what its journal still holds
 * (connections open when it was killed, or when it exited without
 * closing them). */
static void conn_child_status(server_rec *s, pid_t pid, ap_generation_t gen,
                              int slot, mpm_child_status state)
{
    apr_uint64_t i, n = 1;
    apr_uint32_t records;

    (void)gen;
    (void)slot;
    if (state != MPM_CHILD_EXITED || pid <= 0) {
        return;
    }
    for (i = 0; i < n; i++) {
        aura_conn_journal_t *j = aura_shm_journal(i, &records, &n);
        apr_uint64_t left;

        if (!j) {
            return;
        }
        if (apr_atomic_read64(&j->owner) != (apr_uint64_t)pid) {
            continue;
        }
        left = recorded(j, records);
        reclaim_one(i, (apr_uint64_t)pid);
        if (left) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, AURA_LOGNO(00903)
                         "child %" APR_PID_T_FMT " exited with %"
                         APR_UINT64_T_FMT " connections counted against "
                         "their addresses: counted out", pid, left);
        }
        return;
    }
}

/* Child: reclaim the journals of owners that no longer exist (the
 * parent's hook missed them: e.g. it was itself restarted). */
static void sweep(server_rec *s)
{
    apr_uint64_t i, n = 1;
    apr_uint32_t records;

    for (i = 0; i < n; i++) {
        aura_conn_journal_t *j = aura_shm_journal(i, &records, &n);
        apr_uint64_t owner, left;

        if (!j) {
            return;
        }
        owner = apr_atomic_read64(&j->owner);
        if (!owner || owner == AURA_CONN_RECLAIMING
            || kill((pid_t)owner, 0) == 0 || errno != ESRCH) {
            continue;
        }
        left = recorded(j, records);
        reclaim_one(i, owner);
        if (left) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, AURA_LOGNO(00904)
                         "process %" APR_UINT64_T_FMT " is gone with %"
                         APR_UINT64_T_FMT " connections counted against "
                         "their addresses: counted out", owner, left);
        }
    }
}

void aura_connlimit_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_uint64_t i, n = 1;
    apr_uint32_t records = 0, k;
    apr_uint64_t me = (apr_uint64_t)getpid();

    if (!aura_shm_conns(&i)) {
        return;
    }
    sweep(s);
    for (i = 0; i < n && !journal; i++) {
        aura_conn_journal_t *j = aura_shm_journal(i, &records, &n);

        if (j && aura_conn_journal_claim(j, me) == APR_SUCCESS) {
            journal = j;
            my_readers = aura_shm_readers(i, &my_nreaders);
        }
    }
    if (!journal
        || apr_thread_mutex_create(&journal_lock, APR_THREAD_MUTEX_DEFAULT,
                                   pchild) != APR_SUCCESS) {
        journal = NULL;
        my_readers = NULL;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, AURA_LOGNO(00905)
                     "no connection journal free for this child: if it is "
                     "killed, its open connections stay counted against "
                     "their addresses");
        return;
    }
    free_stack = apr_palloc(pchild, records * sizeof(*free_stack));
    for (k = 0; k < records; k++) {
        AURA_CONN_RECORDS(journal)[k] = 0;
        free_stack[k] = records - 1 - k;
    }
    free_top = records;
    if (my_readers) {
        local_readers = apr_palloc(pchild,
                                   my_nreaders * sizeof(*local_readers));
        reader_free = apr_palloc(pchild, my_nreaders * sizeof(*reader_free));
        for (k = 0; k < my_nreaders; k++) {
            aura_reader_release(&my_readers[k]);
            local_readers[k].fd = -1;
            local_readers[k].shut = 0;
            reader_free[k] = my_nreaders - 1 - k;
        }
        reader_top = my_nreaders;
        start_shedding(pchild, s);
    }
}

/* By listener, holder, then oldest first. */
static int by_listener(const void *a, const void *b)
{
    const aura_conn_reader_t *x = a, *y = b;

    if (x->listener != y->listener) {
        return x->listener < y->listener ? -1 : 1;
    }
    if (x->holder != y->holder) {
        return x->holder < y->holder ? -1 : 1;
    }
    return x->since < y->since ? -1 : x->since > y->since;
}

typedef struct {
    const aura_conn_reader_t *first;    /* its oldest */
    apr_uint64_t n;
    apr_uint64_t h2;
} holder_run_t;

static int by_count(const void *a, const void *b)
{
    const holder_run_t *x = a, *y = b;

    if (x->n != y->n) {
        return x->n > y->n ? -1 : 1;
    }
    return x->first->since < y->first->since ? -1
           : x->first->since > y->first->since;
}

/* The holders listed per listener in /health?detail, the largest first. */
#define DESCRIBE_HOLDERS 8

/* A copy of every record in use, of all children (a snapshot: records
 * change under traffic), sorted by listener, holder, age; *k of them. */
static aura_conn_reader_t *snapshot_readers(apr_pool_t *p, apr_uint64_t *k)
{
    apr_uint64_t i, n = 1, total = 0;
    apr_uint32_t per = 0, r, records;
    aura_conn_reader_t *all;

    *k = 0;
    if (!aura_shm_journal(0, &records, &n) || !aura_shm_readers(0, &per)) {
        return NULL;
    }
    for (i = 0; i < n; i++) {
        aura_conn_reader_t *rd = aura_shm_readers(i, &per);

        for (r = 0; rd && r < per; r++) {
            total += AURA_READER_STATE(apr_atomic_read64(&rd[r].word))
                     != AURA_READER_FREE;
        }
    }
    if (!total) {
        return NULL;
    }
    all = apr_palloc(p, total * sizeof(*all));
    for (i = 0; i < n && *k < total; i++) {
        aura_conn_reader_t *rd = aura_shm_readers(i, &per);

        for (r = 0; rd && r < per && *k < total; r++) {
            memcpy(&all[*k], &rd[r], sizeof(all[*k]));
            if (AURA_READER_STATE(all[*k].word) != AURA_READER_FREE) {
                ++*k;
            }
        }
    }
    qsort(all, *k, sizeof(*all), by_listener);
    return all;
}

/* One listener's object: the records all[a..b) are its. */
static json_t *listener_json(const aura_conn_reader_t *all, apr_uint64_t a,
                             apr_uint64_t b, holder_run_t *runs,
                             apr_pool_t *p)
{
    json_t *l = json_object(), *holders = json_array();
    apr_uint64_t nruns = 0, shed = 0, h, i;
    apr_time_t now = apr_time_now();
    char text[64], *slash;

    for (i = a; i < b; i++) {
        /* Shed ones are on their way out: not held any more. */
        if (AURA_READER_STATE(all[i].word) == AURA_READER_SHED) {
            shed++;
            continue;
        }
        if (!nruns || all[i].holder != runs[nruns - 1].first->holder) {
            runs[nruns].first = &all[i];
            runs[nruns].n = 0;
            runs[nruns++].h2 = 0;
        }
        runs[nruns - 1].n++;
        runs[nruns - 1].h2 += all[i].h2;
    }
    qsort(runs, nruns, sizeof(*runs), by_count);
    /* The listener's address: its "prefix" of full width, less "/n". */
    if (aura_prefix_text(all[a].local, all[a].local[0] == 6 ? 128 : 32,
                         text, sizeof(text)) != text) {
        apr_cpystrn(text, "?", sizeof(text));
    }
    if ((slash = strrchr(text, '/')) != NULL) {
        *slash = '\0';
    }
    json_object_set_new(l, "listener", json_string(
                            apr_psprintf(p, "%s:%u", text,
                                         (unsigned)all[a].port)));
    json_object_set_new(l, "budget", json_integer(all[a].cap));
    json_object_set_new(l, "reading", json_integer((json_int_t)(b - a - shed)));
    json_object_set_new(l, "shed_pending", json_integer((json_int_t)shed));
    json_object_set_new(l, "holder_count", json_integer((json_int_t)nruns));
    for (h = 0; h < nruns && h < DESCRIBE_HOLDERS; h++) {
        json_t *o = json_object();

        json_object_set_new(o, "prefix", json_string(
            aura_prefix_text(runs[h].first->prefix, runs[h].first->bits,
                             text, sizeof(text))));
        json_object_set_new(o, "reading", json_integer((json_int_t)runs[h].n));
        json_object_set_new(o, "http2", json_integer((json_int_t)runs[h].h2));
        json_object_set_new(o, "oldest_ms", json_integer((json_int_t)
            apr_time_as_msec(now - (apr_time_t)runs[h].first->since)));
        json_array_append_new(holders, o);
    }
    json_object_set_new(l, "holders", holders);
    return l;
}

/* "reading": per listener, its budget and who holds it, by address
 * prefix, never anything else of the client. */
static void describe_reading(json_t *obj, apr_pool_t *p)
{
    apr_uint64_t k, a, b;
    aura_conn_reader_t *all = snapshot_readers(p, &k);
    holder_run_t *runs = k ? apr_palloc(p, k * sizeof(*runs)) : NULL;
    json_t *list = json_array();

    json_object_set_new(obj, "reading", list);
    for (a = 0; a < k; a = b) {
        for (b = a; b < k && all[b].listener == all[a].listener; b++) {
            continue;
        }
        json_array_append_new(list, listener_json(all, a, b, runs, p));
    }
}

void aura_connlimit_describe(json_t *obj, apr_pool_t *p)
{
    apr_uint64_t sets, i, n = 1, owned = 0, reclaimed = 0;
    apr_uint32_t records = 0;
    aura_conn_slot_t *slots = aura_shm_conns(&sets);
    aura_conn_census_t cen;

    if (!slots) {
        return;
    }
    aura_conn_census(slots, sets, &cen);
    for (i = 0; i < n; i++) {
        aura_conn_journal_t *j = aura_shm_journal(i, &records, &n);

        if (!j) {
            break;
        }
        owned += apr_atomic_read64(&j->owner) != 0;
        reclaimed += apr_atomic_read64(&j->reclaimed);
    }
    json_object_set_new(obj, "entries", json_integer((json_int_t)
                                                     (sets * AURA_CONN_WAYS)));
    json_object_set_new(obj, "addresses", json_integer((json_int_t)cen.used));
    json_object_set_new(obj, "counted",
                        json_integer((json_int_t)cen.connections));
    json_object_set_new(obj, "largest", json_integer((json_int_t)cen.largest));
    json_object_set_new(obj, "journals", json_integer((json_int_t)n));
    json_object_set_new(obj, "journals_owned", json_integer((json_int_t)owned));
    json_object_set_new(obj, "journal_records",
                        json_integer((json_int_t)records));
    json_object_set_new(obj, "reclaimed", json_integer((json_int_t)reclaimed));
    json_object_set_new(obj, "auto_cap", json_integer(auto_cap));
    json_object_set_new(obj, "auto_reading", json_integer(auto_reading));
    json_object_set_new(obj, "shedding", json_boolean(can_shed));
    describe_reading(obj, p);
}

const char *aura_set_max_conns(cmd_parms *cmd, void *dummy, const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    (void)dummy;
    if (!strcasecmp(arg, "off")) {
        c->max_conns = 0;
        return NULL;
    }
    if (!strcasecmp(arg, "auto")) {
        c->max_conns = AURA_CONN_AUTO;
        return NULL;
    }
    if (aura_parse_int(cmd, arg, 1, AURA_CONN_MAX, &c->max_conns)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not auto, off or a "
                            "number between 1 and %d", cmd->cmd->name, arg,
                            AURA_CONN_MAX);
    }
    return NULL;
}

const char *aura_set_max_reading(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    (void)dummy;
    if (!strcasecmp(arg, "off")) {
        c->max_reading = 0;
        return NULL;
    }
    if (!strcasecmp(arg, "auto")) {
        c->max_reading = AURA_CONN_AUTO;
        return NULL;
    }
    if (aura_parse_int(cmd, arg, 1, AURA_CONN_MAX, &c->max_reading)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not auto, off or a "
                            "number between 1 and %d", cmd->cmd->name, arg,
                            AURA_CONN_MAX);
    }
    return NULL;
}

const char *aura_set_reading_v6_prefix(cmd_parms *cmd, void *dummy,
                                       const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    (void)dummy;
    return aura_parse_int(cmd, arg, 16, 128, &c->reading_v6_prefix);
}

/* Long enough for a client across the world to send 24 bytes and one
 * frame; at most a minute, which a bare preface held before. */
const char *aura_set_h2_preface_timeout(cmd_parms *cmd, void *dummy,
                                        const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    (void)dummy;
    return aura_parse_duration(cmd, arg, apr_time_from_msec(100),
                               apr_time_from_sec(60),
                               &c->h2_preface_timeout);
}

const char *aura_set_conn_exempt(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    char *ip = apr_pstrdup(cmd->pool, arg), *mask = strchr(ip, '/');
    apr_ipsubnet_t *sub;
    apr_status_t rv;

    (void)dummy;
    if (mask) {
        *mask++ = '\0';
    }
    rv = apr_ipsubnet_create(&sub, ip, mask, cmd->pool);
    if (rv != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not an IP address or "
                            "network (a.b.c.d, a.b.c.d/bits, ipv6/bits)",
                            cmd->cmd->name, arg);
    }
    /* One list per VirtualHost: the lines of one scope add up, a
     * VirtualHost's list replaces the main server's. */
    if (!c->conn_exempt) {
        c->conn_exempt = apr_array_make(cmd->pool, 4, sizeof(sub));
    }
    APR_ARRAY_PUSH(c->conn_exempt, apr_ipsubnet_t *) = sub;
    return NULL;
}

void aura_connlimit_register(void)
{
    /* After the event MPM's own pre_connection (REALLY_FIRST), before
     * mod_ssl's and mod_reqtimeout's work: a refused connection costs
     * a hash and a compare-and-swap. */
    ap_hook_pre_connection(conn_enter, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_child_status(conn_child_status, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_read_request(conn_request_read, NULL, NULL,
                              APR_HOOK_REALLY_FIRST);
    ap_hook_pre_close_connection(conn_closing, NULL, NULL, APR_HOOK_MIDDLE);
    /* Above mod_ssl (AP_FTYPE_CONNECTION + 5): the bytes as mod_http2
     * reads them. */
    reading_filter_handle = ap_register_input_filter(READING_FILTER,
                                                     reading_in, NULL,
                                                     AP_FTYPE_CONNECTION + 3);
}
