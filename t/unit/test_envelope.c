/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_envelope.c: cmocka tests of the HTTP <-> NATS envelope
 * (mod_aura_common/nats/aura_envelope.c, DESIGN.md section 8), linked from
 * libaura_pure.a exactly as the module links it.  Every case is a row of
 * a table walked by a loop; a regression row names its issue.
 *
 * Pools: apr_initialize()/nats_Open() once per group, one APR pool per
 * test (setup/teardown).  Every natsMsg is destroyed and every array
 * nats.c hands out (Keys, Values) is freed, so the binary stays clean
 * under valgrind --leak-check=full.  nats.c needs nats_Open() before
 * natsMsg_Destroy() (its garbage collector takes the library lock).
 *
 * nats.c header keys are case-sensitive since v3.0, so "exact key case"
 * assertions below use natsMsgHeader_Get with the precise spelling.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aura_unit.h"

#include "apr_general.h"
#include "apr_pools.h"
#include "apr_tables.h"
#include "apr_strings.h"

#include "nats/aura_envelope.h"

#define MAX_KV 24

typedef struct {
    const char *key;
    const char *val;
} kv_t;

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */

static int group_setup(void **state)
{
    (void)state;
    if (apr_initialize() != APR_SUCCESS) {
        return -1;
    }
    if (nats_Open(-1) != NATS_OK) {
        apr_terminate();
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    nats_CloseAndWait(0);
    apr_terminate();
    return 0;
}

/* ------------------------------------------------------------------ */
/* aura_envelope_request_header_ok                                     */

typedef struct {
    const char *name;
    const char *connection;     /* the request's Connection value */
    int expected;               /* 1 forward, 0 drop */
    const char *issue;          /* regression rows: the issue */
} req_hdr_case_t;

#define I15 "#15 no spelling of an identity header crosses"
static const req_hdr_case_t req_hdr_cases[] = {
    /* forwarded */
    { "content-type",        NULL,            1, NULL },
    { "Content-Type",        NULL,            1, NULL },
    { "x-foo",               NULL,            1, NULL },
    { "X-Foo",               "close",         1, NULL },
    { "authorization",       NULL,            1, NULL },
    { "Authorization",       "keep-alive",    1, NULL },
    { "cookie",              NULL,            1, NULL },
    { "host",                NULL,            1, NULL },
    { "Host",                "close",         1, NULL },
    { "accept",              NULL,            1, NULL },
    /* near misses of the gateway's own names are not in it */
    { "trace-parent",        NULL,            1, NULL },
    { "tracestates",         NULL,            1, NULL },
    { "x-request-ids",       NULL,            1, NULL },
    { "x-request",           NULL,            1, NULL },
    { "xx-request-id",       NULL,            1, NULL },
    /* near misses of the aura- namespace are not in it */
    { "aura",                NULL,            1, NULL },
    { "auras-x",             NULL,            1, NULL },
    { "x-aura-role",         NULL,            1, NULL },
    /* near misses of the fixed lists */
    { "x-api-key2",          NULL,            1, NULL },
    { "apikeys",             NULL,            1, NULL },
    { "tes",                 NULL,            1, NULL },
    { "content-length2",     NULL,            1, NULL },
    { "statuses",            NULL,            1, NULL },

    /* hop-by-hop, RFC 9110 section 7.6.1, any case */
    { "connection",          NULL,            0, NULL },
    { "Connection",          "close",         0, NULL },
    { "keep-alive",          NULL,            0, NULL },
    { "Keep-Alive",          NULL,            0, NULL },
    { "proxy-authenticate",  NULL,            0, NULL },
    { "Proxy-Authenticate",  NULL,            0, NULL },
    { "proxy-authorization", NULL,            0, NULL },
    { "PROXY-AUTHORIZATION", NULL,            0, NULL },
    { "proxy-connection",    NULL,            0, NULL },
    { "Proxy-Connection",    NULL,            0, NULL },
    { "te",                  NULL,            0, NULL },
    { "TE",                  NULL,            0, NULL },
    { "tE",                  NULL,            0, NULL },
    { "trailer",             NULL,            0, NULL },
    { "Trailer",             NULL,            0, NULL },
    { "transfer-encoding",   NULL,            0, NULL },
    { "Transfer-Encoding",   NULL,            0, NULL },
    { "upgrade",             NULL,            0, NULL },
    { "UpGrAdE",             NULL,            0, NULL },

    /* payload length, gateway credentials */
    { "content-length",      NULL,            0, NULL },
    { "Content-Length",      NULL,            0, NULL },
    { "apikey",              NULL,            0, NULL },
    { "ApiKey",              NULL,            0, NULL },
    { "X-API-Key",           NULL,            0, NULL },
    { "x-api-key",           NULL,            0, NULL },

    /* the gateway's namespace, any case */
    { "Aura-Role",           NULL,            0, NULL },
    { "AURA-PLANE",          NULL,            0, NULL },
    { "aura-",               NULL,            0, NULL },
    { "aura-request-id",     NULL,            0, NULL },
    { "Aura-Request-Id",     NULL,            0, NULL },
    { "aUrA-sTaTuS",         NULL,            0, NULL },
    /* ...and with '_' for '-' (CGI: HTTP_AURA_ROLE either way), and the
     * names the gateway sets besides aura-* (issue #15) */
    { "Aura_Role",           NULL,            0, I15 },
    { "AURA-role",           NULL,            0, I15 },
    { "aura_project",        NULL,            0, I15 },
    { "Aura_Key_Role",       NULL,            0, I15 },
    { "aura-actor",          NULL,            0, I15 },
    { "aura_",               NULL,            0, I15 },
    { "X-Request-Id",        NULL,            0, I15 },
    { "x_request_id",        NULL,            0, I15 },
    { "X_REQUEST-ID",        NULL,            0, I15 },
    { "traceparent",         NULL,            0, I15 },
    { "Traceparent",         NULL,            0, I15 },
    { "TRACESTATE",          NULL,            0, I15 },

    /* NATS status line names */
    { "Status",              NULL,            0, NULL },
    { "status",              NULL,            0, NULL },
    { "Description",         NULL,            0, NULL },
    { "DESCRIPTION",         NULL,            0, NULL },

    /* named by Connection: whole tokens, any case */
    { "x-hop",               "close, X-Hop",  0, NULL },
    { "X-HOP",               "close, x-hop",  0, NULL },
    { "x-hop",               "X-Hop",         0, NULL },
    { "x-hop",               "x-hop,close",   0, NULL },
    { "x-hop",               "close,x-hop  ", 0, NULL },
    { "x-hop",               "\tx-hop\t,a",   0, NULL },
    { "x-hop",               "x-hopper",      1, NULL },
    { "x-hopper",            "x-hop",         1, NULL },
    { "x-hop",               "close, x-ho",   1, NULL },
    { "x-hop",               "x-hop-2, y",    1, NULL },
    { "x-hop",               "xx-hop",        1, NULL },
    { "x-a",                 ", ,x-a",        0, NULL },
    { "x-a",                 ",,, ,",         1, NULL },
    { "x-a",                 "",              1, NULL },
    { "x-a",                 " , x-b , ",     1, NULL },
    { "x-b",                 " , x-b , ",     0, NULL },
    { "x-b",                 "x-a,,x-b",      0, NULL },
    { "content-type",        "content-type",  0, NULL },
    { "accept",              "close",         1, NULL },

    /* no name */
    { NULL,                  NULL,            0, NULL },
    { "",                    NULL,            0, NULL },
    { "",                    ",",             0, NULL },
};
#undef I15

static void test_request_header_ok(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(req_hdr_cases) / sizeof(req_hdr_cases[0]); i++) {
        const req_hdr_case_t *c = &req_hdr_cases[i];
        int got = aura_envelope_request_header_ok(c->name, c->connection);

        if (got != c->expected) {
            print_error("row %zu: name=\"%s\" connection=\"%s\"%s%s: "
                        "expected %d, got %d\n", i,
                        c->name ? c->name : "(null)",
                        c->connection ? c->connection : "(null)",
                        c->issue ? " issue " : "",
                        c->issue ? c->issue : "", c->expected, got);
        }
        assert_int_equal(got, c->expected);
    }
}

