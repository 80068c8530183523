/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_subject.c: where a service may make the gateway publish stream
 * acknowledgements and cancels (aura_subject.c), table-driven.  Rows
 * marked #15 are the subjects issue #15 (point 7) found the gateway
 * would publish on for any service that asked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "nats/aura_subject.h"

#define OWN "_INBOX.GW0123456789abcdefghij"

static void test_literal(void **state)
{
    static const struct {
        const char *s;
        int ok;
    } rows[] = {
        { "a", 1 }, { "a.b.c", 1 }, { "_INBOX.x.0", 1 }, { "a-b_c.$d", 1 },
        { "", 0 }, { ".a", 0 }, { "a.", 0 }, { "a..b", 0 }, { "a.*", 0 },
        { "a.>", 0 }, { "a*b", 0 }, { "a b", 0 }, { "a\tb", 0 },
        { "a\r\nPUB x 0", 0 }, { "a\x7f", 0 }, { "\xc3\xa4", 0 },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (aura_subject_literal(rows[i].s) != rows[i].ok) {
            fail_msg("row %zu '%s'", i, rows[i].s);
        }
    }
    assert_false(aura_subject_literal(NULL));
}

static void test_prefix(void **state)
{
    static const struct {
        const char *s;
        int ok;
    } rows[] = {
        { "_INBOX.", 1 }, { "acks.storage.", 1 }, { "a.", 1 },
        { "_INBOX", 0 }, { ".", 0 }, { "", 0 }, { "a..", 0 }, { "*.", 0 },
        { ">.", 0 }, { "a b.", 0 },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (aura_subject_ack_prefix_ok(rows[i].s) != rows[i].ok) {
            fail_msg("row %zu '%s'", i, rows[i].s);
        }
    }
    assert_false(aura_subject_ack_prefix_ok(NULL));
}

static void test_ack(void **state)
{
    static const struct {
        const char *subject;
        const char *prefix;
        const char *why;    /* NULL: allowed; else a word of the reason */
    } rows[] = {
        { "_INBOX.svc123.0", "_INBOX.", NULL },
        { "_INBOX.svc123.17", "_INBOX.", NULL },
        { "acks.storage.x.1", "acks.storage.", NULL },
        { "_INBOX.GW0123456789abcdefghijk.1", "_INBOX.", NULL },
        /* #15: subjects of the gateway's or the services' own. */
        { "aura.keys.invalidate", "_INBOX.", "outside" },
        { "aura.functions", "_INBOX.", "outside" },
        { "aura.auth.jwks", "_INBOX.", "outside" },
        { "_INBOXX.a", "_INBOX.", "outside" },
        { "_INBOX.", "_INBOX.", "literal" },
        { "_INBOX", "_INBOX.", "outside" },
        { "_INBOX.svc.0", "acks.storage.", "outside" },
        { "acks.storage", "acks.storage.", "outside" },
        { OWN ".5", "_INBOX.", "own reply inbox" },             /* #15 */
        { OWN, "_INBOX.", "own reply inbox" },
        { "_INBOX.>", "_INBOX.", "literal" },                   /* #15 */
        { "_INBOX.*.0", "_INBOX.", "literal" },
        { "_INBOX.a b", "_INBOX.", "literal" },
        { "_INBOX.a\r\nPUB aura.keys.invalidate 0", "_INBOX.", "literal" },
        { "_INBOX..a", "_INBOX.", "literal" },
    };
    char longer[AURA_STREAM_ACK_MAX + 2];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *why = aura_subject_ack_refused(rows[i].subject,
                                                   rows[i].prefix, OWN);

        if (rows[i].why ? !why || !strstr(why, rows[i].why) : why != NULL) {
            fail_msg("row %zu '%s': %s", i, rows[i].subject,
                     why ? why : "allowed");
        }
    }
    /* No own inbox known (not connected yet): the prefix alone. */
    assert_null(aura_subject_ack_refused(OWN ".5", "_INBOX.", NULL));
    memcpy(longer, "_INBOX.", 7);
    memset(longer + 7, 'a', sizeof(longer) - 8);
    longer[AURA_STREAM_ACK_MAX] = '\0';
    assert_null(aura_subject_ack_refused(longer, "_INBOX.", OWN));
    longer[AURA_STREAM_ACK_MAX] = 'a';
    longer[AURA_STREAM_ACK_MAX + 1] = '\0';
    assert_non_null(aura_subject_ack_refused(longer, "_INBOX.", OWN));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_ack),
    };

    return cmocka_run_group_tests_name("subject", tests, NULL, NULL);
}
