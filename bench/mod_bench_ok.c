/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * mod_bench_ok.c: the smallest useful httpd handler, for bench/run's
 * "bare httpd" scenario (issue #9): `SetHandler bench-ok` answers GET and
 * HEAD with 200, Content-Type text/plain and the 2-byte body "ok", from
 * memory, without touching the file system.  What stock httpd itself
 * costs per request (connection, request parsing, hooks, filters, the
 * event MPM), with nothing of a module's own on top: the httpd limit.
 * Built by bench/run with the Makefile's flags; never installed.
 */
#include "httpd.h"
#include "http_config.h"
#include "http_protocol.h"

#include <string.h>

static int bench_ok_handler(request_rec *r)
{
    if (!r->handler || strcmp(r->handler, "bench-ok")) {
        return DECLINED;
    }
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    ap_set_content_type(r, "text/plain");
    ap_set_content_length(r, 2);
    if (!r->header_only) {
        ap_rwrite("ok", 2, r);
    }
    return OK;
}

static void bench_ok_register_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_handler(bench_ok_handler, NULL, NULL, APR_HOOK_MIDDLE);
}

/* Built with -fvisibility=hidden, as the project's modules: the module
 * structure is the one symbol LoadModule must find. */
__attribute__((visibility("default")))
module AP_MODULE_DECLARE_DATA bench_ok_module = {
    STANDARD20_MODULE_STUFF,
    NULL,                       /* per-directory config */
    NULL,                       /* merge per-directory */
    NULL,                       /* per-server config */
    NULL,                       /* merge per-server */
    NULL,                       /* directives */
    bench_ok_register_hooks,
    AP_MODULE_FLAG_NONE
};