/* ------------------------------------------------------------------ */
/* aura_envelope_own_header: the one namespace rule (DESIGN.md 9)      */

typedef struct {
    const char *name;
    int expected;               /* 1 in the gateway's namespace */
    const char *issue;
} own_case_t;

#define NS "#15 no spelling of an identity header crosses"
#define XP "#29 3: X-Project-Id is the project the gateway verified"
static const own_case_t own_cases[] = {
    { "Aura-Role",             1, NULL },
    { "aura-",                 1, NULL },
    { "AURA-PROJECT",          1, NULL },
    { "Aura_Role",             1, NS },
    { "AURA-role",             1, NS },
    { "aura_role",             1, NS },
    { "AURA_KEY-ROLE",         1, NS },
    { "aura_",                 1, NS },
    { "Aura-Anything-New",     1, NS },
    { "X-Request-Id",          1, NS },
    { "x-request-id",          1, NS },
    { "x_request_id",          1, NS },
    { "X_Request-ID",          1, NS },
    { "traceparent",           1, NS },
    { "Traceparent",           1, NS },
    { "TRACEPARENT",           1, NS },
    { "tracestate",            1, NS },
    { "TraceState",            1, NS },
    { "X-Project-Id",          1, XP },
    { "x-project-id",          1, XP },
    { "X_Project_Id",          1, XP },
    { "x.project.id",          1, XP },
    /* any character but a letter or digit folds to '-' (httpd 2.2's CGI
     * mapped each to '_') */
    { "aurA.role",             1, NS },
    { "aura role",             1, NS },
    { "x.request.id",          1, NS },
    { "Trace.Parent",          0, NS },
    /* not the gateway's */
    { "aura",                  0, NULL },
    { "Aura",                  0, NULL },
    { "auras-x",               0, NULL },
    { "x-aura-role",           0, NULL },
    { "_aura-role",            0, NS },
    { " aura-role",            0, NS },
    { "x-request-i",           0, NS },
    { "x-request-id2",         0, NS },
    { "x-request-id-",         0, NS },
    { "x-project-i",           0, XP },
    { "x-project-ids",         0, XP },
    { "project-id",            0, XP },
    { "x-project",             0, XP },
    { "request-id",            0, NULL },
    { "trace-parent",          0, NS },
    { "trace_parent",          0, NS },
    { "traceparents",          0, NS },
    { "tracestat",             0, NS },
    { "x-forwarded-for",       0, NULL },
    { "authorization",         0, NULL },
    { "",                      0, NULL },
    { NULL,                    0, NULL },
};
#undef NS
#undef XP

static void test_own_header(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(own_cases) / sizeof(own_cases[0]); i++) {
        const own_case_t *c = &own_cases[i];
        int got = aura_envelope_own_header(c->name);

        if (got != c->expected) {
            print_error("row %zu: name=\"%s\"%s%s: expected %d, got %d\n",
                        i, c->name ? c->name : "(null)",
                        c->issue ? " issue " : "",
                        c->issue ? c->issue : "", c->expected, got);
        }
        assert_int_equal(got, c->expected);
    }
}

/* ------------------------------------------------------------------ */
/* aura_envelope_upgrade_head: the 101 of a WebSocket (issue #15, 7c)  */

typedef struct {
    const char *name;
    const char *head;           /* as the upstream's 101 reached httpd */
    const char *want;           /* as the client gets it */
    const char *issue;
} upgrade_case_t;

#define GW "X-Request-Id: gw-1\r\nX-Frame-Options: DENY\r\n"
static const upgrade_case_t upgrade_cases[] = {
    {
        "the gateway's lines are added before the blank line",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\n" GW "\r\n",
        "#15 7c",
    },
    {
        "the upstream's names of the gateway are dropped, any spelling",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
        "X-Request-Id: up-1\r\nx_request_id: up-2\r\nAura-Role: x\r\n"
        "aura_status: 200\r\ntraceparent: t\r\nTraceState: s\r\n"
        "Sec-WebSocket-Accept: abc=\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
        "Sec-WebSocket-Accept: abc=\r\n" GW "\r\n",
        "#15 7d",
    },
    {
        "a header the gateway sets itself is the gateway's alone",
        "HTTP/1.1 101 Switching Protocols\r\nx-frame-options: ALLOWALL\r\n"
        "X-Frame-Options-Extra: kept\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\n"
        "X-Frame-Options-Extra: kept\r\n" GW "\r\n",
        "#15 7c",
    },
    {
        "no header at all",
        "HTTP/1.1 101 Switching Protocols\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\n" GW "\r\n",
        NULL,
    },
    {
        "another status passes as it is",
        "HTTP/1.1 200 OK\r\nX-Request-Id: up\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Request-Id: up\r\n\r\n",
        NULL,
    },
    {
        "1010 is not 101",
        "HTTP/1.1 1010 X\r\nX-Request-Id: up\r\n\r\n",
        "HTTP/1.1 1010 X\r\nX-Request-Id: up\r\n\r\n",
        NULL,
    },
    {
        "HTTP/1.0 passes as it is",
        "HTTP/1.0 101 Switching Protocols\r\nX-Request-Id: up\r\n\r\n",
        "HTTP/1.0 101 Switching Protocols\r\nX-Request-Id: up\r\n\r\n",
        NULL,
    },
    {
        "a line without a colon is kept",
        "HTTP/1.1 101 Switching Protocols\r\nodd line\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nodd line\r\n" GW "\r\n",
        NULL,
    },
    {
        "a value naming the gateway's headers is only a value",
        "HTTP/1.1 101 Switching Protocols\r\n"
        "X-Note: X-Request-Id: up\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\n"
        "X-Note: X-Request-Id: up\r\n" GW "\r\n",
        NULL,
    },
    {
        "headers only the gateway sets are dropped, the others kept",
        "HTTP/1.1 101 Switching Protocols\r\n"
        "Strict-Transport-Security: max-age=31536000; includeSubDomains\r\n"
        "ratelimit: \"actor\";r=0;t=3600\r\nNEL: {}\r\n"
        "X-Project-Id: other\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\n"
        "Sec-WebSocket-Protocol: chat\r\n" GW "\r\n",
        "#29 3",
    },
    { "too short", "HTTP/1.1 1", "HTTP/1.1 1", NULL },
};
#undef GW

