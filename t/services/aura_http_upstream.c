/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_http_upstream.c: a small HTTP/1.1 origin server for the test-suite,
 * put behind httpd's mod_proxy so that a test can assert on WHAT the
 * upstream received (method, request-target, headers, body), on which
 * upstream received it and over which connection.  One detached thread
 * per accepted connection; keep-alive; Content-Length and chunked request
 * bodies, always read as a stream (never buffered whole).
 *
 * Counters: accepted connections, requests (all but /_stats and /_log),
 * open connections.  Every counted request is appended to the log file as
 * one JSON line, written with one write(2) under log_lock, once its body
 * has been read:
 *   {"name","method","path" (raw request-target),"headers" {lower-cased
 *    name: value, repeats joined with ", "},"body_len","body_complete",
 *    "conn" (1-based connection sequence number), "conn_req" (1-based
 *    number of this request on its connection), "raw_head" (the request
 *    line and header lines exactly as received, up to the blank line)}
 * The file is appended to, so line numbers survive a restart on the same
 * file; /_stats reports log_lines, /_log?since=K returns lines K.. (0-based)
 * as one JSON array.
 *
 * Endpoints are chosen by the first path segment (query ignored) that
 * starts one of these forms, so a prefix the proxy keeps still works
 * (/orders/status/503 is /status/503); a form with non-digit arguments is
 * no match (echo), one with digits out of range gets 400:
 *   /_stats, /_log?since=K   (exact paths) counters, log lines
 *   /status/NNN[/...]        answer NNN (200..599), {"upstream","path"}
 *   /slow/MS[/...]           wait MS (<= 600000) ms, then 200 as above
 *   /sse/N/MS[/...]          text/event-stream, chunked, N events
 *                            "data: tick i\n\n" (i = 0..N-1) MS ms apart
 *   /download/BYTES[/...]    BYTES (<= 2 GiB) bytes, byte i = (i*31+7)&0xff,
 *                            in 64 KiB writes with Content-Length
 *   /upload[/...]            POST/PUT only: {"upstream","bytes",
 *                            "pattern_ok","fnv1a"} over the streamed body
 *   GET + Upgrade: websocket RFC 6455 handshake, then echo of every frame
 *   anything else            200 {"upstream","method","path","headers",
 *                            "body_len","conn","conn_req","raw_head"}
 * Every response carries X-Upstream: <name>.  The echo, /status/NNN and
 * the WebSocket handshake also carry what the request asks for in
 * x-upstream-reply-header[-N]: "Name: value" (a test of what a gateway
 * does with an upstream's headers, on its errors too).  A malformed
 * request gets 400 (431 for a head over 64 KiB, 501 for a
 * transfer-coding other than chunked, 417 for an Expect other than
 * 100-continue) and the connection is closed; such requests are neither
 * counted nor logged.
 *
 * Usage: aura_http_upstream -p port -P pidfile -l logfile [-n name]
 * Listens on 127.0.0.1:port (0: any free port), writes the pid file once
 * it listens, prints "ready 127.0.0.1:<port>", stops on SIGTERM/SIGINT
 * and removes the pid file.
 */
#define _GNU_SOURCE                 /* accept4 */

#include <jansson.h>
#include <openssl/evp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define PROG "aura_http_upstream"

#define HEAD_MAX      65536         /* request line + headers; trailers */
#define IO_CHUNK      65536         /* download writes, WebSocket copies */
#define MAX_SLOW_MS   600000LL
#define MAX_SSE_N     1000000LL
#define MAX_DOWNLOAD  (2048LL * 1024 * 1024)
#define MAX_CHUNK     (1ULL << 60)  /* one chunk of a chunked body */
#define MAX_NAME      64
#define MAX_WS_KEY    128
#define LINGER_MS     2000          /* reading after our last response */
#define LINGER_BYTES  (1024 * 1024)

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME  1099511628211ULL

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* read_head results */
#define HEAD_OK        1
#define HEAD_EOF       0
#define HEAD_TOO_LARGE (-1)
#define HEAD_BAD       (-2)

/* body_next results besides 1 (data) and 0 (end of body) */
#define BODY_EOF (-1)               /* connection failed or closed */
#define BODY_BAD (-2)               /* malformed chunked framing */

/* send_head lengths besides a Content-Length */
#define LEN_CHUNKED (-1LL)
#define LEN_NONE    (-2LL)

enum { BODY_NONE, BODY_LENGTH, BODY_CHUNKED };
enum { EP_ECHO, EP_STATUS, EP_SLOW, EP_SSE, EP_DOWNLOAD, EP_UPLOAD,
       EP_STATS, EP_LOG, EP_WS, EP_BAD };

/* Written once in main before the first thread starts; read-only after. */
static const char *upstream_name = "upstream";
static const char *log_path;
static unsigned char pattern[IO_CHUNK];     /* byte i = (i*31+7) & 0xff */

/* The log file: one write(2) per line under log_lock, which also guards
 * log_lines and makes /_log see whole lines only. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static unsigned long log_lines;

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long n_connections, n_requests, n_active;

/* One connection, owned by its thread.  Unread input is buf[pos..len). */
typedef struct {
    int fd;
    unsigned long seq;
    unsigned long nreq;         /* counted requests read on it so far */
    size_t pos, len;
    unsigned char buf[HEAD_MAX];
} http_conn;

typedef struct {
    char *name;                 /* lower-cased */
    char *value;                /* without surrounding whitespace */
} header;

typedef struct {
    char *head;                 /* private copy of the head; fields below
                                   point into it */
    char *raw;                  /* the head as received (logged) */
    char *method;
    char *target;               /* raw request-target, as logged */
    char *path;                 /* malloc'ed: target without scheme,
                                   authority and query */
    int http11;
    int keep_alive;
    int is_head;
    header *hdrs;
    size_t nhdrs;
    int body_mode;
    uint64_t body_length;
} http_req;

typedef struct {
    int mode;
    uint64_t left;              /* of the body, or of the current chunk */
    int after_data;             /* chunked: CRLF after chunk data due */
    int done;
} body_reader;

typedef struct {
    uint64_t bytes;
    uint64_t fnv;
    int pattern_ok;
    int complete;
} body_sum;

typedef struct {
    int kind;
    long long a, b;
    const char *why;            /* EP_BAD */
} route;

typedef struct {
    char *p;
    size_t len, cap;
    int failed;
} sbuf;

static void sb_add(sbuf *b, const void *s, size_t n)
{
    size_t cap;
    char *np;

    if (b->failed) {
        return;
    }
    if (b->len + n + 1 > b->cap) {
        cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        if (!(np = realloc(b->p, cap))) {
            b->failed = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* Short formatted pieces only (header lines); longer output is a bug. */
static void sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        b->failed = 1;
        return;
    }
    sb_add(b, tmp, (size_t)n);
}

static void sleep_ms(long long ms)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        ;
    }
}

