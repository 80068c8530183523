/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_example_service.c: the service side of the mod_aura wire contract,
 * for the demo and the test-suite.  It answers NATS requests the way the
 * gateway expects a real service to (Aura-Status header + body), and lets
 * a test steer every odd corner of a reply through x-example-* request
 * headers: status, missing status, delay, extra reply headers, a JSON dump
 * of the request headers, large bodies.  It also counts how often each
 * request id was executed, so a test can prove the gateway ran a request
 * exactly once (see the count subject).
 *
 * Request headers it obeys (exact lower-case names, as the gateway sends
 * client headers): x-example-status (copied verbatim into Aura-Status),
 * x-example-malformed: missing-status, x-example-delay-ms (0..600000),
 * x-example-reply-header[-N]: "Name: value" (repeatable), x-example-headers:
 * json, x-example-body-size (0..64 MiB).  Anything else: echo the body.
 * Unusable values get a 400 saying why.
 *
 * x-example-stream-bytes: N (0..1 GiB) answers with a streamed reply
 * (docs/envelope.md, "Streamed replies"): a begin message (the usual
 * reply headers, Content-Type application/octet-stream, X-Example-Stream:
 * 1, X-Example-Stream-Chunks and -Chunk-Size, no body), then N bytes in
 * chunks of at most max_payload - 4 KiB, byte i of the body being
 * (i * 31 + 7) & 0xff so that a client can check every byte.  Each
 * message has its own ack subject under a per-stream inbox; at most
 * x-example-stream-window (1..64, default 8) messages are unacknowledged,
 * and 30 s without an ack, or "Aura-Stream: cancel" from the gateway,
 * ends the stream (logged to stderr).  x-example-stream-gap: K skips
 * sequence number K; x-example-stream-pause-ms: D waits D ms before the
 * last message.  x-example-stream-ack-subject: S gives message N (the
 * begin message is 0) the reply subject S instead of "<acks>.N", N from
 * x-example-stream-ack-at (default 0); S "@reply" is the gateway's own
 * inbox of the request: a misbehaving service, for the tests that the
 * gateway publishes no acknowledgement there.
 * x-example-stream-ack-prefix: P draws the per-stream inbox under P
 * ("acks." gives "acks.<unique>") instead of _INBOX. (a Location with
 * AuraStreamAckPrefix).  Each stream runs on its own thread.
 *
 * The count subject answers a request id (the payload) with how many
 * times it was received.  With -j subject=file it also serves that file
 * (a JWKS document) on subject.
 *
 * Usage: aura_example_service [-s nats_url] [-p pidfile]
 *                             [-c count_subject] [-j subject=jwks_file]
 *                             [subject ...]
 */
#include <nats/nats.h>
#include <jansson.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "aura_example_service"

#define DEFAULT_URL           "nats://127.0.0.1:4222"
#define DEFAULT_COUNT_SUBJECT "aura.example.count"

#define MAX_DELAY_MS  600000L
#define MAX_BODY_SIZE (64L * 1024 * 1024)

#define MAX_STREAM_BYTES      (1024L * 1024 * 1024)
#define DEFAULT_STREAM_WINDOW 8
#define MAX_STREAM_WINDOW     64
#define STREAM_ACK_TIMEOUT_MS 30000L
#define STREAM_HEADROOM       4096    /* room left for headers */

/* The count table only has to outlive one test; 65536 ids is far more
 * than a test run issues, and the bound keeps a long-running demo from
 * growing forever.  When full, the OLDEST id (by first sighting) is
 * evicted, so recent ids, the ones a test asks about, stay exact.
 * -DCOUNT_MAX=4 makes the eviction testable. */
#ifndef COUNT_MAX
#define COUNT_MAX     65536
#endif
#define COUNT_BUCKETS 16384

static const char *const default_subjects[] = {
    "aura.auth", "aura.db", "aura.functions", "aura.notifications",
    "aura.ai", "aura.provisioner", "aura.control", NULL
};

typedef struct count_entry {
    struct count_entry *next;   /* bucket chain */
    unsigned long count;
    char id[];
} count_entry;

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static count_entry *count_buckets[COUNT_BUCKETS];
static count_entry *count_order[COUNT_MAX];     /* ring, oldest first */
static size_t count_head;
static size_t count_used;

/* Delayed replies and streams run on detached threads that use the
 * connection; the shutdown path must wake them and wait until none is
 * left before it may destroy the connection under them. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t state_cond;
static int shutting_down;
static long delayed_pending;

typedef struct {
    natsConnection *nc;
    natsMsg *reply;
    long delay_ms;
} delayed_reply;

/* One streamed reply, owned by its thread. */
typedef struct {
    natsConnection *nc;
    natsMsg *begin;        /* the begin message, ready to publish */
    char *to;              /* the gateway's inbox */
    char *acks;            /* per-stream ack inbox; message n acks on
                              "<acks>.<n>" */
    char *rid;             /* request id, for log lines */
    long bytes;
    long window;
    long gap;              /* sequence number to skip, 0: none */
    long pause_ms;         /* before the last message */
    long delay_ms;         /* before the begin message */
    long chunk;
    char *ack_subject;     /* message ack_at's reply subject, or NULL */
    long ack_at;
} stream_job;

static size_t count_hash(const char *id)
{
    /* FNV-1a: ids are gateway-generated, not attacker-chosen here. */
    uint32_t h = 2166136261u;

    for (; *id; id++) {
        h ^= (unsigned char)*id;
        h *= 16777619u;
    }
    return h % COUNT_BUCKETS;
}

static count_entry *count_find(const char *id, count_entry ***link)
{
    count_entry **pp = &count_buckets[count_hash(id)];

    for (; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->id, id)) {
            break;
        }
    }
    if (link) {
        *link = pp;
    }
    return *pp;
}

