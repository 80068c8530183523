/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_shed.c: the traffic classes of the in-flight caps (aura_shed.h).
 */
#include "resilience/aura_shed.h"

#include "apr_lib.h"
#include "apr_strings.h"

#include <string.h>

/* Between two ceilings lies the reserve of the class above: 15 % of a
 * cap only service_role (and the console) can take, 15 % more that
 * users can also take, 20 % more for anonymous visitors; public paths
 * (sign-up, JWKS) get half. */
const aura_shed_conf_t aura_shed_default = { { 100, 85, 70, 50 } };
const aura_shed_conf_t aura_shed_off = { { 100, 100, 100, 100 } };

static const char *const class_names[AURA_CLASS_COUNT] = {
    "service_role", "authenticated", "anon", "public"
};

const char *aura_class_name(aura_class_e c)
{
    return (unsigned)c < AURA_CLASS_COUNT ? class_names[c] : "anon";
}

aura_class_e aura_class_of(const char *role, int management)
{
    if (management) {
        return AURA_CLASS_SERVICE;
    }
    if (!role) {
        return AURA_CLASS_PUBLIC;
    }
    if (!strcmp(role, "service_role")) {
        return AURA_CLASS_SERVICE;
    }
    if (!strcmp(role, "authenticated")) {
        return AURA_CLASS_USER;
    }
    return AURA_CLASS_ANON;
}

apr_uint64_t aura_class_limit(apr_uint64_t cap, const aura_shed_conf_t *conf,
                              aura_class_e c)
{
    apr_uint64_t n;

    if (!cap || (unsigned)c >= AURA_CLASS_COUNT) {
        return cap;
    }
    n = cap * (conf ? conf->pct[c] : 100) / 100;
    return n ? n : 1;
}

/* "p%" with 1 <= p <= 100. */
static int percent(const char *s, unsigned int *out)
{
    unsigned int v = 0;
    int digits = 0;

    while (apr_isdigit(*s) && digits < 4) {
        v = v * 10 + (unsigned int)(*s++ - '0');
        digits++;
    }
    if (!digits || strcmp(s, "%") || v < 1 || v > 100) {
        return 0;
    }
    *out = v;
    return 1;
}

const char *aura_shed_parse(int argc, char *const argv[],
                            aura_shed_conf_t *out, char *err,
                            apr_size_t errlen)
{
    int i, c;

    if (argc == 1 && !strcasecmp(argv[0], "off")) {
        *out = aura_shed_off;
        return NULL;
    }
    *out = aura_shed_default;
    for (i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        unsigned int p;

        for (c = AURA_CLASS_USER; c < AURA_CLASS_COUNT; c++) {
            if (eq && (apr_size_t)(eq - argv[i]) == strlen(class_names[c])
                && !strncmp(argv[i], class_names[c], (apr_size_t)(eq - argv[i]))) {
                break;
            }
        }
        if (c == AURA_CLASS_COUNT) {
            apr_snprintf(err, errlen, "'%s' is not public=, anon= or "
                         "authenticated= a percentage (or off alone)",
                         argv[i]);
            return err;
        }
        if (!percent(eq + 1, &p)) {
            apr_snprintf(err, errlen, "'%s' is not a percentage between "
                         "1%% and 100%%", eq + 1);
            return err;
        }
        out->pct[c] = p;
    }
    for (c = AURA_CLASS_USER; c < AURA_CLASS_COUNT; c++) {
        if (out->pct[c] > out->pct[c - 1]) {
            apr_snprintf(err, errlen, "%s may fill %u%% of a cap, more than "
                         "%s (%u%%): a less trusted class cannot get more",
                         class_names[c], out->pct[c], class_names[c - 1],
                         out->pct[c - 1]);
            return err;
        }
    }
    return NULL;
}
