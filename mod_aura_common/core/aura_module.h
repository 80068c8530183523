/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_module.h: the module record and the log tags every file of mod_aura_common
 * logs with (APLOG_USE_MODULE makes each file's own static index).
 */
#ifndef AURA_MODULE_H
#define AURA_MODULE_H

#include "aura.h"

/* The release, from VERSION through configure (Makefile.in passes it);
 * a build outside the Makefile says so rather than failing. */
#ifndef AURA_VERSION
#define AURA_VERSION "(unversioned build)"
#endif

APLOG_USE_MODULE(aura_common);
extern module AP_MODULE_DECLARE_DATA aura_common_module;

#endif /* AURA_MODULE_H */