/* jansson only takes UTF-8; bytes that are not (obs-text in a header) are
 * reported as Latin-1, byte for code point, as aura_example_service does. */
static json_t *json_bytes(const char *s)
{
    json_t *j = json_string(s);
    const unsigned char *p;
    char *buf, *o;

    if (j) {
        return j;
    }
    o = buf = malloc(strlen(s) * 2 + 1);
    if (!buf) {
        return NULL;
    }
    for (p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x80) {
            *o++ = (char)*p;
        }
        else {
            *o++ = (char)(0xC0 | (*p >> 6));
            *o++ = (char)(0x80 | (*p & 0x3F));
        }
    }
    *o = '\0';
    j = json_string(buf);
    free(buf);
    return j;
}

/* --- input ------------------------------------------------------------ */

/* Read more input after the unread bytes (moved to the front).  Returns 0,
 * or -1 on EOF, error or a full buffer. */
static int fill(http_conn *c)
{
    ssize_t n;

    if (c->pos > 0) {
        memmove(c->buf, c->buf + c->pos, c->len - c->pos);
        c->len -= c->pos;
        c->pos = 0;
    }
    if (c->len == sizeof(c->buf)) {
        return -1;
    }
    do {
        n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        return -1;
    }
    c->len += (size_t)n;
    return 0;
}

/* Offset just past the empty line ending a head in p[from..n), or -1;
 * *next is where the next search may start. */
static long find_head_end(const unsigned char *p, size_t n, size_t from,
                          size_t *next)
{
    size_t i;

    for (i = from; i < n; i++) {
        if (p[i] != '\n') {
            continue;
        }
        if (i + 1 < n && p[i + 1] == '\n') {
            return (long)(i + 2);
        }
        if (i + 2 < n && p[i + 1] == '\r' && p[i + 2] == '\n') {
            return (long)(i + 3);
        }
    }
    *next = n > 2 ? n - 2 : 0;
    return -1;
}

/* Waits for a whole request head and hands out a NUL-terminated copy of
 * it (*out, malloc'ed), consuming it from the buffer. */
static int read_head(http_conn *c, char **out)
{
    size_t from = 0;
    long end;

    for (;;) {
        /* Empty lines before a request line are ignored (RFC 9112 2.2). */
        while (from == 0 && c->pos < c->len
               && (c->buf[c->pos] == '\r' || c->buf[c->pos] == '\n')) {
            c->pos++;
        }
        end = find_head_end(c->buf + c->pos, c->len - c->pos, from, &from);
        if (end >= 0) {
            break;
        }
        if (c->len - c->pos >= HEAD_MAX) {
            return HEAD_TOO_LARGE;
        }
        if (fill(c) < 0) {
            return HEAD_EOF;
        }
    }
    if (memchr(c->buf + c->pos, '\0', (size_t)end)) {
        return HEAD_BAD;
    }
    if (!(*out = malloc((size_t)end + 1))) {
        return HEAD_EOF;
    }
    memcpy(*out, c->buf + c->pos, (size_t)end);
    (*out)[end] = '\0';
    c->pos += (size_t)end;
    return HEAD_OK;
}

/* One line (without CR LF) from the buffer, for chunk sizes and trailers;
 * *line points into the buffer until the next fill. */
static int read_line(http_conn *c, char **line, size_t *len)
{
    unsigned char *nl;
    size_t n;

    while (!(nl = memchr(c->buf + c->pos, '\n', c->len - c->pos))) {
        if (c->len - c->pos >= sizeof(c->buf)) {
            return BODY_BAD;
        }
        if (fill(c) < 0) {
            return BODY_EOF;
        }
    }
    *line = (char *)c->buf + c->pos;
    n = (size_t)(nl - (c->buf + c->pos));
    c->pos += n + 1;
    if (n > 0 && (*line)[n - 1] == '\r') {
        n--;
    }
    *len = n;
    return 0;
}

/* --- request head ----------------------------------------------------- */

static int is_tchar(int ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z')
           || (ch >= 'A' && ch <= 'Z')
           || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static int is_token(const char *s)
{
    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        if (!is_tchar((unsigned char)*s)) {
            return 0;
        }
    }
    return 1;
}

/* The path an endpoint is chosen by: absolute-form loses scheme and
 * authority, every form loses the query. */
static char *target_path(const char *target)
{
    const char *p = target, *q;

    if (!strncasecmp(p, "http://", 7) || !strncasecmp(p, "https://", 8)) {
        p = strchr(strstr(p, "//") + 2, '/');
        if (!p) {
            return strdup("/");
        }
    }
    q = p + strcspn(p, "?#");
    return strndup(p, (size_t)(q - p));
}

static int parse_request_line(http_req *r, char *line)
{
    char *sp, *version;
    const unsigned char *t;

    if (!(sp = strchr(line, ' '))) {
        return -1;
    }
    *sp = '\0';
    r->method = line;
    r->target = sp + 1;
    if (!(sp = strchr(r->target, ' '))) {
        return -1;
    }
    *sp = '\0';
    version = sp + 1;
    if (!is_token(r->method) || !*r->target) {
        return -1;
    }
    for (t = (const unsigned char *)r->target; *t; t++) {
        if (*t <= 0x20 || *t == 0x7f) {
            return -1;
        }
    }
    if (!strcmp(version, "HTTP/1.1")) {
        r->http11 = 1;
    }
    else if (strcmp(version, "HTTP/1.0") != 0) {
        return -1;
    }
    r->is_head = !strcmp(r->method, "HEAD");
    r->path = target_path(r->target);
    return r->path ? 0 : -1;
}

static int parse_header(header *h, char *line)
{
    char *colon = strchr(line, ':'), *v, *e, *p;

    if (!colon) {
        return -1;
    }
    *colon = '\0';
    /* No whitespace before the colon, no obs-fold: both fail is_token. */
    if (!is_token(line)) {
        return -1;
    }
    for (p = line; *p; p++) {
        if (*p >= 'A' && *p <= 'Z') {
            *p = (char)(*p - 'A' + 'a');
        }
    }
    for (v = colon + 1; *v == ' ' || *v == '\t'; v++) {
        ;
    }
    e = v + strlen(v);
    while (e > v && (e[-1] == ' ' || e[-1] == '\t')) {
        e--;
    }
    *e = '\0';
    for (p = v; *p; p++) {
        if ((*p > 0 && *p < 0x20 && *p != '\t') || *p == 0x7f) {
            return -1;
        }
    }
    h->name = line;
    h->value = v;
    return 0;
}

