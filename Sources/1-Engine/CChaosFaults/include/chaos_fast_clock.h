// The clock's constant fast path, shared by the engine (which publishes it at install) and
// the interceptors (which read it inline): a plan whose one clock entry is a single offset,
// frozen or speed node — what `offset -30y` compiles to — is answered from these words
// under a sequence lock, without a read section, a tree walk or a function call, so that
// Foundation's Date() under an offset costs about what it costs plain. The entry acts on
// every reading, so one count is both its seen and acted (chaos_counts_read adds it).
//
// For the C of the engine and the deliveries only: published in include/ for them, but left
// out of the module Swift imports (include/module.modulemap excludes it).
#ifndef CCHAOS_FAULTS_FAST_CLOCK_H
#define CCHAOS_FAULTS_FAST_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct cf_fast_clock {
    _Atomic uint64_t sequence;    ///< odd while the words are being written
    _Atomic int32_t kind;         ///< CHAOS_ACT_OFFSET/FROZEN/SPEED; 0: no fast path
    _Atomic int64_t ns;           ///< offset, frozen instant, or speed anchor
    _Atomic int64_t seconds;      ///< `ns` split: whole seconds (floor) …
    _Atomic int64_t nanoseconds;  ///< … and 0 ≤ nanoseconds < 1e9, for adjusting a timespec
    _Atomic uint64_t factor_bits; ///< speed factor (a double's bits)
    _Atomic uint64_t counts;      ///< the id of the entry's counts (read with the words, so that a
                                  ///< reading counts for the entry that answered it)
} cf_fast_clock;

extern cf_fast_clock cf_fast __attribute__((visibility("hidden")));

/// One thread's count of the readings the fast path answered for one entry's counts.
/// A locked add on one shared word cost as much as the rest of the path (Date() under an
/// offset went from 1.06× to 1.20× plain), so each thread counts in its own words and
/// chaos_counts_read sums them (counters.c keeps the list, and settles exited threads').
typedef struct cf_fast_tally {
    _Atomic uint64_t calls;
    _Atomic int64_t last_ns;    ///< the real time of the last one
    _Atomic uint64_t counts;    ///< the id of the counts these readings are for
    struct cf_fast_tally *next; ///< in counters.c's list, under its lock
    int state;                  ///< 0: not listed yet; 1: listed; -1: its thread is exiting
} cf_fast_tally;

extern _Thread_local cf_fast_tally cf_fast_mine __attribute__((visibility("hidden"), tls_model("initial-exec")));

/// Counts the reading when this thread's tally is not listed yet or holds readings for
/// other counts (which it first moves into those), or (state -1) in the counts themselves.
void cf_fast_count_slow(uint64_t counts, int64_t real_ns) __attribute__((visibility("hidden")));

