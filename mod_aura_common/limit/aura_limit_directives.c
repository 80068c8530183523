/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_limit_directives.c: the directives of the two rate-limit stages and
 * of Redis (their entries: AURA_LIMIT_DIRECTIVES in aura_limit_conf.h).
 *
 * Zones (AuraRateLimitZone) are global, like nginx's limit_req_zone:
 * they are kept in the configuration pool's userdata, so each
 * configuration pass starts from the built-in "default" zone alone, and
 * a Location's AuraRateLimit refers to a zone defined above it in the
 * file (an unknown name is a start-up error naming file and line).
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "limit/aura_gcra.h"
#include "limit/aura_limit.h"

#include "http_core.h"
#include "apr_strings.h"
#include "apr_lib.h"

#define ZONES_KEY "mod_aura_common-zones"
#define MAX_ZONE_NAME 32
#define MAX_WINDOW apr_time_from_sec(86400)

const aura_zone_t aura_zone_off = { "off", 0, 0, 0, { 0, 0, 0 }, NULL, 0, 0 };
const aura_quota_t aura_quota_off = { 0, 0 };

apr_array_header_t *aura_zones(apr_pool_t *pconf)
{
    apr_array_header_t *zones = NULL;
    aura_zone_t *z;

    apr_pool_userdata_get((void **)&zones, ZONES_KEY, pconf);
    if (zones) {
        return zones;
    }
    zones = apr_array_make(pconf, 4, sizeof(aura_zone_t *));
    z = apr_pcalloc(pconf, sizeof(*z));
    z->name = AURA_DEFAULT_ZONE;
    z->rate = AURA_DEFAULT_ZONE_RATE;
    z->period_s = 1;
    z->burst = AURA_DEFAULT_ZONE_BURST;
    aura_gcra_init(&z->gcra, z->rate, z->period_s, z->burst);
    APR_ARRAY_PUSH(zones, aura_zone_t *) = z;
    apr_pool_userdata_setn(zones, ZONES_KEY, NULL, pconf);
    return zones;
}

static aura_zone_t *find_zone(apr_pool_t *pconf, const char *name)
{
    apr_array_header_t *zones = aura_zones(pconf);
    int i;

    for (i = 0; i < zones->nelts; i++) {
        aura_zone_t *z = APR_ARRAY_IDX(zones, i, aura_zone_t *);

        if (!strcmp(z->name, name)) {
            return z;
        }
    }
    return NULL;
}

static const char *here(cmd_parms *cmd)
{
    return apr_psprintf(cmd->pool, "%s:%d", cmd->directive->filename,
                        cmd->directive->line_num);
}

static int valid_zone_name(const char *s)
{
    apr_size_t n;

    for (n = 0; s[n]; n++) {
        if (n >= MAX_ZONE_NAME
            || !(apr_isalnum(s[n]) || s[n] == '-' || s[n] == '_')) {
            return 0;
        }
    }
    return n > 0 && strcasecmp(s, "off");
}

/* "rate=100r/s" or "rate=6000r/m". */
static const char *parse_rate(cmd_parms *cmd, const char *arg,
                              apr_uint64_t *rate, apr_uint64_t *period)
{
    char *end;
    apr_int64_t n;

    if (strncasecmp(arg, "rate=", 5)) {
        return "expected rate=<n>r/s or rate=<n>r/m";
    }
    n = apr_strtoi64(arg + 5, &end, 10);
    if (end == arg + 5 || n < 1 || n > 1000000) {
        return "the rate is a number of requests from 1 to 1000000";
    }
    if (!strcasecmp(end, "r/s")) {
        *period = 1;
    }
    else if (!strcasecmp(end, "r/m")) {
        *period = 60;
    }
    else {
        return "the rate ends in r/s or r/m";
    }
    (void)cmd;
    *rate = (apr_uint64_t)n;
    return NULL;
}

