/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_logout.h: the OpenID Connect Back-Channel Logout 1.0 endpoint
 * (aura_logout.c): SetHandler aura-backchannel-logout in a data-plane
 * Location with AuraBackchannelLogout.  An identity provider POSTs a
 * logout_token; a valid one revokes the session's (sid) or the user's
 * (sub) tokens issued until then, on every instance, as a revocation
 * set on the console does (control/aura_revoke.h).
 */
#ifndef AURA_LOGOUT_H
#define AURA_LOGOUT_H

#include "aura.h"

#define AURA_HANDLER_LOGOUT "aura-backchannel-logout"
/* A form with one logout_token: tokens are bounded by AuraJWTMaxLength
 * (at most 64 KiB), so is the body. */
#define AURA_LOGOUT_BODY_MAX (64 * 1024)

/* AuraBackchannelLogout: whose logout_tokens the Location takes. */
typedef struct aura_logout_conf_t {
    const char *project;          /* the scope of what it revokes */
    const char *issuer;           /* iss, exactly */
    const char *audience;         /* aud: the client_id */
} aura_logout_conf_t;

const char *aura_set_backchannel_logout(cmd_parms *cmd, void *dirv,
                                        const char *args);

int aura_logout_handler(request_rec *r);

#define AURA_LOGOUT_DIRECTIVES \
    AP_INIT_RAW_ARGS("AuraBackchannelLogout", aura_set_backchannel_logout, \
                     NULL, ACCESS_CONF, "The project, issuer and " \
                     "audience of the OpenID Connect back-channel " \
                     "logouts this Location takes")

#endif /* AURA_LOGOUT_H */