static void count_evict_oldest(void)
{
    count_entry *victim = count_order[count_head];
    count_entry **pp;

    count_find(victim->id, &pp);
    *pp = victim->next;
    free(victim);
    count_head = (count_head + 1) % COUNT_MAX;
    count_used--;
}

/* Count one execution of id; returns the count including this one, or 0
 * when memory ran out (the reply then says 0 rather than lie). */
static unsigned long count_bump(const char *id)
{
    count_entry *e;
    count_entry **pp;
    unsigned long n = 0;
    size_t len = strlen(id);

    pthread_mutex_lock(&count_lock);
    e = count_find(id, &pp);
    if (e) {
        n = ++e->count;
    }
    else if ((e = malloc(sizeof(*e) + len + 1)) != NULL) {
        if (count_used == COUNT_MAX) {
            count_evict_oldest();
            /* the eviction may have unlinked the slot pp pointed into */
            count_find(id, &pp);
        }
        memcpy(e->id, id, len + 1);
        e->count = n = 1;
        e->next = NULL;
        *pp = e;
        count_order[(count_head + count_used) % COUNT_MAX] = e;
        count_used++;
    }
    pthread_mutex_unlock(&count_lock);
    return n;
}

/* Only so that valgrind's report at exit is about real leaks. */
static void count_free_all(void)
{
    while (count_used) {
        count_evict_oldest();
    }
}

static unsigned long count_get(const char *id)
{
    count_entry *e;
    unsigned long n;

    pthread_mutex_lock(&count_lock);
    e = count_find(id, NULL);
    n = e ? e->count : 0;
    pthread_mutex_unlock(&count_lock);
    return n;
}

/* First value of a request header, or NULL.  nats.c (>= 3.0) matches
 * header names exactly, so the names used here are the gateway's exact
 * spelling: "Aura-*" as sent, client headers lower-cased. */
static const char *hdr(natsMsg *msg, const char *name)
{
    const char *v = NULL;

    if (natsMsgHeader_Get(msg, name, &v) != NATS_OK) {
        return NULL;
    }
    return v;
}

/* Strict decimal in [0, max]; anything else is a test bug worth a 400. */
static int parse_num(const char *s, long max, long *out)
{
    long n = 0;

    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        if (*s < '0' || *s > '9') {
            return 0;
        }
        n = n * 10 + (*s - '0');
        if (n > max) {
            return 0;
        }
    }
    *out = n;
    return 1;
}

static void publish(natsConnection *nc, natsMsg *reply)
{
    natsStatus s = natsConnection_PublishMsg(nc, reply);

    if (s != NATS_OK) {
        fprintf(stderr, PROG ": reply to %s failed: %s\n",
                natsMsg_GetSubject(reply), natsStatus_GetText(s));
    }
}

/* A reply for a request this service refuses to interpret; the test that
 * sent it gets told why instead of waiting for a timeout. */
static void reply_error(natsConnection *nc, natsMsg *msg, const char *status,
                        const char *why)
{
    natsMsg *reply = NULL;
    natsStatus s;

    s = natsMsg_Create(&reply, natsMsg_GetReply(msg), NULL, why,
                       (int)strlen(why));
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "Aura-Status", status);
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "Content-Type", "text/plain");
    }
    if (s == NATS_OK) {
        publish(nc, reply);
    }
    else {
        fprintf(stderr, PROG ": cannot build error reply: %s\n",
                natsStatus_GetText(s));
    }
    natsMsg_Destroy(reply);
}

/* jansson only takes UTF-8; a header value that is not (HTTP allows
 * obs-text) is reported as if it were Latin-1, byte for code point, so the
 * test still sees every byte rather than losing the whole dump. */
static json_t *json_bytes(const char *s)
{
    json_t *j = json_string(s);
    const unsigned char *p;
    char *buf, *o;

    if (j) {
        return j;
    }
    o = buf = malloc(strlen(s) * 2 + 1);
    if (!buf) {
        return NULL;
    }
    for (p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x80) {
            *o++ = (char)*p;
        }
        else {
            *o++ = (char)(0xC0 | (*p >> 6));
            *o++ = (char)(0x80 | (*p & 0x3F));
        }
    }
    *o = '\0';
    j = json_string(buf);
    free(buf);
    return j;
}

/* All request headers as {name: [values...]}, exactly as nats.c hands
 * them over.  Returns a malloc'ed string, or NULL. */
static char *headers_json(natsMsg *msg)
{
    const char **keys = NULL;
    int nkeys = 0, i;
    json_t *obj = json_object();
    char *out = NULL;
    int ok = (obj != NULL);

    if (natsMsgHeader_Keys(msg, &keys, &nkeys) != NATS_OK) {
        nkeys = 0;
    }
    for (i = 0; ok && i < nkeys; i++) {
        const char **vals = NULL;
        int nvals = 0, k;
        json_t *arr = json_array();
        json_t *key = json_bytes(keys[i]);

        ok = arr && key
             && natsMsgHeader_Values(msg, keys[i], &vals, &nvals) == NATS_OK;
        for (k = 0; ok && k < nvals; k++) {
            ok = !json_array_append_new(arr, json_bytes(vals[k]));
        }
        free((void *)vals);
        if (ok) {
            ok = !json_object_set_new(obj, json_string_value(key), arr);
        }
        else {
            json_decref(arr);
        }
        json_decref(key);
    }
    free((void *)keys);
    if (ok) {
        out = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    }
    json_decref(obj);
    return out;
}

/* Copy one "Name: value" onto the reply.  Add, not Set: a test may
 * repeat a name (two Set-Cookie) or duplicate one the service already
 * set (a second Aura-Status).  Returns NULL, or why it is refused. */
