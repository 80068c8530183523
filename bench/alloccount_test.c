/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * alloccount_test.c: bench/run's check of bench/alloccount.so before it
 * trusts its counts.  Never built nor run by CI.
 *
 *   ALLOCCOUNT_DIR=DIR LD_PRELOAD=bench/alloccount.so bench/alloccount_test
 *
 * Makes a known number of each call (with no stdio in between, which
 * allocates too), reads its own counter file DIR/<pid> before and after,
 * and fails unless the differences are exactly the calls made: plain and
 * cross-thread frees, reallocs (also of an aligned block, whose data must
 * survive), the aligned allocations (aligned as asked), calloc (zeroed),
 * a forked child's own file.  Prints "alloccount: ok" or what differs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MALLOC, CALLOC, REALLOC, ALIGNED, FREE, FREE_CROSS, REALLOC_CROSS,
       FREE_FOREIGN, BYTES, N };
#define BLOCKS 1000

static void *blocks[BLOCKS];
static const char *dir;
static int failed;

/* The counters of process PID from its file (no allocation). */
static void counts(long pid, uint64_t *c)
{
    char path[4096];
    int fd;

    snprintf(path, sizeof(path), "%s/%ld", dir, pid);
    memset(c, 0, N * sizeof(*c));
    fd = open(path, O_RDONLY);
    if (fd < 0 || read(fd, c, N * sizeof(*c)) != (ssize_t)(N * sizeof(*c))) {
        fprintf(stderr, "alloccount: cannot read %s\n", path);
        exit(1);
    }
    close(fd);
}

static void expect(const char *what, const uint64_t *a, const uint64_t *b,
                   int which, uint64_t want)
{
    if (b[which] - a[which] != want) {
        fprintf(stderr, "alloccount: %s: %llu, want %llu\n", what,
                (unsigned long long)(b[which] - a[which]),
                (unsigned long long)want);
        failed = 1;
    }
}

static void *free_all(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < BLOCKS; i++) {
        free(blocks[i]);
    }
    return NULL;
}

int main(void)
{
    uint64_t a[N], b[N];
    pthread_t t;
    void *volatile p;
    char *q;
    int i;

    dir = getenv("ALLOCCOUNT_DIR");
    if (!dir) {
        fprintf(stderr, "alloccount: ALLOCCOUNT_DIR is not set\n");
        return 1;
    }
    /* Made here, freed on another thread. */
    counts(getpid(), a);
    for (i = 0; i < BLOCKS; i++) {
        blocks[i] = malloc((size_t)i + 1);
        memset(blocks[i], 1, (size_t)i + 1);
    }
    counts(getpid(), b);
    expect("malloc", a, b, MALLOC, BLOCKS);
    expect("bytes", a, b, BYTES, (uint64_t)BLOCKS * (BLOCKS + 1) / 2);
    /* pthread_create allocates the new thread's TLS vector (calloc, not
     * counted below). */
    counts(getpid(), a);
    if (pthread_create(&t, NULL, free_all, NULL) || pthread_join(t, NULL)) {
        return 1;
    }
    counts(getpid(), b);
    expect("cross-thread free", a, b, FREE_CROSS, BLOCKS);

    /* Same thread: aligned, realloc of an aligned block, calloc. */
    counts(getpid(), a);
    for (i = 0; i < 100; i++) {
        void *m;

        if (posix_memalign(&m, 4096, 100) || (uintptr_t)m % 4096) {
            fprintf(stderr, "alloccount: posix_memalign misaligned\n");
            return 1;
        }
        memset(m, 2, 100);
        q = realloc(m, 5000);
        if (!q || q[0] != 2 || q[99] != 2) {
            fprintf(stderr, "alloccount: realloc lost the data\n");
            return 1;
        }
        free(q);
    }
    p = aligned_alloc(64, 128);
    if ((uintptr_t)p % 64) {
        fprintf(stderr, "alloccount: aligned_alloc misaligned\n");
        return 1;
    }
    free(p);
    p = memalign(32, 10);
    if ((uintptr_t)p % 32 || malloc_usable_size(p) < 10) {
        fprintf(stderr, "alloccount: memalign\n");
        return 1;
    }
    free(p);
    q = calloc(10, 10);
    for (i = 0; i < 100; i++) {
        if (q[i]) {
            fprintf(stderr, "alloccount: calloc not zeroed\n");
            return 1;
        }
    }
    q = realloc(q, 1 << 20);
    q = realloc(q, 10);
    free(q);
    counts(getpid(), b);
    expect("aligned", a, b, ALIGNED, 102);
    expect("realloc", a, b, REALLOC, 102);
    expect("calloc", a, b, CALLOC, 1);
    expect("free (same thread)", a, b, FREE, 103);
    expect("cross-thread free (none)", a, b, FREE_CROSS, 0);
    expect("foreign free (none)", a, b, FREE_FOREIGN, 0);

    /* A forked child counts in its own file. */
    fflush(NULL);
    if (fork() == 0) {
        counts(getpid(), a);
        for (i = 0; i < 7; i++) {
            p = malloc(10);
            free(p);
        }
        counts(getpid(), b);
        expect("child malloc", a, b, MALLOC, 7);
        expect("child free", a, b, FREE, 7);
        _exit(failed);
    }
    if (wait(&i) < 0 || !WIFEXITED(i) || WEXITSTATUS(i)) {
        failed = 1;
    }
    if (failed) {
        return 1;
    }
    printf("alloccount: ok\n");
    return 0;
}
