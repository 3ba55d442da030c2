// The supervisor's memory of descriptors. Naming a descriptor costs a readlink of
// /proc/TID/fd/N (and a stat for 0–2), as much again as the trap itself; a write-heavy
// program writes to the same few descriptors all the time. So each (thread, descriptor)
// is named once and remembered until something could make the number name another file:
// the filter traps close, close_range, dup2, dup3 and exec (the only ways a number in use
// comes to name something else) and clone (the only way a thread id comes to name
// another thread), and each of them forgets everything.
//
// What this cannot see: a thread closing a descriptor while another writes to it (a race
// in the program itself), and descriptors closed by io_uring. Like the preload's table, a
// file is named as it was when first seen, so a later rename does not move it.
#define _GNU_SOURCE
#include "descriptors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "CChaosFaults.h"
#include "tracee.h"

#define SLOTS 1024 // direct-mapped; a collision only costs a second readlink

/// One remembered descriptor.
struct slot {
    uint64_t generation; ///< 0: empty
    pid_t tid;
    int fd;
    int kind; ///< as chaos_descriptors_lookup returns
    int special;
    char *path;
};

// The supervisor is one thread: this is its own.
static struct slot slots[SLOTS];
static uint64_t generation = 1;

/// The files behind `chaos run`'s own descriptors 0–2, which the program inherits.
static struct inherited {
    dev_t device;
    ino_t inode;
    int open;
} inherited[3];

void chaos_descriptors_remember_inherited(void) {
    for (int fd = 0; fd < 3; fd++) {
        struct stat info;
        inherited[fd].open = fstat(fd, &info) == 0;
        inherited[fd].device = info.st_dev;
        inherited[fd].inode = info.st_ino;
    }
}

/// Whether descriptor `fd` (0–2) of `tid` is still the file `chaos run` handed down: then,
/// as under the preload, only an entry naming its exact path reaches it. A file the
/// program itself put there (a shell's `> file`) is like any other.
static int inherited_descriptor(pid_t tid, int fd) {
    if (fd < 0 || fd > 2 || !inherited[fd].open) return 0;
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)tid, fd);
    struct stat info;
    return stat(link, &info) == 0 && info.st_dev == inherited[fd].device && info.st_ino == inherited[fd].inode;
}

void chaos_descriptors_forget(void) { generation++; }

int chaos_descriptors_lookup(pid_t tid, int fd, const char **path, int *special) {
    struct slot *slot = &slots[((uint32_t)tid * 2654435761u ^ (uint32_t)fd) % SLOTS];
    if (slot->generation == generation && slot->tid == tid && slot->fd == fd) {
        *path = slot->path;
        *special = slot->special;
        return slot->kind;
    }
    char name[4096];
    int kind = chaos_tracee_descriptor(tid, fd, name, sizeof name);
    if (kind < 0) return kind; // not open: nothing to remember
    char *copy = kind == 1 ? strdup(name) : NULL;
    if (kind == 1 && !copy) return -1;
    free(slot->path);
    *slot = (struct slot){generation, tid, fd, kind, kind == 1 && inherited_descriptor(tid, fd), copy};
    *path = slot->path;
    *special = slot->special;
    return kind;
}

int32_t chaos_descriptors_kind(pid_t tid, int fd) {
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)tid, fd);
    struct stat info;
    if (stat(link, &info) != 0 || S_ISSOCK(info.st_mode)) return 0;
    if (S_ISREG(info.st_mode) || S_ISDIR(info.st_mode)) return CHAOS_DESCRIPTOR_FILE;
    if (S_ISFIFO(info.st_mode)) return CHAOS_DESCRIPTOR_PIPE;
    if (!S_ISCHR(info.st_mode)) return CHAOS_DESCRIPTOR_OTHER;
    // A terminal: the pseudo-terminal slaves and the consoles, by their major numbers.
    unsigned major_number = major(info.st_rdev);
    return (major_number >= 136 && major_number <= 143) || major_number == 4 || major_number == 5
               ? CHAOS_DESCRIPTOR_TTY
               : CHAOS_DESCRIPTOR_OTHER;
}
