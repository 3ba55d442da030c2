// File times under the seccomp delivery (file_times.c).
#ifndef CHAOS_FILE_TIMES_H
#define CHAOS_FILE_TIMES_H

#include <linux/seccomp.h>

#include "syscalls.h"

/// Answers trapped stat call `n` (shapes STAT, FSTAT, STAT_AT, STATX) with the file's
/// status as the program would have seen it, its times shifted like the clock; lets it go
/// on when the clock leaves file times alone or the call cannot be carried out here.
void chaos_file_times_answer(int listener, const struct seccomp_notif *n, const struct chaos_syscall *sc);

#endif
