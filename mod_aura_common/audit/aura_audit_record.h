/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_audit_record.h: the audit log's record and chain encoding
 * (aura_audit_record.c), pure: APR and OpenSSL only, no httpd.h, so the
 * unit tests link it as the module does.  docs/audit.md is the operator's
 * description of the same format; build/aura-audit-verify reads it.
 *
 * A record is one line of JSON, keys in a fixed order, no spaces:
 *   {"seq":N,"prev":"<64 hex>","time":"<RFC 3339 UTC, ms>",...}
 * and the chain hash of a record is the lower-case hex SHA-256 of its
 * line without the newline.  "prev" is the chain hash of the record
 * before it in the chain (AURA_AUDIT_GENESIS for seq 1).
 */
#ifndef AURA_AUDIT_RECORD_H
#define AURA_AUDIT_RECORD_H

#include "apr_pools.h"
#include "apr_time.h"

/* The "prev" of the chain's first record (seq 1): 64 zeros. */
#define AURA_AUDIT_GENESIS \
    "0000000000000000000000000000000000000000000000000000000000000000"
#define AURA_AUDIT_HASH_HEX 64

/* Every field of a record; NULL strings are written as null, status 0
 * as null.  The strings are written escaped (JSON), never cut. */
typedef struct aura_audit_fields_t {
    apr_uint64_t seq;
    const char *prev;         /* 64 hex: the chain hash before */
    apr_time_t time;          /* when the request arrived */
    const char *instance;     /* which gateway instance wrote it */
    const char *request_id;
    const char *actor;        /* who: the console token's subject */
    const char *role;         /* as the membership lookup said */
    const char *org;
    const char *project;
    const char *target;       /* the project or org the request named */
    const char *client;       /* from where: the client address */
    const char *action;       /* "request", or a control's name */
    const char *method;
    const char *route;        /* the Location that matched */
    const char *service;      /* the AuraService, NULL none */
    const char *path;         /* as sent, without the query */
    int status;               /* the final status, 0 none */
    const char *problem;      /* the gateway's refusal, NULL none */
    int authorized;           /* 1: the role check let it through */
    const char *outcome;      /* aura_audit_outcome() */
} aura_audit_fields_t;

/** The record line (no newline), in p. */
const char *aura_audit_line(apr_pool_t *p, const aura_audit_fields_t *f);

/** The chain hash of a line of len bytes (no newline): 64 lower-case
 *  hex digits and a NUL into out. */
void aura_audit_hash(const char *line, apr_size_t len,
                     char out[AURA_AUDIT_HASH_HEX + 1]);

/**
 * What a record's outcome is, from the problem the gateway noted:
 * "executed" (no problem: the service answered; its status is the
 * record's), "unknown" (the request was sent and no valid answer came:
 * upstream-timeout, upstream-error; the service may have acted), or
 * "refused" (the gateway answered before sending anything).
 */
const char *aura_audit_outcome(const char *problem);

/** RFC 3339, UTC, milliseconds ("2026-12-05T22:30:01.123Z"), in p. */
const char *aura_audit_time(apr_pool_t *p, apr_time_t t);

/**
 * The last complete line of the tail of a file (buf, len bytes, ending
 * at the file's end): its seq and chain hash, the state a writer
 * continues the chain from.  whole: buf starts at the file's start
 * (otherwise a line that starts before buf is not a record it can
 * read).
 * @return APR_SUCCESS; APR_NOTFOUND when buf holds no line (an empty
 *         file); APR_EINVAL when the last line is not a record (it
 *         does not end with a newline, or has no "seq" first).
 */
apr_status_t aura_audit_tail(const char *buf, apr_size_t len, int whole,
                             apr_uint64_t *seq,
                             char hash[AURA_AUDIT_HASH_HEX + 1]);

/* The chain's head in the shared segment (aura_shm.c lays it out;
 * aura_audit.c alone reads and writes it, under the aura-audit mutex):
 * the last record written, and the file it was written to, as that
 * file's device, inode and size right after.  A cache of the file's
 * tail, and the link across a rotation: a new, empty file continues the
 * chain from here. */
typedef struct aura_audit_shm_t {
    apr_uint64_t known;        /* 1: the fields below are set */
    apr_uint64_t seq;
    apr_uint64_t dev;
    apr_uint64_t ino;
    apr_uint64_t size;
    char hash[AURA_AUDIT_HASH_HEX + 1];
    char pad[7];
} aura_audit_shm_t;

#endif /* AURA_AUDIT_RECORD_H */
