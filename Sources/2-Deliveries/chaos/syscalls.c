// The table of trapped system calls and the filter built from it. A plan pays only for the
// calls its entries can act on: a files entry on writes traps the write family and no
// reads, a clock entry traps realtime readings only (unless it fakes monotonic clocks too,
// Go reads its monotonic clock all the time), sleeps only when it scales or holds them,
// timed waits only under virtual time, and the stat family when it shifts file times.
#define _GNU_SOURCE
#include "syscalls.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>

#if defined(__x86_64__)
#define CHAOS_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CHAOS_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/// The operations that name a file by descriptor: a plan with one of them remembers
/// descriptors (descriptors.c).
#define DESCRIPTOR_OPS (CHAOS_OP_READ | CHAOS_OP_WRITE | CHAOS_OP_SYNC | CHAOS_OP_TRUNCATE)
#define RENUMBER(nr) \
    { .number = nr, .point = CHAOS_POINT_FILES, .fn = -1, .op = DESCRIPTOR_OPS, .shape = CHAOS_SHAPE_RENUMBER }
#define FILES(nr, fn_, op_, shape_) \
    { .number = nr, .point = CHAOS_POINT_FILES, .fn = fn_, .op = op_, .shape = shape_ }
#define MOVE(nr, fn_, op_, shape_, positioned_, writes_) \
    { \
        .number = nr, .point = CHAOS_POINT_FILES, .fn = fn_, .op = op_, .shape = shape_, .positioned = positioned_, \
        .writes = writes_ \
    }

