/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_peer.c: whether a client has gone, from its socket alone (pure:
 * no httpd; t/unit/test_peer.c tests it on real loopback connections).
 * poll() with a zero timeout: POLLRDHUP says the peer sent its FIN,
 * even behind unread bytes (a pipelined request); POLLHUP or POLLERR a
 * reset, or both directions shut.  Nothing is read.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* POLLRDHUP */
#endif
#include "resilience/aura_peer.h"

#include <poll.h>
#include <sys/socket.h>

int aura_peer_closed(int fd)
{
    struct pollfd pfd;

    pfd.fd = fd;
    pfd.revents = 0;
#ifdef POLLRDHUP
    pfd.events = POLLIN | POLLRDHUP;
#else
    pfd.events = POLLIN;
#endif
    if (poll(&pfd, 1, 0) <= 0) {
        return 0;
    }
    if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) {
        return 1;
    }
#ifdef POLLRDHUP
    return (pfd.revents & POLLRDHUP) != 0;
#else
    /* Without POLLRDHUP, readable with nothing to read is the FIN; bytes
     * waiting (a pipelined request) hide it until they are read. */
    if (pfd.revents & POLLIN) {
        char c;

        return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    }
    return 0;
#endif
}
