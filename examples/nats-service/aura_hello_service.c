/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_hello_service.c: a service behind mod_aura, in one file.
 *
 * The gateway turns each HTTP request of a NATS route into one NATS
 * request and the service's NATS reply into the HTTP response; the wire
 * contract is docs/envelope.md.  This service answers two subjects:
 *
 *   aura.hello         one reply: who is asking, as the gateway verified it
 *   aura.hello.stream  a streamed reply: ten lines, one every 100 ms
 *
 * behind routes such as these (build/demo writes them):
 *
 *   <Location "/v1/hello/">
 *       AuraService functions nats:aura.hello
 *   </Location>
 *   <Location "/v1/hello/stream">
 *       AuraService functions nats:aura.hello.stream
 *   </Location>
 *
 *   make && ./aura_hello_service [nats://127.0.0.1:4222]
 *
 * It prints "ready" once its subscriptions are in place, and stops on
 * SIGINT or SIGTERM.  Needs nats.c (libnats) and a NATS server >= 2.2
 * (headers).
 */
#include <nats/nats.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define HELLO_SUBJECT  "aura.hello"
#define STREAM_SUBJECT "aura.hello.stream"
/* Every instance joins one queue group, so each request reaches exactly
 * one instance: run as many as the load needs. */
#define QUEUE_GROUP    "aura-hello"

#define STREAM_LINES    10
#define STREAM_PAUSE_MS 100
/* The gateway acknowledges each stream message once the client's socket
 * took it; waiting for acknowledgements when this many are outstanding
 * makes a slow client slow us down instead of filling the gateway's
 * memory (docs/envelope.md, "Flow control": 8 is the window it expects). */
#define STREAM_WINDOW   8
/* A cancel from the gateway can be lost; silence this long means it gave
 * up.  Longer than httpd's Timeout (a write to a stalled client). */
#define ACK_WAIT_MS     30000

/* A request header, or "" when absent: a public route (AuraPublic On)
 * carries no identity headers, and a service must ignore what it does not
 * know rather than fail on what is missing. */
static const char *header(natsMsg *msg, const char *name)
{
    const char *value = NULL;

    if (natsMsgHeader_Get(msg, name, &value) != NATS_OK || !value) {
        return "";
    }
    return value;
}

/* A reply message to the request's inbox with the status the client will
 * get.  Aura-Status is the only header the gateway requires; the others
 * become HTTP response headers. */
static natsStatus new_reply(natsMsg **out, natsMsg *req, const char *reply_to,
                            const char *status, const char *body)
{
    natsStatus s;

    s = natsMsg_Create(out, natsMsg_GetReply(req), reply_to, body,
                       (int)strlen(body));
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(*out, "Aura-Status", status);
    }
    if (s == NATS_OK) {
        s = natsMsgHeader_Set(*out, "Content-Type", "text/plain");
    }
    return s;
}

static void on_hello(natsConnection *nc, natsSubscription *sub,
                     natsMsg *req, void *closure)
{
    const char *actor = header(req, "Aura-Actor");
    const char *role = header(req, "Aura-Role");
    char body[16384];    /* Aura-Path is at most a request line (8 KiB) */
    natsMsg *rep = NULL;
    natsStatus s;

    (void)sub;
    (void)closure;
    /* The gateway set these and dropped any a client tried to send, so
     * they can be trusted as they are.  Aura-Path is still
     * percent-encoded: decode it once, and only once, before routing. */
    snprintf(body, sizeof(body),
             "hello %s: %s %s, project %s, role %s, %d body bytes\n",
             *actor ? actor : "anonymous", header(req, "Aura-Method"),
             header(req, "Aura-Path"), header(req, "Aura-Project"), role,
             natsMsg_GetDataLength(req));
    /* Aura-Request-Id is the X-Request-Id the client gets back: logging it
     * ties this line to the gateway's access and error logs. */
    fprintf(stderr, "%s: hello %s\n", header(req, "Aura-Request-Id"),
            header(req, "Aura-Path"));

    s = new_reply(&rep, req, NULL, "200", body);
    /* Never a header with an empty value: nats.c 3.4.1 misreads it and
     * loses the header after it. */
    if (s == NATS_OK && *role) {
        s = natsMsgHeader_Set(rep, "X-Hello-Role", role);
    }
    if (s == NATS_OK) {
        s = natsConnection_PublishMsg(nc, rep);
    }
    if (s != NATS_OK) {
        fprintf(stderr, "reply failed: %s\n", natsStatus_GetText(s));
    }
    natsMsg_Destroy(rep);
    natsMsg_Destroy(req);
}

/* Publishes one stream message, first waiting while the window is full.
 * NATS_ERR when the gateway cancelled the stream; NATS_TIMEOUT when it
 * went silent. */
static natsStatus stream_send(natsConnection *nc, natsSubscription *acks,
                              natsMsg *msg, int *unacked)
{
    natsMsg *ack = NULL;
    natsStatus s;

    while (*unacked >= STREAM_WINDOW) {
        s = natsSubscription_NextMsg(&ack, acks, ACK_WAIT_MS);
        if (s != NATS_OK) {
            return s;
        }
        /* The client went away: stop producing what nobody will read. */
        if (!strcasecmp(header(ack, "Aura-Stream"), "cancel")) {
            natsMsg_Destroy(ack);
            return NATS_ERR;
        }
        natsMsg_Destroy(ack);
        (*unacked)--;
    }
    s = natsConnection_PublishMsg(nc, msg);
    if (s == NATS_OK) {
        (*unacked)++;
    }
    return s;
}

