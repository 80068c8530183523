/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_resilience_conf.c: the directives of the circuit breakers (per
 * service, per dedicated target, the key store's) and of retries.  The
 * in-flight caps' handlers are aura_bulkhead.c's.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "resilience/aura_resilience_conf.h"

#include "http_core.h"
#include "apr_strings.h"

/* AuraBreaker <service>|postgrest|store|* [threshold=<n>] [cooldown=<duration>]
 *                         [probes=<n>] [probe-timeout=<duration>] */
/* AuraBreaker's first word: *, postgrest, store or a service; -2 when
 * it is none of them. */
static int breaker_target(const char *word)
{
    int i;

    if (!strcmp(word, "*")) {
        return -1;
    }
    if (!strcasecmp(word, "postgrest")) {
        return AURA_SVC_COUNT;
    }
    if (!strcasecmp(word, "store")) {
        return AURA_BREAKER_SETTING_STORE;
    }
    for (i = 0; i < AURA_SVC_COUNT; i++) {
        if (!strcasecmp(word, aura_service_names[i])) {
            return i;
        }
    }
    return -2;
}

static const char *breaker_target_name(int service)
{
    return service == -1 ? "*"
           : service == AURA_SVC_COUNT ? "postgrest"
           : service == AURA_BREAKER_SETTING_STORE ? "store"
           : aura_service_names[service];
}

/* One name=value word of AuraBreaker into b: NULL, or what is wrong. */
static const char *breaker_setting(cmd_parms *cmd, const char *word,
                                   aura_breaker_setting_t *b)
{
    apr_interval_time_t t;
    const char *err;
    int n;

    if (!strncasecmp(word, "threshold=", 10)) {
        err = aura_parse_int(cmd, word + 10, 1, 1000000, &n);
        b->threshold = (apr_uint32_t)n;
    }
    else if (!strncasecmp(word, "probes=", 7)) {
        err = aura_parse_int(cmd, word + 7, 1, 255, &n);
        b->probes = (apr_uint32_t)n;
    }
    else if (!strncasecmp(word, "cooldown=", 9)) {
        err = aura_parse_duration(cmd, word + 9, apr_time_from_msec(10),
                                  apr_time_from_sec(86400), &t);
        b->cooldown_ms = (apr_uint32_t)apr_time_as_msec(t);
    }
    else if (!strncasecmp(word, "probe-timeout=", 14)) {
        err = aura_parse_duration(cmd, word + 14, apr_time_from_sec(1),
                                  apr_time_from_sec(86400), &t);
        b->probe_ttl_ms = (apr_uint32_t)apr_time_as_msec(t);
    }
    else {
        err = apr_psprintf(cmd->pool, "%s: '%s' is not threshold=<n>, "
                           "cooldown=<duration>, probes=<n> or "
                           "probe-timeout=<duration>", cmd->cmd->name, word);
    }
    return err;
}

const char *aura_set_breaker(cmd_parms *cmd, void *dummy, const char *args)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd), *word;
    aura_breaker_setting_t b;

    (void)dummy;
    if (err) {
        return err;
    }
    memset(&b, 0, sizeof(b));
    word = ap_getword_conf(cmd->temp_pool, &args);
    b.service = breaker_target(word);
    if (b.service == -2) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not *, postgrest, "
                            "store or a service (auth | db | storage | "
                            "functions | realtime | notifications | ai | "
                            "provisioner | control)", cmd->cmd->name, word);
    }
    while (*(word = ap_getword_conf(cmd->temp_pool, &args))) {
        if ((err = breaker_setting(cmd, word, &b)) != NULL) {
            return err;
        }
    }
    if (!b.threshold && !b.cooldown_ms && !b.probes && !b.probe_ttl_ms) {
        return apr_psprintf(cmd->pool, "%s %s: nothing to set (threshold=, "
                            "cooldown=, probes=, probe-timeout=)",
                            cmd->cmd->name, breaker_target_name(b.service));
    }
    if (!c->breakers) {
        c->breakers = apr_array_make(cmd->pool, 4,
                                     sizeof(aura_breaker_setting_t));
    }
    APR_ARRAY_PUSH(c->breakers, aura_breaker_setting_t) = b;
    return NULL;
}

const char *aura_set_retries(cmd_parms *cmd, void *dirv, const char *arg)
{
    aura_dir_conf_t *d = dirv;

    return aura_parse_int(cmd, arg, 0, 10, &d->retries);
}

const char *aura_set_target_sweep(cmd_parms *cmd, void *dummy,
                                  const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    return err ? err
               : aura_parse_duration(cmd, arg, apr_time_from_msec(100),
                                     apr_time_from_sec(86400),
                                     &aura_cmd_server_conf(cmd)->target_sweep);
}

const char *aura_set_target_entries(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    const char *err = aura_global_only(cmd);

    (void)dummy;
    return err ? err
               : aura_parse_int(cmd, arg, 16, 65536,
                                &aura_cmd_server_conf(cmd)->target_entries);
}
