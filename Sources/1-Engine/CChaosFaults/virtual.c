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
#include "virtual.h"

#include <dirent.h>
#include <errno.h>
#include <linux/futex.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// Limits and tallies: atomics, read without a lock.
static _Atomic int64_t watchdog_ns = 30 * NS;
static _Atomic int64_t settle_ns = 50000000; ///< per advance step, see settle()
static _Atomic uint64_t reports;
static _Atomic uint64_t steps_total;

// Under cf_vt_lock.
static int64_t last_advance_real; ///< real monotonic of the last start/advance (watchdog)
static pthread_t watchdog_thread;
static int watchdog_running;

// This thread waits for virtual time itself (per thread: nothing guards it).
_Thread_local int cf_vt_internal_wait;

/// pthread_cond_timedwait for virtual time's own waits: its GOT slot may be rebound to the
/// interceptor, which must not make these waits virtual (they wait for virtual time).
static int timed_wait(pthread_cond_t *condition, pthread_mutex_t *mutex, const struct timespec *until) {
    cf_vt_internal_wait = 1;
    int result = pthread_cond_timedwait(condition, mutex, until);
    cf_vt_internal_wait = 0;
    return result;
}

static struct timespec deadline_in(int64_t ns) {
    int64_t at = cf_vt_real_mono() + ns;
    struct timespec t = {(time_t)(at / NS), (long)(at % NS)};
    return t;
}

// MARK: - Sleepers

/// Lists the calling thread as waiting for `deadline`, under `lock`: an advance in
/// progress sees the new deadline, and the wait counts as begun.
static void sleeper_join(vt_sleeper *self, int64_t deadline) {
    *self = (vt_sleeper){deadline, chaos_vt_current_thread(), 0, cf_vt_sleepers};
    cf_vt_sleepers = self;
    atomic_fetch_add(&cf_vt_waits_total, 1);
    cf_vt_notify();
}

/// Takes `self` off the list, under `lock`, and wakes the advance waiting for it to leave.
static void sleeper_leave(vt_sleeper *self) {
    for (vt_sleeper **link = &cf_vt_sleepers; *link; link = &(*link)->next) {
        if (*link == self) {
            *link = self->next;
            break;
        }
    }
    cf_vt_notify();
}

int chaos_vt_sleep_until(int64_t deadline, int64_t *left) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    if (left) *left = 0;
    pthread_mutex_lock(&cf_vt_lock);
    if (!atomic_load(&cf_vt.running)) {
        pthread_mutex_unlock(&cf_vt_lock);
        return 1;
    }
    vt_sleeper self;
    sleeper_join(&self, deadline);
    int64_t now;
    int interrupted = 0;
    while (atomic_load(&cf_vt.running) && (now = cf_vt_now()) < deadline) {
        int64_t wait = atomic_load(&watchdog_ns);
        if (atomic_load(&cf_vt.flowing) && deadline - now < wait) wait = deadline - now;
        struct timespec relative = {(time_t)(wait / NS), (long)(wait % NS)};
        uint32_t seen = atomic_load(&cf_vt_generation); // read under the lock: no notification is missed
        pthread_mutex_unlock(&cf_vt_lock);
        // With a timeout the kernel ends the wait with EINTR whenever a handler ran.
        long waited = syscall(SYS_futex, &cf_vt_generation, FUTEX_WAIT_PRIVATE, seen, &relative, NULL, 0);
        interrupted = waited == -1 && errno == EINTR;
        pthread_mutex_lock(&cf_vt_lock);
        if (interrupted) break;
    }
    int stopped = !atomic_load(&cf_vt.running);
    int64_t rest = deadline - cf_vt_now();
    if ((stopped || interrupted) && left) *left = rest > 0 ? rest : 0;
    sleeper_leave(&self);
    pthread_mutex_unlock(&cf_vt_lock);
    return stopped ? 1 : interrupted ? 2 : 0;
}

