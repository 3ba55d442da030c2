// Virtual time's parts (vt_state.c: the clock's words, the lock and what it guards; virtual.c:
// sleepers, advancing, the watchdog, start and stop; vt_timers.c; vt_flow.c; vt_threads.c;
// vt_proc.c) and what they share. Private to the engine.
#ifndef CCHAOS_FAULTS_VIRTUAL_H
#define CCHAOS_FAULTS_VIRTUAL_H

#include "internal.h"
#include "chaos_fast_clock.h"

#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#define NS 1000000000LL

/// One thread waiting for a virtual deadline (on its own stack).
typedef struct vt_sleeper {
    int64_t deadline; ///< virtual monotonic
    pid_t thread;
    int reported; ///< the watchdog has named it
    struct vt_sleeper *next;
} vt_sleeper;

/// One kernel timer armed in virtual time: a timerfd, or a POSIX timer (timer_create).
typedef struct vt_timer {
    int fd;                 ///< -1: free; a POSIX timer's slot holds VT_POSIX_MARK
    int clock;              ///< the timerfd's clock id
    int64_t deadline;       ///< virtual monotonic; 0: disarmed
    int64_t interval;       ///< 0: one shot
    uint64_t sets;          ///< timerfd_settime calls seen
    uint64_t fired_at_sets; ///< `sets` when it was last fired (UINT64_MAX: not fired)
    int dispatch_owned;     ///< libdispatch's: one descriptor per clock for all its timers
    int posix;              ///< a POSIX timer, `id`: the kernel signals its expiry, which nobody can see taken
    timer_t id;
} vt_timer;

/// The `fd` of a POSIX timer's slot: no descriptor number, but in use.
#define VT_POSIX_MARK 0x7fffffff

/// A deadline libdispatch was given through its API (dispatch_after, a timer source). One
/// libdispatch timerfd per clock serves all of its timers, armed for the earliest, which is
/// often its own once-a-second worker-pool monitor: so steps are taken at the deadlines its
/// callers asked for, and its descriptors are fired whenever a step passes their deadline.
typedef struct vt_known {
    const void *source; ///< the timer source; NULL: a dispatch_after (one shot)
    int64_t deadline;   ///< virtual monotonic; 0: free
    int64_t interval;   ///< 0: one shot
} vt_known;

enum { VT_TIMERS = 64, VT_KNOWN = 512 };

typedef int (*settime_fn)(int, int, const struct itimerspec *, struct itimerspec *);
typedef int (*posix_settime_fn)(timer_t, int, const struct itimerspec *, struct itimerspec *);

// vt_state.c. Sleepers, timers and known deadlines are under cf_vt_lock.
extern pthread_mutex_t cf_vt_lock __attribute__((visibility("hidden")));
extern pthread_cond_t cf_vt_changed __attribute__((visibility("hidden")));
/// Wakes every wait on virtual time (cf_vt_changed's waiters and sleepers); under cf_vt_lock.
void cf_vt_notify(void);
extern pthread_once_t cf_vt_once __attribute__((visibility("hidden")));
/// Counts notifications: sleepers wait on it with the futex system call (virtual.c).
extern _Atomic uint32_t cf_vt_generation __attribute__((visibility("hidden")));
extern vt_sleeper *cf_vt_sleepers __attribute__((visibility("hidden")));
extern vt_timer cf_vt_timers[VT_TIMERS] __attribute__((visibility("hidden")));
extern vt_known cf_vt_known[VT_KNOWN] __attribute__((visibility("hidden")));
extern _Atomic uint64_t cf_vt_waits_total __attribute__((visibility("hidden")));
void cf_vt_init_once(void);
int64_t cf_vt_now(void);
int64_t cf_vt_real_mono(void);

// vt_timers.c
extern settime_fn cf_vt_saved_settime __attribute__((visibility("hidden")));
extern posix_settime_fn cf_vt_saved_posix_settime __attribute__((visibility("hidden")));
/// Sets the kernel timer behind `timer` to `spec` (relative): a timerfd through `settime`,
/// a POSIX timer through the timer_settime its interceptor last passed in.
int cf_vt_timer_set(const vt_timer *timer, settime_fn settime, const struct itimerspec *spec);
int64_t cf_vt_ns_of(const struct timespec *t);
struct timespec cf_vt_ts_of(int64_t ns);
vt_timer *cf_vt_timer_of(int fd, int create);
int cf_vt_arm_real(const vt_timer *timer, settime_fn real_settime, int64_t now);
int cf_vt_raw_settime(int fd, int flags, const struct itimerspec *spec, struct itimerspec *old);

// vt_flow.c
int cf_vt_has_advancer_probe(void);
/// Why nobody can advance virtual time any more (the probe's answer), or NULL while someone
/// can or it already flows. Not under cf_vt_lock: a probe may read /proc.
const char *cf_vt_advancer_gone(void);
/// Lets virtual time flow, because of `why`, and says so, once; under cf_vt_lock.
void cf_vt_flow_unadvanceable_locked(const char *why);

// vt_threads.c
int cf_vt_is_exempt(pid_t tid);

// vt_proc.c
ssize_t cf_vt_read_proc(const char *path, char *buffer, size_t capacity);
int cf_vt_readable(int fd);
void cf_vt_each_descriptor(const char *kind, int (*visit)(int fd, void *context), void *context);
int cf_vt_delivered_oneshot(int fd);
int cf_vt_others_blocked(pid_t self);

#endif
