// Deciding and answering the calls the seccomp filter sends to the supervisor.
#ifndef CHAOS_ANSWER_H
#define CHAOS_ANSWER_H

#include <linux/seccomp.h>

/// Decides the trapped call `notification` with the active plan and answers it through
/// `listener`: at once, or (with a delay) when `chaos_answer_due` finds it due.
void chaos_answer(int listener, const struct seccomp_notif *notification);

/// Notes which files `chaos run`'s descriptors 0–2 are, before the program inherits them.
void chaos_answer_remember_inherited(void);

/// Answers the delayed calls whose time has come; returns the milliseconds until the next
/// one (-1: none waits).
int chaos_answer_due(int listener);

#endif