static const char *add_reply_header(natsMsg *reply, const char *spec)
{
    const char *name = spec;
    const char *colon = strchr(name, ':');
    const char *name_end, *value, *value_end;
    const char *err = NULL;
    char *key, *val;

    if (!colon) {
        return "x-example-reply-header needs \"Name: value\"\n";
    }
    while (*name == ' ' || *name == '\t') {
        name++;
    }
    name_end = colon;
    while (name_end > name && (name_end[-1] == ' '
                               || name_end[-1] == '\t')) {
        name_end--;
    }
    value = colon + 1;
    while (*value == ' ' || *value == '\t') {
        value++;
    }
    value_end = value + strlen(value);
    while (value_end > value && (value_end[-1] == ' '
                                 || value_end[-1] == '\t')) {
        value_end--;
    }
    if (name_end == name) {
        return "x-example-reply-header has an empty name\n";
    }
    key = strndup(name, (size_t)(name_end - name));
    val = strndup(value, (size_t)(value_end - value));
    if (!key || !val || natsMsgHeader_Add(reply, key, val) != NATS_OK) {
        err = "cannot add reply header\n";
    }
    free(key);
    free(val);
    return err;
}

/* Every request header whose name starts with x-example-reply-header
 * (x-example-reply-header, x-example-reply-header-2, ...) adds one reply
 * header per value.  Distinct names matter: httpd joins repeated request
 * headers into one comma-separated value before the gateway sees them. */
static const char *add_reply_headers(natsMsg *msg, natsMsg *reply)
{
    static const char prefix[] = "x-example-reply-header";
    const char **keys = NULL;
    int nkeys = 0, k;
    const char *err = NULL;

    if (natsMsgHeader_Keys(msg, &keys, &nkeys) != NATS_OK) {
        return NULL;
    }
    for (k = 0; !err && k < nkeys; k++) {
        const char **vals = NULL;
        int nvals = 0, i;

        if (strncmp(keys[k], prefix, sizeof(prefix) - 1) != 0
            || natsMsgHeader_Values(msg, keys[k], &vals, &nvals) != NATS_OK) {
            continue;
        }
        for (i = 0; !err && i < nvals; i++) {
            err = add_reply_header(reply, vals[i]);
        }
        free((void *)vals);
    }
    free((void *)keys);
    return err;
}

static void thread_done(void);

/* Waits ms on the shutdown condition; returns 0 when shutting down. */
static int pause_unless_shutdown(long ms)
{
    struct timespec until;
    int alive;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&state_lock);
    while (!shutting_down
           && pthread_cond_timedwait(&state_cond, &state_lock,
                                     &until) != ETIMEDOUT) {
        ;
    }
    alive = !shutting_down;
    pthread_mutex_unlock(&state_lock);
    return alive;
}

static void *delayed_main(void *arg)
{
    delayed_reply *d = arg;
    /* A condition wait, not sleep(): shutdown must be able to cut the
     * delay short instead of waiting up to ten minutes. */
    int publish_it = pause_unless_shutdown(d->delay_ms);

    if (publish_it) {
        publish(d->nc, d->reply);
    }
    natsMsg_Destroy(d->reply);
    free(d);
    thread_done();
    return NULL;
}

/* Send reply now, or after delay_ms on a detached thread so the
 * subscription's dispatcher goes straight on to the next request.
 * Takes ownership of reply. */
