// The supervisor's side of a trapped call: read what the call names out of the calling
// thread (paths, descriptors, addresses), decide it with the engine exactly as the
// preload's interceptors would, and answer: let it run (SECCOMP_USER_NOTIF_FLAG_CONTINUE),
// fail it with the errno, or carry it out here (short transfers through a copy of the
// thread's descriptor, clock readings written into its memory).
//
// The time-of-check race of user notification: a call that goes on is carried out by the
// kernel, which reads its pointer arguments again. Another thread of the program could
// change a path between the supervisor's read and the kernel's; the decision is then about
// the name it read. That only ever misplaces chaos in a program racing against itself: the
// supervisor never grants anything the program could not do, and everything it carries
// out itself (short transfers, clock readings) uses the memory it read. After reading, it
// checks that the call is still waiting (SECCOMP_IOCTL_NOTIF_ID_VALID), so a thread that
// died and whose id was reused is never answered with another's data.
#define _GNU_SOURCE
#include "answer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "CChaosFaults.h"
#include "descriptors.h"
#include "directories.h"
#include "file_times.h"
#include "inject.h"
#include "power.h"
#include "processes.h"
#include "syscalls.h"
#include "tracee.h"
#include "reply.h"
#include "waits.h"

#define PATH_CAPACITY 4096
#define MOST_EMULATED (1 << 20) // a short transfer carried out here moves at most 1 MiB

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

// MARK: - Describing a call

/// A trapped call as the engine sees it, with the storage its pointers point into.
struct described {
    chaos_call call;
    char path[PATH_CAPACITY], path2[PATH_CAPACITY]; ///< named paths (descriptors: the cache's)
    unsigned char address[128];
};

/// The engine's name for the path argument at `path_arg` (from `dirfd`): 0, or -1 when
/// it cannot be read (the kernel then answers the call itself).
static int named_path(pid_t tid, int32_t fn, int dirfd, uint64_t path_arg, char *out) {
    char raw[PATH_CAPACITY], absolute[PATH_CAPACITY];
    if (chaos_tracee_string(tid, path_arg, raw, sizeof raw) < 0) return -1;
    if (chaos_tracee_path(tid, dirfd, raw, absolute, sizeof absolute) < 0) return -1;
    return chaos_path_reached(fn, AT_FDCWD, absolute, out, PATH_CAPACITY) < 0 ? -1 : 0;
}

/// Describes a call on descriptor `fd` (its point and fn already in `d->call`); 1 when it
/// is a file, or when the plan names descriptors (`fd=`, `kind=`) and it is a pipe or the
/// like. Sockets stay with the preload delivery (send and recv entries).
static int descriptor_call(pid_t tid, int fd, struct described *d) {
    const char *path = NULL;
    int special = 0;
    int kind = chaos_descriptors_lookup(tid, fd, &path, &special);
    d->call.fd = fd;
    if (kind == 1) {
        d->call.special = special;
        d->call.path = path;
        if (chaos_fault_names_descriptors()) d->call.descriptor_kind = chaos_descriptors_kind(tid, fd);
        return 1;
    }
    if (kind != 0 || !chaos_fault_names_descriptors()) return 0;
    d->call.descriptor_kind = chaos_descriptors_kind(tid, fd);
    return d->call.descriptor_kind != 0;
}

/// The target and source descriptors of a copy.
static void copy_ends(const struct seccomp_notif *n, int *target, int *source) {
    int sendfile_call = n->data.nr == SYS_sendfile;
    *target = (int)n->data.args[sendfile_call ? 0 : 2];
    *source = (int)n->data.args[sendfile_call ? 1 : 0];
}

/// Decides a copy as the interceptors do: a write on its target, else a read on its source.
static int decide_copy(const struct seccomp_notif *n, const struct chaos_syscall *sc, struct described *d,
                       chaos_outcome *o) {
    int target, source;
    copy_ends(n, &target, &source);
    d->call = (chaos_call){.point = CHAOS_POINT_FILES, .fn = sc->fn, .fd = -1, .port = -1};
    if (descriptor_call((pid_t)n->pid, target, d) && chaos_fault_decide(&d->call, o)) return 1;
    d->call = (chaos_call){.point = CHAOS_POINT_FILES, .fn = CHAOS_FN_PREAD, .fd = -1, .port = -1};
    return descriptor_call((pid_t)n->pid, source, d) && chaos_fault_decide(&d->call, o);
}

