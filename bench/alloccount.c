/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * alloccount.c: an LD_PRELOAD shim that counts the C library's heap
 * calls of a process and of its forked children, for bench/run's
 * allocations table (issue #19).  Never built nor run by CI.
 *
 *   ALLOCCOUNT_DIR=/dir LD_PRELOAD=bench/alloccount.so program ...
 *
 * Counted: malloc, calloc, realloc, free (of a non-NULL pointer),
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc; and the
 * frees (and reallocs) done on another thread than the one that made
 * the block ("cross-thread"), which defeat glibc's per-thread caches.
 *
 * How it knows the allocating thread: every block is allocated 16 bytes
 * larger (more for an alignment above 16) and starts with a header
 * {magic1, tid, magic2, offset} right before the pointer returned.  A
 * pointer without the header (made before the shim was mapped, or by
 * the dynamic linker's own allocator) is passed to glibc as it is: magic2
 * sits where glibc keeps the low half of a chunk's size, and has bit 3
 * set, which a chunk size (a multiple of 16 with flags in bits 0-2) never
 * has, so a foreign pointer is never mistaken for one of ours.
 *
 * How the counts get out: each process maps the file ALLOCCOUNT_DIR/<pid>
 * (MAP_SHARED) and increments its counters there with relaxed atomics;
 * a child made by fork() maps a file of its own (pthread_atfork).  A
 * reader (bench/run) sums the files whenever it likes, without signals
 * or threads in the measured process, and the counts of a process that
 * exited stay in its file.  The file is ALLOCCOUNT_NCOUNTERS unsigned
 * 64-bit little-endian counters in the order of enum below.  Without
 * ALLOCCOUNT_DIR the counts go to a private page and are lost.
 *
 * The real functions are glibc's __libc_* entry points (no dlsym, which
 * itself allocates); malloc_usable_size is looked up with dlsym once the
 * shim works.  glibc's own internal allocations (strdup, fopen...) go
 * through the public, interposed symbols and are counted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The Makefile's flags hide every symbol (-fvisibility=hidden): the
 * interposed functions must be exported to take glibc's place. */
#define EXPORT __attribute__((visibility("default")))

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

enum {
    C_MALLOC,
    C_CALLOC,
    C_REALLOC,
    C_MEMALIGN,     /* posix_memalign, aligned_alloc, memalign, valloc... */
    C_FREE,         /* free() of a non-NULL pointer */
    C_FREE_CROSS,   /* ... made by another thread */
    C_REALLOC_CROSS, /* realloc() of a block made by another thread */
    C_FREE_FOREIGN, /* free() of a pointer without our header */
    C_BYTES,        /* bytes asked for (malloc, calloc, realloc, aligned) */
    ALLOCCOUNT_NCOUNTERS
};

#define MAGIC1 0x414c4c43u /* "ALLC" */
#define MAGIC2 0xa110c8edu /* bit 3 set: never a glibc chunk size */
#define HDR 16

struct hdr {
    uint32_t magic1;
    uint32_t tid;
    uint32_t magic2;
    uint32_t offset; /* from the start of the real block to the pointer */
};

/* Counters: a private page until the file is mapped, so that calls made
 * before the constructor ran are counted somewhere harmless. */
static uint64_t early[ALLOCCOUNT_NCOUNTERS];
static uint64_t *counters = early;
static __thread uint32_t my_tid;
static size_t (*real_usable)(void *);

static inline void count(int which, uint64_t n)
{
    __atomic_fetch_add(&counters[which], n, __ATOMIC_RELAXED);
}

static inline uint32_t tid(void)
{
    if (!my_tid) {
        my_tid = (uint32_t)syscall(SYS_gettid);
    }
    return my_tid;
}

static void *tag(void *base, size_t offset)
{
    struct hdr *h;

    if (!base) {
        return NULL;
    }
    h = (struct hdr *)((char *)base + offset - HDR);
    h->magic1 = MAGIC1;
    h->tid = tid();
    h->magic2 = MAGIC2;
    h->offset = (uint32_t)offset;
    return (char *)base + offset;
}

/* The header of P, or NULL when P is not one of ours. */
static struct hdr *hdr_of(void *p)
{
    struct hdr *h = (struct hdr *)((char *)p - HDR);

    return h->magic2 == MAGIC2 && h->magic1 == MAGIC1 ? h : NULL;
}

/* Map ALLOCCOUNT_DIR/<pid> as this process's counters (the constructor,
 * and the child side of fork()).  A failure leaves the private page: the
 * reader then misses this process, which it reports as a missing file. */
static void map_counters(void)
{
    const char *dir = getenv("ALLOCCOUNT_DIR");
    char path[4096];
    void *m;
    int fd;

    counters = early;
    memset(early, 0, sizeof(early));
    if (!dir || !*dir
        || snprintf(path, sizeof(path), "%s/%ld", dir, (long)getpid())
               >= (int)sizeof(path)) {
        return;
    }
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return;
    }
    if (ftruncate(fd, (off_t)sizeof(early)) == 0) {
        m = mmap(NULL, sizeof(early), PROT_READ | PROT_WRITE, MAP_SHARED,
                 fd, 0);
        if (m != MAP_FAILED) {
            counters = m;
        }
    }
    close(fd);
}

