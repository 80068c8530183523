/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_hostile_service: a compromised NATS service, for
 * t/security/service_containment.t (issue #29, point 1).
 *
 *   aura_hostile_service -s URL [-C creds] -o STATS SUBJECT
 *
 * It serves SUBJECT like any service, and remembers the reply subject of
 * every request it gets: all a service ever learns about the gateway's
 * inboxes.  A request whose Aura-Path ends in "/attack/<seconds>" makes
 * it spend that long trying, on every subject it can derive from what it
 * learned, to
 *   (a) answer other requests: forged replies (Aura-Status 200, a
 *       Set-Cookie, a body saying FORGED),
 *   (b) make them fail: bursts of junk, more than the 16 pending
 *       messages a gateway inbox holds,
 *   (c) move breakers: header-less messages and forged 503 replies;
 * then it answers that request with what it sent.  "/flood/<n>" answers
 * at once, then sends n more messages on that same reply subject, while
 * the gateway ends the request.  Derived subjects are
 * the learned ones themselves (a reply subject after its request ended)
 * and, where the last two tokens of one are hexadecimal numbers (an
 * inbox "lane" and a counter), the neighbouring lanes and counters.
 * Every line of STATS is "published=<n> refused=<n> learned=<n>":
 * publishes handed to the server, and how many the server refused
 * (permissions violations, reported asynchronously by nats.c).
 */
#include <nats/nats.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG          "aura_hostile_service"
#define MAX_LEARNED   64
#define LANES         16      /* lanes tried around a learned one */
#define COUNTERS      24      /* counter values tried after a learned one */
#define JUNK_BURST    20      /* more than a gateway inbox holds (16) */
#define DERIVED_FROM  4       /* learned subjects whose neighbours are hit */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *learned[MAX_LEARNED];
static int nlearned;
static long long refused;     /* under lock */
static const char *stats_path;

static void on_error(natsConnection *nc, natsSubscription *sub,
                     natsStatus err, void *closure)
{
    (void)nc; (void)sub; (void)closure;
    if (err == NATS_NOT_PERMITTED) {
        pthread_mutex_lock(&lock);
        refused++;
        pthread_mutex_unlock(&lock);
    }
}

static void learn(const char *reply)
{
    pthread_mutex_lock(&lock);
    if (nlearned == MAX_LEARNED) {
        free(learned[0]);
        memmove(learned, learned + 1, sizeof(learned[0]) * (MAX_LEARNED - 1));
        nlearned--;
    }
    learned[nlearned++] = strdup(reply);
    pthread_mutex_unlock(&lock);
}

static long long pub_forged(natsConnection *nc, const char *subject,
                            const char *status)
{
    static const char body[] = "FORGED by a hostile service\n";
    natsMsg *m = NULL;
    long long n = 0;

    if (natsMsg_Create(&m, subject, NULL, body, (int)sizeof(body) - 1)
        == NATS_OK
        && natsMsgHeader_Set(m, "Aura-Status", status) == NATS_OK
        && natsMsgHeader_Set(m, "Content-Type", "text/plain") == NATS_OK
        && natsMsgHeader_Set(m, "Set-Cookie", "session=forged; Path=/")
           == NATS_OK
        && natsConnection_PublishMsg(nc, m) == NATS_OK) {
        n = 1;
    }
    natsMsg_Destroy(m);
    return n;
}

/* Everything of (a), (b) and (c) on one subject. */
static long long hit(natsConnection *nc, const char *subject)
{
    long long n = pub_forged(nc, subject, "200")
                  + pub_forged(nc, subject, "503");
    int i;

    for (i = 0; i < JUNK_BURST; i++) {
        if (natsConnection_PublishString(nc, subject, "junk") == NATS_OK) {
            n++;
        }
    }
    return n;
}

/* Splits "<base>.<lane>.<counter>" when lane and counter are hex numbers
 * of at most 8 and 16 digits (the gateway's old inbox layout). */
static int split_lane(const char *s, char *base, size_t size,
                      unsigned long *lane, unsigned long long *ctr)
{
    const char *dot2 = strrchr(s, '.'), *dot1;
    char *end;
    size_t blen;

    if (!dot2 || dot2 == s) {
        return 0;
    }
    for (dot1 = dot2 - 1; dot1 > s && *dot1 != '.'; dot1--) {
        ;
    }
    if (*dot1 != '.' || dot2 - dot1 - 1 > 8 || strlen(dot2 + 1) > 16
        || dot2 - dot1 < 2 || !dot2[1]) {
        return 0;
    }
    *lane = strtoul(dot1 + 1, &end, 16);
    if (end != dot2) {
        return 0;
    }
    *ctr = strtoull(dot2 + 1, &end, 16);
    if (*end) {
        return 0;
    }
    blen = (size_t)(dot1 - s);
    if (blen + 1 > size) {
        return 0;
    }
    memcpy(base, s, blen);
    base[blen] = '\0';
    return 1;
}

static long long attack_once(natsConnection *nc)
{
    char *mine[MAX_LEARNED];
    int n, i;
    long long sent = 0;

    pthread_mutex_lock(&lock);
    n = nlearned;
    for (i = 0; i < n; i++) {
        mine[i] = strdup(learned[i]);
    }
    pthread_mutex_unlock(&lock);
    for (i = 0; i < n; i++) {
        char base[256], subject[300];
        unsigned long lane, l;   /* (the learned lane: all are tried) */
        unsigned long long ctr, c;

        sent += hit(nc, mine[i]);
        /* Neighbours of the last few only: enough lanes and counters to
         * cover every lane of a child, few enough to repeat each second. */
        if (i >= n - DERIVED_FROM
            && split_lane(mine[i], base, sizeof(base), &lane, &ctr)) {
            for (l = 1; l <= LANES; l++) {
                for (c = ctr > COUNTERS ? ctr - COUNTERS : 1;
                     c <= ctr + COUNTERS; c++) {
                    snprintf(subject, sizeof(subject), "%s.%lx.%llx", base,
                             l, c);
                    sent += hit(nc, subject);
                }
            }
        }
        free(mine[i]);
    }
    return sent;
}

static void reply_text(natsConnection *nc, natsMsg *req, const char *text)
{
    natsMsg *m = NULL;

    if (!natsMsg_GetReply(req)) {
        return;
    }
    if (natsMsg_Create(&m, natsMsg_GetReply(req), NULL, text,
                       (int)strlen(text)) == NATS_OK
        && natsMsgHeader_Set(m, "Aura-Status", "200") == NATS_OK
        && natsMsgHeader_Set(m, "Content-Type", "text/plain") == NATS_OK) {
        natsConnection_PublishMsg(nc, m);
    }
    natsMsg_Destroy(m);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void attack(natsConnection *nc, natsMsg *req, long secs)
{
    double end = now_s() + (double)secs;
    long long sent = 0, ref;
    char text[160];
    FILE *f;
    int known;

    while (now_s() < end) {
        sent += attack_once(nc);
        /* Paced by the server: a round trip per round, so that the junk
         * arrives while the victims' requests wait, not all at once. */
        natsConnection_FlushTimeout(nc, 2000);
    }
    natsConnection_FlushTimeout(nc, 2000);
    pthread_mutex_lock(&lock);
    ref = refused;
    known = nlearned;
    pthread_mutex_unlock(&lock);
    snprintf(text, sizeof(text), "published=%lld refused=%lld learned=%d\n",
             sent, ref, known);
    if ((f = fopen(stats_path, "a")) != NULL) {
        fputs(text, f);
        fclose(f);
    }
    reply_text(nc, req, text);
}

static void on_request(natsConnection *nc, natsSubscription *sub,
                       natsMsg *req, void *closure)
{
    const char *path = NULL, *a;

    (void)sub; (void)closure;
    natsMsgHeader_Get(req, "Aura-Path", &path);
    if (path && (a = strstr(path, "/flood/")) != NULL
        && natsMsg_GetReply(req)) {
        /* Its own reply subject, right after the answer: the gateway
         * ends the request (and its subscription) while these come. */
        long i, n = strtol(a + 7, NULL, 10);

        reply_text(nc, req, "flooded\n");
        for (i = 0; i < n; i++) {
            natsConnection_PublishString(nc, natsMsg_GetReply(req), "junk");
        }
    }
    else if (path && (a = strstr(path, "/attack/")) != NULL) {
        /* Its own reply subject is not a target: the answer must come
         * after the attack, with what it sent. */
        attack(nc, req, strtol(a + 8, NULL, 10));
    }
    else {
        if (natsMsg_GetReply(req)) {
            learn(natsMsg_GetReply(req));
        }
        reply_text(nc, req, "learned\n");
    }
    natsMsg_Destroy(req);
}

static void usage(void)
{
    fprintf(stderr, "usage: " PROG " -s URL [-C creds] -o STATS SUBJECT\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *url = NULL, *creds = NULL;
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsStatus s;
    sigset_t sigs;
    int opt, sig;

    while ((opt = getopt(argc, argv, "s:C:o:")) != -1) {
        switch (opt) {
        case 's': url = optarg; break;
        case 'C': creds = optarg; break;
        case 'o': stats_path = optarg; break;
        default: usage();
        }
    }
    if (!url || !stats_path || optind + 1 != argc) {
        usage();
    }
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    s = natsOptions_Create(&o);
    if (s == NATS_OK) {
        s = natsOptions_SetURL(o, url);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetErrorHandler(o, on_error, NULL);
    }
    if (s == NATS_OK && creds) {
        s = natsOptions_SetUserCredentialsFromFiles(o, creds, NULL);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetMaxReconnect(o, -1);
    }
    if (s == NATS_OK) {
        s = natsConnection_Connect(&nc, o);
    }
    if (s == NATS_OK) {
        s = natsConnection_Subscribe(&sub, nc, argv[optind], on_request, NULL);
    }
    if (s == NATS_OK) {
        s = natsConnection_Flush(nc);
    }
    if (s != NATS_OK) {
        fprintf(stderr, PROG ": %s\n", natsStatus_GetText(s));
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    sigwait(&sigs, &sig);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    nats_Close();
    return 0;
}