/// Fills `d` for trapped call `n`; 1 when the engine is to decide it, 0 when it is none of
/// the plan's business (a pipe, a socket write, an unreadable argument).
static int describe(const struct seccomp_notif *n, const struct chaos_syscall *sc, struct described *d) {
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    chaos_call *call = &d->call;
    memset(call, 0, sizeof *call);
    call->point = sc->point;
    call->fn = sc->fn;
    call->fd = -1;
    call->port = -1;
    switch (sc->shape) {
    case CHAOS_SHAPE_PATH:
        if (named_path(tid, sc->fn, AT_FDCWD, a[0], d->path) != 0) return 0;
        call->creates = (sc->op & CHAOS_OP_OPEN) && chaos_power_creates(n);
        break;
    case CHAOS_SHAPE_PATH_AT:
        if (named_path(tid, sc->fn, (int)a[0], a[1], d->path) != 0) return 0;
        call->creates = (sc->op & CHAOS_OP_OPEN) && chaos_power_creates(n);
        break;
    case CHAOS_SHAPE_LINK: {
        // The new name: link's second path, linkat's fourth (from its third, a directory),
        // symlink's second, symlinkat's third (from its second).
        int at = n->data.nr == SYS_linkat || n->data.nr == SYS_symlinkat;
        int link_call = n->data.nr == SYS_linkat;
        int dirfd = !at ? AT_FDCWD : (int)a[link_call ? 2 : 1];
        uint64_t name = !at ? a[1] : a[link_call ? 3 : 2];
        if (named_path(tid, sc->fn, dirfd, name, d->path) != 0) return 0;
        break;
    }
    case CHAOS_SHAPE_UNLINK_AT:
        if ((int)a[2] & AT_REMOVEDIR) call->fn = CHAOS_FN_RMDIR;
        if (named_path(tid, call->fn, (int)a[0], a[1], d->path) != 0) return 0;
        break;
    case CHAOS_SHAPE_RENAME:
    case CHAOS_SHAPE_RENAME_AT: {
        int at = sc->shape == CHAOS_SHAPE_RENAME_AT;
        if (named_path(tid, sc->fn, at ? (int)a[0] : AT_FDCWD, at ? a[1] : a[0], d->path) != 0) return 0;
        if (named_path(tid, sc->fn, at ? (int)a[2] : AT_FDCWD, at ? a[3] : a[1], d->path2) == 0) call->path2 = d->path2;
        break;
    }
    case CHAOS_SHAPE_FD:
    case CHAOS_SHAPE_TRANSFER:
    case CHAOS_SHAPE_VECTOR: return descriptor_call(tid, (int)a[0], d);
    case CHAOS_SHAPE_STAT:
    case CHAOS_SHAPE_FSTAT:
    case CHAOS_SHAPE_STAT_AT:
    case CHAOS_SHAPE_STATX: return chaos_file_times_describe(n, sc, call, d->path, sizeof d->path);
    case CHAOS_SHAPE_CONNECT: {
        size_t length = a[2] < sizeof d->address ? (size_t)a[2] : sizeof d->address;
        if (!a[1] || chaos_tracee_read(tid, a[1], d->address, length) != 0) return 0;
        chaos_call_describe_address(call, d->address, length);
        return 1;
    }
    case CHAOS_SHAPE_SPAWN: return chaos_processes_describe(n, sc, call);
    case CHAOS_SHAPE_DIR_OPEN:
    case CHAOS_SHAPE_DIR_READ: return chaos_directories_describe(n, sc, call, d->path);
    default: return 0; // clocks are read, decided and answered by answer_clock
    }
    call->path = d->path;
    return 1;
}

// MARK: - Carrying out a short transfer