int chaos_vt_wait_with(int64_t deadline, int (*attempt)(void *context, int slice_ms), void *context) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    if (!atomic_load(&cf_vt.running)) {
        pthread_mutex_unlock(&cf_vt_lock);
        return attempt(context, -2);
    }
    vt_sleeper self;
    sleeper_join(&self, deadline);
    int result = 0;
    for (;;) {
        int64_t now = cf_vt_now();
        if (!atomic_load(&cf_vt.running)) {
            // Off now: what remained, in real time, in one wait.
            int64_t left = deadline - now;
            pthread_mutex_unlock(&cf_vt_lock);
            result = attempt(context, left <= 0 ? 0 : (int)(left / 1000000 + 1));
            pthread_mutex_lock(&cf_vt_lock);
            break;
        }
        if (now >= deadline) break;
        int slice = 5;
        if (atomic_load(&cf_vt.flowing) && (deadline - now) / 1000000 < slice)
            slice = (int)((deadline - now) / 1000000) + 1;
        pthread_mutex_unlock(&cf_vt_lock);
        result = attempt(context, slice);
        pthread_mutex_lock(&cf_vt_lock);
        if (result != 0) break;
    }
    sleeper_leave(&self);
    pthread_mutex_unlock(&cf_vt_lock);
    return result;
}

// MARK: - Advancing

/// The earliest virtual deadline pending (INT64_MAX: none). Under `lock`. While time flows
/// the kernel fires timers whose deadlines real time reached, so those are moved past now.
static int64_t next_deadline_locked(void) {
    if (atomic_load(&cf_vt.flowing)) {
        int64_t now = cf_vt_now();
        for (int i = 0; i < VT_TIMERS; i++) {
            vt_timer *timer = &cf_vt_timers[i];
            if (timer->fd < 0 || timer->deadline <= 0 || timer->deadline > now) continue;
            if (timer->interval <= 0)
                timer->deadline = 0;
            else
                timer->deadline += ((now - timer->deadline) / timer->interval + 1) * timer->interval;
        }
    }
    int64_t next = INT64_MAX;
    for (vt_sleeper *s = cf_vt_sleepers; s; s = s->next)
        if (s->deadline < next) next = s->deadline;
    for (int i = 0; i < VT_TIMERS; i++) {
        if (cf_vt_timers[i].fd >= 0 && !cf_vt_timers[i].dispatch_owned && cf_vt_timers[i].deadline > 0 &&
            cf_vt_timers[i].deadline < next)
            next = cf_vt_timers[i].deadline;
    }
    for (int i = 0; i < VT_KNOWN; i++)
        if (cf_vt_known[i].deadline && cf_vt_known[i].deadline < next) next = cf_vt_known[i].deadline;
    return next;
}

int64_t chaos_vt_latest_deadline(void) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    int64_t latest = INT64_MIN;
    for (vt_sleeper *s = cf_vt_sleepers; s; s = s->next)
        if (s->deadline > latest) latest = s->deadline;
    for (int i = 0; i < VT_TIMERS; i++) {
        if (cf_vt_timers[i].fd >= 0 && !cf_vt_timers[i].dispatch_owned && cf_vt_timers[i].deadline > latest)
            latest = cf_vt_timers[i].deadline;
    }
    for (int i = 0; i < VT_KNOWN; i++)
        if (cf_vt_known[i].deadline > latest) latest = cf_vt_known[i].deadline;
    pthread_mutex_unlock(&cf_vt_lock);
    return atomic_load(&cf_vt.running) ? latest : INT64_MIN;
}

int64_t chaos_vt_next_deadline(void) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    int64_t next = atomic_load(&cf_vt.running) ? next_deadline_locked() : INT64_MAX;
    pthread_mutex_unlock(&cf_vt_lock);
    return next;
}

int32_t chaos_vt_pending_count(void) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    int32_t count = 0;
    for (vt_sleeper *s = cf_vt_sleepers; s; s = s->next) count++;
    for (int i = 0; i < VT_TIMERS; i++)
        if (cf_vt_timers[i].fd >= 0 && !cf_vt_timers[i].dispatch_owned && cf_vt_timers[i].deadline > 0) count++;
    for (int i = 0; i < VT_KNOWN; i++)
        if (cf_vt_known[i].deadline) count++;
    pthread_mutex_unlock(&cf_vt_lock);
    return count;
}

// Set before virtual time has work to settle on; read by each settle.
static int (*_Atomic idle_probe)(void);

void chaos_vt_set_idle_probe(int (*probe)(void)) { atomic_store(&idle_probe, probe); }

