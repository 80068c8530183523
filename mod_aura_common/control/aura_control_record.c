/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_control_record.c: an incident control as a record (see
 * aura_control_record.h).  Pure: the API (a POST) and NATS (another
 * instance, or anyone who can publish on the subject) hand it text, and
 * both go through the same checks here.
 */
#include "control/aura_control_record.h"
#include "control/aura_revoke_index.h"

#include "apr_strings.h"
#include "apr_lib.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#define WIRE_VERSION 1
#define SERVICE_MAX  32

static const char *const kind_names[AURA_CONTROL_KINDS] = {
    NULL, "maintenance", "block", "drain", "breaker", "rate", "quota",
    "revoke"
};

/* A zone name (AuraRateLimitZone) or a plan name: what the
 * configuration and the projects table hold. */
#define NAME_MAX_LEN 64
#define RATE_MAX     1000000
#define QUOTA_MAX    1000000000L

const char *aura_control_kind_name(int kind)
{
    return kind > AURA_CONTROL_FREE && kind < AURA_CONTROL_KINDS
           ? kind_names[kind] : NULL;
}

int aura_control_kind_of(const char *name)
{
    int k;

    for (k = AURA_CONTROL_FREE + 1; name && k < AURA_CONTROL_KINDS; k++) {
        if (!strcmp(name, kind_names[k])) {
            return k;
        }
    }
    return AURA_CONTROL_FREE;
}

aura_block_e aura_control_block_of(const char *target)
{
    if (!strncmp(target, "addr:", 5)) {
        return AURA_BLOCK_ADDR;
    }
    if (!strncmp(target, "key:", 4)) {
        return AURA_BLOCK_KEY;
    }
    if (!strncmp(target, "actor:", 6)) {
        return AURA_BLOCK_ACTOR;
    }
    return AURA_BLOCK_NONE;
}

/* Visible ASCII only: what a path, a subject or a name may hold here. */
static int visible(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f) {
            return 0;
        }
    }
    return 1;
}

/* Free text (by, reason): no control character, no DEL. */
static int text_ok(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f) {
            return 0;
        }
    }
    return 1;
}

static int service_ok(const char *s)
{
    apr_size_t n = strlen(s), i;

    if (n < 1 || n > SERVICE_MAX) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (!apr_islower(s[i]) && !apr_isdigit(s[i]) && s[i] != '-'
            && s[i] != '_') {
            return 0;
        }
    }
    return 1;
}

/* A positive decimal without sign or leading zero, at most max. */
static int number_ok(const char *s, long max, long *out)
{
    char *end;
    long v;

    if (!apr_isdigit(*s) || *s == '0' || strlen(s) > 9) {
        return 0;
    }
    v = strtol(s, &end, 10);
    if (*end || v < 1 || v > max) {
        return 0;
    }
    *out = v;
    return 1;
}

static int name_ok(const char *s)
{
    apr_size_t n = strlen(s), i;

    if (n < 1 || n > NAME_MAX_LEN) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (!apr_isalnum(s[i]) && s[i] != '-' && s[i] != '_'
            && s[i] != '.') {
            return 0;
        }
    }
    return 1;
}

apr_status_t aura_control_rate_value(const char *value, apr_uint64_t *rate,
                                     apr_uint64_t *period_s)
{
    apr_size_t n = strlen(value);
    char num[16];
    long v;

    if (n < 4 || n >= sizeof(num)
        || (strcmp(value + n - 3, "r/s") && strcmp(value + n - 3, "r/m"))) {
        return APR_EINVAL;
    }
    memcpy(num, value, n - 3);
    num[n - 3] = '\0';
    if (!number_ok(num, RATE_MAX, &v)) {
        return APR_EINVAL;
    }
    *rate = (apr_uint64_t)v;
    *period_s = value[n - 1] == 's' ? 1 : 60;
    return APR_SUCCESS;
}

int aura_control_rate_below(apr_uint64_t a_rate, apr_uint64_t a_period,
                            apr_uint64_t b_rate, apr_uint64_t b_period)
{
    /* a_rate / a_period < b_rate / b_period, in integers. */
    return a_rate * b_period < b_rate * a_period;
}