/* The words after the rate: burst=<n> and entries=<n>, each once. */
static const char *parse_zone_options(cmd_parms *cmd, const char *args,
                                      aura_zone_t *nz)
{
    const char *word;
    int n, burst = 0, entries = 0;

    while (*(word = ap_getword_conf(cmd->temp_pool, &args))) {
        if (!strncasecmp(word, "burst=", 6) && !burst) {
            if (aura_parse_int(cmd, word + 6, 1, 1000000, &n)) {
                return "the burst is a number of requests from 1 to 1000000";
            }
            burst = n;
        }
        else if (!strncasecmp(word, "entries=", 8) && !entries) {
            if (aura_parse_int(cmd, word + 8, AURA_MIN_LIMITER_ENTRIES,
                               AURA_MAX_LIMITER_ENTRIES, &n)) {
                return apr_psprintf(cmd->pool, "entries is a number of "
                                    "addresses from %d to %d",
                                    AURA_MIN_LIMITER_ENTRIES,
                                    AURA_MAX_LIMITER_ENTRIES);
            }
            entries = n;
        }
        else {
            return apr_psprintf(cmd->pool, "'%s' is not burst=<n> or "
                                "entries=<n> (each at most once)", word);
        }
    }
    /* Without a burst, one period's worth: r/s admits a second of
     * requests at once. */
    nz->burst = burst ? (apr_uint64_t)burst : nz->rate;
    nz->entries = (apr_uint64_t)entries;
    return NULL;
}

/* AuraRateLimitZone name rate=<n>r/s|r/m [burst=<n>] [entries=<n>] */
const char *aura_set_rate_limit_zone(cmd_parms *cmd, void *dummy,
                                     const char *args)
{
    const char *err = aura_global_only(cmd), *name, *rate;
    aura_zone_t *z, nz;

    (void)dummy;
    if (err) {
        return err;
    }
    name = ap_getword_conf(cmd->pool, &args);
    rate = ap_getword_conf(cmd->temp_pool, &args);
    if (!*name || !*rate) {
        return apr_psprintf(cmd->pool, "%s takes a name, rate=<n>r/s or "
                            "rate=<n>r/m, and optionally burst=<n> and "
                            "entries=<n>", cmd->cmd->name);
    }
    if (!valid_zone_name(name)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a zone name (1 to "
                            "%d of [A-Za-z0-9_-], not 'off')",
                            cmd->cmd->name, name, MAX_ZONE_NAME);
    }
    memset(&nz, 0, sizeof(nz));
    err = parse_rate(cmd, rate, &nz.rate, &nz.period_s);
    if (!err) {
        err = parse_zone_options(cmd, args, &nz);
    }
    if (!err && aura_gcra_init(&nz.gcra, nz.rate, nz.period_s, nz.burst)
                != APR_SUCCESS) {
        err = "the burst may not exceed a day's worth of requests";
    }
    if (err) {
        return apr_psprintf(cmd->pool, "%s %s: %s", cmd->cmd->name, name,
                            err);
    }
    z = find_zone(cmd->pool, name);
    if (z && z->defined_at) {
        return apr_psprintf(cmd->pool, "%s: zone '%s' is already defined at "
                            "%s", cmd->cmd->name, name, z->defined_at);
    }
    if (!z && aura_zones(cmd->pool)->nelts >= AURA_MAX_ZONES) {
        return apr_psprintf(cmd->pool, "%s %s: at most %d zones, "
                            "\"default\" included", cmd->cmd->name, name,
                            AURA_MAX_ZONES);
    }
    if (!z) {
        z = apr_pcalloc(cmd->pool, sizeof(*z));
        z->name = name;
        APR_ARRAY_PUSH(aura_zones(cmd->pool), aura_zone_t *) = z;
    }
    /* In place: Locations that already picked "default" see the
     * operator's definition of it. */
    z->rate = nz.rate;
    z->period_s = nz.period_s;
    z->burst = nz.burst;
    z->gcra = nz.gcra;
    z->entries = nz.entries;
    z->defined_at = here(cmd);
    return NULL;
}

const char *aura_set_rate_limit(cmd_parms *cmd, void *dirv, const char *arg)
{
    aura_dir_conf_t *d = dirv;
    aura_zone_t *z;

    if (!strcasecmp(arg, "off")) {
        d->zone = &aura_zone_off;
        return NULL;
    }
    z = find_zone(cmd->pool, arg);
    if (!z) {
        return apr_psprintf(cmd->pool, "%s: no zone '%s' (define it with "
                            "AuraRateLimitZone in the main server config, "
                            "above this line)", cmd->cmd->name, arg);
    }
    d->zone = z;
    return NULL;
}

