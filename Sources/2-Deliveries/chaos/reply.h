// How the supervisor answers a trapped call: the one way a reply reaches the kernel.
#ifndef CHAOS_REPLY_H
#define CHAOS_REPLY_H

#include <stdint.h>

/// Answers the trapped call `id` on `listener`: the call returns `value` with `error`
/// (negative errno, 0 for none), or, with `go_on`, runs as the program made it. A thread
/// gone, or a call a signal interrupted, is answered to nobody (the kernel's ENOENT).
void chaos_reply(int listener, uint64_t id, int64_t value, int error, int go_on);

/// Lets the trapped call `id` run as the program made it.
void chaos_reply_go_on(int listener, uint64_t id);

#endif
