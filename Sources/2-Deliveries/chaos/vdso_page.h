// The two pages a patched vDSO reads (x86_64): what the supervisor shares with every
// process it patched, and what each of those processes holds for itself.
//
// The supervisor redirects the vDSO's clock symbols (vdso.c) to the wrappers of
// vdso_code.c, which it copies into a private page of the process. A wrapper calls the
// vDSO's own function, whose address it finds in that private page (`chaos_vdso_local`,
// at the page's start), and applies what the shared page (`chaos_vdso_shared`, a file
// every patched process maps MAP_SHARED) says about the clock it read. The supervisor
// rewrites the shared page when the plan changes (`chaos ctl`) or virtual time moves, so
// every process sees the change at its next reading.
#ifndef CHAOS_VDSO_PAGE_H
#define CHAOS_VDSO_PAGE_H

#include <stddef.h>
#include <stdint.h>

/// What a wrapper does with a reading of one clock id.
enum chaos_vdso_mode {
    CHAOS_VDSO_ORIGINAL = 0, ///< nothing fakes it: the vDSO's own reading
    CHAOS_VDSO_TRAP = 1,     ///< the plan decides each reading: the system call, which the filter traps
    CHAOS_VDSO_OFFSET = 2,   ///< the reading plus `seconds`.`nanoseconds`
    CHAOS_VDSO_FROZEN = 3,   ///< `seconds`.`nanoseconds`
    CHAOS_VDSO_VIRTUAL = 4,  ///< virtual time: `base` (+ real monotonic ns since `anchor` when flowing) + `offset`
    CHAOS_VDSO_SPEED = 5,    ///< `speed_anchor` + (the reading − `speed_anchor`) × `factor`, rounded
};

/// The clock ids a wrapper looks up; larger ones go to the vDSO's own function.
#define CHAOS_VDSO_CLOCKS 16

/// The shared page. Written by the supervisor only, under a sequence lock: `sequence` is
/// odd while it writes, and a reader that sees it odd or changed reads again (or, while
/// odd, makes the system call). `calls` is the one word the processes write.
struct chaos_vdso_shared {
    uint64_t sequence;
    uint8_t mode[CHAOS_VDSO_CLOCKS];   ///< chaos_vdso_mode by clock id
    int64_t seconds;                   ///< OFFSET, FROZEN: whole seconds (floor) …
    int64_t nanoseconds;               ///< … and 0 ≤ nanoseconds < 1e9
    int64_t base;                      ///< VIRTUAL: virtual monotonic ns (at `anchor` when flowing)
    int64_t anchor;                    ///< VIRTUAL, flowing: real CLOCK_MONOTONIC ns at `base`
    int64_t flowing;                   ///< VIRTUAL: 1 when virtual time flows with real time
    int64_t offset[CHAOS_VDSO_CLOCKS]; ///< VIRTUAL: the clock's reading minus virtual monotonic time
    int64_t speed_anchor;              ///< SPEED: the instant (ns since 1970) time scales about
    double factor;                     ///< SPEED: how fast the faked clock runs
    /// SPEED's constants, here because copied code cannot keep them in memory of its own
    /// (the wrappers' section holds no data): 0, ±0.5 and ±9.2e18, as the engine rounds.
    double zero, half, minus_half, limit, minus_limit;
    uint8_t pad[64]; ///< `calls` on a cache line of its own
    uint64_t calls;  ///< readings the wrappers answered (the supervisor takes them)
};

/// The start of the private page: where the wrappers find the vDSO's own functions and
/// the shared page. Written once, by the supervisor, before the page becomes executable.
struct chaos_vdso_local {
    int (*clock_gettime)(int clock, void *timespec);
    int (*gettimeofday)(void *timeval, void *timezone);
    long (*time)(long *seconds);
    struct chaos_vdso_shared *shared;
};

/// Where the wrappers' code starts in the private page (the local part comes first).
#define CHAOS_VDSO_CODE_AT 256

/// The wrappers (vdso_code.c): each one's offset from the start of the copied code.
struct chaos_vdso_code {
    const unsigned char *bytes; ///< the code to copy
    size_t length;
    size_t clock_gettime, gettimeofday, time;
};

/// The wrappers' code as this binary holds it.
void chaos_vdso_code_get(struct chaos_vdso_code *out);

#endif
