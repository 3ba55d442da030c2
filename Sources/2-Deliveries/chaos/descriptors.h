// What the supervised programs' descriptors are, remembered between calls.
#ifndef CHAOS_DESCRIPTORS_H
#define CHAOS_DESCRIPTORS_H

#include <stdint.h>
#include <sys/types.h>

/// Notes which files `chaos run`'s descriptors 0–2 are, before the program inherits them.
void chaos_descriptors_remember_inherited(void);

/// What descriptor `fd` of thread `tid` is: 1 for a file or directory (its path in `*path`,
/// valid until the next call; `*special` 1 when it is still the file chaos run handed down
/// as 0–2), 2 for a socket, 0 for anything else, -1 when it is not open.
int chaos_descriptors_lookup(pid_t tid, int fd, const char **path, int *special);

/// The CHAOS_DESCRIPTOR_* bit of descriptor `fd` of `tid` (0: a socket, or not open).
int32_t chaos_descriptors_kind(pid_t tid, int fd);

/// Forgets everything remembered: a descriptor number may now name another file (close,
/// dup2, exec), or a thread id another thread (clone).
void chaos_descriptors_forget(void);

#endif
