// The supervisor's side of power loss (power.h): reading what a change names out of the
// calling thread, telling the engine's log, and at power loss ending the tree before the
// log rolls back. The model and the log are the engine's (durability.c).
#define _GNU_SOURCE
#include "power.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "descriptors.h"
#include "tracee.h"
#include "tree.h"

#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

// Set before the program starts, then read by the answering thread, which alone writes the
// log and, once, the report: nothing else guards them.
static int active;
static char report[1024];
static int lost;

int chaos_power_planned(const chaos_plan *plan) {
    for (int32_t e = 0; e < chaos_plan_entry_count(plan); e++)
        if (chaos_plan_entry_has_kind(plan, e, CHAOS_NODE_POWER_LOSS)) return 1;
    return 0;
}

static void forget_held(void);

void chaos_power_start(const chaos_plan *plan) {
    active = chaos_power_planned(plan);
    chaos_durability_reset();
    forget_held(); // its handles were the emptied log's
}

/// The log holds a descriptor on each file with changes to undo: the supervisor may hold
/// as many as it is allowed (raised once the program has started, which keeps its own).
static void allow_descriptors(void) {
    static int raised;
    struct rlimit limit;
    if (raised++ || getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
}

int chaos_power_active(void) { return active && !lost; }

// What a write needs of its descriptor: its position and flags, live, and which file of the
// log it is. Naming them afresh for every write (opening /proc/TID/fdinfo/N, reading and
// closing it, and a stat through /proc/TID/fd/N for the file) took four calls into /proc,
// about 9 us a write, more than the trap itself (a dd of small appends took 2.6 times as
// long as under a power-loss entry elsewhere). So each (thread, descriptor) written to
// keeps its fdinfo open, read again from its start for each write (the kernel writes it
// anew, so the position and flags are always the current ones), and the log's handle on
// its file, valid while the fdinfo names the same mount and inode. A number that comes to
// name another file (close, dup2, exec; io_uring, unseen) shows another inode there, and
// is named again. An fdinfo held open keeps none of the program's files open.
#define HELD_SLOTS 256 // direct-mapped; a collision only costs naming the descriptor again

/// A descriptor written to.
struct held {
    pid_t tid; ///< 0: empty
    int fd;
    int info;                        ///< this process's descriptor on /proc/TID/fdinfo/N (-1: none)
    unsigned long long mount, inode; ///< the file `file` is, as the fdinfo names it
    int file;                        ///< the log's handle on it (-1: not known)
};

// The answering thread's own, like the log.
static struct held held[HELD_SLOTS];

static void forget_held(void) {
    for (int i = 0; i < HELD_SLOTS; i++) {
        if (held[i].tid && held[i].info >= 0) close(held[i].info);
        held[i] = (struct held){.info = -1, .file = -1};
    }
}

/// The state of a descriptor, as its fdinfo says it.
struct descriptor_state {
    int64_t position;
    unsigned flags;
    unsigned long long mount, inode;
};

/// Reads `h`'s fdinfo (opening it first when it is not open); 0, or -1.
static int read_state(struct held *h, struct descriptor_state *out) {
    char text[512];
    for (int attempt = 0; attempt < 2; attempt++) {
        if (h->info < 0) {
            char name[64];
            snprintf(name, sizeof name, "/proc/%d/fdinfo/%d", (int)h->tid, h->fd);
            h->info = open(name, O_RDONLY | O_CLOEXEC);
            if (h->info < 0) return -1;
        }
        ssize_t length = pread(h->info, text, sizeof text - 1, 0);
        if (length > 0) {
            text[length] = 0;
            char *pos = strstr(text, "pos:"), *flag = strstr(text, "flags:"), *mount = strstr(text, "mnt_id:"),
                 *inode = strstr(text, "ino:");
            if (!pos || !flag) return -1;
            out->position = strtoll(pos + 4, NULL, 10);
            out->flags = (unsigned)strtoul(flag + 6, NULL, 8);
            out->mount = mount ? strtoull(mount + 7, NULL, 10) : 0;
            out->inode = inode ? strtoull(inode + 4, NULL, 10) : 0;
            return 0;
        }
        // Its thread has ended (the id may be another thread's now) or the number is closed:
        // open it again once.
        close(h->info);
        h->info = -1;
    }
    return -1;
}

/// The bytes a transfer moves: its count, or the sum of its vector's lengths.
static int64_t transfer_length(pid_t tid, const struct chaos_syscall *sc, const __u64 *a) {
    if (sc->shape == CHAOS_SHAPE_TRANSFER) return (int64_t)a[2];
    struct iovec segments[64];
    int count = a[2] < 64 ? (int)a[2] : 64;
    if (count <= 0 || chaos_tracee_read(tid, a[1], segments, (size_t)count * sizeof segments[0]) != 0) return -1;
    int64_t total = 0;
    for (int i = 0; i < count; i++) total += (int64_t)segments[i].iov_len;
    return total;
}

/// A write-like call on descriptor `fd`: `length` bytes at `offset` (-1: at the file's
/// position, or its end under O_APPEND).
static void note_write(pid_t tid, int fd, const char *path, int64_t offset, int64_t length) {
    struct held *h = &held[((uint32_t)tid * 2654435761u ^ (uint32_t)fd) % HELD_SLOTS];
    if (h->tid != tid || h->fd != fd) {
        if (h->tid && h->info >= 0) close(h->info);
        *h = (struct held){.tid = tid, .fd = fd, .info = -1, .file = -1};
    }
    struct descriptor_state state;
    if (read_state(h, &state) != 0) return;
    if (state.flags & (O_SYNC | O_DSYNC)) return; // durable once it returns
    if (offset < 0) offset = (state.flags & O_APPEND) ? -1 : state.position;
    char reopen[64];
    snprintf(reopen, sizeof reopen, "/proc/%d/fd/%d", (int)tid, fd);
    if (h->file < 0 || !state.inode || h->mount != state.mount || h->inode != state.inode) {
        h->file = chaos_durability_file(reopen, path);
        h->mount = state.mount;
        h->inode = state.inode;
    }
    if (h->file >= 0) chaos_durability_write_to(h->file, reopen, offset, length);
}

/// The flags an open asks for (openat2: the first field of its open_how).
static int64_t open_flags(pid_t tid, const struct seccomp_notif *n) {
    const __u64 *a = n->data.args;
    switch (n->data.nr) {
#ifdef __NR_open
    case __NR_open: return (int64_t)a[1];
#endif
#ifdef __NR_creat
    case __NR_creat: return O_CREAT | O_WRONLY | O_TRUNC;
#endif
#ifdef __NR_openat2
    case __NR_openat2: {
        uint64_t flags = 0;
        return chaos_tracee_read(tid, a[2], &flags, sizeof flags) == 0 ? (int64_t)flags : 0;
    }
#endif
    default: return (int64_t)a[2];
    }
}

int chaos_power_creates(const struct seccomp_notif *n) {
    int64_t flags = open_flags((pid_t)n->pid, n);
    return (flags & (O_CREAT | O_TRUNC)) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

void chaos_power_note(const struct seccomp_notif *n, const struct chaos_syscall *sc, const chaos_call *call,
                      const chaos_outcome *outcome) {
    if (!chaos_power_active()) return;
    allow_descriptors();
    pid_t tid = (pid_t)n->pid;
    const __u64 *a = n->data.args;
    const char *path = call->path;
    if (outcome->action == CHAOS_ACT_FAIL) return; // a call failed on purpose changes nothing
    if (sc->fn == CHAOS_FN_FSYNC || sc->fn == CHAOS_FN_FDATASYNC) {
        char reopen[64];
        snprintf(reopen, sizeof reopen, "/proc/%d/fd/%d", (int)tid, (int)a[0]);
        chaos_durability_synced(reopen);
        return;
    }
    if (sc->shape == CHAOS_SHAPE_SYNC_ALL) {
        chaos_durability_synced_all();
        return;
    }
    if (!path) return;
    int watched = sc->shape == CHAOS_SHAPE_COPY || chaos_fault_power_watches(path) ||
                  (call->path2 && chaos_fault_power_watches(call->path2));
    if (!watched) return;
    switch (sc->shape) {
    case CHAOS_SHAPE_TRANSFER:
    case CHAOS_SHAPE_VECTOR:
        if (sc->writes) {
            int64_t length = transfer_length(tid, sc, a);
            // pwrite64's offset; pwritev's low word (the whole offset here); pwritev2's -1: the position
            int64_t offset = sc->positioned ? (int64_t)a[3] : -1;
            if (length > 0) note_write(tid, (int)a[0], path, offset < 0 ? -1 : offset, length);
        }
        return;
    case CHAOS_SHAPE_COPY: {
        int sendfile_call = n->data.nr == SYS_sendfile;
        int target = (int)a[sendfile_call ? 0 : 2];
        const char *target_path = NULL;
        int special = 0;
        // What the engine was told may be the source's: a copy is a read there.
        if (chaos_descriptors_lookup(tid, target, &target_path, &special) != 1 ||
            !chaos_fault_power_watches(target_path))
            return;
        path = target_path;
        int64_t offset = -1;
        if (!sendfile_call && a[3]) chaos_tracee_read(tid, a[3], &offset, sizeof offset);
        note_write(tid, target, path, offset, (int64_t)a[sendfile_call ? 3 : 4]);
        return;
    }
    case CHAOS_SHAPE_FD: {
        char reopen[64];
        snprintf(reopen, sizeof reopen, "/proc/%d/fd/%d", (int)tid, (int)a[0]);
        if (sc->fn == CHAOS_FN_FTRUNCATE)
            chaos_durability_truncate(reopen, path, (int64_t)a[1]);
        else if (sc->fn == CHAOS_FN_FALLOCATE) {
            // Whatever its mode (growing, punching, collapsing), the range and the size before
            // undo it; collapsing and inserting move the rest of the file too.
            int mode = (int)a[1];
            int64_t length = mode & (0x08 | 0x20) ? INT64_MAX / 2 : (int64_t)a[3];
            note_write(tid, (int)a[0], path, (int64_t)a[2], length);
        }
        return;
    }
    case CHAOS_SHAPE_PATH:
    case CHAOS_SHAPE_PATH_AT:
        if (sc->fn == CHAOS_FN_TRUNCATE) {
            chaos_durability_truncate(path, path, (int64_t)a[1]);
        } else if (sc->fn == CHAOS_FN_MKDIR) {
            chaos_durability_create(path);
        } else if (sc->fn == CHAOS_FN_UNLINK || sc->fn == CHAOS_FN_RMDIR) {
            chaos_durability_remove(path);
        } else if (sc->op & CHAOS_OP_OPEN) {
            int64_t flags = open_flags(tid, n);
            if ((flags & O_TMPFILE) == O_TMPFILE) return; // nameless until linked
            if (flags & O_CREAT) chaos_durability_create(path);
            if ((flags & O_TRUNC) && access(path, F_OK) == 0) chaos_durability_truncate(path, path, 0);
        }
        return;
    case CHAOS_SHAPE_UNLINK_AT: chaos_durability_remove(path); return;
    case CHAOS_SHAPE_RENAME:
    case CHAOS_SHAPE_RENAME_AT:
        if (call->path2) chaos_durability_rename(path, call->path2, n->data.nr == SYS_renameat2 ? (unsigned)a[4] : 0);
        return;
    case CHAOS_SHAPE_LINK: chaos_durability_create(path); return;
    default: return;
    }
}

void chaos_power_note_map(const struct seccomp_notif *n) {
    if (!chaos_power_active()) return;
    const __u64 *a = n->data.args;
    if (!(a[2] & PROT_WRITE) || !(a[3] & MAP_SHARED)) return;
    pid_t tid = (pid_t)n->pid;
    char path[4096];
    if (chaos_tracee_descriptor(tid, (int)a[4], path, sizeof path) != 1 || !chaos_fault_power_watches(path)) return;
    if (chaos_durability_shared_map(path))
        fprintf(stderr,
                "chaos run: warning: process %d maps %s shared and writable: no delivery sees writes through a "
                "mapping, so power loss counts its pages as durable\n",
                (int)tid, path);
}

// MARK: - Losing power

/// Power is lost: ends the tree, rolls back, and says so, `where` being where it was lost.
static void lose_power(const char *where, int torn, uint64_t seed) {
    lost = 1;
    forget_held();
    // Its end first: nothing may change a file while it is rolled back. Calls already let
    // through finish before their process is a zombie.
    struct timespec pause = {0, 1000000};
    for (int rounds = 0; chaos_tree_kill(SIGKILL) && rounds < 30000; rounds++) nanosleep(&pause, NULL);
    chaos_power_summary summary;
    chaos_durability_lose_power(torn, seed, &summary);
    char rolled[512];
    chaos_power_summary_sentence(&summary, rolled, sizeof rolled);
    int used = snprintf(report, sizeof report, "power lost at %s: %s", where, rolled);
    if (summary.shared_maps && used > 0 && (size_t)used < sizeof report)
        used += snprintf(report + used, sizeof report - (size_t)used,
                         "; pages of %s, mapped shared and writable, counted as durable", summary.shared_names);
    if (summary.failures && used > 0 && (size_t)used < sizeof report)
        snprintf(report + used, sizeof report - (size_t)used, "; %llu change%s could not be undone (%s)",
                 (unsigned long long)summary.failures, summary.failures == 1 ? "" : "s", summary.first_failure);
    fprintf(stderr, "chaos run: %s\n", report);
}

void chaos_power_lose(const struct seccomp_notif *n, const chaos_call *call, const chaos_outcome *outcome) {
    chaos_entry_counters counters;
    uint64_t index = chaos_fault_counters(outcome->entry, &counters) == 0 ? counters.last_fire_call + 1 : 0;
    const chaos_fn_info *info = chaos_fault_fn_info(call->fn);
    char where[4200];
    snprintf(where, sizeof where, "change %llu, %s of %s by process %u", (unsigned long long)index,
             info ? info->name : "a call", call->path ? call->path : "?", n->pid);
    lose_power(where, outcome->torn, chaos_fault_seed() ^ index);
}

void chaos_power_at_exit(void) {
    if (!chaos_power_active()) return;
    for (int32_t e = 0; e < chaos_fault_entry_count(); e++) {
        chaos_entry_counters counters;
        if (chaos_fault_counters(e, &counters) != 0 || !chaos_fault_power_at(e, counters.seen + 1)) continue;
        char where[160];
        snprintf(where, sizeof where, "change %llu, after the program ended (its last change was %llu)",
                 (unsigned long long)(counters.seen + 1), (unsigned long long)counters.seen);
        lose_power(where, 0, chaos_fault_seed() ^ (counters.seen + 1));
        return;
    }
}

const char *chaos_power_report(void) { return lost ? report : NULL; }
