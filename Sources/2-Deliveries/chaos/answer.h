// Deciding and answering the calls the seccomp filter sends to the supervisor.
#ifndef CHAOS_ANSWER_H
#define CHAOS_ANSWER_H

#include <linux/seccomp.h>
#include <stdint.h>
#include <sys/types.h>

#include "CChaosFaults.h"

/// Decides the trapped call `notification` with the active plan and answers it through
/// `listener`: at once, or (with a delay) when `chaos_answer_due` finds it due.
void chaos_answer(int listener, const struct seccomp_notif *notification);

/// Names the eventfd to be told (written 1) whenever a call starts waiting out a delay,
/// so that whoever calls `chaos_answer_due` looks again. Calls may be decided on one
/// thread and their delays answered on another.
void chaos_answer_wake(int eventfd);

/// Answers the delayed calls whose time has come; returns the milliseconds until the next
/// one (-1: none waits).
int chaos_answer_due(int listener);

/// An exec the filter trapped (`n`): says at once, and records, when it starts a
/// set-user-ID or set-group-ID program, which gains no privileges under the filter.
void chaos_answer_note_exec(const struct seccomp_notif *n);

/// Records an event of the tree for the report (any thread).
void chaos_answer_record_event(chaos_tree_event_kind kind, pid_t pid, const char *program);

/// Whether io_uring_setup goes through (--io-uring allow) rather than failing with ENOSYS.
void chaos_answer_allow_io_uring(int allowed);

/// The tree's events this supervisor saw (io_uring set up or refused): how many there were
/// in `*count`, the first CHAOS_TALLY_EVENTS of them returned.
const chaos_tree_event *chaos_answer_tree_events(uint64_t *count);

#endif