static void send_reply(natsConnection *nc, natsMsg *reply, long delay_ms)
{
    delayed_reply *d;
    pthread_t tid;
    pthread_attr_t attr;
    int rc;

    if (delay_ms == 0) {
        publish(nc, reply);
        natsMsg_Destroy(reply);
        return;
    }
    d = malloc(sizeof(*d));
    if (!d) {
        fprintf(stderr, PROG ": out of memory, reply not delayed\n");
        publish(nc, reply);
        natsMsg_Destroy(reply);
        return;
    }
    d->nc = nc;
    d->reply = reply;
    d->delay_ms = delay_ms;

    pthread_mutex_lock(&state_lock);
    if (shutting_down) {
        pthread_mutex_unlock(&state_lock);
        natsMsg_Destroy(reply);
        free(d);
        return;
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    rc = pthread_create(&tid, &attr, delayed_main, d);
    pthread_attr_destroy(&attr);
    if (rc == 0) {
        delayed_pending++;
    }
    pthread_mutex_unlock(&state_lock);

    if (rc != 0) {
        fprintf(stderr, PROG ": cannot start delay thread (%s), "
                "replying at once\n", strerror(rc));
        publish(nc, reply);
        natsMsg_Destroy(reply);
        free(d);
    }
}

static int is_shutting_down(void)
{
    int down;

    pthread_mutex_lock(&state_lock);
    down = shutting_down;
    pthread_mutex_unlock(&state_lock);
    return down;
}

static void thread_done(void)
{
    pthread_mutex_lock(&state_lock);
    if (--delayed_pending == 0) {
        pthread_cond_broadcast(&state_cond);
    }
    pthread_mutex_unlock(&state_lock);
}

/* Starts fn(arg) on a detached thread counted in delayed_pending.
 * Returns 0, or an errno value (nothing started: arg is still yours). */
static int start_thread(void *(*fn)(void *), void *arg)
{
    pthread_t tid;
    pthread_attr_t attr;
    int rc;

    pthread_mutex_lock(&state_lock);
    if (shutting_down) {
        pthread_mutex_unlock(&state_lock);
        return ECANCELED;
    }
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    rc = pthread_create(&tid, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (rc == 0) {
        delayed_pending++;
    }
    pthread_mutex_unlock(&state_lock);
    return rc;
}

/* Waits for one message on the ack inbox: 1 for an ack, 0 when the
 * gateway cancelled or nothing came for STREAM_ACK_TIMEOUT_MS or the
 * service is shutting down (*why says which). */
static int wait_ack(natsSubscription *acks, const char **why)
{
    long waited = 0;

    while (waited < STREAM_ACK_TIMEOUT_MS) {
        natsMsg *m = NULL;
        const char *v = NULL;
        natsStatus s;

        if (is_shutting_down()) {
            *why = "shutting down";
            return 0;
        }
        s = natsSubscription_NextMsg(&m, acks, 250);
        if (s == NATS_TIMEOUT) {
            waited += 250;
            continue;
        }
        if (s != NATS_OK) {
            *why = natsStatus_GetText(s);
            return 0;
        }
        if (natsMsgHeader_Get(m, "Aura-Stream", &v) == NATS_OK && v
            && !strcmp(v, "cancel")) {
            natsMsg_Destroy(m);
            *why = "cancelled by the gateway";
            return 0;
        }
        natsMsg_Destroy(m);
        return 1;
    }
    *why = "no acknowledgement for 30 s, giving up";
    return 0;
}

static natsStatus publish_chunk(stream_job *j, long seq, const char *data,
                                int len, int last)
{
    char reply[256], seqbuf[32];
    natsMsg *m = NULL;
    natsStatus s;

    if (j->ack_subject && seq == j->ack_at) {
        snprintf(reply, sizeof(reply), "%s", j->ack_subject);
    }
    else {
        snprintf(reply, sizeof(reply), "%s.%ld", j->acks, seq);
    }
    snprintf(seqbuf, sizeof(seqbuf), "%ld", seq);
    s = natsMsg_Create(&m, j->to, reply, data, len);
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(m, "Aura-Seq", seqbuf);
    }
    if (s == NATS_OK && last) {
        s = natsMsgHeader_Set(m, "Aura-Stream", "end");
    }
    if (s == NATS_OK) {
        s = natsConnection_PublishMsg(j->nc, m);
    }
    natsMsg_Destroy(m);
    return s;
}

/* nats.c before 3.6.1 (its issue #637) lets the reader thread use a
 * subscription it found without a reference, so destroying one that
 * may still receive (late acks, a cancel) is a use after free.
 * Unsubscribe, flush (when the PONG is back the reader is done with
 * everything sent before the UNSUB), then destroy; leak it if the flush
 * fails. */
static void sub_destroy(natsConnection *nc, natsSubscription *sub)
{
    if (!sub) {
        return;
    }
#if NATS_VERSION_NUMBER < 0x030601
    (void)natsSubscription_Unsubscribe(sub);
    if (!natsConnection_IsClosed(nc)
        && natsConnection_FlushTimeout(nc, 2000) != NATS_OK) {
        return;
    }
#else
    (void)nc;
#endif
    natsSubscription_Destroy(sub);
}

static void stream_free(stream_job *j)
{
    natsMsg_Destroy(j->begin);
    free(j->to);
    free(j->acks);
    free(j->rid);
    free(j->ack_subject);
    free(j);
}

static void *stream_main(void *arg)
{
    stream_job *j = arg;
    natsSubscription *acks = NULL;
    char pattern[256 + 1];
    char *buf = NULL, *subject = NULL;
    const char *why = NULL;
    long nchunks, i, seq, unacked = 0, off = 0;
    natsStatus s;

    for (i = 0; i < 256; i++) {
        pattern[i] = (char)((i * 31 + 7) & 0xff);
    }
    nchunks = j->bytes ? (j->bytes + j->chunk - 1) / j->chunk : 1;
    if (!(buf = malloc((size_t)j->chunk))
        || !(subject = malloc(strlen(j->acks) + 3))) {
        why = "out of memory";
        goto done;
    }
    /* Subscribed before anything is published on the same connection,
     * so no ack can arrive before the subscription. */
    sprintf(subject, "%s.*", j->acks);
    s = natsConnection_SubscribeSync(&acks, j->nc, subject);
    if (s != NATS_OK) {
        why = natsStatus_GetText(s);
        goto done;
    }
    if (j->delay_ms && !pause_unless_shutdown(j->delay_ms)) {
        goto done;
    }
    if ((s = natsConnection_PublishMsg(j->nc, j->begin)) != NATS_OK) {
        why = natsStatus_GetText(s);
        goto done;
    }
    unacked = 1;
    for (i = 0, seq = 1; i < nchunks; i++, seq++) {
        long len = j->bytes - off < j->chunk ? j->bytes - off : j->chunk;
        long k;
        int last = (i == nchunks - 1);

        while (unacked >= j->window) {
            if (!wait_ack(acks, &why)) {
                goto done;
            }
            unacked--;
        }
        if (last && j->pause_ms && !pause_unless_shutdown(j->pause_ms)) {
            goto done;
        }
        if (j->gap && seq == j->gap) {
            seq++;
        }
        for (k = 0; k < len; k++) {
            buf[k] = pattern[(off + k) & 0xff];
        }
        s = publish_chunk(j, seq, buf, (int)len, last);
        if (s != NATS_OK) {
            why = natsStatus_GetText(s);
            goto done;
        }
        unacked++;
        off += len;
    }
    /* The gateway acks the rest as the client takes it: wait, so that a
     * cancel is noticed and the thread ends when the stream really has. */
    while (unacked > 0 && wait_ack(acks, &why)) {
        unacked--;
    }

done:
    if (why && strcmp(why, "shutting down")) {
        fprintf(stderr, PROG ": stream for %s stopped after %ld of %ld "
                "bytes: %s\n", j->rid, off, j->bytes, why);
    }
    sub_destroy(j->nc, acks);
    free(subject);
    free(buf);
    stream_free(j);
    thread_done();
    return NULL;
}

/* Takes ownership of begin.  Returns NULL, or why no stream started. */
static const char *start_stream(natsConnection *nc, natsMsg *req,
                                natsMsg *begin, char *acks, long bytes,
                                long window, long gap, long pause_ms,
                                long delay_ms, const char *ack_subject,
                                long ack_at)
{
    stream_job *j = calloc(1, sizeof(*j));
    const char *rid = hdr(req, "Aura-Request-Id");
    int rc;

    if (!j) {
        natsMsg_Destroy(begin);
        free(acks);
        return "out of memory\n";
    }
    j->nc = nc;
    j->begin = begin;
    j->acks = acks;
    j->to = strdup(natsMsg_GetReply(req));
    j->rid = strdup(rid ? rid : "-");
    j->bytes = bytes;
    j->window = window;
    j->gap = gap;
    j->pause_ms = pause_ms;
    j->delay_ms = delay_ms;
    j->ack_at = ack_at;
    if (ack_subject && ack_at > 0 && !(j->ack_subject = strdup(ack_subject))) {
        stream_free(j);
        return "out of memory\n";
    }
    j->chunk = (long)natsConnection_GetMaxPayload(nc) - STREAM_HEADROOM;
    if (j->chunk < 1024) {
        j->chunk = 1024;
    }
    if (!j->to || !j->rid) {
        stream_free(j);
        return "out of memory\n";
    }
    if ((rc = start_thread(stream_main, j)) != 0) {
        fprintf(stderr, PROG ": cannot start stream thread: %s\n",
                strerror(rc));
        stream_free(j);
        return "cannot start the stream\n";
    }
    return NULL;
}

/* Reply headers that mirror the request envelope, so a test can see what
 * the gateway actually sent.  Absent request headers stay absent. */
static natsStatus mirror(natsMsg *msg, natsMsg *reply, const char *from,
                         const char *to)
{
    const char *v = hdr(msg, from);

    return v ? natsMsgHeader_Set(reply, to, v) : NATS_OK;
}

static void on_service(natsConnection *nc, natsSubscription *sub,
                       natsMsg *msg, void *closure)
{
    const char **keys = NULL;
    int nkeys = 0;
    natsStatus s;
    const char *rid, *v, *status, *ctype, *err;
    const char *data;
    char *buf = NULL;
    char countbuf[32];
    int len, missing_status = 0, want_json = 0;
    long delay_ms = 0, body_size = -1;
    long stream_bytes = -1, window = DEFAULT_STREAM_WINDOW, gap = 0;
    long pause_ms = 0, ack_at = 0;
    const char *ack_subject = NULL;
    char *acks = NULL, *begin_reply = NULL;
    natsMsg *reply = NULL;

    (void)sub;
    (void)closure;

    /* Parse the headers once up front: a malformed block makes every
     * natsMsgHeader_* call fail, which must not read as "no headers". */
    s = natsMsgHeader_Keys(msg, &keys, &nkeys);
    free((void *)keys);
    if (s != NATS_OK && s != NATS_NOT_FOUND) {
        fprintf(stderr, PROG ": unparsable headers on %s: %s\n",
                natsMsg_GetSubject(msg), natsStatus_GetText(s));
    }

    /* Counted on receipt, before any delay: the count answers "how many
     * times did the gateway deliver this request", not "how many replies
     * went out". */
    rid = hdr(msg, "Aura-Request-Id");
    snprintf(countbuf, sizeof(countbuf), "%lu", count_bump(rid ? rid : ""));

    if (!natsMsg_GetReply(msg)) {
        fprintf(stderr, PROG ": message on %s has no reply subject\n",
                natsMsg_GetSubject(msg));
        goto done;
    }
    if (s != NATS_OK && s != NATS_NOT_FOUND) {
        reply_error(nc, msg, "400", "unparsable NATS headers\n");
        goto done;
    }

    if ((v = hdr(msg, "x-example-malformed")) != NULL) {
        if (strcmp(v, "missing-status")) {
            reply_error(nc, msg, "400", "unknown x-example-malformed\n");
            goto done;
        }
        missing_status = 1;
    }
    if ((v = hdr(msg, "x-example-delay-ms")) != NULL
        && !parse_num(v, MAX_DELAY_MS, &delay_ms)) {
        reply_error(nc, msg, "400", "bad x-example-delay-ms\n");
        goto done;
    }
    if ((v = hdr(msg, "x-example-headers")) != NULL) {
        if (strcmp(v, "json")) {
            reply_error(nc, msg, "400", "unknown x-example-headers\n");
            goto done;
        }
        want_json = 1;
    }
    if ((v = hdr(msg, "x-example-body-size")) != NULL
        && !parse_num(v, MAX_BODY_SIZE, &body_size)) {
        reply_error(nc, msg, "400", "bad x-example-body-size\n");
        goto done;
    }
    if ((v = hdr(msg, "x-example-stream-bytes")) != NULL
        && !parse_num(v, MAX_STREAM_BYTES, &stream_bytes)) {
        reply_error(nc, msg, "400", "bad x-example-stream-bytes\n");
        goto done;
    }
    if ((v = hdr(msg, "x-example-stream-window")) != NULL
        && (!parse_num(v, MAX_STREAM_WINDOW, &window) || window < 1)) {
        reply_error(nc, msg, "400", "bad x-example-stream-window\n");
        goto done;
    }
    if ((v = hdr(msg, "x-example-stream-gap")) != NULL
        && (!parse_num(v, 1000000L, &gap) || gap < 1)) {
        reply_error(nc, msg, "400", "bad x-example-stream-gap\n");
        goto done;
    }
    if ((v = hdr(msg, "x-example-stream-pause-ms")) != NULL
        && !parse_num(v, MAX_DELAY_MS, &pause_ms)) {
        reply_error(nc, msg, "400", "bad x-example-stream-pause-ms\n");
        goto done;
    }
    if ((v = hdr(msg, "x-example-stream-ack-at")) != NULL
        && !parse_num(v, 1000000L, &ack_at)) {
        reply_error(nc, msg, "400", "bad x-example-stream-ack-at\n");
        goto done;
    }
    ack_subject = hdr(msg, "x-example-stream-ack-subject");
    if (ack_subject && !strcmp(ack_subject, "@reply")) {
        ack_subject = natsMsg_GetReply(msg);
    }
    if (ack_subject && strlen(ack_subject) >= 256) {
        reply_error(nc, msg, "400", "bad x-example-stream-ack-subject\n");
        goto done;
    }
    if (stream_bytes >= 0) {
        natsInbox *inbox = NULL;

        /* The begin message is acked on "<acks>.0", chunk n on
         * "<acks>.n"; the stream thread subscribes to "<acks>.*". */
        const char *pfx = hdr(msg, "x-example-stream-ack-prefix");

        /* natsInbox_Create gives "_INBOX.<unique>": keep the unique
         * part under the prefix asked for. */
        if (natsInbox_Create(&inbox) != NATS_OK
            || !(acks = malloc(strlen(inbox) + (pfx ? strlen(pfx) : 0) + 1))
            || !(begin_reply = malloc(strlen(inbox)
                                      + (pfx ? strlen(pfx) : 0) + 3))) {
            natsInbox_Destroy(inbox);
            reply_error(nc, msg, "500", "out of memory\n");
            goto done;
        }
        if (pfx && !strncmp(inbox, "_INBOX.", 7)) {
            sprintf(acks, "%s%s", pfx, inbox + 7);
        }
        else {
            strcpy(acks, inbox);
        }
        natsInbox_Destroy(inbox);
        sprintf(begin_reply, "%s.0", acks);
        if (ack_subject && ack_at == 0) {
            free(begin_reply);
            if (!(begin_reply = strdup(ack_subject))) {
                reply_error(nc, msg, "500", "out of memory\n");
                goto done;
            }
        }
    }

    /* Body: the header dump wins over a generated body, which wins over
     * the echo. */
    ctype = hdr(msg, "content-type");
    if (!ctype) {
        ctype = "application/octet-stream";
    }
    if (stream_bytes >= 0) {
        data = NULL;
        len = 0;
        ctype = "application/octet-stream";
    }
    else if (want_json) {
        if (!(buf = headers_json(msg))) {
            reply_error(nc, msg, "500", "cannot encode headers as JSON\n");
            goto done;
        }
        data = buf;
        len = (int)strlen(buf);
        ctype = "application/json";
    }
    else if (body_size >= 0) {
        long i;

        /* nats-server's max_payload counts headers too, so near its limit
         * (1 MB by default, 64 MB at most) the publish fails and the
         * gateway sees a timeout: that is the point of big sizes. */
        if (!(buf = malloc(body_size ? (size_t)body_size : 1))) {
            reply_error(nc, msg, "500", "out of memory\n");
            goto done;
        }
        for (i = 0; i < body_size; i++) {
            buf[i] = (char)('0' + i % 10);
        }
        data = buf;
        len = (int)body_size;
    }
    else {
        data = natsMsg_GetData(msg);
        len = natsMsg_GetDataLength(msg);
    }

    s = natsMsg_Create(&reply, natsMsg_GetReply(msg), begin_reply, data,
                       len);
    free(buf);

    /* Copied verbatim, even "abc": the gateway's validation is under test,
     * not this service's. */
    status = hdr(msg, "x-example-status");
    if (s == NATS_OK && !missing_status) {
        s = natsMsgHeader_Set(reply, "Aura-Status", status ? status : "200");
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "Content-Type", ctype);
    }
    if (s == NATS_OK) {
        s = mirror(msg, reply, "Aura-Method", "X-Example-Method");
    }
    if (s == NATS_OK) {
        s = mirror(msg, reply, "Aura-Path", "X-Example-Path");
    }
    if (s == NATS_OK) {
        s = mirror(msg, reply, "Aura-Query", "X-Example-Query");
    }
    if (s == NATS_OK) {
        s = mirror(msg, reply, "Aura-Request-Id", "X-Example-Request-Id");
    }
    if (s == NATS_OK) {
        s = mirror(msg, reply, "Aura-Plane", "X-Example-Plane");
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "X-Example-Subject",
                              natsMsg_GetSubject(msg));
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "X-Example-Count", countbuf);
    }
    if (s == NATS_OK && stream_bytes >= 0) {
        char nbuf[32], cbuf[32];
        long chunk = (long)natsConnection_GetMaxPayload(nc) - STREAM_HEADROOM;

        if (chunk < 1024) {
            chunk = 1024;
        }
        snprintf(nbuf, sizeof(nbuf), "%ld",
                 stream_bytes ? (stream_bytes + chunk - 1) / chunk : 1);
        snprintf(cbuf, sizeof(cbuf), "%ld", chunk);
        s = natsMsgHeader_Set(reply, "Aura-Stream", "begin");
        if (s == NATS_OK) {
            s = natsMsgHeader_Set(reply, "X-Example-Stream", "1");
        }
        if (s == NATS_OK) {
            s = natsMsgHeader_Set(reply, "X-Example-Stream-Chunks", nbuf);
        }
        if (s == NATS_OK) {
            s = natsMsgHeader_Set(reply, "X-Example-Stream-Chunk-Size", cbuf);
        }
    }
    if (s != NATS_OK) {
        fprintf(stderr, PROG ": cannot build reply: %s\n",
                natsStatus_GetText(s));
        natsMsg_Destroy(reply);
        goto done;
    }
    if ((err = add_reply_headers(msg, reply)) != NULL) {
        natsMsg_Destroy(reply);
        reply_error(nc, msg, "400", err);
        goto done;
    }

    if (stream_bytes >= 0) {
        err = start_stream(nc, msg, reply, acks, stream_bytes, window, gap,
                           pause_ms, delay_ms, ack_subject, ack_at);
        acks = NULL;    /* the stream owns it now */
        if (err) {
            reply_error(nc, msg, "500", err);
        }
    }
    else {
        send_reply(nc, reply, delay_ms);
    }