static void test_upgrade_head(void **state)
{
    static const char *const replaced[] = {
        "X-Frame-Options", "Content-Security-Policy", NULL
    };
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(upgrade_cases) / sizeof(upgrade_cases[0]);
         i++) {
        const upgrade_case_t *c = &upgrade_cases[i];
        apr_size_t len = 0;
        const char *got = aura_envelope_upgrade_head(
            p, c->head, strlen(c->head),
            "X-Request-Id: gw-1\r\nX-Frame-Options: DENY\r\n", replaced,
            &len);
        const char *text = apr_pstrmemdup(p, got, len);

        if (strcmp(text, c->want)) {
            print_error("row %zu \"%s\"%s%s:\n got  [%s]\n want [%s]\n", i,
                        c->name, c->issue ? " issue " : "",
                        c->issue ? c->issue : "", text, c->want);
        }
        assert_string_equal(text, c->want);
    }
}

/* ------------------------------------------------------------------ */
/* aura_envelope_reply_header_ok                                       */

typedef struct {
    const char *name;
    int expected;               /* 1 keep, 0 drop */
    const char *issue;
} reply_hdr_case_t;

static const reply_hdr_case_t reply_hdr_cases[] = {
    { "content-type",       1, NULL },
    { "Content-Type",       1, NULL },
    { "set-cookie",         1, NULL },
    { "Set-Cookie",         1, NULL },
    { "x-anything",         1, NULL },
    { "X-Custom",           1, NULL },
    { "cache-control",      1, NULL },
    { "Location",           1, NULL },
    { "aura",               1, NULL },
    { "x-aura-status",      1, NULL },
    /* a service's own answer: its Retry-After, its challenge */
    { "Retry-After",        1, "#29 3" },
    { "WWW-Authenticate",   1, "#29 3" },
    { "Reporting-Endpoints", 1, "#29 3" },
    /* browsers read exact names only */
    { "Strict_Transport_Security", 1, "#29 3" },
    { "RateLimit-Remaining", 1, "#29 3" },

    { "Aura-Status",        0, NULL },
    { "AURA-STATUS",        0, NULL },
    { "aura-foo",           0, NULL },
    { "Aura-Stream",        0, NULL },
    { "aura-",              0, NULL },
    /* a service cannot add a second X-Request-Id, or any spelling of
     * the gateway's names */
    { "X-Request-Id",       0, "#15 7d" },
    { "x-request-id",       0, "#15 7d" },
    { "X_Request_Id",       0, "#15 7d" },
    { "traceparent",        0, "#15 7d" },
    { "tracestate",         0, "#15 7d" },
    { "Aura_Status",        0, "#15 7d" },
    { "aura_role",          0, "#15 7d" },
    { "X-Project-Id",       0, "#29 3" },
    /* only the gateway sets these (aura_envelope_response_owned) */
    { "Strict-Transport-Security",   0, "#29 3" },
    { "strict-transport-security",   0, "#29 3" },
    { "RateLimit",                   0, "#29 3" },
    { "RateLimit-Policy",            0, "#29 3" },
    { "Clear-Site-Data",             0, "#29 3" },
    { "NEL",                         0, "#29 3" },
    { "Report-To",                   0, "#29 3" },
    { "Expect-CT",                   0, "#29 3" },
    { "Public-Key-Pins",             0, "#29 3" },
    { "Public-Key-Pins-Report-Only", 0, "#29 3" },
    { "Content-Security-Policy",     0, "#29 3" },
    { "X-Content-Type-Options",      0, "#29 3" },
    { "Referrer-Policy",             0, "#29 3" },
    { "X-Frame-Options",             0, "#29 3" },
    { "connection",         0, NULL },
    { "Connection",         0, NULL },
    { "keep-alive",         0, NULL },
    { "proxy-authenticate", 0, NULL },
    { "proxy-connection",   0, NULL },
    { "te",                 0, NULL },
    { "trailer",            0, NULL },
    { "transfer-encoding",  0, NULL },
    { "Transfer-Encoding",  0, NULL },
    { "upgrade",            0, NULL },
    { "content-length",     0, NULL },
    { "Content-Length",     0, NULL },
    { "status",             0, NULL },
    { "Status",             0, NULL },
    { "description",        0, NULL },
    { "Description",        0, NULL },
    { "",                   0, NULL },
    { NULL,                 0, NULL },
};

static void test_reply_header_ok(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(reply_hdr_cases) / sizeof(reply_hdr_cases[0]);
         i++) {
        const reply_hdr_case_t *c = &reply_hdr_cases[i];
        int got = aura_envelope_reply_header_ok(c->name);

        if (got != c->expected) {
            print_error("row %zu: name=\"%s\"%s%s: expected %d, got %d\n",
                        i, c->name ? c->name : "(null)",
                        c->issue ? " issue " : "",
                        c->issue ? c->issue : "", c->expected, got);
        }
        assert_int_equal(got, c->expected);
    }
}

/* ------------------------------------------------------------------ */
/* aura_envelope_parse_status                                          */

typedef struct {
    const char *value;
    int expected;
    const char *issue;
} status_case_t;

static const status_case_t status_cases[] = {
    { "200",   200, NULL },
    { "201",   201, NULL },
    { "404",   404, NULL },
    { "500",   500, NULL },
    { "599",   599, NULL },
    { "100",   0,   NULL },
    { "199",   0,   NULL },
    { "099",   0,   NULL },
    { "000",   0,   NULL },
    { "600",   0,   NULL },
    { "999",   0,   NULL },
    { "20",    0,   NULL },
    { "2",     0,   NULL },
    { "2000",  0,   NULL },
    { " 200",  0,   NULL },
    { "200 ",  0,   NULL },
    { "200\n", 0,   NULL },
    { "abc",   0,   NULL },
    { "2a0",   0,   NULL },
    { "20a",   0,   NULL },
    { "2 0",   0,   NULL },
    { "",      0,   NULL },
    { NULL,    0,   NULL },
    { "-20",   0,   NULL },
    { "+20",   0,   NULL },
    { "0x1",   0,   NULL },
};

