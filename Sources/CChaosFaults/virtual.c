// Virtual time: one process-wide clock that stands still (or flows at real pace from its
// anchor) and moves forward only when advanced, with the sleepers and kernel timers
// (timerfd) of the process following it. See CChaosFaults.h, "Virtual time".
//
// Readings are lock-free: the virtual monotonic instant is `base` (manual) or `base` plus
// the real monotonic time since `anchor` (flowing); `base` changes under `lock`, `anchor`
// only at start. Everything else (sleepers, timers, the advance in progress) is under
// `lock`.
//
// Nothing here calls a function the in-process delivery may have rebound in this image
// (clock_gettime, nanosleep, poll, open, read …): those go through syscall() so that the
// clock never asks itself what time it is.
#define _GNU_SOURCE
#include "internal.h"
#include "fast_clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL

/// One thread waiting for a virtual deadline (on its own stack).
typedef struct vt_sleeper {
    int64_t deadline;   ///< virtual monotonic
    pid_t thread;
    int reported;       ///< the watchdog has named it
    struct vt_sleeper *next;
} vt_sleeper;

/// One timerfd armed in virtual time.
typedef struct vt_timer {
    int fd;             ///< -1: free
    int clock;          ///< the timerfd's clock id
    int64_t deadline;   ///< virtual monotonic; 0: disarmed
    int64_t interval;   ///< 0: one shot
    uint64_t sets;      ///< timerfd_settime calls seen
    uint64_t fired_at_sets; ///< `sets` when it was last fired (UINT64_MAX: not fired)
    int dispatch_owned; ///< libdispatch's: one descriptor per clock for all its timers
} vt_timer;

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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed;   ///< virtual time moved, or stopped (CLOCK_MONOTONIC waits)
static pthread_once_t once = PTHREAD_ONCE_INIT;

// The words readings use (fast_clock.h reads them inline).
cf_virtual_clock cf_vt;
static _Atomic int64_t watchdog_ns = 30 * NS;
static _Atomic int64_t settle_ns = 50000000;  ///< per advance step, see settle()
static _Atomic uint64_t reports;
static _Atomic uint64_t steps_total;
static _Atomic uint64_t waits_total;  ///< sleeps, dispatch deadlines and timers started in virtual time

static vt_sleeper *sleepers;
static vt_timer timers[VT_TIMERS];
static vt_known known[VT_KNOWN];
static int64_t last_advance_real;  ///< real monotonic of the last start/advance (watchdog)
static pthread_t watchdog_thread;
static int watchdog_running;

static int64_t now_locked_free(void);

static void init_once(void) {
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&changed, &attributes);
    pthread_condattr_destroy(&attributes);
    for (int i = 0; i < VT_TIMERS; i++) timers[i].fd = -1;
}

/// The virtual monotonic instant of a dispatch_time_t (INT64_MAX: forever). Its encoding:
/// 0 now; ~0 forever; bit 63 clear: uptime (CLOCK_MONOTONIC) ns; bits 63 and 62 set: minus
/// the wall-clock ns (~1: wall now); bit 63 alone: CLOCK_BOOTTIME ns.
static int64_t dispatch_instant(uint64_t when) {
    if (when == ~0ull) return INT64_MAX;
    if (when == 0 || when == ~1ull) return now_locked_free();
    if ((int64_t)when >= 0) return (int64_t)when;
    if (when & (1ull << 62)) return chaos_vt_to_monotonic(CLOCK_REALTIME, -(int64_t)when);
    return chaos_vt_to_monotonic(CLOCK_BOOTTIME, (int64_t)(when & ~(1ull << 63)));
}

static int64_t real_mono(void) { return cf_real_ns(CLOCK_MONOTONIC); }

_Thread_local int cf_vt_internal_wait;

/// pthread_cond_timedwait for virtual time's own waits: its GOT slot may be rebound to the
/// interceptor, which must not make these waits virtual (they wait for virtual time).
static int timed_wait(pthread_cond_t *condition, pthread_mutex_t *mutex, const struct timespec *until) {
    cf_vt_internal_wait = 1;
    int result = pthread_cond_timedwait(condition, mutex, until);
    cf_vt_internal_wait = 0;
    return result;
}

static int64_t now_locked_free(void) {
    int64_t b = atomic_load_explicit(&cf_vt.base, memory_order_acquire);
    if (!atomic_load_explicit(&cf_vt.flowing, memory_order_relaxed)) return b;
    return b + (real_mono() - atomic_load_explicit(&cf_vt.anchor, memory_order_relaxed));
}

static struct timespec deadline_in(int64_t ns) {
    int64_t at = real_mono() + ns;
    struct timespec t = {(time_t)(at / NS), (long)(at % NS)};
    return t;
}