done:
    free(acks);
    free(begin_reply);
    natsMsg_Destroy(msg);
}

static void on_count(natsConnection *nc, natsSubscription *sub,
                     natsMsg *msg, void *closure)
{
    const char *data = natsMsg_GetData(msg);
    int len = natsMsg_GetDataLength(msg);
    char countbuf[32];
    char *id;
    natsMsg *reply = NULL;
    natsStatus s;

    (void)sub;
    (void)closure;

    if (!natsMsg_GetReply(msg)) {
        goto done;
    }
    /* The id is the whole payload, taken literally (no trimming); an id
     * with a NUL in it cannot have come from a header, so it counts 0. */
    if (memchr(data, '\0', (size_t)len)
        || !(id = strndup(data, (size_t)len))) {
        snprintf(countbuf, sizeof(countbuf), "0");
    }
    else {
        snprintf(countbuf, sizeof(countbuf), "%lu", count_get(id));
        free(id);
    }

    s = natsMsg_Create(&reply, natsMsg_GetReply(msg), NULL, countbuf,
                       (int)strlen(countbuf));
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "Aura-Status", "200");
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "Content-Type", "text/plain");
    }
    if (s == NATS_OK) {
        publish(nc, reply);
    }
    else {
        fprintf(stderr, PROG ": cannot build count reply: %s\n",
                natsStatus_GetText(s));
    }
    natsMsg_Destroy(reply);

