// Power loss under the seccomp delivery: the supervisor sees every change the program's
// tree makes to a file (stdio flushes included: they are system calls), keeps what undoes
// it in the engine's log (chaos_durability.h), and at the call a power-loss entry acts on
// kills the tree and rolls back what was not durable.
#ifndef CHAOS_POWER_H
#define CHAOS_POWER_H

#include <linux/seccomp.h>

#include "CChaosFaults.h"
#include "syscalls.h"

/// Whether `plan` has a power-loss entry (its filter then traps every change and sync).
int chaos_power_planned(const chaos_plan *plan);

/// Starts keeping the log when `plan` loses power.
void chaos_power_start(const chaos_plan *plan);

/// Whether the log is kept.
int chaos_power_active(void);

/// Notes trapped call `n`, which is about to go on, in the log: `call` is what the engine
/// was told of it (its path, or the descriptor's), `outcome` what it decided (a sync that
/// fails makes nothing durable).
void chaos_power_note(const struct seccomp_notif *n, const struct chaos_syscall *sc, const chaos_call *call,
                      const chaos_outcome *outcome);

/// Whether open-like call `n` creates or truncates (O_CREAT, O_TRUNC, O_TMPFILE).
int chaos_power_creates(const struct seccomp_notif *n);

/// Notes a shared mapping (mmap with MAP_SHARED) that can write to a file power loss watches.
void chaos_power_note_map(const struct seccomp_notif *n);

/// Power is lost at call `n` (not answered: it never completes): kills the program's tree,
/// waits until nothing of it runs, rolls back and says what it did.
void chaos_power_lose(const struct seccomp_notif *n, const chaos_call *call, const chaos_outcome *outcome);

/// The program's tree has ended without a power loss: a power-loss entry placed one change
/// past the last one it saw (`chaos explore`'s last crash point) loses power now, after
/// every change, killing what the tree left running first.
void chaos_power_at_exit(void);

/// The sentence of a power loss for the report ("power lost at write 57 of db/wal: …"), or
/// NULL when power was not lost.
const char *chaos_power_report(void);

#endif
