/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_envelope.c: libFuzzer harness for the HTTP <-> NATS envelope
 * (mod_aura_common/nats/aura_envelope.c): what a service's reply turns into
 * (headers, Aura-Status) and which header names cross in either
 * direction.
 *
 * aura-fuzz: -max_len=4096
 *
 * Input: the first byte picks the mode, the rest is the mode's input.
 *  0 (decode): the rest is a NATS message payload as it arrives in an
 *    HMSG: a header block ("NATS/1.0 ...\r\n" header lines, "\r\n")
 *    then the body.  The header block's length is where the first
 *    "\r\n\r\n" ends (the whole input when there is none), as the
 *    server's HMSG line says.  The message is built with nats.c's own
 *    constructor, so its header parser sees the bytes a service sends.
 *    Invariants: success means a status of 200-599 and no header in the
 *    result that the gateway owns (aura-*, or one only it sets, such as
 *    Strict-Transport-Security), a hop-by-hop header, Content-Length,
 *    Status or Description; failure comes with a reason.
 *  1 (names): the rest is "name\nconnection": the name checks.
 *    Invariants: the gateway's namespace is exactly aura-*, X-Request-Id,
 *    X-Project-Id, traceparent and tracestate once case is folded and
 *    every other character than a letter or digit is read as '-' (issue
 *    #15: a CGI back end maps Aura_Role and Aura-Role to one variable),
 *    and never crosses either way; a name dropped in one case is dropped
 *    in every case; the response headers only the gateway sets are
 *    exactly its list (issue #29) and never come out of a reply;
 *    Aura-Status parsing accepts exactly three digits 200-599.
 *  2 (encode): the rest is client header fields "name: value"
 *    separated by NUL (names and values may hold any other byte, as
 *    another module could make them): the request goes through
 *    aura_envelope_encode with a fixed verified identity.  Invariants:
 *    every header of the message in the gateway's namespace is one the
 *    gateway set, exactly once, with its value; every other is a token
 *    with values free of control characters, and no credential or
 *    hop-by-hop header.
 */
#include "aura_fuzz.h"

#include "apr_lib.h"
#include "apr_strings.h"
#include "apr_tables.h"

#include <nats/nats.h>

#include "nats/aura_envelope.h"

/* nats.c's constructor of a received message (src/msg.h; exported by
 * libnats.so 3.x, not declared in its public header): the reader calls
 * it for every MSG/HMSG, with hdrLen the HMSG header length. */
natsStatus natsMsg_create(natsMsg **newMsg, const char *subject,
                          int subjLen, const char *reply, int replyLen,
                          const char *buf, int bufLen, int hdrLen);
/* natsMsg_Destroy hands a message to nats.c's garbage-collector thread,
 * which frees it later: LeakSanitizer would then see each input leak
 * (and libFuzzer would run its slow leak check on every one).  This is
 * the collector's own free function (src/msg.h, exported), called in
 * the harness's thread. */
void natsMsg_free(void *object);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    /* nats.c's library state, as the module has it. */
    if (nats_Open(-1) != NATS_OK) {
        abort();
    }
    return 0;
}

/* The namespace rule of aura_envelope.h, written out again: case
 * folded, every character but letters and digits read as '-' (what CGI
 * and its kin make of a name), then aura-*, x-request-id, x-project-id,
 * traceparent or tracestate. */
static int own_oracle(const char *name)
{
    char f[64];
    size_t i;

    for (i = 0; name[i] && i < sizeof(f) - 1; i++) {
        f[i] = apr_isalnum(name[i]) ? (char)apr_tolower(name[i]) : '-';
    }
    f[i] = '\0';
    return !strncmp(f, "aura-", 5)
           || (!name[i] && (!strcmp(f, "x-request-id")
                            || !strcmp(f, "x-project-id")
                            || !strcmp(f, "traceparent")
                            || !strcmp(f, "tracestate")));
}

/* Response headers only the gateway sets (aura_envelope.h, issue #29):
 * a client may send these names, a service's never come out. */
static int response_only(const char *name)
{
    static const char *const names[] = {
        "strict-transport-security", "ratelimit", "ratelimit-policy",
        "clear-site-data", "nel", "report-to", "expect-ct",
        "public-key-pins", "public-key-pins-report-only",
        "content-security-policy", "x-content-type-options",
        "referrer-policy", "x-frame-options", NULL
    };
    int i;

    for (i = 0; names[i]; i++) {
        if (!strcasecmp(name, names[i])) {
            return 1;
        }
    }
    return 0;
}

/* Names that must never come out of a reply (aura_envelope.h). */
static int never_reply(const char *name)
{
    static const char *const names[] = {
        "te", "status", "trailer", "upgrade", "connection", "keep-alive",
        "description", "content-length", "proxy-connection",
        "transfer-encoding", "proxy-authenticate", "proxy-authorization",
        NULL
    };
    int i;

    if (own_oracle(name)) {
        return 1;
    }
    for (i = 0; names[i]; i++) {
        if (!strcasecmp(name, names[i])) {
            return 1;
        }
    }
    return 0;
}

static void fuzz_decode(apr_pool_t *p, const uint8_t *d, size_t n)
{
    aura_envelope_reply_t out;
    const apr_array_header_t *arr;
    const apr_table_entry_t *e;
    const char *err = (const char *)"unset";
    natsMsg *m = NULL;
    size_t hdr = n, i;
    apr_status_t rv;
    int j;

    for (i = 0; i + 4 <= n; i++) {
        if (!memcmp(d + i, "\r\n\r\n", 4)) {
            hdr = i + 4;
            break;
        }
    }
    if (natsMsg_create(&m, "_INBOX.fuzz", 11, NULL, 0, (const char *)d,
                       (int)n, (int)hdr) != NATS_OK) {
        return;
    }
    rv = aura_envelope_decode(p, m, &out, &err);
    if (rv == APR_SUCCESS) {
        AURA_FUZZ_ASSERT(err == NULL);
        AURA_FUZZ_ASSERT(out.status >= 200 && out.status <= 599);
        AURA_FUZZ_ASSERT(out.headers != NULL);
        AURA_FUZZ_ASSERT(out.body_len == n - hdr);
        AURA_FUZZ_ASSERT(out.body_len == 0
                         || !memcmp(out.body, d + hdr, out.body_len));
        arr = apr_table_elts(out.headers);
        e = (const apr_table_entry_t *)arr->elts;
        for (j = 0; j < arr->nelts; j++) {
            AURA_FUZZ_ASSERT(e[j].key && *e[j].key && e[j].val);
            AURA_FUZZ_ASSERT(!never_reply(e[j].key));
            AURA_FUZZ_ASSERT(!response_only(e[j].key));
            AURA_FUZZ_ASSERT(!aura_envelope_own_header(e[j].key));
            /* A header value with CR or LF would split the response. */
            AURA_FUZZ_ASSERT(!strpbrk(e[j].val, "\r\n"));
            AURA_FUZZ_ASSERT(!strpbrk(e[j].key, "\r\n:"));
        }
    }
    else {
        AURA_FUZZ_ASSERT(rv == APR_EINVAL);
        AURA_FUZZ_ASSERT(err != NULL && *err);
    }
    natsMsg_free(m);
}

static char *case_map(apr_pool_t *p, const char *s, int upper)
{
    char *c = apr_pstrdup(p, s), *q;

    for (q = c; *q; q++) {
        *q = (char)(upper ? apr_toupper(*q) : apr_tolower(*q));
    }
    return c;
}

static char *dash_map(apr_pool_t *p, const char *s)
{
    char *c = apr_pstrdup(p, s), *q;

    for (q = c; *q; q++) {
        if (*q == '_') {
            *q = '-';
        }
    }
    return c;
}

static void check_status(const char *v)
{
    int st = aura_envelope_parse_status(v);
    int ok = strlen(v) == 3 && apr_isdigit(v[0]) && apr_isdigit(v[1])
             && apr_isdigit(v[2]) && atoi(v) >= 200 && atoi(v) <= 599;

    AURA_FUZZ_ASSERT(ok ? st == atoi(v) : st == 0);
}

static void fuzz_names(apr_pool_t *p, const uint8_t *d, size_t n)
{
    char *s = aura_fuzz_strndup(p, d, n);
    char *conn = strchr(s, '\n');
    const char *name = s, *up, *low;
    int own;

    if (conn) {
        *conn++ = '\0';
    }
    up = case_map(p, name, 1);
    low = case_map(p, name, 0);
    own = aura_envelope_own_header(name);
    AURA_FUZZ_ASSERT(own == own_oracle(name));
    if (own) {
        AURA_FUZZ_ASSERT(!aura_envelope_request_header_ok(name, conn));
        AURA_FUZZ_ASSERT(!aura_envelope_reply_header_ok(name));
    }
    AURA_FUZZ_ASSERT(own == aura_envelope_own_header(up));
    AURA_FUZZ_ASSERT(own == aura_envelope_own_header(low));
    /* '_' and '-' alike: CGI maps both to the same variable. */
    AURA_FUZZ_ASSERT(own == aura_envelope_own_header(dash_map(p, name)));
    AURA_FUZZ_ASSERT(aura_envelope_request_header_ok(name, conn)
                     == aura_envelope_request_header_ok(up, conn));
    AURA_FUZZ_ASSERT(aura_envelope_reply_header_ok(name)
                     == aura_envelope_reply_header_ok(low));
    if (never_reply(name)) {
        AURA_FUZZ_ASSERT(!aura_envelope_reply_header_ok(name));
        AURA_FUZZ_ASSERT(!aura_envelope_request_header_ok(name, conn));
    }
    AURA_FUZZ_ASSERT(response_only(name)
                     == aura_envelope_response_owned(name));
    if (response_only(name)) {
        AURA_FUZZ_ASSERT(!aura_envelope_reply_header_ok(name));
    }
    check_status(name);
    if (conn) {
        check_status(conn);
    }
}

/* The identity the encoder is given: what the gateway verified. */
static const struct {
    const char *key;
    const char *value;
} identity[] = {
    { AURA_HDR_METHOD, "POST" },
    { AURA_HDR_PATH, "/v1/functions/echo" },
    { AURA_HDR_QUERY, "a=1" },
    { AURA_HDR_REQUEST_ID, "req-1" },
    { AURA_HDR_PLANE, "data" },
    { AURA_HDR_PROJECT, "proj-verified" },
    { AURA_HDR_ORG, "org-verified" },
    { AURA_HDR_ROLE, "authenticated" },
    { AURA_HDR_KEY_ROLE, "anon" },
    { AURA_HDR_ACTOR, "user-verified" },
    { AURA_HDR_TRACEPARENT,
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
    { AURA_HDR_TRACESTATE, "aura=1" },
    /* The verified project again (issue #29), under its client name. */
    { AURA_HDR_X_PROJECT_ID, "proj-verified" },
};
#define N_IDENTITY (sizeof(identity) / sizeof(identity[0]))

/* RFC 9110 token characters: the harness's own copy of the rule. */
static int token(const char *s)
{
    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        if (!apr_isalnum(*s) && !strchr("!#$%&'*+-.^_`|~", *s)) {
            return 0;
        }
    }
    return 1;
}

static int ctl_free(const char *s)
{
    for (; *s; s++) {
        if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f) {
            return 0;
        }
    }
    return 1;
}

