#ifndef CHAOSKIT_CCHAOSCLOCK_H
#define CHAOSKIT_CCHAOSCLOCK_H

// The system clock's typed fast path (clock.c): replacements for clock_gettime,
// gettimeofday and time that mirror the `system.clock` point without calling Swift for
// the common rules (offset, frozen, speed). Policy lives in Swift.

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Clock configuration modes.
enum {
    CHAOS_CLOCK_REAL = 0,   ///< report the real time
    CHAOS_CLOCK_OFFSET = 1, ///< real + a seconds + b ns (0 <= b < 1e9)
    CHAOS_CLOCK_FROZEN = 2, ///< a (ns since 1970)
    CHAOS_CLOCK_SPEED = 3,  ///< b + (real - a) * factor
    CHAOS_CLOCK_ASK = 4,    ///< call the ask callback for every reading
};

/// Which function a reading comes from.
enum {
    CHAOS_CLOCK_FN_CLOCK_GETTIME = 0,
    CHAOS_CLOCK_FN_GETTIMEOFDAY = 1,
    CHAOS_CLOCK_FN_TIME = 2,
};

/// Decides a reading in CHAOS_CLOCK_ASK mode: returns the reported ns since 1970.
typedef int64_t (*chaos_clock_ask_fn)(int function, int clock, int64_t real_ns);

/// Resolves the real clock functions with dlsym; 0, or an errno value.
int chaos_clock_init(void);
/// Sets the callback of CHAOS_CLOCK_ASK mode.
void chaos_clock_set_ask(chaos_clock_ask_fn callback);
/// Publishes a new configuration (callers serialize writers).
void chaos_clock_configure(int mode, int64_t a, int64_t b, double factor);
/// The current mode.
int chaos_clock_mode(void);
/// The real CLOCK_REALTIME in ns since 1970, through the dlsym'd function.
int64_t chaos_clock_real_ns(void);
/// The replacement for CHAOS_CLOCK_FN_*: `clock_gettime`, `gettimeofday` or `time`.
void *chaos_clock_hook(int function);

#ifdef __cplusplus
}
#endif

#endif
