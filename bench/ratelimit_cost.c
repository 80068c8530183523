/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * ratelimit_cost.c: the benchmark driver of bench/ratelimit (issue #5),
 * never built nor run by CI.  It repeats, N times, what the gateway does
 * per request for each rate-limit stage, and for comparison one NATS
 * request/reply, and prints the wall time per operation.  bench/ratelimit
 * runs it natively (wall time) and under callgrind with N = 0 and N = K
 * (instructions per operation = the difference / K).
 *
 *   empty N                  the loop alone (baseline to subtract)
 *   stage1 N                 the per-address GCRA decision, as
 *                            aura_limit_ip() makes it: key bytes ("ip",
 *                            zone "default", family 4 + IPv4 address,
 *                            1000 addresses), SipHash-2-4, one take on a
 *                            65536-entry table, CLOCK_MONOTONIC
 *   stage2 N HOST PORT       the actor quota script of aura_redis.c:
 *                            EVALSHA (EVAL on NOSCRIPT) through one
 *                            blocking hiredis context, 100 actors
 *   nats N URL [SPIN]        natsConnection_Request() to aura.functions
 *                            (t/services/aura_example_service); SPIN is
 *                            nats_Open()'s lock spin count, -1 (nats.c's
 *                            default, as the gateway runs) unless given
 *   natsecho N URL           the same round trips to a replier in this
 *                            process that sends its replies at once
 *                            (natsOptions_SetSendAsap): the transport
 *                            alone, for wall time only (callgrind would
 *                            count the replier too)
 *   versions                 the hiredis and nats.c versions linked
 *
 * Every mode first makes a few warm-up operations (the same number for
 * N = 0 and N = K), so that one-time costs (the first EVAL, the first
 * touch of a table slot, nats.c's response subscription) cancel out in
 * the difference.  The functions called per operation are noipa: the
 * module calls them across translation units, so the compiler must not
 * fold the constant zone name or tag into them here.
 */
#include "limit/aura_gcra.h"
#include "limit/aura_gcra_table.h"
#include "core/aura_siphash.h"

#include "apr_general.h"
#include "apr_sha1.h"

#include <hiredis/hiredis.h>
#include <nats/nats.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S  1000000000ULL
#define MAX_KEY   512            /* as aura_limiter_key.c */
#define N_ADDRS   1000
#define N_ACTORS  100
#define NOIPA     __attribute__((noipa))

/* The module's defaults: zone "default", 100 r/s, burst 1000
 * (limit/aura_limit.h), 65536 entries (limit/aura_limit_conf.h); the
 * quota of the benchmark's actors is high enough that every call takes
 * the admitted path (INCR + PEXPIRE). */
#define ZONE_RATE      100
#define ZONE_BURST     1000
#define TABLE_ENTRIES  65536
#define QUOTA_LIMIT    1000000
#define QUOTA_WINDOW_S 60

#define WARM_STAGE1   N_ADDRS    /* every address has its slot */
#define WARM_ROUND    20         /* script cached, buffers grown */

/* The module's own script: its SHA-1 must be the one the module sends. */
#include "store/aura_quota_script.h"

/* A fixed key: the cost of SipHash does not depend on it. */
static const unsigned char hash_key[AURA_SIPHASH_KEY_LEN] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
    0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f
};

static unsigned char addrs[N_ADDRS][4];
static char actors[N_ACTORS][32];
static char script_sha[2 * APR_SHA1_DIGESTSIZE + 1];

/* Results, so that nothing is optimised away and every run is checked. */
static unsigned long n_ok, n_refused, n_full, n_noscript;
static volatile unsigned long sink;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "ratelimit_cost: %s: %s\n", what, why);
    exit(1);
}

static apr_uint64_t wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (apr_uint64_t)ts.tv_sec * NS_PER_S + (apr_uint64_t)ts.tv_nsec;
}

/* aura_clock_ns() of core/aura_clock.c. */
static NOIPA apr_uint64_t clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (apr_uint64_t)ts.tv_sec * NS_PER_S + (apr_uint64_t)ts.tv_nsec;
}

