// The vDSO of the programs the seccomp delivery supervises: patched so that their clock
// readings are faked inside them at about the vDSO's own cost, or, where that cannot be
// done, hidden so that every reading becomes a system call the supervisor answers.
#ifndef CHAOS_VDSO_H
#define CHAOS_VDSO_H

#include <stdint.h>
#include <sys/types.h>

/// Before the plan is installed: follow the plan and virtual time from now on. `clocks`:
/// the filter traps clock readings (the plan the program starts with has a clock entry,
/// which `chaos ctl` may disable and enable), so every exec is to be patched. Patching is off when CHAOS_VDSO is
/// "hide" (for tests and measurements of the fallback).
void chaos_vdso_start(int clocks);

/// Whether execs are to be stopped and patched (chaos_vdso_start's `clocks`).
int chaos_vdso_wanted(void);

/// At the exec stop of `pid` (ptrace), when chaos_vdso_wanted: patches the new program's
/// vDSO, or says why not on standard error and in the report, and then hides it when a
/// clock entry is active. Returns the signal to deliver when the process goes on (0: none).
int chaos_vdso_exec_stop(pid_t pid);

/// Readings the patched vDSOs answered so far (moved into their entries' counts), and how
/// many processes were patched.
uint64_t chaos_vdso_readings(int *processes);

/// The end: takes the last readings into the counts and removes the shared page's file
/// (processes still running keep their mapping).
void chaos_vdso_end(void);

#endif
