// The system clock's typed fast path: GOT slots of clock_gettime, gettimeofday and time
// point straight at these functions (no libffi). They call the real function (from
// dlsym, never through a GOT slot that may be patched) and adjust realtime readings by a
// configuration read with a seqlock: offset, frozen instant, speed, or "ask Swift".
#define _GNU_SOURCE
#include "CChaosClock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(__linux__)
#include <dlfcn.h>
#include <sys/time.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);

static clock_gettime_fn real_clock_gettime;
static gettimeofday_fn real_gettimeofday;
static time_fn real_time;
static _Atomic(chaos_clock_ask_fn) ask_callback;

// Seqlock: odd while a writer is between its two increments. Writers are serialized by the
// Swift side; readers retry when they saw a write in progress.
static _Atomic uint64_t sequence;
static _Atomic int config_mode;
static _Atomic int64_t config_a;
static _Atomic int64_t config_b;
static _Atomic uint64_t config_factor_bits;
static __thread int asking;

int chaos_clock_init(void) {
    if (!real_clock_gettime) real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_DEFAULT, "clock_gettime");
    if (!real_gettimeofday) real_gettimeofday = (gettimeofday_fn)dlsym(RTLD_DEFAULT, "gettimeofday");
    if (!real_time) real_time = (time_fn)dlsym(RTLD_DEFAULT, "time");
    return real_clock_gettime && real_gettimeofday && real_time ? 0 : ENOENT;
}

void chaos_clock_set_ask(chaos_clock_ask_fn callback) {
    atomic_store_explicit(&ask_callback, callback, memory_order_release);
}

void chaos_clock_configure(int mode, int64_t a, int64_t b, double factor) {
    uint64_t bits;
    memcpy(&bits, &factor, sizeof bits);
    uint64_t start = atomic_load_explicit(&sequence, memory_order_relaxed);
    atomic_store_explicit(&sequence, start + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&config_a, a, memory_order_relaxed);
    atomic_store_explicit(&config_b, b, memory_order_relaxed);
    atomic_store_explicit(&config_factor_bits, bits, memory_order_relaxed);
    atomic_store_explicit(&config_mode, mode, memory_order_relaxed);
    atomic_store_explicit(&sequence, start + 2, memory_order_release);
}

int chaos_clock_mode(void) {
    return atomic_load_explicit(&config_mode, memory_order_relaxed);
}