done:
    natsMsg_Destroy(msg);
}

/* -j subject=file: answers every request with the file's bytes, read
 * anew each time (a JWKS document, as aura-auth publishes it; tests
 * rotate keys by rewriting the file).  Each request counts under the id
 * "jwks:<subject>", so a test can tell how often the gateway fetched. */
static void on_jwks(natsConnection *nc, natsSubscription *sub,
                    natsMsg *msg, void *closure)
{
    const char *path = closure;
    char buf[65536], idbuf[300];
    size_t n = 0;
    FILE *f;
    natsMsg *reply = NULL;
    natsStatus s;

    snprintf(idbuf, sizeof(idbuf), "jwks:%s", natsSubscription_GetSubject(sub)
             ? natsSubscription_GetSubject(sub) : "?");
    count_bump(idbuf);
    if (!natsMsg_GetReply(msg)) {
        natsMsg_Destroy(msg);
        return;
    }
    if ((f = fopen(path, "rb")) != NULL) {
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
    }
    s = natsMsg_Create(&reply, natsMsg_GetReply(msg), NULL, buf, (int)n);
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "Aura-Status", n ? "200" : "503");
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(reply, "Content-Type",
                              "application/jwk-set+json");
    }
    if (s == NATS_OK) {
        publish(nc, reply);
    }
    natsMsg_Destroy(reply);
    natsMsg_Destroy(msg);
}

