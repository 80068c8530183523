/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_audit.c: the audit log (AuraAuditLog): one hash-chained JSON line
 * per action (aura_audit_record.h), appended to the operator's file.
 *
 * The file is opened by the parent in post_config, as httpd opens its
 * own logs (the children could not open /var/log/apache2 as User), and
 * every child appends to the descriptor it inherited, O_APPEND.  A
 * graceful restart opens it again: after logrotate renames it, the new
 * generation writes to the new file.
 *
 * One chain per instance: every child of every generation appends under
 * the "aura-audit" global mutex, made once (s->process->pool, kept in
 * retained data) so that the children of two generations, which overlap
 * during a graceful restart, take the same lock.  Inside it: find the
 * chain's head, format the line, write it, fdatasync, remember the head.
 * That is I/O under a lock on purpose (unlike aura-shm's): serializing
 * the chain is the point, and management mutations are few.
 *
 * The head is the last line of the file written to, cached in the
 * shared segment (aura_audit_shm_t) with the file's device, inode and
 * size: when they still match, no read; otherwise (another generation
 * wrote, a rotation, a new segment) the file's tail is read.  An empty
 * file continues the chain of the cached head (the previous file's
 * last record): that is how a rotated log stays linked to the one
 * before.  With neither, the chain starts at seq 1 from the genesis.
 *
 * AuraAuditSubject: once a record is on disk, the same line is also
 * published on NATS, so that a collector keeps a copy the host cannot
 * edit afterwards.  The file stays the record of truth: a line NATS
 * does not take (no connection, no buffer while reconnecting) is logged
 * and stays in the file only.  Publishing is nats.c's buffered write,
 * outside the mutex, never waited for: the request is already answered.
 * Two children may publish in an order other than the chain's; the
 * records' seq restores it.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "core/aura_request.h"
#include "core/aura_mutex.h"
#include "audit/aura_audit.h"
#include "shm/aura_shm.h"
#include "nats/aura_nats.h"
#include "nats/aura_subject.h"

#include "http_core.h"
#include "util_mutex.h"
#include "apr_global_mutex.h"
#include "apr_portable.h"
#include "apr_strings.h"

#include <nats/nats.h>

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* How much of the file's end is read to find its last line: more than
 * any record can take (the request line is bounded by LimitRequestLine,
 * 8 KiB by default; a record holds the path once). */
#define AUDIT_TAIL_MAX (64 * 1024)
#define AUDIT_RETAINED_KEY "mod_aura_common-audit-1"

/* Written in post_config and child_init only. */
static apr_global_mutex_t *audit_mutex;
static apr_file_t *audit_file;
static const char *audit_path;
static const char *audit_instance;
static const char *audit_subject;

const char *aura_set_audit_log(cmd_parms *cmd, void *d, const char *path,
                               const char *instance)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd);

    (void)d;
    if (err) {
        return err;
    }
    c->audit = apr_pcalloc(cmd->pool, sizeof(*c->audit));
    c->audit->path = ap_server_root_relative(cmd->pool, path);
    if (!c->audit->path || !*path) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a valid path",
                            cmd->cmd->name, path);
    }
    if (instance && (!*instance || strlen(instance) > 255)) {
        return apr_psprintf(cmd->pool, "%s: the instance id must be 1 to "
                            "255 characters", cmd->cmd->name);
    }
    c->audit->instance = instance;
    return NULL;
}

const char *aura_set_audit_subject(cmd_parms *cmd, void *d,
                                   const char *subject)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd);

    (void)d;
    if (err) {
        return err;
    }
    if (!aura_subject_literal(subject) || strlen(subject) > 255) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a literal NATS "
                            "subject of at most 255 characters (no "
                            "wildcard)", cmd->cmd->name, subject);
    }
    c->audit_subject = subject;
    return NULL;
}

apr_status_t aura_audit_pre_config(apr_pool_t *pconf)
{
    return ap_mutex_register(pconf, AURA_AUDIT_MUTEX_TYPE, NULL,
                             APR_LOCK_DEFAULT, 0);
}

/* The chain's head as the file fd says it (its tail), or as the cache
 * says when the file is empty.  APR_EINVAL: the last line is no record
 * (a cut write, an edit): the chain goes on from the cache if any, so
 * the verifier shows the break right there. */
