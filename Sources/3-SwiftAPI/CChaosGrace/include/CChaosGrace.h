#ifndef CHAOSKIT_CCHAOSGRACE_H
#define CHAOSKIT_CCHAOSGRACE_H

// Read-side sections and grace periods (grace.c): lets a point's callers read its newest
// entry without a lock or a reference count, while revert frees the old entry only once no
// caller can still be reading it. Two kinds of section share one registry of threads:
//
// - Hook sections (ChaosHooks): wrap a hooked C call. They double as the re-entrancy
//   guard, so a hooked function called from inside a hook's own chaos runs the original.
// - Point sections (ChaosKit): wrap the read of a Swift injection point's newest entry.
//   They nest freely and never change what a call does.
//
// Both only touch this thread's own counters (odd while inside). Hook sections enter with
// a plain store and the writer side pays with a process-wide memory barrier (membarrier(2),
// or, where that is unavailable, readers fence themselves): a hooked call is hot and its
// points are reverted rarely. Point sections enter with one fenced store to a line no other
// thread writes, so that reverting a Swift point needs only a fence of its own — a
// membarrier costs 1–4 µs, more than a whole apply and revert.

#include <errno.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: Thread state (read inline on every section entry)

struct chaos_reader_slot;
struct chaos_thread_state {
    // Accessed only with __atomic builtins (the writer side reads them from other threads).
    uint64_t sections;              // hook sections: +1 on entering and on leaving, odd inside
    uint64_t point_sections;        // point sections: the same, for the outermost one
    int status;                     // 0 unregistered, 1 registered, 2 registered and must
                                    // fence (no membarrier), 3 thread exiting
    int *errno_location;            // this thread's errno
    struct chaos_reader_slot *slot; // this thread's entry in the registry
};
extern __thread struct chaos_thread_state chaos_thread;

/// Registers this thread (first section on it); 1 when it can take part in sections now.
int chaos_thread_register(void);

// MARK: Hook sections

/// chaos_hook_enter for a thread that is not in the plain registered state.
int chaos_hook_enter_slow(void);

/// Starts a hook section: returns the section counter it set (odd), or 0 when the thread
/// already was inside one (a hooked call made from a hook's own chaos: run the original,
/// no chaos within chaos). Pass the result to chaos_hook_leave_entered.
static inline uint64_t chaos_hook_enter_counted(void) {
    if (__builtin_expect(chaos_thread.status != 1, 0)) {
        return chaos_hook_enter_slow() ? __atomic_load_n(&chaos_thread.sections, __ATOMIC_RELAXED) : 0;
    }
    uint64_t sections = __atomic_load_n(&chaos_thread.sections, __ATOMIC_RELAXED);
    if (sections & 1) return 0;
    __atomic_store_n(&chaos_thread.sections, sections + 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return sections + 1;
}

/// Starts a hook section: 1 when the thread was not inside one (call chaos_hook_leave
/// after), 0 when it already was.
static inline int chaos_hook_enter(void) { return chaos_hook_enter_counted() != 0; }

/// Ends the section chaos_hook_enter_counted started, given what it returned.
static inline void chaos_hook_leave_entered(uint64_t entered) {
    __atomic_store_n(&chaos_thread.sections, entered + 1, __ATOMIC_RELEASE);
}

/// Ends the section chaos_hook_enter started.
static inline void chaos_hook_leave(void) {
    uint64_t sections = __atomic_load_n(&chaos_thread.sections, __ATOMIC_RELAXED);
    __atomic_store_n(&chaos_thread.sections, sections + 1, __ATOMIC_RELEASE);
}

/// Whether this thread is inside a hook section right now.
int chaos_hook_in_section(void);

/// This thread's errno location: from the thread's state once it has one (cheaper than
/// __errno_location on every hooked call).
static inline int *chaos_errno_location(void) {
    int *location = chaos_thread.errno_location;
    return __builtin_expect(location != 0, 1) ? location : &errno;
}

// MARK: Point sections

/// What chaos_point_enter returns when the thread cannot take part in sections (it is
/// exiting, or there was no memory to register it): read under the point's lock instead.
#define CHAOS_POINT_UNPROTECTED UINT64_MAX

/// chaos_point_enter for a thread that is not in the plain registered state.
uint64_t chaos_point_enter_slow(void);

/// Starts a point section. Returns what to pass to chaos_point_leave: the counter it set
/// (odd); 0 when the thread already is inside a point section (the outer one protects the
/// read; leaving with 0 does nothing); or CHAOS_POINT_UNPROTECTED (see there).
///
/// The store is sequentially consistent (one locked instruction on x86): it is ordered
/// before the reads of the section, and the writer's fence (chaos_grace_start_points)
/// before its read of the counter, so that one of the two always sees the other.
static inline uint64_t chaos_point_enter(void) {
    if (__builtin_expect(chaos_thread.status == 0 || chaos_thread.status == 3, 0)) return chaos_point_enter_slow();
    uint64_t sections = __atomic_load_n(&chaos_thread.point_sections, __ATOMIC_RELAXED);
    if (sections & 1) return 0;
    __atomic_store_n(&chaos_thread.point_sections, sections + 1, __ATOMIC_SEQ_CST);
    return sections + 1;
}

/// Ends the point section chaos_point_enter started, given what it returned.
static inline void chaos_point_leave(uint64_t entered) {
    if (entered != 0 && entered != CHAOS_POINT_UNPROTECTED) {
        __atomic_store_n(&chaos_thread.point_sections, entered + 1, __ATOMIC_RELEASE);
    }
}

// MARK: Grace periods

/// An opaque record of the sections running when something was retired.
typedef struct chaos_grace chaos_grace;

/// Call after unpublishing objects that sections of either kind may be reading: returns
/// NULL when no section that could have seen them is still running (free them now), else a
/// record to poll with chaos_grace_elapsed. Never waits for a section. Errors (out of
/// memory) are reported as a record that elapses only once no section is running.
chaos_grace *chaos_grace_start(void);
/// chaos_grace_start for objects that only point sections read (no hooked C call can
/// reach them): a fence instead of a membarrier, and hook sections are not waited for.
chaos_grace *chaos_grace_start_points(void);
/// Nonzero once every section recorded by `grace` has ended (never blocks).
int chaos_grace_elapsed(const chaos_grace *grace);
/// Frees a record from chaos_grace_start.
void chaos_grace_free(chaos_grace *grace);

#ifdef __cplusplus
}
#endif

#endif
