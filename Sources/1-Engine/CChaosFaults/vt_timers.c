// Virtual time, kernel timers: timerfds armed in virtual time, and the deadlines libdispatch
// is given, so that an advance fires them at their virtual instants.
#define _GNU_SOURCE
#include "virtual.h"

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

// MARK: - Timers

vt_timer *cf_vt_timer_of(int fd, int create) {
    vt_timer *free_slot = NULL;
    for (int i = 0; i < VT_TIMERS; i++) {
        if (cf_vt_timers[i].fd == fd) return &cf_vt_timers[i];
        if (cf_vt_timers[i].fd < 0 && !free_slot) free_slot = &cf_vt_timers[i];
    }
    if (!create || !free_slot) return NULL;
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->fd = fd;
    free_slot->clock = -1;
    free_slot->fired_at_sets = UINT64_MAX;
    return free_slot;
}
struct timespec cf_vt_ts_of(int64_t ns) {
    if (ns < 0) ns = 0;
    struct timespec t = {(time_t)(ns / NS), (long)(ns % NS)};
    return t;
}

int64_t cf_vt_ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * NS + t->tv_nsec; }

/// Arms the kernel timer behind `timer` for its virtual deadline: at once when due, after
/// the remaining time when time flows, not at all while it stands still.
int cf_vt_arm_real(const vt_timer *timer, settime_fn real_settime, int64_t now) {
    struct itimerspec spec = {{0, 0}, {0, 0}};
    if (timer->deadline > 0) {
        int64_t left = timer->deadline - now;
        if (left <= 0)
            spec.it_value.tv_nsec = 1;
        else if (atomic_load(&cf_vt.flowing)) {
            spec.it_value = cf_vt_ts_of(left);
            spec.it_interval = cf_vt_ts_of(timer->interval);
        }
    }
    return cf_vt_timer_set(timer, real_settime, &spec);
}

// The real timer_settime the interceptor last passed in; under cf_vt_lock.
posix_settime_fn cf_vt_saved_posix_settime;

int cf_vt_timer_set(const vt_timer *timer, settime_fn settime, const struct itimerspec *spec) {
    if (!timer->posix) return settime(timer->fd, 0, spec, NULL);
    return cf_vt_saved_posix_settime ? cf_vt_saved_posix_settime(timer->id, 0, spec, NULL) : -1;
}

/// The slot of POSIX timer `id`, made when `create` and there is room; under cf_vt_lock.
static vt_timer *posix_timer_of(timer_t id, int create) {
    vt_timer *free_slot = NULL;
    for (int i = 0; i < VT_TIMERS; i++) {
        if (cf_vt_timers[i].fd >= 0 && cf_vt_timers[i].posix && cf_vt_timers[i].id == id) return &cf_vt_timers[i];
        if (cf_vt_timers[i].fd < 0 && !free_slot) free_slot = &cf_vt_timers[i];
    }
    if (!create || !free_slot) return NULL;
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->fd = VT_POSIX_MARK;
    free_slot->posix = 1;
    free_slot->id = id;
    free_slot->fired_at_sets = UINT64_MAX;
    return free_slot;
}

/// What `timer` has left, as timerfd_gettime and timer_gettime answer it; under cf_vt_lock.
static void time_left(const vt_timer *timer, int64_t now, struct itimerspec *out) {
    out->it_value = cf_vt_ts_of(timer->deadline > 0 ? (timer->deadline - now > 0 ? timer->deadline - now : 1) : 0);
    out->it_interval = cf_vt_ts_of(timer->interval);
}

/// Arms `timer` (a timerfd or a POSIX timer whose clock is set) for `value` in virtual time,
/// an instant of its clock when `absolute`, with what it had left in `old`; a set with a
/// deadline counts as a wait begun when `counts`. Under cf_vt_lock.
static int arm_in_virtual_time(vt_timer *timer, int absolute, const struct itimerspec *value, struct itimerspec *old,
                               int counts, settime_fn settime) {
    int64_t now = cf_vt_now();
    if (old) time_left(timer, now, old);
    int64_t value_ns = cf_vt_ns_of(&value->it_value);
    if (value_ns == 0)
        timer->deadline = 0;
    else if (absolute)
        timer->deadline = chaos_vt_to_monotonic(timer->clock, value_ns);
    else
        timer->deadline = now + value_ns;
    if (timer->deadline == 0 && value_ns != 0) timer->deadline = 1;
    timer->interval = cf_vt_ns_of(&value->it_interval);
    timer->sets++;
    if (value_ns != 0 && counts) atomic_fetch_add(&cf_vt_waits_total, 1);
    int result = cf_vt_arm_real(timer, settime, now);
    // Already due: the kernel timer fires at once, and that is this deadline's firing.
    if (timer->deadline > 0 && timer->deadline <= now)
        timer->deadline = timer->interval > 0 ? timer->deadline + timer->interval : 0;
    cf_vt_notify();
    return result;
}

int chaos_vt_posix_settime(timer_t id, int clock, int flags, const struct itimerspec *value, struct itimerspec *old,
                           posix_settime_fn real) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    vt_timer *timer = atomic_load(&cf_vt.running) && value ? posix_timer_of(id, 1) : NULL;
    if (!timer) {
        pthread_mutex_unlock(&cf_vt_lock);
        return -2;
    }
    cf_vt_saved_posix_settime = real;
    timer->clock = clock;
    int result = arm_in_virtual_time(timer, flags & TIMER_ABSTIME, value, old, 1,
                                     cf_vt_saved_settime ? cf_vt_saved_settime : cf_vt_raw_settime);
    pthread_mutex_unlock(&cf_vt_lock);
    return result;
}