/* A streamed reply: a begin message (status and headers, like a plain
 * reply), then Aura-Seq 1, 2, ... with the body, the last one marked
 * Aura-Stream: end.  For a body larger than one NATS message (1 MiB by
 * default) or one produced bit by bit; the gateway passes each piece on
 * as it comes. */
static void on_stream(natsConnection *nc, natsSubscription *sub,
                      natsMsg *req, void *closure)
{
    natsSubscription *acks = NULL;
    natsInbox *inbox = NULL;
    natsMsg *msg = NULL;
    char subject[256], ack_to[300], line[64], seq[16];
    int n, unacked = 0;
    natsStatus s;

    (void)sub;
    (void)closure;
    fprintf(stderr, "%s: stream %s\n", header(req, "Aura-Request-Id"),
            header(req, "Aura-Path"));
    /* Acknowledgements come under one fresh inbox per stream (the
     * gateway only publishes under AuraStreamAckPrefix, _INBOX. by
     * default); subscribed before the first message can be answered. */
    s = natsInbox_Create(&inbox);
    if (s == NATS_OK) {
        snprintf(subject, sizeof(subject), "%s.*", inbox);
        s = natsConnection_SubscribeSync(&acks, nc, subject);
    }
    for (n = 0; s == NATS_OK && n <= STREAM_LINES; n++) {
        snprintf(ack_to, sizeof(ack_to), "%s.%d", inbox, n);
        if (n == 0) {
            s = new_reply(&msg, req, ack_to, "200", "");
            if (s == NATS_OK) {
                s = natsMsgHeader_Set(msg, "Aura-Stream", "begin");
            }
        }
        else {
            nats_Sleep(STREAM_PAUSE_MS);
            snprintf(line, sizeof(line), "line %d of %d\n", n, STREAM_LINES);
            snprintf(seq, sizeof(seq), "%d", n);
            s = natsMsg_Create(&msg, natsMsg_GetReply(req), ack_to, line,
                               (int)strlen(line));
            if (s == NATS_OK) {
                s = natsMsgHeader_Set(msg, "Aura-Seq", seq);
            }
            if (s == NATS_OK && n == STREAM_LINES) {
                s = natsMsgHeader_Set(msg, "Aura-Stream", "end");
            }
        }
        if (s == NATS_OK) {
            s = stream_send(nc, acks, msg, &unacked);
        }
        natsMsg_Destroy(msg);
        msg = NULL;
    }
    if (s != NATS_OK) {
        fprintf(stderr, "%s: stream stopped: %s\n",
                header(req, "Aura-Request-Id"),
                s == NATS_ERR ? "cancelled" : natsStatus_GetText(s));
    }
    natsSubscription_Destroy(acks);
    natsInbox_Destroy(inbox);
    natsMsg_Destroy(req);
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "nats://127.0.0.1:4222";
    natsSubscription *hello = NULL, *stream = NULL;
    natsConnection *nc = NULL;
    natsOptions *opts = NULL;
    sigset_t stop;
    natsStatus s;
    int sig;

    /* Blocked before nats.c starts its threads, which inherit the mask:
     * only sigwait() below sees SIGINT and SIGTERM. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    s = natsOptions_Create(&opts);
    if (s == NATS_OK) {
        s = natsOptions_SetURL(opts, url);
    }
    /* nats.c buffers what is published and its flusher thread writes it
     * out up to a millisecond later, hoping to batch: a service answering
     * one request at a time adds that millisecond to every reply (bench/
     * RESULTS.md: p50 1000 us at one connection, 286 us with this). */
    if (s == NATS_OK) {
        s = natsOptions_SetSendAsap(opts, true);
    }
    /* A service outlives NATS restarts: reconnect for ever; nats.c
     * subscribes again by itself. */
    if (s == NATS_OK) {
        s = natsOptions_SetMaxReconnect(opts, -1);
    }
    if (s == NATS_OK) {
        s = natsConnection_Connect(&nc, opts);
    }
    /* Each async subscription has its own delivery thread in nats.c: a
     * stream that takes a second does not hold up hellos.  A service with
     * longer work would hand requests to a pool of workers. */
    if (s == NATS_OK) {
        s = natsConnection_QueueSubscribe(&hello, nc, HELLO_SUBJECT,
                                          QUEUE_GROUP, on_hello, NULL);
    }
    if (s == NATS_OK) {
        s = natsConnection_QueueSubscribe(&stream, nc, STREAM_SUBJECT,
                                          QUEUE_GROUP, on_stream, NULL);
    }
    /* The round trip means the server has both subscriptions: from now
     * on no request of ours gets "no responders". */
    if (s == NATS_OK) {
        s = natsConnection_Flush(nc);
    }
    if (s != NATS_OK) {
        fprintf(stderr, "aura_hello_service: %s: %s\n", url,
                natsStatus_GetText(s));
    }
    else {
        printf("ready: %s and %s on %s\n", HELLO_SUBJECT, STREAM_SUBJECT,
               url);
        fflush(stdout);
        while (sigwait(&stop, &sig) != 0) {
            ;
        }
        /* Drain: take no new request, finish those in hand, then close;
         * the other instances of the queue group take the new ones. */
        if (natsConnection_Drain(nc) == NATS_OK) {
            while (!natsConnection_IsClosed(nc)) {
                nats_Sleep(50);
            }
        }
    }
    natsSubscription_Destroy(hello);
    natsSubscription_Destroy(stream);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(opts);
    nats_CloseAndWait(1000);
    return s == NATS_OK ? 0 : 1;
}
