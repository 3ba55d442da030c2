// Virtual time's shared state and its readings: the clock's words, the lock and what it
// guards (sleepers, timers, known deadlines), and the notification every wait on virtual
// time waits for. Below every other part of virtual time (virtual.c: sleeping, advancing,
// the watchdog, start and stop; vt_timers.c; vt_flow.c), which read and change it.
//
// Nothing here calls a function the in-process delivery may have rebound in this image: the
// futex and the real clock go through syscall().
#define _GNU_SOURCE
#include "virtual.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// Guards the sleepers, timers, known deadlines and the watchdog's state below, and every
// change of virtual time's `base`.
pthread_mutex_t cf_vt_lock = PTHREAD_MUTEX_INITIALIZER;
// Virtual time moved, or stopped (CLOCK_MONOTONIC waits); waited on and signalled under
// cf_vt_lock, made once under cf_vt_once.
pthread_cond_t cf_vt_changed;
pthread_once_t cf_vt_once = PTHREAD_ONCE_INIT;
// Counts notifications (cf_vt_notify): sleepers wait on it with the futex system call
// rather than on cf_vt_changed, because a condition wait never tells that a signal handler
// ran, and a sleep must then end with EINTR as the real one does.
_Atomic uint32_t cf_vt_generation;

void cf_vt_notify(void) {
    pthread_cond_broadcast(&cf_vt_changed);
    atomic_fetch_add(&cf_vt_generation, 1);
    syscall(SYS_futex, &cf_vt_generation, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    cf_clock_changed();
}

// Told when the clock's words change (chaos_fast_clock.h); set by a delivery at its start.
static _Atomic(void (*)(void)) clock_listener;

void cf_clock_listen(void (*listener)(void)) { atomic_store(&clock_listener, listener); }

void cf_clock_changed(void) {
    void (*listener)(void) = atomic_load(&clock_listener);
    if (listener) listener();
}

// The words readings use (chaos_fast_clock.h reads them inline): atomics, changed under cf_vt_lock.
cf_virtual_clock cf_vt;
_Atomic uint64_t cf_vt_waits_total; ///< sleeps, dispatch deadlines and timers started in virtual time

// Under cf_vt_lock.
vt_sleeper *cf_vt_sleepers;
vt_timer cf_vt_timers[VT_TIMERS];
vt_known cf_vt_known[VT_KNOWN];

void cf_vt_init_once(void) {
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&cf_vt_changed, &attributes);
    pthread_condattr_destroy(&attributes);
    for (int i = 0; i < VT_TIMERS; i++) cf_vt_timers[i].fd = -1;
}

int64_t cf_vt_real_mono(void) { return cf_real_ns(CLOCK_MONOTONIC); }

int64_t cf_vt_now(void) {
    int64_t b = atomic_load_explicit(&cf_vt.base, memory_order_acquire);
    if (!atomic_load_explicit(&cf_vt.flowing, memory_order_relaxed)) return b;
    return b + (cf_vt_real_mono() - atomic_load_explicit(&cf_vt.anchor, memory_order_relaxed));
}

// MARK: - Readings

int chaos_vt_running(void) { return atomic_load_explicit(&cf_vt.running, memory_order_acquire); }

int chaos_vt_applies(void) { return chaos_vt_running() && !chaos_vt_thread_exempt(); }

int64_t chaos_vt_monotonic_ns(void) { return cf_vt_now(); }

int64_t chaos_vt_reading_ns(int clock) {
    int64_t mono = cf_vt_now();
    switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_REALTIME_ALARM: return mono + atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed);
    case CLOCK_TAI:
        return mono + atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed) +
               atomic_load_explicit(&cf_vt.tai_minus_real, memory_order_relaxed);
    case CLOCK_BOOTTIME:
    case CLOCK_BOOTTIME_ALARM: return mono + atomic_load_explicit(&cf_vt.boot_minus_mono, memory_order_relaxed);
    default: return mono;
    }
}

int64_t chaos_vt_to_monotonic(int clock, int64_t instant) {
    switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_REALTIME_ALARM: return instant - atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed);
    case CLOCK_TAI:
        return instant - atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed) -
               atomic_load_explicit(&cf_vt.tai_minus_real, memory_order_relaxed);
    case CLOCK_BOOTTIME:
    case CLOCK_BOOTTIME_ALARM: return instant - atomic_load_explicit(&cf_vt.boot_minus_mono, memory_order_relaxed);
    default: return instant;
    }
}
