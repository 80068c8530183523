/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_envelope.c: pure HTTP <-> NATS mapping (docs/envelope.md).  No
 * request_rec, no I/O: callers hand in tables and bodies, get messages
 * back.  Both directions strip what must never cross: hop-by-hop headers
 * (they describe one connection, and NATS is not that connection) and
 * the gateway's own namespace (a client must never claim an identity, a
 * service must never steer the gateway through a response header).
 */
#include "nats/aura_envelope.h"

#include "apr_strings.h"
#include "apr_lib.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Names that never cross, with their lengths: a header name is checked
 * by length first, so a typical name meets one strcasecmp at most
 * instead of fourteen (this ran for every client header of every NATS
 * request).  Hop-by-hop headers describe one connection, and NATS is
 * not that connection; NATS uses Status and Description for its own
 * status line ("NATS/1.0 503"), and nats.c exposes them as headers, so a
 * service could never read them back. */
#define NAME(s) { sizeof(s) - 1, s }
enum { NEVER_EITHER, NEVER_REQUEST };
static const struct {
    apr_size_t len;
    const char *name;
} never[][16] = {
    [NEVER_EITHER] = {
        NAME("te"), NAME("status"), NAME("trailer"), NAME("upgrade"),
        NAME("connection"), NAME("keep-alive"), NAME("description"),
        NAME("content-length"), NAME("proxy-connection"),
        NAME("transfer-encoding"), NAME("proxy-authenticate"),
        NAME("proxy-authorization"), { 0, NULL }
    },
    /* The client's credentials stop at the gateway. */
    [NEVER_REQUEST] = {
        NAME("apikey"), NAME("x-api-key"), { 0, NULL }
    }
};
#undef NAME

static int in_list(const char *name, apr_size_t len, int list)
{
    int i;

    for (i = 0; never[list][i].name; i++) {
        if (never[list][i].len == len
            && !strcasecmp(name, never[list][i].name)) {
            return 1;
        }
    }
    return 0;
}

/* A header name as CGI, WSGI, Rack and PHP-FPM see it: case folded, and
 * every character that is not a letter or a digit alike ("Aura_Role" and
 * "Aura-Role" are both HTTP_AURA_ROLE; httpd 2.2's CGI, and stacks built
 * like it, also turn "Aura.Role" into HTTP_AURA_ROLE). */