/* Connection events go to stderr so a failing test's log shows when the
 * service lost and regained nats-server. */
static void on_disconnected(natsConnection *nc, void *closure)
{
    int quiet;

    (void)nc;
    (void)closure;

    /* Our own close at shutdown also lands here; that is no news. */
    pthread_mutex_lock(&state_lock);
    quiet = shutting_down;
    pthread_mutex_unlock(&state_lock);
    if (!quiet) {
        fprintf(stderr, PROG ": disconnected from nats-server\n");
    }
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    (void)closure;
    fprintf(stderr, PROG ": reconnected to nats-server\n");
}

static void on_error(natsConnection *nc, natsSubscription *sub,
                     natsStatus err, void *closure)
{
    (void)nc;
    (void)closure;
    fprintf(stderr, PROG ": async error on %s: %s\n",
            sub ? natsSubscription_GetSubject(sub) : "connection",
            natsStatus_GetText(err));
}

static void usage(void)
{
    fprintf(stderr, "usage: " PROG " [-s nats_url] [-p pidfile] "
            "[-c count_subject] [-j subject=jwks_file] [-A ca_file] "
            "[-E cert_file -K key_file] [-C creds_file] [subject ...]\n");
    exit(2);
}

/* A secured bus (t/nats/secure.t): TLS with a CA and a client
 * certificate, a creds file; nats.c reads the files itself. */
static const char *tls_ca, *tls_cert, *tls_key, *creds;

static natsStatus secure_options(natsOptions *opts)
{
    natsStatus s = NATS_OK;

    if (tls_ca || tls_cert) {
        s = natsOptions_SetSecure(opts, true);
    }
    if (s == NATS_OK && tls_ca) {
        s = natsOptions_LoadCATrustedCertificates(opts, tls_ca);
    }
    if (s == NATS_OK && tls_cert && tls_key) {
        s = natsOptions_LoadCertificatesChain(opts, tls_cert, tls_key);
    }
    if (s == NATS_OK && creds) {
        s = natsOptions_SetUserCredentialsFromFiles(opts, creds, NULL);
    }
    return s;
}