static const char *parse_quota(cmd_parms *cmd, const char *limit,
                               const char *window, aura_quota_t **out)
{
    aura_quota_t *q = apr_pcalloc(cmd->pool, sizeof(*q));
    apr_interval_time_t w;
    const char *err;
    int n;

    err = aura_parse_int(cmd, limit, 1, 1000000000, &n);
    if (err) {
        return err;
    }
    if (!window) {
        return apr_psprintf(cmd->pool, "%s: a window is required (e.g. "
                            "%s %s 60s)", cmd->cmd->name, cmd->cmd->name,
                            limit);
    }
    err = aura_parse_duration(cmd, window, apr_time_from_sec(1), MAX_WINDOW,
                              &w);
    if (!err && w % APR_USEC_PER_SEC) {
        err = apr_psprintf(cmd->pool, "%s: the window '%s' must be whole "
                           "seconds", cmd->cmd->name, window);
    }
    if (err) {
        return err;
    }
    q->limit = n;
    q->window_s = apr_time_sec(w);
    *out = q;
    return NULL;
}

const char *aura_set_actor_quota(cmd_parms *cmd, void *dirv,
                                 const char *limit, const char *window)
{
    aura_dir_conf_t *d = dirv;
    aura_quota_t *q;
    const char *err;

    if (!strcasecmp(limit, "off") && !window) {
        d->quota = &aura_quota_off;
        return NULL;
    }
    err = parse_quota(cmd, limit, window, &q);
    if (!err) {
        d->quota = q;
    }
    return err;
}

const char *aura_set_plan_quota(cmd_parms *cmd, void *dirv,
                                const char *plan, const char *limit,
                                const char *window)
{
    aura_dir_conf_t *d = dirv;
    aura_quota_t *q;
    const char *err = parse_quota(cmd, limit, window, &q);

    if (err) {
        return err;
    }
    if (!d->plan_quotas) {
        d->plan_quotas = apr_hash_make(cmd->pool);
    }
    apr_hash_set(d->plan_quotas, apr_pstrdup(cmd->pool, plan),
                 APR_HASH_KEY_STRING, q);
    return NULL;
}

/* The global numbers; bounds by field. */
const char *aura_set_limit_int(cmd_parms *cmd, void *dummy, const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    int *field = (int *)((char *)c + (apr_size_t)cmd->info);
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    if (field == &c->limiter_entries) {
        return aura_parse_int(cmd, arg, AURA_MIN_LIMITER_ENTRIES,
                              AURA_MAX_LIMITER_ENTRIES, field);
    }
    if (field == &c->ipv6_prefix) {
        return aura_parse_int(cmd, arg, 16, 128, field);
    }
    if (field == &c->instances) {
        return aura_parse_int(cmd, arg, 1, 1000, field);
    }
    return aura_parse_int(cmd, arg, 1, 1024, field);   /* redis_pool_max */
}

/* host:port[/db], with an optional redis:// in front. */
const char *aura_set_redis_server(cmd_parms *cmd, void *dummy,
                                  const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char *err = aura_global_only(cmd), *s = arg, *slash;
    char *host, *scope;
    apr_port_t port = 0;
    int db = 0;

    (void)dummy;
    if (err) {
        return err;
    }
    if (!strncasecmp(s, "redis://", 8)) {
        s += 8;
    }
    slash = ap_strchr_c(s, '/');
    if (slash) {
        err = aura_parse_int(cmd, slash + 1, 0, 15, &db);
        s = apr_pstrmemdup(cmd->temp_pool, s, slash - s);
    }
    if (err || apr_parse_addr_port(&host, &scope, &port, s, cmd->pool)
                   != APR_SUCCESS || !host || !port || scope) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not host:port[/db] "
                            "(e.g. 127.0.0.1:6379 or redis://10.0.0.5:6379/2)",
                            cmd->cmd->name, arg);
    }
    c->redis_host = host;
    c->redis_port = port;
    c->redis_db = db;
    return NULL;
}

const char *aura_set_redis_time(cmd_parms *cmd, void *dummy, const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    const char *err = aura_global_only(cmd);

    (void)dummy;
    if (err) {
        return err;
    }
    /* Redis stands between every authenticated request and its service:
     * its timeout stays short, and a retry interval under 100 ms would
     * turn an outage into a storm of connection attempts. */
    if (field == &c->redis_timeout) {
        return aura_parse_duration(cmd, arg, apr_time_from_msec(1),
                                   apr_time_from_sec(10), field);
    }
    return aura_parse_duration(cmd, arg, apr_time_from_msec(100),
                               apr_time_from_sec(3600), field);
}