static int fold(char c)
{
    unsigned char u = (unsigned char)c;

    /* ASCII by hand (httpd's C locale has no other letters or digits):
     * every header of every request comes here, and apr_isalnum() and
     * apr_tolower() each call into the C library for their tables. */
    if (u >= 'A' && u <= 'Z') {
        return u + ('a' - 'A');
    }
    if ((u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || !u) {
        return u;
    }
    return '-';
}

/* Whether name, folded, equals want (or starts with it, for a prefix);
 * want is in folded form.  Without fold() per character: a letter of
 * want matches only its two cases (c | 0x20 is a lower-case letter for
 * those two bytes alone), a '-' any byte fold() makes '-'. */
static int folded_match(const char *name, const char *want, int prefix)
{
    for (; *want; name++, want++) {
        unsigned char c = (unsigned char)*name, w = (unsigned char)*want;

        if (w >= 'a' && w <= 'z' ? (c | 0x20) != w
            : w == '-' ? fold((char)c) != '-' : c != w) {
            return 0;       /* also at the end of name */
        }
    }
    return prefix || !*name;
}

/* The one namespace rule (DESIGN.md section 9).  The first character
 * picks the candidates, so a typical name costs one comparison. */
int aura_envelope_own_header(const char *name)
{
    if (!name) {
        return 0;
    }
    switch (fold(name[0])) {
    case 'a':
        return folded_match(name, "aura-", 1);
    case 'x':
        return folded_match(name, "x-request-id", 0)
               || folded_match(name, "x-project-id", 0);
    case 't':
        return folded_match(name, "traceparent", 0)
               || folded_match(name, "tracestate", 0);
    default:
        return 0;
    }
}

/* Is name one of the comma-separated tokens of a Connection header? */
static int named_by_connection(const char *name, const char *connection)
{
    apr_size_t len = strlen(name);
    const char *s = connection;

    while (s && *s) {
        const char *end;
        apr_size_t tlen;

        while (*s == ',' || apr_isspace(*s)) {
            s++;
        }
        end = s;
        while (*end && *end != ',') {
            end++;
        }
        tlen = end - s;
        while (tlen && apr_isspace(s[tlen - 1])) {
            tlen--;
        }
        if (tlen == len && tlen && !strncasecmp(s, name, len)) {
            return 1;
        }
        s = end;
    }
    return 0;
}

int aura_envelope_request_header_ok(const char *name,
                                    const char *connection)
{
    apr_size_t len;

    if (!name || !*name) {
        return 0;
    }
    len = strlen(name);
    if (aura_envelope_own_header(name) || in_list(name, len, NEVER_EITHER)
        || in_list(name, len, NEVER_REQUEST)) {
        return 0;
    }
    return !named_by_connection(name, connection);
}

/* The response headers only the gateway sets (aura_envelope.h says
 * why each), checked by length first as never[] is: this runs for every
 * header of every response. */
#define NAME(s) { sizeof(s) - 1, s }
static const struct {
    apr_size_t len;
    const char *name;
} response_owned[] = {
    NAME("nel"), NAME("ratelimit"), NAME("expect-ct"), NAME("report-to"),
    NAME("x-frame-options"), NAME("referrer-policy"),
    NAME("clear-site-data"), NAME("public-key-pins"),
    NAME("ratelimit-policy"), NAME("x-content-type-options"),
    NAME("content-security-policy"), NAME("strict-transport-security"),
    NAME("public-key-pins-report-only"), { 0, NULL }
};
#undef NAME

int aura_envelope_response_owned(const char *name)
{
    apr_size_t len;
    int i;

    if (!name) {
        return 0;
    }
    len = strlen(name);
    for (i = 0; response_owned[i].name; i++) {
        if (response_owned[i].len == len
            && !strcasecmp(name, response_owned[i].name)) {
            return 1;
        }
    }
    return 0;
}

int aura_envelope_reply_header_ok(const char *name)
{
    if (!name || !*name) {
        return 0;
    }
    return !(aura_envelope_own_header(name)
             || in_list(name, strlen(name), NEVER_EITHER)
             || aura_envelope_response_owned(name));
}

/* Whether name (len bytes, not terminated) is one of list, any case. */
static int listed(const char *name, apr_size_t len, const char *const *list)
{
    for (; list && *list; list++) {
        if (strlen(*list) == len && !strncasecmp(name, *list, len)) {
            return 1;
        }
    }
    return 0;
}

char *aura_envelope_upgrade_head(apr_pool_t *p, const char *head,
                                 apr_size_t len, const char *lines,
                                 const char *const *replaced,
                                 apr_size_t *out_len)
{
    const char *s = head, *end = head + len;
    apr_size_t lines_len = strlen(lines);
    char *out, *o;
    int first = 1;

    if (len < 13 || strncmp(head, "HTTP/1.1 101 ", 13)) {
        *out_len = len;
        return apr_pmemdup(p, head, len);
    }
    o = out = apr_palloc(p, len + lines_len + 2);
    while (s < end) {
        const char *eol = memchr(s, '\n', end - s);
        apr_size_t n = eol ? (apr_size_t)(eol - s) + 1
                           : (apr_size_t)(end - s);
        const char *colon = memchr(s, ':', n);
        char *name;

        if (!first && (*s == '\r' || *s == '\n')) {
            break;                              /* the blank line */
        }
        name = colon ? apr_pstrmemdup(p, s, colon - s) : NULL;
        if (first || !name || !(aura_envelope_own_header(name)
                                || aura_envelope_response_owned(name)
                                || listed(name, colon - s, replaced))) {
            memcpy(o, s, n);
            o += n;
        }
        first = 0;
        s += n;
    }
    memcpy(o, lines, lines_len);
    o += lines_len;
    memcpy(o, "\r\n", 2);
    *out_len = (apr_size_t)(o + 2 - out);
    return out;
}

int aura_envelope_parse_status(const char *value)
{
    int status;

    if (!value || !apr_isdigit(value[0]) || !apr_isdigit(value[1])
        || !apr_isdigit(value[2]) || value[3] != '\0') {
        return 0;
    }
    status = (value[0] - '0') * 100 + (value[1] - '0') * 10
             + (value[2] - '0');
    return (status >= 200 && status <= 599) ? status : 0;
}

/* RFC 9110 5.1 and 5.5: a field name is a token; a value holds no
 * control character but HTAB.  nats.c checks neither when it parses a
 * reply: a header line without a colon runs on into the next one, so a
 * key can come out as "X\r\nX-Request-Id" (fuzz/fuzz_envelope.c, issue
 * #15).  Copied into the response, such a field would add a header the
 * gateway owns or split the response; refused, the reply is a 502.  On
 * the way out the same rule keeps a field another module made up from
 * ending a NATS header line early (CR, LF) or adding one. */
static const unsigned char tchar[256] = {
    ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1,
    ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1,
    ['`'] = 1, ['|'] = 1, ['~'] = 1
};

static int field_name_ok(const char *s)
{
    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        if (!tchar[(unsigned char)*s]) {
            return 0;
        }
    }
    return 1;
}

