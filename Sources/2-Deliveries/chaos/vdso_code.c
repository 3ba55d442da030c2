// The wrappers a patched vDSO's clock symbols point to (x86_64): compiled here, copied by
// the supervisor into a private page of each program it patches (vdso.c), and run there.
//
// Copied code must not reach anything by an address the linker fixed: every function
// here lives in the section `chaos_vdso_code` and reaches nothing outside it. No global
// variables, no constants in memory (no floating point, no switch tables), no calls but
// through the function pointers the page holds, no stack protector. A wrapper finds its
// page from its own address (the page's start holds `struct chaos_vdso_local`), and the
// shared page through it. Scripts/check-c.sh checks that the section has no relocations.
//
// What a reading becomes is the engine's rule for the steady outcomes (an offset, a
// frozen instant, virtual time: chaos_fault_reading_ns), which the supervisor turns into
// the shared page's words; every other outcome traps, and the supervisor answers it.
#define _GNU_SOURCE
#include "vdso_page.h"

#include <sys/syscall.h>

#if defined(__x86_64__)

#define NS 1000000000LL
// A sanitizer build (swift build --sanitize=thread) would put calls into its runtime in
// every function: the copied code would call addresses the program does not have.
#if defined(__has_attribute) && __has_attribute(disable_sanitizer_instrumentation)
#define UNINSTRUMENTED disable_sanitizer_instrumentation, no_sanitize("address", "thread", "undefined", "memory")
#else
#define UNINSTRUMENTED no_sanitize("address", "thread", "undefined")
#endif
#define WRAPPER __attribute__((section("chaos_vdso_code"), used, noinline, no_stack_protector, UNINSTRUMENTED))
#define HELPER static inline __attribute__((always_inline, no_stack_protector, UNINSTRUMENTED))
/// A function of the section that the wrappers call (a call within the section: no relocation).
#define SHARED static __attribute__((section("chaos_vdso_code"), noinline, no_stack_protector, UNINSTRUMENTED))

/// A reading the wrapper answered itself (fake()'s answer besides ORIGINAL and TRAP).
#define ANSWERED 0x100

struct reading {
    int64_t seconds, nanoseconds;
};

/// The private page this code runs in: the page of the instruction being run.
HELPER const struct chaos_vdso_local *page(void) {
    uintptr_t here;
    __asm__("leaq 0(%%rip), %0" : "=r"(here));
    return (const struct chaos_vdso_local *)(here & ~(uintptr_t)4095);
}

/// The system call itself: the filter traps it, and the supervisor answers it with the
/// plan's full semantics (counts, probabilities, windows).
HELPER long system_call(long number, long first, long second) {
    long result;
    __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(first), "S"(second) : "rcx", "r11", "memory");
    return result;
}

/// Whether `mode` is `value`. The empty asm hides that every test looks at the same mode, so
/// that the compiler cannot turn the chain of tests into a switch with a jump table, which
/// it would keep in .rodata: memory the copied code cannot reach.
HELPER int is(int mode, int value) {
    __asm__ volatile("" : "+r"(mode));
    return mode == value;
}

/// What the shared page says of a reading of `clock`: CHAOS_VDSO_ORIGINAL, CHAOS_VDSO_TRAP,
/// or ANSWERED with the faked reading in `out` (then counted).
SHARED int fake(const struct chaos_vdso_local *local, int clock, struct reading *out) {
    struct chaos_vdso_shared *shared = local->shared;
    for (;;) {
        uint64_t sequence = __atomic_load_n(&shared->sequence, __ATOMIC_ACQUIRE);
        if (sequence & 1) return CHAOS_VDSO_TRAP; // being rewritten: the supervisor knows
        int mode = __atomic_load_n(&shared->mode[clock], __ATOMIC_RELAXED);
        if (is(mode, CHAOS_VDSO_ORIGINAL)) return CHAOS_VDSO_ORIGINAL;
        struct {
            int64_t seconds;
            long nanoseconds;
        } now;
        int64_t seconds, nanoseconds;
        if (is(mode, CHAOS_VDSO_OFFSET)) {
            if (local->clock_gettime(clock, &now) != 0) return CHAOS_VDSO_TRAP;
            seconds = now.seconds + __atomic_load_n(&shared->seconds, __ATOMIC_RELAXED);
            nanoseconds = now.nanoseconds + __atomic_load_n(&shared->nanoseconds, __ATOMIC_RELAXED);
            if (nanoseconds >= NS) {
                nanoseconds -= NS;
                seconds += 1;
            }
        } else if (is(mode, CHAOS_VDSO_FROZEN)) {
            seconds = __atomic_load_n(&shared->seconds, __ATOMIC_RELAXED);
            nanoseconds = __atomic_load_n(&shared->nanoseconds, __ATOMIC_RELAXED);
        } else if (is(mode, CHAOS_VDSO_VIRTUAL)) {
            int64_t value = __atomic_load_n(&shared->base, __ATOMIC_RELAXED) +
                            __atomic_load_n(&shared->offset[clock], __ATOMIC_RELAXED);
            if (__atomic_load_n(&shared->flowing, __ATOMIC_RELAXED)) {
                if (local->clock_gettime(1 /* CLOCK_MONOTONIC */, &now) != 0) return CHAOS_VDSO_TRAP;
                value += now.seconds * NS + now.nanoseconds - __atomic_load_n(&shared->anchor, __ATOMIC_RELAXED);
            }
            seconds = value / NS;
            nanoseconds = value % NS;
            if (nanoseconds < 0) {
                nanoseconds += NS;
                seconds -= 1;
            }
        } else if (is(mode, CHAOS_VDSO_SPEED)) {
            // As the engine (chaos_fault_apply_clock): anchor + round((real - anchor) × factor).
            if (local->clock_gettime(clock, &now) != 0) return CHAOS_VDSO_TRAP;
            int64_t anchor = __atomic_load_n(&shared->speed_anchor, __ATOMIC_RELAXED);
            double factor, zero, half, minus_half, limit, minus_limit;
            __atomic_load(&shared->factor, &factor, __ATOMIC_RELAXED);
            __atomic_load(&shared->zero, &zero, __ATOMIC_RELAXED);
            __atomic_load(&shared->half, &half, __ATOMIC_RELAXED);
            __atomic_load(&shared->minus_half, &minus_half, __ATOMIC_RELAXED);
            __atomic_load(&shared->limit, &limit, __ATOMIC_RELAXED);
            __atomic_load(&shared->minus_limit, &minus_limit, __ATOMIC_RELAXED);
            double scaled = (double)(now.seconds * NS + now.nanoseconds - anchor) * factor;
            int64_t rounded;
            if (!(scaled < limit && scaled > minus_limit))
                rounded = scaled > zero ? INT64_MAX : INT64_MIN;
            else
                rounded = (int64_t)(scaled + (scaled >= zero ? half : minus_half));
            int64_t value = (int64_t)((uint64_t)anchor + (uint64_t)rounded);
            seconds = value / NS;
            nanoseconds = value % NS;
            if (nanoseconds < 0) {
                nanoseconds += NS;
                seconds -= 1;
            }
        } else {
            return CHAOS_VDSO_TRAP;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&shared->sequence, __ATOMIC_RELAXED) != sequence) continue;
        __atomic_fetch_add(&shared->calls, 1, __ATOMIC_RELAXED);
        out->seconds = seconds;
        out->nanoseconds = nanoseconds;
        return ANSWERED;
    }
}