static void test_parse_status(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(status_cases) / sizeof(status_cases[0]); i++) {
        const status_case_t *c = &status_cases[i];
        int got = aura_envelope_parse_status(c->value);

        if (got != c->expected) {
            print_error("row %zu: value=\"%s\"%s%s: expected %d, got %d\n",
                        i, c->value ? c->value : "(null)",
                        c->issue ? " issue " : "",
                        c->issue ? c->issue : "", c->expected, got);
        }
        assert_int_equal(got, c->expected);
    }
}

/* ------------------------------------------------------------------ */
/* aura_envelope_encode: headers                                       */

typedef struct {
    const char *name;
    const char *issue;
    const char *method;
    const char *path;
    const char *query;          /* NULL: no Aura-Query at all */
    const char *request_id;
    const char *plane;
    kv_t client[MAX_KV];        /* apr_table_add, in order */
    /* Every header of the message, exact key case; a key listed twice
     * must carry those values in that order.  Nothing else may be in
     * the message. */
    kv_t want[MAX_KV];
    const char *absent[MAX_KV]; /* exact keys that must be NOT_FOUND */
} encode_case_t;

/* A row with the gateway's identity and trace context (NULL: not sent). */
typedef struct {
    encode_case_t c;
    const char *project;
    const char *role;
    const char *traceparent;
    const char *tracestate;
} encode_id_case_t;