/* aura_limiter_key() of limit/aura_limiter_key.c, with the segment's key. */
static NOIPA apr_uint64_t limiter_key(const char *tag, const char *name,
                                      const unsigned char *bytes,
                                      apr_size_t n)
{
    unsigned char buf[MAX_KEY];
    apr_size_t t = strlen(tag) + 1, m = strlen(name) + 1;

    if (t + m + n > sizeof(buf)) {
        n = sizeof(buf) - t - m;
    }
    memcpy(buf, tag, t);
    memcpy(buf + t, name, m);
    memcpy(buf + t + m, bytes, n);
    return aura_siphash24(hash_key, buf, t + m + n);
}

/* ------------------------------------------------------------ stage 1 */

typedef struct {
    const char *name;
    aura_gcra_t gcra;
    aura_limiter_slot_t *slots;
    apr_uint64_t sets;
} zone_t;

/* aura_limit_ip() without httpd: address_bytes() for an IPv4 client,
 * the key, one take. */
static NOIPA aura_limit_e stage1_decide(const zone_t *z,
                                        const unsigned char *ip4)
{
    unsigned char addr[17];
    aura_gcra_result_t res;
    apr_uint64_t key;

    addr[0] = 4;
    memcpy(addr + 1, ip4, 4);
    key = limiter_key("ip", z->name, addr, 5);
    return aura_limiter_take(z->slots, z->sets, key, &z->gcra, clock_ns(),
                             &res);
}

static void stage1_count(aura_limit_e e)
{
    switch (e) {
    case AURA_LIMIT_ADMITTED:
        n_ok++;
        break;
    case AURA_LIMIT_FULL:
        n_full++;
        break;
    default:
        n_refused++;
        break;
    }
}

static void stage1_setup(zone_t *z)
{
    int i;

    z->name = "default";
    if (aura_gcra_init(&z->gcra, ZONE_RATE, 1, ZONE_BURST) != APR_SUCCESS) {
        die("stage1", "aura_gcra_init failed");
    }
    z->sets = aura_limiter_sets(TABLE_ENTRIES);
    z->slots = calloc(z->sets * AURA_LIMITER_WAYS, sizeof(*z->slots));
    if (!z->slots) {
        die("stage1", "out of memory");
    }
    for (i = 0; i < N_ADDRS; i++) {       /* 10.0.0.1 .. 10.0.3.232 */
        addrs[i][0] = 10;
        addrs[i][1] = 0;
        addrs[i][2] = (unsigned char)((i + 1) >> 8);
        addrs[i][3] = (unsigned char)(i + 1);
    }
    for (i = 0; i < WARM_STAGE1; i++) {
        stage1_decide(z, addrs[i % N_ADDRS]);
    }
}

/* ------------------------------------------------------------ stage 2 */

static int is_noscript(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ERROR && reply->str
           && strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

static int reply_well_formed(const redisReply *reply)
{
    size_t i;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 6) {
        return 0;
    }
    for (i = 0; i < 6; i++) {
        if (reply->element[i]->type != REDIS_REPLY_INTEGER
            || reply->element[i]->integer < 0) {
            return 0;
        }
    }
    return reply->element[0]->integer <= 1;
}

/* aura_redis_quota() + run_script() + read_result() on one context (the
 * module borrows it from an apr_reslist; that and the Redis breaker of
 * aura_limit_actor.c are not counted here). */
static NOIPA int stage2_decide(redisContext *c, const char *id)
{
    char key[160], limit_s[24], window_s[24];
    const char *argv[6] = { "EVALSHA", script_sha, "1", key, limit_s,
                            window_s };
    size_t argvlen[6];
    redisReply *reply;
    int i, admitted;

    snprintf(key, sizeof(key), "aura:q:{%s}:%d", id, QUOTA_WINDOW_S);
    snprintf(limit_s, sizeof(limit_s), "%d", QUOTA_LIMIT);
    snprintf(window_s, sizeof(window_s), "%d", QUOTA_WINDOW_S * 1000);
    for (i = 0; i < 6; i++) {
        argvlen[i] = strlen(argv[i]);
    }
    reply = redisCommandArgv(c, 6, argv, argvlen);
    if (reply && is_noscript(reply)) {
        n_noscript++;
        freeReplyObject(reply);
        argv[0] = "EVAL";
        argv[1] = quota_script;
        argvlen[0] = 4;
        argvlen[1] = sizeof(quota_script) - 1;
        reply = redisCommandArgv(c, 6, argv, argvlen);
    }
    if (!reply || c->err) {
        die("stage2: Redis", c->errstr);
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        die("stage2: quota script", reply->str);
    }
    if (!reply_well_formed(reply)) {
        die("stage2", "malformed answer to the quota script");
    }
    admitted = (int)reply->element[0]->integer;
    freeReplyObject(reply);
    return admitted;
}