static apr_status_t read_head(int fd, const struct stat *st,
                              aura_audit_shm_t *head, int *cut,
                              apr_pool_t *p)
{
    apr_size_t n = st->st_size > AUDIT_TAIL_MAX ? AUDIT_TAIL_MAX
                                                : (apr_size_t)st->st_size;
    char *buf = apr_palloc(p, n + 1);
    ssize_t got;
    apr_status_t rv;

    if (n == 0) {
        return APR_NOTFOUND;
    }
    got = pread(fd, buf, n, st->st_size - (off_t)n);
    if (got != (ssize_t)n) {
        return got < 0 ? APR_FROM_OS_ERROR(errno) : APR_EGENERAL;
    }
    /* A line cut short is ended before the next record, which would
     * otherwise be glued to it. */
    *cut = buf[n - 1] != '\n';
    rv = aura_audit_tail(buf, n, n == (apr_size_t)st->st_size, &head->seq,
                         head->hash);
    if (rv == APR_SUCCESS) {
        head->known = 1;
    }
    return rv;
}

static apr_status_t write_all(int fd, const char *buf, apr_size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return APR_FROM_OS_ERROR(errno);
        }
        buf += n;
        len -= (apr_size_t)n;
    }
    return APR_SUCCESS;
}

/* The head for the file fd, into f (seq, prev); *cut: the file ends
 * in a line cut short.  Under the mutex. */
static apr_status_t chain_head(int fd, const struct stat *st,
                               aura_audit_shm_t *cache,
                               aura_audit_fields_t *f, int *cut,
                               apr_pool_t *p, apr_status_t *tail_rv)
{
    aura_audit_shm_t head = { 0 };

    *tail_rv = APR_SUCCESS;
    *cut = 0;
    if (cache->known && cache->dev == (apr_uint64_t)st->st_dev
        && cache->ino == (apr_uint64_t)st->st_ino
        && cache->size == (apr_uint64_t)st->st_size) {
        head = *cache;
    }
    else {
        *tail_rv = read_head(fd, st, &head, cut, p);
        if (*tail_rv != APR_SUCCESS && *tail_rv != APR_NOTFOUND
            && *tail_rv != APR_EINVAL) {
            return *tail_rv;
        }
        if (!head.known && cache->known) {
            head = *cache;      /* an empty (rotated) or broken file */
        }
    }
    f->seq = head.known ? head.seq + 1 : 1;
    f->prev = head.known ? apr_pstrdup(p, head.hash) : AURA_AUDIT_GENESIS;
    return APR_SUCCESS;
}

/* Format, append and sync one record; the head is updated only when
 * the whole line is on disk.  Under the mutex. */
