// CChaosFaults: what a clock outcome means for a call, a part of the engine's contract kept
// in its own header. Include CChaosFaults.h, which includes this.
//
// Both deliveries carry out the same calls: the preload's interceptors inside the program
// (Interceptors/interceptors/clock.inc, waits.inc, stat.inc) and the seccomp supervisor
// outside it (chaos/answer.c, waits.c, file_times.c). Each reads the call's arguments in
// its own way and writes the result back in its own way; what the call becomes — the
// reading a clock reports, how long a sleep lasts and on which clock, when a timed wait
// ends, how far file times move — is decided here, once, so the two cannot drift apart.
// Nothing here decides (counts) a call unless its name says so.
#ifndef CCHAOS_FAULTS_OUTCOMES_H
#define CCHAOS_FAULTS_OUTCOMES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct timespec;

/// Decides a clock reading: `real_ns`, the real reading of clock id `clock`, as one call of
/// `fn` (CHAOS_FN_*) at the clock point, counted as such. Fills `call` (the delivery may
/// need it to answer an `ask` node) and `out`. Returns 0 when the reading stays real without
/// a decision: clocks the clock point never fakes (CPU time), and monotonic clocks while no
/// clock entry has monotonic=yes; else what chaos_fault_decide returns. The reading itself
/// is chaos_outcome_reading_for_thread of the outcome.
int chaos_outcome_decide_clock(int32_t fn, int clock, int64_t real_ns, chaos_call *call, chaos_outcome *out);

/// The reading that clock id `clock`, reading `real_ns`, reports under `outcome` as the
/// calling thread sees it: chaos_fault_reading_ns, except that a thread exempt from virtual
/// time keeps real time.
int64_t chaos_outcome_reading_for_thread(const chaos_outcome *outcome, int clock, int64_t real_ns);

/// How a sleep is carried out (chaos_outcome_sleep).
typedef enum {
    CHAOS_SLEEP_AS_ASKED = 0, ///< the clock has no say: the call goes on unchanged
    CHAOS_SLEEP_VIRTUAL = 1,  ///< held until virtual time reaches `ns`, a virtual monotonic instant
    CHAOS_SLEEP_REAL = 2,     ///< a relative real sleep of `ns` on CLOCK_MONOTONIC instead
} chaos_sleep_how;

/// A sleep as the clock has it.
typedef struct chaos_sleep {
    chaos_sleep_how how;
    int64_t ns;    ///< see chaos_sleep_how
    double factor; ///< the speed factor of a REAL sleep (1 otherwise): a remainder the kernel
                   ///< reports in real time is `factor` times as long on the faked clock
} chaos_sleep;

/// What a sleep of `request_ns` becomes. `absolute`: `request_ns` is an instant of clock id
/// `clock` (clock_nanosleep with TIMER_ABSTIME); otherwise a length, which follows the
/// realtime clock's entry whatever clock it names (nanosleep, usleep, sleep and relative
/// clock_nanosleep). The rules:
/// - only while some clock entry follows sleeps (sleep=yes), and for monotonic clocks only
///   with monotonic=yes;
/// - under virtual time (for a thread it applies to), held until virtual time reaches the
///   deadline;
/// - a relative sleep under speed lasts `request / factor`; under an offset or a frozen
///   clock it is left alone;
/// - an absolute sleep under any other outcome waits until the faked clock reads the
///   target: the faked time left, scaled by speed.
/// Counts nothing. Returns `out->how`.
chaos_sleep_how chaos_outcome_sleep(int clock, int absolute, int64_t request_ns, chaos_sleep *out);

/// The virtual monotonic deadline of a timed wait (poll, epoll, select, a condition
/// variable's relative part) of `timeout_ns` when its timeout follows virtual time for the
/// calling thread, or 0 when it keeps real time. Descriptors or signals still end such a
/// wait at once. Counts nothing.
int64_t chaos_outcome_virtual_timeout(int64_t timeout_ns);

/// The virtual monotonic deadline of a wait until `deadline_ns`, an instant of clock id
/// `clock` (a condition variable's absolute deadline), when it follows virtual time for
/// the calling thread; 0 when it keeps real time.
int64_t chaos_outcome_virtual_instant(int clock, int64_t deadline_ns);

/// The real instant of clock id `clock` at which its faked reading reaches `deadline_ns`:
/// a program computes an absolute deadline from what its clock reads, which the kernel
/// would take for a real instant (an offset of +10 days made "now + 1 s" a wait of ten
/// days). 1 with it in `*real_instant_ns`; 0 when no entry fakes `clock` now (the deadline
/// is real already), or when virtual time answers the wait instead. Counts nothing.
int chaos_outcome_real_deadline(int clock, int64_t deadline_ns, int64_t *real_instant_ns);

/// How far file times (stat's atime, mtime, ctime and statx's btime) move now, in ns: a
/// file written "now" must not look ten years newer than the clock reads. 0 when no clock
/// entry shifts file times (stat=no) or the clock is real. Counts nothing.
int64_t chaos_outcome_file_time_shift(void);

/// Moves `time` by `shift_ns`, keeping tv_nsec in [0, 1e9).
void chaos_outcome_shift_timespec(struct timespec *time, int64_t shift_ns);

/// Moves a time kept as seconds and nanoseconds (statx's timestamps) by `shift_ns`.
void chaos_outcome_shift_parts(int64_t *seconds, uint32_t *nanoseconds, int64_t shift_ns);

/// Changes `length` bytes at `bytes` (one call's transfer: what a read returned, or a copy
/// of what a write stores) as a CORRUPT outcome says: its `corrupt_bytes` bytes from its
/// offset (clipped to the transfer) or at positions drawn from its seed, each flipped,
/// zeroed or replaced by a drawn byte (never the same byte again).
void chaos_outcome_corrupt(const chaos_outcome *outcome, unsigned char *bytes, size_t length);

struct stat;
struct statx;

/// Writes over a stat answer what an ATTRIBUTES outcome names (size, mtime, permission
/// bits, link count), after any clock shift of its times: the fields named win. Nothing
/// for another outcome. `struct stat64` has `struct stat`'s layout on 64-bit Linux.
void chaos_outcome_attributes(const chaos_outcome *outcome, struct stat *answer);

/// chaos_outcome_attributes for statx's answer; a field named is also marked in its mask.
void chaos_outcome_attributes_statx(const chaos_outcome *outcome, struct statx *answer);
/// Whether a directory read under `outcome` (OMIT) leaves out the entry called `name`: one
/// whose name matches the outcome's glob, or one name in `omit_every` chosen by the name and
/// the entry's seed (so a name left out of one listing is left out of all). Never "." or
/// "..". 0 for any other outcome.
int chaos_outcome_omits(const chaos_outcome *outcome, const char *name);

/// Removes from `length` bytes of getdents64 records (struct linux_dirent64) those that
/// chaos_outcome_omits, in place, and returns the bytes left. A kept record followed by left
/// out ones takes the last one's d_off, so that a seek to it goes past them.
size_t chaos_outcome_omit_records(const chaos_outcome *outcome, void *records, size_t length);

#ifdef __cplusplus
}
#endif

#endif