/* Splits the private head copy into the request line and headers. */
static int parse_head(http_req *r)
{
    char *line = r->head, *eol;
    size_t lines = 0;

    for (eol = r->head; (eol = strchr(eol, '\n')) != NULL; eol++) {
        lines++;
    }
    if (!(r->hdrs = calloc(lines ? lines : 1, sizeof(*r->hdrs)))) {
        return -1;
    }
    for (; (eol = strchr(line, '\n')) != NULL; line = eol + 1) {
        *eol = '\0';
        if (eol > line && eol[-1] == '\r') {
            eol[-1] = '\0';
        }
        if (strchr(line, '\r')) {
            return -1;
        }
        if (!r->method) {
            if (parse_request_line(r, line) < 0) {
                return -1;
            }
        }
        else if (!*line) {
            break;
        }
        else if (parse_header(&r->hdrs[r->nhdrs++], line) < 0) {
            return -1;
        }
    }
    return r->method ? 0 : -1;
}

static const char *hdr_get(const http_req *r, const char *name)
{
    size_t i;

    for (i = 0; i < r->nhdrs; i++) {
        if (!strcmp(r->hdrs[i].name, name)) {
            return r->hdrs[i].value;
        }
    }
    return NULL;
}

/* Next element of a comma-separated list at *s, without whitespace;
 * returns its length, *elem its start, or -1 at the end of the list. */
static long next_elem(const char **s, const char **elem)
{
    const char *p = *s, *e;

    if (!*p) {
        return -1;
    }
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    e = p + strcspn(p, ",");
    *s = *e ? e + 1 : e;
    *elem = p;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t')) {
        e--;
    }
    return (long)(e - p);
}