static const struct chaos_syscall table[] = {
#ifdef __NR_open
    FILES(__NR_open, CHAOS_FN_OPEN, CHAOS_OP_OPEN, CHAOS_SHAPE_PATH),
#endif
#ifdef __NR_creat
    FILES(__NR_creat, CHAOS_FN_CREAT, CHAOS_OP_OPEN, CHAOS_SHAPE_PATH),
#endif
    FILES(__NR_openat, CHAOS_FN_OPENAT, CHAOS_OP_OPEN, CHAOS_SHAPE_PATH_AT),
#ifdef __NR_openat2
    FILES(__NR_openat2, CHAOS_FN_OPENAT, CHAOS_OP_OPEN, CHAOS_SHAPE_PATH_AT),
#endif
    MOVE(__NR_read, CHAOS_FN_READ, CHAOS_OP_READ, CHAOS_SHAPE_TRANSFER, 0, 0),
    MOVE(__NR_pread64, CHAOS_FN_PREAD, CHAOS_OP_READ, CHAOS_SHAPE_TRANSFER, 1, 0),
    MOVE(__NR_readv, CHAOS_FN_READV, CHAOS_OP_READ, CHAOS_SHAPE_VECTOR, 0, 0),
    MOVE(__NR_preadv, CHAOS_FN_PREADV, CHAOS_OP_READ, CHAOS_SHAPE_VECTOR, 1, 0),
    MOVE(__NR_preadv2, CHAOS_FN_PREADV, CHAOS_OP_READ, CHAOS_SHAPE_VECTOR, 1, 0),
    MOVE(__NR_write, CHAOS_FN_WRITE, CHAOS_OP_WRITE, CHAOS_SHAPE_TRANSFER, 0, 1),
    MOVE(__NR_pwrite64, CHAOS_FN_PWRITE, CHAOS_OP_WRITE, CHAOS_SHAPE_TRANSFER, 1, 1),
    MOVE(__NR_writev, CHAOS_FN_WRITEV, CHAOS_OP_WRITE, CHAOS_SHAPE_VECTOR, 0, 1),
    MOVE(__NR_pwritev, CHAOS_FN_PWRITEV, CHAOS_OP_WRITE, CHAOS_SHAPE_VECTOR, 1, 1),
    MOVE(__NR_pwritev2, CHAOS_FN_PWRITEV, CHAOS_OP_WRITE, CHAOS_SHAPE_VECTOR, 1, 1),
    // A copy is a write on its target and a read on its source.
    FILES(__NR_sendfile, CHAOS_FN_SENDFILE, CHAOS_OP_WRITE | CHAOS_OP_READ, CHAOS_SHAPE_COPY),
    FILES(__NR_copy_file_range, CHAOS_FN_COPY_FILE_RANGE, CHAOS_OP_WRITE | CHAOS_OP_READ, CHAOS_SHAPE_COPY),
    FILES(__NR_fsync, CHAOS_FN_FSYNC, CHAOS_OP_SYNC, CHAOS_SHAPE_FD),
    FILES(__NR_fdatasync, CHAOS_FN_FDATASYNC, CHAOS_OP_SYNC, CHAOS_SHAPE_FD),
    FILES(__NR_sync_file_range, CHAOS_FN_SYNC_FILE_RANGE, CHAOS_OP_SYNC, CHAOS_SHAPE_FD),
    FILES(__NR_ftruncate, CHAOS_FN_FTRUNCATE, CHAOS_OP_TRUNCATE, CHAOS_SHAPE_FD),
    FILES(__NR_fallocate, CHAOS_FN_FALLOCATE, CHAOS_OP_TRUNCATE, CHAOS_SHAPE_FD),
#ifdef __NR_rename
    FILES(__NR_rename, CHAOS_FN_RENAME, CHAOS_OP_RENAME, CHAOS_SHAPE_RENAME),
#endif
#ifdef __NR_renameat
    FILES(__NR_renameat, CHAOS_FN_RENAME, CHAOS_OP_RENAME, CHAOS_SHAPE_RENAME_AT),
#endif
    FILES(__NR_renameat2, CHAOS_FN_RENAME, CHAOS_OP_RENAME, CHAOS_SHAPE_RENAME_AT),
#ifdef __NR_unlink
    FILES(__NR_unlink, CHAOS_FN_UNLINK, CHAOS_OP_UNLINK, CHAOS_SHAPE_PATH),
#endif
#ifdef __NR_rmdir
    FILES(__NR_rmdir, CHAOS_FN_RMDIR, CHAOS_OP_UNLINK, CHAOS_SHAPE_PATH),
#endif
    FILES(__NR_unlinkat, CHAOS_FN_UNLINK, CHAOS_OP_UNLINK, CHAOS_SHAPE_UNLINK_AT),
#ifdef __NR_mkdir
    FILES(__NR_mkdir, CHAOS_FN_MKDIR, CHAOS_OP_MKDIR, CHAOS_SHAPE_PATH),
#endif
    FILES(__NR_mkdirat, CHAOS_FN_MKDIR, CHAOS_OP_MKDIR, CHAOS_SHAPE_PATH_AT),
#ifdef __NR_link
    FILES(__NR_link, CHAOS_FN_LINK, CHAOS_OP_CREATE, CHAOS_SHAPE_LINK),
    FILES(__NR_symlink, CHAOS_FN_SYMLINK, CHAOS_OP_CREATE, CHAOS_SHAPE_LINK),
#endif
    FILES(__NR_linkat, CHAOS_FN_LINK, CHAOS_OP_CREATE, CHAOS_SHAPE_LINK),
    FILES(__NR_symlinkat, CHAOS_FN_SYMLINK, CHAOS_OP_CREATE, CHAOS_SHAPE_LINK),
    FILES(__NR_truncate, CHAOS_FN_TRUNCATE, CHAOS_OP_TRUNCATE, CHAOS_SHAPE_PATH),
    // A splice into a file is a copy's write (its arguments are laid out as copy_file_range's).
    FILES(__NR_splice, CHAOS_FN_COPY_FILE_RANGE, CHAOS_OP_WRITE, CHAOS_SHAPE_COPY),
    // What power loss must also see: syncs of everything, and files mapped shared.
    {.number = __NR_sync,
     .point = CHAOS_POINT_FILES,
     .fn = -1,
     .op = CHAOS_OP_SYNC,
     .shape = CHAOS_SHAPE_SYNC_ALL,
     .power = 1},
    {.number = __NR_syncfs,
     .point = CHAOS_POINT_FILES,
     .fn = -1,
     .op = CHAOS_OP_SYNC,
     .shape = CHAOS_SHAPE_SYNC_ALL,
     .power = 1},
    {.number = __NR_mmap,
     .point = CHAOS_POINT_FILES,
     .fn = -1,
     .op = CHAOS_OP_WRITE,
     .shape = CHAOS_SHAPE_MAP,
     .power = 1,
     .flag_argument = 3,
     .flag_mask = 0x01 /* MAP_SHARED, and MAP_SHARED_VALIDATE */},
    {.number = __NR_connect, .point = CHAOS_POINT_CONNECT, .fn = CHAOS_FN_CONNECT, .shape = CHAOS_SHAPE_CONNECT},
    {.number = __NR_clock_gettime,
     .point = CHAOS_POINT_CLOCK,
     .fn = CHAOS_FN_CLOCK_GETTIME,
     .shape = CHAOS_SHAPE_CLOCK},
    {.number = __NR_gettimeofday,
     .point = CHAOS_POINT_CLOCK,
     .fn = CHAOS_FN_GETTIMEOFDAY,
     .shape = CHAOS_SHAPE_TIMEOFDAY},
#ifdef __NR_time
    {.number = __NR_time, .point = CHAOS_POINT_CLOCK, .fn = CHAOS_FN_TIME, .shape = CHAOS_SHAPE_TIME},
#endif
    // Sleeps follow a clock entry that scales them (speed) or holds them (virtual time);
    // timed waits follow virtual time only, as under the preload library.
    {.number = __NR_nanosleep,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_SLEEP,
     .needs = CHAOS_CLOCK_FLAG_SLEEP},
    {.number = __NR_clock_nanosleep,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_CLOCK_SLEEP,
     .needs = CHAOS_CLOCK_FLAG_SLEEP},
    // Waits and timers the supervisor cannot translate (see CHAOS_SHAPE_KEPT_DEADLINE):
    // trapped to be said, only when they name an absolute instant of CLOCK_REALTIME, or
    // under virtual time, which cannot hold them, every timed futex wait (its timeout
    // pointer non-zero) and every kernel timer. A row trapped always, or more often, comes
    // before a narrower row of the same call: only the first of them is looked at.
    {.number = __NR_futex,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_KEPT_DEADLINE,
     .needs = CHAOS_CLOCK_FLAG_VIRTUAL,
     .flag_argument = 3,
     .flag_mask = 0xffffffffu},
    {.number = __NR_futex,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_KEPT_DEADLINE,
     .flag_argument = 1,
     .flag_mask = FUTEX_CLOCK_REALTIME},
    {.number = __NR_timerfd_settime,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_KEPT_DEADLINE,
     .needs = CHAOS_CLOCK_FLAG_VIRTUAL},
    {.number = __NR_timer_settime,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_KEPT_DEADLINE,
     .needs = CHAOS_CLOCK_FLAG_VIRTUAL},
    {.number = __NR_timerfd_settime,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_KEPT_DEADLINE,
     .flag_argument = 1,
     .flag_mask = TFD_TIMER_ABSTIME},
    {.number = __NR_timer_settime,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_KEPT_DEADLINE,
     .flag_argument = 1,
     .flag_mask = TIMER_ABSTIME},
#ifdef __NR_epoll_wait
    {.number = __NR_epoll_wait,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_EPOLL,
     .needs = CHAOS_CLOCK_FLAG_VIRTUAL},
#endif
    {.number = __NR_epoll_pwait,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_EPOLL,
     .needs = CHAOS_CLOCK_FLAG_VIRTUAL},
    {.number = __NR_epoll_pwait2,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .op = 1,
     .shape = CHAOS_SHAPE_EPOLL,
     .needs = CHAOS_CLOCK_FLAG_VIRTUAL},
#ifdef __NR_poll
    {.number = __NR_poll,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_POLL,
     .needs = CHAOS_CLOCK_FLAG_VIRTUAL},
#endif
    {.number = __NR_ppoll,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .op = 1,
     .shape = CHAOS_SHAPE_POLL,
     .needs = CHAOS_CLOCK_FLAG_VIRTUAL},
// File times move with the clock (stat=yes, the default), and the stat point answers them:
// the supervisor carries these out.
#ifdef __NR_stat
    {.number = __NR_stat,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_STAT,
     .needs = CHAOS_CLOCK_FLAG_STAT},
    {.number = __NR_lstat,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_STAT,
     .needs = CHAOS_CLOCK_FLAG_STAT},
#endif
    {.number = __NR_fstat,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_FSTAT,
     .needs = CHAOS_CLOCK_FLAG_STAT},
#ifdef __NR_newfstatat
    {.number = __NR_newfstatat,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_STAT_AT,
     .needs = CHAOS_CLOCK_FLAG_STAT},
#endif
    {.number = __NR_statx,
     .point = CHAOS_POINT_CLOCK,
     .fn = -1,
     .shape = CHAOS_SHAPE_STATX,
     .needs = CHAOS_CLOCK_FLAG_STAT},
    // Every exec is trapped: a program a clock plan reaches must read its clock with system
    // calls (the supervisor hides the vDSO from it), exec closes descriptors the supervisor
    // knew, and a set-user-ID program runs without its privileges under the filter.
    {.number = __NR_execve, .point = CHAOS_POINT_CLOCK, .fn = -1, .op = DESCRIPTOR_OPS, .shape = CHAOS_SHAPE_EXEC},
    {.number = __NR_execveat, .point = CHAOS_POINT_CLOCK, .fn = -1, .op = DESCRIPTOR_OPS, .shape = CHAOS_SHAPE_EXEC},
// io_uring moves bytes past every trap above: with files or connect entries, setting
// it up fails (ENOSYS, so that programs fall back to calls the filter traps) or is said.
#ifdef __NR_io_uring_setup
    {.number = __NR_io_uring_setup,
     .point = CHAOS_POINT_FILES,
     .fn = -1,
     .op = CHAOS_OP_ALL_FILES,
     .shape = CHAOS_SHAPE_IO_URING},
#endif
    // Creating a process (system.process): before the rows below that trap the same calls
    // for descriptors, so that these are the ones found; answering them forgets descriptors
    // too. clone and clone3 create threads as well, which pass.
    {.number = __NR_clone, .point = CHAOS_POINT_PROCESS, .fn = CHAOS_FN_CLONE, .shape = CHAOS_SHAPE_SPAWN},
    {.number = __NR_clone3, .point = CHAOS_POINT_PROCESS, .fn = CHAOS_FN_CLONE, .shape = CHAOS_SHAPE_SPAWN},
#ifdef __NR_fork
    {.number = __NR_fork, .point = CHAOS_POINT_PROCESS, .fn = CHAOS_FN_FORK, .shape = CHAOS_SHAPE_SPAWN},
    {.number = __NR_vfork, .point = CHAOS_POINT_PROCESS, .fn = CHAOS_FN_VFORK, .shape = CHAOS_SHAPE_SPAWN},
#endif
    // What can make a descriptor number or a thread id name something else: the
    // supervisor forgets what it knew of them (descriptors.c).
    RENUMBER(__NR_close),
    RENUMBER(__NR_close_range),
    RENUMBER(__NR_dup3),
    RENUMBER(__NR_clone),
    RENUMBER(__NR_clone3),
#ifdef __NR_dup2
    RENUMBER(__NR_dup2),
#endif
#ifdef __NR_fork
    RENUMBER(__NR_fork),
    RENUMBER(__NR_vfork),
#endif
// Directories (system.dir): after the files rows of the same calls, which trap them
// always when they are needed; these only the opens that ask for a directory.
// openat2 keeps its flags in memory: trapped always, read when described.
#ifdef __NR_open
    {.number = __NR_open,
     .point = CHAOS_POINT_DIR,
     .fn = CHAOS_FN_OPENDIR,
     .shape = CHAOS_SHAPE_DIR_OPEN,
     .flag_argument = 1,
     .flag_mask = O_DIRECTORY},
#endif
    {.number = __NR_openat,
     .point = CHAOS_POINT_DIR,
     .fn = CHAOS_FN_OPENDIR,
     .shape = CHAOS_SHAPE_DIR_OPEN,
     .flag_argument = 2,
     .flag_mask = O_DIRECTORY},
#ifdef __NR_openat2
    {.number = __NR_openat2, .point = CHAOS_POINT_DIR, .fn = CHAOS_FN_OPENDIR, .shape = CHAOS_SHAPE_DIR_OPEN},
#endif
    {.number = __NR_getdents64, .point = CHAOS_POINT_DIR, .fn = CHAOS_FN_READDIR, .shape = CHAOS_SHAPE_DIR_READ},
};