int main(int argc, char **argv)
{
    const char *url = DEFAULT_URL;
    const char *pidfile = NULL;
    const char *count_subject = DEFAULT_COUNT_SUBJECT;
    const char *const *subjects = default_subjects;
    int nsubjects, i, opt, sig, wrote_pidfile = 0;
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    natsSubscription **subs = NULL;
    natsSubscription *count_sub = NULL;
    natsSubscription *jwks_sub = NULL;
    char *jwks_subject = NULL, *jwks_file = NULL;
    natsStatus s;
    pthread_condattr_t cattr;
    sigset_t sigs;
    FILE *f;

    while ((opt = getopt(argc, argv, "s:p:c:j:A:E:K:C:h")) != -1) {
        switch (opt) {
        case 'A':
            tls_ca = optarg;
            break;
        case 'E':
            tls_cert = optarg;
            break;
        case 'K':
            tls_key = optarg;
            break;
        case 'C':
            creds = optarg;
            break;
        case 'j':
            jwks_subject = optarg;
            jwks_file = strchr(optarg, '=');
            if (!jwks_file || jwks_file == optarg || !jwks_file[1]) {
                usage();
            }
            *jwks_file++ = '\0';
            break;
        case 's':
            url = optarg;
            break;
        case 'p':
            pidfile = optarg;
            break;
        case 'c':
            count_subject = optarg;
            break;
        default:
            usage();
        }
    }
    if (optind < argc) {
        subjects = (const char *const *)&argv[optind];
    }
    for (nsubjects = 0; subjects[nsubjects]; nsubjects++) {
        ;
    }

    /* Block the stop signals before nats.c starts its threads, so they
     * all inherit the mask and only sigwait() below ever sees them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&state_cond, &cattr);
    pthread_condattr_destroy(&cattr);

    subs = calloc((size_t)nsubjects, sizeof(*subs));
    if (nsubjects && !subs) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }

    /* Reconnect forever, quickly: tests stop and restart nats-server on
     * the same port and expect the service back within moments.  nats.c
     * resubscribes by itself after a reconnect. */
    s = natsOptions_Create(&opts);
    if (s == NATS_OK) {
        s = natsOptions_SetURL(opts, url);
    }
    /* Each reply written at once, as a service should (docs/envelope.md,
     * "For service authors"): without it nats.c's flusher thread writes
     * it up to a millisecond later, and every test and bench/run figure
     * against this service would carry that millisecond. */
    if (s == NATS_OK) {
        s = natsOptions_SetSendAsap(opts, true);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetAllowReconnect(opts, true);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetMaxReconnect(opts, -1);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectWait(opts, 100);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetDisconnectedCB(opts, on_disconnected, NULL);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectedCB(opts, on_reconnected, NULL);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetErrorHandler(opts, on_error, NULL);
    }
    if (s == NATS_OK) {
        s = secure_options(opts);
    }
    if (s != NATS_OK) {
        fprintf(stderr, PROG ": bad options: %s\n", natsStatus_GetText(s));
        return 1;
    }

    s = natsConnection_Connect(&nc, opts);
    if (s != NATS_OK) {
        fprintf(stderr, PROG ": cannot connect to %s: %s\n", url,
                natsStatus_GetText(s));
        natsOptions_Destroy(opts);
        nats_Close();
        return 1;
    }

    for (i = 0; s == NATS_OK && i < nsubjects; i++) {
        s = natsConnection_Subscribe(&subs[i], nc, subjects[i], on_service,
                                     NULL);
        if (s != NATS_OK) {
            fprintf(stderr, PROG ": cannot subscribe to %s: %s\n",
                    subjects[i], natsStatus_GetText(s));
        }
    }
    if (s == NATS_OK) {
        s = natsConnection_Subscribe(&count_sub, nc, count_subject, on_count,
                                     NULL);
        if (s != NATS_OK) {
            fprintf(stderr, PROG ": cannot subscribe to %s: %s\n",
                    count_subject, natsStatus_GetText(s));
        }
    }
    if (s == NATS_OK && jwks_subject) {
        s = natsConnection_Subscribe(&jwks_sub, nc, jwks_subject, on_jwks,
                                     jwks_file);
        if (s != NATS_OK) {
            fprintf(stderr, PROG ": cannot subscribe to %s: %s\n",
                    jwks_subject, natsStatus_GetText(s));
        }
    }
    /* The flush round-trip means the server has registered every
     * subscription, so "ready" really means requests will be answered. */
    if (s == NATS_OK && (s = natsConnection_Flush(nc)) != NATS_OK) {
        fprintf(stderr, PROG ": flush failed: %s\n", natsStatus_GetText(s));
    }
    if (s == NATS_OK && pidfile) {
        if (!(f = fopen(pidfile, "w"))
            || fprintf(f, "%ld\n", (long)getpid()) < 0
            || fclose(f) != 0) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", pidfile,
                    strerror(errno));
            s = NATS_ERR;
        }
        else {
            wrote_pidfile = 1;
        }
    }
    if (s == NATS_OK) {
        printf("ready\n");
        fflush(stdout);

        do {
            if (sigwait(&sigs, &sig) != 0) {
                sig = 0;
            }
        } while (sig != SIGTERM && sig != SIGINT);
    }

    /* Stop taking requests, cut pending delays short, and only then tear
     * down the connection those delay threads would publish on. */
    pthread_mutex_lock(&state_lock);
    shutting_down = 1;
    pthread_cond_broadcast(&state_cond);
    pthread_mutex_unlock(&state_lock);

    for (i = 0; i < nsubjects; i++) {
        if (subs[i]) {
            natsSubscription_Unsubscribe(subs[i]);
        }
    }
    if (count_sub) {
        natsSubscription_Unsubscribe(count_sub);
    }

    pthread_mutex_lock(&state_lock);
    while (delayed_pending > 0) {
        pthread_cond_wait(&state_cond, &state_lock);
    }
    pthread_mutex_unlock(&state_lock);

    for (i = 0; i < nsubjects; i++) {
        natsSubscription_Destroy(subs[i]);
    }
    natsSubscription_Destroy(count_sub);
    natsSubscription_Destroy(jwks_sub);
    free(subs);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(opts);
    nats_CloseAndWait(5000);
    count_free_all();

    if (wrote_pidfile) {
        unlink(pidfile);
    }
    return s == NATS_OK ? 0 : 1;
}
