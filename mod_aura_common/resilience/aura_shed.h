/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_shed.h: the traffic classes of the in-flight caps and how much of
 * a cap each may fill (AuraShedding), as pure logic (APR only, no
 * httpd.h: cmocka links it as it is).  aura_bulkhead.c decides with it.
 *
 * When capacity runs short, the caps used to refuse whoever came next:
 * the public anon key could hold every slot a service_role backend
 * needed.  Each request now has a class, from what the gateway verified
 * (most trusted first), and each class may fill a cap only up to its
 * ceiling: what lies above a class's ceiling is reserved for the classes
 * above it, so under overload the least trusted are refused first and
 * the most trusted find a slot.
 */
#ifndef AURA_SHED_H
#define AURA_SHED_H

#include "apr.h"

/** Request classes, most trusted first (the order matters). */
typedef enum {
    AURA_CLASS_SERVICE = 0, /**< service_role key, and the management plane */
    AURA_CLASS_USER,        /**< a verified user token */
    AURA_CLASS_ANON,        /**< the anon key alone */
    AURA_CLASS_PUBLIC,      /**< no credential (AuraPublic Locations) */
    AURA_CLASS_COUNT
} aura_class_e;

/** How much of each cap a class may fill, in percent; [SERVICE] is 100. */
typedef struct aura_shed_conf_t {
    unsigned int pct[AURA_CLASS_COUNT];
} aura_shed_conf_t;

/* The defaults: public 50 %, anon 70 %, authenticated 85 %. */
extern const aura_shed_conf_t aura_shed_default;
/* AuraShedding off: every class may fill every cap. */
extern const aura_shed_conf_t aura_shed_off;

/** The class's name as the docs, metrics and logs say it. */
const char *aura_class_name(aura_class_e c);

/**
 * The class of a request from its verified role.
 * @param role "service_role", "authenticated", "anon", NULL (nothing
 *        verified: a public Location); anything else counts as anon
 * @param management whether it came in on the management plane, whose
 *        console members are never shed by the data plane's load
 */
aura_class_e aura_class_of(const char *role, int management);

/**
 * The slots of a cap a class may fill: cap x its percentage, rounded
 * down but at least 1 (a class is slowed, never shut out by rounding);
 * 0 (no cap) stays 0.
 */
apr_uint64_t aura_class_limit(apr_uint64_t cap, const aura_shed_conf_t *conf,
                              aura_class_e c);

/**
 * Parse AuraShedding's arguments: "off", or one or more class=p% words
 * (public, anon, authenticated; 1..100), the others keeping their
 * defaults; a less trusted class may not get more than a more trusted
 * one.
 * @param argv the words, argc of them
 * @param out the result
 * @param err room for the reason of a refusal
 * @return NULL, or err filled
 */
const char *aura_shed_parse(int argc, char *const argv[],
                            aura_shed_conf_t *out, char *err,
                            apr_size_t errlen);

#endif /* AURA_SHED_H */
