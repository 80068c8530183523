/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_headers_conf.c: the directives of the headers the gateway adds to
 * its responses (aura_headers.c): what a CORS answer allows and exposes
 * (which origins is the plane's), and the security headers.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "http/aura_headers_conf.h"

#include "http_core.h"
#include "apr_strings.h"
#include "apr_lib.h"

const char *aura_set_cors_list(cmd_parms *cmd, void *dummy,
                               const char *arg)
{
    aura_server_conf_t *c = aura_cmd_server_conf(cmd);
    const char **field = (const char **)((char *)c + (apr_size_t)cmd->info);
    const char *p;

    (void)dummy;
    for (p = arg; *p; p++) {
        if (!apr_isalnum(*p) && !ap_strchr_c(" ,-_*", *p)) {
            return apr_psprintf(cmd->pool, "%s: '%s' is not a list of "
                                "header or method names",
                                cmd->cmd->name, arg);
        }
    }
    *field = arg;
    return NULL;
}

const char *aura_set_cors_max_age(cmd_parms *cmd, void *dummy,
                                  const char *arg)
{
    (void)dummy;
    return aura_parse_int(cmd, arg, 0, 86400,
                          &aura_cmd_server_conf(cmd)->cors_max_age);
}

/* The headers the gateway sets on every response; an operator may change
 * a value or turn one off, never add arbitrary headers (mod_headers
 * does that). */
const char *const aura_security_header_names[AURA_SECURITY_HEADERS] = {
    "Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy",
    "X-Frame-Options", "Strict-Transport-Security"
};
const char aura_security_off[] = "off";

const char *aura_set_security_header(cmd_parms *cmd, void *dirv,
                                     const char *name, const char *value)
{
    aura_dir_conf_t *d = dirv;
    int i;

    for (i = 0; i < AURA_SECURITY_HEADERS; i++) {
        if (!strcasecmp(name, aura_security_header_names[i])) {
            break;
        }
    }
    if (i == AURA_SECURITY_HEADERS) {
        return apr_psprintf(cmd->pool, "%s: '%s' is not one of: "
                            "Content-Security-Policy | X-Content-Type-Options"
                            " | Referrer-Policy | X-Frame-Options | "
                            "Strict-Transport-Security", cmd->cmd->name,
                            name);
    }
    d->security_headers[i] = strcasecmp(value, "off") ? value
                                                      : aura_security_off;
    return NULL;
}
