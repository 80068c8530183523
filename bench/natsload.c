/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * natsload.c: raw NATS request/reply load for bench/run (issue #9), the
 * NATS limit the gateway's NATS path is compared with.  Never built nor
 * run by CI.
 *
 *   natsload request URL SUBJECT REQUESTERS CONNECTIONS SECONDS [WARMUP]
 *       REQUESTERS threads, each making one natsConnection_RequestMsg()
 *       after the other (closed loop, as wrk's connections do), spread
 *       over CONNECTIONS NATS connections (thread i uses connection
 *       i % CONNECTIONS), for WARMUP seconds unrecorded (default 0) and
 *       then SECONDS recorded.  Each request carries the gateway's
 *       envelope headers (Aura-Method, Aura-Path, Aura-Request-Id,
 *       Aura-Plane) and an empty body, as a GET through the gateway does;
 *       a reply must carry Aura-Status: 200.  Prints one line:
 *         requests=N errors=E seconds=S rps=R p50_us=A p99_us=B
 *         cpu_us_per_req=C vcsw_per_req=V ivcsw_per_req=I
 *       cpu_us_per_req is this process's user + system time (every
 *       thread, nats.c's included) over the recorded seconds, divided by
 *       the requests: the client side of a raw request/reply; V and I its
 *       voluntary and involuntary context switches per request over the
 *       same seconds (getrusage(RUSAGE_SELF): every thread, also one
 *       that exited, unlike /proc/<pid>/task).  Latency:
 *       a log-linear histogram (256 steps per power of two, < 0.4 %).
 *       Exits 1 when any request failed.
 *   natsload respond URL SUBJECT PIDFILE
 *       A responder that answers every request on SUBJECT at once:
 *       Aura-Status 200, Content-Type application/octet-stream, the
 *       request's body echoed (the example service's plain echo, without
 *       its x-example-* steering), on a connection with
 *       natsOptions_SetSendAsap() (each reply written at once instead of
 *       waiting for nats.c's flusher).  One connection, one subscription
 *       callback, as t/services/aura_example_service.  Writes PIDFILE
 *       once subscribed; runs until SIGTERM or SIGINT.
 *   natsload version
 *       The nats.c version linked.
 */
#include <nats/nats.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define PROG "natsload"

#define REQ_TIMEOUT_MS 5000
#define MAX_REQUESTERS 1024
#define MAX_CONNS      256

/* Histogram of nanoseconds: exact below 512 ns, then 256 buckets per
 * power of two up to 2^40 ns (18 minutes). */
#define H_SUB     256
#define H_LINEAR  512
#define H_MAXEXP  40
#define H_BUCKETS (H_LINEAR + (H_MAXEXP - 8) * H_SUB)

static void die(const char *what, const char *why)
{
    fprintf(stderr, PROG ": %s: %s\n", what, why);
    exit(2);
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static size_t h_index(uint64_t v)
{
    int msb;
    size_t i;

    if (v < H_LINEAR) {
        return (size_t)v;
    }
    msb = 63 - __builtin_clzll(v);
    if (msb >= H_MAXEXP) {
        return H_BUCKETS - 1;
    }
    i = H_LINEAR + (size_t)(msb - 9) * H_SUB
        + (size_t)((v >> (msb - 8)) & (H_SUB - 1));
    return i < H_BUCKETS ? i : H_BUCKETS - 1;
}

/* The middle of bucket i, in ns. */
static double h_value(size_t i)
{
    size_t k, m;
    int shift;

    if (i < H_LINEAR) {
        return (double)i;
    }
    k = (i - H_LINEAR) / H_SUB;
    m = (i - H_LINEAR) % H_SUB;
    shift = (int)k + 1;
    return (double)((uint64_t)(H_SUB + m) << shift)
           + (double)((uint64_t)1 << shift) / 2.0;
}

/* ------------------------------------------------------------ request */

enum { PHASE_WARMUP, PHASE_MEASURE, PHASE_STOP };

static volatile int phase = PHASE_WARMUP;

struct requester {
    pthread_t tid;
    int id;
    natsConnection *nc;
    const char *subject;
    uint64_t requests;
    uint64_t errors;
    char last_error[160];
    uint32_t *hist;
};

static int one_request(struct requester *q, uint64_t seq)
{
    natsMsg *m = NULL, *reply = NULL;
    const char *status = NULL;
    char rid[40];
    natsStatus s;
    int ok = 0;

    snprintf(rid, sizeof(rid), "natsload-%d-%llu", q->id,
             (unsigned long long)seq);
    s = natsMsg_Create(&m, q->subject, NULL, NULL, 0);
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(m, "Aura-Method", "GET");
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(m, "Aura-Path", "/v1/functions/ok");
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(m, "Aura-Request-Id", rid);
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(m, "Aura-Plane", "data");
    }
    if (s == NATS_OK) {
        s = natsConnection_RequestMsg(&reply, q->nc, m, REQ_TIMEOUT_MS);
    }
    if (s != NATS_OK) {
        snprintf(q->last_error, sizeof(q->last_error), "request: %s",
                 natsStatus_GetText(s));
    }
    else if (natsMsgHeader_Get(reply, "Aura-Status", &status) != NATS_OK
             || !status || strcmp(status, "200")) {
        snprintf(q->last_error, sizeof(q->last_error),
                 "reply without Aura-Status 200");
    }
    else {
        ok = 1;
    }
    natsMsg_Destroy(reply);
    natsMsg_Destroy(m);
    return ok;
}

static void *requester_main(void *arg)
{
    struct requester *q = arg;
    uint64_t seq = 0;

    for (;;) {
        int p = __atomic_load_n(&phase, __ATOMIC_RELAXED);
        uint64_t t0, t1;
        int ok;

        if (p == PHASE_STOP) {
            break;
        }
        t0 = now_ns();
        ok = one_request(q, seq++);
        t1 = now_ns();
        if (p != PHASE_MEASURE) {
            continue;
        }
        if (!ok) {
            q->errors++;
            continue;
        }
        q->requests++;
        q->hist[h_index(t1 - t0)]++;
    }
    return NULL;
}

static double cpu_us(double *vcsw, double *ivcsw)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    *vcsw = (double)ru.ru_nvcsw;
    *ivcsw = (double)ru.ru_nivcsw;
    return (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec
           + (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
}

static void sleep_s(double s)
{
    struct timespec ts;

    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
        ;
    }
}

static double percentile(const uint64_t *h, uint64_t total, double p)
{
    uint64_t want = (uint64_t)((double)total * p + 0.999999), cum = 0;
    size_t i;

    if (want < 1) {
        want = 1;
    }
    for (i = 0; i < H_BUCKETS; i++) {
        cum += h[i];
        if (cum >= want) {
            return h_value(i);
        }
    }
    return 0;
}

static int run_request(const char *url, const char *subject, int nreq,
                       int nconn, double seconds, double warmup)
{
    natsConnection *conns[MAX_CONNS];
    struct requester *qs;
    uint64_t *hist, requests = 0, errors = 0;
    uint64_t t0, t1;
    double c0, c1, elapsed, v0, v1, iv0, iv1;
    natsStatus s;
    int i;
    size_t b;

    if (nreq < 1 || nreq > MAX_REQUESTERS || nconn < 1 || nconn > MAX_CONNS
        || seconds <= 0 || warmup < 0) {
        die("request", "bad arguments");
    }
    if (nconn > nreq) {
        nconn = nreq;
    }
    s = nats_Open(-1);
    for (i = 0; s == NATS_OK && i < nconn; i++) {
        natsOptions *o = NULL;

        s = natsOptions_Create(&o);
        if (s == NATS_OK) {
            s = natsOptions_SetURL(o, url);
        }
        if (s == NATS_OK) {
            s = natsOptions_SetName(o, PROG);
        }
        if (s == NATS_OK) {
            s = natsConnection_Connect(&conns[i], o);
        }
        natsOptions_Destroy(o);
    }
    if (s != NATS_OK) {
        die("connect", natsStatus_GetText(s));
    }
    qs = calloc((size_t)nreq, sizeof(*qs));
    hist = calloc(H_BUCKETS, sizeof(*hist));
    if (!qs || !hist) {
        die("request", "out of memory");
    }
    for (i = 0; i < nreq; i++) {
        qs[i].id = i;
        qs[i].nc = conns[i % nconn];
        qs[i].subject = subject;
        qs[i].hist = calloc(H_BUCKETS, sizeof(uint32_t));
        if (!qs[i].hist) {
            die("request", "out of memory");
        }
    }
    /* The response subscription of each connection, before any timing. */
    for (i = 0; i < nconn; i++) {
        struct requester w = qs[i];

        if (!one_request(&w, 0)) {
            die("first request", w.last_error);
        }
    }
    for (i = 0; i < nreq; i++) {
        if (pthread_create(&qs[i].tid, NULL, requester_main, &qs[i])) {
            die("request", "pthread_create failed");
        }
    }
    sleep_s(warmup);
    c0 = cpu_us(&v0, &iv0);
    t0 = now_ns();
    __atomic_store_n(&phase, PHASE_MEASURE, __ATOMIC_RELAXED);
    sleep_s(seconds);
    __atomic_store_n(&phase, PHASE_STOP, __ATOMIC_RELAXED);
    t1 = now_ns();
    c1 = cpu_us(&v1, &iv1);
    for (i = 0; i < nreq; i++) {
        pthread_join(qs[i].tid, NULL);
        requests += qs[i].requests;
        errors += qs[i].errors;
        for (b = 0; b < H_BUCKETS; b++) {
            hist[b] += qs[i].hist[b];
        }
    }
    elapsed = (double)(t1 - t0) / 1e9;
    printf("requests=%llu errors=%llu seconds=%.3f rps=%.1f p50_us=%.1f "
           "p99_us=%.1f cpu_us_per_req=%.2f vcsw_per_req=%.3f "
           "ivcsw_per_req=%.3f\n",
           (unsigned long long)requests, (unsigned long long)errors,
           elapsed, (double)requests / elapsed,
           percentile(hist, requests, 0.50) / 1000.0,
           percentile(hist, requests, 0.99) / 1000.0,
           requests ? (c1 - c0) / (double)requests : 0.0,
           requests ? (v1 - v0) / (double)requests : 0.0,
           requests ? (iv1 - iv0) / (double)requests : 0.0);
    for (i = 0; i < nreq; i++) {
        if (qs[i].errors) {
            fprintf(stderr, PROG ": requester %d: %llu errors, last: %s\n",
                    i, (unsigned long long)qs[i].errors, qs[i].last_error);
        }
        free(qs[i].hist);
    }
    for (i = 0; i < nconn; i++) {
        natsConnection_Destroy(conns[i]);
    }
    free(qs);
    free(hist);
    nats_CloseAndWait(2000);
    return errors || !requests ? 1 : 0;
}

/* ------------------------------------------------------------ respond */

static void on_request(natsConnection *nc, natsSubscription *sub,
                       natsMsg *msg, void *closure)
{
    natsMsg *reply = NULL;
    natsStatus s;

    (void)sub;
    (void)closure;
    if (natsMsg_GetReply(msg)) {
        s = natsMsg_Create(&reply, natsMsg_GetReply(msg), NULL,
                           natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
        if (s == NATS_OK) {
            s = natsMsgHeader_Set(reply, "Aura-Status", "200");
        }
        if (s == NATS_OK) {
            s = natsMsgHeader_Set(reply, "Content-Type",
                                  "application/octet-stream");
        }
        if (s == NATS_OK) {
            s = natsConnection_PublishMsg(nc, reply);
        }
        if (s != NATS_OK) {
            fprintf(stderr, PROG ": reply: %s\n", natsStatus_GetText(s));
        }
        natsMsg_Destroy(reply);
    }
    natsMsg_Destroy(msg);
}

static int run_respond(const char *url, const char *subject,
                       const char *pidfile)
{
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsStatus s;
    sigset_t sigs;
    FILE *f;
    int sig;

    /* Blocked before nats.c starts its threads: only sigwait() sees them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    s = nats_Open(-1);
    if (s == NATS_OK) {
        s = natsOptions_Create(&o);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetURL(o, url);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetName(o, PROG "-respond");
    }
    if (s == NATS_OK) {
        s = natsOptions_SetSendAsap(o, true);
    }
    if (s == NATS_OK) {
        s = natsConnection_Connect(&nc, o);
    }
    if (s == NATS_OK) {
        s = natsConnection_Subscribe(&sub, nc, subject, on_request, NULL);
    }
    if (s == NATS_OK) {
        s = natsConnection_Flush(nc);
    }
    if (s != NATS_OK) {
        die("respond", natsStatus_GetText(s));
    }
    f = fopen(pidfile, "w");
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f)) {
        die(pidfile, strerror(errno));
    }
    while (sigwait(&sigs, &sig) != 0) {
        ;
    }
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    nats_CloseAndWait(2000);
    unlink(pidfile);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: " PROG " request URL SUBJECT REQUESTERS CONNECTIONS "
            "SECONDS [WARMUP]\n"
            "       " PROG " respond URL SUBJECT PIDFILE\n"
            "       " PROG " version\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "version")) {
        printf("nats.c %s\n", nats_GetVersion());
        return 0;
    }
    if ((argc == 7 || argc == 8) && !strcmp(argv[1], "request")) {
        return run_request(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]),
                           atof(argv[6]), argc == 8 ? atof(argv[7]) : 0.0);
    }
    if (argc == 5 && !strcmp(argv[1], "respond")) {
        return run_respond(argv[2], argv[3], argv[4]);
    }
    usage();
    return 2;
}