/// Whether this process's other threads, and whatever the idle probe watches, are idle.
static int everything_idle(pid_t self) {
    int (*probe)(void) = atomic_load(&idle_probe);
    return cf_vt_others_blocked(self) && (!probe || probe());
}

static void settle(int64_t now, const int *fired, int fired_count) {
    int64_t limit = cf_vt_real_mono() + atomic_load(&settle_ns);
    pid_t self = chaos_vt_current_thread();
    int quiet_samples = 0;
    for (;;) {
        int pending = 0;
        for (vt_sleeper *s = cf_vt_sleepers; s; s = s->next)
            if (s->deadline <= now) pending = 1;
        for (int i = 0; i < fired_count && !pending; i++) {
            vt_timer *timer = &cf_vt_timers[fired[i]];
            // Closed, re-armed, or a POSIX timer, whose signal nobody can see taken.
            if (timer->fd < 0 || timer->posix || timer->sets != timer->fired_at_sets) continue;
            int fd = timer->fd;
            pthread_mutex_unlock(&cf_vt_lock);
            int taken = !cf_vt_readable(fd) || cf_vt_delivered_oneshot(fd);
            pthread_mutex_lock(&cf_vt_lock);
            if (!taken) pending = 1;
        }
        if (!pending) {
            pthread_mutex_unlock(&cf_vt_lock);
            quiet_samples = everything_idle(self) ? quiet_samples + 1 : 0;
            pthread_mutex_lock(&cf_vt_lock);
            if (quiet_samples >= 2) return;
        }
        if (cf_vt_real_mono() > limit) return;
        struct timespec until = deadline_in(pending ? 200000 : 100000);
        timed_wait(&cf_vt_changed, &cf_vt_lock, &until);
    }
}

static void set_now_locked(int64_t target) {
    if (atomic_load(&cf_vt.flowing)) {
        int64_t now = cf_vt_now();
        if (target > now) atomic_fetch_add(&cf_vt.base, target - now);
    } else if (target > atomic_load(&cf_vt.base)) {
        atomic_store_explicit(&cf_vt.base, target, memory_order_release);
    }
}

// One advance at a time: held for a whole advance, taken before cf_vt_lock.
static pthread_mutex_t advancing = PTHREAD_MUTEX_INITIALIZER;

/// Takes what is due at the current virtual time: fires every timer whose deadline it
/// reached, retires the dispatch deadlines it passed, wakes the sleepers, and settles.
/// Under `lock`. Returns how many timers, deadlines and sleepers it took.
static int step_locked(void) {
    int64_t now = cf_vt_now();
    settime_fn settime = cf_vt_saved_settime ? cf_vt_saved_settime : cf_vt_raw_settime;
    int fired[VT_TIMERS], fired_count = 0, taken = 0;
    for (int i = 0; i < VT_TIMERS; i++) {
        vt_timer *timer = &cf_vt_timers[i];
        if (timer->fd < 0 || timer->deadline <= 0 || timer->deadline > now) continue;
        timer->deadline = timer->interval > 0 ? timer->deadline + timer->interval : 0;
        timer->fired_at_sets = timer->sets;
        struct itimerspec spec = {{0, 0}, {0, 1}};
        cf_vt_timer_set(timer, settime, &spec);
        fired[fired_count++] = i;
    }
    for (int i = 0; i < VT_KNOWN; i++) {
        vt_known *k = &cf_vt_known[i];
        if (!k->deadline || k->deadline > now) continue;
        taken++;
        if (k->interval <= 0)
            k->deadline = 0;
        else
            k->deadline += ((now - k->deadline) / k->interval + 1) * k->interval;
    }
    for (vt_sleeper *sleeper = cf_vt_sleepers; sleeper; sleeper = sleeper->next)
        if (sleeper->deadline <= now) taken++;
    cf_vt_notify();
    atomic_fetch_add(&steps_total, 1);
    settle(now, fired, fired_count);
    last_advance_real = cf_vt_real_mono();
    return fired_count + taken;
}

int64_t chaos_vt_advance_to(int64_t target, int64_t max_steps) {
    return chaos_vt_advance_to_unless(target, max_steps, NULL, NULL);
}

