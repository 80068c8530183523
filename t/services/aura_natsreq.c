/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_natsreq.c: send one NATS request and print the reply payload, for
 * tests and the demo (e.g. asking aura_example_service how many times a
 * request id was executed).  Exit status tells the failure apart so a
 * shell test can assert on it: 0 reply printed, 1 other error, 2 usage,
 * 3 no responders, 4 timeout.
 *
 * Usage: aura_natsreq [-s url] [-t timeout_ms] subject [payload]
 */
#include <nats/nats.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "aura_natsreq"

#define DEFAULT_URL        "nats://127.0.0.1:4222"
#define DEFAULT_TIMEOUT_MS 2000

static void usage(void)
{
    fprintf(stderr, "usage: " PROG " [-s url] [-t timeout_ms] subject "
            "[payload]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *url = DEFAULT_URL;
    const char *subject, *payload = "";
    long timeout = DEFAULT_TIMEOUT_MS;
    char *end;
    int opt, rc = 0;
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    natsMsg *reply = NULL;
    natsStatus s;

    while ((opt = getopt(argc, argv, "s:t:h")) != -1) {
        switch (opt) {
        case 's':
            url = optarg;
            break;
        case 't':
            timeout = strtol(optarg, &end, 10);
            if (end == optarg || *end || timeout <= 0) {
                usage();
            }
            break;
        default:
            usage();
        }
    }
    if (optind >= argc || argc - optind > 2) {
        usage();
    }
    subject = argv[optind];
    if (argc - optind == 2) {
        payload = argv[optind + 1];
    }

    /* One shot: a lost connection is an error to report, not something
     * to ride out by reconnecting. */
    s = natsOptions_Create(&opts);
    if (s == NATS_OK) {
        s = natsOptions_SetURL(opts, url);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetAllowReconnect(opts, false);
    }
    if (s == NATS_OK) {
        s = natsConnection_Connect(&nc, opts);
        if (s != NATS_OK) {
            fprintf(stderr, PROG ": cannot connect to %s: %s\n", url,
                    natsStatus_GetText(s));
            rc = 1;
        }
    }
    else {
        fprintf(stderr, PROG ": bad options: %s\n", natsStatus_GetText(s));
        rc = 1;
    }

    if (rc == 0) {
        s = natsConnection_Request(&reply, nc, subject, payload,
                                   (int)strlen(payload), timeout);
        if (s == NATS_OK) {
            /* fwrite, not printf: the payload is binary and may hold NULs;
             * no newline is added so output compares byte for byte. */
            int len = natsMsg_GetDataLength(reply);

            if ((len > 0 && fwrite(natsMsg_GetData(reply), 1, (size_t)len,
                                   stdout) != (size_t)len)
                || fflush(stdout) != 0) {
                perror(PROG ": write");
                rc = 1;
            }
        }
        else {
            fprintf(stderr, PROG ": request on %s failed: %s\n", subject,
                    natsStatus_GetText(s));
            rc = s == NATS_NO_RESPONDERS ? 3 : s == NATS_TIMEOUT ? 4 : 1;
        }
    }

    natsMsg_Destroy(reply);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(opts);
    nats_Close();
    return rc;
}