// MARK: - Threads on real time
//
// A thread the test did not start (a server's event loop, a heartbeat, a log flusher) may
// need real time while the rest of the process runs on virtual time. Exempt threads are
// kept by kernel id in a small lock-free table; the count lives in `cf_vt` so that the
// clock's fast path pays one relaxed load while nobody is exempt.

enum { VT_EXEMPT = 64 };
static _Atomic int32_t exempt_ids[VT_EXEMPT];  ///< 0: free
static pthread_mutex_t exempt_lock = PTHREAD_MUTEX_INITIALIZER;  ///< serializes changes

/// The caller's id, cached: gettid is a system call, and an exempt thread's every clock
/// reading asks. A forked child's thread has a new id, so the cache is dropped at fork.
static _Thread_local pid_t cached_thread_id __attribute__((tls_model("initial-exec")));
static pthread_once_t fork_reset_once = PTHREAD_ONCE_INIT;
static void forget_thread_id(void) { cached_thread_id = 0; }
static void register_fork_reset(void) { pthread_atfork(NULL, NULL, forget_thread_id); }

int32_t chaos_vt_current_thread(void) {
    if (!cached_thread_id) {
        pthread_once(&fork_reset_once, register_fork_reset);
        cached_thread_id = (pid_t)syscall(SYS_gettid);
    }
    return cached_thread_id;
}

static int is_exempt(pid_t tid) {
    for (int i = 0; i < VT_EXEMPT; i++)
        if (atomic_load_explicit(&exempt_ids[i], memory_order_relaxed) == tid) return 1;
    return 0;
}

/// Depth of chaos_vt_real_time_scope on this thread (each level also counts in
/// cf_vt.exempt_threads, so that the fast path looks).
static _Thread_local int real_time_depth __attribute__((tls_model("initial-exec")));

int chaos_vt_thread_exempt(void) {
    if (!atomic_load_explicit(&cf_vt.exempt_threads, memory_order_acquire)) return 0;
    return real_time_depth > 0 || is_exempt(chaos_vt_current_thread());
}

void chaos_vt_real_time_scope(int enter) {
    if (enter) {
        real_time_depth++;
        atomic_fetch_add_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
    } else if (real_time_depth > 0) {
        real_time_depth--;
        atomic_fetch_sub_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
    }
}

static int thread_exists(pid_t tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;
    syscall(SYS_close, fd);
    return 1;
}

int chaos_vt_set_thread_exempt(int32_t tid, int exempt) {
    if (tid == 0) tid = chaos_vt_current_thread();
    if (tid < 0) return ESRCH;
    pthread_mutex_lock(&exempt_lock);
    int result = 0, slot = -1;
    for (int i = 0; i < VT_EXEMPT; i++) {
        pid_t held = atomic_load_explicit(&exempt_ids[i], memory_order_relaxed);
        if (held && !thread_exists(held)) {  // exited: its id may come back for a stranger
            atomic_store_explicit(&exempt_ids[i], 0, memory_order_relaxed);
            atomic_fetch_sub_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
            held = 0;
        }
        if (held == tid) slot = i;
    }
    if (exempt && slot < 0) {
        if (!thread_exists(tid)) result = ESRCH;
        else {
            result = ENOSPC;
            for (int i = 0; i < VT_EXEMPT && result; i++) {
                if (atomic_load_explicit(&exempt_ids[i], memory_order_relaxed)) continue;
                atomic_store_explicit(&exempt_ids[i], tid, memory_order_relaxed);
                atomic_fetch_add_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
                result = 0;
            }
        }
    } else if (!exempt && slot >= 0) {
        atomic_store_explicit(&exempt_ids[slot], 0, memory_order_relaxed);
        atomic_fetch_sub_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
    }
    pthread_mutex_unlock(&exempt_lock);
    return result;
}

int32_t chaos_vt_exempt_threads(int32_t *ids, int32_t capacity) {
    int32_t count = 0;
    for (int i = 0; i < VT_EXEMPT; i++) {
        pid_t held = atomic_load_explicit(&exempt_ids[i], memory_order_relaxed);
        if (!held) continue;
        if (ids && count < capacity) ids[count] = held;
        count++;
    }
    return count;
}

// MARK: - Readings

int chaos_vt_running(void) { return atomic_load_explicit(&cf_vt.running, memory_order_acquire); }

int chaos_vt_applies(void) { return chaos_vt_running() && !chaos_vt_thread_exempt(); }

int64_t chaos_vt_monotonic_ns(void) { return now_locked_free(); }

int64_t chaos_vt_reading_ns(int clock) {
    int64_t mono = now_locked_free();
    switch (clock) {
    case CLOCK_REALTIME: case CLOCK_REALTIME_COARSE: case CLOCK_REALTIME_ALARM:
        return mono + atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed);
    case CLOCK_TAI:
        return mono + atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed) + atomic_load_explicit(&cf_vt.tai_minus_real, memory_order_relaxed);
    case CLOCK_BOOTTIME: case CLOCK_BOOTTIME_ALARM:
        return mono + atomic_load_explicit(&cf_vt.boot_minus_mono, memory_order_relaxed);
    default:
        return mono;
    }
}

