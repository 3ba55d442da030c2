// The seccomp delivery of `chaos run`: for programs the preload library cannot reach
// (static and Go programs), `chaos run` stays their parent and decides every system call
// its filter traps with the same engine and plan as the preload library.
#ifndef CHAOS_SUPERVISE_H
#define CHAOS_SUPERVISE_H

#include <stddef.h>
#include <stdint.h>

#include "CChaosFaults.h"

/// What `chaos run` says about its entries when the program ends.
struct chaos_report_options {
    int quiet;             ///< --quiet: no report on standard error
    const char *path;      ///< --report FILE: the report as JSON (NULL: none)
    int require_fired;     ///< --require-fired: an entry that never acted makes the run fail (125)
    int wait_tree;         ///< --wait-tree (or --require-fired): report when the whole tree has ended
    int64_t wait_bound_ns; ///< but wait at most this long after the program ended (0: no bound)
    int io_uring_allowed;  ///< --io-uring allow: io_uring_setup goes through, said, instead of ENOSYS
};

/// Whether this kernel lets a process filter its child's system calls to a supervisor
/// (seccomp user notification).
int chaos_seccomp_available(void);

/// Whether the seccomp delivery can carry out every entry of `plan`: 0 when it can, else
/// -1 with the first entry it cannot carry out, why and what to do, in `why`.
int chaos_seccomp_refusal(const chaos_plan *plan, char *why, size_t capacity);

/// Runs `argv` as a child whose trapped system calls `plan` (installed here) decides,
/// waits for it, reports, and returns the status `chaos run` exits with (a program killed
/// by a signal: that signal is raised again here). `program` names it in messages.
int chaos_supervise(chaos_plan *plan, char **argv, const struct chaos_report_options *report);

#endif