/// Moves at most the outcome's share of the call's bytes (all of them, up to MOST_EMULATED,
/// when it corrupts them), here, and answers with what moved. A vector call moves its bytes
/// through its first buffers, as a short transfer may.
static void answer_short(int listener, const struct seccomp_notif *n, const struct chaos_syscall *sc,
                         const chaos_outcome *o) {
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    struct iovec segments[64];
    int count = 0;
    size_t total = 0;
    if (sc->shape == CHAOS_SHAPE_TRANSFER) {
        segments[0] = (struct iovec){(void *)(uintptr_t)a[1], (size_t)a[2]};
        count = 1;
    } else {
        count = a[2] < 64 ? (int)a[2] : 64;
        if (count > 0 && chaos_tracee_read(tid, a[1], segments, (size_t)count * sizeof segments[0]) != 0) {
            chaos_reply(listener, n->id, -1, -EFAULT, 0);
            return;
        }
    }
    for (int i = 0; i < count; i++) total += segments[i].iov_len;
    size_t limit = o->action == CHAOS_ACT_CORRUPT ? total : chaos_outcome_short_count(o, total);
    if (limit > MOST_EMULATED) limit = MOST_EMULATED;
    int64_t offset = (int64_t)a[3]; // pread64's offset, preadv's low word (the whole offset here)
    int positioned = sc->positioned && offset != -1;
    int fd = chaos_tracee_borrow(tid, (int)a[0]);
    char *buffer = limit ? malloc(limit) : NULL;
    if (fd < 0 || (limit && !buffer)) {
        if (fd >= 0) close(fd);
        free(buffer);
        chaos_reply_go_on(listener, n->id); // cannot be cut here: the whole call runs
        return;
    }
    ssize_t moved = 0;
    if (sc->writes) {
        size_t gathered = 0;
        for (int i = 0; i < count && gathered < limit; i++) {
            size_t take = segments[i].iov_len < limit - gathered ? segments[i].iov_len : limit - gathered;
            if (take && chaos_tracee_read(tid, (uint64_t)(uintptr_t)segments[i].iov_base, buffer + gathered, take) != 0)
                break;
            gathered += take;
        }
        chaos_outcome_corrupt(o, (unsigned char *)buffer, gathered);
        moved = positioned ? pwrite(fd, buffer, gathered, offset) : write(fd, buffer, gathered);
    } else {
        moved = positioned ? pread(fd, buffer, limit, offset) : read(fd, buffer, limit);
        if (moved > 0) chaos_outcome_corrupt(o, (unsigned char *)buffer, (size_t)moved);
        size_t scattered = 0;
        for (int i = 0; moved > 0 && i < count && scattered < (size_t)moved; i++) {
            size_t put =
                segments[i].iov_len < (size_t)moved - scattered ? segments[i].iov_len : (size_t)moved - scattered;
            if (put &&
                chaos_tracee_write(tid, (uint64_t)(uintptr_t)segments[i].iov_base, buffer + scattered, put) != 0) {
                moved = scattered ? (ssize_t)scattered : -1;
                errno = EFAULT;
                break;
            }
            scattered += put;
        }
    }
    int error = errno;
    close(fd);
    free(buffer);
    chaos_reply(listener, n->id, moved < 0 ? -1 : moved, moved < 0 ? -error : 0, 0);
}

/// A short copy, carried out here with copies of both descriptors; an offset the call
/// passes by pointer is read from the thread and written back moved.
static void answer_short_copy(int listener, const struct seccomp_notif *n, const chaos_outcome *o) {
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    int sendfile_call = n->data.nr == SYS_sendfile;
    int target_fd, source_fd;
    copy_ends(n, &target_fd, &source_fd);
    size_t count = chaos_outcome_short_count(o, (size_t)a[sendfile_call ? 3 : 4]);
    uint64_t source_offset_at = a[sendfile_call ? 2 : 1], target_offset_at = sendfile_call ? 0 : a[3];
    int64_t source_offset = 0, target_offset = 0;
    if ((source_offset_at && chaos_tracee_read(tid, source_offset_at, &source_offset, sizeof source_offset) != 0) ||
        (target_offset_at && chaos_tracee_read(tid, target_offset_at, &target_offset, sizeof target_offset) != 0)) {
        chaos_reply(listener, n->id, -1, -EFAULT, 0);
        return;
    }
    int target = chaos_tracee_borrow(tid, target_fd), source = chaos_tracee_borrow(tid, source_fd);
    ssize_t moved = -1;
    if (target >= 0 && source >= 0) {
        moved = sendfile_call
                    ? sendfile(target, source, source_offset_at ? (off_t *)&source_offset : NULL, count)
                    : copy_file_range(source, source_offset_at ? (off_t *)&source_offset : NULL, target,
                                      target_offset_at ? (off_t *)&target_offset : NULL, count, (unsigned)a[5]);
    }
    int error = errno;
    if (target >= 0) close(target);
    if (source >= 0) close(source);
    if (target < 0 || source < 0) {
        chaos_reply_go_on(listener, n->id); // cannot be cut here: the whole call runs
        return;
    }
    if (moved > 0 && source_offset_at) chaos_tracee_write(tid, source_offset_at, &source_offset, sizeof source_offset);
    if (moved > 0 && target_offset_at) chaos_tracee_write(tid, target_offset_at, &target_offset, sizeof target_offset);
    chaos_reply(listener, n->id, moved < 0 ? -1 : moved, moved < 0 ? -error : 0, 0);
}

