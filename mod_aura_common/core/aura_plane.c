/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_plane.c: the plane registry.  Adding a plane is adding a row
 * here (and its module): the rest of mod_aura_common reads the row, so
 * no plane branch hides in a mechanism.
 */
#include "core/aura_plane.h"

#include "apr_strings.h"

/* Indexed by aura_plane_e. */
static const aura_plane_info_t planes[] = {
    /* No plane: never counted (only the requests a plane module took in
     * are), index 0 only keeps any index in range; no connection cap,
     * so loading mod_aura_common changes nothing for other sites. */
    { AURA_PLANE_NONE, "none", 0, NULL, NULL, 0, 0, 0, 0 },
    /* The public plane: both connection caps on by default. */
    { AURA_PLANE_DATA, "data", 0, "mod_aura_data.c", "mod_aura_data",
      AURA_CAP_AUTO_DATA_PCT, 1, 1, AURA_STREAM_AUTO_DATA_PCT },
    /* The console's plane: its clients are few and known; a cap on the
     * connections per address, none on reading ones. */
    { AURA_PLANE_MGMT, "management", 1, "mod_aura_mgmt.c", "mod_aura_mgmt",
      AURA_CAP_AUTO_MGMT_PCT, 1, 0, AURA_STREAM_AUTO_MGMT_PCT }
};

#define PLANE_ROWS (sizeof(planes) / sizeof(planes[0]))

const aura_plane_info_t *aura_plane_info(int plane)
{
    return plane > 0 && (apr_size_t)plane < PLANE_ROWS ? &planes[plane]
                                                       : &planes[0];
}

const aura_plane_info_t *aura_plane_at(int index)
{
    apr_size_t i;

    for (i = 1; i < PLANE_ROWS; i++) {
        if (planes[i].index == index) {
            return &planes[i];
        }
    }
    return &planes[0];
}

AURA_DECLARE(const char *) aura_plane_name(aura_plane_e plane)
{
    return aura_plane_info(plane)->name;
}

apr_status_t aura_plane_parse(const char *word, aura_plane_e *out)
{
    apr_size_t i;

    for (i = 0; i < PLANE_ROWS; i++) {
        if (!strcasecmp(word, planes[i].name)) {
            *out = planes[i].plane;
            return APR_SUCCESS;
        }
    }
    return APR_EINVAL;
}

/* The planes first, then "none", as the directive's documentation
 * lists them. */
const char *aura_plane_words(apr_pool_t *p)
{
    const char *list = NULL;
    apr_size_t i;

    for (i = 1; i <= PLANE_ROWS; i++) {
        const char *name = planes[i % PLANE_ROWS].name;

        list = list ? apr_pstrcat(p, list, " | ", name, NULL) : name;
    }
    return list;
}