static int field_value_ok(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

static char *lower_dup(apr_pool_t *p, const char *s)
{
    char *l = apr_pstrdup(p, s);
    char *c;

    for (c = l; *c; c++) {
        *c = apr_tolower(*c);
    }
    return l;
}

/* nats.c 3.4.1 cannot parse a header whose value is empty: it takes the
 * next line as the value (the following header vanishes) or fails the
 * whole block.  An empty value would let a client erase a header the
 * gateway set after it, so empty values never go onto the wire. */
static natsStatus set_if(natsMsg *m, const char *key, const char *value)
{
    return value && *value ? natsMsgHeader_Set(m, key, value) : NATS_OK;
}

/* nats.c 3.4.1 finds a header key by a hash that skips some bytes and
 * a comparison over the length of the key looked up: a key that is a
 * prefix of one already there, with the same hash, is taken for it.
 * natsMsgHeader_Add("trace") then adds to the gateway's "traceparent"
 * (fuzz/fuzz_envelope.c, issue #15).  So a client header goes in only
 * under a key nats.c does not find, or finds because this loop added
 * that very key before (a repeated header stays repeated values: Add,
 * not Set).  A name that collides is dropped.  The other way round, a
 * service looking up a gateway key finds a client key that begins with
 * it ("x-project-idx-" for "x-project-id", found by fuzz/fuzz_envelope.c,
 * issue #29): such a name is dropped before (begins_with_own()). */
static natsStatus add_client_header(apr_pool_t *p, natsMsg *m,
                                    apr_table_t **sent, const char *key,
                                    const char *value)
{
    const char *found = NULL;

    if (natsMsgHeader_Get(m, key, &found) == NATS_OK
        && !(*sent && apr_table_get(*sent, key)
             && !strcmp(apr_table_get(*sent, key), key))) {
        return NATS_OK;
    }
    if (!*sent) {
        *sent = apr_table_make(p, 8);
    }
    apr_table_setn(*sent, key, key);
    return natsMsgHeader_Add(m, key, value);
}

/* One of the gateway's own headers, as aura_envelope_encode() sets
 * them. */
typedef struct {
    const char *key;
    const char *value;
} own_field_t;

/* Whether key (lower case) begins with one of the gateway's keys that
 * has a value in this message.  nats.c compares keys with their case:
 * only the lower-case ones (traceparent, tracestate, x-project-id) can
 * meet a lower-cased client key; an "aura-" one is in the namespace
 * anyway. */
static int begins_with_own(const char *key, const own_field_t *own, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (own[i].value && *own[i].value
            && !strncmp(key, own[i].key, strlen(own[i].key))) {
            return 1;
        }
    }
    return 0;
}