int64_t chaos_vt_to_monotonic(int clock, int64_t instant) {
    switch (clock) {
    case CLOCK_REALTIME: case CLOCK_REALTIME_COARSE: case CLOCK_REALTIME_ALARM:
        return instant - atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed);
    case CLOCK_TAI:
        return instant - atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed) - atomic_load_explicit(&cf_vt.tai_minus_real, memory_order_relaxed);
    case CLOCK_BOOTTIME: case CLOCK_BOOTTIME_ALARM:
        return instant - atomic_load_explicit(&cf_vt.boot_minus_mono, memory_order_relaxed);
    default:
        return instant;
    }
}

// MARK: - Timers

static vt_timer *timer_of(int fd, int create) {
    vt_timer *free_slot = NULL;
    for (int i = 0; i < VT_TIMERS; i++) {
        if (timers[i].fd == fd) return &timers[i];
        if (timers[i].fd < 0 && !free_slot) free_slot = &timers[i];
    }
    if (!create || !free_slot) return NULL;
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->fd = fd;
    free_slot->clock = -1;
    free_slot->fired_at_sets = UINT64_MAX;
    return free_slot;
}

/// Reads a whole small /proc file with system calls (open and read may be rebound).
static ssize_t read_proc(const char *path, char *buffer, size_t capacity) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t total = 0, got;
    while (total < (ssize_t)capacity - 1 && (got = syscall(SYS_read, fd, buffer + total, capacity - 1 - (size_t)total)) > 0) total += got;
    syscall(SYS_close, fd);
    buffer[total < 0 ? 0 : total] = 0;
    return total;
}

/// A timerfd's clock id, from /proc/self/fdinfo (the descriptor may predate virtual time).
static int timerfd_clock(int fd) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    if (read_proc(path, text, sizeof text) <= 0) return -1;
    const char *line = strstr(text, "clockid:");
    return line ? atoi(line + 8) : -1;
}

typedef int (*settime_fn)(int, int, const struct itimerspec *, struct itimerspec *);

static struct timespec ts_of(int64_t ns) {
    if (ns < 0) ns = 0;
    struct timespec t = {(time_t)(ns / NS), (long)(ns % NS)};
    return t;
}

static int64_t ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * NS + t->tv_nsec; }

/// Arms the kernel timer behind `timer` for its virtual deadline: at once when due, after
/// the remaining time when time flows, not at all while it stands still.
static int arm_real(const vt_timer *timer, settime_fn real_settime, int64_t now) {
    struct itimerspec spec = {{0, 0}, {0, 0}};
    if (timer->deadline > 0) {
        int64_t left = timer->deadline - now;
        if (left <= 0) spec.it_value.tv_nsec = 1;
        else if (atomic_load(&cf_vt.flowing)) {
            spec.it_value = ts_of(left);
            spec.it_interval = ts_of(timer->interval);
        }
    }
    return real_settime(timer->fd, 0, &spec, NULL);
}

static settime_fn saved_settime;

static int raw_settime(int fd, int flags, const struct itimerspec *spec, struct itimerspec *old) {
    return (int)syscall(SYS_timerfd_settime, fd, flags, spec, old);
}

int chaos_vt_timerfd_created(int fd, int clock) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lock);
    vt_timer *timer = timer_of(fd, 1);
    if (timer) {
        timer->clock = clock;
        timer->deadline = 0;
        timer->interval = 0;
        timer->fired_at_sets = UINT64_MAX;
    }
    pthread_mutex_unlock(&lock);
    return timer ? 0 : -1;
}

int chaos_vt_timerfd_settime(int fd, int flags, const struct itimerspec *value, struct itimerspec *old,
                             int (*real_settime)(int, int, const struct itimerspec *, struct itimerspec *), int dispatch_owned) {
    if (!real_settime) real_settime = raw_settime;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lock);
    if (!atomic_load(&cf_vt.running)) {
        pthread_mutex_unlock(&lock);
        return real_settime(fd, flags, value, old);
    }
    saved_settime = real_settime;
    vt_timer *timer = timer_of(fd, 1);
    if (!timer || !value) {
        pthread_mutex_unlock(&lock);
        return real_settime(fd, flags, value, old);
    }
    if (timer->clock < 0) timer->clock = timerfd_clock(fd);
    timer->dispatch_owned = dispatch_owned;
    int64_t now = now_locked_free();
    if (old) {
        old->it_value = ts_of(timer->deadline > 0 ? (timer->deadline - now > 0 ? timer->deadline - now : 1) : 0);
        old->it_interval = ts_of(timer->interval);
    }
    int64_t value_ns = ns_of(&value->it_value);
    if (value_ns == 0) timer->deadline = 0;
    else if (flags & TFD_TIMER_ABSTIME) timer->deadline = chaos_vt_to_monotonic(timer->clock, value_ns);
    else timer->deadline = now + value_ns;
    if (timer->deadline == 0 && value_ns != 0) timer->deadline = 1;
    timer->interval = ns_of(&value->it_interval);
    timer->sets++;
    if (value_ns != 0 && !dispatch_owned) atomic_fetch_add(&waits_total, 1);
    int result = arm_real(timer, real_settime, now);
    // Already due: the kernel timer fires at once, and that is this deadline's firing.
    if (timer->deadline > 0 && timer->deadline <= now) timer->deadline = timer->interval > 0 ? timer->deadline + timer->interval : 0;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return result;
}

