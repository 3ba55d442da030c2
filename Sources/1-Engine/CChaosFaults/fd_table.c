// The descriptor table: what each descriptor number is (a file and its physical path, a
// socket and its family and role, something else), remembered when it is opened so that
// reads and writes decide without asking the kernel, and the verdict chaos_fast_fd.h reads
// inline. Entries are tagged with a generation, so a new plan starts from a fresh table.
#define _GNU_SOURCE
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

typedef cf_fd_slot fd_slot;

// Each chunk is installed once, by compare-and-swap, and never freed; its slots are atomics
// written by whichever thread opens, closes or probes that descriptor.
_Atomic(cf_fd_slot *) cf_fd_chunks[CF_FD_CHUNKS];
// 0: not tracking. Written only by cf_fd_tracking_set, under engine.c's install lock.
_Atomic uint64_t cf_fd_generation;
#define chunks cf_fd_chunks
#define table_generation cf_fd_generation
#define FD_CHUNK CF_FD_CHUNK
#define FD_CHUNKS CF_FD_CHUNKS
// The last generation handed out; under engine.c's install lock (cf_fd_tracking_set).
static uint64_t next_generation;

// Retired path strings, freed after a grace period: retired and retired_count are under
// retire_lock, a spin lock (the table is used from signal handlers, so no mutex).
static _Atomic int retire_lock;
static char *retired[64];
static int retired_count;

// This thread is inside retire (per thread: nothing guards it).
static _Thread_local int retiring __attribute__((tls_model("initial-exec")));

static void retire(char *path) {
    if (!path) return;
    // A signal handler that closes a descriptor while its thread is inside a read section
    // or this function must not wait for itself: the string is then left unfreed.
    if (retiring || cf_section_depth > 0) return;
    retiring = 1;
    cf_spin_lock(&retire_lock);
    if (retired_count == (int)(sizeof retired / sizeof retired[0])) {
        cf_synchronize();
        for (int i = 0; i < retired_count; i++) free(retired[i]);
        retired_count = 0;
    }
    retired[retired_count++] = path;
    cf_spin_unlock(&retire_lock);
    retiring = 0;
}