// MARK: - Clocks

/// Reads the clock the call asks for, decides the reading and writes it into the thread.
static void answer_clock(int listener, const struct seccomp_notif *n, const struct chaos_syscall *sc) {
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    int clock = sc->shape == CHAOS_SHAPE_CLOCK ? (int)a[0] : CLOCK_REALTIME;
    struct timespec now;
    if (clock_gettime(clock, &now) != 0) {
        chaos_reply(listener, n->id, -1, -errno, 0);
        return;
    }
    int64_t value = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    chaos_call call;
    chaos_outcome o;
    if (chaos_outcome_decide_clock(sc->fn, clock, value, &call, &o))
        value = chaos_outcome_reading_for_thread(&o, clock, value);
    int64_t seconds = value / 1000000000, rest = value % 1000000000;
    if (rest < 0) {
        rest += 1000000000;
        seconds -= 1;
    }
    int failed = 0;
    if (sc->shape == CHAOS_SHAPE_CLOCK) {
        struct timespec fake = {(time_t)seconds, (long)rest};
        failed = a[1] && chaos_tracee_write(tid, a[1], &fake, sizeof fake) != 0;
    } else if (sc->shape == CHAOS_SHAPE_TIMEOFDAY) {
        struct timeval fake = {(time_t)seconds, (suseconds_t)(rest / 1000)};
        failed = a[0] && chaos_tracee_write(tid, a[0], &fake, sizeof fake) != 0;
        struct timeval ignored;
        struct timezone zone;
        if (!failed && a[1] && gettimeofday(&ignored, &zone) == 0)
            failed = chaos_tracee_write(tid, a[1], &zone, sizeof zone) != 0;
    } else {
        time_t fake = (time_t)seconds;
        failed = a[0] && chaos_tracee_write(tid, a[0], &fake, sizeof fake) != 0;
        if (!failed) {
            chaos_reply(listener, n->id, (int64_t)fake, 0, 0);
            return;
        }
    }
    chaos_reply(listener, n->id, failed ? -1 : 0, failed ? -EFAULT : 0, 0);
}

// MARK: - Delays

/// A decided call waiting out its delay.
struct waiting {
    struct seccomp_notif call;
    chaos_outcome outcome;
    int64_t due_ns;
};

// Added to by the thread that decides calls, answered by the one that keeps time.
static pthread_mutex_t waiting_lock = PTHREAD_MUTEX_INITIALIZER;
static struct waiting *waiting;             // under waiting_lock
static int waiting_count, waiting_capacity; // under waiting_lock
static int waiting_wake = -1;               // an eventfd told of each new wait (-1: none)

void chaos_answer_wake(int eventfd) { waiting_wake = eventfd; }

/// Executes a decided call's outcome.
static void act(int listener, const struct seccomp_notif *n, const chaos_outcome *o) {
    const struct chaos_syscall *sc = chaos_syscall_find(n->data.nr);
    if (o->action == CHAOS_ACT_FAIL)
        chaos_reply(listener, n->id, o->ret, -o->err, 0);
    else if ((o->action == CHAOS_ACT_SHORT || o->action == CHAOS_ACT_CORRUPT) && sc &&
             (sc->shape == CHAOS_SHAPE_TRANSFER || sc->shape == CHAOS_SHAPE_VECTOR))
        answer_short(listener, n, sc, o);
    else if (o->action == CHAOS_ACT_SHORT && sc && sc->shape == CHAOS_SHAPE_COPY && n->data.nr != SYS_splice)
        answer_short_copy(listener, n, o);
    else if (sc && chaos_syscall_stats(sc))
        chaos_file_times_answer(listener, n, sc, o); // its answer: times shifted, attributes named
    else if (o->action == CHAOS_ACT_OMIT && n->data.nr == SYS_getdents64)
        chaos_directories_omit(listener, n, o);
    else
        chaos_reply_go_on(listener, n->id);
}

