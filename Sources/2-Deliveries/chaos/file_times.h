// The stat family under the seccomp delivery (file_times.c): file times shifted like the
// clock, and the stat point.
#ifndef CHAOS_FILE_TIMES_H
#define CHAOS_FILE_TIMES_H

#include <linux/seccomp.h>

#include "CChaosFaults.h"
#include "syscalls.h"

/// Describes trapped stat call `n` as a call of the stat point (its path read into `path`,
/// or taken from the descriptor it names); 0 when it names nothing a stat entry can.
int chaos_file_times_describe(const struct seccomp_notif *n, const struct chaos_syscall *sc, chaos_call *call,
                              char *path, size_t capacity);

/// Answers trapped stat call `n` (shapes STAT, FSTAT, STAT_AT, STATX) with the file's
/// status as the program would have seen it, its times shifted like the clock, then what
/// `decided` (a stat entry's outcome, or NULL) names in its attributes; lets it go on when
/// neither changes anything or the call cannot be carried out here.
void chaos_file_times_answer(int listener, const struct seccomp_notif *n, const struct chaos_syscall *sc,
                             const chaos_outcome *decided);

#endif
