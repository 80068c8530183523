/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * test_dbroute.c: the /v1/db router's decision (aura_dbtarget.c), row by
 * row of DESIGN.md section 3, the fail-closed cases, target validation
 * and the PostgREST URL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "aura_unit.h"
#include "http/aura_dbtarget.h"

static const aura_db_project_t shared = { "postgres", "shared", NULL };
static const aura_db_project_t dedicated = { "postgres", "dedicated",
                                             "http://10.0.0.5:3000" };
static const aura_db_project_t dedicated_none = { "postgres", "dedicated",
                                                  NULL };
static const aura_db_project_t dedicated_bad = { "postgres", "dedicated",
                                                 "ftp://10.0.0.5" };
static const aura_db_project_t mongo = { "mongodb", "shared", NULL };
static const aura_db_project_t mongo_dedicated = { "mongodb", "dedicated",
                                                   "http://10.0.0.9:3000" };
static const aura_db_project_t odd_kind = { "oracle", "shared", NULL };
static const aura_db_project_t odd_topology = { "postgres", "sharded",
                                                "http://10.0.0.5:3000" };

static void test_table(void **state)
{
    static const struct {
        const char *method, *rest;
        const aura_db_project_t *project;
        aura_dbroute_e want;
    } rows[] = {
        /* admin routes: NATS whatever the project, even unknown */
        { "GET", "schema", &dedicated, AURA_DBR_NATS },
        { "POST", "sql", &dedicated, AURA_DBR_NATS },
        { "GET", "policies/todos", &dedicated, AURA_DBR_NATS },
        { "GET", "schema?x=1", NULL, AURA_DBR_NATS },
        /* PUT: NATS */
        { "PUT", "todos?id=eq.1", &dedicated, AURA_DBR_NATS },
        /* MongoDB: NATS, even with a target */
        { "GET", "todos", &mongo, AURA_DBR_NATS },
        { "POST", "todos", &mongo_dedicated, AURA_DBR_NATS },
        /* shared Postgres: NATS */
        { "GET", "todos", &shared, AURA_DBR_NATS },
        { "PATCH", "todos?id=eq.1", &shared, AURA_DBR_NATS },
        /* dedicated with a target: HTTP */
        { "GET", "todos", &dedicated, AURA_DBR_HTTP },
        { "POST", "todos", &dedicated, AURA_DBR_HTTP },
        { "PATCH", "todos?id=eq.1", &dedicated, AURA_DBR_HTTP },
        { "DELETE", "todos?id=eq.1", &dedicated, AURA_DBR_HTTP },
        { "GET", "rpc/fn", &dedicated, AURA_DBR_HTTP },
        /* "schemas" is a table, not the admin route "schema" */
        { "GET", "schemas", &dedicated, AURA_DBR_HTTP },
        /* fail closed */
        { "GET", "todos", &dedicated_none, AURA_DBR_UNRESOLVED },
        { "GET", "todos", &dedicated_bad, AURA_DBR_UNRESOLVED },
        { "GET", "todos", NULL, AURA_DBR_UNRESOLVED },
        { "GET", "todos", &odd_kind, AURA_DBR_UNRESOLVED },
        { "GET", "todos", &odd_topology, AURA_DBR_UNRESOLVED },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *why = NULL;

        assert_int_equal(aura_dbroute_decide(rows[i].method, rows[i].rest,
                                             rows[i].project, &why),
                         rows[i].want);
        assert_non_null(why);
    }
}

static void test_target_ok(void **state)
{
    static const struct {
        const char *t;
        int ok;
    } rows[] = {
        { "http://10.0.0.5:3000", 1 },
        { "https://db.example:443", 1 },
        { "http://postgrest", 1 },
        { "http://[::1]:3000", 1 },
        { NULL, 0 },
        { "", 0 },
        { "10.0.0.5:3000", 0 },
        { "http://", 0 },
        { "http://h:0", 0 },
        { "http://h:65536", 0 },
        { "http://h:3000/", 0 },
        { "http://h:3000/rest", 0 },
        { "http://h:3000?x", 0 },
        { "http://user@h:3000", 0 },
        { "http://h :3000", 0 },
        { "http://[]:1", 0 },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_int_equal(aura_dbroute_target_ok(rows[i].t), rows[i].ok);
    }
}

static void test_url(void **state)
{
    apr_pool_t *p = *state;

    assert_string_equal(aura_dbroute_url(p, "http://h:3000", "todos",
                                         "id=eq.1"),
                        "http://h:3000/todos?id=eq.1");
    assert_string_equal(aura_dbroute_url(p, "http://h:3000", "todos", ""),
                        "http://h:3000/todos");
    assert_string_equal(aura_dbroute_url(p, "http://h:3000", "rpc/f", NULL),
                        "http://h:3000/rpc/f");
}

static int group_setup(void **state)
{
    (void)state;
    return apr_initialize() == APR_SUCCESS ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    apr_terminate();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_target_ok),
        cmocka_unit_test_setup_teardown(test_url, pool_setup, pool_teardown),
    };

    return cmocka_run_group_tests_name("dbroute", tests, group_setup,
                                       group_teardown);
}
