/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_audit_record.c: the audit log's record line and chain hash (see
 * aura_audit_record.h).  Pure: the writer (aura_audit.c) holds the lock
 * and does the I/O; here only strings.  The key order is fixed and the
 * escaping deterministic, so a record's bytes, hence its hash, depend on
 * its fields alone.
 */
#include "audit/aura_audit_record.h"

#include "apr_strings.h"
#include "apr_tables.h"

#include <openssl/evp.h>
#include <string.h>

/* A JSON string (quoted) or null.  Control characters, '"', '\\', DEL
 * and every byte above 0x7f are escaped (\u00XX, one per byte): the line
 * is ASCII whatever a client sent, and nothing is lost. */
static void put_raw(apr_array_header_t *out, const char *s);

static void put_string(apr_array_header_t *out, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *c;

    if (!s) {
        put_raw(out, "null");
        return;
    }
    APR_ARRAY_PUSH(out, char) = '"';
    for (c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') {
            APR_ARRAY_PUSH(out, char) = '\\';
            APR_ARRAY_PUSH(out, char) = (char)*c;
        }
        else if (*c < 0x20 || *c >= 0x7f) {
            APR_ARRAY_PUSH(out, char) = '\\';
            APR_ARRAY_PUSH(out, char) = 'u';
            APR_ARRAY_PUSH(out, char) = '0';
            APR_ARRAY_PUSH(out, char) = '0';
            APR_ARRAY_PUSH(out, char) = hex[*c >> 4];
            APR_ARRAY_PUSH(out, char) = hex[*c & 0xf];
        }
        else {
            APR_ARRAY_PUSH(out, char) = (char)*c;
        }
    }
    APR_ARRAY_PUSH(out, char) = '"';
}

static void put_raw(apr_array_header_t *out, const char *s)
{
    apr_size_t n = strlen(s);

    while (n--) {
        APR_ARRAY_PUSH(out, char) = *s++;
    }
}

/* ,"key": then the value's start. */
static void put_key(apr_array_header_t *out, const char *key)
{
    put_raw(out, ",\"");
    put_raw(out, key);
    put_raw(out, "\":");
}

static void put_field(apr_array_header_t *out, const char *key,
                      const char *value)
{
    put_key(out, key);
    put_string(out, value);
}

const char *aura_audit_time(apr_pool_t *p, apr_time_t t)
{
    apr_time_exp_t x;

    apr_time_exp_gmt(&x, t);
    return apr_psprintf(p, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                        x.tm_year + 1900, x.tm_mon + 1, x.tm_mday,
                        x.tm_hour, x.tm_min, x.tm_sec, x.tm_usec / 1000);
}

const char *aura_audit_line(apr_pool_t *p, const aura_audit_fields_t *f)
{
    apr_array_header_t *out = apr_array_make(p, 512, sizeof(char));

    put_raw(out, apr_psprintf(p, "{\"seq\":%" APR_UINT64_T_FMT, f->seq));
    put_field(out, "prev", f->prev);
    put_field(out, "time", aura_audit_time(p, f->time));
    put_field(out, "instance", f->instance);
    put_field(out, "request_id", f->request_id);
    put_field(out, "actor", f->actor);
    put_field(out, "role", f->role);
    put_field(out, "org", f->org);
    put_field(out, "project", f->project);
    put_field(out, "target", f->target);
    put_field(out, "client", f->client);
    put_field(out, "action", f->action);
    put_field(out, "method", f->method);
    put_field(out, "route", f->route);
    put_field(out, "service", f->service);
    put_field(out, "path", f->path);
    put_key(out, "status");
    put_raw(out, f->status > 0 ? apr_itoa(p, f->status) : "null");
    put_field(out, "problem", f->problem);
    put_key(out, "authorized");
    put_raw(out, f->authorized ? "true" : "false");
    put_field(out, "outcome", f->outcome);
    put_raw(out, "}");
    APR_ARRAY_PUSH(out, char) = '\0';
    return out->elts;
}

void aura_audit_hash(const char *line, apr_size_t len,
                     char out[AURA_AUDIT_HASH_HEX + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[32];
    unsigned int n = 0, i;

    EVP_Digest(line, len, md, &n, EVP_sha256(), NULL);
    for (i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 0xf];
    }
    out[AURA_AUDIT_HASH_HEX] = '\0';
}

const char *aura_audit_outcome(const char *problem)
{
    if (!problem) {
        return "executed";
    }
    /* Sent, and no answer that says what happened: a timeout proves
     * nothing (DESIGN.md section 3), nor does a malformed reply. */
    if (!strcmp(problem, "upstream-timeout")
        || !strcmp(problem, "upstream-error")) {
        return "unknown";
    }
    return "refused";
}

apr_status_t aura_audit_tail(const char *buf, apr_size_t len, int whole,
                             apr_uint64_t *seq,
                             char hash[AURA_AUDIT_HASH_HEX + 1])
{
    static const char head[] = "{\"seq\":";
    apr_size_t end, start;
    apr_uint64_t n = 0;
    const char *d;

    if (len == 0) {
        return APR_NOTFOUND;
    }
    /* A last line without its newline is a write cut short. */
    if (buf[len - 1] != '\n') {
        return APR_EINVAL;
    }
    end = len - 1;
    start = end;
    while (start > 0 && buf[start - 1] != '\n') {
        start--;
    }
    if (start == 0 && !whole) {
        return APR_EINVAL;
    }
    if (end - start < sizeof(head) || memcmp(buf + start, head,
                                             sizeof(head) - 1)) {
        return APR_EINVAL;
    }
    d = buf + start + sizeof(head) - 1;
    if (*d < '1' || *d > '9') {
        return APR_EINVAL;
    }
    for (; *d >= '0' && *d <= '9'; d++) {
        if (n > (APR_UINT64_MAX - 9) / 10) {
            return APR_EINVAL;
        }
        n = n * 10 + (apr_uint64_t)(*d - '0');
    }
    if (*d != ',') {
        return APR_EINVAL;
    }
    *seq = n;
    aura_audit_hash(buf + start, end - start, hash);
    return APR_SUCCESS;
}