static redisContext *stage2_setup(const char *host, const char *port_s)
{
    struct timeval tv = { 2, 0 };
    apr_sha1_ctx_t sha;
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    redisContext *c;
    int i;

    apr_sha1_init(&sha);
    apr_sha1_update(&sha, quota_script, sizeof(quota_script) - 1);
    apr_sha1_final(digest, &sha);
    for (i = 0; i < APR_SHA1_DIGESTSIZE; i++) {
        sprintf(script_sha + 2 * i, "%02x", digest[i]);
    }
    for (i = 0; i < N_ACTORS; i++) {
        snprintf(actors[i], sizeof(actors[i]), "d:bench:actor%03d", i);
    }
    c = redisConnectWithTimeout(host, atoi(port_s), tv);
    if (!c || c->err) {
        die("stage2: connect", c ? c->errstr : "out of memory");
    }
    if (redisSetTimeout(c, tv) != REDIS_OK
        || redisEnableKeepAlive(c) != REDIS_OK) {
        die("stage2: setup", c->errstr);
    }
    for (i = 0; i < WARM_ROUND; i++) {
        stage2_decide(c, actors[i % N_ACTORS]);
    }
    return c;
}

/* --------------------------------------------------------------- NATS */

static NOIPA void nats_round_trip(natsConnection *nc, const char *subject)
{
    static const char body[] = "{\"bench\":\"ratelimit\",\"n\":1}";
    const char *status = NULL;
    natsMsg *reply = NULL;
    natsStatus s;

    s = natsConnection_Request(&reply, nc, subject, body,
                               (int)sizeof(body) - 1, 2000);
    if (s != NATS_OK) {
        die("nats: request", natsStatus_GetText(s));
    }
    /* The service echoes the body with Aura-Status: 200. */
    if (natsMsgHeader_Get(reply, "Aura-Status", &status) != NATS_OK
        || strcmp(status, "200")
        || natsMsg_GetDataLength(reply) != (int)sizeof(body) - 1) {
        die("nats", "unexpected reply");
    }
    natsMsg_Destroy(reply);
}

static natsConnection *nats_setup(const char *url, long spin,
                                  const char *subject)
{
    natsConnection *nc = NULL;
    natsStatus s;
    int i;

    s = nats_Open(spin);
    if (s != NATS_OK) {
        die("nats: nats_Open", natsStatus_GetText(s));
    }
    s = natsConnection_ConnectTo(&nc, url);
    if (s != NATS_OK) {
        die("nats: connect", natsStatus_GetText(s));
    }
    for (i = 0; i < WARM_ROUND; i++) {
        nats_round_trip(nc, subject);
    }
    return nc;
}

/* What the example service answers to a request without x-example-*
 * headers: the body, with Aura-Status: 200. */
static void on_echo(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                    void *closure)
{
    natsMsg *reply = NULL;

    (void)sub; (void)closure;
    if (natsMsg_Create(&reply, natsMsg_GetReply(msg), NULL,
                       natsMsg_GetData(msg),
                       natsMsg_GetDataLength(msg)) == NATS_OK
        && natsMsgHeader_Set(reply, "Aura-Status", "200") == NATS_OK) {
        natsConnection_PublishMsg(nc, reply);
    }
    natsMsg_Destroy(reply);
    natsMsg_Destroy(msg);
}

typedef struct {
    natsOptions *opts;
    natsConnection *nc;
    natsSubscription *sub;
    char subject[64];
} echo_t;

static void echo_start(echo_t *e, const char *url)
{
    natsStatus s;

    snprintf(e->subject, sizeof(e->subject), "aura.bench.echo.%ld",
             (long)getpid());
    s = nats_Open(-1);
    if (s == NATS_OK) {
        s = natsOptions_Create(&e->opts);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetURL(e->opts, url);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetSendAsap(e->opts, true);
    }
    if (s == NATS_OK) {
        s = natsConnection_Connect(&e->nc, e->opts);
    }
    if (s == NATS_OK) {
        s = natsConnection_Subscribe(&e->sub, e->nc, e->subject, on_echo,
                                     NULL);
    }
    if (s == NATS_OK) {
        s = natsConnection_Flush(e->nc);
    }
    if (s != NATS_OK) {
        die("natsecho: replier", natsStatus_GetText(s));
    }
}