int chaos_vt_timerfd_gettime(int fd, struct itimerspec *value) {
    if (!atomic_load(&cf_vt.running) || !value) return 1;
    pthread_mutex_lock(&lock);
    vt_timer *timer = timer_of(fd, 0);
    if (!timer) {
        pthread_mutex_unlock(&lock);
        return 1;
    }
    int64_t now = now_locked_free();
    value->it_value = ts_of(timer->deadline > 0 ? (timer->deadline - now > 0 ? timer->deadline - now : 1) : 0);
    value->it_interval = ts_of(timer->interval);
    pthread_mutex_unlock(&lock);
    return 0;
}

void chaos_vt_dispatch_deadline(const void *source, uint64_t when, uint64_t interval) {
    if (!atomic_load(&cf_vt.running)) return;
    pthread_mutex_lock(&lock);
    int64_t deadline = dispatch_instant(when);
    vt_known *slot = NULL;
    for (int i = 0; i < VT_KNOWN && source; i++) {
        if (known[i].deadline && known[i].source == source) slot = &known[i];
    }
    for (int i = 0; i < VT_KNOWN && !slot; i++) {
        if (!known[i].deadline) slot = &known[i];
    }
    if (deadline != INT64_MAX) atomic_fetch_add(&waits_total, 1);
    if (slot) {
        if (deadline == INT64_MAX) {
            slot->deadline = 0;
        } else {
            slot->source = source;
            slot->deadline = deadline > 0 ? deadline : 1;
            slot->interval = interval == 0 || interval >= (uint64_t)INT64_MAX ? 0 : (int64_t)interval;
        }
    }
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

void chaos_vt_dispatch_cancel(const void *source) {
    if (!atomic_load(&cf_vt.running) || !source) return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < VT_KNOWN; i++) if (known[i].source == source) known[i].deadline = 0;
    pthread_mutex_unlock(&lock);
}

// MARK: - Sleepers

/// Lists the calling thread as waiting for `deadline`, under `lock`: an advance in
/// progress sees the new deadline, and the wait counts as begun.
static void sleeper_join(vt_sleeper *self, int64_t deadline) {
    *self = (vt_sleeper){deadline, chaos_vt_current_thread(), 0, sleepers};
    sleepers = self;
    atomic_fetch_add(&waits_total, 1);
    pthread_cond_broadcast(&changed);
}

/// Takes `self` off the list, under `lock`, and wakes the advance waiting for it to leave.
static void sleeper_leave(vt_sleeper *self) {
    for (vt_sleeper **link = &sleepers; *link; link = &(*link)->next) {
        if (*link == self) {
            *link = self->next;
            break;
        }
    }
    pthread_cond_broadcast(&changed);
}

int chaos_vt_sleep_until(int64_t deadline, int64_t *left_when_stopped) {
    pthread_once(&once, init_once);
    if (left_when_stopped) *left_when_stopped = 0;
    pthread_mutex_lock(&lock);
    if (!atomic_load(&cf_vt.running)) {
        pthread_mutex_unlock(&lock);
        return 1;
    }
    vt_sleeper self;
    sleeper_join(&self, deadline);
    int64_t now;
    while (atomic_load(&cf_vt.running) && (now = now_locked_free()) < deadline) {
        int64_t wait = atomic_load(&watchdog_ns);
        if (atomic_load(&cf_vt.flowing) && deadline - now < wait) wait = deadline - now;
        struct timespec until = deadline_in(wait);
        timed_wait(&changed, &lock, &until);
    }
    int stopped = !atomic_load(&cf_vt.running);
    if (stopped && left_when_stopped) *left_when_stopped = deadline - now_locked_free();
    sleeper_leave(&self);
    pthread_mutex_unlock(&lock);
    return stopped;
}