static apr_status_t append(aura_audit_fields_t *f, const char **line,
                           apr_status_t *tail_rv, apr_pool_t *p)
{
    aura_audit_shm_t *cache = aura_shm_audit();
    apr_os_file_t fd;
    struct stat st;
    apr_status_t rv;
    const char *l;
    int cut;

    if (!cache || apr_os_file_get(&fd, audit_file) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    if (fstat(fd, &st) != 0) {
        return APR_FROM_OS_ERROR(errno);
    }
    rv = chain_head(fd, &st, cache, f, &cut, p, tail_rv);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    *line = l = aura_audit_line(p, f);
    rv = write_all(fd, apr_pstrcat(p, cut ? "\n" : "", l, "\n", NULL),
                   strlen(l) + 1 + (cut ? 1 : 0));
    if (rv == APR_SUCCESS && fdatasync(fd) != 0) {
        rv = APR_FROM_OS_ERROR(errno);
    }
    if (rv != APR_SUCCESS || fstat(fd, &st) != 0) {
        /* What the file ends with is unknown: the next write reads it,
         * and continues from the last record known good when the line
         * is broken. */
        cache->size = APR_UINT64_MAX;
        return rv != APR_SUCCESS ? rv : APR_FROM_OS_ERROR(errno);
    }
    cache->seq = f->seq;
    aura_audit_hash(l, strlen(l), cache->hash);
    cache->dev = (apr_uint64_t)st.st_dev;
    cache->ino = (apr_uint64_t)st.st_ino;
    cache->size = (apr_uint64_t)st.st_size;
    cache->known = 1;
    return APR_SUCCESS;
}

/* The request_rec that served last: an internal redirect's final one. */
static request_rec *last_of(request_rec *r)
{
    while (r->next) {
        r = r->next;
    }
    return r;
}

static const char *problem_of(request_rec *r)
{
    for (; r; r = r->next) {
        const char *detail;
        const char *type = aura_request_problem(r, &detail);

        if (type) {
            return type;
        }
    }
    return NULL;
}

AURA_DECLARE(int) aura_audit_entry_from(request_rec *r,
                                        aura_audit_entry_t *e)
{
    aura_request_t *rq = aura_request_get(r);
    core_dir_config *core;
    int service;

    if (!rq || r->main || r->prev) {
        return 0;
    }
    /* The 101 of an Upgrade: h2c is recorded as its stream 1. */
    if (rq->priv->h2c_of == r && rq->priv->h2c) {
        return 0;
    }
    memset(e, 0, sizeof(*e));
    e->action = "request";
    e->method = r->method;
    core = ap_get_core_module_config(last_of(r)->per_dir_config);
    e->route = core ? core->d : NULL;
    service = aura_dir_conf(last_of(r))->service;
    e->service = service >= 0 && service < AURA_SVC_COUNT
                     ? aura_service_names[service] : NULL;
    e->path = rq->raw_path ? rq->raw_path : r->uri;
    e->status = last_of(r)->status;
    e->problem = problem_of(r);
    e->outcome = aura_audit_outcome(e->problem);
    return 1;
}

static void fill_identity(request_rec *r, const aura_audit_entry_t *e,
                          aura_audit_fields_t *f)
{
    aura_request_t *rq = aura_request_get(r);
    request_rec *first = r;

    while (first->prev) {
        first = first->prev;
    }
    memset(f, 0, sizeof(*f));
    f->time = first->request_time;
    f->instance = audit_instance;
    f->client = r->useragent_ip;
    if (rq) {
        f->request_id = rq->request_id;
        f->actor = rq->actor;
        f->role = rq->role;
        f->org = rq->org;
        f->project = rq->project;
    }
    f->target = e->target;
    f->action = e->action;
    f->method = e->method;
    f->route = e->route;
    f->service = e->service;
    f->path = e->path;
    f->status = e->status;
    f->problem = e->problem;
    f->authorized = e->authorized;
    f->outcome = e->outcome;
}

/* The record, as written to the file, on AuraAuditSubject. */
static void publish(request_rec *r, const char *line, apr_uint64_t seq)
{
    natsConnection *nc = aura_nats_conn();
    natsStatus s = NATS_CONNECTION_CLOSED;

    if (nc && aura_nats_connected()) {
        s = natsConnection_Publish(nc, audit_subject, line,
                                   (int)strlen(line));
    }
    if (s != NATS_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, AURA_LOGNO(02060)
                      "audit record %" APR_UINT64_T_FMT " not published on "
                      "%s: %s (it is in the audit log %s)", seq,
                      audit_subject, natsStatus_GetText(s), audit_path);
    }
}

AURA_DECLARE(apr_status_t) aura_audit_write(request_rec *r,
                                            const aura_audit_entry_t *e)
{
    aura_audit_fields_t f;
    const char *line = NULL;
    apr_status_t rv, tail_rv = APR_SUCCESS;

    if (!audit_file || !audit_mutex) {
        return APR_NOTFOUND;
    }
    fill_identity(r, e, &f);
    rv = apr_global_mutex_lock(audit_mutex);
    if (rv == APR_SUCCESS) {
        rv = append(&f, &line, &tail_rv, r->pool);
        apr_global_mutex_unlock(audit_mutex);
    }
    /* Logged after unlock. */
    if (tail_rv == APR_EINVAL) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, AURA_LOGNO(02000)
                      "audit log %s: its last line is not a complete "
                      "record (cut short or edited); record %"
                      APR_UINT64_T_FMT " continues the chain from %s",
                      audit_path, f.seq,
                      f.seq > 1 ? "the last record this instance wrote"
                                : "the genesis");
    }
    if (rv == APR_SUCCESS && audit_subject) {
        publish(r, line, f.seq);
    }
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, AURA_LOGNO(02001)
                      "audit log %s: cannot write the record of %s %s "
                      "(request %s)%s%s", audit_path,
                      e->method ? e->method : "-", e->action,
                      f.request_id ? f.request_id : "-",
                      line ? ": " : "", line ? line : "");
    }
    return rv;
}