int64_t chaos_vt_advance_to_unless(int64_t target, int64_t max_steps, int (*should_stop)(void *context),
                                   void *context) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&advancing); // one advance at a time: steps are not interleaved
    pthread_mutex_lock(&cf_vt_lock);
    if (!atomic_load(&cf_vt.running)) {
        pthread_mutex_unlock(&cf_vt_lock);
        pthread_mutex_unlock(&advancing);
        return -1;
    }
    last_advance_real = cf_vt_real_mono();
    int64_t steps = 0;
    int cut_short = 0;
    for (;;) {
        int64_t next = next_deadline_locked();
        if (next > target || !atomic_load(&cf_vt.running)) break;
        if ((max_steps >= 0 && steps >= max_steps) || (should_stop && should_stop(context))) {
            cut_short = 1;
            break;
        }
        int64_t before = cf_vt_now();
        if (next > before) set_now_locked(next);
        // A step at a deadline already reached that takes nothing (a sleeper still on its
        // way out) makes no progress: leave it to the next advance.
        if (step_locked() == 0 && next <= before) break;
        steps++;
    }
    if (atomic_load(&cf_vt.running) && !cut_short) {
        set_now_locked(target);
        step_locked(); // what is due at the target itself, and libdispatch's own timers
    }
    cf_vt_notify();
    pthread_mutex_unlock(&cf_vt_lock);
    pthread_mutex_unlock(&advancing);
    return steps;
}

// MARK: - Watchdog

static void *watch(void *unused) {
    (void)unused;
    pthread_mutex_lock(&cf_vt_lock);
    while (watchdog_running) {
        int64_t period = atomic_load(&watchdog_ns);
        int64_t look = period / 4 > 0 ? period / 4 : 1000000;
        // Whether anyone can still advance is looked at often: held waits go on at once.
        if (cf_vt_has_advancer_probe() && look > 100000000) look = 100000000;
        struct timespec until = deadline_in(look);
        timed_wait(&cf_vt_changed, &cf_vt_lock, &until);
        if (!watchdog_running || !atomic_load(&cf_vt.running)) continue;
        if (cf_vt_has_advancer_probe() && !atomic_load(&cf_vt.flowing)) {
            // Asked without the lock sleepers and advances take: the probe reads /proc.
            pthread_mutex_unlock(&cf_vt_lock);
            const char *why = cf_vt_advancer_gone();
            pthread_mutex_lock(&cf_vt_lock);
            if (why && atomic_load(&cf_vt.running)) cf_vt_flow_unadvanceable_locked(why);
        }
        int64_t stalled = cf_vt_real_mono() - last_advance_real;
        int64_t next = next_deadline_locked();
        if (stalled < period || next == INT64_MAX || (atomic_load(&cf_vt.flowing))) continue;
        int64_t now = cf_vt_now();
        char text[1024];
        int length = snprintf(
            text, sizeof text,
            "chaos: virtual time has not been advanced for %llds and work waits on it:", (long long)(stalled / NS));
        int named = 0;
        for (vt_sleeper *s = cf_vt_sleepers; s && length < (int)sizeof text - 80; s = s->next) {
            if (s->reported) continue;
            s->reported = 1;
            named++;
            length += snprintf(text + length, sizeof text - (size_t)length, " thread %d sleeps until +%.3fs;",
                               (int)s->thread, (double)(s->deadline - now) / 1e9);
        }
        for (int i = 0; i < VT_TIMERS && length < (int)sizeof text - 80; i++) {
            if (cf_vt_timers[i].fd < 0 || cf_vt_timers[i].deadline <= 0) continue;
            named++;
            if (cf_vt_timers[i].posix)
                length +=
                    snprintf(text + length, sizeof text - (size_t)length, " POSIX timer (clock %d) due at +%.3fs;",
                             cf_vt_timers[i].clock, (double)(cf_vt_timers[i].deadline - now) / 1e9);
            else
                length +=
                    snprintf(text + length, sizeof text - (size_t)length, " timer fd %d (clock %d) due at +%.3fs;",
                             cf_vt_timers[i].fd, cf_vt_timers[i].clock, (double)(cf_vt_timers[i].deadline - now) / 1e9);
        }
        if (!named) continue;
        snprintf(text + (length < (int)sizeof text - 60 ? length : (int)sizeof text - 60), 60,
                 " advance it, or stop it\n");
        syscall(SYS_write, 2, text, strlen(text));
        atomic_fetch_add(&reports, 1);
        last_advance_real = cf_vt_real_mono(); // one report per period of silence
    }
    pthread_mutex_unlock(&cf_vt_lock);
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
    if (syscall(SYS_timerfd_gettime, fd, &left) != 0 || cf_vt_ns_of(&left.it_value) == 0) return 0;
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    if (cf_vt_read_proc(path, info, sizeof info) <= 0) return 0;
    const char *clock = strstr(info, "clockid:");
    vt_timer *timer = cf_vt_timer_of(fd, 1);
    if (!timer) return 1;
    timer->clock = clock ? atoi(clock + 8) : CLOCK_MONOTONIC;
    timer->deadline = now + cf_vt_ns_of(&left.it_value);
    timer->interval = cf_vt_ns_of(&left.it_interval);
    cf_vt_arm_real(timer, cf_vt_raw_settime, now);
    return 0;
}

