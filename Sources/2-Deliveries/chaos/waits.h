// Sleeps and timed waits under the seccomp delivery (waits.c).
#ifndef CHAOS_WAITS_H
#define CHAOS_WAITS_H

#include <linux/seccomp.h>
#include <sys/types.h>

#include "syscalls.h"

/// Answers trapped sleep or timed wait `n` (shapes SLEEP, CLOCK_SLEEP, EPOLL, POLL): holds
/// it on a thread of its own for as long as the plan's clock says, then answers; lets it
/// go on as asked when the clock has nothing to say about it.
void chaos_waits_answer(int listener, const struct seccomp_notif *n, const struct chaos_syscall *sc);

/// Lets every held call go on as the program asked, and returns once they have (within a
/// second): a copy of the supervisor made by fork would not have the threads holding them.
void chaos_waits_release(void);

/// Names the process whose tree virtual time's advance waits to go idle after each step.
void chaos_waits_watch_tree(pid_t root);

#endif
