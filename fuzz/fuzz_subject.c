/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_subject.c: libFuzzer harness for the NATS subjects the gateway
 * publishes on because a service named them (stream acknowledgements
 * and cancels, mod_aura_common/nats/aura_subject.c) and for the origins
 * AuraCORSAllowOrigin accepts (mod_aura_common/http/aura_origin.c).
 *
 * aura-fuzz: -max_len=1024
 *
 * Input: lines "subject\nprefix\nown" (prefix and own optional: then
 * "_INBOX." and "_INBOX.gw"); the first line is also an origin.
 *
 * Invariants:
 *  - a subject accepted for an acknowledgement is a literal subject (no
 *    empty token, no byte <= SP or >= DEL, no wildcard), at most 255
 *    bytes, strictly under the prefix, and neither the gateway's own
 *    reply inbox nor under it;
 *  - a prefix accepted ends in '.' after a literal subject;
 *  - an origin accepted is "http://" or "https://", a lower-case host,
 *    an optional port 1-65535 without leading zero and not the scheme's
 *    default, nothing else; parsing it again gives it back.
 */
#include "aura_fuzz.h"

#include "apr_lib.h"
#include "apr_strings.h"

#include "http/aura_origin.h"
#include "nats/aura_subject.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    return 0;
}

static int literal_oracle(const char *s)
{
    const char *c;
    int token = 0;

    if (!*s) {
        return 0;
    }
    for (c = s; *c; c++) {
        if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f
            || *c == '*' || *c == '>') {
            return 0;
        }
        if (*c == '.') {
            if (!token) {
                return 0;
            }
            token = 0;
        }
        else {
            token = 1;
        }
    }
    return token;
}

static void check_origin(apr_pool_t *p, const char *in)
{
    const char *out = (const char *)"unset", *why = NULL, *again = NULL;
    const char *host, *c, *port;
    apr_status_t rv = aura_origin_parse(p, in, &out, &why);
    int https;

    if (rv != APR_SUCCESS) {
        AURA_FUZZ_ASSERT(rv == APR_EINVAL && out == NULL && why != NULL);
        return;
    }
    AURA_FUZZ_ASSERT(out != NULL);
    AURA_FUZZ_ASSERT(!strcasecmp(out, in));
    https = !strncmp(out, "https://", 8);
    AURA_FUZZ_ASSERT(https || !strncmp(out, "http://", 7));
    host = out + (https ? 8 : 7);
    AURA_FUZZ_ASSERT(*host && *host != ':');
    for (c = host; *c; c++) {
        AURA_FUZZ_ASSERT(apr_isgraph(*c) && !apr_isupper(*c));
        AURA_FUZZ_ASSERT(!strchr("/?#@*\\%", *c));
    }
    port = strrchr(host, ':');
    if (port && (*host != '[' || port > strchr(host, ']'))) {
        long n = strtol(port + 1, NULL, 10);

        AURA_FUZZ_ASSERT(port[1] != '0' && strlen(port + 1) <= 5);
        AURA_FUZZ_ASSERT(n >= 1 && n <= 65535 && n != (https ? 443 : 80));
    }
    AURA_FUZZ_ASSERT(aura_origin_parse(p, out, &again, &why) == APR_SUCCESS
                     && !strcmp(again, out));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = aura_fuzz_pool();
    char *s = aura_fuzz_strndup(p, data, size);
    char *subject = s, *prefix = NULL, *own = NULL, *nl;
    const char *why;

    if ((nl = strchr(subject, '\n')) != NULL) {
        *nl = '\0';
        prefix = nl + 1;
        if ((nl = strchr(prefix, '\n')) != NULL) {
            *nl = '\0';
            own = nl + 1;
        }
    }
    AURA_FUZZ_ASSERT(aura_subject_literal(subject) == literal_oracle(subject));
    if (prefix) {
        size_t n = strlen(prefix);
        int ok = aura_subject_ack_prefix_ok(prefix);

        if (ok) {
            char *lit = apr_pstrndup(p, prefix, n - 1);

            AURA_FUZZ_ASSERT(n >= 2 && prefix[n - 1] == '.'
                             && literal_oracle(lit));
        }
        if (!ok) {
            prefix = NULL;      /* the configuration would refuse it */
        }
    }
    if (!prefix) {
        prefix = (char *)AURA_STREAM_ACK_PREFIX_DEFAULT;
    }
    if (!own) {
        own = (char *)"_INBOX.gw";
    }
    why = aura_subject_ack_refused(subject, prefix, *own ? own : NULL);
    if (!why) {
        size_t plen = strlen(prefix), olen = strlen(own);

        AURA_FUZZ_ASSERT(literal_oracle(subject));
        AURA_FUZZ_ASSERT(strlen(subject) <= AURA_STREAM_ACK_MAX);
        AURA_FUZZ_ASSERT(!strncmp(subject, prefix, plen) && subject[plen]);
        if (olen) {
            AURA_FUZZ_ASSERT(strncmp(subject, own, olen)
                             || (subject[olen] != '.' && subject[olen]));
        }
    }
    check_origin(p, subject);
    apr_pool_destroy(p);
    return 0;
}