static const encode_case_t encode_cases[] = {
    {
        "full request", NULL,
        "POST", "/v1/things/a%2Fb", "x=1&y=%20", "req-123", "data",
        {
            { "Content-Type", "application/json" },
            { "X-Foo", "a" },
            { "Authorization", "Bearer t" },
            { "Cookie", "c=1" },
            { "Host", "example.test" },
            { "Accept", "*/*" },
            { "X-Multi", "one" },
            { "X-Multi", "two" },
            { "apikey", "secret-1" },
            { "X-API-Key", "secret-2" },
            { "Aura-Role", "service_role" },
            { "aura-project", "p1" },
            { "Connection", "close, X-Hop" },
            { "X-Hop", "hop" },
            { "Content-Length", "42" },
            { "Transfer-Encoding", "chunked" },
        },
        {
            { "Aura-Method", "POST" },
            { "Aura-Path", "/v1/things/a%2Fb" },
            { "Aura-Query", "x=1&y=%20" },
            { "Aura-Request-Id", "req-123" },
            { "Aura-Plane", "data" },
            { "content-type", "application/json" },
            { "x-foo", "a" },
            { "authorization", "Bearer t" },
            { "cookie", "c=1" },
            { "host", "example.test" },
            { "accept", "*/*" },
            { "x-multi", "one" },
            { "x-multi", "two" },
        },
        {
            "Content-Type", "X-Foo", "X-Multi", "apikey", "x-api-key",
            "X-API-Key", "Aura-Role", "aura-role", "aura-project",
            "Aura-Project", "connection", "Connection", "x-hop", "X-Hop",
            "content-length", "Content-Length", "transfer-encoding",
            "Transfer-Encoding",
        },
    },
    {
        "no query, no client headers", NULL,
        "GET", "/", NULL, "req-1", "mgmt",
        { { NULL, NULL } },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/" },
            { "Aura-Request-Id", "req-1" },
            { "Aura-Plane", "mgmt" },
        },
        { "Aura-Query", "aura-query", "AURA-QUERY" },
    },
    {
        /* nats.c 3.4.1 cannot parse an empty header value back. */
        "empty query sends no Aura-Query",
        "empty header values (nats.c 3.4.1 parser)",
        "GET", "/x", "", "req-2", "data",
        { { NULL, NULL } },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/x" },
            { "Aura-Request-Id", "req-2" },
            { "Aura-Plane", "data" },
        },
        { "Aura-Query" },
    },
    {
        "client cannot forge envelope headers", NULL,
        "DELETE", "/v1/x", NULL, "gw-id", "data",
        {
            { "Aura-Request-Id", "forged" },
            { "aura-request-id", "forged-2" },
            { "AURA-METHOD", "GET" },
            { "Aura-Path", "/admin" },
            { "Aura-Query", "q=forged" },
            { "aura-plane", "mgmt" },
            { "Aura-Status", "200" },
            { "Status", "200" },
            { "Description", "x" },
            { "X-Request-Id", "client-id" },
        },
        {
            /* Until #15 the client's X-Request-Id crossed as
             * x-request-id: the id is the gateway's (Aura-Request-Id). */
            { "Aura-Method", "DELETE" },
            { "Aura-Path", "/v1/x" },
            { "Aura-Request-Id", "gw-id" },
            { "Aura-Plane", "data" },
        },
        {
            "Aura-Query", "aura-request-id", "aura-method", "aura-path",
            "aura-query", "aura-plane", "Aura-Status", "aura-status",
            "Status", "status", "Description", "description",
            "x-request-id", "X-Request-Id",
        },
    },

    {
        "every hop-by-hop header, mixed case", NULL,
        "GET", "/h", NULL, "r", "data",
        {
            { "Connection", "x-a, , X-B" },
            { "KEEP-ALIVE", "timeout=5" },
            { "Proxy-Authenticate", "Basic" },
            { "proxy-AUTHORIZATION", "Basic x" },
            { "Proxy-Connection", "keep-alive" },
            { "TE", "trailers" },
            { "Trailer", "X-T" },
            { "transfer-ENCODING", "chunked" },
            { "Upgrade", "websocket" },
            { "X-A", "1" },
            { "x-b", "2" },
            { "X-C", "3" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/h" },
            { "Aura-Request-Id", "r" },
            { "Aura-Plane", "data" },
            { "x-c", "3" },
        },
        { "x-a", "X-A", "x-b", "te", "upgrade", "keep-alive" },
    },
    {
        "Connection token is matched whole", NULL,
        "GET", "/w", NULL, "r", "data",
        {
            { "Connection", "x-hopper" },
            { "X-Hop", "kept" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/w" },
            { "Aura-Request-Id", "r" },
            { "Aura-Plane", "data" },
            { "x-hop", "kept" },
        },
        { "connection" },
    },
    {
        /* On the wire an empty value would swallow the next header. */
        "empty client value is not sent, the next header survives",
        "empty header values (nats.c 3.4.1 parser)",
        "GET", "/e", NULL, "r", "data",
        {
            { "X-Empty", "" },
            { "X-After", "v" },
            { "X-Twice", "" },
            { "X-Twice", "second" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/e" },
            { "Aura-Request-Id", "r" },
            { "Aura-Plane", "data" },
            { "x-after", "v" },
            { "x-twice", "second" },
        },
        { "x-empty", "X-Empty" },
    },
    {
        "empty envelope values are not sent",
        "empty header values (nats.c 3.4.1 parser)",
        "", "/p", NULL, "", "",
        { { NULL, NULL } },
        {
            { "Aura-Path", "/p" },
        },
        { "Aura-Method", "Aura-Request-Id", "Aura-Plane", "Aura-Query" },
    },
    {
        /* RFC 9110 5.3: repeated field lines form one list.  Regression:
         * only the first Connection line was read (apr_table_get).
         * Latent under httpd, which merges repeated request headers. */
        "two Connection lines: both name hop headers",
        "unfiled: Connection read with apr_table_get",
        "GET", "/c", NULL, "r", "data",
        {
            { "Connection", "close" },
            { "Connection", "x-hop" },
            { "X-Hop", "dropped" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/c" },
            { "Aura-Request-Id", "r" },
            { "Aura-Plane", "data" },
        },
        { "x-hop" },
    },
    {
        /* Another module may put any bytes in r->headers_in: a name
         * that is not a token or a value with a control character would
         * end or add a NATS header line (see fuzz/fuzz_envelope.c). */
        "fields that are not HTTP are not sent", "#15",
        "GET", "/f", NULL, "r", "data",
        {
            { "X-A\r\nAura-Role", "admin" },
            { "X A", "1" },
            { "X-B", "1\r\nAura-Role: admin" },
            { "X-C", "a\x01b" },
            { "X-D", "a\tb \xe9" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/f" },
            { "Aura-Request-Id", "r" },
            { "Aura-Plane", "data" },
            { "x-d", "a\tb \xe9" },
        },
        { "Aura-Role", "aura-role", "x-a\r\naura-role", "x a", "x-b",
          "x-c" },
    },
};

static const encode_id_case_t encode_id_cases[] = {
    { {
        "no spelling of an identity header crosses",
        "#15 no spelling of an identity header crosses",
        "GET", "/v1/y", NULL, "gw", "data",
        {
            { "Aura_Role", "service_role" },
            { "AURA-role", "service_role" },
            { "aura_project", "other" },
            { "Aura_Org", "other" },
            { "aura_key_role", "service_role" },
            { "Aura_Actor", "someone" },
            { "x_request_id", "forged" },
            { "X-Request-Id", "forged" },
            { "Traceparent",
              "00-11111111111111111111111111111111-2222222222222222-01" },
            { "tracestate", "forged=1" },
            { "X-Kept", "k" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/v1/y" },
            { "Aura-Request-Id", "gw" },
            { "Aura-Plane", "data" },
            { "Aura-Project", "p" },
            { "x-project-id", "p" },
            { "Aura-Role", "anon" },
            { "traceparent",
              "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
            { "x-kept", "k" },
        },
        {
            "Aura_Role", "aura_role", "AURA-role", "aura_project",
            "aura_org", "Aura_Org", "aura_key_role", "aura_actor",
            "Aura_Actor", "x_request_id", "x-request-id", "Traceparent",
            "tracestate",
        } },
        "p", "anon",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", NULL,
    },
    { {
        "Connection cannot remove what the gateway sets",
        "#15 hop-by-hop headers cannot touch identity",
        "GET", "/v1/z", NULL, "gw", "data",
        {
            { "Connection",
              "close, Aura-Role, Aura-Project, X-Request-Id, traceparent, "
              "tracestate" },
            { "tracestate", "client=1" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/v1/z" },
            { "Aura-Request-Id", "gw" },
            { "Aura-Plane", "data" },
            { "Aura-Project", "p" },
            { "x-project-id", "p" },
            { "Aura-Role", "anon" },
            { "traceparent",
              "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
            { "tracestate", "kept=1" },
        },
        { "connection", "x-request-id" } },
        "p", "anon",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "kept=1",
    },
    { {
        /* nats.c 3.4.1 takes a key that is a prefix of one already there,
         * with the same hash, for that key: Add("trace") added to the
         * gateway's traceparent (found by fuzz/fuzz_envelope.c).  Such
         * a client header is dropped; a repeated one stays repeated. */
        "a client header nats.c takes for a gateway header is dropped",
        "#15 nats.c header key collisions",
        "GET", "/v1/t", NULL, "gw", "data",
        {
            { "Trace", "forged-1" },
            { "Tracepa", "forged-2" },
            { "Trac", "forged-3" },
            { "Traces", "forged-4" },
            { "X-Multi", "one" },
            { "X-Multi", "two" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/v1/t" },
            { "Aura-Request-Id", "gw" },
            { "Aura-Plane", "data" },
            { "Aura-Project", "p" },
            { "x-project-id", "p" },
            { "Aura-Role", "anon" },
            { "traceparent",
              "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
            { "tracestate", "gw=1" },
            { "x-multi", "one" },
            { "x-multi", "two" },
        },
        { "connection" } },
        "p", "anon",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "gw=1",
    },
    { {
        /* The management plane authorized the path's project, or an
         * org: the client's X-Project-Id named another (issue #29). */
        "X-Project-Id is the verified project, never the client's",
        "#29 3: X-Project-Id is the project the gateway verified",
        "GET", "/v1/projects/p/logs", NULL, "gw", "management",
        {
            { "X-Project-Id", "other" },
            { "x_project_id", "other-2" },
            { "X.Project.Id", "other-3" },
            { "X-Kept", "k" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/v1/projects/p/logs" },
            { "Aura-Request-Id", "gw" },
            { "Aura-Plane", "management" },
            { "Aura-Project", "p" },
            { "x-project-id", "p" },
            { "Aura-Role", "admin" },
            { "x-kept", "k" },
        },
        { "X-Project-Id", "x_project_id", "X.Project.Id", "x.project.id" } },
        "p", "admin", NULL, NULL,
    },
    { {
        /* nats.c 3.4.1: a service looking up "x-project-id" can find a
         * client key that begins with it (fuzz/fuzz_envelope.c). */
        "a client key that begins with a gateway key is dropped",
        "#29 nats.c header key collisions, the other way round",
        "GET", "/v1/c", NULL, "gw", "data",
        {
            { "x-project-idX-", "1" },
            { "X-Project-Id-2", "2" },
            { "traceparentx", "3" },
            { "tracestate-y", "4" },
            { "x-other", "kept" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/v1/c" },
            { "Aura-Request-Id", "gw" },
            { "Aura-Plane", "data" },
            { "Aura-Project", "p" },
            { "x-project-id", "p" },
            { "Aura-Role", "anon" },
            { "traceparent",
              "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
            { "tracestate", "gw=1" },
            { "x-other", "kept" },
        },
        { "x-project-idx-", "x-project-id-2", "traceparentx",
          "tracestate-y" } },
        "p", "anon",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "gw=1",
    },
    { {
        "no verified project: no X-Project-Id at all",
        "#29 3: X-Project-Id is the project the gateway verified",
        "GET", "/v1/orgs/o/projects", NULL, "gw", "management",
        {
            { "X-Project-Id", "other" },
            { "X_PROJECT_ID", "other-2" },
        },
        {
            { "Aura-Method", "GET" },
            { "Aura-Path", "/v1/orgs/o/projects" },
            { "Aura-Request-Id", "gw" },
            { "Aura-Plane", "management" },
            { "Aura-Role", "owner" },
        },
        { "x-project-id", "X-Project-Id", "X_PROJECT_ID",
          "x_project_id" } },
        NULL, "owner", NULL, NULL,
    },
};

/* Values of key in want, in order; returns how many. */
static int want_values(const kv_t *want, const char *key,
                       const char **vals)
{
    int n = 0, i;

    for (i = 0; i < MAX_KV && want[i].key; i++) {
        if (!strcmp(want[i].key, key)) {
            vals[n++] = want[i].val;
        }
    }
    return n;
}

static int want_distinct_keys(const kv_t *want)
{
    int n = 0, i, j;

    for (i = 0; i < MAX_KV && want[i].key; i++) {
        for (j = 0; j < i; j++) {
            if (!strcmp(want[j].key, want[i].key)) {
                break;
            }
        }
        n += (j == i);
    }
    return n;
}

static void check_message_headers(natsMsg *m, const kv_t *want,
                                  const char *const *absent,
                                  const char *row)
{
    const char **keys = NULL;
    int nkeys = 0, i, j;
    natsStatus s;

    s = natsMsgHeader_Keys(m, &keys, &nkeys);
    assert_int_equal(s, NATS_OK);
    /* Every key present is expected, in its exact case... */
    for (i = 0; i < nkeys; i++) {
        const char *vals[MAX_KV];

        if (!want_values(want, keys[i], vals)) {
            print_error("%s: unexpected header key \"%s\"\n", row, keys[i]);
            free((void *)keys);
            fail();
        }
    }
    /* ...and nothing is missing. */
    if (nkeys != want_distinct_keys(want)) {
        print_error("%s: %d keys, expected %d\n", row, nkeys,
                    want_distinct_keys(want));
    }
    assert_int_equal(nkeys, want_distinct_keys(want));
    free((void *)keys);

    /* Values per key, in order. */
    for (i = 0; i < MAX_KV && want[i].key; i++) {
        const char *exp[MAX_KV];
        const char **vals = NULL;
        const char *first = NULL;
        int nexp = want_values(want, want[i].key, exp), nvals = 0;

        s = natsMsgHeader_Values(m, want[i].key, &vals, &nvals);
        if (s != NATS_OK) {
            print_error("%s: key \"%s\" missing (%d)\n", row,
                        want[i].key, (int)s);
        }
        assert_int_equal(s, NATS_OK);
        assert_int_equal(nvals, nexp);
        for (j = 0; j < nvals; j++) {
            assert_string_equal(vals[j], exp[j]);
        }
        free((void *)vals);
        assert_int_equal(natsMsgHeader_Get(m, want[i].key, &first), NATS_OK);
        assert_string_equal(first, exp[0]);
    }

    for (i = 0; i < MAX_KV && absent[i]; i++) {
        const char *v = NULL;

        s = natsMsgHeader_Get(m, absent[i], &v);
        if (s != NATS_NOT_FOUND) {
            print_error("%s: key \"%s\" should be absent\n", row, absent[i]);
        }
        assert_int_equal(s, NATS_NOT_FOUND);
    }
}

static void encode_one(apr_pool_t *p, const encode_case_t *c, size_t i,
                       const encode_id_case_t *id)
{
    apr_table_t *t = apr_table_make(p, 4);
    aura_envelope_req_t in;
    natsMsg *m = NULL;
    natsStatus s;
    int j;

    for (j = 0; j < MAX_KV && c->client[j].key; j++) {
        apr_table_add(t, c->client[j].key, c->client[j].val);
    }
    memset(&in, 0, sizeof(in));
    in.method = c->method;
    in.path = c->path;
    in.query = c->query;
    in.request_id = c->request_id;
    in.plane = c->plane;
    in.headers = t;
    if (id) {
        in.project = id->project;
        in.role = id->role;
        in.traceparent = id->traceparent;
        in.tracestate = id->tracestate;
    }

    s = aura_envelope_encode(p, "aura.test", &in, &m);
    if (s != NATS_OK) {
        print_error("row %zu \"%s\": encode returned %d\n", i, c->name,
                    (int)s);
    }
    assert_int_equal(s, NATS_OK);
    assert_non_null(m);
    assert_string_equal(natsMsg_GetSubject(m), "aura.test");
    assert_null(natsMsg_GetReply(m));
    assert_int_equal(natsMsg_GetDataLength(m), 0);
    check_message_headers(m, c->want, c->absent, c->name);
    natsMsg_Destroy(m);
}

static void test_encode_headers(void **state)
{
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(encode_cases) / sizeof(encode_cases[0]); i++) {
        encode_one(p, &encode_cases[i], i, NULL);
    }
    for (i = 0; i < sizeof(encode_id_cases) / sizeof(encode_id_cases[0]);
         i++) {
        encode_one(p, &encode_id_cases[i].c, i, &encode_id_cases[i]);
    }
}

/* The client's table is read, never changed (it is r->headers_in). */
static void test_encode_leaves_client_table(void **state)
{
    apr_pool_t *p = *state;
    apr_table_t *t = apr_table_make(p, 4);
    const apr_array_header_t *arr;
    const apr_table_entry_t *e;
    aura_envelope_req_t in;
    natsMsg *m = NULL;

    apr_table_add(t, "X-Foo", "a");
    apr_table_add(t, "apikey", "k");
    memset(&in, 0, sizeof(in));
    in.method = "GET";
    in.path = "/";
    in.request_id = "r";
    in.plane = "data";
    in.headers = t;
    assert_int_equal(aura_envelope_encode(p, "aura.test", &in, &m), NATS_OK);
    natsMsg_Destroy(m);

    arr = apr_table_elts(t);
    e = (const apr_table_entry_t *)arr->elts;
    assert_int_equal(arr->nelts, 2);
    assert_string_equal(e[0].key, "X-Foo");
    assert_string_equal(e[0].val, "a");
    assert_string_equal(e[1].key, "apikey");
}

/* No table at all: only the envelope headers. */
static void test_encode_null_headers(void **state)
{
    static const kv_t want[MAX_KV] = {
        { "Aura-Method", "HEAD" },
        { "Aura-Path", "/n" },
        { "Aura-Request-Id", "r" },
        { "Aura-Plane", "data" },
    };
    static const char *const absent[MAX_KV] = { "Aura-Query" };
    apr_pool_t *p = *state;
    aura_envelope_req_t in;
    natsMsg *m = NULL;

    memset(&in, 0, sizeof(in));
    in.method = "HEAD";
    in.path = "/n";
    in.request_id = "r";
    in.plane = "data";
    assert_int_equal(aura_envelope_encode(p, "aura.test", &in, &m), NATS_OK);
    check_message_headers(m, want, absent, "NULL headers table");
    natsMsg_Destroy(m);
}

/* ------------------------------------------------------------------ */
/* aura_envelope_encode: body                                          */

static char all_bytes[3 * 256];     /* filled by test_encode_body */

typedef struct {
    const char *name;
    const char *body;
    apr_size_t len;
    const char *issue;
} body_case_t;

static void test_encode_body(void **state)
{
    const body_case_t cases[] = {
        { "all 256 byte values", all_bytes, 256, NULL },
        { "all byte values, three times", all_bytes, sizeof(all_bytes),
          NULL },
        { "leading NUL", all_bytes, 1, NULL },
        { "NUL in the middle", "a\0b", 3, NULL },
        { "empty body", "", 0, NULL },
        { "NULL body, length 0", NULL, 0, NULL },
    };
    apr_pool_t *p = *state;
    size_t i;

    for (i = 0; i < sizeof(all_bytes); i++) {
        all_bytes[i] = (char)(unsigned char)(i % 256);
    }
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const body_case_t *c = &cases[i];
        apr_table_t *t = apr_table_make(p, 2);
        aura_envelope_req_t in;
        natsMsg *m = NULL;
        const char *data;

        apr_table_add(t, "Content-Type", "application/octet-stream");
        apr_table_add(t, "Content-Length", "999");
        memset(&in, 0, sizeof(in));
        in.method = "PUT";
        in.path = "/bin";
        in.request_id = "r";
        in.plane = "data";
        in.headers = t;
        in.body = c->body;
        in.body_len = c->len;

        assert_int_equal(aura_envelope_encode(p, "aura.test", &in, &m),
                         NATS_OK);
        data = natsMsg_GetData(m);
        if ((apr_size_t)natsMsg_GetDataLength(m) != c->len) {
            print_error("row %zu \"%s\": length %d, expected %zu\n", i,
                        c->name, natsMsg_GetDataLength(m), (size_t)c->len);
        }
        assert_int_equal(natsMsg_GetDataLength(m), c->len);
        if (c->len) {
            assert_non_null(data);
            assert_true(data != c->body);     /* a copy, not a borrow */
            assert_memory_equal(data, c->body, c->len);
        }
        {
            const char *v = NULL;

            assert_int_equal(natsMsgHeader_Get(m, "content-length", &v),
                             NATS_NOT_FOUND);
            assert_int_equal(natsMsgHeader_Get(m, "content-type", &v),
                             NATS_OK);
            assert_string_equal(v, "application/octet-stream");
        }
        natsMsg_Destroy(m);
    }
}

/* ------------------------------------------------------------------ */
/* aura_envelope_decode                                                */

typedef struct {
    const char *name;
    const char *issue;
    kv_t reply[MAX_KV];         /* natsMsgHeader_Add, in order */
    const char *body;
    int body_len;
    apr_status_t rv;
    int status;                 /* on success */
    kv_t want[MAX_KV];          /* the whole response table, per key in
                                 * order, names exactly as sent */
} decode_case_t;

static const decode_case_t decode_cases[] = {
    {
        "valid reply", NULL,
        {
            { "Aura-Status", "201" },
            { "Content-Type", "application/json" },
            { "Set-Cookie", "a=1; Path=/" },
            { "Set-Cookie", "b=2; HttpOnly" },
            { "X-Custom", "yes" },
            { "Connection", "close" },
            { "Transfer-Encoding", "chunked" },
            { "Aura-Internal", "x" },
            { "Content-Length", "5" },
            { "Keep-Alive", "timeout=5" },
            { "Upgrade", "h2c" },
            { "aura-stream", "begin" },
        },
        "a\0b\0\xff", 5,
        APR_SUCCESS, 201,
        {
            { "Content-Type", "application/json" },
            { "Set-Cookie", "a=1; Path=/" },
            { "Set-Cookie", "b=2; HttpOnly" },
            { "X-Custom", "yes" },
        },
    },
    {
        /* RFC 9110 7.6.1: what a reply's Connection names is hop-by-hop
         * too, in any case and across repeated Connection values. */
        "headers named by the reply's Connection are dropped", NULL,
        {
            { "Aura-Status", "200" },
            { "Connection", "X-Hop-One" },
            { "connection", "x-hop-two, close" },
            { "x-hop-one", "a" },
            { "X-Hop-Two", "b" },
            { "X-Hopper", "kept: not a whole token" },
        },
        NULL, 0,
        APR_SUCCESS, 200,
        { { "X-Hopper", "kept: not a whole token" } },
    },
    {
        "a service cannot add a second X-Request-Id (any spelling)",
        "#15 7d a service cannot add a header the gateway owns",
        {
            { "Aura-Status", "200" },
            { "X-Request-Id", "service-id" },
            { "x_request_id", "service-id-2" },
            { "traceparent",
              "00-11111111111111111111111111111111-2222222222222222-01" },
            { "Tracestate", "s=1" },
            { "Aura_Role", "service_role" },
            { "X-Service", "kept" },
        },
        NULL, 0,
        APR_SUCCESS, 200,
        { { "X-Service", "kept" } },
    },
    {
        "lower-case aura-status is accepted", NULL,
        { { "aura-status", "200" } },
        "ok", 2,
        APR_SUCCESS, 200,
        { { NULL, NULL } },
    },
    {
        "upper-case AURA-STATUS is accepted", NULL,
        { { "AURA-STATUS", "599" }, { "x-a", "1" } },
        NULL, 0,
        APR_SUCCESS, 599,
        { { "x-a", "1" } },
    },
    {
        "status only, empty body", NULL,
        { { "Aura-Status", "204" } },
        NULL, 0,
        APR_SUCCESS, 204,
        { { NULL, NULL } },
    },

    /* malformed: 502 */
    {
        "no headers at all", NULL,
        { { NULL, NULL } },
        "body", 4,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "headers but no Aura-Status", NULL,
        { { "Content-Type", "text/plain" }, { "X-Custom", "1" } },
        "body", 4,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status abc", NULL,
        { { "Aura-Status", "abc" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status 99", NULL,
        { { "Aura-Status", "99" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status 700", NULL,
        { { "Aura-Status", "700" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status 100 (informational)", NULL,
        { { "Aura-Status", "100" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status empty", NULL,
        { { "Aura-Status", "" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status with a space", NULL,
        { { "Aura-Status", "200 " } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status twice", NULL,
        { { "Aura-Status", "200" }, { "Aura-Status", "500" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status twice, same value", NULL,
        { { "Aura-Status", "200" }, { "Aura-Status", "200" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Status is not Aura-Status", NULL,
        { { "Status", "200" }, { "Description", "OK" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    /* nats.c >= 3.0 keeps keys case-sensitive, so these are two keys
     * with one value each; whichever hash order decode sees, the reply
     * is ambiguous and refused. */
    {
        "Aura-Status twice in different case",
        "case-split duplicate Aura-Status",
        { { "Aura-Status", "200" }, { "AURA-STATUS", "503" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "Aura-Status twice in different case, same value",
        "case-split duplicate Aura-Status",
        { { "Aura-Status", "200" }, { "aura-status", "200" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "invalid Aura-Status beside a lower-case valid one",
        "case-split duplicate Aura-Status",
        { { "Aura-Status", "abc" }, { "aura-status", "200" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "valid Aura-Status beside an invalid lower-case one",
        "case-split duplicate Aura-Status",
        { { "Aura-Status", "200" }, { "aura-status", "abc" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    /* nats.c runs a header line without a colon on into the next one:
     * the key then holds CR LF and the next header (found by
     * fuzz/fuzz_envelope.c).  Not HTTP: refused, never copied. */
    {
        "header name holding CR LF and a second header", "#15",
        { { "Aura-Status", "200" }, { "X-A\r\nX-Request-Id", "2" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "header name that is not a token", "#15",
        { { "Aura-Status", "200" }, { "X-A\xff", "1" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "header name with a space", "#15",
        { { "Aura-Status", "200" }, { "X A", "1" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "header value holding CR LF", "#15",
        { { "Aura-Status", "200" }, { "X-A", "1\r\nSet-Cookie: s=1" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "header value holding a control character", "#15",
        { { "Aura-Status", "200" }, { "X-A", "1\x01" } },
        NULL, 0,
        APR_EINVAL, 0, { { NULL, NULL } },
    },
    {
        "header value with a tab and obs-text is kept", "#15",
        { { "Aura-Status", "200" }, { "X-A", "a\tb \xe9" } },
        NULL, 0,
        APR_SUCCESS, 200, { { "X-A", "a\tb \xe9" } },
    },
};

typedef struct {
    const char *vals[MAX_KV];
    int n;
} collect_t;

static int collect_value(void *rec, const char *key, const char *value)
{
    collect_t *c = rec;

    (void)key;
    if (c->n < MAX_KV) {
        c->vals[c->n] = value;
    }
    c->n++;
    return 1;
}

static void check_reply_table(const apr_table_t *t, const kv_t *want,
                              const char *row)
{
    const apr_array_header_t *arr = apr_table_elts(t);
    const apr_table_entry_t *e = (const apr_table_entry_t *)arr->elts;
    int i, j, nwant = 0;

    for (i = 0; i < MAX_KV && want[i].key; i++) {
        nwant++;
    }
    if (arr->nelts != nwant) {
        print_error("%s: %d response headers, expected %d\n", row,
                    arr->nelts, nwant);
        for (i = 0; i < arr->nelts; i++) {
            print_error("  %s: %s\n", e[i].key, e[i].val);
        }
    }
    assert_int_equal(arr->nelts, nwant);

    /* Names exactly as sent. */
    for (i = 0; i < arr->nelts; i++) {
        const char *vals[MAX_KV];

        if (!want_values(want, e[i].key, vals)) {
            print_error("%s: unexpected response header \"%s\"\n", row,
                        e[i].key);
            fail();
        }
    }
    /* Every value of every key, in order (apr_table_do walks them). */
    for (i = 0; i < MAX_KV && want[i].key; i++) {
        const char *exp[MAX_KV];
        int nexp = want_values(want, want[i].key, exp);
        collect_t got;

        memset(&got, 0, sizeof(got));
        apr_table_do(collect_value, &got, t, want[i].key, NULL);
        assert_int_equal(got.n, nexp);
        for (j = 0; j < nexp; j++) {
            assert_string_equal(got.vals[j], exp[j]);
        }
    }
}

static void test_decode(void **state)
{
    apr_pool_t *p = *state;
    size_t i;
    int j;

    for (i = 0; i < sizeof(decode_cases) / sizeof(decode_cases[0]); i++) {
        const decode_case_t *c = &decode_cases[i];
        aura_envelope_reply_t out;
        const char *err = "unset";
        natsMsg *m = NULL;
        apr_status_t rv;

        assert_int_equal(natsMsg_Create(&m, "_INBOX.x", NULL, c->body,
                                        c->body_len), NATS_OK);
        for (j = 0; j < MAX_KV && c->reply[j].key; j++) {
            assert_int_equal(natsMsgHeader_Add(m, c->reply[j].key,
                                               c->reply[j].val), NATS_OK);
        }
        memset(&out, 0x5a, sizeof(out));

        rv = aura_envelope_decode(p, m, &out, &err);
        if (rv != c->rv) {
            print_error("row %zu \"%s\"%s%s: rv %d, expected %d, "
                        "status %d, err %s\n", i, c->name,
                        c->issue ? " issue " : "",
                        c->issue ? c->issue : "", (int)rv, (int)c->rv,
                        out.status, err ? err : "(null)");
        }
        assert_int_equal(rv, c->rv);
        if (rv == APR_SUCCESS) {
            assert_null(err);
            assert_int_equal(out.status, c->status);
            assert_non_null(out.headers);
            check_reply_table(out.headers, c->want, c->name);
            /* The body points into the message, binary intact. */
            assert_ptr_equal(out.body, natsMsg_GetData(m));
            assert_int_equal(out.body_len, natsMsg_GetDataLength(m));
            assert_int_equal(out.body_len, c->body_len);
            if (c->body_len) {
                assert_memory_equal(out.body, c->body, c->body_len);
            }
        }
        else {
            /* out.status is unspecified on failure. */
            assert_non_null(err);
            assert_true(err[0] != '\0');
        }
        natsMsg_Destroy(m);
    }
}

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_request_header_ok,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_own_header,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_head,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_reply_header_ok,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_parse_status,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_encode_headers,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_encode_leaves_client_table,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_encode_null_headers,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_encode_body,
                                        pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_decode,
                                        pool_setup, pool_teardown),
    };

    return cmocka_run_group_tests_name("envelope", tests, group_setup,
                                       group_teardown);
}
