// The seccomp delivery's side of system.process: which trapped clone, clone3, fork and
// vfork create a process (never a thread), described for the engine.
#ifndef CHAOS_PROCESSES_H
#define CHAOS_PROCESSES_H

#include <linux/seccomp.h>

#include "CChaosFaults.h"
#include "syscalls.h"

/// Describes trapped call `n` (a row of shape CHAOS_SHAPE_SPAWN) into `call`: 1 when the
/// process point is to decide it, 0 for a thread (CLONE_THREAD), flags that cannot be read
/// (clone3's are in the caller's memory: the kernel then answers the call itself), or no
/// process entry.
int chaos_processes_describe(const struct seccomp_notif *n, const struct chaos_syscall *sc, chaos_call *call);

#endif
