// Virtual time, what the process is doing: its threads and descriptors as /proc shows them,
// read with system calls only (open and read may be rebound to the interceptors). An
// advance settles on these before its next step.
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

/// Reads a whole small /proc file with system calls (open and read may be rebound).
ssize_t cf_vt_read_proc(const char *path, char *buffer, size_t capacity) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t total = 0, got;
    while (total < (ssize_t)capacity - 1 &&
           (got = syscall(SYS_read, fd, buffer + total, capacity - 1 - (size_t)total)) > 0)
        total += got;
    syscall(SYS_close, fd);
    buffer[total < 0 ? 0 : total] = 0;
    return total;
}

/// A timerfd's clock id, from /proc/self/fdinfo (the descriptor may predate virtual time).
int chaos_timerfd_clock(int fd) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    if (cf_vt_read_proc(path, text, sizeof text) <= 0) return -1;
    const char *line = strstr(text, "clockid:");
    return line ? atoi(line + 8) : -1;
}

int cf_vt_readable(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    struct timespec zero = {0, 0};
    return syscall(SYS_ppoll, &p, 1, &zero, NULL, 0) == 1 && (p.revents & POLLIN);
}

/// Calls `visit` for each descriptor of this process whose /proc/self/fd link reads
/// `kind` (e.g. "anon_inode:[timerfd]"), until it returns non-zero.
void cf_vt_each_descriptor(const char *kind, int (*visit)(int fd, void *context), void *context) {
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
    if (cf_vt_read_proc(path, info, sizeof info) <= 0) return 0;
    for (const char *line = strstr(info, "tfd:"); line; line = strstr(line + 4, "tfd:")) {
        if (atoi(line + 4) != search->fd) continue;
        const char *events = strstr(line, "events:");
        if (!events) return 0;
        unsigned long mask = strtoul(events + 7, NULL, 16);
        search->found = 1;
        search->delivered = (mask & 0x1) == 0 && (mask & 0x40000000) != 0; // EPOLLIN gone, EPOLLONESHOT
        return 1;
    }
    return 0;
}

int cf_vt_delivered_oneshot(int fd) {
    oneshot_search search = {fd, 0, 0};
    cf_vt_each_descriptor("anon_inode:[eventpoll]", look_in_epoll_set, &search);
    return search.found ? search.delivered : 1;
}

/// Whether every thread of the process but the caller and the exempt ones is blocked (not
/// running), sampled from /proc/self/task.
int cf_vt_others_blocked(pid_t self) {
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
            if (tid == self || cf_vt_is_exempt(tid)) continue; // an exempt thread runs on its own time
            snprintf(path, sizeof path, "/proc/self/task/%s/stat", entry->d_name);
            if (cf_vt_read_proc(path, stat, sizeof stat) <= 0) continue;
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
