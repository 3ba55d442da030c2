// Reading and writing the memory of supervised threads (process_vm_readv/writev: one
// system call each, no ptrace stop), naming their paths and descriptors through /proc,
// and hiding the vDSO from a program at its exec stop.
#define _GNU_SOURCE
#include "tracee.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#if defined(__aarch64__)
#include <linux/elf.h>
#endif

int chaos_tracee_read(pid_t tid, uint64_t address, void *out, size_t length) {
    struct iovec local = {out, length}, remote = {(void *)(uintptr_t)address, length};
    return process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)length ? 0 : -1;
}

int chaos_tracee_write(pid_t tid, uint64_t address, const void *data, size_t length) {
    struct iovec local = {(void *)data, length}, remote = {(void *)(uintptr_t)address, length};
    return process_vm_writev(tid, &local, 1, &remote, 1, 0) == (ssize_t)length ? 0 : -1;
}

long chaos_tracee_string(pid_t tid, uint64_t address, char *out, size_t capacity) {
    // Page by page: a string that ends just before an unmapped page is still read whole.
    size_t used = 0;
    while (used < capacity) {
        uint64_t at = address + used;
        size_t chunk = 4096 - (size_t)(at & 4095);
        if (chunk > capacity - used) chunk = capacity - used;
        if (chaos_tracee_read(tid, at, out + used, chunk) != 0) return -1;
        char *end = memchr(out + used, 0, chunk);
        if (end) return end - out;
        used += chunk;
    }
    return -1;
}

/// readlink of /proc/TID/NAME into `out` (NUL-terminated); length or -1.
static int proc_link(pid_t tid, const char *name, char *out, size_t capacity) {
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/%s", (int)tid, name);
    ssize_t length = readlink(link, out, capacity - 1);
    if (length < 0 || (size_t)length >= capacity - 1) return -1;
    out[length] = 0;
    return (int)length;
}

int chaos_tracee_path(pid_t tid, int dirfd, const char *path, char *out, size_t capacity) {
    static const char self[] = "/proc/self", thread_self[] = "/proc/thread-self";
    size_t self_length = sizeof self - 1, thread_length = sizeof thread_self - 1;
    if (path[0] == '/') {
        // The thread's own /proc names its own process, not the supervisor.
        const char *rest = NULL;
        if (strncmp(path, self, self_length) == 0 && (!path[self_length] || path[self_length] == '/'))
            rest = path + self_length;
        else if (strncmp(path, thread_self, thread_length) == 0 && (!path[thread_length] || path[thread_length] == '/'))
            rest = path + thread_length;
        int written =
            rest ? snprintf(out, capacity, "/proc/%d%s", (int)tid, rest) : snprintf(out, capacity, "%s", path);
        return written >= 0 && (size_t)written < capacity ? written : -1;
    }
    char base[4096];
    char name[32];
    if (dirfd == AT_FDCWD)
        snprintf(name, sizeof name, "cwd");
    else
        snprintf(name, sizeof name, "fd/%d", dirfd);
    if (proc_link(tid, name, base, sizeof base) < 0 || base[0] != '/') return -1;
    int written = snprintf(out, capacity, "%s%s%s", base, strcmp(base, "/") == 0 ? "" : "/", path);
    return written >= 0 && (size_t)written < capacity ? written : -1;
}

int chaos_tracee_descriptor(pid_t tid, int fd, char *out, size_t capacity) {
    char name[32];
    snprintf(name, sizeof name, "fd/%d", fd);
    int length = proc_link(tid, name, out, capacity);
    if (length < 0) return -1;
    if (out[0] == '/') {
        static const char deleted[] = " (deleted)";
        size_t suffix = sizeof deleted - 1;
        if ((size_t)length > suffix && strcmp(out + length - suffix, deleted) == 0) out[length - suffix] = 0;
        return 1;
    }
    return strncmp(out, "socket:", 7) == 0 ? 2 : 0;
}

/// The stack pointer of a ptrace-stopped `pid`; 0 when it cannot be read.
static uint64_t stack_pointer(pid_t pid) {
#if defined(__x86_64__)
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0) return 0;
    return regs.rsp;
#elif defined(__aarch64__)
    struct user_pt_regs regs;
    struct iovec io = {&regs, sizeof regs};
    if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &io) != 0) return 0;
    return regs.sp;
#else
    (void)pid;
    return 0;
#endif
}

/// Finds the auxiliary vector's pair of `type` in ptrace-stopped `pid` at its exec stop:
/// 1 with the pair's address in `*at`, 0 when there is none, -1 when the stack cannot be read.
static int auxv_find(pid_t pid, uint64_t type, uint64_t *at_pair) {
    // At the exec stop the new stack holds argc, argv…NULL, envp…NULL, then the auxiliary
    // vector's (type, value) pairs up to AT_NULL.
    uint64_t at = stack_pointer(pid);
    if (!at) return -1;
    uint64_t word;
    if (chaos_tracee_read(pid, at, &word, sizeof word) != 0) return -1;
    at += (word + 2) * sizeof word; // argc, its pointers and their NULL
    for (int i = 0; i < 1 << 16; i++, at += sizeof word) {
        if (chaos_tracee_read(pid, at, &word, sizeof word) != 0) return -1;
        if (!word) break;
    }
    at += sizeof word;
    for (int i = 0; i < 256; i++, at += 2 * sizeof word) {
        uint64_t pair[2];
        if (chaos_tracee_read(pid, at, pair, sizeof pair) != 0) return -1;
        if (pair[0] == AT_NULL) return 0;
        if (pair[0] != type) continue;
        *at_pair = at;
        return 1;
    }
    return -1;
}

int chaos_tracee_vdso_base(pid_t pid, uint64_t *base) {
    uint64_t at, pair[2];
    int found = auxv_find(pid, AT_SYSINFO_EHDR, &at);
    if (found <= 0) return found;
    if (chaos_tracee_read(pid, at, pair, sizeof pair) != 0) return -1;
    *base = pair[1];
    return pair[1] ? 1 : 0;
}

int chaos_tracee_hide_vdso(pid_t pid) {
    uint64_t at;
    int found = auxv_find(pid, AT_SYSINFO_EHDR, &at);
    if (found <= 0) return found;
    uint64_t ignore = AT_IGNORE;
    // The stack may be mapped without write access for process_vm_writev's view;
    // ptrace writes through it.
    if (chaos_tracee_write(pid, at, &ignore, sizeof ignore) != 0 &&
        ptrace(PTRACE_POKEDATA, pid, (void *)(uintptr_t)at, (void *)(uintptr_t)ignore) != 0)
        return -1;
    return 1;
}

int chaos_tracee_borrow(pid_t tid, int fd) {
    int pidfd = (int)syscall(SYS_pidfd_open, tid, O_EXCL /* PIDFD_THREAD */);
    if (pidfd < 0) pidfd = (int)syscall(SYS_pidfd_open, tid, 0);
    if (pidfd < 0) return -1;
    int copy = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    close(pidfd);
    return copy;
}