int chaos_vt_wait_with(int64_t deadline, int (*attempt)(void *context, int slice_ms), void *context) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lock);
    if (!atomic_load(&cf_vt.running)) {
        pthread_mutex_unlock(&lock);
        return attempt(context, -2);
    }
    vt_sleeper self;
    sleeper_join(&self, deadline);
    int result = 0;
    for (;;) {
        int64_t now = now_locked_free();
        if (!atomic_load(&cf_vt.running)) {
            // Off now: what remained, in real time, in one wait.
            int64_t left = deadline - now;
            pthread_mutex_unlock(&lock);
            result = attempt(context, left <= 0 ? 0 : (int)(left / 1000000 + 1));
            pthread_mutex_lock(&lock);
            break;
        }
        if (now >= deadline) break;
        int slice = 5;
        if (atomic_load(&cf_vt.flowing) && (deadline - now) / 1000000 < slice) slice = (int)((deadline - now) / 1000000) + 1;
        pthread_mutex_unlock(&lock);
        result = attempt(context, slice);
        pthread_mutex_lock(&lock);
        if (result != 0) break;
    }
    sleeper_leave(&self);
    pthread_mutex_unlock(&lock);
    return result;
}

// MARK: - Advancing

/// The earliest virtual deadline pending (INT64_MAX: none). Under `lock`. While time flows
/// the kernel fires timers whose deadlines real time reached, so those are moved past now.
static int64_t next_deadline_locked(void) {
    if (atomic_load(&cf_vt.flowing)) {
        int64_t now = now_locked_free();
        for (int i = 0; i < VT_TIMERS; i++) {
            vt_timer *timer = &timers[i];
            if (timer->fd < 0 || timer->deadline <= 0 || timer->deadline > now) continue;
            if (timer->interval <= 0) timer->deadline = 0;
            else timer->deadline += ((now - timer->deadline) / timer->interval + 1) * timer->interval;
        }
    }
    int64_t next = INT64_MAX;
    for (vt_sleeper *s = sleepers; s; s = s->next) if (s->deadline < next) next = s->deadline;
    for (int i = 0; i < VT_TIMERS; i++) {
        if (timers[i].fd >= 0 && !timers[i].dispatch_owned && timers[i].deadline > 0 && timers[i].deadline < next) next = timers[i].deadline;
    }
    for (int i = 0; i < VT_KNOWN; i++) if (known[i].deadline && known[i].deadline < next) next = known[i].deadline;
    return next;
}

int64_t chaos_vt_latest_deadline(void) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lock);
    int64_t latest = INT64_MIN;
    for (vt_sleeper *s = sleepers; s; s = s->next) if (s->deadline > latest) latest = s->deadline;
    for (int i = 0; i < VT_TIMERS; i++) {
        if (timers[i].fd >= 0 && !timers[i].dispatch_owned && timers[i].deadline > latest) latest = timers[i].deadline;
    }
    for (int i = 0; i < VT_KNOWN; i++) if (known[i].deadline > latest) latest = known[i].deadline;
    pthread_mutex_unlock(&lock);
    return atomic_load(&cf_vt.running) ? latest : INT64_MIN;
}

int64_t chaos_vt_next_deadline(void) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lock);
    int64_t next = atomic_load(&cf_vt.running) ? next_deadline_locked() : INT64_MAX;
    pthread_mutex_unlock(&lock);
    return next;
}

int32_t chaos_vt_pending_count(void) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lock);
    int32_t count = 0;
    for (vt_sleeper *s = sleepers; s; s = s->next) count++;
    for (int i = 0; i < VT_TIMERS; i++) if (timers[i].fd >= 0 && !timers[i].dispatch_owned && timers[i].deadline > 0) count++;
    for (int i = 0; i < VT_KNOWN; i++) if (known[i].deadline) count++;
    pthread_mutex_unlock(&lock);
    return count;
}

static int readable(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    struct timespec zero = {0, 0};
    return syscall(SYS_ppoll, &p, 1, &zero, NULL, 0) == 1 && (p.revents & POLLIN);
}

/// Calls `visit` for each descriptor of this process whose /proc/self/fd link reads
/// `kind` (e.g. "anon_inode:[timerfd]"), until it returns non-zero.
static void each_descriptor(const char *kind, int (*visit)(int fd, void *context), void *context) {
    int dir = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    char buffer[4096], path[64], target[64];
    long got;
    int stop = 0;
    while (!stop && (got = syscall(SYS_getdents64, dir, buffer, sizeof buffer)) > 0) {
        for (long offset = 0; offset < got && !stop;) {
            struct dirent64 *entry = (struct dirent64 *)(buffer + offset);
            offset += entry->d_reclen;
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
            snprintf(path, sizeof path, "/proc/self/fd/%s", entry->d_name);
            ssize_t length = syscall(SYS_readlinkat, AT_FDCWD, path, target, sizeof target - 1);
            if (length <= 0) continue;
            target[length] = 0;
            if (strcmp(target, kind) == 0) stop = visit(atoi(entry->d_name), context);
        }
    }
    syscall(SYS_close, dir);
}

