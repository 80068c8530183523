/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_dbtarget.c: the /v1/db router's decision (see aura_dbtarget.h).
 * The order of the checks is the table's: what must go to aura-db
 * whatever the project (admin routes, PUT) first, then the project's
 * database and topology.
 */
#include "http/aura_dbtarget.h"

#include "apr_lib.h"
#include "apr_strings.h"

#include <stdlib.h>
#include <string.h>

/* Admin routes: the first path segment.  Everything else is CRUD. */
static const char *const admin_segments[] = { "schema", "policies", "sql",
                                              NULL };

static int is_admin(const char *rest)
{
    apr_size_t n = strcspn(rest, "/?");
    int i;

    for (i = 0; admin_segments[i]; i++) {
        if (strlen(admin_segments[i]) == n
            && !strncmp(rest, admin_segments[i], n)) {
            return 1;
        }
    }
    return 0;
}

aura_dbroute_e aura_dbroute_decide(const char *method, const char *rest,
                                   const aura_db_project_t *project,
                                   const char **why)
{
    if (is_admin(rest ? rest : "")) {
        *why = "admin route";
        return AURA_DBR_NATS;
    }
    if (method && !strcmp(method, "PUT")) {
        *why = "PUT (PostgREST refuses full replacement)";
        return AURA_DBR_NATS;
    }
    if (!project) {
        *why = "unknown project";
        return AURA_DBR_UNRESOLVED;
    }
    if (project->db_kind && !strcmp(project->db_kind, "mongodb")) {
        *why = "MongoDB project";
        return AURA_DBR_NATS;
    }
    if (!project->db_kind || strcmp(project->db_kind, "postgres")) {
        *why = "unknown database kind";
        return AURA_DBR_UNRESOLVED;
    }
    if (project->topology && !strcmp(project->topology, "shared")) {
        *why = "shared topology";
        return AURA_DBR_NATS;
    }
    if (!project->topology || strcmp(project->topology, "dedicated")) {
        *why = "unknown topology";
        return AURA_DBR_UNRESOLVED;
    }
    if (!aura_dbroute_target_ok(project->target)) {
        *why = "dedicated topology without a usable target";
        return AURA_DBR_UNRESOLVED;
    }
    *why = "dedicated PostgREST";
    return AURA_DBR_HTTP;
}

int aura_dbroute_target_ok(const char *t)
{
    const char *host, *p;

    if (!t) {
        return 0;
    }
    if (!strncmp(t, "http://", 7)) {
        host = t + 7;
    }
    else if (!strncmp(t, "https://", 8)) {
        host = t + 8;
    }
    else {
        return 0;
    }
    /* host: letters, digits, dots and dashes (or a bracketed IPv6
     * literal), then an optional :port of 1 to 5 digits, then the end. */
    p = host;
    if (*p == '[') {
        for (p++; *p && *p != ']'; p++) {
            if (!apr_isxdigit(*p) && *p != ':' && *p != '.') {
                return 0;
            }
        }
        if (*p != ']' || p == host + 1) {
            return 0;
        }
        p++;
    }
    else {
        while (apr_isalnum(*p) || *p == '.' || *p == '-') {
            p++;
        }
        if (p == host) {
            return 0;
        }
    }
    if (*p == ':') {
        const char *d = ++p;

        while (apr_isdigit(*p)) {
            p++;
        }
        if (p == d || p - d > 5 || atoi(d) < 1 || atoi(d) > 65535) {
            return 0;
        }
    }
    return *p == '\0';
}

const char *aura_dbroute_url(apr_pool_t *p, const char *target,
                             const char *rest, const char *query)
{
    return apr_pstrcat(p, target, "/", rest,
                       query && *query ? "?" : "", query ? query : "",
                       NULL);
}