/* The mutex, made once for the life of the httpd parent. */
static apr_status_t make_mutex(server_rec *s)
{
    apr_status_t rv = aura_retained_mutex(s, AUDIT_RETAINED_KEY,
                                          AURA_AUDIT_MUTEX_TYPE,
                                          &audit_mutex);

    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s, AURA_LOGNO(02002)
                     "cannot create the %s mutex", AURA_AUDIT_MUTEX_TYPE);
    }
    return rv;
}

/* Say where the chain stands, so that an operator sees it at each
 * start (and a test can wait for it). */
static void log_start(server_rec *s, apr_pool_t *p)
{
    aura_audit_shm_t *cache = aura_shm_audit();
    aura_audit_fields_t f = { 0 };
    apr_os_file_t fd;
    struct stat st;
    apr_status_t rv, tail_rv;
    int cut;

    if (apr_os_file_get(&fd, audit_file) != APR_SUCCESS
        || fstat(fd, &st) != 0 || !cache) {
        return;
    }
    apr_global_mutex_lock(audit_mutex);
    rv = chain_head(fd, &st, cache, &f, &cut, p, &tail_rv);
    apr_global_mutex_unlock(audit_mutex);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, AURA_LOGNO(02003)
                     "audit log %s: cannot read its last record",
                     audit_path);
        return;
    }
    ap_log_error(APLOG_MARK, tail_rv == APR_EINVAL ? APLOG_ERR : APLOG_INFO,
                 0, s, AURA_LOGNO(02004) "audit log %s (instance %s): next "
                 "record %" APR_UINT64_T_FMT ", after %s%s", audit_path,
                 audit_instance, f.seq, f.prev,
                 tail_rv == APR_EINVAL ? " (the file's last line is not a "
                                         "complete record)" : "");
}

int aura_audit_check_config(server_rec *s)
{
    const aura_server_conf_t *c = aura_server_conf(s);

    if (c->audit_subject && !c->audit) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                     AURA_LOGNO(02061) "AuraAuditSubject %s needs "
                     "AuraAuditLog: records are published once they are "
                     "in its file", c->audit_subject);
        return 0;
    }
    return 1;
}

apr_status_t aura_audit_post_config(apr_pool_t *pconf, server_rec *s)
{
    const aura_audit_conf_t *c = aura_server_conf(s)->audit;
    char host[APRMAXHOSTLEN + 1];
    apr_status_t rv;

    audit_file = NULL;
    audit_path = NULL;
    audit_subject = aura_server_conf(s)->audit_subject;
    if (!c) {
        return APR_SUCCESS;
    }
    if ((rv = make_mutex(s)) != APR_SUCCESS) {
        return rv;
    }
    audit_path = c->path;
    if (c->instance) {
        audit_instance = c->instance;
    }
    else if (apr_gethostname(host, sizeof(host), pconf) == APR_SUCCESS) {
        audit_instance = apr_pstrdup(pconf, host);
    }
    else {
        audit_instance = "unknown";
    }
    rv = apr_file_open(&audit_file, c->path,
                       APR_FOPEN_WRITE | APR_FOPEN_CREATE | APR_FOPEN_APPEND
                       | APR_FOPEN_READ | APR_FOPEN_LARGEFILE,
                       APR_FPROT_UREAD | APR_FPROT_UWRITE | APR_FPROT_GREAD,
                       pconf);
    if (rv != APR_SUCCESS) {
        audit_file = NULL;
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s, AURA_LOGNO(02005)
                     "AuraAuditLog: cannot open %s for appending", c->path);
        return rv;
    }
    log_start(s, pconf);
    return APR_SUCCESS;
}

void aura_audit_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv;

    if (!audit_mutex) {
        return;
    }
    rv = apr_global_mutex_child_init(&audit_mutex,
                                     apr_global_mutex_lockfile(audit_mutex),
                                     pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, AURA_LOGNO(02006)
                     "cannot re-open the %s mutex in this child: audit "
                     "records cannot be written", AURA_AUDIT_MUTEX_TYPE);
        audit_mutex = NULL;
    }
}