enum { TABLE_COUNT = sizeof table / sizeof table[0] };

const struct chaos_syscall *chaos_syscall_find(int number) {
    for (int i = 0; i < TABLE_COUNT; i++)
        if (table[i].number == number) return &table[i];
    return NULL;
}

const struct chaos_syscall *chaos_syscall_find_point(int number, int32_t point) {
    for (int i = 0; i < TABLE_COUNT; i++)
        if (table[i].number == number && table[i].point == point) return &table[i];
    return NULL;
}

/// A set of rows of the table: a bit per row.
typedef struct rows {
    uint64_t bits[2];
} rows;
_Static_assert(TABLE_COUNT <= 128, "a bit per row");

static inline int has_row(rows set, int i) { return set.bits[i / 64] >> (i % 64) & 1; }

/// Which rows of the table `plan` needs.
static rows needed_rows(const chaos_plan *plan) {
    uint32_t ops = 0, points = 0, clock_flags = 0;
    int power = 0;
    for (int32_t e = 0; e < chaos_plan_entry_count(plan); e++) {
        int32_t point = chaos_plan_entry_point(plan, e);
        points |= 1u << point;
        if (point == CHAOS_POINT_FILES) ops |= chaos_plan_entry_ops(plan, e);
        clock_flags |= chaos_plan_entry_clock_flags(plan, e);
        power |= chaos_plan_entry_has_kind(plan, e, CHAOS_NODE_POWER_LOSS);
    }
    // A creating open is an open: "create" entries need the open rows.
    if (ops & CHAOS_OP_CREATE) ops |= CHAOS_OP_OPEN;
    // Power loss keeps what undoes every change, and must see what makes changes durable.
    if (power)
        ops |= CHAOS_OP_WRITE | CHAOS_OP_TRUNCATE | CHAOS_OP_RENAME | CHAOS_OP_UNLINK | CHAOS_OP_MKDIR |
               CHAOS_OP_CREATE | CHAOS_OP_OPEN | CHAOS_OP_SYNC;
    rows set = {{0, 0}};
    for (int i = 0; i < TABLE_COUNT; i++) {
        const struct chaos_syscall *call = &table[i];
        int for_point = (points >> call->point & 1) && (call->point != CHAOS_POINT_FILES || (ops & call->op)) &&
                        (clock_flags & call->needs) == call->needs && (!call->power || power);
        // fstat names a file by its descriptor, which the supervisor remembers until the
        // number changes hands.
        int for_stat =
            (chaos_syscall_stats(call) || call->shape == CHAOS_SHAPE_RENUMBER) && (points >> CHAOS_POINT_STAT & 1);
        // Every exec: the supervisor says when a set-user-ID program loses its privileges.
        int for_descriptors = call->shape == CHAOS_SHAPE_EXEC;
        int for_io_uring =
            call->shape == CHAOS_SHAPE_IO_URING && (points & (1u << CHAOS_POINT_FILES | 1u << CHAOS_POINT_CONNECT));
        if (for_point || for_stat || for_descriptors || for_io_uring) set.bits[i / 64] |= 1ull << (i % 64);
    }
    return set;
}

