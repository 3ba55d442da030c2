// CChaosFaults: virtual time (virtual.c and its parts), a part of the engine's contract
// kept in its own header. Include CChaosFaults.h, which includes this.
//
// One process-wide virtual clock, on while the active plan has a `virtual` node. Its
// monotonic instant starts at the real CLOCK_MONOTONIC and moves only when advanced (or,
// with flow=yes, also at real pace); realtime clocks read it plus the start's wall offset,
// boottime plus the real boottime offset. Sleepers (chaos_vt_sleep_until) and timerfds
// (chaos_vt_timerfd_settime) wait for it. Nothing here is async-signal-safe.
#ifndef CCHAOS_FAULTS_VIRTUAL_TIME_H
#define CCHAOS_FAULTS_VIRTUAL_TIME_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Whether virtual time is on.
int chaos_vt_running(void);

/// Whether virtual time is on for the calling thread: on, and the thread is not exempt.
/// The interceptors ask this for what belongs to the caller (its clock readings, sleeps,
/// timed waits, the timerfds it arms).
int chaos_vt_applies(void);

/// Whether the calling thread is exempt from virtual time.
int chaos_vt_thread_exempt(void);

/// Keeps thread `tid` (0: the caller) on real time (`exempt` 1) or puts it back under
/// virtual time (0), whether or not virtual time runs now: its clocks read real time and
/// its own sleeps, timed waits and timerfds wait in real time; an advance does not wait
/// for it to go idle. libdispatch's timers are shared by the whole process and follow
/// virtual time whoever sets them. Returns 0; ESRCH when no thread of this process has
/// that id; ENOSPC when 64 threads are exempt already. An exemption lasts until undone or
/// the thread exits (its id is then dropped when next seen missing).
int chaos_vt_set_thread_exempt(int32_t tid, int exempt);

/// Enters (`enter` 1) or leaves (0) a scope in which the calling thread is exempt, as
/// chaos_vt_set_thread_exempt would make it; scopes nest and need no table slot.
void chaos_vt_real_time_scope(int enter);

/// The exempt thread ids (at most `capacity` into `ids`); returns how many there are.
int32_t chaos_vt_exempt_threads(int32_t *ids, int32_t capacity);

/// The calling thread's kernel id (gettid).
int32_t chaos_vt_current_thread(void);

/// The virtual monotonic instant (ns).
int64_t chaos_vt_monotonic_ns(void);

/// The virtual reading of clock id `clock` (realtime ids: ns since 1970; monotonic and
/// boottime ids: ns since their origin).
int64_t chaos_vt_reading_ns(int clock);

/// The virtual monotonic instant at which clock id `clock` reads `instant`.
int64_t chaos_vt_to_monotonic(int clock, int64_t instant);

/// Blocks the calling thread until virtual time reaches the virtual monotonic `deadline`.
/// Returns 0 when it did; 1 when virtual time is (or went) off, with `left` (if given)
/// the virtual time that remained, for the caller to sleep in real time; or 2 when a
/// signal handler ran on the thread meanwhile, with `left` what remained (a sleep then
/// fails with EINTR, as the real one would).
int chaos_vt_sleep_until(int64_t deadline, int64_t *left);

/// A wait that also watches descriptors (poll, select, epoll_wait) with a timeout ending
/// at the virtual monotonic `deadline`: calls `attempt(context, slice_ms)`, one real wait of
/// at most `slice_ms` on the caller's descriptors, until it reports something (non-zero,
/// which is returned) or virtual time reaches the deadline (0 is returned). Descriptors
/// becoming ready end the wait at once, in real time. `slice_ms` -2: virtual time is off,
/// wait as the caller asked.
int chaos_vt_wait_with(int64_t deadline, int (*attempt)(void *context, int slice_ms), void *context);

/// The clock of timerfd `fd`, from /proc/self/fdinfo (-1 when it cannot be read).
int chaos_timerfd_clock(int fd);

/// Records a new timerfd's clock (timerfds made before virtual time are read from
/// /proc/self/fdinfo when first armed).
int chaos_vt_timerfd_created(int fd, int clock);

/// timerfd_settime under virtual time: records the deadline in virtual time and arms the
/// kernel timer only when it is due (or, while time flows, for the real time left).
/// Off: calls `real_settime` (NULL: the system call).
struct itimerspec;
/// `dispatch_owned`: the caller is libdispatch, whose one timerfd per clock is armed for
/// the earliest of all its timers (its own monitor's too): its deadlines are fired when a
/// step passes them but never chosen as steps (chaos_vt_dispatch_deadline gives those).
int chaos_vt_timerfd_settime(int fd, int flags, const struct itimerspec *value, struct itimerspec *old,
                             int (*real_settime)(int, int, const struct itimerspec *, struct itimerspec *),
                             int dispatch_owned);

