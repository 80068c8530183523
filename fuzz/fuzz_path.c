/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_path.c: libFuzzer harness for aura_path_check (aura_path.c), the
 * raw request path's admission rule (issue #15 point 5).  Each input is
 * one raw path.  Three checks:
 * - invariants of an accepted path, on its one-pass decoding (what
 *   httpd's r->uri becomes): it starts with "/", holds no NUL or other
 *   control character, no "\", no "//", no segment "." or ".." (nor one
 *   that is "." or ".." before ";parameters"), and has as many "/" as
 *   the raw path (no encoded slash);
 * - a reference verdict, computed the other way round (decode the whole
 *   path first, then split it), must equal the function's with
 *   AURA_PATH_ALLOW_PARAMS: a refusal the rule does not call for is a
 *   finding too;
 * - without the flag (issue #29 point 4) the verdict is the same, but
 *   that a path accepted with it is refused (AURA_PATH_EPARAMS) exactly
 *   when its decoding holds a ";".
 * Build standalone:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -I mod_aura_common \
 *     $(apr-1-config --includes --cppflags) fuzz/fuzz_path.c \
 *     mod_aura_common/core/aura_path.c $(apr-1-config --link-ld --libs)
 * Seeds: fuzz/corpus/path/.
 */
#include "core/aura_path.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond) do { if (!(cond)) { abort(); } } while (0)

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Decodes data into out (at most size bytes).  Returns the decoded
 * length, or -1 when the reference rule refuses a byte or an escape. */
static long ref_decode(const uint8_t *data, size_t size, unsigned char *out)
{
    size_t i = 0, n = 0;

    while (i < size) {
        unsigned char c = data[i];

        if (c == '%') {
            int hi = i + 2 < size ? hexval(data[i + 1]) : -1;
            int lo = hi >= 0 ? hexval(data[i + 2]) : -1;

            if (hi < 0 || lo < 0) {
                return -1;
            }
            c = (unsigned char)(hi * 16 + lo);
            if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) {
                return -1;
            }
            i += 3;
        }
        else {
            if (c <= 0x20 || c == 0x7f || c == '\\') {
                return -1;
            }
            i++;
        }
        out[n++] = c;
    }
    return (long)n;
}

/* The name of a segment: what precedes its first ";". */
static size_t name_len(const unsigned char *seg, size_t len)
{
    const unsigned char *semi = memchr(seg, ';', len);

    return semi ? (size_t)(semi - seg) : len;
}

static int is_dots(const unsigned char *s, size_t len)
{
    return (len == 1 && s[0] == '.')
           || (len == 2 && s[0] == '.' && s[1] == '.');
}

/* 1 when the reference rule accepts the decoded path d[0..n). */
static int ref_segments_ok(const unsigned char *d, size_t n)
{
    size_t start = 1;

    if (n == 0 || d[0] != '/') {
        return 0;
    }
    for (;;) {
        const unsigned char *slash = memchr(d + start, '/', n - start);
        size_t end = slash ? (size_t)(slash - d) : n;
        size_t seg = end - start;
        size_t name = name_len(d + start, seg);

        if (is_dots(d + start, name)) {
            return 0;
        }
        if (name == 0 && (slash || seg > 0)) {
            return 0;
        }
        if (!slash) {
            return 1;
        }
        start = end + 1;
    }
}

static size_t count(const unsigned char *s, size_t len, unsigned char c)
{
    size_t i, k = 0;

    for (i = 0; i < len; i++) {
        k += s[i] == c;
    }
    return k;
}

static void check_accepted(const uint8_t *data, size_t size,
                           const unsigned char *d, size_t n)
{
    size_t i, start = 1;

    CHECK(n > 0 && d[0] == '/');
    CHECK(count(d, n, '/') == count(data, size, '/'));
    for (i = 0; i < n; i++) {
        CHECK(d[i] >= 0x20 && d[i] != 0x7f && d[i] != '\\');
        CHECK(!(d[i] == '/' && i + 1 < n && d[i + 1] == '/'));
    }
    while (start <= n) {
        const unsigned char *slash = memchr(d + start, '/', n - start);
        size_t end = slash ? (size_t)(slash - d) : n;

        CHECK(!is_dots(d + start, end - start));
        CHECK(!is_dots(d + start, name_len(d + start, end - start)));
        start = end + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy: ASan then catches any read past len. */
    char *raw = malloc(size ? size : 1);
    unsigned char *dec = malloc(size ? size : 1);
    const char *why = NULL;
    apr_status_t rv;
    long n;
    int want;

    CHECK(raw && dec);
    memcpy(raw, data, size);
    rv = aura_path_check(raw, size, AURA_PATH_ALLOW_PARAMS, &why);
    CHECK(rv == APR_SUCCESS || rv == APR_EINVAL);
    CHECK(rv == APR_SUCCESS ? why == NULL : why != NULL);

    n = size ? ref_decode(data, size, dec) : -1;
    want = n >= 0 && ref_segments_ok(dec, (size_t)n);
    CHECK(want == (rv == APR_SUCCESS));
    if (rv == APR_SUCCESS) {
        check_accepted(data, size, dec, (size_t)n);
    }
    /* Without the flag (the default on both planes): the same answer,
     * except that an accepted path with a ";" (raw or encoded: the
     * decoded bytes have it) is refused for it alone. */
    {
        const char *why2 = NULL;
        apr_status_t rv2 = aura_path_check(raw, size, 0, &why2);

        if (rv != APR_SUCCESS) {
            CHECK(rv2 == APR_EINVAL && why2 && !strcmp(why2, why));
        }
        else if (memchr(dec, ';', (size_t)n)) {
            CHECK(rv2 == AURA_PATH_EPARAMS && why2 != NULL);
        }
        else {
            CHECK(rv2 == APR_SUCCESS && why2 == NULL);
        }
    }
    free(dec);
    free(raw);
    return 0;
}
