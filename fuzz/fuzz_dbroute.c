/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_dbroute.c: libFuzzer harness for the /v1/db router's decision
 * (mod_aura_common/http/aura_dbtarget.c): where a request goes, whether a
 * projects-table target is a usable origin, and the PostgREST URL.
 *
 * aura-fuzz: -max_len=1024
 *
 * Input: a byte of choices (method: bits 0-2; project row absent: bit 3;
 * db_kind: bits 4-5 NULL, postgres, mongodb, from the input; topology:
 * bits 6-7 NULL, shared, dedicated, from the input), then lines: the
 * path after /v1/db/, the target, the query, the method, the db_kind,
 * the topology (the last three used when the choices say so).
 *
 * Invariants: admin routes (schema, policies, sql as the first segment)
 * and PUT always go to aura-db; a request goes straight to PostgREST
 * only for a known postgres project with dedicated topology and a
 * target aura_dbroute_target_ok accepts; an unknown project, kind or
 * topology never falls back to the shared path.  A target accepted is
 * an origin: http or https, a host, an optional port 1-65535, nothing
 * else, and apr_uri_parse reads it so (no user info, path, query or
 * fragment); the URL is the target, "/", the path and the query.
 */
#include "aura_fuzz.h"

#include "apr_lib.h"
#include "apr_strings.h"
#include "apr_uri.h"

#include "http/aura_dbtarget.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    return 0;
}

static int first_segment_is(const char *rest, const char *name)
{
    size_t n = strlen(name);

    return !strncmp(rest, name, n)
           && (rest[n] == '\0' || rest[n] == '/' || rest[n] == '?');
}

static void check_target(apr_pool_t *p, const char *t)
{
    int ok = aura_dbroute_target_ok(t);
    const char *host, *s;
    apr_uri_t uri;

    if (!ok) {
        return;
    }
    if (!strncmp(t, "http://", 7)) {
        host = t + 7;
    }
    else {
        AURA_FUZZ_ASSERT(!strncmp(t, "https://", 8));
        host = t + 8;
    }
    AURA_FUZZ_ASSERT(*host && *host != ':');
    for (s = host; *s; s++) {
        AURA_FUZZ_ASSERT(!strchr("/?#@%\\ \t\r\n", *s));
        AURA_FUZZ_ASSERT(apr_isgraph(*s));
    }
    s = strrchr(host, ':');
    if (s && (*host != '[' || s > strchr(host, ']'))) {
        long port;

        AURA_FUZZ_ASSERT(s[1] && strlen(s + 1) <= 5);
        port = strtol(s + 1, NULL, 10);
        AURA_FUZZ_ASSERT(port >= 1 && port <= 65535);
    }
    memset(&uri, 0, sizeof(uri));
    AURA_FUZZ_ASSERT(apr_uri_parse(p, t, &uri) == APR_SUCCESS);
    AURA_FUZZ_ASSERT(uri.hostname && *uri.hostname);
    AURA_FUZZ_ASSERT(!uri.user && !uri.password);
    AURA_FUZZ_ASSERT(!uri.path || !*uri.path);
    AURA_FUZZ_ASSERT(!uri.query && !uri.fragment);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const methods[] = {
        "GET", "POST", "PUT", "PATCH", "DELETE", "put", NULL, NULL
    };
    const char *line[6] = { "", NULL, NULL, NULL, NULL, NULL };
    aura_db_project_t proj, *project;
    const char *method, *why = NULL, *url;
    unsigned int c;
    aura_dbroute_e d;
    apr_pool_t *p;
    char *s;
    int i, admin;

    if (size < 1) {
        return 0;
    }
    c = aura_fuzz_byte(&data, &size);
    p = aura_fuzz_pool();
    s = aura_fuzz_strndup(p, data, size);
    /* Lines, empty ones kept (apr_strtok would skip them). */
    for (i = 0; i < 6 && s; i++) {
        char *nl = strchr(s, '\n');

        if (nl) {
            *nl = '\0';
        }
        line[i] = s;
        s = nl ? nl + 1 : NULL;
    }
    method = methods[c & 7] ? methods[c & 7] : line[3];
    proj.db_kind = (c >> 4 & 3) == 0 ? NULL : (c >> 4 & 3) == 1 ? "postgres"
                   : (c >> 4 & 3) == 2 ? "mongodb" : line[4];
    proj.topology = (c >> 6) == 0 ? NULL : (c >> 6) == 1 ? "shared"
                    : (c >> 6) == 2 ? "dedicated" : line[5];
    proj.target = line[1];
    project = (c & 8) ? NULL : &proj;

    d = aura_dbroute_decide(method, line[0], project, &why);
    AURA_FUZZ_ASSERT(why != NULL);
    AURA_FUZZ_ASSERT(d == AURA_DBR_NATS || d == AURA_DBR_HTTP
                     || d == AURA_DBR_UNRESOLVED);
    admin = first_segment_is(line[0], "schema")
            || first_segment_is(line[0], "policies")
            || first_segment_is(line[0], "sql");
    if (admin || (method && !strcmp(method, "PUT"))) {
        AURA_FUZZ_ASSERT(d == AURA_DBR_NATS);
    }
    else if (!project) {
        AURA_FUZZ_ASSERT(d == AURA_DBR_UNRESOLVED);
    }
    if (d == AURA_DBR_HTTP) {
        AURA_FUZZ_ASSERT(project && !admin);
        AURA_FUZZ_ASSERT(!method || strcmp(method, "PUT"));
        AURA_FUZZ_ASSERT(proj.db_kind && !strcmp(proj.db_kind, "postgres"));
        AURA_FUZZ_ASSERT(proj.topology
                         && !strcmp(proj.topology, "dedicated"));
        AURA_FUZZ_ASSERT(aura_dbroute_target_ok(proj.target));
    }
    if (project && d == AURA_DBR_NATS && !admin
        && (!method || strcmp(method, "PUT"))) {
        /* The shared path only for what the table says is shared. */
        AURA_FUZZ_ASSERT(proj.db_kind);
        AURA_FUZZ_ASSERT(!strcmp(proj.db_kind, "mongodb")
                         || (proj.topology
                             && !strcmp(proj.topology, "shared")));
    }
    if (line[1]) {
        check_target(p, line[1]);
        url = aura_dbroute_url(p, line[1], line[0], line[2]);
        AURA_FUZZ_ASSERT(!strcmp(url, apr_pstrcat(p, line[1], "/", line[0],
                                                  line[2] && *line[2]
                                                  ? "?" : "",
                                                  line[2] ? line[2] : "",
                                                  NULL)));
    }
    AURA_FUZZ_ASSERT(!aura_dbroute_target_ok(NULL));
    apr_pool_destroy(p);
    return 0;
}
