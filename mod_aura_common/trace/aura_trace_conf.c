/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_trace_conf.c: the AuraTrace* directives (see aura_trace_conf.h).
 * Global only: one exporter thread per child serves every VirtualHost,
 * so there is one collector, one sampling ratio and one resource.  The
 * one exception, AuraTraceTrustParent, is per VirtualHost: a public
 * data plane and an internal management plane trust different clients.
 * It is not offered per Location: the decision is made in
 * post_read_request, before any Location is walked, and it is about the
 * client, not the route.
 * Files named by the TLS directives are checked for reading when the
 * directive is read, so a typo stops the start (apachectl -t too)
 * rather than every export.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "trace/aura_span.h"
#include "trace/aura_trace_conf.h"

#include "apr_lib.h"
#include "apr_strings.h"

static aura_trace_conf_t *trace_of(cmd_parms *cmd)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    if (!c->trace) {
        c->trace = apr_pcalloc(cmd->pool, sizeof(*c->trace));
        c->trace->verify = AURA_UNSET;
        c->trace->ratio_ppm = AURA_UNSET;
        c->trace->queue = AURA_UNSET;
        c->trace->batch = AURA_UNSET;
        c->trace->timeout = AURA_UNSET;
    }
    return c->trace;
}

const aura_trace_conf_t *aura_trace_conf(const server_rec *s)
{
    const aura_trace_conf_t *t = aura_server_conf(s)->trace;

    return t && t->endpoint ? t : NULL;
}

int aura_trace_conf_ratio(const aura_trace_conf_t *t)
{
    return t->ratio_ppm != AURA_UNSET ? t->ratio_ppm : AURA_SAMPLE_ONE;
}

int aura_trace_conf_queue(const aura_trace_conf_t *t)
{
    return t->queue != AURA_UNSET ? t->queue : AURA_TRACE_DEFAULT_QUEUE;
}

int aura_trace_conf_batch(const aura_trace_conf_t *t)
{
    int b = t->batch != AURA_UNSET ? t->batch : AURA_TRACE_DEFAULT_BATCH;
    int q = aura_trace_conf_queue(t);

    /* The default batch never exceeds a smaller queue set alone. */
    return b > q ? q : b;
}

apr_interval_time_t aura_trace_conf_timeout(const aura_trace_conf_t *t)
{
    return t->timeout != AURA_UNSET ? t->timeout
                                    : AURA_TRACE_DEFAULT_TIMEOUT;
}

const apr_array_header_t *aura_trace_conf_resource(apr_pool_t *p,
                                                   const aura_trace_conf_t *t)
{
    apr_array_header_t *a = apr_array_make(p, 8, sizeof(const char *));
    const char *const *kv;
    int i, named = 0;

    for (i = 0; t->resource && i < t->resource->nelts; i += 2) {
        kv = (const char *const *)t->resource->elts;
        named |= !strcmp(kv[i], "service.name");
    }
    if (!named) {
        APR_ARRAY_PUSH(a, const char *) = "service.name";
        APR_ARRAY_PUSH(a, const char *) = AURA_TRACE_DEFAULT_SERVICE;
    }
    if (t->resource) {
        apr_array_cat(a, t->resource);
    }
    return a;
}

int aura_trace_check_config(server_rec *s)
{
    const aura_trace_conf_t *t = aura_server_conf(s)->trace;

    if (t && !t->endpoint) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_WARNING, 0, NULL,
                     AURA_LOGNO(01905) "AuraTrace* directives without "
                     "AuraTraceEndpoint: tracing is off");
    }
    if (t && t->batch != AURA_UNSET && t->batch > aura_trace_conf_queue(t)) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                     AURA_LOGNO(01906) "AuraTraceBatchSize %d at %s is larger "
                     "than AuraTraceQueueSize (%d): a batch is taken from "
                     "the queue", t->batch, t->batch_at,
                     aura_trace_conf_queue(t));
        return 0;
    }
    return 1;
}

