/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_accesslog.c: what mod_log_config can print of a plane request,
 * and the request's entry in the shared traffic tables (/metrics).
 * Just before mod_log_config writes its line, the request's policy
 * outcome is put in r->notes, for %{aura-...}n in a LogFormat
 * (conf/aura-logformats.conf defines "aura" and "aura_json").
 *
 * Every value is restricted to characters that need no escaping in a
 * log line or in a JSON string: ids and names keep their letters,
 * digits and [._:@+=/-]; anything else becomes '_' (the path is
 * percent-encoded instead).  mod_log_config's own escaping (\xhh) is not
 * JSON, so the notes must never need it.  Keys and tokens are never
 * among them: the actor of a key is a prefix of its hash, the request
 * line was redacted at post_read_request.
 */
#include "aura_private.h"

#include "apr_lib.h"
#include "apr_strings.h"

static int safe_char(char c)
{
    return apr_isalnum(c) || (c && ap_strchr_c("._:@+=/-", c));
}

static const char *safe(apr_pool_t *p, const char *v, apr_size_t max)
{
    char *out;
    apr_size_t i;

    if (!v || !*v) {
        return "-";
    }
    /* Most values need nothing: no copy then. */
    for (i = 0; i < max && v[i] && safe_char(v[i]); i++) {
    }
    if (!v[i]) {
        return v;
    }
    out = apr_pstrndup(p, v, max);
    for (i = 0; out[i]; i++) {
        if (!safe_char(out[i])) {
            out[i] = '_';
        }
    }
    return out;
}

/* The path, percent-encoded beyond the safe characters. */
static const char *safe_path(apr_pool_t *p, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    apr_size_t n = 0, i;
    char *out;

    if (!path) {
        return "-";
    }
    out = apr_palloc(p, 3 * strlen(path) + 1);
    for (i = 0; path[i] && n < 3 * 2048; i++) {
        unsigned char c = (unsigned char)path[i];

        if (safe_char((char)c) && c != '%') {
            out[n++] = (char)c;
        }
        else {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 0x0f];
        }
    }
    out[n] = '\0';
    return out;
}

static const char *upstream_kind(request_rec *r)
{
    if (r->proxyreq && apr_table_get(r->notes, AURA_NOTE_ORIGIN)) {
        return "http";
    }
    if (r->handler && !strcmp(r->handler, AURA_HANDLER_SERVICE)) {
        return "nats";
    }
    return "-";
}

/* Which stage refused, from the problem the request ended with. */
static void outcomes(request_rec *r, const char **limit,
                     const char **breaker)
{
    const char *type = apr_table_get(r->notes, "aura-problem-type");

    *limit = "pass";
    *breaker = "-";
    if (!type) {
        return;
    }
    if (!strcmp(type, "ip-rate-limit") || !strcmp(type, "actor-quota")) {
        *limit = type;
    }
    else if (!strcmp(type, "breaker-open")) {
        *breaker = "open";
    }
}

int aura_log_transaction(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);
    const aura_dir_conf_t *d;
    const char *limit, *breaker;

    if (!rq) {
        return DECLINED;
    }
    d = aura_dir_conf(r);
    outcomes(r, &limit, &breaker);
    /* Added, not set: this hook runs once per request, first, on notes
     * no one else names (an internal redirect's request has notes of its
     * own), so there is nothing to replace and no need to search. */
    apr_table_addn(r->notes, "aura-plane", aura_plane_name(rq->plane));
    apr_table_addn(r->notes, "aura-request-id",
                   safe(r->pool, rq->request_id, 128));
    apr_table_addn(r->notes, "aura-trace-id",
                   safe(r->pool, rq->trace_id, 32));
    apr_table_addn(r->notes, "aura-project", safe(r->pool, rq->project, 64));
    apr_table_addn(r->notes, "aura-actor", safe(r->pool, rq->actor, 128));
    apr_table_addn(r->notes, "aura-role", safe(r->pool, rq->role, 32));
    apr_table_addn(r->notes, "aura-service",
                   d->service != AURA_UNSET ? aura_service_names[d->service]
                                            : "-");
    apr_table_addn(r->notes, "aura-upstream", upstream_kind(r));
    apr_table_addn(r->notes, "aura-limit", limit);
    apr_table_addn(r->notes, "aura-breaker", breaker);
    apr_table_addn(r->notes, "aura-path", safe_path(r->pool, r->uri));
    /* The metrics count what the access log logs: once per request. */
    aura_shm_record(rq->plane, d->service, r->status,
                    apr_time_now() - rq->start);
    return DECLINED;
}