WRAPPER int chaos_vdso_clock_gettime(int clock, void *timespec) {
    const struct chaos_vdso_local *local = page();
    // A clock nothing fakes (Go's monotonic readings, most often) goes straight on: one
    // load, no sequence (a change made meanwhile applies from the next reading).
    if ((unsigned)clock >= CHAOS_VDSO_CLOCKS ||
        __atomic_load_n(&local->shared->mode[clock], __ATOMIC_RELAXED) == CHAOS_VDSO_ORIGINAL)
        return local->clock_gettime(clock, timespec);
    if (!timespec) return (int)system_call(SYS_clock_gettime, clock, 0);
    struct reading faked;
    int how = fake(local, clock, &faked);
    if (how == CHAOS_VDSO_ORIGINAL) return local->clock_gettime(clock, timespec);
    if (how != ANSWERED) return (int)system_call(SYS_clock_gettime, clock, (long)timespec);
    int64_t *fields = timespec;
    fields[0] = faked.seconds;
    fields[1] = faked.nanoseconds;
    return 0;
}

WRAPPER int chaos_vdso_gettimeofday(void *timeval, void *timezone) {
    const struct chaos_vdso_local *local = page();
    if (!timeval) return (int)system_call(SYS_gettimeofday, 0, (long)timezone);
    struct reading faked;
    int how = fake(local, 0 /* CLOCK_REALTIME */, &faked);
    if (how == CHAOS_VDSO_ORIGINAL) return local->gettimeofday(timeval, timezone);
    if (how != ANSWERED) return (int)system_call(SYS_gettimeofday, (long)timeval, (long)timezone);
    int64_t *fields = timeval;
    fields[0] = faked.seconds;
    fields[1] = faked.nanoseconds / 1000;
    if (timezone) local->gettimeofday(0, timezone);
    return 0;
}

WRAPPER long chaos_vdso_time(long *seconds) {
    const struct chaos_vdso_local *local = page();
    struct reading faked;
    int how = fake(local, 0 /* CLOCK_REALTIME */, &faked);
    if (how == CHAOS_VDSO_ORIGINAL) return local->time(seconds);
    if (how != ANSWERED) return system_call(SYS_time, (long)seconds, 0);
    if (seconds) *seconds = faked.seconds;
    return faked.seconds;
}

// The linker's bounds of the section.
extern const unsigned char __start_chaos_vdso_code[], __stop_chaos_vdso_code[];

void chaos_vdso_code_get(struct chaos_vdso_code *out) {
    uintptr_t start = (uintptr_t)__start_chaos_vdso_code;
    *out = (struct chaos_vdso_code){
        .bytes = __start_chaos_vdso_code,
        .length = (size_t)(__stop_chaos_vdso_code - __start_chaos_vdso_code),
        .clock_gettime = (uintptr_t)chaos_vdso_clock_gettime - start,
        .gettimeofday = (uintptr_t)chaos_vdso_gettimeofday - start,
        .time = (uintptr_t)chaos_vdso_time - start,
    };
}

#else

void chaos_vdso_code_get(struct chaos_vdso_code *out) { *out = (struct chaos_vdso_code){0}; }

#endif