natsStatus aura_envelope_encode(apr_pool_t *p, const char *subject,
                                const aura_envelope_req_t *in,
                                natsMsg **out)
{
    const apr_array_header_t *arr;
    const apr_table_entry_t *e;
    const char *connection;
    apr_table_t *sent = NULL;
    natsMsg *m = NULL;
    natsStatus s;
    char *key;
    int i;
    /* The gateway's own headers, set before any client header. */
    const own_field_t own[] = {
        { AURA_HDR_METHOD, in->method },
        { AURA_HDR_PATH, in->path },
        { AURA_HDR_QUERY, in->query },
        { AURA_HDR_REQUEST_ID, in->request_id },
        { AURA_HDR_PLANE, in->plane },
        { AURA_HDR_PROJECT, in->project },
        { AURA_HDR_ORG, in->org },
        { AURA_HDR_ROLE, in->role },
        { AURA_HDR_KEY_ROLE, in->key_role },
        { AURA_HDR_ACTOR, in->actor },
        { AURA_HDR_TRACEPARENT, in->traceparent },
        { AURA_HDR_TRACESTATE, in->tracestate },
        /* The verified project again, under the name a client could
         * claim one with: the client's never crosses (own header). */
        { AURA_HDR_X_PROJECT_ID, in->project },
    };
#define N_OWN ((int)(sizeof(own) / sizeof(own[0])))

    *out = NULL;
    if (in->body_len > INT_MAX) {
        return NATS_INVALID_ARG;
    }
    s = natsMsg_Create(&m, subject, in->reply, in->body, (int)in->body_len);
    if (s != NATS_OK) {
        return s;
    }
    for (i = 0; s == NATS_OK && i < N_OWN; i++) {
        s = set_if(m, own[i].key, own[i].value);
    }

    /* getm: every Connection line, joined, names hop-by-hop headers. */
    connection = in->headers ? apr_table_getm(p, in->headers, "Connection")
                             : NULL;
    arr = in->headers ? apr_table_elts(in->headers) : NULL;
    e = arr ? (const apr_table_entry_t *)arr->elts : NULL;
    for (i = 0; s == NATS_OK && arr && i < arr->nelts; i++) {
        /* A name that is not a token, or a value with a control
         * character (CR or LF would end the NATS header line early):
         * httpd's parser never lets one through, another module might. */
        if (!e[i].key || !e[i].val || !*e[i].val
            || !field_name_ok(e[i].key) || !field_value_ok(e[i].val)
            || !aura_envelope_request_header_ok(e[i].key, connection)) {
            continue;
        }
        key = lower_dup(p, e[i].key);
        if (begins_with_own(key, own, N_OWN)) {
            continue;
        }
        s = add_client_header(p, m, &sent, key, e[i].val);
    }
    if (s != NATS_OK) {
        natsMsg_Destroy(m);
        return s;
    }
    *out = m;
    return NATS_OK;
#undef N_OWN
}

static apr_status_t copy_reply_header(natsMsg *reply,
                                      const char *key,
                                      const char *connection,
                                      aura_envelope_reply_t *out,
                                      const char **err)
{
    const char **values = NULL;
    int count = 0, j;

    if (!field_name_ok(key)) {
        *err = "reply header name is not an HTTP token";
        return APR_EINVAL;
    }
    if (natsMsgHeader_Values(reply, key, &values, &count) != NATS_OK) {
        *err = "unreadable reply header";
        return APR_EINVAL;
    }
    for (j = 0; j < count; j++) {
        if (!field_value_ok(values[j])) {
            free((void *)values);
            *err = "reply header value holds a control character";
            return APR_EINVAL;
        }
    }
    if (!strcasecmp(key, AURA_HDR_STATUS)) {
        /* Keys are case-sensitive in nats.c: "Aura-Status" and
         * "aura-status" are two keys.  One status, or the reply is
         * ambiguous: refuse it. */
        if (out->status || count != 1) {
            free((void *)values);
            *err = "reply carries more than one Aura-Status";
            return APR_EINVAL;
        }
        out->status = aura_envelope_parse_status(values[0]);
        if (!out->status) {
            free((void *)values);
            *err = "reply has no valid Aura-Status (three digits, 200-599)";
            return APR_EINVAL;
        }
    }
    else if (aura_envelope_reply_header_ok(key)
             && !named_by_connection(key, connection)) {
        for (j = 0; j < count; j++) {
            apr_table_add(out->headers, key, values[j]);
        }
    }
    free((void *)values);
    return APR_SUCCESS;
}

