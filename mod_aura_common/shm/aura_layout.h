/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_layout.h: the fingerprint of the shared segment's layout, as pure
 * logic (APR only, no httpd.h: cmocka links it as it is).
 *
 * A graceful restart keeps the shared segment only when the new
 * generation would lay it out exactly as the old one did.  Instead of a
 * version number bumped by hand (easy to forget: a commit once added
 * counters without bumping it), the layout is described by a table of
 * rows built by the compiler, one per struct that lives in the segment
 * (its sizeof and alignment) and one per member (its offsetof and
 * sizeof), and the fingerprint is a hash of that table followed by the
 * run-time geometry (table sizes, zone names and sizes).  Any member
 * added, removed, resized or moved changes an offset or a size, and so
 * the fingerprint.  What no sizeof shows (the meaning of the bits of a
 * word) still needs a hand-made mark: see AURA_SHM_ENCODING in
 * aura_shm.c.
 *
 * The hash is FNV-1a 64 over each value as 8 little-endian bytes: it is
 * not keyed because nothing here comes from a client.
 */
#ifndef AURA_LAYOUT_H
#define AURA_LAYOUT_H

#include "apr.h"

#include <stddef.h>

#define AURA_LAYOUT_STRUCT_ROW 1
#define AURA_LAYOUT_MEMBER_ROW 2

/** One row of a layout table. */
typedef struct {
    apr_uint64_t kind;     /**< AURA_LAYOUT_STRUCT_ROW or _MEMBER_ROW */
    apr_uint64_t offset;   /**< the member's offsetof; a struct's alignment */
    apr_uint64_t size;     /**< sizeof the member or of the struct */
} aura_layout_row_t;

/** A struct's row: put it before the rows of its members. */
#define AURA_LAYOUT_STRUCT(type) \
    { AURA_LAYOUT_STRUCT_ROW, _Alignof(type), sizeof(type) }
/** A member's row. */
#define AURA_LAYOUT_MEMBER(type, member) \
    { AURA_LAYOUT_MEMBER_ROW, offsetof(type, member), \
      sizeof(((type *)0)->member) }

#define AURA_LAYOUT_INIT APR_UINT64_C(0xcbf29ce484222325) /* FNV offset */

/**
 * Continue a fingerprint with one value (8 bytes, little-endian).
 * @param h the fingerprint so far (AURA_LAYOUT_INIT to start)
 * @return the new fingerprint
 */
apr_uint64_t aura_layout_mix(apr_uint64_t h, apr_uint64_t v);

/**
 * Continue a fingerprint with a string: its length, then its bytes
 * (so "ab","c" and "a","bc" differ).
 */
apr_uint64_t aura_layout_mix_str(apr_uint64_t h, const char *s);

/**
 * The fingerprint of a layout table: the number of rows, then every
 * field of every row, in order.
 * @param rows the table (order matters: it is part of the layout)
 * @param n its number of rows
 * @return a fingerprint to continue with the geometry (aura_layout_mix)
 */
apr_uint64_t aura_layout_fingerprint(const aura_layout_row_t *rows,
                                     apr_size_t n);

#endif /* AURA_LAYOUT_H */