const char *aura_set_trace_endpoint(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);
    apr_uri_t uri;
    apr_size_t n;

    (void)d;
    if (err) {
        return err;
    }
    if (apr_uri_parse(cmd->temp_pool, a, &uri) != APR_SUCCESS
        || !uri.scheme || !uri.hostname || !*uri.hostname
        || (strcasecmp(uri.scheme, "http") && strcasecmp(uri.scheme, "https"))
        || uri.query || uri.fragment || uri.user || uri.password) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not an http:// or "
                            "https:// URL without query or credentials "
                            "(e.g. http://127.0.0.1:4318)", cmd->cmd->name,
                            a);
    }
    /* As OTEL_EXPORTER_OTLP_ENDPOINT: the signal's path is added. */
    n = strlen(a);
    while (n && a[n - 1] == '/') {
        n--;
    }
    trace_of(cmd)->endpoint = apr_pstrcat(cmd->pool,
                                          apr_pstrmemdup(cmd->pool, a, n),
                                          "/v1/traces", NULL);
    return NULL;
}

const char *aura_set_trace_header(cmd_parms *cmd, void *d, const char *name,
                                  const char *value)
{
    const char *err = aura_global_only(cmd), *s;
    aura_trace_conf_t *t;

    (void)d;
    if (err) {
        return err;
    }
    for (s = name; *s; s++) {
        if (!apr_isalnum(*s) && !strchr("!#$%&'*+-.^_`|~", *s)) {
            break;
        }
    }
    if (!*name || *s) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a header name",
                            cmd->cmd->name, name);
    }
    for (s = value; *s; s++) {
        if ((unsigned char)*s < 0x20 && *s != '\t') {
            return apr_psprintf(cmd->pool, "%s: the value of %s holds a "
                                "control character", cmd->cmd->name, name);
        }
    }
    t = trace_of(cmd);
    if (!t->headers) {
        t->headers = apr_array_make(cmd->pool, 2, sizeof(const char *));
    }
    /* Never logged: it is usually the collector's credential. */
    APR_ARRAY_PUSH(t->headers, const char *) =
        apr_pstrcat(cmd->pool, name, ": ", value, NULL);
    return NULL;
}

static const char *readable(cmd_parms *cmd, const char *arg,
                            const char **out)
{
    const char *path = ap_server_root_relative(cmd->pool, arg);
    apr_file_t *f;

    if (!path || apr_file_open(&f, path, APR_FOPEN_READ, 0, cmd->temp_pool)
                 != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: cannot read '%s'",
                            cmd->cmd->name, arg);
    }
    apr_file_close(f);
    *out = path;
    return NULL;
}

const char *aura_set_trace_ca(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    return err ? err : readable(cmd, a, &trace_of(cmd)->ca_file);
}

const char *aura_set_trace_cert(cmd_parms *cmd, void *d, const char *cert,
                                const char *key)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    if (!err) {
        err = readable(cmd, cert, &trace_of(cmd)->cert_file);
    }
    return err ? err : readable(cmd, key, &trace_of(cmd)->key_file);
}

const char *aura_set_trace_verify(cmd_parms *cmd, void *d, int on)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    if (!err) {
        trace_of(cmd)->verify = on;
    }
    return err;
}

/* "0", "1", "0.25", "1e-3" are all read exactly enough: millionths. */
const char *aura_set_trace_ratio(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);
    char *end;
    double v;

    (void)d;
    if (err) {
        return err;
    }
    v = strtod(a, &end);
    if (!*a || *end || !(v >= 0.0 && v <= 1.0)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a number between "
                            "0 and 1 (e.g. 0.1)", cmd->cmd->name, a);
    }
    trace_of(cmd)->ratio_ppm = (int)(v * AURA_SAMPLE_ONE + 0.5);
    return NULL;
}

const char *aura_set_trace_resource(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd), *eq = strchr(a, '='), *s;
    aura_trace_conf_t *t;

    (void)d;
    if (err) {
        return err;
    }
    for (s = a; *s; s++) {
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f) {
            break;
        }
    }
    if (!eq || eq == a || !eq[1] || *s) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not key=value "
                            "(printable ASCII, both not empty)",
                            cmd->cmd->name, a);
    }
    t = trace_of(cmd);
    if (!t->resource) {
        t->resource = apr_array_make(cmd->pool, 4, sizeof(const char *));
    }
    APR_ARRAY_PUSH(t->resource, const char *) =
        apr_pstrmemdup(cmd->pool, a, eq - a);
    APR_ARRAY_PUSH(t->resource, const char *) = apr_pstrdup(cmd->pool,
                                                            eq + 1);
    return NULL;
}