/* The reply's Connection values, joined: the headers they name are
 * hop-by-hop too (RFC 9110 7.6.1), whatever the service meant. */
static const char *reply_connection(apr_pool_t *p, natsMsg *reply,
                                    const char **keys, int count)
{
    const char *joined = NULL;
    int i, j;

    for (i = 0; i < count; i++) {
        const char **values = NULL;
        int n = 0;

        if (strcasecmp(keys[i], "connection")
            || natsMsgHeader_Values(reply, keys[i], &values, &n) != NATS_OK) {
            continue;
        }
        for (j = 0; j < n; j++) {
            joined = joined ? apr_pstrcat(p, joined, ",", values[j], NULL)
                            : apr_pstrdup(p, values[j]);
        }
        free((void *)values);
    }
    return joined;
}

apr_status_t aura_envelope_decode(apr_pool_t *p, natsMsg *reply,
                                  aura_envelope_reply_t *out,
                                  const char **err)
{
    const char **keys = NULL;
    const char *connection;
    int count = 0, i;
    natsStatus s;
    apr_status_t rv = APR_SUCCESS;

    out->status = 0;
    out->headers = apr_table_make(p, 8);
    out->body = natsMsg_GetData(reply);
    out->body_len = (apr_size_t)natsMsg_GetDataLength(reply);
    *err = NULL;

    s = natsMsgHeader_Keys(reply, &keys, &count);
    if (s == NATS_NOT_FOUND) {
        *err = "reply has no headers (Aura-Status is required)";
        return APR_EINVAL;
    }
    if (s != NATS_OK) {
        *err = "reply headers could not be parsed";
        return APR_EINVAL;
    }
    connection = reply_connection(p, reply, keys, count);
    for (i = 0; i < count && rv == APR_SUCCESS; i++) {
        rv = copy_reply_header(reply, keys[i], connection, out, err);
    }
    free((void *)keys);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!out->status) {
        *err = "reply has no valid Aura-Status (three digits, 200-599)";
        return APR_EINVAL;
    }
    return APR_SUCCESS;
}

/* Every header in the gateway's namespace (aura_envelope_own_header(),
 * any spelling) is dropped: a client can never claim an identity, nor
 * hand a service a second X-Request-Id (DESIGN.md section 9). */
void aura_unset_owned(apr_pool_t *p, apr_table_t *t)
{
    aura_table_unset_if(p, t, aura_envelope_own_header);
}

/* The names are collected first (a table cannot be changed while
 * walked), by walking its entries directly, and the array made only
 * when there is one: this runs on every request and response, and
 * usually finds nothing. */
void aura_table_unset_if(apr_pool_t *p, apr_table_t *t,
                         int (*match)(const char *name))
{
    const apr_array_header_t *a = apr_table_elts(t);
    const apr_table_entry_t *e = (const apr_table_entry_t *)a->elts;
    apr_array_header_t *names = NULL;
    int i;

    for (i = 0; i < a->nelts; i++) {
        if (e[i].key && match(e[i].key)) {
            if (!names) {
                names = apr_array_make(p, 4, sizeof(const char *));
            }
            APR_ARRAY_PUSH(names, const char *) = e[i].key;
        }
    }
    for (i = 0; names && i < names->nelts; i++) {
        apr_table_unset(t, APR_ARRAY_IDX(names, i, const char *));
    }
}