/// Whether the epoll set that watches `fd` with EPOLLONESHOT has delivered its event (the
/// kernel then clears the event bits, which /proc/self/fdinfo shows), or no epoll set
/// watches it any more. libdispatch arms its timer descriptors this way, never reads them,
/// and takes one out of its set once no timer of that clock is left.
typedef struct oneshot_search {
    int fd;
    int found, delivered;
} oneshot_search;

static int look_in_epoll_set(int epoll, void *context) {
    oneshot_search *search = context;
    char path[64], info[8192];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epoll);
    if (read_proc(path, info, sizeof info) <= 0) return 0;
    for (const char *line = strstr(info, "tfd:"); line; line = strstr(line + 4, "tfd:")) {
        if (atoi(line + 4) != search->fd) continue;
        const char *events = strstr(line, "events:");
        if (!events) return 0;
        unsigned long mask = strtoul(events + 7, NULL, 16);
        search->found = 1;
        search->delivered = (mask & 0x1) == 0 && (mask & 0x40000000) != 0;  // EPOLLIN gone, EPOLLONESHOT
        return 1;
    }
    return 0;
}

static int delivered_oneshot(int fd) {
    oneshot_search search = {fd, 0, 0};
    each_descriptor("anon_inode:[eventpoll]", look_in_epoll_set, &search);
    return search.found ? search.delivered : 1;
}

/// Whether every thread of the process but the caller and the exempt ones is blocked (not
/// running), sampled from /proc/self/task.
static int others_blocked(pid_t self) {
    int dir = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return 1;
    char buffer[4096], path[64], stat[512];
    int blocked = 1;
    long got;
    while (blocked && (got = syscall(SYS_getdents64, dir, buffer, sizeof buffer)) > 0) {
        for (long offset = 0; offset < got && blocked;) {
            struct dirent64 *entry = (struct dirent64 *)(buffer + offset);
            offset += entry->d_reclen;
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
            pid_t tid = (pid_t)atoi(entry->d_name);
            if (tid == self || is_exempt(tid)) continue;  // an exempt thread runs on its own time
            snprintf(path, sizeof path, "/proc/self/task/%s/stat", entry->d_name);
            if (read_proc(path, stat, sizeof stat) <= 0) continue;
            const char *end = strrchr(stat, ')');
            if (end && end[1] == ' ' && end[2] == 'R') blocked = 0;
        }
    }
    syscall(SYS_close, dir);
    return blocked;
}

/// Waits (without `lock`) until what the last step released has been taken: each sleeper
/// due has left its wait, each fired timer has been read, re-armed or delivered by epoll,
/// and then until the process's other threads are idle (the work the firings scheduled
/// has started and run as far as it can), all within the settle limit. Returns with
/// `lock` held.
static void settle(int64_t now, const int *fired, int fired_count) {
    int64_t limit = real_mono() + atomic_load(&settle_ns);
    pid_t self = chaos_vt_current_thread();
    int quiet_samples = 0;
    for (;;) {
        int pending = 0;
        for (vt_sleeper *s = sleepers; s; s = s->next) if (s->deadline <= now) pending = 1;
        for (int i = 0; i < fired_count && !pending; i++) {
            vt_timer *timer = &timers[fired[i]];
            if (timer->fd < 0 || timer->sets != timer->fired_at_sets) continue;  // closed or re-armed
            int fd = timer->fd;
            pthread_mutex_unlock(&lock);
            int taken = !readable(fd) || delivered_oneshot(fd);
            pthread_mutex_lock(&lock);
            if (!taken) pending = 1;
        }
        if (!pending) {
            pthread_mutex_unlock(&lock);
            quiet_samples = others_blocked(self) ? quiet_samples + 1 : 0;
            pthread_mutex_lock(&lock);
            if (quiet_samples >= 2) return;
        }
        if (real_mono() > limit) return;
        struct timespec until = deadline_in(pending ? 200000 : 100000);
        timed_wait(&changed, &lock, &until);
    }
}

static void set_now_locked(int64_t target) {
    if (atomic_load(&cf_vt.flowing)) {
        int64_t now = now_locked_free();
        if (target > now) atomic_fetch_add(&cf_vt.base, target - now);
    } else if (target > atomic_load(&cf_vt.base)) {
        atomic_store_explicit(&cf_vt.base, target, memory_order_release);
    }
}

static pthread_mutex_t advancing = PTHREAD_MUTEX_INITIALIZER;