/// timer_settime under virtual time for POSIX timer `timer` on clock `clock`: the deadline
/// is kept in virtual time and the kernel timer armed only when it is due (or, while time
/// flows, for the real time left), so an advance fires it at its virtual instant. Returns
/// the call's result, or -2 when virtual time is not running (the caller calls `real`).
int chaos_vt_posix_settime(timer_t timer, int clock, int flags, const struct itimerspec *value, struct itimerspec *old,
                           int (*real)(timer_t, int, const struct itimerspec *, struct itimerspec *));

/// timer_gettime under virtual time: 0 with the virtual time left in `value`, or 1 when
/// virtual time does not hold `timer`.
int chaos_vt_posix_gettime(timer_t timer, struct itimerspec *value);

/// A POSIX timer was deleted: virtual time forgets it.
void chaos_vt_posix_deleted(timer_t timer);

/// A deadline libdispatch's API was given (`when` is a dispatch_time_t): dispatch_after and
/// dispatch_after_f with `source` NULL, a timer source's start and interval (ns; 0 or
/// DISPATCH_TIME_FOREVER: one shot) with the source, which replaces its earlier one. Advance
/// steps are taken at these. Off: nothing.
void chaos_vt_dispatch_deadline(const void *source, uint64_t when, uint64_t interval);

/// A timer source was cancelled: its deadlines are dropped.
void chaos_vt_dispatch_cancel(const void *source);

/// timerfd_gettime under virtual time: fills `value` and returns 0, or returns 1 for "ask
/// the kernel" (off, or a timer virtual time has not armed).
int chaos_vt_timerfd_gettime(int fd, struct itimerspec *value);

/// The earliest pending virtual deadline of a sleeper or timer (INT64_MAX: none, or off).
int64_t chaos_vt_next_deadline(void);

/// The latest pending virtual deadline (INT64_MIN: none, or off): a test waits for the
/// one its work arms, which no unrelated wait of the runtime reaches.
int64_t chaos_vt_latest_deadline(void);

/// How many sleepers and armed timers wait for virtual time.
int32_t chaos_vt_pending_count(void);

/// Advances virtual time to the monotonic `target`, stepping through every pending deadline
/// at or before it in order: each step sets the time to the deadline, wakes its sleepers,
/// fires its timers, and waits (bounded by the settle limit) until they were taken and the
/// process's other threads are idle. At most `max_steps` steps (negative: no limit); the
/// time is left at the last step when the limit cut it short. Returns the steps taken, or
/// -1 when virtual time is off. One advance runs at a time.
int64_t chaos_vt_advance_to(int64_t target, int64_t max_steps);

/// chaos_vt_advance_to, asking `should_stop(context)` before each step: once it returns
/// non-zero the advance ends there, as when `max_steps` cuts it short (the control
/// endpoint's cancel).
int64_t chaos_vt_advance_to_unless(int64_t target, int64_t max_steps, int (*should_stop)(void *context), void *context);

/// The watchdog period (real ns without an advance while something waits before it
/// writes what waits to stderr; default 30 s) and the settle limit per advance step
/// (default 50 ms). Non-positive / negative values keep the current one.
void chaos_vt_set_limits(int64_t watchdog_ns, int64_t settle_ns);

/// Names a test of whether work outside this process that follows its virtual time is idle
/// (1) or still running (0): an advance step settles only once it is idle too. The seccomp
/// supervisor holds its program's sleeps and timed waits, and names a test of the
/// program's threads. NULL: none.
void chaos_vt_set_idle_probe(int (*probe)(void));

/// Names a test of whether anyone can still advance virtual time: it returns NULL while
/// someone can, or why nobody can (e.g. "no control endpoint"). Once nobody can, virtual
/// time flows on from where it stands, at real pace, so that the waits it held go on in
/// real time rather than forever; standard error says so, once. The preload library names
/// one (its control endpoint, and the `chaos run` that started the program); NULL: none
/// (a Swift program advances its own).
void chaos_vt_set_advancer_probe(const char *(*probe)(void));

/// Reports the watchdog has written since the process started.
uint64_t chaos_vt_watchdog_reports(void);

/// Sleeps `ns` of real time (the system call itself: neither virtual time nor any hook
/// changes it).
void chaos_vt_sleep_real(int64_t ns);

/// Advance steps taken since the process started.
uint64_t chaos_vt_steps(void);

/// Waits begun in virtual time since the process started: sleeps, deadlines given to
/// libdispatch, and timerfds armed by anyone else (a test waits for this to grow before
/// it advances, so that the work it started has armed its wait).
uint64_t chaos_vt_waits(void);

#ifdef __cplusplus
}
#endif

#endif