int chaos_vt_posix_gettime(timer_t id, struct itimerspec *value) {
    if (!atomic_load(&cf_vt.running) || !value) return 1;
    pthread_mutex_lock(&cf_vt_lock);
    vt_timer *timer = posix_timer_of(id, 0);
    if (timer) time_left(timer, cf_vt_now(), value);
    pthread_mutex_unlock(&cf_vt_lock);
    return timer ? 0 : 1;
}

void chaos_vt_posix_deleted(timer_t id) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    vt_timer *timer = posix_timer_of(id, 0);
    if (timer) timer->fd = -1;
    pthread_mutex_unlock(&cf_vt_lock);
}

// The real timerfd_settime the interceptor last passed in; under cf_vt_lock.
settime_fn cf_vt_saved_settime;

int cf_vt_raw_settime(int fd, int flags, const struct itimerspec *spec, struct itimerspec *old) {
    return (int)syscall(SYS_timerfd_settime, fd, flags, spec, old);
}

int chaos_vt_timerfd_created(int fd, int clock) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    vt_timer *timer = cf_vt_timer_of(fd, 1);
    if (timer) {
        timer->clock = clock;
        timer->deadline = 0;
        timer->interval = 0;
        timer->fired_at_sets = UINT64_MAX;
    }
    pthread_mutex_unlock(&cf_vt_lock);
    return timer ? 0 : -1;
}

int chaos_vt_timerfd_settime(int fd, int flags, const struct itimerspec *value, struct itimerspec *old,
                             int (*real_settime)(int, int, const struct itimerspec *, struct itimerspec *),
                             int dispatch_owned) {
    if (!real_settime) real_settime = cf_vt_raw_settime;
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    if (!atomic_load(&cf_vt.running)) {
        pthread_mutex_unlock(&cf_vt_lock);
        return real_settime(fd, flags, value, old);
    }
    cf_vt_saved_settime = real_settime;
    vt_timer *timer = cf_vt_timer_of(fd, 1);
    if (!timer || !value) {
        pthread_mutex_unlock(&cf_vt_lock);
        return real_settime(fd, flags, value, old);
    }
    if (timer->clock < 0) timer->clock = chaos_timerfd_clock(fd);
    timer->dispatch_owned = dispatch_owned;
    int result = arm_in_virtual_time(timer, flags & TFD_TIMER_ABSTIME, value, old, !dispatch_owned, real_settime);
    pthread_mutex_unlock(&cf_vt_lock);
    return result;
}

int chaos_vt_timerfd_gettime(int fd, struct itimerspec *value) {
    if (!atomic_load(&cf_vt.running) || !value) return 1;
    pthread_mutex_lock(&cf_vt_lock);
    vt_timer *timer = cf_vt_timer_of(fd, 0);
    if (!timer) {
        pthread_mutex_unlock(&cf_vt_lock);
        return 1;
    }
    time_left(timer, cf_vt_now(), value);
    pthread_mutex_unlock(&cf_vt_lock);
    return 0;
}

/// The virtual monotonic instant of a dispatch_time_t (INT64_MAX: forever). Its encoding:
/// 0 now; ~0 forever; bit 63 clear: uptime (CLOCK_MONOTONIC) ns; bits 63 and 62 set: minus
/// the wall-clock ns (~1: wall now); bit 63 alone: CLOCK_BOOTTIME ns.
static int64_t dispatch_instant(uint64_t when) {
    if (when == ~0ull) return INT64_MAX;
    if (when == 0 || when == ~1ull) return cf_vt_now();
    if ((int64_t)when >= 0) return (int64_t)when;
    if (when & (1ull << 62)) return chaos_vt_to_monotonic(CLOCK_REALTIME, -(int64_t)when);
    return chaos_vt_to_monotonic(CLOCK_BOOTTIME, (int64_t)(when & ~(1ull << 63)));
}

void chaos_vt_dispatch_deadline(const void *source, uint64_t when, uint64_t interval) {
    if (!atomic_load(&cf_vt.running)) return;
    pthread_mutex_lock(&cf_vt_lock);
    int64_t deadline = dispatch_instant(when);
    vt_known *slot = NULL;
    for (int i = 0; i < VT_KNOWN && source; i++) {
        if (cf_vt_known[i].deadline && cf_vt_known[i].source == source) slot = &cf_vt_known[i];
    }
    for (int i = 0; i < VT_KNOWN && !slot; i++) {
        if (!cf_vt_known[i].deadline) slot = &cf_vt_known[i];
    }
    if (deadline != INT64_MAX) atomic_fetch_add(&cf_vt_waits_total, 1);
    if (slot) {
        if (deadline == INT64_MAX) {
            slot->deadline = 0;
        } else {
            slot->source = source;
            slot->deadline = deadline > 0 ? deadline : 1;
            slot->interval = interval == 0 || interval >= (uint64_t)INT64_MAX ? 0 : (int64_t)interval;
        }
    }
    cf_vt_notify();
    pthread_mutex_unlock(&cf_vt_lock);
}

void chaos_vt_dispatch_cancel(const void *source) {
    if (!atomic_load(&cf_vt.running) || !source) return;
    pthread_mutex_lock(&cf_vt_lock);
    for (int i = 0; i < VT_KNOWN; i++)
        if (cf_vt_known[i].source == source) cf_vt_known[i].deadline = 0;
    pthread_mutex_unlock(&cf_vt_lock);
}
