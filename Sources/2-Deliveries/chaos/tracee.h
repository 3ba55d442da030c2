// What the seccomp supervisor reads from and writes into the processes it supervises.
#ifndef CHAOS_TRACEE_H
#define CHAOS_TRACEE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Copies `length` bytes at `address` of thread `tid` into `out`; 0, or -1 when any of
/// them cannot be read.
int chaos_tracee_read(pid_t tid, uint64_t address, void *out, size_t length);

/// Writes `length` bytes of `data` to `address` of thread `tid`; 0, or -1.
int chaos_tracee_write(pid_t tid, uint64_t address, const void *data, size_t length);

/// Reads the NUL-terminated string at `address` of `tid` into `out` (at most `capacity`
/// bytes with the NUL). Returns its length, or -1 when unreadable or too long.
long chaos_tracee_string(pid_t tid, uint64_t address, char *out, size_t capacity);

/// The absolute name of `path` as thread `tid` would open it from directory descriptor
/// `dirfd` (AT_FDCWD: its working directory), with `/proc/self` and `/proc/thread-self`
/// naming the thread's own. Lexical: links are left to the engine. Length, or -1.
int chaos_tracee_path(pid_t tid, int dirfd, const char *path, char *out, size_t capacity);

/// What descriptor `fd` of `tid` is. Returns 1 and its path for a file or directory
/// (without " (deleted)"), 2 for a socket, 0 for anything else (pipes, anonymous
/// inodes), -1 when the descriptor is not open.
int chaos_tracee_descriptor(pid_t tid, int fd, char *out, size_t capacity);

/// A descriptor of this process for descriptor `fd` of thread `tid`: the same open file
/// (offsets move for both, an epoll set's readiness is the program's); -1 when it cannot
/// be had. The caller closes it.
int chaos_tracee_borrow(pid_t tid, int fd);

/// At the exec stop of `pid` (ptrace): where the vDSO is mapped (AT_SYSINFO_EHDR). 1 with
/// its address in `*base`, 0 when the program has none, -1 when the stack cannot be read.
int chaos_tracee_vdso_base(pid_t pid, uint64_t *base);

/// At the exec stop of `pid` (ptrace): turns AT_SYSINFO_EHDR in the new program's
/// auxiliary vector into AT_IGNORE, so that it finds no vDSO and reads its clocks with
/// system calls. 1 when it was there, 0 when it was not, -1 when the stack cannot be read.
int chaos_tracee_hide_vdso(pid_t pid);

#endif
