// What every part of the engine may call and that calls nothing of it: the real clock and
// a descriptor's link, read with raw system calls (never through an interposed symbol), and
// the rule of special paths (/dev, /proc, /sys) that folding, the descriptor table and
// decisions share.
#define _GNU_SOURCE
#include "internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int cf_raw_readlink_fd(int fd, char *out, size_t capacity) {
    char link[48];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    long count = syscall(SYS_readlinkat, AT_FDCWD, link, out, capacity - 1);
    if (count <= 0 || (size_t)count >= capacity - 1) return -1;
    out[count] = 0;
    return (int)count;
}

int64_t chaos_fault_real_ns(int clock) { return cf_real_ns(clock); }

int64_t cf_real_ns(int clock) {
    struct timespec now;
    if (syscall(SYS_clock_gettime, clock, &now) != 0) return 0;
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

bool cf_special_path(const char *path) {
    return strncmp(path, "/dev/", 5) == 0 || strcmp(path, "/dev") == 0 || strncmp(path, "/proc/", 6) == 0 ||
           strcmp(path, "/proc") == 0 || strncmp(path, "/sys/", 5) == 0 || strcmp(path, "/sys") == 0;
}