int chaos_answer_due(int listener) {
    int64_t now = monotonic_ns(), next = -1;
    pthread_mutex_lock(&waiting_lock);
    for (int i = 0; i < waiting_count;) {
        if (waiting[i].due_ns <= now) {
            struct waiting due = waiting[i];
            waiting[i] = waiting[--waiting_count];
            pthread_mutex_unlock(&waiting_lock);
            act(listener, &due.call, &due.outcome);
            pthread_mutex_lock(&waiting_lock);
            i = 0; // the list may have changed meanwhile
            continue;
        }
        int64_t left = waiting[i].due_ns - now;
        if (next < 0 || left < next) next = left;
        i++;
    }
    pthread_mutex_unlock(&waiting_lock);
    return next < 0 ? -1 : (int)((next + 999999) / 1000000);
}

// MARK: - io_uring

static int io_uring_allowed;
static uint64_t tree_event_count;
static chaos_tree_event tree_events[CHAOS_TALLY_EVENTS];

void chaos_answer_allow_io_uring(int allowed) { io_uring_allowed = allowed; }

const chaos_tree_event *chaos_answer_tree_events(uint64_t *count) {
    *count = __atomic_load_n(&tree_event_count, __ATOMIC_ACQUIRE);
    return tree_events;
}

void chaos_answer_record_event(chaos_tree_event_kind kind, pid_t pid, const char *program) {
    chaos_tree_event_record(&tree_event_count, tree_events, kind, (int32_t)pid, program);
}

void chaos_answer_note_exec(const struct seccomp_notif *n) {
    const __u64 *a = n->data.args;
    int at = n->data.nr != __NR_execve;
    char raw[PATH_CAPACITY], program[PATH_CAPACITY];
    if (chaos_tracee_string((pid_t)n->pid, at ? a[1] : a[0], raw, sizeof raw) < 0) return;
    if (at && !raw[0] && ((int)a[4] & AT_EMPTY_PATH))
        snprintf(program, sizeof program, "/proc/%u/fd/%d", n->pid, (int)a[0]);
    else if (chaos_tracee_path((pid_t)n->pid, at ? (int)a[0] : AT_FDCWD, raw, program, sizeof program) < 0)
        return;
    struct stat file, process;
    char process_path[64];
    snprintf(process_path, sizeof process_path, "/proc/%u", n->pid);
    if (stat(program, &file) != 0 || !S_ISREG(file.st_mode) || stat(process_path, &process) != 0) return;
    int gains = ((file.st_mode & S_ISUID) && file.st_uid != process.st_uid) ||
                ((file.st_mode & S_ISGID) && file.st_gid != process.st_gid);
    if (!gains) return;
    fprintf(stderr,
            "chaos run: warning: process %u execs %s, which is set-user-ID or set-group-ID: under the seccomp "
            "delivery it runs without its privileges (no_new_privs), and may fail for that alone\n",
            n->pid, program);
    chaos_tree_event_record(&tree_event_count, tree_events, CHAOS_TREE_SETUID_UNPRIVILEGED, (int32_t)n->pid, program);
}

/// The program process `pid` runs (its /proc exe link), in `out` ("" when it cannot be read).
static void program_of(pid_t pid, char *out, size_t capacity) {
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t length = readlink(link, out, capacity - 1);
    out[length > 0 ? length : 0] = 0;
}

/// Whether the report already holds an event of `kind` for process `pid`: what is said
/// once per process is said only then.
static int recorded(pid_t pid, chaos_tree_event_kind kind) {
    uint64_t seen = __atomic_load_n(&tree_event_count, __ATOMIC_ACQUIRE);
    for (uint64_t i = 0; i < seen && i < CHAOS_TALLY_EVENTS; i++)
        if (tree_events[i].pid == (int32_t)pid && tree_events[i].kind == (int32_t)kind) return 1;
    return 0;
}