/* Does any header called name list token (case-insensitive)? */
static int hdr_has_token(const http_req *r, const char *name,
                         const char *token)
{
    size_t i, tlen = strlen(token);
    const char *s, *elem;
    long n;

    for (i = 0; i < r->nhdrs; i++) {
        if (strcmp(r->hdrs[i].name, name) != 0) {
            continue;
        }
        s = r->hdrs[i].value;
        while ((n = next_elem(&s, &elem)) >= 0) {
            if ((size_t)n == tlen && !strncasecmp(elem, token, tlen)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Strict decimal of n bytes, at most max. */
static int parse_dec(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (n == 0) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > max) {
            return -1;
        }
    }
    *out = v;
    return 0;
}

/* Body framing (RFC 9112 6.3).  Returns 0, or the status to refuse the
 * request with; Transfer-Encoding with Content-Length is refused, not
 * resolved, since no well-behaved proxy sends both. */
static int parse_framing(http_req *r, const char **why)
{
    size_t i;
    int chunked = 0, other = 0, have_len = 0;
    const char *s, *elem;
    uint64_t v;
    long n;

    for (i = 0; i < r->nhdrs; i++) {
        s = r->hdrs[i].value;
        if (!strcmp(r->hdrs[i].name, "transfer-encoding")) {
            while ((n = next_elem(&s, &elem)) >= 0) {
                if (n == 7 && !strncasecmp(elem, "chunked", 7)) {
                    chunked++;
                }
                else if (n > 0) {
                    other++;
                }
            }
            if (!chunked && !other) {
                other++;
            }
        }
        else if (!strcmp(r->hdrs[i].name, "content-length")) {
            while ((n = next_elem(&s, &elem)) >= 0) {
                if (parse_dec(elem, (size_t)n, UINT64_MAX / 16, &v) < 0
                    || (have_len && v != r->body_length)) {
                    *why = "bad Content-Length";
                    return 400;
                }
                r->body_length = v;
                have_len = 1;
            }
        }
    }
    if (other) {
        *why = "only the chunked transfer-coding is supported";
        return 501;
    }
    if (chunked && (chunked > 1 || have_len)) {
        *why = "bad Transfer-Encoding / Content-Length combination";
        return 400;
    }
    r->body_mode = chunked ? BODY_CHUNKED
                   : r->body_length ? BODY_LENGTH : BODY_NONE;
    return 0;
}

static void req_free(http_req *r)
{
    free(r->head);
    free(r->raw);
    free(r->path);
    free(r->hdrs);
}

/* --- request body ----------------------------------------------------- */

/* After a chunk's data: its CRLF, then the next size line; the last
 * chunk's trailers are read and dropped.  Returns 1 when a chunk with
 * data starts, 0 at the end of the body, or BODY_EOF/BODY_BAD. */
static int chunk_advance(http_conn *c, body_reader *br)
{
    char *line;
    size_t len, i, trailers = 0;
    uint64_t size = 0;
    int rv, d;

    if (br->after_data) {
        if ((rv = read_line(c, &line, &len)) < 0) {
            return rv;
        }
        if (len != 0) {
            return BODY_BAD;
        }
        br->after_data = 0;
    }
    if ((rv = read_line(c, &line, &len)) < 0) {
        return rv;
    }
    for (i = 0; i < len; i++) {
        d = line[i];
        d = d >= '0' && d <= '9' ? d - '0'
            : d >= 'a' && d <= 'f' ? d - 'a' + 10
            : d >= 'A' && d <= 'F' ? d - 'A' + 10 : -1;
        if (d < 0) {
            break;
        }
        size = size * 16 + (uint64_t)d;
        if (size > MAX_CHUNK) {
            return BODY_BAD;
        }
    }
    if (i == 0) {
        return BODY_BAD;
    }
    while (i < len && (line[i] == ' ' || line[i] == '\t')) {
        i++;
    }
    if (i < len && line[i] != ';') {
        return BODY_BAD;                /* extensions are ignored */
    }
    if (size > 0) {
        br->left = size;
        br->after_data = 1;
        return 1;
    }
    do {
        if ((rv = read_line(c, &line, &len)) < 0) {
            return rv;
        }
        if ((trailers += len + 2) > HEAD_MAX) {
            return BODY_BAD;
        }
    } while (len > 0);
    br->done = 1;
    return 0;
}

/* Hands out the next piece of body straight from the buffer (*p, *n).
 * Returns 1, 0 at the end of the body, BODY_EOF or BODY_BAD. */
static int body_next(http_conn *c, body_reader *br,
                     const unsigned char **p, size_t *n)
{
    size_t avail;
    int rv;

    if (br->mode == BODY_NONE || br->done) {
        return 0;
    }
    if (br->left == 0) {
        if (br->mode == BODY_LENGTH) {
            return 0;
        }
        if ((rv = chunk_advance(c, br)) != 1) {
            return rv;
        }
    }
    if (c->pos == c->len && fill(c) < 0) {
        return BODY_EOF;
    }
    avail = c->len - c->pos;
    if (avail > br->left) {
        avail = (size_t)br->left;
    }
    *p = c->buf + c->pos;
    *n = avail;
    c->pos += avail;
    br->left -= avail;
    return 1;
}

/* Reads the whole body, counting it and, with checksum, hashing it and
 * comparing it with the download pattern.  Returns 0 or BODY_*. */
static int drain_body(http_conn *c, const http_req *r, int checksum,
                      body_sum *s)
{
    body_reader br;
    const unsigned char *p;
    size_t n, i;
    uint64_t fnv = FNV_OFFSET;
    int rv;

    memset(&br, 0, sizeof(br));
    br.mode = r->body_mode;
    br.left = r->body_mode == BODY_LENGTH ? r->body_length : 0;
    s->bytes = 0;
    s->pattern_ok = 1;
    s->complete = 0;
    while ((rv = body_next(c, &br, &p, &n)) == 1) {
        if (checksum) {
            for (i = 0; i < n; i++) {
                fnv = (fnv ^ p[i]) * FNV_PRIME;
                if (p[i] != pattern[(s->bytes + i) % IO_CHUNK]) {
                    s->pattern_ok = 0;
                }
            }
        }
        s->bytes += n;
    }
    s->fnv = fnv;
    s->complete = (rv == 0);
    return rv;
}

/* --- output ----------------------------------------------------------- */

static int send_all(http_conn *c, const void *p, size_t n)
{
    const char *s = p;
    ssize_t w;

    while (n > 0) {
        w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static const char *reason(int status)
{
    static const struct { int code; const char *text; } tab[] = {
        { 101, "Switching Protocols" }, { 200, "OK" }, { 201, "Created" },
        { 202, "Accepted" }, { 204, "No Content" },
        { 301, "Moved Permanently" }, { 302, "Found" },
        { 304, "Not Modified" }, { 400, "Bad Request" },
        { 401, "Unauthorized" }, { 403, "Forbidden" }, { 404, "Not Found" },
        { 405, "Method Not Allowed" }, { 408, "Request Timeout" },
        { 409, "Conflict" }, { 413, "Content Too Large" },
        { 417, "Expectation Failed" }, { 426, "Upgrade Required" },
        { 429, "Too Many Requests" },
        { 431, "Request Header Fields Too Large" },
        { 500, "Internal Server Error" }, { 501, "Not Implemented" },
        { 502, "Bad Gateway" }, { 503, "Service Unavailable" },
        { 504, "Gateway Timeout" }
    };
    size_t i;

    for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        if (tab[i].code == status) {
            return tab[i].text;
        }
    }
    return "Status";
}

/* Status line and headers; length is a Content-Length, LEN_CHUNKED or
 * LEN_NONE (no framing header).  r NULL: Connection: close. */
static int send_head(http_conn *c, const http_req *r, int status,
                     const char *ctype, long long length, const char *extra)
{
    sbuf b = { 0 };
    int rv;

    sb_printf(&b, "HTTP/1.1 %d %s\r\n", status, reason(status));
    if (ctype) {
        sb_printf(&b, "Content-Type: %s\r\n", ctype);
    }
    if (length >= 0) {
        sb_printf(&b, "Content-Length: %lld\r\n", length);
    }
    else if (length == LEN_CHUNKED) {
        sb_str(&b, "Transfer-Encoding: chunked\r\n");
    }
    sb_printf(&b, "X-Upstream: %s\r\n", upstream_name);
    if (extra) {
        sb_str(&b, extra);
    }
    if (!r || !r->keep_alive) {
        sb_str(&b, "Connection: close\r\n");
    }
    else if (!r->http11) {
        sb_str(&b, "Connection: keep-alive\r\n");
    }
    sb_str(&b, "\r\n");
    rv = b.failed ? -1 : send_all(c, b.p, b.len);
    free(b.p);
    return rv;
}

/* Sends body (consumed) as JSON.  Returns 1 to keep the connection. */
static int send_json(http_conn *c, const http_req *r, int status,
                     json_t *body, const char *extra)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    int bodyless = status == 204 || status == 304;
    size_t len = text ? strlen(text) : 0;
    int ok;

    json_decref(body);
    if (!text) {
        fprintf(stderr, PROG ": out of memory building a response\n");
        return 0;
    }
    ok = send_head(c, r, status, bodyless ? NULL : "application/json",
                   bodyless ? LEN_NONE : (long long)len, extra) == 0;
    if (ok && !bodyless && !(r && r->is_head)) {
        ok = send_all(c, text, len) == 0;
    }
    free(text);
    return ok && r && r->keep_alive;
}

/* A request refused before or while its body was read: the connection
 * is closed, since its framing can no longer be trusted. */
static int send_error(http_conn *c, int status, const char *why,
                      const char *extra)
{
    send_json(c, NULL, status,
              json_pack("{s:s, s:s}", "upstream", upstream_name,
                        "error", why),
              extra);
    return 0;
}

/* --- the log ---------------------------------------------------------- */

/* Headers as {name: value}, repeated names joined with ", ". */
static json_t *headers_json(const http_req *r)
{
    json_t *o = json_object(), *prev;
    sbuf b;
    size_t i;

    for (i = 0; o && i < r->nhdrs; i++) {
        prev = json_object_get(o, r->hdrs[i].name);
        if (!prev) {
            json_object_set_new(o, r->hdrs[i].name,
                                json_bytes(r->hdrs[i].value));
            continue;
        }
        memset(&b, 0, sizeof(b));
        sb_str(&b, json_string_value(prev));
        sb_str(&b, ", ");
        sb_str(&b, r->hdrs[i].value);
        if (!b.failed) {
            json_object_set_new(o, r->hdrs[i].name, json_bytes(b.p));
        }
        free(b.p);
    }
    return o;
}

static void log_request(const http_conn *c, const http_req *r,
                        const body_sum *s)
{
    json_t *o;
    char *text;
    sbuf b = { 0 };
    size_t off = 0;
    ssize_t w;

    o = json_pack("{s:s, s:o, s:o, s:o, s:I, s:b, s:I, s:I, s:o}",
                  "name", upstream_name, "method", json_bytes(r->method),
                  "path", json_bytes(r->target), "headers", headers_json(r),
                  "body_len", (json_int_t)s->bytes,
                  "body_complete", s->complete, "conn", (json_int_t)c->seq,
                  "conn_req", (json_int_t)c->nreq,
                  "raw_head", json_bytes(r->raw ? r->raw : ""));
    text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (text) {
        sb_str(&b, text);
        sb_str(&b, "\n");
    }
    free(text);
    if (!text || b.failed) {
        fprintf(stderr, PROG ": out of memory logging a request\n");
        free(b.p);
        return;
    }
    pthread_mutex_lock(&log_lock);
    while (off < b.len) {
        w = write(log_fd, b.p + off, b.len - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", log_path,
                    strerror(errno));
            break;
        }
        off += (size_t)w;
    }
    log_lines++;
    pthread_mutex_unlock(&log_lock);
    free(b.p);
}

/* --- endpoints -------------------------------------------------------- */

/* Does seg start with word as a whole segment?  *rest: just after it. */
static int seg_is(const char *seg, const char *word, const char **rest)
{
    size_t n = strlen(word);

    if (strncmp(seg, word, n) != 0 || (seg[n] != '/' && seg[n] != '\0')) {
        return 0;
    }
    *rest = seg + n;
    return 1;
}

/* "/digits" at *s followed by '/' or the end: 1 (*v set, *s moved on),
 * 0 not digits at all, -1 above max. */
static int seg_num(const char **s, uint64_t max, uint64_t *v, size_t *ndig)
{
    const char *p = *s;
    size_t n;

    if (*p != '/') {
        return 0;
    }
    p++;
    n = strcspn(p, "/");
    if (n == 0 || strspn(p, "0123456789") != n) {
        return 0;
    }
    if (n > 19 || parse_dec(p, n, max, v) < 0) {
        return -1;
    }
    *s = p + n;
    *ndig = n;
    return 1;
}

/* Endpoint of one segment (kind EP_ECHO: none). */
static void route_segment(const http_req *r, const char *seg, route *rt)
{
    const char *p;
    uint64_t a = 0, b = 0;
    size_t nd;
    int m;

    if (seg_is(seg, "status", &p)) {
        if ((m = seg_num(&p, 999, &a, &nd)) != 0) {
            rt->kind = m < 0 || nd != 3 || a < 200 || a > 599 ? EP_BAD
                       : EP_STATUS;
            rt->a = (long long)a;
            rt->why = "status must be 200..599";
        }
    }
    else if (seg_is(seg, "slow", &p)) {
        if ((m = seg_num(&p, MAX_SLOW_MS, &a, &nd)) != 0) {
            rt->kind = m < 0 ? EP_BAD : EP_SLOW;
            rt->a = (long long)a;
            rt->why = "delay must be 0..600000 ms";
        }
    }
    else if (seg_is(seg, "sse", &p)) {
        if ((m = seg_num(&p, MAX_SSE_N, &a, &nd)) != 0
            && (m < 0 || (m = seg_num(&p, MAX_SLOW_MS, &b, &nd)) != 0)) {
            rt->kind = m < 0 ? EP_BAD : EP_SSE;
            rt->a = (long long)a;
            rt->b = (long long)b;
            rt->why = "sse wants /sse/0..1000000/0..600000";
        }
    }
    else if (seg_is(seg, "download", &p)) {
        if ((m = seg_num(&p, MAX_DOWNLOAD, &a, &nd)) != 0) {
            rt->kind = m < 0 ? EP_BAD : EP_DOWNLOAD;
            rt->a = (long long)a;
            rt->why = "download size must be 0..2147483648";
        }
    }
    else if (seg_is(seg, "upload", &p)
             && (!strcmp(r->method, "POST") || !strcmp(r->method, "PUT"))) {
        rt->kind = EP_UPLOAD;
    }
}

static void route_request(const http_req *r, route *rt)
{
    const char *seg;

    memset(rt, 0, sizeof(*rt));
    rt->kind = EP_ECHO;
    if (!strcmp(r->path, "/_stats")) {
        rt->kind = EP_STATS;
        return;
    }
    if (!strcmp(r->path, "/_log")) {
        rt->kind = EP_LOG;
        return;
    }
    if (!strcmp(r->method, "GET") && hdr_has_token(r, "upgrade", "websocket")
        && r->body_mode == BODY_NONE) {
        rt->kind = EP_WS;
        return;
    }
    for (seg = r->path; rt->kind == EP_ECHO && (seg = strchr(seg, '/'));) {
        route_segment(r, ++seg, rt);
    }
}

static int ep_stats(http_conn *c, const http_req *r)
{
    unsigned long conns, reqs, active, lines;

    pthread_mutex_lock(&stats_lock);
    conns = n_connections;
    reqs = n_requests;
    active = n_active;
    pthread_mutex_unlock(&stats_lock);
    pthread_mutex_lock(&log_lock);
    lines = log_lines;
    pthread_mutex_unlock(&log_lock);
    return send_json(c, r, 200,
                     json_pack("{s:s, s:I, s:I, s:I, s:I}",
                               "name", upstream_name,
                               "connections", (json_int_t)conns,
                               "requests", (json_int_t)reqs,
                               "active", (json_int_t)active,
                               "log_lines", (json_int_t)lines),
                     NULL);
}

/* The since=K parameter of the query, 0 when absent; -1 when unusable. */
static long long query_since(const http_req *r)
{
    const char *q = strchr(r->target, '?'), *e;
    uint64_t v;

    for (q = q ? q + 1 : NULL; q && *q; q = *e ? e + 1 : e) {
        e = q + strcspn(q, "&");
        if (!strncmp(q, "since=", 6)) {
            return parse_dec(q + 6, (size_t)(e - q - 6), 1ULL << 62, &v) < 0
                   ? -1 : (long long)v;
        }
    }
    return 0;
}

/* Lines since..end of the log file as one JSON array; each line already
 * is a JSON object, so they are joined, not parsed. */
static int ep_log(http_conn *c, const http_req *r)
{
    long long since = query_since(r), i = 0;
    sbuf b = { 0 };
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    FILE *f;
    int ok;

    if (since < 0) {
        return send_json(c, r, 400, json_pack("{s:s, s:s}", "upstream",
                         upstream_name, "error", "since must be a number"),
                         NULL);
    }
    sb_str(&b, "[");
    pthread_mutex_lock(&log_lock);
    if ((f = fopen(log_path, "r")) != NULL) {
        while ((n = getline(&line, &cap, f)) > 0) {
            if (line[n - 1] == '\n') {
                line[--n] = '\0';
            }
            if (i++ >= since && n > 0) {
                sb_str(&b, b.len > 1 ? "," : "");
                sb_add(&b, line, (size_t)n);
            }
        }
        fclose(f);
    }
    pthread_mutex_unlock(&log_lock);
    free(line);
    sb_str(&b, "]");
    if (b.failed) {
        free(b.p);
        return send_error(c, 500, "out of memory", NULL);
    }
    ok = send_head(c, r, 200, "application/json", (long long)b.len, NULL)
         == 0 && (r->is_head || send_all(c, b.p, b.len) == 0);
    free(b.p);
    return ok && r->keep_alive;
}

static char *reply_extra(const http_req *r);

static int ep_status(http_conn *c, const http_req *r, int status)
{
    char *extra = reply_extra(r);
    int rv;

    rv = send_json(c, r, status,
                   json_pack("{s:s, s:o}", "upstream", upstream_name,
                             "path", json_bytes(r->target)),
                   extra);
    free(extra);
    return rv;
}

/* One event per chunk, each sent at once (TCP_NODELAY is set on every
 * connection).  HTTP/1.0 gets the events unframed and a close. */
static int ep_sse(http_conn *c, http_req *r, long long n, long long ms)
{
    char ev[64], frame[96];
    long long i;
    int len;

    if (!r->http11) {
        r->keep_alive = 0;
    }
    if (send_head(c, r, 200, "text/event-stream",
                  r->http11 ? LEN_CHUNKED : LEN_NONE,
                  "Cache-Control: no-cache\r\n") < 0) {
        return 0;
    }
    if (r->is_head) {
        return r->keep_alive;
    }
    for (i = 0; i < n; i++) {
        if (i > 0) {
            sleep_ms(ms);
        }
        snprintf(ev, sizeof(ev), "data: tick %lld\n\n", i);
        len = r->http11 ? snprintf(frame, sizeof(frame), "%zx\r\n%s\r\n",
                                   strlen(ev), ev)
                        : snprintf(frame, sizeof(frame), "%s", ev);
        if (send_all(c, frame, (size_t)len) < 0) {
            return 0;
        }
    }
    if (r->http11 && send_all(c, "0\r\n\r\n", 5) < 0) {
        return 0;
    }
    return r->keep_alive;
}

/* Streamed from the pattern buffer: IO_CHUNK is a multiple of 256, so
 * every write starts at pattern[0]. */
static int ep_download(http_conn *c, const http_req *r, long long bytes)
{
    size_t n;

    if (send_head(c, r, 200, "application/octet-stream", bytes, NULL) < 0) {
        return 0;
    }
    if (r->is_head) {
        return r->keep_alive;
    }
    while (bytes > 0) {
        n = bytes > IO_CHUNK ? IO_CHUNK : (size_t)bytes;
        if (send_all(c, pattern, n) < 0) {
            return 0;
        }
        bytes -= (long long)n;
    }
    return r->keep_alive;
}

static int ep_upload(http_conn *c, const http_req *r, const body_sum *s)
{
    char hex[17];

    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)s->fnv);
    return send_json(c, r, 200,
                     json_pack("{s:s, s:I, s:b, s:s}",
                               "upstream", upstream_name,
                               "bytes", (json_int_t)s->bytes,
                               "pattern_ok", s->pattern_ok, "fnv1a", hex),
                     NULL);
}

