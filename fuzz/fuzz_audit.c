/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * fuzz_audit.c: libFuzzer harness for the audit log's record line and
 * the reading of a log's tail (mod_aura_common/audit/aura_audit_record.c).
 *
 * aura-fuzz: -max_len=4096
 *
 * Input: the whole input is a log's tail; split at NUL bytes, its
 * pieces are also the string fields of a record.
 *
 * Invariants:
 *  - the tail is read as a record only when it ends with '\n', its last
 *    line starts with {"seq":N, (N >= 1, no leading zero), and the hash
 *    returned is the SHA-256 of that line; a tail not known to start at
 *    the file's start never yields a line that starts the buffer;
 *  - a record line built from any field values is one line of
 *    printable ASCII, starts with {"seq":, ends with }, and read back
 *    as a tail (with its newline) gives its seq and its own hash.
 */
#include "aura_fuzz.h"

#include "apr_strings.h"

#include "audit/aura_audit_record.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    aura_fuzz_apr_init();
    return 0;
}

static void check_tail(const char *buf, size_t len, int whole)
{
    char h[AURA_AUDIT_HASH_HEX + 1], want[AURA_AUDIT_HASH_HEX + 1];
    apr_uint64_t seq = 0;
    size_t start;

    if (aura_audit_tail(buf, len, whole, &seq, h) != APR_SUCCESS) {
        return;
    }
    AURA_FUZZ_ASSERT(len > 0 && buf[len - 1] == '\n' && seq >= 1);
    start = len - 1;
    while (start > 0 && buf[start - 1] != '\n') {
        start--;
    }
    AURA_FUZZ_ASSERT(whole || start > 0);
    AURA_FUZZ_ASSERT(!strncmp(buf + start, "{\"seq\":", 7)
                     && buf[start + 7] >= '1' && buf[start + 7] <= '9');
    AURA_FUZZ_ASSERT(strtoull(buf + start + 7, NULL, 10) == seq);
    aura_audit_hash(buf + start, len - 1 - start, want);
    AURA_FUZZ_ASSERT(!strcmp(h, want));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = aura_fuzz_pool();
    const char *piece[8];
    aura_audit_fields_t f;
    char h[AURA_AUDIT_HASH_HEX + 1], got[AURA_AUDIT_HASH_HEX + 1];
    const char *line, *c;
    apr_uint64_t seq = 0;
    size_t i, at = 0;

    check_tail((const char *)data, size, 1);
    check_tail((const char *)data, size, 0);

    for (i = 0; i < 8; i++) {
        piece[i] = aura_fuzz_strndup(p, data + at, size - at);
        at += strlen(piece[i]) + (at + strlen(piece[i]) < size);
    }
    memset(&f, 0, sizeof(f));
    f.seq = size + 1;
    f.prev = AURA_AUDIT_GENESIS;
    f.time = (apr_time_t)size * APR_USEC_PER_SEC;
    f.instance = piece[0];
    f.actor = piece[1];
    f.path = piece[2];
    f.target = piece[3];
    f.route = piece[4];
    f.problem = size % 2 ? piece[5] : NULL;
    f.method = piece[6];
    f.request_id = piece[7];
    f.status = (int)(size % 600);
    f.outcome = aura_audit_outcome(f.problem);
    line = aura_audit_line(p, &f);
    for (c = line; *c; c++) {
        AURA_FUZZ_ASSERT(*c >= 0x20 && *c < 0x7f);
    }
    AURA_FUZZ_ASSERT(!strncmp(line, "{\"seq\":", 7) && c[-1] == '}');
    aura_audit_hash(line, strlen(line), h);
    AURA_FUZZ_ASSERT(aura_audit_tail(apr_pstrcat(p, line, "\n", NULL),
                                     strlen(line) + 1, 1, &seq, got)
                     == APR_SUCCESS);
    AURA_FUZZ_ASSERT(seq == f.seq && !strcmp(got, h));
    apr_pool_destroy(p);
    return 0;
}
