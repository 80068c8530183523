/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_accesslog.c: what mod_log_config can print of a plane request,
 * and the request's entry in the shared traffic tables (/metrics).
 * The request's policy outcome is a LogFormat item of its own,
 * %{name}^au (registered with mod_log_config like mod_logio's %I and
 * %O; conf/aura-logformats.conf defines "aura" and "aura_json"), read
 * from the request's state when the line is written: nothing is copied
 * into r->notes, whose lookups (one checksum for every name that begins
 * with "aura") were most of the price of a line.
 *
 * Every value is restricted to characters that need no escaping in a
 * log line or in a JSON string: ids and names keep their letters,
 * digits and [._:@+=/-]; anything else becomes '_' (the path is
 * percent-encoded instead).  mod_log_config's own escaping (\xhh) is not
 * JSON, so the values must never need it.  Keys and tokens are never
 * among them: the actor of a key is a prefix of its hash, the path has
 * no query.  What mod_log_config prints of the URL itself (%r, %U%q, %q)
 * goes through aura_redact.c's rule: the request line and the unparsed
 * URI at post_read_request, the query string (which the service still
 * needs until then) right before the line is written.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_redact.h"
#include "core/aura_request.h"
#include "http/aura_accesslog.h"
#include "http/aura_problem.h"
#include "shm/aura_shm.h"
#include "trace/aura_tracing.h"

#include "apr_lib.h"
#include "apr_strings.h"
#include "mod_log_config.h"

#define LOG_TAG "^au"

/* [A-Za-z0-9._:@+=/-]: a table, since every character of every value
 * of every line is looked up. */
static const unsigned char safe_chars[256] = {
    ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
    ['.'] = 1, ['_'] = 1, [':'] = 1, ['@'] = 1, ['+'] = 1, ['='] = 1,
    ['/'] = 1, ['-'] = 1
};

static int safe_char(char c)
{
    return safe_chars[(unsigned char)c];
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
    if (r->proxyreq && aura_upstream_origin(r)) {
        return "http";
    }
    if (r->handler && !strcmp(r->handler, AURA_HANDLER_SERVICE)) {
        return "nats";
    }
    return "-";
}

/* The problem type the request ended with, NULL when none. */
static const char *problem_noted(request_rec *r)
{
    const char *detail;

    return aura_request_problem(r, &detail);
}

/* Which stage refused, from the problem the request ended with. */
static const char *limit_outcome(request_rec *r)
{
    const char *type = problem_noted(r);

    if (type && (!strcmp(type, "ip-rate-limit")
                 || !strcmp(type, "actor-quota"))) {
        return type;
    }
    return "pass";
}

static const char *breaker_outcome(request_rec *r)
{
    const char *type = problem_noted(r);

    return type && !strcmp(type, "breaker-open") ? "open" : "-";
}

static const char *service_name(request_rec *r)
{
    const aura_dir_conf_t *d = aura_dir_conf(r);

    return d->service != AURA_UNSET ? aura_service_names[d->service] : "-";
}

static const char *plane_name(request_rec *r)
{
    return aura_plane_name(aura_request_get(r)->plane);
}

static const char *problem_type(request_rec *r)
{
    return safe(r->pool, problem_noted(r), 64);
}

static const char *path(request_rec *r)
{
    return safe_path(r->pool, r->uri);
}

/* The one list of names: the lines and the check at start use it.  A
 * field is computed (get), or a string of the request's state, cleaned
 * and cut at max.  Each is read from the request as the client sent it
 * (the handler is registered to get the original of an internal
 * redirect): its route, its state. */
typedef struct {
    const char *name;
    const char *(*get)(request_rec *r);
    apr_size_t member;
    apr_size_t max;
} field_t;

#define STATE(m, max) NULL, APR_OFFSETOF(aura_request_t, m), max
static const field_t fields[] = {
    { "plane", plane_name, 0, 0 },
    { "service", service_name, 0, 0 },
    { "upstream", upstream_kind, 0, 0 },
    { "project", STATE(project, 64) },
    { "actor", STATE(actor, 128) },
    { "role", STATE(role, 32) },
    { "limit", limit_outcome, 0, 0 },
    { "breaker", breaker_outcome, 0, 0 },
    { "problem", problem_type, 0, 0 },
    { "request-id", STATE(request_id, 128) },
    { "trace-id", STATE(trace_id, 32) },
    { "path", path, 0, 0 },
    { NULL, NULL, 0, 0 }
};
#undef STATE

/* The first character first: a line looks a dozen names up. */
static const field_t *field_named(const char *name)
{
    const field_t *f;

    for (f = fields; f->name; f++) {
        if (f->name[0] == name[0] && !strcmp(f->name, name)) {
            return f;
        }
    }
    return NULL;
}

/* %{name}^au: "-" outside a plane (a request refused before any module
 * ran, another VirtualHost's line in a shared format). */
