// The clock's constant fast path, shared by the engine (which publishes it at install) and
// the interceptors (which read it inline): a plan whose one clock entry is a single offset,
// frozen or speed node — what `offset -30y` compiles to — is answered from these words
// under a sequence lock, without a read section, a tree walk or a function call, so that
// Foundation's Date() under an offset costs about what it costs plain. The entry acts on
// every reading, so one count is both its seen and acted (chaos_fault_counters adds it).
//
// Private to the C targets of this package (not in include/, so Swift never imports it).
#ifndef CCHAOS_FAULTS_FAST_CLOCK_H
#define CCHAOS_FAULTS_FAST_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

typedef struct cf_fast_clock {
    _Atomic uint64_t sequence;    ///< odd while the words are being written
    _Atomic int32_t kind;         ///< CHAOS_ACT_OFFSET/FROZEN/SPEED; 0: no fast path
    _Atomic int32_t entry;        ///< the entry's index in the active plan
    _Atomic int64_t ns;           ///< offset, frozen instant, or speed anchor
    _Atomic int64_t seconds;      ///< `ns` split: whole seconds (floor) …
    _Atomic int64_t nanoseconds;  ///< … and 0 ≤ nanoseconds < 1e9, for adjusting a timespec
    _Atomic uint64_t factor_bits; ///< speed factor (a double's bits)
    _Atomic uint64_t calls;       ///< readings answered since the plan was installed
    _Atomic int64_t last_ns;      ///< the real time of the last one
} cf_fast_clock;

extern cf_fast_clock cf_fast __attribute__((visibility("hidden")));
/// Bit p set when the active plan has an entry for point p.
extern _Atomic uint32_t cf_active_points __attribute__((visibility("hidden")));

/// The reading of a realtime clock whose real value is `seconds`.`nanoseconds` (0 ≤
/// nanoseconds < 1e9), adjusted in place under the fast path; 0 (nothing changed) when
/// there is none: decide the call as usual. An offset or a frozen instant is applied to
/// the two fields directly: the clock's hot path never divides by 1e9, whose latency
/// would show against the vDSO's own.
static inline int cf_fast_clock_adjust(int64_t *seconds, int64_t *nanoseconds) {
    uint64_t sequence = atomic_load_explicit(&cf_fast.sequence, memory_order_acquire);
    int32_t kind = atomic_load_explicit(&cf_fast.kind, memory_order_relaxed);
    if ((sequence & 1) || !kind) return 0;
    int64_t ns = atomic_load_explicit(&cf_fast.ns, memory_order_relaxed);
    int64_t s = atomic_load_explicit(&cf_fast.seconds, memory_order_relaxed);
    int64_t n = atomic_load_explicit(&cf_fast.nanoseconds, memory_order_relaxed);
    uint64_t bits = atomic_load_explicit(&cf_fast.factor_bits, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&cf_fast.sequence, memory_order_relaxed) != sequence) return 0;
    int64_t real_ns = *seconds * 1000000000 + *nanoseconds;
    if (kind == 4 /* CHAOS_ACT_OFFSET */) {
        *seconds += s;
        *nanoseconds += n;
        if (*nanoseconds >= 1000000000) {
            *nanoseconds -= 1000000000;
            *seconds += 1;
        }
    } else if (kind == 5 /* CHAOS_ACT_FROZEN */) {
        *seconds = s;
        *nanoseconds = n;
    } else {
        double factor;
        memcpy(&factor, &bits, sizeof factor);
        double scaled = (double)(real_ns - ns) * factor;
        int64_t rounded = !(scaled < 9.2e18 && scaled > -9.2e18) ? (scaled > 0 ? INT64_MAX : INT64_MIN)
                                                                  : (int64_t)(scaled + (scaled >= 0 ? 0.5 : -0.5));
        int64_t fake = (int64_t)((uint64_t)ns + (uint64_t)rounded);
        *seconds = fake / 1000000000 - (fake % 1000000000 < 0);
        *nanoseconds = fake - *seconds * 1000000000;
    }
    // One uncontended locked add: per-thread counters measured no faster here.
    atomic_fetch_add_explicit(&cf_fast.calls, 1, memory_order_relaxed);
    atomic_store_explicit(&cf_fast.last_ns, real_ns, memory_order_relaxed);
    return 1;
}

/// The same for a reading in nanoseconds.
static inline int cf_fast_clock_reading(int64_t real_ns, int64_t *fake_ns) {
    int64_t seconds = real_ns / 1000000000 - (real_ns % 1000000000 < 0);
    int64_t nanoseconds = real_ns - seconds * 1000000000;
    if (!cf_fast_clock_adjust(&seconds, &nanoseconds)) return 0;
    *fake_ns = seconds * 1000000000 + nanoseconds;
    return 1;
}

#endif
