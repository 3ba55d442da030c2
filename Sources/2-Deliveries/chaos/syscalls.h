// The system calls the seccomp delivery traps, what each is to the engine, and the filter
// that traps only those a plan's entries can act on.
#ifndef CHAOS_SYSCALLS_H
#define CHAOS_SYSCALLS_H

#include <linux/filter.h>
#include <stdint.h>

#include "CChaosFaults.h"

/// How a trapped call's arguments describe it.
enum chaos_shape {
    CHAOS_SHAPE_PATH,      ///< args: path (open, creat, unlink, rmdir, mkdir)
    CHAOS_SHAPE_PATH_AT,   ///< args: dirfd, path (openat, openat2, mkdirat)
    CHAOS_SHAPE_UNLINK_AT, ///< args: dirfd, path, flags (AT_REMOVEDIR: rmdir)
    CHAOS_SHAPE_RENAME,    ///< args: path, path
    CHAOS_SHAPE_RENAME_AT, ///< args: dirfd, path, dirfd, path
    CHAOS_SHAPE_FD,        ///< args: fd (sync, truncate)
    CHAOS_SHAPE_TRANSFER,  ///< args: fd, buffer, count[, offset] (read, write, pread64, pwrite64)
    CHAOS_SHAPE_VECTOR,    ///< args: fd, iovec, count[, offset…] (readv, writev, preadv…)
    CHAOS_SHAPE_COPY, ///< sendfile (out, in, offset*, count), copy_file_range (in, offset*, out, offset*, count, flags)
    CHAOS_SHAPE_CONNECT,     ///< args: fd, address, length
    CHAOS_SHAPE_CLOCK,       ///< args: clock, timespec
    CHAOS_SHAPE_TIMEOFDAY,   ///< args: timeval, timezone
    CHAOS_SHAPE_TIME,        ///< args: time_t pointer (may be 0)
    CHAOS_SHAPE_EXEC,        ///< execve, execveat: the supervisor hides the vDSO from what they start
    CHAOS_SHAPE_RENUMBER,    ///< close, dup2, clone…: a descriptor or thread id may name another now
    CHAOS_SHAPE_SLEEP,       ///< nanosleep: request, remaining
    CHAOS_SHAPE_CLOCK_SLEEP, ///< clock_nanosleep: clock, flags, request, remaining
    CHAOS_SHAPE_EPOLL,       ///< epoll_wait, epoll_pwait (timeout ms), epoll_pwait2 (timespec)
    CHAOS_SHAPE_POLL,        ///< poll (timeout ms), ppoll (timespec)
    CHAOS_SHAPE_STAT,        ///< stat, lstat: path, buffer
    CHAOS_SHAPE_FSTAT,       ///< fstat: fd, buffer
    CHAOS_SHAPE_STAT_AT,     ///< newfstatat: dirfd, path, buffer, flags
    CHAOS_SHAPE_STATX,       ///< statx: dirfd, path, flags, mask, buffer
    CHAOS_SHAPE_IO_URING,    ///< io_uring_setup: its reads and writes would pass every other trap
    /// futex (a wait until an instant of CLOCK_REALTIME), timerfd_settime, timer_settime:
    /// the supervisor can neither wait on the program's futex or timer nor change the
    /// instant it passes, so it says that such a wait keeps real time.
    CHAOS_SHAPE_KEPT_DEADLINE,
    CHAOS_SHAPE_LINK,     ///< link, linkat, symlink, symlinkat: the new name is the call's path
    CHAOS_SHAPE_SYNC_ALL, ///< sync, syncfs: everything written is durable (power loss)
    CHAOS_SHAPE_MAP,      ///< mmap with MAP_SHARED: a writable mapping of a file power loss cannot follow
    CHAOS_SHAPE_SPAWN,    ///< fork, vfork, clone, clone3: a process is created (processes.c), or a thread
    CHAOS_SHAPE_DIR_OPEN, ///< open, openat, openat2 of a directory (directories.c)
    CHAOS_SHAPE_DIR_READ, ///< getdents64: fd, buffer, count (directories.c)
};

/// One trapped system call.
struct chaos_syscall {
    int number;     ///< __NR_*
    int32_t point;  ///< chaos_point its entries are on
    int32_t fn;     ///< chaos_fn the engine decides it as
    uint32_t op;    ///< files: the CHAOS_OP_* bits its entries may select (copies: write and read)
    int shape;      ///< chaos_shape
    int positioned; ///< transfers: 1 when it has an offset (pread64, pwrite64); waits: 1 when its timeout is a timespec
    int writes;     ///< transfers: 1 when it moves bytes from the program
    uint32_t needs; ///< clock calls: the CHAOS_CLOCK_FLAG_* an entry must have for it to be trapped
    int flag_argument;  ///< with `flag_mask`: the argument whose bits decide
    uint32_t flag_mask; ///< non-zero: trapped only when the argument has one of these bits
    int power;          ///< 1: trapped only for a plan that loses power (its syncs and mappings)
};

/// Whether `call` is of the stat family (the clock's file times and the stat point).
static inline int chaos_syscall_stats(const struct chaos_syscall *call) {
    return call->shape == CHAOS_SHAPE_STAT || call->shape == CHAOS_SHAPE_FSTAT || call->shape == CHAOS_SHAPE_STAT_AT ||
           call->shape == CHAOS_SHAPE_STATX;
}

/// The trapped call of system call `number`, or NULL.
const struct chaos_syscall *chaos_syscall_find(int number);

/// The row of system call `number` for entries of `point` (a call may have rows for more
/// than one point: an openat is a files open, and a directory's when it asks for one), or
/// NULL.
const struct chaos_syscall *chaos_syscall_find_point(int number, int32_t point);

/// Builds into `out` (capacity `capacity` instructions) the filter that sends the calls
/// `plan`'s entries can act on to the supervisor and lets every other call through.
/// Returns the number of instructions, or -1 when it does not fit.
int chaos_syscall_filter(const chaos_plan *plan, struct sock_filter *out, int capacity);

/// Whether the filter built last (the one installed) traps every call `plan`'s entries
/// can act on: a plan applied later through `chaos ctl` must not need more (a clock entry
/// that fakes monotonic clocks needs a filter that traps them).
int chaos_syscall_covers(const chaos_plan *plan);

/// How many system calls the filter of `plan` traps (for messages and tests).
int chaos_syscall_trapped(const chaos_plan *plan);

#endif