/* The response lines x-upstream-reply-header[-N] ask for ("Name: value"
 * each), malloc'ed; NULL for none. */
static char *reply_extra(const http_req *r)
{
    static const char prefix[] = "x-upstream-reply-header";
    sbuf b = { 0 };
    size_t i;

    for (i = 0; i < r->nhdrs; i++) {
        if (!strncmp(r->hdrs[i].name, prefix, sizeof(prefix) - 1)
            && strchr(r->hdrs[i].value, ':')) {
            sb_str(&b, r->hdrs[i].value);
            sb_str(&b, "\r\n");
        }
    }
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

static int ep_echo(http_conn *c, const http_req *r, const body_sum *s)
{
    char *extra = reply_extra(r);
    int rv;

    rv = send_json(c, r, 200,
                   json_pack("{s:s, s:o, s:o, s:o, s:I, s:I, s:I, s:o}",
                             "upstream", upstream_name,
                             "method", json_bytes(r->method),
                             "path", json_bytes(r->target),
                             "headers", headers_json(r),
                             "body_len", (json_int_t)s->bytes,
                             "conn", (json_int_t)c->seq,
                             "conn_req", (json_int_t)c->nreq,
                             "raw_head", json_bytes(r->raw ? r->raw : "")),
                   extra);
    free(extra);
    return rv;
}

/* --- WebSocket (RFC 6455) --------------------------------------------- */

static int ws_need(http_conn *c, size_t n)
{
    while (c->len - c->pos < n) {
        if (fill(c) < 0) {
            return -1;
        }
    }
    return 0;
}

/* A server frame header (never masked) for b0 (FIN, opcode) and len. */
static int ws_send_head(http_conn *c, unsigned char b0, uint64_t len)
{
    unsigned char h[10];
    size_t n = 2;
    int i;

    h[0] = b0;
    if (len < 126) {
        h[1] = (unsigned char)len;
    }
    else if (len <= 0xffff) {
        h[1] = 126;
        h[2] = (unsigned char)(len >> 8);
        h[3] = (unsigned char)len;
        n = 4;
    }
    else {
        h[1] = 127;
        for (i = 0; i < 8; i++) {
            h[2 + i] = (unsigned char)(len >> (56 - 8 * i));
        }
        n = 10;
    }
    return send_all(c, h, n);
}

static void ws_close(http_conn *c, unsigned code)
{
    unsigned char p[2] = { (unsigned char)(code >> 8), (unsigned char)code };

    if (ws_send_head(c, 0x88, 2) == 0) {
        send_all(c, p, 2);
    }
}

/* Echoes a data frame's payload as it arrives, unmasked. */
static int ws_echo(http_conn *c, unsigned char b0, uint64_t len,
                   const unsigned char mask[4])
{
    unsigned char out[IO_CHUNK];
    uint64_t off = 0;
    size_t n, i;

    if (ws_send_head(c, b0, len) < 0) {
        return -1;
    }
    while (off < len) {
        if (c->pos == c->len && fill(c) < 0) {
            return -1;
        }
        n = c->len - c->pos;
        if (n > sizeof(out)) {
            n = sizeof(out);
        }
        if (n > len - off) {
            n = (size_t)(len - off);
        }
        for (i = 0; i < n; i++) {
            out[i] = c->buf[c->pos + i] ^ mask[(off + i) & 3];
        }
        c->pos += n;
        off += n;
        if (send_all(c, out, n) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Ping, pong or close (payload <= 125, already checked).  Returns 0 to go
 * on, -1 to end the connection. */
static int ws_control(http_conn *c, int op, size_t len,
                      const unsigned char mask[4])
{
    unsigned char p[125];
    size_t i;

    if (ws_need(c, len) < 0) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        p[i] = c->buf[c->pos + i] ^ mask[i & 3];
    }
    c->pos += len;
    if (op == 0x9) {
        return ws_send_head(c, 0x8A, len) == 0 && send_all(c, p, len) == 0
               ? 0 : -1;
    }
    if (op == 0x8) {
        if (len == 1) {
            ws_close(c, 1002);
        }
        else if (ws_send_head(c, 0x88, len ? 2 : 0) == 0 && len) {
            send_all(c, p, 2);          /* echo the status code */
        }
        return -1;
    }
    return 0;                           /* pong: nothing to do */
}

static void ws_loop(http_conn *c)
{
    unsigned char b0, b1, mask[4];
    uint64_t len;
    size_t hl;
    int op, i;

    for (;;) {
        if (ws_need(c, 2) < 0) {
            return;
        }
        b0 = c->buf[c->pos];
        b1 = c->buf[c->pos + 1];
        op = b0 & 0x0f;
        len = b1 & 0x7f;
        hl = 2 + (len == 126 ? 2 : len == 127 ? 8 : 0);
        if (ws_need(c, hl + 4) < 0) {
            return;
        }
        if (len >= 126) {
            for (len = 0, i = 2; (size_t)i < hl; i++) {
                len = len << 8 | c->buf[c->pos + i];
            }
        }
        memcpy(mask, c->buf + c->pos + hl, 4);
        c->pos += hl + 4;
        if ((b0 & 0x70) || !(b1 & 0x80) || (len >> 63)
            || (op >= 3 && op <= 7) || op > 0xA
            || (op >= 8 && (!(b0 & 0x80) || len > 125))) {
            ws_close(c, 1002);
            return;
        }
        if (op < 8 ? ws_echo(c, b0, len, mask) < 0
                   : ws_control(c, op, (size_t)len, mask) < 0) {
            return;
        }
    }
}

static int ep_websocket(http_conn *c, const http_req *r)
{
    const char *key = hdr_get(r, "sec-websocket-key");
    const char *version = hdr_get(r, "sec-websocket-version");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char accept[64];
    char *extra;
    sbuf b = { 0 };
    int ok;

    if (!r->http11 || !key || !*key || strlen(key) > MAX_WS_KEY) {
        return send_error(c, 400, "bad WebSocket handshake", NULL);
    }
    if (version && strcmp(version, "13") != 0) {
        return send_error(c, 426, "WebSocket version 13 only",
                          "Sec-WebSocket-Version: 13\r\n");
    }
    sb_str(&b, key);
    sb_str(&b, WS_GUID);
    ok = !b.failed
         && EVP_Digest(b.p, b.len, md, &mdlen, EVP_sha1(), NULL) == 1
         && mdlen == 20;
    free(b.p);
    if (!ok) {
        return send_error(c, 500, "SHA-1 failed", NULL);
    }
    EVP_EncodeBlock((unsigned char *)accept, md, 20);
    memset(&b, 0, sizeof(b));
    sb_printf(&b, "HTTP/1.1 101 Switching Protocols\r\n"
              "Upgrade: websocket\r\nConnection: Upgrade\r\n"
              "Sec-WebSocket-Accept: %s\r\nX-Upstream: %s\r\n",
              accept, upstream_name);
    extra = reply_extra(r);
    sb_str(&b, extra ? extra : "");
    free(extra);
    sb_str(&b, "\r\n");
    ok = !b.failed && send_all(c, b.p, b.len) == 0;
    free(b.p);
    if (ok) {
        ws_loop(c);
    }
    return 0;
}

/* --- connections ------------------------------------------------------ */

static int dispatch(http_conn *c, http_req *r, const route *rt,
                    const body_sum *s)
{
    switch (rt->kind) {
    case EP_STATS:
        return ep_stats(c, r);
    case EP_LOG:
        return ep_log(c, r);
    case EP_WS:
        return ep_websocket(c, r);
    case EP_STATUS:
        return ep_status(c, r, (int)rt->a);
    case EP_SLOW:
        sleep_ms(rt->a);
        return ep_status(c, r, 200);
    case EP_SSE:
        return ep_sse(c, r, rt->a, rt->b);
    case EP_DOWNLOAD:
        return ep_download(c, r, rt->a);
    case EP_UPLOAD:
        return ep_upload(c, r, s);
    case EP_BAD:
        return send_json(c, r, 400, json_pack("{s:s, s:s}", "upstream",
                         upstream_name, "error", rt->why), NULL);
    default:
        return ep_echo(c, r, s);
    }
}

/* Checks an Expect header and answers 100-continue before the body is
 * read.  Returns 0, or -1 when the connection must end. */
static int expect_continue(http_conn *c, const http_req *r)
{
    const char *expect = hdr_get(r, "expect");
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

    if (!expect) {
        return 0;
    }
    if (strcasecmp(expect, "100-continue") != 0) {
        send_error(c, 417, "only Expect: 100-continue is supported", NULL);
        return -1;
    }
    if (r->http11 && r->body_mode != BODY_NONE
        && send_all(c, cont, sizeof(cont) - 1) < 0) {
        return -1;
    }
    return 0;
}

/* Reads, records and answers one request.  Returns 1 to read another. */
static int serve_one(http_conn *c)
{
    http_req r;
    route rt;
    body_sum s;
    const char *why = NULL;
    int rv, status, keep = 0;

    memset(&r, 0, sizeof(r));
    rv = read_head(c, &r.head);
    if (rv == HEAD_TOO_LARGE) {
        return send_error(c, 431, "request head over 64 KiB", NULL);
    }
    if (rv != HEAD_OK) {
        return rv == HEAD_BAD ? send_error(c, 400, "NUL in head", NULL) : 0;
    }
    r.raw = strdup(r.head);
    if (!r.raw || parse_head(&r) < 0) {
        keep = send_error(c, 400, "malformed request head", NULL);
    }
    else if ((status = parse_framing(&r, &why)) != 0) {
        keep = send_error(c, status, why, NULL);
    }
    else if (expect_continue(c, &r) == 0) {
        r.keep_alive = r.http11 ? !hdr_has_token(&r, "connection", "close")
                       : hdr_has_token(&r, "connection", "keep-alive");
        route_request(&r, &rt);
        if (rt.kind != EP_STATS && rt.kind != EP_LOG) {
            c->nreq++;
            pthread_mutex_lock(&stats_lock);
            n_requests++;
            pthread_mutex_unlock(&stats_lock);
        }
        rv = drain_body(c, &r, rt.kind == EP_UPLOAD, &s);
        if (rt.kind != EP_STATS && rt.kind != EP_LOG) {
            log_request(c, &r, &s);
        }
        keep = rv == BODY_BAD ? send_error(c, 400, "bad chunked body", NULL)
               : rv == BODY_EOF ? 0 : dispatch(c, &r, &rt, &s);
    }
    req_free(&r);
    return keep;
}

/* Half-close, then read what the client still sends for a moment, so
 * that unread input does not turn our last response into a reset. */
static void lingering_close(http_conn *c)
{
    struct timeval tv = { LINGER_MS / 1000, (LINGER_MS % 1000) * 1000 };
    char sink[4096];
    size_t total = 0;
    ssize_t n;

    if (shutdown(c->fd, SHUT_WR) == 0
        && setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0) {
        while (total < LINGER_BYTES
               && ((n = recv(c->fd, sink, sizeof(sink), 0)) > 0
                   || (n < 0 && errno == EINTR))) {
            total += n > 0 ? (size_t)n : 0;
        }
    }
    close(c->fd);
}

static void *conn_main(void *arg)
{
    http_conn *c = arg;

    while (serve_one(c)) {
        ;
    }
    lingering_close(c);
    pthread_mutex_lock(&stats_lock);
    n_active--;
    pthread_mutex_unlock(&stats_lock);
    free(c);
    return NULL;
}

static void *accept_main(void *arg)
{
    int lfd = *(int *)arg, fd, one = 1;
    pthread_attr_t attr;
    pthread_t t;
    http_conn *c;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (;;) {
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EINTR && errno != ECONNABORTED) {
                fprintf(stderr, PROG ": accept: %s\n", strerror(errno));
                sleep_ms(10);           /* EMFILE and friends */
            }
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (!(c = malloc(sizeof(*c)))) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->pos = c->len = 0;
        c->nreq = 0;
        pthread_mutex_lock(&stats_lock);
        c->seq = ++n_connections;
        n_active++;
        pthread_mutex_unlock(&stats_lock);
        if (pthread_create(&t, &attr, conn_main, c) != 0) {
            fprintf(stderr, PROG ": cannot start a thread\n");
            pthread_mutex_lock(&stats_lock);
            n_active--;
            pthread_mutex_unlock(&stats_lock);
            close(fd);
            free(c);
        }
    }
    return NULL;
}

/* --- startup ---------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: " PROG " -p port -P pidfile -l logfile "
            "[-n name]\n");
    exit(2);
}

/* Opens the log for appending and counts the lines already in it, so
 * that /_log line numbers stay those of the file. */
static int open_log(void)
{
    FILE *f;
    int ch;

    log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0 || !(f = fopen(log_path, "r"))) {
        return -1;
    }
    while ((ch = getc(f)) != EOF) {
        log_lines += ch == '\n';
    }
    fclose(f);
    return 0;
}

static int listen_on(int port, int *bound)
{
    struct sockaddr_in sa;
    socklen_t salen = sizeof(sa);
    int fd, one = 1;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0
        || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0
        || listen(fd, 511) < 0
        || getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
        close(fd);
        return -1;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

static int valid_name(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && n <= MAX_NAME
           && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789._:-") == n;
}

int main(int argc, char **argv)
{
    const char *pidfile = NULL;
    long port = -1;
    int opt, sig, lfd, bound;
    char *end;
    sigset_t sigs;
    pthread_t t;
    FILE *f;
    size_t i;

    while ((opt = getopt(argc, argv, "p:P:l:n:h")) != -1) {
        switch (opt) {
        case 'p':
            port = strtol(optarg, &end, 10);
            if (end == optarg || *end || port < 0 || port > 65535) {
                usage();
            }
            break;
        case 'P':
            pidfile = optarg;
            break;
        case 'l':
            log_path = optarg;
            break;
        case 'n':
            upstream_name = optarg;
            break;
        default:
            usage();
        }
    }
    if (optind < argc || port < 0 || !pidfile || !log_path) {
        usage();
    }
    if (!valid_name(upstream_name)) {
        fprintf(stderr, PROG ": name must be 1..64 of [A-Za-z0-9._:-]\n");
        return 2;
    }
    for (i = 0; i < sizeof(pattern); i++) {
        pattern[i] = (unsigned char)((i * 31 + 7) & 0xff);
    }

    /* Stop signals are blocked before any thread starts, so every thread
     * inherits the mask and only sigwait() below sees them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (open_log() < 0) {
        fprintf(stderr, PROG ": cannot open %s: %s\n", log_path,
                strerror(errno));
        return 1;
    }
    if ((lfd = listen_on((int)port, &bound)) < 0) {
        fprintf(stderr, PROG ": cannot listen on 127.0.0.1:%ld: %s\n", port,
                strerror(errno));
        return 1;
    }
    if (pthread_create(&t, NULL, accept_main, &lfd) != 0) {
        fprintf(stderr, PROG ": cannot start the accept thread\n");
        return 1;
    }
    if (!(f = fopen(pidfile, "w")) || fprintf(f, "%ld\n", (long)getpid()) < 0
        || fclose(f) != 0) {
        fprintf(stderr, PROG ": cannot write %s: %s\n", pidfile,
                strerror(errno));
        return 1;
    }
    printf("ready 127.0.0.1:%d\n", bound);
    fflush(stdout);

    do {
        if (sigwait(&sigs, &sig) != 0) {
            sig = 0;
        }
    } while (sig != SIGTERM && sig != SIGINT);

    /* Connection threads are not joined: they may sit in a keep-alive
     * read forever.  Holding log_lock keeps a log line from being cut. */
    pthread_mutex_lock(&log_lock);
    unlink(pidfile);
    _exit(0);
}