/// Counts one reading the fast path answered for the counts with id `counts` (`real_ns` 0:
/// no real time to record).
static inline void cf_fast_count(uint64_t counts, int64_t real_ns) {
    cf_fast_tally *mine = &cf_fast_mine;
    if (__builtin_expect(mine->state != 1 || atomic_load_explicit(&mine->counts, memory_order_relaxed) != counts, 0)) {
        cf_fast_count_slow(counts, real_ns);
        return;
    }
    atomic_store_explicit(&mine->calls, atomic_load_explicit(&mine->calls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    if (real_ns) atomic_store_explicit(&mine->last_ns, real_ns, memory_order_relaxed);
}

/// Adds `calls` readings answered outside this process for the counts with id `counts`
/// (the seccomp delivery's patched vDSO: vdso.c), as if this process's fast path had
/// answered them; `real_ns` is the real time of the last one (0: none to record).
void cf_fast_count_many(uint64_t counts, uint64_t calls, int64_t real_ns) __attribute__((visibility("hidden")));

/// Names a function chaos_counts_read calls first, which brings in the readings counted
/// outside this process (with cf_fast_count_many), so that every reading of counts sees
/// them. It must not read counts itself. NULL: none.
void cf_fast_collect_with(void (*collect)(void)) __attribute__((visibility("hidden")));

/// Names a function to be called after the clock's words change: a plan installed (the
/// fast path republished) or virtual time moved, started or stopped (cf_vt_notify). It may
/// run on any thread, sometimes under virtual time's lock: it must only read the words
/// (cf_fast, cf_vt) and take no lock of the engine's. NULL: none.
void cf_clock_listen(void (*listener)(void)) __attribute__((visibility("hidden")));

/// Calls the function cf_clock_listen named, if any.
void cf_clock_changed(void) __attribute__((visibility("hidden")));

/// Virtual time's clock (virtual.c): the virtual monotonic instant is `base` (manual) or
/// `base` plus the real monotonic time since `anchor` (flowing); the other clocks read it
/// plus their offset.
typedef struct cf_virtual_clock {
    _Atomic int running;
    _Atomic int flowing;
    _Atomic int64_t base;            ///< virtual monotonic ns (manual), or at `anchor` (flowing)
    _Atomic int64_t anchor;          ///< real monotonic ns at start (flowing)
    _Atomic int64_t wall_minus_mono; ///< virtual realtime − virtual monotonic
    _Atomic int64_t boot_minus_mono; ///< real boottime − real monotonic at start
    _Atomic int64_t tai_minus_real;  ///< real TAI − real realtime at start
    _Atomic int32_t exempt_threads;  ///< how many threads stay on real time (chaos_vt_set_thread_exempt)
} cf_virtual_clock;

extern cf_virtual_clock cf_vt __attribute__((visibility("hidden")));

int chaos_vt_thread_exempt(void); // CChaosFaults.h

/// Set while virtual time's own code waits on a condition variable (which the
/// interceptors then leave alone).
extern _Thread_local int cf_vt_internal_wait __attribute__((visibility("hidden"), tls_model("initial-exec")));

/// The clock's virtual fast path: when the active plan's only clock entry is a `virtual`
/// node and time stands still, a reading of a realtime, monotonic or boot-time clock is
/// virtual time plus that clock's offset, without reading the real clock at all. Fills
/// `out` and returns 1, or returns 0: decide the call as usual.
static inline int cf_fast_virtual(int clock, struct timespec *out) {
    // A first look without the sequence: most plans with a clock entry are not virtual.
    if (atomic_load_explicit(&cf_fast.kind, memory_order_relaxed) != 10 /* CHAOS_ACT_VIRTUAL */) return 0;
    uint64_t sequence = atomic_load_explicit(&cf_fast.sequence, memory_order_acquire);
    if ((sequence & 1) || atomic_load_explicit(&cf_fast.kind, memory_order_relaxed) != 10 /* CHAOS_ACT_VIRTUAL */)
        return 0;
    if (!atomic_load_explicit(&cf_vt.running, memory_order_acquire) ||
        atomic_load_explicit(&cf_vt.flowing, memory_order_relaxed))
        return 0;
    if (atomic_load_explicit(&cf_vt.exempt_threads, memory_order_relaxed) && chaos_vt_thread_exempt()) return 0;
    int64_t offset;
    switch (clock) {
    case 0 /* CLOCK_REALTIME */:
    case 5 /* CLOCK_REALTIME_COARSE */:
    case 8 /* CLOCK_REALTIME_ALARM */:
        offset = atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed);
        break;
    case 1 /* CLOCK_MONOTONIC */:
    case 4 /* CLOCK_MONOTONIC_RAW */:
    case 6 /* CLOCK_MONOTONIC_COARSE */: offset = 0; break;
    case 7 /* CLOCK_BOOTTIME */:
    case 9 /* CLOCK_BOOTTIME_ALARM */:
        offset = atomic_load_explicit(&cf_vt.boot_minus_mono, memory_order_relaxed);
        break;
    default: return 0;
    }
    int64_t value = atomic_load_explicit(&cf_vt.base, memory_order_acquire) + offset;
    uint64_t counts = atomic_load_explicit(&cf_fast.counts, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&cf_fast.sequence, memory_order_relaxed) != sequence) return 0;
    out->tv_sec = (time_t)(value / 1000000000);
    out->tv_nsec = (long)(value % 1000000000);
    cf_fast_count(counts, 0);
    return 1;
}
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
    if ((sequence & 1) || !kind || kind == 10 /* CHAOS_ACT_VIRTUAL: cf_fast_virtual */) return 0;
    int64_t ns = atomic_load_explicit(&cf_fast.ns, memory_order_relaxed);
    int64_t s = atomic_load_explicit(&cf_fast.seconds, memory_order_relaxed);
    int64_t n = atomic_load_explicit(&cf_fast.nanoseconds, memory_order_relaxed);
    uint64_t bits = atomic_load_explicit(&cf_fast.factor_bits, memory_order_relaxed);
    uint64_t counts = atomic_load_explicit(&cf_fast.counts, memory_order_relaxed);
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
    cf_fast_count(counts, real_ns);
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