int64_t chaos_clock_real_ns(void) {
    struct timespec now;
    if (chaos_clock_init() != 0 || real_clock_gettime(CLOCK_REALTIME, &now) != 0) return 0;
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/// The reported realtime instant for a real one, per the configuration.
static inline int64_t adjust(int function, int clock, int64_t real_ns) {
    int mode;
    int64_t a, b;
    uint64_t bits;
    for (;;) {
        uint64_t before = atomic_load_explicit(&sequence, memory_order_acquire);
        mode = atomic_load_explicit(&config_mode, memory_order_relaxed);
        if (mode == CHAOS_CLOCK_REAL) return real_ns;
        a = atomic_load_explicit(&config_a, memory_order_relaxed);
        b = atomic_load_explicit(&config_b, memory_order_relaxed);
        bits = atomic_load_explicit(&config_factor_bits, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (!(before & 1) && atomic_load_explicit(&sequence, memory_order_relaxed) == before) break;
    }
    switch (mode) {
    case CHAOS_CLOCK_OFFSET:
        return real_ns + a * 1000000000 + b;
    case CHAOS_CLOCK_FROZEN:
        return a;
    case CHAOS_CLOCK_SPEED: {
        double factor;
        memcpy(&factor, &bits, sizeof factor);
        return b + (int64_t)((double)(real_ns - a) * factor);
    }
    case CHAOS_CLOCK_ASK: {
        chaos_clock_ask_fn callback = atomic_load_explicit(&ask_callback, memory_order_acquire);
        // A clock read from inside the Swift callback gets the real time (no recursion).
        if (!callback || asking) return real_ns;
        asking = 1;
        int64_t result = callback(function, clock, real_ns);
        asking = 0;
        return result;
    }
    default:
        return real_ns;
    }
}

static inline int is_realtime(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
}

static int chaos_clock_gettime_hook(clockid_t clock, struct timespec *result) {
    int status = real_clock_gettime(clock, result);
    if (status != 0 || !result || !is_realtime(clock)) return status;
    int mode = atomic_load_explicit(&config_mode, memory_order_relaxed);
    if (mode == CHAOS_CLOCK_REAL) return status;
    if (mode == CHAOS_CLOCK_OFFSET) {
        // The hot case (Date() under an offset): whole seconds and nanoseconds, no division.
        uint64_t before = atomic_load_explicit(&sequence, memory_order_acquire);
        int64_t seconds = atomic_load_explicit(&config_a, memory_order_relaxed);
        int64_t nanoseconds = atomic_load_explicit(&config_b, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (!(before & 1) && atomic_load_explicit(&sequence, memory_order_relaxed) == before
            && atomic_load_explicit(&config_mode, memory_order_relaxed) == CHAOS_CLOCK_OFFSET) {
            long total = result->tv_nsec + (long)nanoseconds;
            if (total >= 1000000000) { total -= 1000000000; seconds += 1; }
            result->tv_sec += (time_t)seconds;
            result->tv_nsec = total;
            return status;
        }
    }
    int64_t ns = adjust(CHAOS_CLOCK_FN_CLOCK_GETTIME, (int)clock, (int64_t)result->tv_sec * 1000000000 + result->tv_nsec);
    int64_t seconds = ns / 1000000000, nanoseconds = ns % 1000000000;
    if (nanoseconds < 0) { nanoseconds += 1000000000; seconds -= 1; }
    result->tv_sec = (time_t)seconds;
    result->tv_nsec = (long)nanoseconds;
    return status;
}

static int chaos_gettimeofday_hook(struct timeval *result, void *zone) {
    int status = real_gettimeofday(result, zone);
    if (status != 0 || !result || atomic_load_explicit(&config_mode, memory_order_relaxed) == CHAOS_CLOCK_REAL) return status;
    int64_t ns = adjust(CHAOS_CLOCK_FN_GETTIMEOFDAY, (int)CLOCK_REALTIME, (int64_t)result->tv_sec * 1000000000 + (int64_t)result->tv_usec * 1000);
    int64_t seconds = ns / 1000000000, micros = (ns % 1000000000) / 1000;
    if (micros < 0) { micros += 1000000; seconds -= 1; }
    result->tv_sec = (time_t)seconds;
    result->tv_usec = (suseconds_t)micros;
    return status;
}

static time_t chaos_time_hook(time_t *result) {
    time_t now = real_time(NULL);
    if (atomic_load_explicit(&config_mode, memory_order_relaxed) != CHAOS_CLOCK_REAL) {
        struct timespec precise;
        int64_t real_ns = real_clock_gettime(CLOCK_REALTIME, &precise) == 0
            ? (int64_t)precise.tv_sec * 1000000000 + precise.tv_nsec : (int64_t)now * 1000000000;
        int64_t ns = adjust(CHAOS_CLOCK_FN_TIME, (int)CLOCK_REALTIME, real_ns);
        now = (time_t)(ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000));
    }
    if (result) *result = now;
    return now;
}

void *chaos_clock_hook(int function) {
    switch (function) {
    case CHAOS_CLOCK_FN_CLOCK_GETTIME: return (void *)chaos_clock_gettime_hook;
    case CHAOS_CLOCK_FN_GETTIMEOFDAY: return (void *)chaos_gettimeofday_hook;
    case CHAOS_CLOCK_FN_TIME: return (void *)chaos_time_hook;
    default: return NULL;
    }
}

#else

int chaos_clock_init(void) { return ENOSYS; }
void chaos_clock_set_ask(chaos_clock_ask_fn callback) { (void)callback; }
void chaos_clock_configure(int mode, int64_t a, int64_t b, double factor) { (void)mode; (void)a; (void)b; (void)factor; }
int chaos_clock_mode(void) { return 0; }
int64_t chaos_clock_real_ns(void) { return 0; }
void *chaos_clock_hook(int function) { (void)function; return NULL; }

#endif