/// Takes what is due at the current virtual time: fires every timer whose deadline it
/// reached, retires the dispatch deadlines it passed, wakes the sleepers, and settles.
/// Under `lock`. Returns how many timers, deadlines and sleepers it took.
static int step_locked(void) {
    int64_t now = now_locked_free();
    settime_fn settime = saved_settime ? saved_settime : raw_settime;
    int fired[VT_TIMERS], fired_count = 0, taken = 0;
    for (int i = 0; i < VT_TIMERS; i++) {
        vt_timer *timer = &timers[i];
        if (timer->fd < 0 || timer->deadline <= 0 || timer->deadline > now) continue;
        timer->deadline = timer->interval > 0 ? timer->deadline + timer->interval : 0;
        timer->fired_at_sets = timer->sets;
        struct itimerspec spec = {{0, 0}, {0, 1}};
        settime(timer->fd, 0, &spec, NULL);
        fired[fired_count++] = i;
    }
    for (int i = 0; i < VT_KNOWN; i++) {
        vt_known *k = &known[i];
        if (!k->deadline || k->deadline > now) continue;
        taken++;
        if (k->interval <= 0) k->deadline = 0;
        else k->deadline += ((now - k->deadline) / k->interval + 1) * k->interval;
    }
    for (vt_sleeper *sleeper = sleepers; sleeper; sleeper = sleeper->next) if (sleeper->deadline <= now) taken++;
    pthread_cond_broadcast(&changed);
    atomic_fetch_add(&steps_total, 1);
    settle(now, fired, fired_count);
    last_advance_real = real_mono();
    return fired_count + taken;
}

int64_t chaos_vt_advance_to(int64_t target, int64_t max_steps) {
    return chaos_vt_advance_to_unless(target, max_steps, NULL, NULL);
}

int64_t chaos_vt_advance_to_unless(int64_t target, int64_t max_steps, int (*should_stop)(void *context), void *context) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&advancing);  // one advance at a time: steps are not interleaved
    pthread_mutex_lock(&lock);
    if (!atomic_load(&cf_vt.running)) {
        pthread_mutex_unlock(&lock);
        pthread_mutex_unlock(&advancing);
        return -1;
    }
    last_advance_real = real_mono();
    int64_t steps = 0;
    int cut_short = 0;
    for (;;) {
        int64_t next = next_deadline_locked();
        if (next > target || !atomic_load(&cf_vt.running)) break;
        if ((max_steps >= 0 && steps >= max_steps) || (should_stop && should_stop(context))) {
            cut_short = 1;
            break;
        }
        int64_t before = now_locked_free();
        if (next > before) set_now_locked(next);
        // A step at a deadline already reached that takes nothing (a sleeper still on its
        // way out) makes no progress: leave it to the next advance.
        if (step_locked() == 0 && next <= before) break;
        steps++;
    }
    if (atomic_load(&cf_vt.running) && !cut_short) {
        set_now_locked(target);
        step_locked();  // what is due at the target itself, and libdispatch's own timers
    }
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&advancing);
    return steps;
}

// MARK: - Watchdog

