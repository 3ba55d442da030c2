#ifndef CHAOS_NOTICE_H
#define CHAOS_NOTICE_H

// What chaos cannot do for a program, said on standard error the first time the program
// meets it rather than never: a quiet miss is worse than a loud one.

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The things said once per process.
typedef enum chaos_notice {
    /// A POSIX timer whose clock was not noted (made before chaos was loaded, or past the
    /// timers it keeps) was armed at an absolute instant under a faked clock.
    CHAOS_NOTICE_POSIX_TIMER_UNKNOWN = 0,
    CHAOS_NOTICE_COUNT = 1,
} chaos_notice;

/// Writes "chaos: process PID (PROGRAM): `message`" and a newline to standard error, the
/// first time `notice` happens in this process; nothing after. Allocates nothing, takes no
/// lock: safe from any interceptor.
void chaos_notice_once(chaos_notice notice, const char *message);

/// What `chaos run` says, in `out` (a line, with its newline), when process `pid`
/// (`program`) asks for io_uring: that `what` (e.g. "asked for io_uring: it") is refused
/// with ENOSYS, or (`allowed`) that it set io_uring up, out of chaos's reach. Both
/// deliveries say it in these words.
void chaos_io_uring_sentence(char *out, size_t capacity, int allowed, int pid, const char *program, const char *what);

#ifdef __cplusplus
}
#endif

#endif
