/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_peer.c: aura_peer_closed() (aura_peer.c) on real TCP connections
 * over loopback, the way httpd holds a client's: an open connection,
 * with or without unread bytes (a pipelined request), is not gone; a
 * FIN, even behind unread bytes, and a reset are; and nothing is ever
 * read (the bytes are still there afterwards).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "resilience/aura_peer.h"

/* A connected pair over 127.0.0.1: *client and the accepted *server. */
static void pair(int *client, int *server)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(l >= 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    *client = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(*client >= 0);
    assert_int_equal(connect(*client, (struct sockaddr *)&a, sizeof(a)), 0);
    *server = accept(l, NULL, NULL);
    assert_true(*server >= 0);
    close(l);
}

/* Waits (at most 1 s) until the server side has something to report:
 * loopback delivers at once, but not within the same instant. */
static void settle(int server)
{
    struct pollfd p = { server, POLLIN | POLLRDHUP, 0 };

    (void)poll(&p, 1, 1000);
}

static void test_open(void **state)
{
    int c, s;

    (void)state;
    pair(&c, &s);
    assert_int_equal(aura_peer_closed(s), 0);
    close(c);
    close(s);
}

static void test_pending_bytes_not_gone(void **state)
{
    int c, s;
    char buf[16];

    (void)state;
    pair(&c, &s);
    assert_int_equal(write(c, "GET / HTTP/1.1\r\n", 16), 16);
    settle(s);
    assert_int_equal(aura_peer_closed(s), 0);
    assert_int_equal(aura_peer_closed(s), 0);
    /* Nothing consumed: every byte is still there. */
    assert_int_equal(recv(s, buf, sizeof(buf), MSG_DONTWAIT), 16);
    close(c);
    close(s);
}

static void test_fin(void **state)
{
    int c, s;

    (void)state;
    pair(&c, &s);
    close(c);
    settle(s);
    assert_int_equal(aura_peer_closed(s), 1);
    close(s);
}

static void test_fin_behind_bytes(void **state)
{
    int c, s;
    char buf[8];

    (void)state;
    pair(&c, &s);
    assert_int_equal(write(c, "pipelin", 7), 7);
    close(c);
    settle(s);
    assert_int_equal(aura_peer_closed(s), 1);
    assert_int_equal(recv(s, buf, sizeof(buf), MSG_DONTWAIT), 7);
    close(s);
}

static void test_half_close(void **state)
{
    int c, s;

    (void)state;
    pair(&c, &s);
    assert_int_equal(shutdown(c, SHUT_WR), 0);
    settle(s);
    /* Taken as gone: the documented limit (AuraAbandonCheck Off). */
    assert_int_equal(aura_peer_closed(s), 1);
    close(c);
    close(s);
}

static void test_reset(void **state)
{
    int c, s;
    struct linger lg = { 1, 0 };

    (void)state;
    pair(&c, &s);
    assert_int_equal(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)),
                     0);
    close(c);
    settle(s);
    assert_int_equal(aura_peer_closed(s), 1);
    close(s);
}

static void test_bad_fd(void **state)
{
    (void)state;
    assert_int_equal(aura_peer_closed(-1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_pending_bytes_not_gone),
        cmocka_unit_test(test_fin),
        cmocka_unit_test(test_fin_behind_bytes),
        cmocka_unit_test(test_half_close),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_bad_fd),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
