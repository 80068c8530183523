/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_addr.c: a client address as the limiters count it (aura_addr.c):
 * IPv4 whole, IPv4-mapped IPv6 as IPv4, IPv6 cut to its prefix (so that
 * every address of one /64 is one key and two /64s are two), and the
 * text form the anonymous quota names in Redis.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "apr_network_io.h"
#include "apr_strings.h"
#include "limit/aura_addr.h"
#include "aura_unit.h"

static apr_sockaddr_t *addr(apr_pool_t *p, const char *ip)
{
    apr_sockaddr_t *sa = NULL;

    assert_int_equal(apr_sockaddr_info_get(&sa, ip, APR_UNSPEC, 80,
                                           APR_IPV4_ADDR_OK, p),
                     APR_SUCCESS);
    return sa;
}

static const char *hex(apr_pool_t *p, const char *ip, int prefix)
{
    char buf[AURA_ADDR_HEX_MAX];

    return apr_pstrdup(p, aura_address_hex(ip ? addr(p, ip) : NULL, prefix,
                                           buf));
}

static void test_ipv4(void **state)
{
    apr_pool_t *p = *state;

    assert_string_equal(hex(p, "127.0.0.2", 64), "4:7f000002");
    assert_string_equal(hex(p, "192.0.2.255", 1), "4:c00002ff");
    /* No address at all (a request without a connection address). */
    assert_string_equal(hex(p, NULL, 64), "-");
}

static void test_mapped(void **state)
{
    apr_pool_t *p = *state;

    /* An IPv4 client on a dual-stack listener is the IPv4 client. */
    assert_string_equal(hex(p, "::ffff:127.0.0.2", 64), "4:7f000002");
}

static void test_ipv6_prefix(void **state)
{
    apr_pool_t *p = *state;

    /* Every address of one /64 is one visitor ... */
    assert_string_equal(hex(p, "2001:db8:1:2::1", 64), "6:20010db800010002");
    assert_string_equal(hex(p, "2001:db8:1:2:ffff:ffff:ffff:ffff", 64),
                        "6:20010db800010002");
    /* ... and the next /64 another. */
    assert_string_equal(hex(p, "2001:db8:1:3::1", 64), "6:20010db800010003");
    /* A /48: one key for a whole site; a /52 cuts inside a byte. */
    assert_string_equal(hex(p, "2001:db8:1:ffff::1", 48), "6:20010db80001");
    assert_string_equal(hex(p, "2001:db8:1:2ff::1", 52), "6:20010db8000100");
    assert_string_equal(hex(p, "2001:db8:1:12ff::1", 52), "6:20010db8000110");
    assert_string_equal(hex(p, "::1", 128),
                        "6:00000000000000000000000000000001");
}

static void test_bytes(void **state)
{
    apr_pool_t *p = *state;
    unsigned char a[AURA_ADDR_BYTES_MAX], b[AURA_ADDR_BYTES_MAX];
    apr_size_t na, nb;

    na = aura_address_bytes(addr(p, "2001:db8:1:2::1"), 64, a);
    nb = aura_address_bytes(addr(p, "2001:db8:1:2::99"), 64, b);
    assert_int_equal(na, 17);
    assert_true(na == nb && !memcmp(a, b, na));
    nb = aura_address_bytes(addr(p, "2001:db8:1:2::99"), 128, b);
    assert_false(na == nb && !memcmp(a, b, na));
    /* IPv4 and the IPv6 address with the same leading bytes differ by
     * family. */
    na = aura_address_bytes(addr(p, "127.0.0.2"), 64, a);
    assert_int_equal(na, 5);
    assert_int_equal(a[0], 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ipv4, pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_mapped, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_ipv6_prefix, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_bytes, pool_setup,
                                        pool_teardown),
    };

    int rc;

    apr_initialize();
    rc = cmocka_run_group_tests_name("addr", tests, NULL, NULL);
    apr_terminate();
    return rc;
}
