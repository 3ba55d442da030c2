// Making system calls in a process stopped under ptrace, as if it made them itself.
#ifndef CHAOS_INJECT_H
#define CHAOS_INJECT_H

#include <stdint.h>
#include <sys/types.h>

/// A process whose registers are borrowed (x86_64 only: elsewhere every call fails).
struct chaos_injection {
    pid_t pid;
    unsigned char saved[216]; ///< its registers (struct user_regs_struct) when borrowed
    uint64_t stack;           ///< its stack pointer then
    uint64_t instruction;     ///< the address of a `syscall` instruction in it
    int signal;               ///< a signal that arrived meanwhile, to be delivered when it goes on (0: none)
};

/// At the exec stop of `pid` (PTRACE_EVENT_EXEC): lets the exec return, to its
/// system-call-exit stop, and saves the registers it will start the program with.
/// 0, or -1 (then nothing was changed, but the process may have moved past its exec, to
/// the stop of a signal, which `injection->signal` then names).
int chaos_inject_begin(struct chaos_injection *injection, pid_t pid);

/// Makes the system call `number` with `arguments` in the process, through the `syscall`
/// instruction at `injection->instruction`. 0 with its result (a negative errno on
/// failure) in `*result`, or -1 when the process could not be made to run it.
int chaos_inject_call(struct chaos_injection *injection, long number, const uint64_t arguments[6], long *result);

/// Gives the process its registers back: it starts the program as if nothing happened.
/// Called after every chaos_inject_begin that returned 0.
int chaos_inject_end(struct chaos_injection *injection);

/// Whether a trapped call of thread `tid` is one made through chaos_inject_call (between
/// chaos_inject_begin and chaos_inject_end): it is to go on untouched and uncounted.
int chaos_inject_owns_call(pid_t tid);

#endif
