/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_jwt_conf.c: the bearer-token verification directives: where the
 * keys come from (files read now, or the identity service's JWKS over
 * NATS), the algorithms, the claims checked.  Per VirtualHost: each
 * server gets its own verification state in post_config (aura_jwks.c).
 */
#include "core/aura_module.h"
#include "auth/aura_jwks.h"
#include "auth/aura_jwt.h"
#include "auth/aura_jwt_conf.h"
#include "control/aura_control_record.h"
#include "core/aura_config.h"
#include "nats/aura_subject.h"

#include "http_core.h"
#include "apr_strings.h"

static const char *add_jwt_source(cmd_parms *cmd, aura_jwt_src_kind_e kind,
                                  const char *path, const char *kid)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    aura_jwt_source_t *src;
    const char *err;

    if (!c->jwt_sources) {
        c->jwt_sources = apr_array_make(cmd->pool, 2,
                                        sizeof(aura_jwt_source_t));
    }
    src = apr_array_push(c->jwt_sources);
    memset(src, 0, sizeof(*src));
    src->kind = kind;
    src->path = path;
    src->kid = kid;
    err = aura_jwks_read_source(cmd, src);
    if (!err && src->kind == AURA_JWT_SRC_JWKS) {
        int i;

        for (i = 0; i < c->jwt_sources->nelts - 1; i++) {
            aura_jwt_src_kind_e k =
                APR_ARRAY_IDX(c->jwt_sources, i, aura_jwt_source_t).kind;

            if (k == AURA_JWT_SRC_JWKS || k == AURA_JWT_SRC_NATS) {
                return apr_psprintf(cmd->pool, "%s: %s is a second JWKS "
                                    "document in this server: one JWKS "
                                    "per VirtualHost (merge them)",
                                    cmd->cmd->name, src->path);
            }
        }
    }
    return err;
}

const char *aura_set_jwt_key_file(cmd_parms *cmd, void *dummy,
                                  const char *path, const char *kid)
{
    (void)dummy;
    /* JWKS or PEM: told apart by the content when it is read. */
    return add_jwt_source(cmd, AURA_JWT_SRC_PEM, path, kid);
}

const char *aura_set_jwt_secret_file(cmd_parms *cmd, void *dummy,
                                     const char *path, const char *kid)
{
    (void)dummy;
    return add_jwt_source(cmd, AURA_JWT_SRC_SECRET, path, kid);
}

const char *aura_set_jwks_subject(cmd_parms *cmd, void *dummy,
                                  const char *subject)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    aura_jwt_source_t *src;
    int i;

    (void)dummy;
    if (!aura_subject_literal(subject)) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a NATS subject",
                            cmd->cmd->name, subject);
    }
    if (!c->jwt_sources) {
        c->jwt_sources = apr_array_make(cmd->pool, 2,
                                        sizeof(aura_jwt_source_t));
    }
    for (i = 0; i < c->jwt_sources->nelts; i++) {
        aura_jwt_src_kind_e k =
            APR_ARRAY_IDX(c->jwt_sources, i, aura_jwt_source_t).kind;

        if (k == AURA_JWT_SRC_JWKS || k == AURA_JWT_SRC_NATS) {
            return apr_psprintf(cmd->pool, "%s: this server already has a "
                                "JWKS source: one JWKS per VirtualHost",
                                cmd->cmd->name);
        }
    }
    src = apr_array_push(c->jwt_sources);
    memset(src, 0, sizeof(*src));
    src->kind = AURA_JWT_SRC_NATS;
    src->path = subject;
    return NULL;
}

const char *aura_set_jwt_algs(cmd_parms *cmd, void *dummy,
                              const char *args)
{
    const char *err = NULL;
    unsigned int algs = aura_jwt_parse_algs(args, &err);

    (void)dummy;
    if (!algs) {
        return apr_psprintf(cmd->pool, "%s: '%s': %s (accepted: RS256 "
                            "ES256 HS256; never none)", cmd->cmd->name, args,
                            err ? err : "no algorithm");
    }
    aura_cmd_server_conf(cmd)->jwt_algs = algs;
    return NULL;
}

const char *aura_set_jwt_time(cmd_parms *cmd, void *dummy,
                              const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    apr_interval_time_t *field =
        (apr_interval_time_t *)((char *)c + (apr_size_t)cmd->info);
    /* A zero refresh interval would let made-up kids force a re-read per
     * request: at least one second. */
    apr_interval_time_t min =
        field == &c->jwks_refresh ? apr_time_from_sec(1) : 0;

    (void)dummy;
    return aura_parse_duration(cmd, arg, min, AURA_JWT_LEEWAY_MAX, field);
}

const char *aura_set_jwt_string(cmd_parms *cmd, void *dummy,
                                const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);

    (void)dummy;
    *(const char **)((char *)c + (apr_size_t)cmd->info) = arg;
    return NULL;
}

const char *aura_set_jwt_max_len(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    (void)dummy;
    return aura_parse_int(cmd, arg, 256, 65536,
                          &aura_cmd_server_conf(cmd)->jwt_max_len);
}

/* The syntax of the controls' ttls (aura_control_ttl: 3600, 60m, 24h,
 * 7d), not httpd's durations: a revocation must be kept as long as the
 * tokens it names live, and an operator writes both alike.  At most 7
 * days, the life of a control. */
const char *aura_set_token_max_life(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    (void)dummy;
    if (aura_control_ttl(arg, &aura_cmd_server_conf(cmd)->token_max_life)
        != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not a token lifetime "
                            "between 1 s and 7 days (3600, 60m, 24h, 7d)",
                            cmd->cmd->name, arg);
    }
    return NULL;
}
