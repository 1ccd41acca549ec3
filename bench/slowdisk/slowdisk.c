/* arbor-bench's slow disk: a preload library that makes every fsync and fdatasync of a
 * process last at least SLOWDISK_US microseconds (default 4000), as on network volumes and
 * laptops whose disks honour full syncs. Syncs from several threads overlap, as a device's
 * flushes do. With SLOWDISK_COUNT=FILE the number of syncs is added to FILE at exit.
 * Built by `arbor-bench durability` with the system's C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_long syncs;

static long wanted_us(void) {
    const char *text = getenv("SLOWDISK_US");
    return text ? atol(text) : 4000;
}

static void last_at_least(struct timespec start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long spent = (now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000;
    long rest = wanted_us() - spent;
    if (rest > 0) {
        struct timespec pause = {rest / 1000000L, (rest % 1000000L) * 1000L};
        nanosleep(&pause, NULL);
    }
}

static void report(void) {
    const char *path = getenv("SLOWDISK_COUNT");
    if (!path) return;
    FILE *out = fopen(path, "a");
    if (out) {
        fprintf(out, "%ld\n", atomic_load(&syncs));
        fclose(out);
    }
}

__attribute__((constructor)) static void setup(void) { atexit(report); }

#define SLOW(name)                                                   \
    int name(int fd) {                                               \
        static int (*real)(int);                                     \
        if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, #name);     \
        struct timespec start;                                       \
        clock_gettime(CLOCK_MONOTONIC, &start);                      \
        int rc = real(fd);                                           \
        atomic_fetch_add(&syncs, 1);                                 \
        last_at_least(start);                                        \
        return rc;                                                   \
    }

SLOW(fsync)
SLOW(fdatasync)
