/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_console.c: the "aura-console" handler.  The operator mounts it
 * in a Location of their choice (the management plane's /ops in the
 * sample config) behind httpd's own authentication; every part of the
 * console answers a path below that Location, from the table below.
 * The order of checks is the same for every part: the operator first
 * (aura_console_gate.c), then, for anything but a read, the cross-site
 * check, then the part itself.
 */
#include "core/aura_module.h"
#include "core/aura_config.h"
#include "console/aura_console.h"
#include "fleet/aura_fleet.h"

#include "http_protocol.h"
#include "apr_strings.h"

#include <jansson.h>

static int whoami(request_rec *r, const char *rest);

typedef struct {
    const char *path;       /* below the Location; "" is the Location */
    int subtree;            /* also answers path + "/..." */
    aura_console_fn *fn;
} console_part_t;

static const console_part_t parts[] = {
    { "",            0, aura_fleet_page },
    { "/api/whoami", 0, whoami },
    { "/api/controls", 1, aura_console_controls_api },
    { "/controls", 0, aura_console_controls_page },
    { "/assets/controls.js", 0, aura_console_controls_js },
    { "/assets/controls.css", 0, aura_console_controls_css },
    { "/api/fleet",  0, aura_fleet_api },
    { "/assets/console.css", 0, aura_fleet_css },
    { "/assets/fleet.js",    0, aura_fleet_js },
    { "/assets/icon.svg",    0, aura_fleet_icon },
};

const char *aura_console_base(request_rec *r)
{
    const char *s = aura_dir_conf(r)->section;
    apr_size_t n;

    if (!s || *s != '/') {
        return "";
    }
    n = strlen(s);
    while (n && s[n - 1] == '/') {
        n--;
    }
    return apr_pstrndup(r->pool, s, n);
}

/* What follows the Location in the path ("" or "/..."), NULL when the
 * path is not below it (a regex Location: the console wants a plain
 * prefix, docs/console.md). */
static const char *below(request_rec *r)
{
    const char *base = aura_console_base(r);
    apr_size_t n = strlen(base);
    const char *rest;

    if (strncmp(r->uri, base, n)) {
        return NULL;
    }
    rest = r->uri + n;
    if (*rest && *rest != '/') {
        return NULL;
    }
    /* "/ops/" is the page, as "/ops" is. */
    return strcmp(rest, "/") ? rest : "";
}

static const console_part_t *find_part(const char *rest, const char **tail)
{
    apr_size_t i, n;

    for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        n = strlen(parts[i].path);
        if (!strcmp(rest, parts[i].path)) {
            *tail = "";
            return &parts[i];
        }
        if (parts[i].subtree && n && !strncmp(rest, parts[i].path, n)
            && rest[n] == '/') {
            *tail = rest + n;
            return &parts[i];
        }
    }
    return NULL;
}

int aura_console_handler(request_rec *r)
{
    const console_part_t *part;
    const char *rest, *tail = "";
    int rc;

    if (!r->handler || strcmp(r->handler, AURA_HANDLER_CONSOLE)) {
        return DECLINED;
    }
    aura_console_headers(r);
    rc = aura_console_operator(r);
    if (rc != OK) {
        return rc;
    }
    rest = below(r);
    part = rest ? find_part(rest, &tail) : NULL;
    if (!part) {
        return HTTP_NOT_FOUND;
    }
    if (r->method_number != M_GET) {
        rc = aura_console_mutation_ok(r);
        if (rc != OK) {
            return rc;
        }
    }
    return part->fn(r, tail);
}

int aura_console_json(request_rec *r, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);

    json_decref(doc);
    if (!text) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    ap_set_content_type(r, "application/json");
    ap_rputs(text, r);
    ap_rputs("\n", r);
    free(text);
    return OK;
}

/* Who the console takes the operator for, and what a tool must send with
 * a mutation: a script's first call. */
static int whoami(request_rec *r, const char *rest)
{
    json_t *o = json_object();

    (void)rest;
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET) {
        json_decref(o);
        return HTTP_METHOD_NOT_ALLOWED;
    }
    json_object_set_new(o, "operator", json_string(r->user));
    json_object_set_new(o, "csrf_header",
                        json_string(AURA_CONSOLE_CSRF_HEADER));
    return aura_console_json(r, o);
}
