/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_peer.h: whether the peer of a connected socket has gone, asked of
 * the kernel without reading (aura_peer.c; used by aura_gone.c).
 */
#ifndef AURA_PEER_H
#define AURA_PEER_H

/* 1 when the peer of the connected stream socket fd sent its FIN (also
 * behind bytes not yet read) or reset the connection, or fd is not an
 * open descriptor; 0 otherwise (a negative fd included).  Reads nothing,
 * never blocks. */
int aura_peer_closed(int fd);

#endif