static fd_slot *slot(int fd, bool create) {
    if (fd < 0 || fd >= FD_CHUNK * FD_CHUNKS) return NULL;
    _Atomic(fd_slot *) *holder = &chunks[fd / FD_CHUNK];
    fd_slot *chunk = atomic_load_explicit(holder, memory_order_acquire);
    if (!chunk) {
        if (!create) return NULL;
        void *made = mmap(NULL, sizeof(fd_slot) * FD_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (made == MAP_FAILED) return NULL;
        fd_slot *expected = NULL;
        if (atomic_compare_exchange_strong(holder, &expected, (fd_slot *)made)) {
            chunk = made;
        } else {
            munmap(made, sizeof(fd_slot) * FD_CHUNK);
            chunk = expected;
        }
    }
    return &chunk[fd % FD_CHUNK];
}

void cf_fd_tracking_set(bool on) {
    // A new plan starts from a fresh table: what was recorded under the last one (or while
    // nothing was followed) is looked up again on first use.
    if (on) {
        atomic_store(&table_generation, ++next_generation);
    } else {
        atomic_store(&table_generation, 0);
    }
}

int chaos_fd_tracking(void) { return atomic_load_explicit(&table_generation, memory_order_relaxed) != 0; }

static void store(int fd, int kind, int family, int role, int special, const char *path) {
    uint64_t generation = atomic_load_explicit(&table_generation, memory_order_acquire);
    if (generation == 0) return;
    fd_slot *s = slot(fd, true);
    if (!s) return;
    char *copy = path ? strdup(path) : NULL;
    atomic_store_explicit(&s->generation, 0, memory_order_release);
    atomic_store_explicit(&s->verdict, 0, memory_order_relaxed);
    atomic_store_explicit(&s->info,
                          (uint32_t)kind | (uint32_t)family << 8 | (uint32_t)role << 16 | (uint32_t)special << 24,
                          memory_order_relaxed);
    char *old = atomic_exchange_explicit(&s->path, copy, memory_order_acq_rel);
    atomic_store_explicit(&s->generation, generation, memory_order_release);
    retire(old);
}

void chaos_fd_opened(int fd, int kind, const char *path) {
    if (fd < 0 || !chaos_fd_tracking()) return;
    if (kind == CHAOS_FD_FILE && (!path || path[0] != '/')) kind = CHAOS_FD_UNKNOWN;
    if (kind == CHAOS_FD_UNKNOWN) { // looked up again on first use
        fd_slot *s = slot(fd, false);
        if (s) {
            atomic_store_explicit(&s->generation, 0, memory_order_release);
            retire(atomic_exchange(&s->path, NULL));
        }
        return;
    }
    store(fd, kind, 0, 0, kind == CHAOS_FD_FILE && cf_special_path(path), kind == CHAOS_FD_FILE ? path : NULL);
}

void chaos_fd_socket(int fd, int family, int role) {
    if (fd < 0 || !chaos_fd_tracking()) return;
    store(fd, CHAOS_FD_SOCKET, family, role, 0, NULL);
}

void chaos_fd_set_role(int fd, int role) {
    if (fd < 0 || !chaos_fd_tracking()) return;
    fd_slot *s = slot(fd, false);
    if (!s || atomic_load(&s->generation) != atomic_load(&table_generation)) return;
    uint32_t info = atomic_load(&s->info);
    if ((info & 0xff) != CHAOS_FD_SOCKET) return;
    atomic_store(&s->info, (info & ~0xff0000u) | (uint32_t)role << 16);
}

void chaos_fd_closed(int fd) {
    if (fd < 0 || !chaos_fd_tracking()) return;
    fd_slot *s = slot(fd, false);
    if (!s) return;
    atomic_store_explicit(&s->generation, 0, memory_order_release);
    retire(atomic_exchange(&s->path, NULL));
}

void chaos_fd_duplicated(int oldfd, int newfd) {
    if (oldfd < 0 || newfd < 0 || oldfd == newfd || !chaos_fd_tracking()) return;
    char path[4096];
    int special = 0, family = 0, role = 0;
    int kind = chaos_fd_lookup(oldfd, path, sizeof path, &special, &family, &role);
    if (kind == CHAOS_FD_UNKNOWN) {
        chaos_fd_closed(newfd); // looked up again on first use
        return;
    }
    store(newfd, kind, family, role, special, kind == CHAOS_FD_FILE ? path : NULL);
}

/// The files `chaos run` handed its program as descriptors 0–2 (chaos_fd_handed_down): set
/// once, before the plan is installed.
static struct {
    bool known;
    uint64_t device, inode;
} handed_down[3];

void chaos_fd_handed_down(int fd, uint64_t device, uint64_t inode) {
    if (fd < 0 || fd > 2) return;
    handed_down[fd].known = true;
    handed_down[fd].device = device;
    handed_down[fd].inode = inode;
}

/// Whether descriptor `fd` (0–2) is still what the tool's caller handed down: its terminal
/// or the redirection of the whole run, which no entry takes by accident.
static bool still_handed_down(int fd) {
    if (!handed_down[fd].known) return true;
    struct stat info;
    if (syscall(SYS_fstat, fd, &info) != 0) return true;
    return handed_down[fd].device != 0 && (uint64_t)info.st_dev == handed_down[fd].device &&
           (uint64_t)info.st_ino == handed_down[fd].inode;
}

/// Looks `fd` up in /proc/self/fd (not in the table).
static int probe(int fd, char *path, size_t capacity, int *special, int *family, int *role) {
    char link[4096];
    *special = 0;
    *family = 0;
    *role = CHAOS_ROLE_OTHER;
    if (path && capacity) path[0] = 0;
    if (cf_raw_readlink_fd(fd, link, sizeof link) < 0) return CHAOS_FD_UNKNOWN;
    if (link[0] == '/') {
        size_t n = strlen(link);
        if (n > 10 && strcmp(link + n - 10, " (deleted)") == 0) link[n - 10] = 0;
        *special = cf_special_path(link) || (fd <= 2 && still_handed_down(fd));
        if (path) {
            if (strlen(link) + 1 > capacity) return CHAOS_FD_UNKNOWN;
            strcpy(path, link);
        }
        return CHAOS_FD_FILE;
    }
    if (strncmp(link, "socket:", 7) == 0) {
        int domain = 0;
        socklen_t length = sizeof domain;
        if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0) {
            *family = domain == AF_INET    ? CHAOS_FAMILY_INET
                      : domain == AF_INET6 ? CHAOS_FAMILY_INET6
                      : domain == AF_UNIX  ? CHAOS_FAMILY_UNIX
                                           : CHAOS_FAMILY_OTHER;
        } else {
            *family = CHAOS_FAMILY_OTHER;
        }
        return CHAOS_FD_SOCKET;
    }
    return CHAOS_FD_OTHER;
}