int chaos_syscall_trapped(const chaos_plan *plan) {
    rows set = needed_rows(plan);
    return __builtin_popcountll(set.bits[0]) + __builtin_popcountll(set.bits[1]);
}

// The rows the installed filter traps, and whether it traps monotonic clock readings:
// set once, before the program starts.
static rows filtered_rows;
static int filtered_monotonic;

/// Whether some clock entry of `plan` fakes monotonic clocks.
static int fakes_monotonic(const chaos_plan *plan) {
    for (int32_t e = 0; e < chaos_plan_entry_count(plan); e++)
        if (chaos_plan_entry_clock_flags(plan, e) & CHAOS_CLOCK_FLAG_MONOTONIC) return 1;
    return 0;
}

int chaos_syscall_covers(const chaos_plan *plan) {
    rows needed = needed_rows(plan);
    return (needed.bits[0] & ~filtered_rows.bits[0]) == 0 && (needed.bits[1] & ~filtered_rows.bits[1]) == 0 &&
           (filtered_monotonic || !fakes_monotonic(plan));
}

int chaos_syscall_filter(const chaos_plan *plan, struct sock_filter *out, int capacity) {
#ifndef CHAOS_AUDIT_ARCH
    (void)plan;
    (void)out;
    (void)capacity;
    return -1;
#else
    rows set = needed_rows(plan);
    filtered_rows = set;
    int monotonic = filtered_monotonic = fakes_monotonic(plan);
    // Realtime clock ids always; monotonic ones when an entry fakes them.
    static const int realtime[] = {CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_TAI, CLOCK_REALTIME_ALARM};
    static const int steady[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME,
                                 CLOCK_BOOTTIME_ALARM};
    int n = 0;
#define EMIT(instruction) \
    do { \
        if (n >= capacity) return -1; \
        out[n++] = (struct sock_filter)instruction; \
    } while (0)
    // Another architecture's calls (x32, i386 through int 0x80) have other numbers: they
    // pass, as the preload's reach check refuses such programs before they start.
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CHAOS_AUDIT_ARCH, 1, 0));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
    int clock_row = -1;
    for (int i = 0; i < TABLE_COUNT; i++) {
        if (!has_row(set, i)) continue;
        if (table[i].shape == CHAOS_SHAPE_CLOCK) {
            clock_row = i;
            continue;
        }
        if (table[i].flag_mask) {
            // Equal: notify when the argument has one of the bits, else let it through;
            // not equal: skip the four. (A row of the same call trapped always comes first.)
            // The low word of the argument: both architectures here are little-endian.
            EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)table[i].number, 0, 4));
            EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                          offsetof(struct seccomp_data, args[0]) + 8 * (unsigned)table[i].flag_argument));
            EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, table[i].flag_mask, 0, 1));
            EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
            EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
            continue;
        }
        // Equal: the next instruction (notify); else skip it.
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)table[i].number, 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
    }
    if (clock_row >= 0) {
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)table[clock_row].number, 1, 0));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
        for (int i = 0; i < 4; i++) {
            EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)realtime[i], 0, 1));
            EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
        }
        for (int i = 0; monotonic && i < 5; i++) {
            EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)steady[i], 0, 1));
            EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
        }
    }
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
#undef EMIT
    return n;
#endif
}