static void echo_stop(echo_t *e)
{
    natsSubscription_Unsubscribe(e->sub);
    natsSubscription_Destroy(e->sub);
    natsConnection_Destroy(e->nc);
    natsOptions_Destroy(e->opts);
}

/* --------------------------------------------------------------- main */

static void usage(void)
{
    fprintf(stderr, "usage: ratelimit_cost empty N | stage1 N | "
            "stage2 N HOST PORT | nats N URL [SPIN] | natsecho N URL | "
            "versions\n");
    exit(2);
}

static unsigned long parse_n(const char *s)
{
    char *end;
    unsigned long n;

    errno = 0;
    n = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        usage();
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *mode;
    unsigned long n, i, j = 0;
    apr_uint64_t t0, t1;
    redisContext *rc = NULL;
    natsConnection *nc = NULL;
    zone_t zone;

    if (argc == 2 && !strcmp(argv[1], "versions")) {
        printf("hiredis %d.%d.%d nats.c %s\n", HIREDIS_MAJOR, HIREDIS_MINOR,
               HIREDIS_PATCH, nats_GetVersion());
        return 0;
    }
    if (argc < 3) {
        usage();
    }
    mode = argv[1];
    n = parse_n(argv[2]);
    if (apr_initialize() != APR_SUCCESS) {
        die("apr_initialize", "failed");
    }
    if (!strcmp(mode, "empty") && argc == 3) {
        t0 = wall_ns();
        for (i = 0; i < n; i++) {
            sink = addrs[j][3];
            j = j + 1 == N_ADDRS ? 0 : j + 1;
        }
        t1 = wall_ns();
    }
    else if (!strcmp(mode, "stage1") && argc == 3) {
        stage1_setup(&zone);
        n_ok = n_refused = n_full = 0;   /* count the measured ones */
        t0 = wall_ns();
        for (i = 0; i < n; i++) {
            stage1_count(stage1_decide(&zone, addrs[j]));
            j = j + 1 == N_ADDRS ? 0 : j + 1;
        }
        t1 = wall_ns();
        free(zone.slots);
    }
    else if (!strcmp(mode, "stage2") && argc == 5) {
        rc = stage2_setup(argv[3], argv[4]);
        t0 = wall_ns();
        for (i = 0; i < n; i++) {
            if (stage2_decide(rc, actors[j])) {
                n_ok++;
            }
            else {
                n_refused++;
            }
            j = j + 1 == N_ACTORS ? 0 : j + 1;
        }
        t1 = wall_ns();
        redisFree(rc);
    }
    else if (!strcmp(mode, "nats") && (argc == 4 || argc == 5)) {
        nc = nats_setup(argv[3], argc == 5 ? strtol(argv[4], NULL, 10) : -1,
                        "aura.functions");
        t0 = wall_ns();
        for (i = 0; i < n; i++) {
            nats_round_trip(nc, "aura.functions");
            n_ok++;
        }
        t1 = wall_ns();
        natsConnection_Destroy(nc);
        nats_CloseAndWait(2000);
    }
    else if (!strcmp(mode, "natsecho") && argc == 4) {
        echo_t echo;

        echo_start(&echo, argv[3]);
        nc = nats_setup(argv[3], -1, echo.subject);
        t0 = wall_ns();
        for (i = 0; i < n; i++) {
            nats_round_trip(nc, echo.subject);
            n_ok++;
        }
        t1 = wall_ns();
        natsConnection_Destroy(nc);
        echo_stop(&echo);
        nats_CloseAndWait(2000);
    }
    else {
        usage();
    }
    printf("mode=%s n=%lu ns_per_op=%.1f ok=%lu refused=%lu full=%lu "
           "noscript=%lu\n", mode, n,
           n ? (double)(t1 - t0) / (double)n : 0.0, n_ok, n_refused, n_full,
           n_noscript);
    apr_terminate();
    return 0;
}
