// Directories under the seccomp delivery. An open is a directory's when it asks for one
// (O_DIRECTORY, as opendir and fts do; O_PATH opens read nothing); a read is getdents64
// (the older getdents is not trapped: glibc and Go read with getdents64). Entries are left
// out here: the supervisor reads the directory itself through a copy of the program's
// descriptor, filters the records with the engine (chaos_outcome_omit_records, as the
// interceptors do) and writes what is left into the program's buffer.
#define _GNU_SOURCE
#include "directories.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "reply.h"
#include "tracee.h"

#define PATH_CAPACITY 4096
#define MOST_READ (1 << 20) // a read carried out here returns at most 1 MiB of records

#ifndef O_PATH
#define O_PATH 010000000
#endif

const struct chaos_syscall *chaos_directories_row(const struct seccomp_notif *n) {
    if (!chaos_fault_point_active(CHAOS_POINT_DIR)) return NULL;
    const struct chaos_syscall *row = chaos_syscall_find_point((int)n->data.nr, CHAOS_POINT_DIR);
    if (!row || row->shape != CHAOS_SHAPE_DIR_OPEN || !row->flag_mask) return row;
    uint64_t flags = n->data.args[row->flag_argument];
    return (flags & O_DIRECTORY) && !(flags & O_PATH) ? row : NULL;
}

int chaos_directories_describe(const struct seccomp_notif *n, const struct chaos_syscall *sc, chaos_call *call,
                               char *path) {
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    memset(call, 0, sizeof *call);
    call->point = CHAOS_POINT_DIR;
    call->fn = sc->fn;
    call->fd = -1;
    call->port = -1;
    if (sc->shape == CHAOS_SHAPE_DIR_READ) {
        call->fd = (int)a[0];
        if (chaos_tracee_descriptor(tid, (int)a[0], path, PATH_CAPACITY) != 1) return 0;
        call->path = path;
        return 1;
    }
#ifdef SYS_openat2
    if (n->data.nr == SYS_openat2) {
        uint64_t flags; // struct open_how: flags first
        if (!a[2] || a[3] < sizeof flags || chaos_tracee_read(tid, a[2], &flags, sizeof flags) != 0 ||
            !(flags & O_DIRECTORY) || (flags & O_PATH))
            return 0;
    }
#endif
    int at = n->data.nr != SYS_open;
    char raw[PATH_CAPACITY], absolute[PATH_CAPACITY];
    if (chaos_tracee_string(tid, at ? a[1] : a[0], raw, sizeof raw) < 0 ||
        chaos_tracee_path(tid, at ? (int)a[0] : AT_FDCWD, raw, absolute, sizeof absolute) < 0 ||
        chaos_path_reached(CHAOS_FN_OPENDIR, AT_FDCWD, absolute, path, PATH_CAPACITY) < 0)
        return 0;
    call->path = path;
    return 1;
}

void chaos_directories_omit(int listener, const struct seccomp_notif *n, const chaos_outcome *o) {
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    size_t capacity = a[2] < MOST_READ ? (size_t)a[2] : MOST_READ;
    int fd = chaos_tracee_borrow(tid, (int)a[0]);
    char *records = capacity ? malloc(capacity) : NULL;
    if (fd < 0 || !records) {
        // Not carried out here: the read goes on whole, and that is said.
        if (fd >= 0) close(fd);
        free(records);
        fprintf(stderr,
                "chaos run: warning: process %d reads a directory whose entries an omit entry leaves out, but the "
                "supervisor cannot read it for it (%s): it is listed whole\n",
                (int)tid, fd < 0 ? "no copy of its descriptor" : "out of memory");
        chaos_reply_go_on(listener, n->id);
        return;
    }
    long got;
    size_t kept = 0;
    // A batch whose every entry is left out would read as the end: read on.
    while ((got = syscall(SYS_getdents64, fd, records, capacity)) > 0 &&
           (kept = chaos_outcome_omit_records(o, records, (size_t)got)) == 0) {}
    int error = errno;
    close(fd);
    uint64_t id = n->id;
    if (got > 0 && (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0 ||
                    chaos_tracee_write(tid, a[1], records, kept) != 0)) {
        got = -1;
        error = EFAULT;
    }
    free(records);
    chaos_reply(listener, n->id, got < 0 ? -1 : got == 0 ? 0 : (int64_t)kept, got < 0 ? -error : 0, 0);
}