static void fuzz_encode(apr_pool_t *p, const uint8_t *d, size_t n)
{
    apr_table_t *h = apr_table_make(p, 8);
    aura_envelope_req_t in;
    const char **keys = NULL;
    natsMsg *m = NULL;
    int count = 0, i;
    size_t k;

    /* Fields "name:value" separated by NUL: names and values may hold
     * any other byte, CR and LF included, as a module could make them. */
    while (n) {
        const uint8_t *end = memchr(d, '\0', n);
        size_t len = end ? (size_t)(end - d) : n;
        char *f = aura_fuzz_strndup(p, d, len), *colon = strchr(f, ':');

        if (colon && colon != f) {
            *colon++ = '\0';
            while (*colon == ' ') {
                colon++;
            }
            apr_table_add(h, f, colon);
        }
        d += len;
        n -= len;
        if (n) {
            d++;
            n--;
        }
    }
    memset(&in, 0, sizeof(in));
    in.method = identity[0].value;
    in.path = identity[1].value;
    in.query = identity[2].value;
    in.request_id = identity[3].value;
    in.plane = identity[4].value;
    in.project = identity[5].value;
    in.org = identity[6].value;
    in.role = identity[7].value;
    in.key_role = identity[8].value;
    in.actor = identity[9].value;
    in.traceparent = identity[10].value;
    in.tracestate = identity[11].value;
    in.headers = h;
    in.body = "{}";
    in.body_len = 2;
    if (aura_envelope_encode(p, "svc.fuzz", &in, &m) != NATS_OK) {
        AURA_FUZZ_ASSERT(m == NULL);
        return;
    }
    AURA_FUZZ_ASSERT(m != NULL);
    if (natsMsgHeader_Keys(m, &keys, &count) == NATS_OK) {
        for (i = 0; i < count; i++) {
            const char **values = NULL;
            int nv = 0, mine = -1;

            for (k = 0; k < N_IDENTITY; k++) {
                if (!strcmp(keys[i], identity[k].key)) {
                    mine = (int)k;
                }
            }
            if (mine < 0) {
                /* A client header: never in the gateway's namespace,
                 * never a credential or a hop-by-hop header. */
                AURA_FUZZ_ASSERT(!aura_envelope_own_header(keys[i]));
                AURA_FUZZ_ASSERT(!never_reply(keys[i]));
                AURA_FUZZ_ASSERT(strcasecmp(keys[i], "apikey")
                                 && strcasecmp(keys[i], "x-api-key"));
                /* Nothing that could end or add a NATS header line. */
                AURA_FUZZ_ASSERT(token(keys[i]));
                AURA_FUZZ_ASSERT(natsMsgHeader_Values(m, keys[i], &values,
                                                      &nv) == NATS_OK);
                for (k = 0; k < (size_t)nv; k++) {
                    AURA_FUZZ_ASSERT(*values[k] && ctl_free(values[k]));
                }
                free((void *)values);
                continue;
            }
            AURA_FUZZ_ASSERT(natsMsgHeader_Values(m, keys[i], &values, &nv)
                             == NATS_OK);
            if (nv != 1) {
                fprintf(stderr, "fuzz_envelope: %s has %d values\n",
                        keys[i], nv);
            }
            AURA_FUZZ_ASSERT(nv == 1);
            AURA_FUZZ_ASSERT(!strcmp(values[0], identity[mine].value));
            free((void *)values);
        }
        free((void *)keys);
    }
    natsMsg_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p;
    unsigned int mode;

    if (size < 1) {
        return 0;
    }
    mode = aura_fuzz_byte(&data, &size) % 3;
    p = aura_fuzz_pool();
    if (mode == 0) {
        fuzz_decode(p, data, size);
    }
    else if (mode == 1) {
        fuzz_names(p, data, size);
    }
    else {
        fuzz_encode(p, data, size);
    }
    apr_pool_destroy(p);
    return 0;
}