static void clear_host_bits(aura_control_net_t *net)
{
    int len = net->family == 4 ? 4 : 16, i;

    for (i = 0; i < len; i++) {
        int keep = net->bits - 8 * i;

        if (keep <= 0) {
            net->addr[i] = 0;
        }
        else if (keep < 8) {
            net->addr[i] &= (unsigned char)(0xff << (8 - keep));
        }
    }
}

static const unsigned char v4_mapped[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

apr_status_t aura_control_net_parse(const char *text,
                                    aura_control_net_t *net)
{
    char host[64];
    const char *slash = strchr(text, '/');
    apr_size_t n = slash ? (apr_size_t)(slash - text) : strlen(text);
    long bits;

    memset(net, 0, sizeof(*net));
    if (n == 0 || n >= sizeof(host)) {
        return APR_EINVAL;
    }
    memcpy(host, text, n);
    host[n] = '\0';
    if (inet_pton(AF_INET, host, net->addr) == 1) {
        net->family = 4;
        net->bits = 32;
    }
    else if (strchr(host, ':') && inet_pton(AF_INET6, host, net->addr) == 1) {
        net->family = 6;
        net->bits = 128;
    }
    else {
        return APR_EINVAL;
    }
    if (slash) {
        /* "/0" blocks a whole family: allowed, it is the operator's. */
        if (!strcmp(slash + 1, "0")) {
            bits = 0;
        }
        else if (!number_ok(slash + 1, net->bits, &bits)) {
            return APR_EINVAL;
        }
        net->bits = (int)bits;
    }
    /* ::ffff:a.b.c.d/n is the IPv4 network a.b.c.d/(n - 96). */
    if (net->family == 6 && net->bits >= 96
        && !memcmp(net->addr, v4_mapped, sizeof(v4_mapped))) {
        memmove(net->addr, net->addr + 12, 4);
        memset(net->addr + 4, 0, 12);
        net->family = 4;
        net->bits -= 96;
    }
    clear_host_bits(net);
    return APR_SUCCESS;
}

int aura_control_net_match(const aura_control_net_t *net, int family,
                           const unsigned char *addr)
{
    unsigned char a[16];
    int full, rest;

    if (family == 6 && !memcmp(addr, v4_mapped, sizeof(v4_mapped))) {
        memcpy(a, addr + 12, 4);
        family = 4;
    }
    else {
        memcpy(a, addr, family == 4 ? 4 : 16);
    }
    if (family != net->family) {
        return 0;
    }
    full = net->bits / 8;
    rest = net->bits % 8;
    if (memcmp(a, net->addr, (size_t)full)) {
        return 0;
    }
    return !rest
           || (a[full] & (unsigned char)(0xff << (8 - rest)))
              == net->addr[full];
}

static const char *net_text(apr_pool_t *p, const aura_control_net_t *net)
{
    char buf[INET6_ADDRSTRLEN];

    if (!inet_ntop(net->family == 4 ? AF_INET : AF_INET6, net->addr, buf,
                   sizeof(buf))) {
        return NULL;
    }
    return apr_psprintf(p, "%s/%d", buf, net->bits);
}

int aura_control_path_match(const char *prefix, const char *path)
{
    apr_size_t n = strlen(prefix);

    if (strncmp(path, prefix, n)) {
        return 0;
    }
    return path[n] == '\0' || path[n] == '/' || (n && prefix[n - 1] == '/');
}

/* A block's target, canonical into ct. */
static const char *canon_block(apr_pool_t *p, const char *t, char *ct)
{
    const char *text = NULL;

    switch (aura_control_block_of(t)) {
    case AURA_BLOCK_ADDR: {
        aura_control_net_t net;

        if (aura_control_net_parse(t + 5, &net) != APR_SUCCESS
            || !(text = net_text(p, &net))) {
            return "a block's addr: must be an IPv4 or IPv6 address or "
                   "network (addr:192.0.2.7, addr:2001:db8::/32)";
        }
        text = apr_pstrcat(p, "addr:", text, NULL);
        break;
    }
    case AURA_BLOCK_KEY: {
        char *k = apr_pstrdup(p, t);
        apr_size_t i;

        if (strlen(t) != 4 + AURA_CONTROL_ID_HEX) {
            return "a block's key: is the 16 hex digits the logs print "
                   "(key:<hash prefix>)";
        }
        for (i = 4; k[i]; i++) {
            if (!apr_isxdigit(k[i])) {
                return "a block's key: is the 16 hex digits the logs "
                       "print (key:<hash prefix>)";
            }
            k[i] = (char)apr_tolower(k[i]);
        }
        text = k;
        break;
    }
    case AURA_BLOCK_ACTOR:
        if (!t[6] || !visible(t + 6)) {
            return "a block's actor: is a token's subject (visible "
                   "characters)";
        }
        text = t;
        break;
    default:
        return "a block's target is addr:<address or network>, "
               "key:<hash prefix> or actor:<subject>";
    }
    if (strlen(text) > AURA_CONTROL_TARGET_MAX) {
        return "the target is too long";
    }
    strcpy(ct, text);
    return NULL;
}

static const char *canon_value(int kind, const char *v, char *cv)
{
    long n;

    switch (kind) {
    case AURA_CONTROL_MAINTENANCE:
        if (*v && !number_ok(v, AURA_CONTROL_RETRY_MAX, &n)) {
            return "a maintenance's value is its Retry-After in seconds "
                   "(1 to 86400), or empty for the time until it expires";
        }
        break;
    case AURA_CONTROL_BREAKER:
        if (strcmp(v, "open") && strcmp(v, "closed")) {
            return "a breaker's value is open or closed";
        }
        break;
    case AURA_CONTROL_RATE: {
        apr_uint64_t rate, period;

        if (aura_control_rate_value(v, &rate, &period) != APR_SUCCESS) {
            return "a rate's value is <n>r/s or <n>r/m (n from 1 to "
                   "1000000)";
        }
        break;
    }
    case AURA_CONTROL_QUOTA:
        if (strcmp(v, "0") && !number_ok(v, QUOTA_MAX, &n)) {
            return "a quota's value is the number of requests per window "
                   "(0 to 1000000000)";
        }
        break;
    default:
        if (*v) {
            return "this kind takes no value";
        }
    }
    strcpy(cv, v);
    return NULL;
}

static const char *q_name_error(int kind)
{
    return kind == AURA_CONTROL_RATE
           ? "a rate's target is a zone name (AuraRateLimitZone)"
           : "a quota's target is a plan name (AuraPlanQuota)";
}

const char *aura_control_canon(apr_pool_t *p, int kind, const char *target,
                               const char *value, char *ctarget,
                               char *cvalue)
{
    const char *err = NULL;

    if (!value) {
        value = "";
    }
    if (!target || !*target) {
        return "a control needs a target";
    }
    if (strlen(target) > AURA_CONTROL_TARGET_MAX) {
        return "the target is too long";
    }
    if (strlen(value) > AURA_CONTROL_VALUE_MAX) {
        return "the value is too long";
    }
    switch (kind) {
    case AURA_CONTROL_MAINTENANCE:
        if (*target != '/' || !visible(target) || strpbrk(target, "?#")) {
            err = "a maintenance's target is a path prefix (/v1/storage/)";
        }
        else {
            strcpy(ctarget, target);
        }
        break;
    case AURA_CONTROL_BLOCK:
        err = canon_block(p, target, ctarget);
        break;
    case AURA_CONTROL_RATE:
    case AURA_CONTROL_QUOTA:
        if (!name_ok(target)) {
            err = q_name_error(kind);
        }
        else {
            strcpy(ctarget, target);
        }
        break;
    case AURA_CONTROL_REVOKE:
        /* Its value is part of its check: done there. */
        return aura_revoke_canon(target, value, ctarget, cvalue);
    case AURA_CONTROL_DRAIN:
    case AURA_CONTROL_BREAKER:
        if (!service_ok(target)) {
            err = "the target is a service name (AuraService's first word)";
        }
        else {
            strcpy(ctarget, target);
        }
        break;
    default:
        return "unknown kind";
    }
    return err ? err : canon_value(kind, value, cvalue);
}

void aura_control_id(int kind, const char *target,
                     char out[AURA_CONTROL_ID_HEX + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[SHA256_DIGEST_LENGTH];
    unsigned char buf[1 + AURA_CONTROL_TARGET_MAX];
    apr_size_t n = strlen(target);
    int i;

    if (n > AURA_CONTROL_TARGET_MAX) {
        n = AURA_CONTROL_TARGET_MAX;
    }
    buf[0] = (unsigned char)kind;
    memcpy(buf + 1, target, n);
    SHA256(buf, n + 1, md);
    for (i = 0; i < AURA_CONTROL_ID_HEX / 2; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[AURA_CONTROL_ID_HEX] = '\0';
}

apr_status_t aura_control_ttl(const char *text, apr_interval_time_t *out)
{
    apr_size_t n = text ? strlen(text) : 0;
    char num[16];
    long v, unit = 1;

    if (n < 1 || n >= sizeof(num)) {
        return APR_EINVAL;
    }
    memcpy(num, text, n + 1);
    switch (num[n - 1]) {
    case 's': unit = 1; num[--n] = '\0'; break;
    case 'm': unit = 60; num[--n] = '\0'; break;
    case 'h': unit = 3600; num[--n] = '\0'; break;
    case 'd': unit = 86400; num[--n] = '\0'; break;
    default: break;
    }
    if (!number_ok(num, 7L * 86400, &v)
        || apr_time_from_sec((apr_time_t)v * unit) > AURA_CONTROL_TTL_MAX) {
        return APR_EINVAL;
    }
    *out = apr_time_from_sec((apr_time_t)v * unit);
    return *out >= AURA_CONTROL_TTL_MIN ? APR_SUCCESS : APR_EINVAL;
}

char *aura_control_encode(apr_pool_t *p, const aura_control_t *c)
{
    json_t *o = json_object();
    char *text, *out;

    json_object_set_new(o, "v", json_integer(WIRE_VERSION));
    json_object_set_new(o, "id", json_string(c->id));
    json_object_set_new(o, "kind", json_string(
        aura_control_kind_name((int)c->kind) ? aura_control_kind_name(
            (int)c->kind) : "?"));
    json_object_set_new(o, "target", json_string(c->target));
    json_object_set_new(o, "value", json_string(c->value));
    json_object_set_new(o, "updated", json_integer(c->updated));
    json_object_set_new(o, "expires", json_integer(c->expires));
    /* by and reason may hold any byte but control characters: jansson
     * refuses what is not UTF-8, so they are sent as they were taken
     * (the API takes UTF-8 only). */
    json_object_set_new(o, "by", json_string(c->by));
    json_object_set_new(o, "reason", json_string(c->reason));
    json_object_set_new(o, "lifted", json_boolean(c->lifted));
    text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!text) {
        return NULL;
    }
    out = apr_pstrdup(p, text);
    free(text);
    return out;
}

/* A string member of at most max bytes into buf; NULL or what is
 * wrong. */
static const char *get_str(json_t *o, const char *name, apr_size_t max,
                           char *buf)
{
    json_t *v = json_object_get(o, name);

    if (!json_is_string(v)) {
        return name;
    }
    if (json_string_length(v) > max
        || strlen(json_string_value(v)) != json_string_length(v)) {
        return name;
    }
    strcpy(buf, json_string_value(v));
    return NULL;
}

static const char *get_time(json_t *o, const char *name, apr_int64_t *out)
{
    json_t *v = json_object_get(o, name);

    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        return name;
    }
    *out = (apr_int64_t)json_integer_value(v);
    return NULL;
}

/* Every field there and of its type; NULL or the first bad field. */
static const char *fields(json_t *o, aura_control_t *c, char *kind)
{
    const char *bad;
    json_t *v = json_object_get(o, "v"), *lifted;

    if (!json_is_integer(v) || json_integer_value(v) != WIRE_VERSION) {
        return "v";
    }
    if ((bad = get_str(o, "id", AURA_CONTROL_ID_HEX, c->id))
        || (bad = get_str(o, "kind", 15, kind))
        || (bad = get_str(o, "target", AURA_CONTROL_TARGET_MAX, c->target))
        || (bad = get_str(o, "value", AURA_CONTROL_VALUE_MAX, c->value))
        || (bad = get_str(o, "by", AURA_CONTROL_BY_MAX, c->by))
        || (bad = get_str(o, "reason", AURA_CONTROL_REASON_MAX, c->reason))
        || (bad = get_time(o, "updated", &c->updated))
        || (bad = get_time(o, "expires", &c->expires))) {
        return bad;
    }
    lifted = json_object_get(o, "lifted");
    if (!json_is_boolean(lifted)) {
        return "lifted";
    }
    c->lifted = json_is_true(lifted) ? 1 : 0;
    return NULL;
}

const char *aura_control_decode(apr_pool_t *p, const char *buf,
                                apr_size_t len, aura_control_t *out)
{
    char kind[16], ct[AURA_CONTROL_TARGET_MAX + 1];
    char cv[AURA_CONTROL_VALUE_MAX + 1], id[AURA_CONTROL_ID_HEX + 1];
    json_error_t jerr;
    json_t *o;
    const char *bad;

    memset(out, 0, sizeof(*out));
    if (len == 0 || len > AURA_CONTROL_WIRE_MAX) {
        return "no record: empty or too long";
    }
    o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        return "no record: not a JSON object";
    }
    bad = fields(o, out, kind);
    json_decref(o);
    if (bad) {
        return apr_psprintf(p, "no record: field %s missing or invalid",
                            bad);
    }
    out->kind = (apr_uint32_t)aura_control_kind_of(kind);
    if (!out->kind) {
        return "no record: unknown kind";
    }
    if ((bad = aura_control_canon(p, (int)out->kind, out->target,
                                  out->value, ct, cv))) {
        return apr_pstrcat(p, "invalid record: ", bad, NULL);
    }
    if (strcmp(ct, out->target) || strcmp(cv, out->value)) {
        return "invalid record: target or value not in canonical form";
    }
    aura_control_id((int)out->kind, out->target, id);
    if (strcmp(id, out->id)) {
        return "invalid record: its id is not that of its kind and target";
    }
    if (!text_ok(out->by) || !text_ok(out->reason)) {
        return "invalid record: control characters in by or reason";
    }
    /* A revocation lives until the tokens it names are dead: up to
     * AuraTokenMaxLifetime after its time, which may lie a little
     * ahead, plus the leeways (aura_revoke_index.h). */
    if (out->expires > out->updated + (out->kind == AURA_CONTROL_REVOKE
                                       ? AURA_REVOKE_TTL_MAX
                                       : AURA_CONTROL_TTL_MAX)) {
        return out->kind == AURA_CONTROL_REVOKE
               ? "invalid record: it expires more than 8 days after its "
                 "revision"
               : "invalid record: it expires more than 7 days after its "
                 "revision";
    }
    return NULL;
}

static int cmp64(apr_int64_t a, apr_int64_t b)
{
    return a < b ? -1 : a > b;
}

int aura_control_newer(const aura_control_t *a, const aura_control_t *b)
{
    int d = cmp64(a->updated, b->updated);

    if (!d) {
        d = cmp64(a->lifted, b->lifted);
    }
    if (!d) {
        d = cmp64(a->expires, b->expires);
    }
    if (!d) {
        d = strcmp(a->value, b->value);
    }
    if (!d) {
        d = strcmp(a->by, b->by);
    }
    if (!d) {
        d = strcmp(a->reason, b->reason);
    }
    return d > 0;
}

int aura_control_active(const aura_control_t *c, apr_time_t now)
{
    return c->kind != AURA_CONTROL_FREE && !c->lifted && c->expires > now;
}
