/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_gone.c: noticing a client that has gone (DESIGN.md section 9: a
 * request whose client has gone is never published, and holds no
 * worker).  A client that gives up closes its connection; a request
 * that waited for a worker behind a hung service may reach one after
 * its client left, and without this check it would still be sent, run,
 * and its answer thrown away (a client that retried gets it run twice).
 *
 * The check reads nothing: request data that may follow (a pipelined
 * request) stays for httpd.  It asks the kernel about the socket
 * (aura_peer.c): the peer's FIN, even behind unread bytes, or a reset.
 * A client that half-closes its sending side after its request
 * (shutdown(SHUT_WR), rare for HTTP clients, "nc -N") is taken as gone,
 * as nginx and HAProxy's abortonclose take it: the socket cannot tell a
 * half-close from a close, and a Location whose clients half-close sets
 * AuraAbandonCheck Off.  Over TLS the socket says the same
 * (close_notify comes before the FIN, and the FIN is what is seen).
 *
 * An HTTP/2 stream runs on a secondary connection (c->master set) whose
 * socket is the whole session's: its FIN says that every stream is gone
 * but a single stream's RST_STREAM is not on it, so there only
 * c->aborted is trusted (mod_http2 sets it when the stream is reset or
 * the session ends).  The master's socket, which the session's own
 * thread drives, is not polled from a worker.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "nats/aura_inbox.h"
#include "resilience/aura_gone.h"
#include "resilience/aura_peer.h"
#include "shm/aura_shm.h"

#include "http_connection.h"
#include "http_core.h"
#include "http_request.h"
#include "apr_portable.h"

#include <nats/nats.h>

int aura_client_gone(request_rec *r)
{
    conn_rec *c = r->connection;
    apr_socket_t *sock;
    apr_os_sock_t fd;

    if (c->aborted) {
        return 1;
    }
    if (aura_dir_conf(r)->abandon_check == 0 || c->master) {
        return 0;
    }
    sock = ap_get_conn_socket(c);
    if (!sock || apr_os_sock_get(&fd, sock) != APR_SUCCESS || fd < 0) {
        return 0;
    }
    return aura_peer_closed(fd);
}

int aura_client_abandoned(request_rec *r, const char *stage,
                          const char *upstream)
{
    int waiting = !strcmp(stage, "waiting");

    r->connection->aborted = 1;
    r->connection->keepalive = AP_CONN_CLOSE;
    /* httpd has no status for it: nginx's 499 "client closed request",
     * which no client ever receives, names it in the access log. */
    r->status = AURA_STATUS_CLIENT_GONE;
    aura_problem_note(r, "client-gone", "the client closed the connection "
                      "before the answer");
    aura_count(waiting ? AURA_CTR_GONE_WAITING : AURA_CTR_GONE_BEFORE_SEND);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, AURA_LOGNO(00800)
                  "client gone %s the request to %s (%" APR_TIME_T_FMT
                  " ms after it arrived): %s", waiting ? "while waiting on"
                  : "before sending", upstream,
                  apr_time_as_msec(apr_time_now() - r->request_time),
                  waiting ? "the wait is given up, a late reply will be "
                  "dropped" : "not sent");
    return DONE;
}

/* The slice bounds how long a worker stays after its client left: one
 * poll() per slice and request, nothing when a reply comes first. */
int aura_inbox_next_unless_gone(request_rec *r, aura_inbox_t *inbox,
                                apr_time_t deadline, natsMsg **msg,
                                int *gone)
{
    natsStatus s;

    for (;;) {
        apr_time_t now = apr_time_now();
        apr_time_t until = deadline - now > AURA_GONE_SLICE
                           ? now + AURA_GONE_SLICE : deadline;

        s = aura_inbox_next(inbox, until, msg);
        if (s != NATS_TIMEOUT || until >= deadline) {
            return s;
        }
        if (aura_client_gone(r)) {
            *gone = 1;
            return NATS_TIMEOUT;
        }
    }
}