static void after_fork_child(void)
{
    my_tid = 0;
    map_counters();
}

__attribute__((constructor)) static void alloccount_init(void)
{
    map_counters();
    pthread_atfork(NULL, NULL, after_fork_child);
    real_usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
}

EXPORT void *malloc(size_t n)
{
    if (n > SIZE_MAX - HDR) {
        errno = ENOMEM;
        return NULL;
    }
    count(C_MALLOC, 1);
    count(C_BYTES, n);
    return tag(__libc_malloc(n + HDR), HDR);
}

EXPORT void *calloc(size_t n, size_t m)
{
    size_t t;

    if (__builtin_mul_overflow(n, m, &t) || t > SIZE_MAX - HDR) {
        errno = ENOMEM;
        return NULL;
    }
    count(C_CALLOC, 1);
    count(C_BYTES, t);
    return tag(__libc_calloc(1, t + HDR), HDR);
}

EXPORT void free(void *p)
{
    struct hdr *h;

    if (!p) {
        return;
    }
    count(C_FREE, 1);
    h = hdr_of(p);
    if (!h) {
        count(C_FREE_FOREIGN, 1);
        __libc_free(p);
        return;
    }
    if (h->tid != tid()) {
        count(C_FREE_CROSS, 1);
    }
    h->magic1 = h->magic2 = 0;
    __libc_free((char *)p - h->offset);
}

/* Usable bytes after P (ours), for copying an aligned block. */
static size_t usable_of(void *p, struct hdr *h)
{
    void *base = (char *)p - h->offset;

    return real_usable ? real_usable(base) - h->offset : 0;
}

EXPORT void *realloc(void *p, size_t n)
{
    struct hdr *h;
    void *q;

    if (!p) {
        return malloc(n);
    }
    if (n == 0) {
        free(p);
        return NULL;
    }
    h = hdr_of(p);
    if (!h) {
        /* Not ours: glibc's realloc, then a block of ours with a copy. */
        size_t old = real_usable ? real_usable(p) : 0;

        q = malloc(n);
        if (q) {
            memcpy(q, p, old < n ? old : n);
            __libc_free(p);
        }
        return q;
    }
    if (n > SIZE_MAX - HDR - h->offset) {
        errno = ENOMEM;
        return NULL;
    }
    count(C_REALLOC, 1);
    count(C_BYTES, n);
    if (h->tid != tid()) {
        count(C_REALLOC_CROSS, 1);
    }
    if (h->offset != HDR) {
        /* An aligned block: glibc's realloc would not keep the alignment
         * (nor does C's); a plain block and a copy. */
        size_t old = usable_of(p, h);

        q = tag(__libc_malloc(n + HDR), HDR);
        if (q) {
            memcpy(q, p, old < n ? old : n);
            h->magic1 = h->magic2 = 0;
            __libc_free((char *)p - h->offset);
        }
        return q;
    }
    h->magic1 = h->magic2 = 0;
    q = __libc_realloc((char *)p - HDR, n + HDR);
    if (!q) {
        /* The old block is still valid: give its header back. */
        h->magic1 = MAGIC1;
        h->magic2 = MAGIC2;
        return NULL;
    }
    return tag(q, HDR);
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
    size_t t;

    if (__builtin_mul_overflow(n, m, &t)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, t);
}

static void *aligned(size_t al, size_t n)
{
    size_t off;

    if (al <= HDR) {
        off = HDR;
        al = HDR;
    } else {
        off = al;
    }
    if (n > SIZE_MAX - off || off > UINT32_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    count(C_MEMALIGN, 1);
    count(C_BYTES, n);
    return tag(__libc_memalign(al, n + off), off);
}

EXPORT int posix_memalign(void **out, size_t al, size_t n)
{
    void *p;

    if (al < sizeof(void *) || (al & (al - 1))) {
        return EINVAL;
    }
    p = aligned(al, n);
    if (!p) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

EXPORT void *aligned_alloc(size_t al, size_t n)
{
    if (al == 0 || (al & (al - 1))) {
        errno = EINVAL;
        return NULL;
    }
    return aligned(al, n);
}

EXPORT void *memalign(size_t al, size_t n)
{
    if (al == 0 || (al & (al - 1))) {
        errno = EINVAL;
        return NULL;
    }
    return aligned(al, n);
}

EXPORT void *valloc(size_t n)
{
    return aligned((size_t)sysconf(_SC_PAGESIZE), n);
}

EXPORT void *pvalloc(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);

    return aligned(pg, (n + pg - 1) & ~(pg - 1));
}

EXPORT size_t malloc_usable_size(void *p)
{
    struct hdr *h;

    if (!p) {
        return 0;
    }
    h = hdr_of(p);
    if (!h) {
        return real_usable ? real_usable(p) : 0;
    }
    return usable_of(p, h);
}
