// The stat family under the seccomp delivery: what the preload's stat interceptors do
// (interceptors/stat.inc): file times shifted by the engine's rule
// (chaos_outcome_file_time_shift), then what a stat entry's attributes name. A clock entry shifts file times by default (stat=yes): a file
// written "now" must not look ten years newer than the clock. The kernel's answer to a
// call that goes on cannot be changed afterwards, so the supervisor carries the call out
// itself — through a copy of the thread's descriptor, or its working directory, so that
// names resolve as they would for the thread — shifts the times and writes the result
// into the thread's memory.
//
// What differs from the program doing it: the supervisor's own credentials decide
// permission (chaos run runs as the program's user unless the program changed its own),
// and an absolute path is resolved from the supervisor's root.
#define _GNU_SOURCE
#include "file_times.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "CChaosFaults.h"
#include "descriptors.h"
#include "reply.h"
#include "tracee.h"

/// A directory descriptor of this process that names what `dirfd` names for thread `tid`
/// (AT_FDCWD: its working directory), in `*owned` when it must be closed; -1 when none.
static int directory_of(pid_t tid, int dirfd, int *owned) {
    *owned = -1;
    if (dirfd == AT_FDCWD) {
        char cwd[64];
        snprintf(cwd, sizeof cwd, "/proc/%d/cwd", (int)tid);
        *owned = open(cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
    } else {
        *owned = chaos_tracee_borrow(tid, dirfd);
    }
    return *owned;
}

/// Describes a stat call on descriptor `fd`: 1 when it is open on a file (only files have a
/// path a stat entry can name).
static int stat_descriptor(pid_t tid, int fd, chaos_call *call) {
    const char *path = NULL;
    int special = 0;
    if (chaos_descriptors_lookup(tid, fd, &path, &special) != 1) return 0;
    call->fd = fd;
    call->special = special;
    call->path = path;
    return 1;
}

/// The engine's name of the path argument at `argument` (from `dirfd`) into `out`: 1, or 0
/// when it cannot be read.
static int stat_path(pid_t tid, int dirfd, uint64_t argument, chaos_call *call, char *out, size_t capacity) {
    char raw[4096], absolute[4096];
    if (chaos_tracee_string(tid, argument, raw, sizeof raw) < 0) return 0;
    if (chaos_tracee_path(tid, dirfd, raw, absolute, sizeof absolute) < 0) return 0;
    if (chaos_path_reached(CHAOS_FN_STAT, AT_FDCWD, absolute, out, capacity) < 0) return 0;
    call->path = out;
    return 1;
}

int chaos_file_times_describe(const struct seccomp_notif *n, const struct chaos_syscall *sc, chaos_call *call,
                              char *path, size_t capacity) {
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    call->point = CHAOS_POINT_STAT;
    call->fn = CHAOS_FN_STAT;
    switch (sc->shape) {
    case CHAOS_SHAPE_STAT: return stat_path(tid, AT_FDCWD, a[0], call, path, capacity); // path, buffer
    case CHAOS_SHAPE_FSTAT: return stat_descriptor(tid, (int)a[0], call);               // fd, buffer
    default: {
        // newfstatat: dirfd, path, buffer, flags; statx: dirfd, path, flags, mask, buffer
        int flags = (int)(sc->shape == CHAOS_SHAPE_STAT_AT ? a[3] : a[2]);
        char first = 0;
        if ((flags & AT_EMPTY_PATH) && (!a[1] || (chaos_tracee_read(tid, a[1], &first, 1) == 0 && !first)))
            return stat_descriptor(tid, (int)a[0], call);
        return stat_path(tid, (int)a[0], a[1], call, path, capacity);
    }
    }
}

void chaos_file_times_answer(int listener, const struct seccomp_notif *n, const struct chaos_syscall *sc,
                             const chaos_outcome *decided) {
    int64_t shift = chaos_outcome_file_time_shift();
    int attributes = decided && decided->action == CHAOS_ACT_ATTRIBUTES;
    if (!shift && !attributes) {
        chaos_reply_go_on(listener, n->id);
        return;
    }
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    char path[4096] = "";
    int dirfd = AT_FDCWD, flags = 0;
    uint64_t out = 0;
    switch (sc->shape) {
    case CHAOS_SHAPE_STAT: // stat, lstat: path, buffer
        out = a[1];
#ifdef __NR_lstat
        if (n->data.nr == __NR_lstat) flags = AT_SYMLINK_NOFOLLOW;
#endif
        if (chaos_tracee_string(tid, a[0], path, sizeof path) < 0) goto go_on;
        break;
    case CHAOS_SHAPE_FSTAT: // fd, buffer
        dirfd = (int)a[0];
        flags = AT_EMPTY_PATH;
        out = a[1];
        break;
    case CHAOS_SHAPE_STAT_AT: // dirfd, path, buffer, flags
        dirfd = (int)a[0];
        flags = (int)a[3];
        out = a[2];
        if (a[1] && chaos_tracee_string(tid, a[1], path, sizeof path) < 0) goto go_on;
        break;
    default: // statx: dirfd, path, flags, mask, buffer
        dirfd = (int)a[0];
        flags = (int)a[2];
        out = a[4];
        if (a[1] && chaos_tracee_string(tid, a[1], path, sizeof path) < 0) goto go_on;
        break;
    }
    uint64_t id = n->id;
    if (!out || ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0) goto go_on;
    int owned = -1, from = AT_FDCWD;
    if (path[0] != '/' && (from = directory_of(tid, dirfd, &owned)) < 0) goto go_on;
    int result, error = 0;
    if (sc->shape == CHAOS_SHAPE_STATX) {
        struct statx status;
        result = statx(from, path, flags, (unsigned)a[3], &status);
        error = errno;
        if (result == 0) {
            struct statx_timestamp *times[] = {&status.stx_atime, &status.stx_mtime, &status.stx_ctime,
                                               &status.stx_btime};
            unsigned masks[] = {STATX_ATIME, STATX_MTIME, STATX_CTIME, STATX_BTIME};
            for (int i = 0; i < 4 && shift; i++) {
                if (!(status.stx_mask & masks[i])) continue;
                int64_t seconds = times[i]->tv_sec;
                chaos_outcome_shift_parts(&seconds, &times[i]->tv_nsec, shift);
                times[i]->tv_sec = seconds;
            }
            chaos_outcome_attributes_statx(decided, &status);
            if (chaos_tracee_write(tid, out, &status, sizeof status) != 0) result = -1, error = EFAULT;
        }
    } else {
        struct stat status;
        result = fstatat(from, path, &status, flags);
        error = errno;
        if (result == 0) {
            chaos_outcome_shift_timespec(&status.st_atim, shift);
            chaos_outcome_shift_timespec(&status.st_mtim, shift);
            chaos_outcome_shift_timespec(&status.st_ctim, shift);
            chaos_outcome_attributes(decided, &status);
            if (chaos_tracee_write(tid, out, &status, sizeof status) != 0) result = -1, error = EFAULT;
        }
    }
    if (owned >= 0) close(owned);
    chaos_reply(listener, n->id, result == 0 ? 0 : -1, result == 0 ? 0 : -error, 0);
    return;
go_on:
    chaos_reply_go_on(listener, n->id);
}