/// Fails io_uring_setup with ENOSYS (or lets it through when allowed), saying so once per process.
static void answer_io_uring(int listener, const struct seccomp_notif *n) {
    char program[PATH_MAX];
    program_of((pid_t)n->pid, program, sizeof program);
    chaos_tree_event_kind kind = io_uring_allowed ? CHAOS_TREE_IO_URING_ALLOWED : CHAOS_TREE_IO_URING_REFUSED;
    if (!recorded((pid_t)n->pid, kind)) {
        char sentence[PATH_MAX + 256];
        chaos_io_uring_sentence(sentence, sizeof sentence, io_uring_allowed, (int)n->pid, program,
                                "asked for io_uring: it");
        fputs(sentence, stderr);
        chaos_tree_event_record(&tree_event_count, tree_events, kind, (int32_t)n->pid, program);
    }
    if (io_uring_allowed)
        chaos_reply_go_on(listener, n->id);
    else
        chaos_reply(listener, n->id, -1, -ENOSYS, 0);
}

/// A futex wait or kernel timer the supervisor cannot translate (CHAOS_SHAPE_KEPT_DEADLINE):
/// said once per process when it keeps real time against a faked clock, then let through.
static void answer_kept_deadline(int listener, const struct seccomp_notif *n) {
    const __u64 *a = n->data.args;
    int futex = n->data.nr == __NR_futex;
    int command = (int)a[1] & FUTEX_CMD_MASK;
    int waits = futex ? (command == FUTEX_WAIT || command == FUTEX_WAIT_BITSET || command == FUTEX_WAIT_REQUEUE_PI ||
                         command == FUTEX_LOCK_PI) &&
                            a[3] != 0
                      : 1;
    // An instant of CLOCK_REALTIME: FUTEX_WAIT_BITSET and FUTEX_WAIT_REQUEUE_PI with the
    // realtime flag, FUTEX_LOCK_PI always (FUTEX_WAIT's timeout is relative); a timer armed
    // with its absolute flag (on the realtime clock, or on a monotonic one a faked clock
    // may not touch: said either way).
    int realtime_instant = futex ? ((command == FUTEX_WAIT_BITSET || command == FUTEX_WAIT_REQUEUE_PI) &&
                                    ((int)a[1] & FUTEX_CLOCK_REALTIME) && a[3] != 0) ||
                                       (command == FUTEX_LOCK_PI && a[3] != 0)
                                 : ((int)a[1] & 1);
    chaos_outcome o;
    int faked = chaos_fault_peek_clock(CHAOS_CLOCKSRC_REALTIME, &o) && o.action != CHAOS_ACT_ORIGINAL;
    int held = faked && o.action == CHAOS_ACT_VIRTUAL;
    if (!waits || !faked || (!held && !realtime_instant)) {
        chaos_reply_go_on(listener, n->id);
        return;
    }
    char program[PATH_MAX];
    program_of((pid_t)n->pid, program, sizeof program);
    if (!recorded((pid_t)n->pid, CHAOS_TREE_DEADLINE_REAL)) {
        const char *what = futex ? "waits until an instant of CLOCK_REALTIME (pthread_cond_timedwait, sem_timedwait …)"
                           : n->data.nr == __NR_timerfd_settime ? "arms a timerfd"
                                                                : "arms a POSIX timer";
        const char *why = held ? "virtual time cannot hold it under the seccomp delivery, so it keeps real time"
                               : "the kernel takes the faked instant for a real one, so it ends as far from the faked "
                                 "deadline as the clock is faked";
        fprintf(stderr, "chaos run: warning: process %u (%s) %s: %s; the preload delivery translates it\n", n->pid,
                program, what, why);
        chaos_tree_event_record(&tree_event_count, tree_events, CHAOS_TREE_DEADLINE_REAL, (int32_t)n->pid, program);
    }
    chaos_reply_go_on(listener, n->id);
}

