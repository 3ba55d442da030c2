// Creating processes under the seccomp delivery. fork and vfork create one; clone and clone3
// create a thread when their flags hold CLONE_THREAD, which no entry ever fails. clone3
// keeps its flags in a struct clone_args in the caller's memory: they are read from there
// (the first 8 bytes), so that glibc's pthread_create and posix_spawn, which call clone3
// first, keep their way; the supervisor checks that the call still waits before it acts on
// what it read (answer.c), and a thread racing its own clone_args only misplaces its own
// chaos.
#define _GNU_SOURCE
#include "processes.h"

#include <sched.h>
#include <string.h>
#include <sys/syscall.h>

#include "tracee.h"

int chaos_processes_describe(const struct seccomp_notif *n, const struct chaos_syscall *sc, chaos_call *call) {
    if (!chaos_fault_point_active(CHAOS_POINT_PROCESS)) return 0;
    uint64_t flags = 0;
    if (n->data.nr == SYS_clone) {
        flags = n->data.args[0]; // x86_64 and arm64: flags first
    } else if (n->data.nr == SYS_clone3) {
        if (!n->data.args[0] || n->data.args[1] < sizeof flags ||
            chaos_tracee_read((pid_t)n->pid, n->data.args[0], &flags, sizeof flags) != 0)
            return 0;
    }
    if (flags & CLONE_THREAD) return 0;
    memset(call, 0, sizeof *call);
    call->point = CHAOS_POINT_PROCESS;
    call->fn = sc->fn;
    call->fd = -1;
    call->port = -1;
    return 1;
}
