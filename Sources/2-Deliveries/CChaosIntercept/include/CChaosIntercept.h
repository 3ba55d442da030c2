// CChaosIntercept: the in-process delivery of the system fault engine (plain C11).
//
// The same interceptor bodies as the LD_PRELOAD library (Sources/2-Deliveries/CChaosPreload), compiled
// a second time from one source (interceptors.inc) with other names and another way to
// reach the real functions:
//
//                      preload (chaos run)               in-process (this target)
//   name               the libc symbol's own (`write`)   prefixed, hidden (`chaos_in_write`)
//   how calls arrive   the dynamic linker interposes     ChaosHooks rebinds GOT and data slots
//                                                        of `symbol` to `replacement`
//   real function      dlsym(RTLD_NEXT, "write")         dlsym(RTLD_DEFAULT, "write"): the slot
//                                                        is rebound, the symbol is not
//                                                        interposed, so the default lookup is
//                                                        libc's definition; a slot is never read
//   `ask` nodes        the original                      the function of chaos_fault_set_ask
//
// Each interceptor describes its call to the engine (CChaosFaults.h), waits the outcome's
// delay and executes it, exactly as the preload does; with no plan entry for its point it
// costs one atomic load and a branch on top of the real call. Re-entrancy is guarded per
// thread: a call made while this thread is deciding (inside the ask function, or while
// the real function is being looked up) goes straight to the real function.
//
// The real functions are all looked up the first time `chaos_intercepts` is called, so a
// rebound slot never makes dlsym run inside an intercepted call (or a signal handler).
//
// What stays out of reach in-process is what a GOT/data rebinding cannot see (see
// ChaosHooks' SymbolRebinding): calls inside the defining library, pointers copied at run
// time or obtained from dlsym, static binaries, direct system calls.
#ifndef CCHAOS_INTERCEPT_H
#define CCHAOS_INTERCEPT_H

#include "CChaosFaults.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One in-process interceptor.
typedef struct chaos_intercept {
    const char *symbol; ///< the libc symbol whose GOT/data slots to rebind, e.g. "pwrite64"
    int32_t point;      ///< the chaos_point it reports to (CHAOS_POINT_FILES …); clock functions,
                        ///< the stat family and sleeps: CHAOS_POINT_CLOCK. For functions that only
                        ///< keep the descriptor table (dup, socket…): the first point that needs them.
    void *replacement;  ///< the in-process interceptor's address (a function of `symbol`'s C type)
    uint32_t points;    ///< bit p set for every point p whose entries need this symbol rebound:
                        ///< `write` reports to files and, on sockets, to send; `close`, `dup*`
                        ///< and `fcntl` keep the descriptor table of every descriptor point.
} chaos_intercept;

/// Every in-process interceptor, terminated by an element whose `symbol` is NULL. Symbols
/// with several names (pwrite/pwrite64, open/open64, stat/stat64/__xstat…) each have their
/// own element. The table is static; the first call also looks up every real function.
/// A `symbol` the running libc does not define (dlsym finds nothing) is still listed: its
/// interceptor fails with ENOSYS if called, so a caller rebinds only symbols it can resolve.
/// Empty (just the terminator) outside Linux.
const chaos_intercept *chaos_intercepts(void);

/// The element for `symbol` (exact name), or NULL.
const chaos_intercept *chaos_intercept_find(const char *symbol);

/// Answers calls that reached an `ask` node: fills `out` and returns 1, or returns 0 for
/// "the original".
///
/// - `call` is the call as the engine saw it (for descriptor calls, rebuilt from the
///   descriptor table: point, fn, fd, path or family/role); its strings live until the
///   function returns.
/// - `entry` is the index of the deciding entry of the active plan, `ask_id` the node's
///   `id=`.
/// - `out` arrives zeroed with action CHAOS_ACT_ORIGINAL. Fill `action` (FAIL with `err`
///   and `ret`, SHORT with `max_bytes`, ORIGINAL, OFFSET/FROZEN with `clock_ns`, SPEED with
///   `factor`/`anchor_ns`, SET with `value`, UNSET) and optionally `delay_ns`, waited on
///   top of the delay nodes above the ask node. An action the call cannot take (SHORT on
///   an open, a clock action on a write, ASK itself) means the original. A SET `value` must
///   stay valid for as long as the program may use the getenv answer (chaos_fault_intern
///   in CChaosFaults.h gives such a copy).
///
/// It runs on the intercepting thread, outside any engine read section (it may install
/// plans), never from a signal handler by the engine itself (but an intercepted call made
/// by a signal handler does call it). errno is saved around it. Calls it makes to
/// intercepted functions go to the real functions.
typedef int (*chaos_ask_fn)(const chaos_call *call, int32_t entry, uint32_t ask_id, chaos_outcome *out);

/// Registers the function that answers `ask` nodes (NULL: every ask calls the original).
/// Thread-safe; a call already inside the previous function finishes with it.
void chaos_fault_set_ask(chaos_ask_fn fn);

/// Calls that had something to do (an outcome other than a plain original, before asking).
unsigned long chaos_intercept_chaotic_calls(void);

/// Starts recording, in the engine's undo log (chaos_durability.h), every change the
/// bound files interceptors see to what is under `path` (absolute): 0, or -1 when a
/// recording runs already or the path is not absolute. Power loss in this process.
int chaos_in_power_start(const char *path);

/// Ends the recording: with `lose`, power is lost (what was not durable is rolled back,
/// `out` says what), else everything stays as it is.
void chaos_in_power_stop(int lose, int torn, uint64_t seed, chaos_power_summary *out);

#ifdef __cplusplus
}
#endif

#endif