void chaos_answer(int listener, const struct seccomp_notif *n) {
    const struct chaos_syscall *directory = chaos_directories_row(n);
    const struct chaos_syscall *sc = directory ? directory : chaos_syscall_find(n->data.nr);
    if (sc && sc->shape == CHAOS_SHAPE_SPAWN) chaos_descriptors_forget(); // then decided as any other call
    if (!sc || chaos_inject_owns_call((pid_t)n->pid)) { // the supervisor's own calls (vdso.c) go on untouched
        chaos_reply_go_on(listener, n->id);
        return;
    }
    if (sc->shape == CHAOS_SHAPE_IO_URING) {
        answer_io_uring(listener, n);
        return;
    }
    if (sc->shape == CHAOS_SHAPE_KEPT_DEADLINE) {
        answer_kept_deadline(listener, n);
        return;
    }
    if (sc->shape == CHAOS_SHAPE_RENUMBER || sc->shape == CHAOS_SHAPE_EXEC) {
        if (sc->shape == CHAOS_SHAPE_EXEC) chaos_answer_note_exec(n);
        chaos_descriptors_forget();
        chaos_reply_go_on(listener, n->id);
        return;
    }
    if (sc->shape == CHAOS_SHAPE_CLOCK || sc->shape == CHAOS_SHAPE_TIMEOFDAY || sc->shape == CHAOS_SHAPE_TIME) {
        answer_clock(listener, n, sc);
        return;
    }
    if (sc->shape == CHAOS_SHAPE_SLEEP || sc->shape == CHAOS_SHAPE_CLOCK_SLEEP || sc->shape == CHAOS_SHAPE_EPOLL ||
        sc->shape == CHAOS_SHAPE_POLL) {
        chaos_waits_answer(listener, n, sc);
        return;
    }
    if (chaos_syscall_stats(sc) && !chaos_fault_point_active(CHAOS_POINT_STAT)) {
        chaos_file_times_answer(listener, n, sc, NULL);
        return;
    }
    if (sc->shape == CHAOS_SHAPE_MAP || sc->shape == CHAOS_SHAPE_SYNC_ALL) {
        chaos_call none = {.fd = -1};
        chaos_outcome original = {.action = CHAOS_ACT_ORIGINAL};
        if (sc->shape == CHAOS_SHAPE_MAP)
            chaos_power_note_map(n);
        else
            chaos_power_note(n, sc, &none, &original);
        chaos_reply_go_on(listener, n->id);
        return;
    }
    static struct described d; // one thread: reused, too big for a small stack frame
    uint64_t id = n->id;
    chaos_outcome o;
    // Only what was read out of the thread's memory needs the call to be still waiting:
    // descriptors are named through /proc, and a thread id is not reused unseen (clone).
    int from_memory =
        sc->shape != CHAOS_SHAPE_FD && sc->shape != CHAOS_SHAPE_TRANSFER && sc->shape != CHAOS_SHAPE_VECTOR;
    int described = sc->shape == CHAOS_SHAPE_COPY ||
                    (describe(n, sc, &d) && (!from_memory || ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0));
    int decided =
        sc->shape == CHAOS_SHAPE_COPY ? decide_copy(n, sc, &d, &o) : described && chaos_fault_decide(&d.call, &o);
    if (!decided) o = (chaos_outcome){.action = CHAOS_ACT_ORIGINAL, .entry = -1};
    if (decided && o.action == CHAOS_ACT_POWER_LOSS) {
        chaos_power_lose(n, &d.call, &o); // never answered: its process is gone
        return;
    }
    // Before it goes on: the log keeps what undoes it.
    if (described && chaos_power_active()) chaos_power_note(n, sc, &d.call, &o);
    if (!decided) {
        if (chaos_syscall_stats(sc))
            chaos_file_times_answer(listener, n, sc, NULL);
        else
            chaos_reply_go_on(listener, n->id);
        return;
    }
    if (o.delay_ns <= 0) {
        act(listener, n, &o);
        return;
    }
    pthread_mutex_lock(&waiting_lock);
    if (waiting_count == waiting_capacity) {
        int capacity = waiting_capacity ? waiting_capacity * 2 : 16;
        struct waiting *grown = realloc(waiting, (size_t)capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&waiting_lock);
            act(listener, n, &o); // out of memory: the outcome without its wait
            return;
        }
        waiting = grown;
        waiting_capacity = capacity;
    }
    waiting[waiting_count++] = (struct waiting){*n, o, monotonic_ns() + o.delay_ns};
    pthread_mutex_unlock(&waiting_lock);
    uint64_t one = 1;
    ssize_t told = waiting_wake >= 0 ? write(waiting_wake, &one, sizeof one) : 0;
    (void)told; // an eventfd only refuses a write at 2^64 - 2 unread wakes
}