/* AuraTraceQueueSize and AuraTraceBatchSize. */
const char *aura_set_trace_number(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);
    aura_trace_conf_t *t;
    int *field;

    (void)d;
    if (err) {
        return err;
    }
    t = trace_of(cmd);
    field = (int *)((char *)t + (apr_size_t)cmd->info);
    err = aura_parse_int(cmd, a, 1, 1000000, field);
    if (!err && field == &t->batch) {
        t->batch_at = apr_psprintf(cmd->pool, "%s:%d",
                                   cmd->directive->filename,
                                   cmd->directive->line_num);
    }
    return err;
}

const char *aura_set_trace_timeout(cmd_parms *cmd, void *d, const char *a)
{
    const char *err = aura_global_only(cmd);

    (void)d;
    return err ? err : aura_parse_duration(cmd, a,
                                           apr_time_from_msec(100),
                                           apr_time_from_sec(120),
                                           &trace_of(cmd)->timeout);
}

int aura_trace_trusts_parent(const server_rec *s, apr_sockaddr_t *sa)
{
    const aura_trace_trust_t *t = aura_server_conf(s)->trace_trust;
    int i;

    if (!t || t->mode == AURA_TRUST_NONE || !sa) {
        return 0;
    }
    if (t->mode == AURA_TRUST_ANY) {
        return 1;
    }
    for (i = 0; i < t->subnets->nelts; i++) {
        if (apr_ipsubnet_test(APR_ARRAY_IDX(t->subnets, i, apr_ipsubnet_t *),
                              sa)) {
            return 1;
        }
    }
    return 0;
}

/* One word of AuraTraceTrustParent: none, any, an address or a network
 * (httpd's and mod_remoteip's apr_ipsubnet_create(); an IPv4 network
 * also matches IPv4-mapped IPv6 clients). */
const char *aura_set_trace_trust(cmd_parms *cmd, void *d, const char *a)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    aura_trust_mode_e mode = AURA_TRUST_LIST;
    char *ip, *mask;
    apr_ipsubnet_t *sub;

    (void)d;
    if (!strcasecmp(a, "none")) {
        mode = AURA_TRUST_NONE;
    }
    else if (!strcasecmp(a, "any")) {
        mode = AURA_TRUST_ANY;
    }
    /* The first word of this scope makes its list: a VirtualHost's
     * replaces the main server's (aura_merge_server_conf). */
    if (!c->trace_trust) {
        c->trace_trust = apr_pcalloc(cmd->pool, sizeof(*c->trace_trust));
        c->trace_trust->mode = mode;
    }
    else if (mode != AURA_TRUST_LIST
             || c->trace_trust->mode != AURA_TRUST_LIST) {
        return apr_psprintf(cmd->pool, "%s: 'none' and 'any' stand alone "
                            "in a scope, without addresses or the other "
                            "keyword ('%s' follows another word)",
                            cmd->cmd->name, a);
    }
    if (mode != AURA_TRUST_LIST) {
        return NULL;
    }
    ip = apr_pstrdup(cmd->temp_pool, a);
    if ((mask = strchr(ip, '/'))) {
        *mask++ = '\0';
    }
    if (apr_ipsubnet_create(&sub, ip, mask, cmd->pool) != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not an IP address or "
                            "network (a.b.c.d, a.b.c.d/bits, ipv6/bits), "
                            "none or any", cmd->cmd->name, a);
    }
    if (!c->trace_trust->subnets) {
        c->trace_trust->subnets = apr_array_make(cmd->pool, 4, sizeof(sub));
    }
    APR_ARRAY_PUSH(c->trace_trust->subnets, apr_ipsubnet_t *) = sub;
    return NULL;
}
