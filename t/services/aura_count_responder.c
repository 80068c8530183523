/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_count_responder.c: a responder for the fault runs that must prove
 * "executed at most once" across several responder processes on several
 * NATS nodes (t/faults/nats_node_loss.t).  It subscribes to one subject
 * in a queue group, and for every request it executes appends the
 * request's Aura-Request-Id and its own name, one line, to a file, before
 * it answers "200 ok".  The test counts the lines of all responders'
 * files: an id seen twice was executed twice, wherever.  One write(2)
 * with O_APPEND per line, so that lines of one file never interleave and
 * a responder killed in the middle leaves whole lines only.
 *
 * It is told the servers it may use (-s, comma-separated) and ignores
 * the ones the cluster advertises: "every responder on one node" must
 * stay on that node.  It reconnects forever, quickly.  For a secured
 * cluster: -C a CA file (TLS), -c and -k a client certificate and its
 * key, -u a creds file (JWT and nkey seed).
 *
 * Usage: aura_count_responder -s url[,url...] -o file [-q queue]
 *                             [-n name] [-p pidfile] [-C ca] [-c cert
 *                             -k key] [-u creds] subject
 */
#include <nats/nats.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "aura_count_responder"
#define MAX_SERVERS 8

static int out_fd = -1;
static const char *name = "r";
static const char *ca, *cert, *key, *creds;

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                   void *closure)
{
    const char *rid = NULL;
    natsMsg *reply = NULL;
    char line[512];
    int n;

    (void)sub; (void)closure;
    if (natsMsgHeader_Get(msg, "Aura-Request-Id", &rid) != NATS_OK || !rid) {
        rid = "-";
    }
    n = snprintf(line, sizeof(line), "%s %s\n", rid, name);
    if (n > 0 && n < (int)sizeof(line) && write(out_fd, line, (size_t)n) != n) {
        fprintf(stderr, PROG ": cannot record %s\n", rid);
    }
    if (natsMsg_GetReply(msg)
        && natsMsg_Create(&reply, natsMsg_GetReply(msg), NULL, "ok", 2)
           == NATS_OK
        && natsMsgHeader_Set(reply, "Aura-Status", "200") == NATS_OK
        && natsMsgHeader_Set(reply, "Content-Type", "text/plain")
           == NATS_OK) {
        (void)natsConnection_PublishMsg(nc, reply);
    }
    natsMsg_Destroy(reply);
    natsMsg_Destroy(msg);
}

static void usage(void)
{
    fprintf(stderr, "usage: " PROG " -s url[,url...] -o file [-q queue] "
            "[-n name] [-p pidfile] [-C ca] [-c cert -k key] [-u creds] "
            "subject\n");
    exit(2);
}

static natsStatus connect_to(char *urls, natsConnection **nc)
{
    const char *servers[MAX_SERVERS];
    natsOptions *o = NULL;
    int n = 0;
    char *tok, *save = NULL;
    natsStatus s;

    for (tok = strtok_r(urls, ",", &save); tok && n < MAX_SERVERS;
         tok = strtok_r(NULL, ",", &save)) {
        servers[n++] = tok;
    }
    s = natsOptions_Create(&o);
    if (s == NATS_OK) {
        s = natsOptions_SetServers(o, servers, n);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetIgnoreDiscoveredServers(o, true);
    }
    if (s == NATS_OK && ca) {
        s = natsOptions_LoadCATrustedCertificates(o, ca);
        if (s == NATS_OK) {
            s = natsOptions_SetSecure(o, true);
        }
    }
    if (s == NATS_OK && cert && key) {
        s = natsOptions_LoadCertificatesChain(o, cert, key);
    }
    if (s == NATS_OK && creds) {
        s = natsOptions_SetUserCredentialsFromFiles(o, creds, NULL);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetMaxReconnect(o, -1);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectWait(o, 100);
    }
    if (s == NATS_OK) {
        s = natsConnection_Connect(nc, o);
    }
    natsOptions_Destroy(o);
    return s;
}

int main(int argc, char **argv)
{
    char *urls = NULL;
    const char *out = NULL, *queue = NULL, *pidfile = NULL;
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsStatus s;
    sigset_t sigs;
    int opt, sig;

    while ((opt = getopt(argc, argv, "s:o:q:n:p:C:c:k:u:")) != -1) {
        switch (opt) {
        case 'C': ca = optarg; break;
        case 'c': cert = optarg; break;
        case 'k': key = optarg; break;
        case 'u': creds = optarg; break;
        case 's': urls = optarg; break;
        case 'o': out = optarg; break;
        case 'q': queue = optarg; break;
        case 'n': name = optarg; break;
        case 'p': pidfile = optarg; break;
        default: usage();
        }
    }
    if (!urls || !out || optind != argc - 1) {
        usage();
    }
    out_fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out_fd < 0) {
        perror(out);
        return 1;
    }
    /* The stop signals go to sigwait() only, not to nats.c's threads. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    s = connect_to(urls, &nc);
    if (s == NATS_OK) {
        s = queue ? natsConnection_QueueSubscribe(&sub, nc, argv[optind],
                                                  queue, on_msg, NULL)
                  : natsConnection_Subscribe(&sub, nc, argv[optind],
                                             on_msg, NULL);
    }
    if (s == NATS_OK) {
        s = natsConnection_Flush(nc);
    }
    if (s != NATS_OK) {
        fprintf(stderr, PROG ": %s (%s)\n", natsStatus_GetText(s),
                nats_GetLastError(NULL));
        return 1;
    }
    if (pidfile) {
        FILE *f = fopen(pidfile, "w");

        if (f) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
    }
    (void)sigwait(&sigs, &sig);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    nats_Close();
    close(out_fd);
    return 0;
}