int chaos_fd_lookup(int fd, char *path, size_t capacity, int *special, int *family, int *role) {
    int ignored_special, ignored_family, ignored_role;
    if (!special) special = &ignored_special;
    if (!family) family = &ignored_family;
    if (!role) role = &ignored_role;
    if (fd < 0) return CHAOS_FD_UNKNOWN;
    uint64_t generation = atomic_load_explicit(&table_generation, memory_order_acquire);
    fd_slot *s = generation ? slot(fd, false) : NULL;
    if (s && atomic_load_explicit(&s->generation, memory_order_acquire) == generation) {
        unsigned parity = cf_read_enter();
        uint32_t info = atomic_load_explicit(&s->info, memory_order_relaxed);
        char *stored = atomic_load_explicit(&s->path, memory_order_acquire);
        int kind = (int)(info & 0xff);
        bool fits = true;
        if (path && capacity) {
            path[0] = 0;
            if (stored) {
                size_t n = strlen(stored);
                if (n + 1 <= capacity)
                    memcpy(path, stored, n + 1);
                else
                    fits = false;
            }
        }
        bool still = atomic_load_explicit(&s->generation, memory_order_acquire) == generation;
        cf_read_leave(parity);
        if (still && fits && (kind != CHAOS_FD_FILE || stored)) {
            *family = (int)(info >> 8 & 0xff);
            *role = (int)(info >> 16 & 0xff);
            *special = (int)(info >> 24 & 0xff);
            return kind;
        }
    }
    char local[4096];
    int kind = probe(fd, local, sizeof local, special, family, role);
    if (path && capacity) {
        if (strlen(local) + 1 > capacity) return CHAOS_FD_UNKNOWN;
        strcpy(path, local);
    }
    if (generation && kind != CHAOS_FD_UNKNOWN)
        store(fd, kind, *family, *role, *special, kind == CHAOS_FD_FILE ? local : NULL);
    return kind;
}

void cf_fd_set_verdict(int fd, uint64_t plan_generation, int relevant) {
    uint64_t generation = atomic_load_explicit(&table_generation, memory_order_acquire);
    fd_slot *s = generation ? slot(fd, false) : NULL;
    if (!s || atomic_load_explicit(&s->generation, memory_order_acquire) != generation) return;
    atomic_store_explicit(&s->verdict, plan_generation << 1 | (uint64_t)(relevant != 0), memory_order_relaxed);
}

int32_t chaos_descriptor_kind(int fd) {
    struct stat info;
    if (fd < 0 || syscall(SYS_fstat, fd, &info) != 0) return 0;
    if (S_ISREG(info.st_mode) || S_ISDIR(info.st_mode)) return CHAOS_DESCRIPTOR_FILE;
    if (S_ISFIFO(info.st_mode)) return CHAOS_DESCRIPTOR_PIPE;
    if (S_ISSOCK(info.st_mode)) return 0;
    struct termios terminal;
    if (S_ISCHR(info.st_mode) && syscall(SYS_ioctl, fd, TCGETS, &terminal) == 0) return CHAOS_DESCRIPTOR_TTY;
    return CHAOS_DESCRIPTOR_OTHER;
}
