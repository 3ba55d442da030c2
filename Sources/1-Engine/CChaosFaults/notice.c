// See include/chaos_notice.h.
#define _GNU_SOURCE
#include "internal.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int said[CHAOS_NOTICE_COUNT];

void chaos_notice_once(chaos_notice notice, const char *message) {
    if ((unsigned)notice >= CHAOS_NOTICE_COUNT || atomic_exchange(&said[notice], 1)) return;
    char program[PATH_MAX] = "";
    long length = syscall(SYS_readlink, "/proc/self/exe", program, sizeof program - 1);
    program[length > 0 ? length : 0] = 0;
    char line[PATH_MAX + 512];
    int size = snprintf(line, sizeof line, "chaos: process %d (%s): %s\n", (int)syscall(SYS_getpid), program, message);
    if (size > (int)sizeof line - 1) size = (int)sizeof line - 1;
    // Raw: stdio's buffers and locks are the program's.
    if (size > 0) (void)!syscall(SYS_write, 2, line, (size_t)size);
}

void chaos_io_uring_sentence(char *out, size_t capacity, int allowed, int pid, const char *program, const char *what) {
    if (allowed)
        snprintf(out, capacity,
                 "chaos run: warning: process %d (%s) set up io_uring (--io-uring allow): its reads and writes "
                 "through it are out of chaos's reach\n",
                 pid, program);
    else
        snprintf(out, capacity,
                 "chaos run: process %d (%s) %s is refused with ENOSYS, so that it falls back to calls chaos "
                 "reaches (--io-uring allow lets it through, out of chaos's reach)\n",
                 pid, program, what);
}