static void adopt_timers_locked(int64_t now) { cf_vt_each_descriptor("anon_inode:[timerfd]", adopt_timer, &now); }

static int start_locked(int64_t wall_ns, int flow) {
    if (atomic_load(&cf_vt.running)) return -1;
    int64_t mono = cf_vt_real_mono();
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
    for (int i = 0; i < VT_TIMERS; i++) cf_vt_timers[i].fd = -1;
    for (int i = 0; i < VT_KNOWN; i++) cf_vt_known[i].deadline = 0;
    adopt_timers_locked(base);
    atomic_store_explicit(&cf_vt.running, 1, memory_order_release);
    watchdog_running = 1;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    // The program's signals are its own: a process-directed signal (kill, a POSIX timer)
    // must never run its handler on this thread, past the program's own masks. The thread
    // starts with every signal blocked, inherited from the mask set around its creation.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    if (pthread_create(&watchdog_thread, &attributes, watch, NULL) != 0) watchdog_running = 0;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    return 0;
}

/// Stops virtual time: kernel timers armed in it are armed again in real time for what
/// remained, and sleepers go on sleeping for what remained, in real time.
static void stop_locked(void) {
    if (!atomic_load(&cf_vt.running)) return;
    int64_t now = cf_vt_now();
    atomic_store_explicit(&cf_vt.running, 0, memory_order_release);
    settime_fn settime = cf_vt_saved_settime ? cf_vt_saved_settime : cf_vt_raw_settime;
    for (int i = 0; i < VT_TIMERS; i++) {
        vt_timer *timer = &cf_vt_timers[i];
        if (timer->fd < 0) continue;
        if (timer->deadline > 0) {
            struct itimerspec spec = {cf_vt_ts_of(timer->interval),
                                      cf_vt_ts_of(timer->deadline - now > 0 ? timer->deadline - now : 1)};
            cf_vt_timer_set(timer, settime, &spec);
        }
        timer->fd = -1;
    }
    watchdog_running = 0;
    cf_vt_notify();
}

/// The plan's side, and the only way virtual time starts and stops: a plan with a `virtual`
/// node starts it (if it is not running), and a plan without one stops it.
void cf_vt_plan_installed(int has_virtual, int64_t wall_ns, int flow) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    pthread_mutex_lock(&cf_vt_lock);
    int joined = 0;
    if (has_virtual && !atomic_load(&cf_vt.running)) {
        start_locked(wall_ns, flow);
    } else if (!has_virtual && atomic_load(&cf_vt.running)) {
        joined = watchdog_running;
        stop_locked();
    }
    pthread_mutex_unlock(&cf_vt_lock);
    if (joined) pthread_join(watchdog_thread, NULL);
}

uint64_t chaos_vt_steps(void) { return atomic_load(&steps_total); }

void chaos_vt_sleep_real(int64_t ns) {
    if (ns <= 0) return;
    struct timespec t = {(time_t)(ns / NS), (long)(ns % NS)};
    while (syscall(SYS_nanosleep, &t, &t) != 0 && errno == EINTR) {}
}

uint64_t chaos_vt_waits(void) { return atomic_load(&cf_vt_waits_total); }