static void *watch(void *unused) {
    (void)unused;
    pthread_mutex_lock(&lock);
    while (watchdog_running) {
        int64_t period = atomic_load(&watchdog_ns);
        struct timespec until = deadline_in(period / 4 > 0 ? period / 4 : 1000000);
        timed_wait(&changed, &lock, &until);
        if (!watchdog_running || !atomic_load(&cf_vt.running)) continue;
        int64_t stalled = real_mono() - last_advance_real;
        int64_t next = next_deadline_locked();
        if (stalled < period || next == INT64_MAX || (atomic_load(&cf_vt.flowing))) continue;
        int64_t now = now_locked_free();
        char text[1024];
        int length = snprintf(text, sizeof text,
                              "chaos: virtual time has not been advanced for %llds and work waits on it:",
                              (long long)(stalled / NS));
        int named = 0;
        for (vt_sleeper *s = sleepers; s && length < (int)sizeof text - 80; s = s->next) {
            if (s->reported) continue;
            s->reported = 1;
            named++;
            length += snprintf(text + length, sizeof text - (size_t)length, " thread %d sleeps until +%.3fs;", (int)s->thread,
                               (double)(s->deadline - now) / 1e9);
        }
        for (int i = 0; i < VT_TIMERS && length < (int)sizeof text - 80; i++) {
            if (timers[i].fd < 0 || timers[i].deadline <= 0) continue;
            named++;
            length += snprintf(text + length, sizeof text - (size_t)length, " timer fd %d (clock %d) due at +%.3fs;", timers[i].fd,
                               timers[i].clock, (double)(timers[i].deadline - now) / 1e9);
        }
        if (!named) continue;
        snprintf(text + (length < (int)sizeof text - 60 ? length : (int)sizeof text - 60), 60, " advance it, or stop it\n");
        syscall(SYS_write, 2, text, strlen(text));
        atomic_fetch_add(&reports, 1);
        last_advance_real = real_mono();  // one report per period of silence
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

uint64_t chaos_vt_watchdog_reports(void) { return atomic_load(&reports); }

void chaos_vt_set_limits(int64_t watchdog, int64_t settle_limit) {
    if (watchdog > 0) atomic_store(&watchdog_ns, watchdog);
    if (settle_limit >= 0) atomic_store(&settle_ns, settle_limit);
}

// MARK: - Start and stop

/// Takes the process's timerfds that are armed when virtual time starts into virtual time:
/// each keeps the time it had left, counted in virtual time from now. Their owners are not
/// known yet: libdispatch's are recognized when it next arms them.
static int adopt_timer(int fd, void *context) {
    int64_t now = *(const int64_t *)context;
    struct itimerspec left;
    char path[64], info[1024];
    if (syscall(SYS_timerfd_gettime, fd, &left) != 0 || ns_of(&left.it_value) == 0) return 0;
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    if (read_proc(path, info, sizeof info) <= 0) return 0;
    const char *clock = strstr(info, "clockid:");
    vt_timer *timer = timer_of(fd, 1);
    if (!timer) return 1;
    timer->clock = clock ? atoi(clock + 8) : CLOCK_MONOTONIC;
    timer->deadline = now + ns_of(&left.it_value);
    timer->interval = ns_of(&left.it_interval);
    arm_real(timer, raw_settime, now);
    return 0;
}

static void adopt_timers_locked(int64_t now) { each_descriptor("anon_inode:[timerfd]", adopt_timer, &now); }

static int start_locked(int64_t wall_ns, int flow) {
    if (atomic_load(&cf_vt.running)) return -1;
    int64_t mono = real_mono();
    int64_t wall = wall_ns ? wall_ns : cf_real_ns(CLOCK_REALTIME);
    // The virtual monotonic clock starts at the next whole second of the real one (a jump
    // forward of under a second), so that programs' floating-point arithmetic on it comes
    // out exact. Foundation's Thread.sleep computes end = start + interval and sleeps
    // end - now until that is not positive: from an arbitrary nanosecond, an advance of
    // exactly the interval could leave a residue of one ulp (1.8e-12 s), which it turned
    // into zero-length sleeps, forever, while virtual time stood still.
    int64_t base = (mono / NS + 1) * NS;
    atomic_store(&cf_vt.anchor, mono);
    atomic_store(&cf_vt.base, base);
    atomic_store(&cf_vt.wall_minus_mono, wall - base);
    atomic_store(&cf_vt.boot_minus_mono, cf_real_ns(CLOCK_BOOTTIME) - mono);
    atomic_store(&cf_vt.tai_minus_real, cf_real_ns(CLOCK_TAI) - cf_real_ns(CLOCK_REALTIME));
    atomic_store(&cf_vt.flowing, flow ? 1 : 0);
    last_advance_real = mono;
    for (int i = 0; i < VT_TIMERS; i++) timers[i].fd = -1;
    for (int i = 0; i < VT_KNOWN; i++) known[i].deadline = 0;
    adopt_timers_locked(base);
    atomic_store_explicit(&cf_vt.running, 1, memory_order_release);
    watchdog_running = 1;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    if (pthread_create(&watchdog_thread, &attributes, watch, NULL) != 0) watchdog_running = 0;
    pthread_attr_destroy(&attributes);
    return 0;
}

/// Stops virtual time: kernel timers armed in it are armed again in real time for what
/// remained, and sleepers go on sleeping for what remained, in real time.
static void stop_locked(void) {
    if (!atomic_load(&cf_vt.running)) return;
    int64_t now = now_locked_free();
    atomic_store_explicit(&cf_vt.running, 0, memory_order_release);
    settime_fn settime = saved_settime ? saved_settime : raw_settime;
    for (int i = 0; i < VT_TIMERS; i++) {
        vt_timer *timer = &timers[i];
        if (timer->fd < 0) continue;
        if (timer->deadline > 0) {
            struct itimerspec spec = {ts_of(timer->interval), ts_of(timer->deadline - now > 0 ? timer->deadline - now : 1)};
            settime(timer->fd, 0, &spec, NULL);
        }
        timer->fd = -1;
    }
    watchdog_running = 0;
    pthread_cond_broadcast(&changed);
}

/// The plan's side, and the only way virtual time starts and stops: a plan with a `virtual`
/// node starts it (if it is not running), and a plan without one stops it.
void cf_vt_plan_installed(int has_virtual, int64_t wall_ns, int flow) {
    pthread_once(&once, init_once);
    pthread_mutex_lock(&lock);
    int joined = 0;
    if (has_virtual && !atomic_load(&cf_vt.running)) {
        start_locked(wall_ns, flow);
    } else if (!has_virtual && atomic_load(&cf_vt.running)) {
        joined = watchdog_running;
        stop_locked();
    }
    pthread_mutex_unlock(&lock);
    if (joined) pthread_join(watchdog_thread, NULL);
}

uint64_t chaos_vt_steps(void) { return atomic_load(&steps_total); }

void chaos_vt_sleep_real(int64_t ns) {
    if (ns <= 0) return;
    struct timespec t = {(time_t)(ns / NS), (long)(ns % NS)};
    while (syscall(SYS_nanosleep, &t, &t) != 0 && errno == EINTR) {}
}

uint64_t chaos_vt_waits(void) { return atomic_load(&waits_total); }
