// Making system calls in a stopped process (inject.h): the supervisor's way to map pages
// into a program at its exec stop.
//
// The exec stop (PTRACE_EVENT_EXEC) comes while the kernel is still inside execve, which
// writes its result into the return register after the stop: registers set there would
// lose rax. So the process is first run to the system call's exit stop (PTRACE_SYSCALL),
// where what is set stays set. Then for each call: the saved registers with rip at a
// `syscall` instruction, rax the number, the arguments in rdi, rsi, rdx, r10, r8, r9, and
// orig_rax -1 (no system call to restart), one PTRACE_SINGLESTEP, and rax is the result.
// A call the seccomp filter traps waits for the supervisor's answering thread like any
// other (answer.c lets the injected ones through untouched).
#define _GNU_SOURCE
#include "inject.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

// The process whose calls the supervisor is making (0: none): written by the thread that
// injects, read by the one that answers trapped calls.
static _Atomic pid_t injecting;

int chaos_inject_owns_call(pid_t tid) { return tid && atomic_load_explicit(&injecting, memory_order_acquire) == tid; }

#if defined(__x86_64__)

_Static_assert(sizeof(struct user_regs_struct) <= sizeof(((struct chaos_injection *)0)->saved), "registers fit");

/// Waits for the next stop of the process; its signal, or -1 when it ended or did not stop.
static int next_stop(pid_t pid) {
    int status;
    for (;;) {
        pid_t got = waitpid(pid, &status, __WALL);
        if (got == pid) break;
        if (got < 0 && errno != EINTR) return -1;
    }
    return WIFSTOPPED(status) ? WSTOPSIG(status) : -1;
}

int chaos_inject_begin(struct chaos_injection *injection, pid_t pid) {
    memset(injection, 0, sizeof *injection);
    injection->pid = pid;
    if (ptrace(PTRACE_SYSCALL, pid, NULL, NULL) != 0) return -1;
    int signal = next_stop(pid);
    if (signal != SIGTRAP) {
        injection->signal = signal > 0 ? signal : 0; // delivered when it goes on
        return -1;
    }
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0) return -1;
    memcpy(injection->saved, &regs, sizeof regs);
    injection->stack = regs.rsp;
    atomic_store_explicit(&injecting, pid, memory_order_release);
    return 0;
}

int chaos_inject_call(struct chaos_injection *injection, long number, const uint64_t arguments[6], long *result) {
    pid_t pid = injection->pid;
    struct user_regs_struct regs;
    memcpy(&regs, injection->saved, sizeof regs);
    regs.rip = injection->instruction;
    regs.rax = (unsigned long long)number;
    regs.orig_rax = (unsigned long long)-1;
    regs.rdi = arguments[0];
    regs.rsi = arguments[1];
    regs.rdx = arguments[2];
    regs.r10 = arguments[3];
    regs.r8 = arguments[4];
    regs.r9 = arguments[5];
    if (!injection->instruction || ptrace(PTRACE_SETREGS, pid, NULL, &regs) != 0) return -1;
    // A signal that arrives first stops the process before the instruction: it is kept
    // for later, and the step is taken again.
    for (int tries = 0; tries < 8; tries++) {
        if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0) return -1;
        int signal = next_stop(pid);
        if (signal < 0) return -1;
        if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0) return -1;
        if (regs.rip == injection->instruction + 2) {
            *result = (long)regs.rax;
            return 0;
        }
        if (regs.rip != injection->instruction) return -1;
        if (signal != SIGTRAP) injection->signal = signal;
    }
    return -1;
}

int chaos_inject_end(struct chaos_injection *injection) {
    atomic_store_explicit(&injecting, 0, memory_order_release);
    return ptrace(PTRACE_SETREGS, injection->pid, NULL, injection->saved) == 0 ? 0 : -1;
}

#else

int chaos_inject_begin(struct chaos_injection *injection, pid_t pid) {
    memset(injection, 0, sizeof *injection);
    injection->pid = pid;
    return -1;
}

int chaos_inject_call(struct chaos_injection *injection, long number, const uint64_t arguments[6], long *result) {
    (void)injection, (void)number, (void)arguments, (void)result;
    return -1;
}

int chaos_inject_end(struct chaos_injection *injection) {
    (void)injection;
    return -1;
}

#endif