static const char *log_aura(request_rec *r, char *name)
{
    const aura_request_t *rq = aura_request_get(r);
    const field_t *f = rq ? field_named(name) : NULL;

    if (!f) {
        return "-";
    }
    if (f->get) {
        return f->get(r);
    }
    return safe(r->pool,
                *(const char *const *)((const char *)rq + f->member), f->max);
}

void aura_accesslog_pre_config(apr_pool_t *pconf)
{
    static char tag[] = LOG_TAG;
    APR_OPTIONAL_FN_TYPE(ap_register_log_handler) *reg
        = APR_RETRIEVE_OPTIONAL_FN(ap_register_log_handler);

    /* Without mod_log_config there is no access log to print into; a
     * LogFormat naming ^au cannot exist either. */
    if (reg) {
        reg(pconf, tag, log_aura, 1);
    }
}

/* The name inside the braces that end just before at. */
static const char *braced_name(apr_pool_t *p, const char *args,
                               const char *at)
{
    const char *open = at;

    while (open > args && open[-1] != '{') {
        open--;
    }
    return apr_pstrmemdup(p, open, (apr_size_t)(at - open));
}

/* Before 0.4.0 the fields were notes, %{aura-actor}n...: such a format
 * still parses but now logs "-" there, so it is named at start (only
 * aura-request-id is still a note). */
static void warn_old_notes(apr_pool_t *p, const ap_directive_t *dir)
{
    const char *at = dir->args;

    while ((at = strstr(at, "}n")) != NULL) {
        const char *name = braced_name(p, dir->args, at);

        if (!strncmp(name, "aura-", 5) && field_named(name + 5)
            && strcmp(name, "aura-request-id")) {
            ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_WARNING, 0, NULL,
                         AURA_LOGNO(00128)
                         "%s at %s:%d: the note %%{%s}n is not set since "
                         "mod_aura 0.4.0 and logs \"-\": write %%{%s}"
                         LOG_TAG " instead", dir->directive, dir->filename,
                         dir->line_num, name, name + 5);
        }
        at += 2;
    }
}

/* The %{name}^au items of one LogFormat or CustomLog: a name this file
 * does not know would log "-" forever, so it stops the start instead,
 * saying where it was written. */
static int check_formats(apr_pool_t *p, const ap_directive_t *dir)
{
    for (; dir; dir = dir->next) {
        const char *at = dir->args;

        if (dir->first_child && !check_formats(p, dir->first_child)) {
            return 0;
        }
        if ((strcasecmp(dir->directive, "LogFormat")
             && strcasecmp(dir->directive, "CustomLog")) || !at) {
            continue;
        }
        warn_old_notes(p, dir);
        while ((at = strstr(at, "}" LOG_TAG)) != NULL) {
            const char *name = braced_name(p, dir->args, at);

            if (!field_named(name)) {
                ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0,
                             NULL, AURA_LOGNO(00127)
                             "%s at %s:%d: %%{%s}" LOG_TAG " is not a "
                             "mod_aura log field (docs/logging.md lists "
                             "them)", dir->directive, dir->filename,
                             dir->line_num, name);
                return 0;
            }
            at += sizeof(LOG_TAG);
        }
    }
    return 1;
}

int aura_accesslog_check(apr_pool_t *ptemp)
{
    return check_formats(ptemp, ap_conftree);
}

int aura_log_transaction(request_rec *r)
{
    aura_request_t *rq = aura_request_get(r);

    if (!rq) {
        return DECLINED;
    }
    /* The 101 of an Upgrade: h2c is counted as its stream 1, once. */
    if (rq->priv->h2c_of == r && rq->priv->h2c) {
        return DECLINED;
    }
    /* The metrics count what the access log logs: once per request. */
    aura_shm_record(rq->plane, aura_dir_conf(r)->service, r->status,
                    apr_time_now() - rq->start);
    aura_tracing_finish(r);
    return DECLINED;
}

void aura_redact_request(request_rec *r)
{
    r->the_request = (char *)aura_redact_request_line(r->pool,
                                                      r->the_request);
    r->unparsed_uri = (char *)aura_redact_uri(r->pool, r->unparsed_uri);
}

/* Before mod_log_config (ordered so): every request of the chain, since
 * %<q and %>q print the original's or the last one's, and an internal
 * redirect keeps the client's query in REDIRECT_QUERY_STRING.  Also for
 * a request refused before post_read_request (a malformed header):
 * httpd logs it too.  Only on a plane: other VirtualHosts keep their
 * logs as they were. */
int aura_redact_log_transaction(request_rec *r)
{
    if (aura_server_plane(r->server) == AURA_PLANE_NONE) {
        return DECLINED;
    }
    while (r->prev) {
        r = r->prev;
    }
    for (; r; r = r->next) {
        const char *rqs;

        aura_redact_request(r);
        r->args = (char *)aura_redact_query(r->pool, r->args);
        r->parsed_uri.query = r->args;
        rqs = apr_table_get(r->subprocess_env, "REDIRECT_QUERY_STRING");
        if (rqs) {
            apr_table_setn(r->subprocess_env, "REDIRECT_QUERY_STRING",
                           aura_redact_query(r->pool, rqs));
        }
    }
    return DECLINED;
}
