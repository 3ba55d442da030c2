// Interposition library for `chaos run` (LD_PRELOAD): a thin layer over CChaosFaults.
//
// Each interposed function describes its call to the engine (chaos_fault_decide) and
// executes the outcome: wait, then call the real function, fail with the errno the plan
// names, shorten the transfer, or report a shifted time. With no plan entry for a point,
// its functions cost one atomic load and a branch on top of the real call.
//
// The plan comes from the environment, read once in the constructor:
//   CHAOS_PLAN        path of a plan file (Docs/FaultPlan.md)
//   CHAOS_PLAN_TEXT   the plan itself (wins over CHAOS_PLAN)
//   CHAOS_CLOCK_ANCHOR  real ns since 1970 that `speed anchor=start` scales from; set by
//                     the first process of a tree that needs it and inherited by children,
//                     so a process tree shares one clock.
//   CHAOS_PRELOAD_*   the older variables of `chaos run`, translated into a plan (see
//                     legacy_plan below) while the tool still writes them.
// A plan that does not parse stops the program before main with exit status 125 and the
// located error on stderr: running it without the chaos it asked for would mislead.
//
// Real functions come from dlsym(RTLD_NEXT), resolved on first use, never from a GOT slot.
// Calls made before the constructor (other libraries' constructors) go straight to the
// real function; so do calls made while dlsym itself runs (a thread-local guard).
#define _GNU_SOURCE
// glibc defines some stdio functions inline when optimizing; this file defines them.
#define __NO_INLINE__ 1
#include "chaos_preload.h"

#if defined(__linux__)

#include "CChaosFaults.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timeb.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

// Some of these are macros in glibc's headers when optimizing; we define the functions.
#undef fwrite_unlocked
#undef fread_unlocked
#undef fputc_unlocked
#undef putc_unlocked
#undef putc
#undef putchar

#define EXPORT __attribute__((visibility("default")))

// MARK: - Real functions

static __thread int resolving __attribute__((tls_model("initial-exec")));

static void *resolve(_Atomic(void *) *slot, const char *name) {
    void *function = atomic_load_explicit(slot, memory_order_acquire);
    if (function) return function;
    if (resolving) return NULL;
    resolving = 1;
    function = dlsym(RTLD_NEXT, name);
    resolving = 0;
    if (function) atomic_store_explicit(slot, function, memory_order_release);
    return function;
}

#define SLOT(name) static _Atomic(void *) real_slot_##name
#define REAL_AS(type, name) ((type)resolve(&real_slot_##name, #name))
#define REAL(name) REAL_AS(__typeof__(&name), name)
/// Calls the real `name` or fails with ENOSYS when it cannot be had (inside dlsym).
#define CALL_REAL(fail_value, name, ...)                                      \
    do {                                                                      \
        __typeof__(&name) real_ = REAL(name);                                 \
        if (!real_) { errno = ENOSYS; return fail_value; }                    \
        return real_(__VA_ARGS__);                                            \
    } while (0)

static _Atomic unsigned long chaotic_calls;

EXPORT unsigned long chaos_preload_chaotic_calls(void) { return atomic_load(&chaotic_calls); }

static int active(int point) { return (chaos_fault_active_points() >> point) & 1; }

#define FD_POINTS (1u << CHAOS_POINT_FILES | 1u << CHAOS_POINT_SEND | 1u << CHAOS_POINT_RECV)

SLOT(nanosleep);
SLOT(clock_gettime);

static int64_t real_ns(clockid_t clock) {
    int (*real)(clockid_t, struct timespec *) = REAL_AS(int (*)(clockid_t, struct timespec *), clock_gettime);
    struct timespec now;
    if (!real || real(clock, &now) != 0) {
        if (syscall(SYS_clock_gettime, clock, &now) != 0) return 0;
    }
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void wait_ns(int64_t nanoseconds) {
    if (nanoseconds <= 0) return;
    int (*real)(const struct timespec *, struct timespec *) = REAL_AS(int (*)(const struct timespec *, struct timespec *), nanosleep);
    struct timespec delay = {(time_t)(nanoseconds / 1000000000), (long)(nanoseconds % 1000000000)};
    int saved = errno;
    while ((real ? real(&delay, &delay) : (int)syscall(SYS_nanosleep, &delay, &delay)) != 0 && errno == EINTR) {}
    errno = saved;
}

// MARK: - Deciding

/// Asks the engine; counts and waits. Returns 1 when the action is not a plain original.
static int decide(chaos_call *call, chaos_outcome *out) {
    if (!chaos_fault_decide(call, out)) return 0;
    if (out->action == CHAOS_ACT_ASK) out->action = CHAOS_ACT_ORIGINAL; // nobody to ask here
    atomic_fetch_add_explicit(&chaotic_calls, 1, memory_order_relaxed);
    wait_ns(out->delay_ns);
    return out->action != CHAOS_ACT_ORIGINAL;
}

/// A call on a descriptor: a file (files point, `file_fn`) or a socket (send/recv point,
/// `socket_fn`). Returns 1 when the outcome has an action.
static int decide_fd(int fd, int32_t file_fn, int32_t socket_point, int32_t socket_fn, chaos_outcome *out) {
    if (resolving || !chaos_fault_decide_fd(fd, file_fn, socket_point, socket_fn, out)) return 0;
    if (out->action == CHAOS_ACT_ASK) out->action = CHAOS_ACT_ORIGINAL;
    atomic_fetch_add_explicit(&chaotic_calls, 1, memory_order_relaxed);
    wait_ns(out->delay_ns);
    return out->action != CHAOS_ACT_ORIGINAL;
}

/// A call naming a path (relative to `dirfd`).
static int decide_path(int32_t fn, int dirfd, const char *path, int dirfd2, const char *path2, chaos_outcome *out) {
    if (!active(CHAOS_POINT_FILES) || resolving || !path) return 0;
    char resolved[4096], resolved2[4096];
    if (chaos_path_resolve(dirfd, path, resolved, sizeof resolved) < 0) return 0;
    chaos_call call = {0};
    call.point = CHAOS_POINT_FILES;
    call.fn = fn;
    call.fd = -1;
    call.path = resolved;
    if (path2 && chaos_path_resolve(dirfd2, path2, resolved2, sizeof resolved2) >= 0) call.path2 = resolved2;
    return decide(&call, out);
}

static size_t shortened(const chaos_outcome *o, size_t count) {
    if (o->max_bytes > 0) return count < (size_t)o->max_bytes ? count : (size_t)o->max_bytes;
    return count > 1 ? count / 2 : count;
}

/// The first iovecs of `iov` covering at most `limit` bytes (the last one cut).
static int shorten_iov(const struct iovec *iov, int count, size_t limit, struct iovec *out) {
    int used = 0;
    for (int i = 0; i < count && limit > 0; i++) {
        out[used] = iov[i];
        if (out[used].iov_len > limit) out[used].iov_len = limit;
        limit -= out[used].iov_len;
        used++;
    }
    return used ? used : (count > 0 ? (out[0] = iov[0], out[0].iov_len = 0, 1) : 0);
}

static size_t iov_total(const struct iovec *iov, int count) {
    size_t total = 0;
    for (int i = 0; i < count; i++) total += iov[i].iov_len;
    return total;
}

/// Records a descriptor just opened on `path` (relative to `dirfd`).
static void opened(int fd, int dirfd, const char *path) {
    if (fd < 0 || !chaos_fd_tracking()) return;
    char resolved[4096];
    if (path && active(CHAOS_POINT_FILES) && chaos_path_resolve(dirfd, path, resolved, sizeof resolved) >= 0)
        chaos_fd_opened(fd, CHAOS_FD_FILE, resolved);
    else
        chaos_fd_opened(fd, CHAOS_FD_UNKNOWN, NULL);
}

// MARK: - open, creat

SLOT(open); SLOT(open64); SLOT(openat); SLOT(openat64); SLOT(creat); SLOT(creat64);

static mode_t mode_argument(int flags, va_list list) {
    // The mode argument exists with O_CREAT or O_TMPFILE (whose bits include O_DIRECTORY).
    return ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) ? (mode_t)va_arg(list, int) : 0;
}

#define OPEN_BODY(symbol, fn, dirfd, path, call)                                     \
    chaos_outcome o;                                                                 \
    if (decide_path(fn, dirfd, path, AT_FDCWD, NULL, &o) && o.action == CHAOS_ACT_FAIL) { \
        errno = o.err;                                                               \
        return -1;                                                                   \
    }                                                                                \
    __typeof__(&symbol) real = REAL(symbol);                                         \
    if (!real) { errno = ENOSYS; return -1; }                                        \
    int fd = call;                                                                   \
    if (fd >= 0) { int saved = errno; opened(fd, dirfd, path); errno = saved; }      \
    return fd;

EXPORT int open(const char *path, int flags, ...) {
    va_list list;
    va_start(list, flags);
    mode_t mode = mode_argument(flags, list);
    va_end(list);
    OPEN_BODY(open, CHAOS_FN_OPEN, AT_FDCWD, path, real(path, flags, mode))
}

EXPORT int open64(const char *path, int flags, ...) {
    va_list list;
    va_start(list, flags);
    mode_t mode = mode_argument(flags, list);
    va_end(list);
    OPEN_BODY(open64, CHAOS_FN_OPEN, AT_FDCWD, path, real(path, flags, mode))
}

EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    va_list list;
    va_start(list, flags);
    mode_t mode = mode_argument(flags, list);
    va_end(list);
    OPEN_BODY(openat, CHAOS_FN_OPENAT, dirfd, path, real(dirfd, path, flags, mode))
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    va_list list;
    va_start(list, flags);
    mode_t mode = mode_argument(flags, list);
    va_end(list);
    OPEN_BODY(openat64, CHAOS_FN_OPENAT, dirfd, path, real(dirfd, path, flags, mode))
}

EXPORT int creat(const char *path, mode_t mode) { OPEN_BODY(creat, CHAOS_FN_CREAT, AT_FDCWD, path, real(path, mode)) }

EXPORT int creat64(const char *path, mode_t mode) { OPEN_BODY(creat64, CHAOS_FN_CREAT, AT_FDCWD, path, real(path, mode)) }

// MARK: - read, write

SLOT(read); SLOT(pread); SLOT(pread64); SLOT(readv); SLOT(preadv); SLOT(preadv64); SLOT(preadv2); SLOT(preadv64v2);
SLOT(write); SLOT(pwrite); SLOT(pwrite64); SLOT(writev); SLOT(pwritev); SLOT(pwritev64); SLOT(pwritev2); SLOT(pwritev64v2);

/// Reads/writes of a byte count: fail, or call with the count cut.
#define TRANSFER(symbol, file_fn, socket_point, socket_fn, fd, count, ...)                \
    chaos_outcome o;                                                                      \
    if (decide_fd(fd, file_fn, socket_point, socket_fn, &o)) {                            \
        if (o.action == CHAOS_ACT_FAIL) { errno = o.err; return -1; }                     \
        if (o.action == CHAOS_ACT_SHORT) count = shortened(&o, count);                    \
    }                                                                                     \
    CALL_REAL(-1, symbol, __VA_ARGS__);

EXPORT ssize_t read(int fd, void *buffer, size_t count) {
    TRANSFER(read, CHAOS_FN_READ, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, fd, count, fd, buffer, count)
}
EXPORT ssize_t pread(int fd, void *buffer, size_t count, off_t offset) {
    TRANSFER(pread, CHAOS_FN_PREAD, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, fd, count, fd, buffer, count, offset)
}
EXPORT ssize_t pread64(int fd, void *buffer, size_t count, off64_t offset) {
    TRANSFER(pread64, CHAOS_FN_PREAD, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, fd, count, fd, buffer, count, offset)
}
EXPORT ssize_t write(int fd, const void *buffer, size_t count) {
    TRANSFER(write, CHAOS_FN_WRITE, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, fd, count, fd, buffer, count)
}
EXPORT ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    TRANSFER(pwrite, CHAOS_FN_PWRITE, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, fd, count, fd, buffer, count, offset)
}
EXPORT ssize_t pwrite64(int fd, const void *buffer, size_t count, off64_t offset) {
    TRANSFER(pwrite64, CHAOS_FN_PWRITE, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, fd, count, fd, buffer, count, offset)
}

/// Vectored reads/writes: fail, or call with the vector cut to the byte limit.
#define VECTORED(symbol, file_fn, socket_point, socket_fn, fd, iov, iovcnt, ...)          \
    chaos_outcome o;                                                                      \
    struct iovec cut[iovcnt > 0 && iovcnt <= 1024 ? iovcnt : 1];                          \
    if (decide_fd(fd, file_fn, socket_point, socket_fn, &o)) {                            \
        if (o.action == CHAOS_ACT_FAIL) { errno = o.err; return -1; }                     \
        if (o.action == CHAOS_ACT_SHORT && iovcnt > 0 && iovcnt <= 1024) {                \
            iovcnt = shorten_iov(iov, iovcnt, shortened(&o, iov_total(iov, iovcnt)), cut); \
            iov = cut;                                                                    \
        }                                                                                 \
    }                                                                                     \
    CALL_REAL(-1, symbol, __VA_ARGS__);

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt) {
    VECTORED(readv, CHAOS_FN_READV, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, fd, iov, iovcnt, fd, iov, iovcnt)
}
EXPORT ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    VECTORED(preadv, CHAOS_FN_PREADV, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, fd, iov, iovcnt, fd, iov, iovcnt, offset)
}
EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int iovcnt, off64_t offset) {
    VECTORED(preadv64, CHAOS_FN_PREADV, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, fd, iov, iovcnt, fd, iov, iovcnt, offset)
}
EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags) {
    VECTORED(preadv2, CHAOS_FN_PREADV, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, fd, iov, iovcnt, fd, iov, iovcnt, offset, flags)
}
EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int iovcnt, off64_t offset, int flags) {
    VECTORED(preadv64v2, CHAOS_FN_PREADV, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, fd, iov, iovcnt, fd, iov, iovcnt, offset, flags)
}
EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    VECTORED(writev, CHAOS_FN_WRITEV, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, fd, iov, iovcnt, fd, iov, iovcnt)
}
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    VECTORED(pwritev, CHAOS_FN_PWRITEV, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, fd, iov, iovcnt, fd, iov, iovcnt, offset)
}
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off64_t offset) {
    VECTORED(pwritev64, CHAOS_FN_PWRITEV, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, fd, iov, iovcnt, fd, iov, iovcnt, offset)
}
EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags) {
    VECTORED(pwritev2, CHAOS_FN_PWRITEV, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, fd, iov, iovcnt, fd, iov, iovcnt, offset, flags)
}
EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off64_t offset, int flags) {
    VECTORED(pwritev64v2, CHAOS_FN_PWRITEV, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, fd, iov, iovcnt, fd, iov, iovcnt, offset, flags)
}

// MARK: - copy_file_range, sendfile

SLOT(copy_file_range); SLOT(sendfile); SLOT(sendfile64);

/// The target side is a write (or a send on a socket), the source side a read.
#define COPY(symbol, fn, in, out, count, ...)                                             \
    chaos_outcome o;                                                                      \
    if (decide_fd(out, fn, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, &o) ||                \
        decide_fd(in, CHAOS_FN_PREAD, CHAOS_POINT_RECV, CHAOS_FN_SOCKET_READ, &o)) {      \
        if (o.action == CHAOS_ACT_FAIL) { errno = o.err; return -1; }                     \
        if (o.action == CHAOS_ACT_SHORT) count = shortened(&o, count);                    \
    }                                                                                     \
    CALL_REAL(-1, symbol, __VA_ARGS__);

EXPORT ssize_t copy_file_range(int in, off64_t *in_offset, int out, off64_t *out_offset, size_t count, unsigned int flags) {
    COPY(copy_file_range, CHAOS_FN_COPY_FILE_RANGE, in, out, count, in, in_offset, out, out_offset, count, flags)
}
EXPORT ssize_t sendfile(int out, int in, off_t *offset, size_t count) {
    COPY(sendfile, CHAOS_FN_SENDFILE, in, out, count, out, in, offset, count)
}
EXPORT ssize_t sendfile64(int out, int in, off64_t *offset, size_t count) {
    COPY(sendfile64, CHAOS_FN_SENDFILE, in, out, count, out, in, offset, count)
}

// MARK: - sync, truncate, allocate

SLOT(fsync); SLOT(fdatasync); SLOT(sync_file_range); SLOT(ftruncate); SLOT(ftruncate64);
SLOT(fallocate); SLOT(fallocate64); SLOT(posix_fallocate); SLOT(posix_fallocate64);

#define FD_CALL(symbol, fn, fd, ...)                                                      \
    chaos_outcome o;                                                                      \
    if (decide_fd(fd, fn, -1, 0, &o) && o.action == CHAOS_ACT_FAIL) {                     \
        errno = o.err;                                                                    \
        return -1;                                                                        \
    }                                                                                     \
    CALL_REAL(-1, symbol, __VA_ARGS__);

EXPORT int fsync(int fd) { FD_CALL(fsync, CHAOS_FN_FSYNC, fd, fd) }
EXPORT int fdatasync(int fd) { FD_CALL(fdatasync, CHAOS_FN_FDATASYNC, fd, fd) }
EXPORT int sync_file_range(int fd, off64_t offset, off64_t count, unsigned int flags) {
    FD_CALL(sync_file_range, CHAOS_FN_SYNC_FILE_RANGE, fd, fd, offset, count, flags)
}
EXPORT int ftruncate(int fd, off_t length) { FD_CALL(ftruncate, CHAOS_FN_FTRUNCATE, fd, fd, length) }
EXPORT int ftruncate64(int fd, off64_t length) { FD_CALL(ftruncate64, CHAOS_FN_FTRUNCATE, fd, fd, length) }
EXPORT int fallocate(int fd, int mode, off_t offset, off_t length) { FD_CALL(fallocate, CHAOS_FN_FALLOCATE, fd, fd, mode, offset, length) }
EXPORT int fallocate64(int fd, int mode, off64_t offset, off64_t length) {
    FD_CALL(fallocate64, CHAOS_FN_FALLOCATE, fd, fd, mode, offset, length)
}

// posix_fallocate returns the error number and leaves errno alone.
EXPORT int posix_fallocate(int fd, off_t offset, off_t length) {
    chaos_outcome o;
    if (decide_fd(fd, CHAOS_FN_POSIX_FALLOCATE, -1, 0, &o) && o.action == CHAOS_ACT_FAIL) return o.err;
    __typeof__(&posix_fallocate) real = REAL(posix_fallocate);
    return real ? real(fd, offset, length) : ENOSYS;
}
EXPORT int posix_fallocate64(int fd, off64_t offset, off64_t length) {
    chaos_outcome o;
    if (decide_fd(fd, CHAOS_FN_POSIX_FALLOCATE, -1, 0, &o) && o.action == CHAOS_ACT_FAIL) return o.err;
    __typeof__(&posix_fallocate64) real = REAL(posix_fallocate64);
    return real ? real(fd, offset, length) : ENOSYS;
}

// MARK: - rename, unlink, mkdir

SLOT(rename); SLOT(renameat); SLOT(renameat2); SLOT(unlink); SLOT(unlinkat); SLOT(rmdir); SLOT(mkdir); SLOT(mkdirat);

#define PATH_CALL(symbol, fn, dirfd, path, dirfd2, path2, ...)                            \
    chaos_outcome o;                                                                      \
    if (decide_path(fn, dirfd, path, dirfd2, path2, &o) && o.action == CHAOS_ACT_FAIL) {  \
        errno = o.err;                                                                    \
        return -1;                                                                        \
    }                                                                                     \
    CALL_REAL(-1, symbol, __VA_ARGS__);

EXPORT int rename(const char *from, const char *to) { PATH_CALL(rename, CHAOS_FN_RENAME, AT_FDCWD, from, AT_FDCWD, to, from, to) }
EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to) {
    PATH_CALL(renameat, CHAOS_FN_RENAME, fromfd, from, tofd, to, fromfd, from, tofd, to)
}
EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
    PATH_CALL(renameat2, CHAOS_FN_RENAME, fromfd, from, tofd, to, fromfd, from, tofd, to, flags)
}
EXPORT int unlink(const char *path) { PATH_CALL(unlink, CHAOS_FN_UNLINK, AT_FDCWD, path, AT_FDCWD, NULL, path) }
EXPORT int unlinkat(int dirfd, const char *path, int flags) {
    PATH_CALL(unlinkat, (flags & AT_REMOVEDIR) ? CHAOS_FN_RMDIR : CHAOS_FN_UNLINK, dirfd, path, AT_FDCWD, NULL, dirfd, path, flags)
}
EXPORT int rmdir(const char *path) { PATH_CALL(rmdir, CHAOS_FN_RMDIR, AT_FDCWD, path, AT_FDCWD, NULL, path) }
EXPORT int mkdir(const char *path, mode_t mode) { PATH_CALL(mkdir, CHAOS_FN_MKDIR, AT_FDCWD, path, AT_FDCWD, NULL, path, mode) }
EXPORT int mkdirat(int dirfd, const char *path, mode_t mode) {
    PATH_CALL(mkdirat, CHAOS_FN_MKDIR, dirfd, path, AT_FDCWD, NULL, dirfd, path, mode)
}

// MARK: - close, dup, fcntl

SLOT(close); SLOT(dup); SLOT(dup2); SLOT(dup3); SLOT(fcntl); SLOT(fcntl64);

EXPORT int close(int fd) {
    chaos_outcome o;
    int failed = decide_fd(fd, CHAOS_FN_CLOSE, -1, 0, &o) && o.action == CHAOS_ACT_FAIL;
    __typeof__(&close) real = REAL(close);
    if (!real) { errno = ENOSYS; return -1; }
    int result = real(fd); // Linux releases the descriptor even when close reports an error
    int saved = errno;
    if (result == 0 || errno != EBADF) chaos_fd_closed(fd);
    if (failed && result == 0) { errno = o.err; return -1; }
    errno = saved;
    return result;
}

EXPORT int dup(int fd) {
    __typeof__(&dup) real = REAL(dup);
    if (!real) { errno = ENOSYS; return -1; }
    int made = real(fd);
    if (made >= 0) { int saved = errno; chaos_fd_duplicated(fd, made); errno = saved; }
    return made;
}

EXPORT int dup2(int fd, int target) {
    __typeof__(&dup2) real = REAL(dup2);
    if (!real) { errno = ENOSYS; return -1; }
    int made = real(fd, target);
    if (made >= 0) { int saved = errno; chaos_fd_duplicated(fd, made); errno = saved; }
    return made;
}

EXPORT int dup3(int fd, int target, int flags) {
    __typeof__(&dup3) real = REAL(dup3);
    if (!real) { errno = ENOSYS; return -1; }
    int made = real(fd, target, flags);
    if (made >= 0) { int saved = errno; chaos_fd_duplicated(fd, made); errno = saved; }
    return made;
}

static int fcntl_common(int (*real)(int, int, ...), int fd, int command, void *argument) {
    if (!real) { errno = ENOSYS; return -1; }
    int result = real(fd, command, argument);
    if (result >= 0 && (command == F_DUPFD || command == F_DUPFD_CLOEXEC)) {
        int saved = errno;
        chaos_fd_duplicated(fd, result);
        errno = saved;
    }
    return result;
}

EXPORT int fcntl(int fd, int command, ...) {
    va_list list;
    va_start(list, command);
    void *argument = va_arg(list, void *);
    va_end(list);
    return fcntl_common(REAL(fcntl), fd, command, argument);
}

EXPORT int fcntl64(int fd, int command, ...) {
    va_list list;
    va_start(list, command);
    void *argument = va_arg(list, void *);
    va_end(list);
    return fcntl_common(REAL_AS(int (*)(int, int, ...), fcntl64), fd, command, argument);
}

// MARK: - stdio (glibc's stdio calls the kernel without the PLT)

SLOT(fopen); SLOT(fopen64); SLOT(fdopen); SLOT(freopen); SLOT(freopen64);
SLOT(fwrite); SLOT(fwrite_unlocked); SLOT(fputs); SLOT(fputs_unlocked); SLOT(fputc); SLOT(fputc_unlocked);
SLOT(putc); SLOT(putc_unlocked); SLOT(vfprintf); SLOT(vprintf); SLOT(puts); SLOT(putchar);
SLOT(vdprintf); SLOT(__vfprintf_chk); SLOT(__vprintf_chk); SLOT(__vdprintf_chk);
SLOT(fflush); SLOT(fflush_unlocked); SLOT(fclose); SLOT(fread); SLOT(fread_unlocked); SLOT(fgets);

static FILE *open_stream(int32_t fn, const char *path, FILE *made) {
    if (made) {
        int saved = errno;
        opened(fileno(made), AT_FDCWD, path);
        errno = saved;
    }
    (void)fn;
    return made;
}

#define STREAM_OPEN(symbol, fn, path, ...)                                                \
    chaos_outcome o;                                                                      \
    if (decide_path(fn, AT_FDCWD, path, AT_FDCWD, NULL, &o) && o.action == CHAOS_ACT_FAIL) { \
        errno = o.err;                                                                    \
        return NULL;                                                                      \
    }                                                                                     \
    __typeof__(&symbol) real = REAL(symbol);                                              \
    if (!real) { errno = ENOSYS; return NULL; }                                           \
    return open_stream(fn, path, real(__VA_ARGS__));

EXPORT FILE *fopen(const char *path, const char *mode) { STREAM_OPEN(fopen, CHAOS_FN_FOPEN, path, path, mode) }
EXPORT FILE *fopen64(const char *path, const char *mode) { STREAM_OPEN(fopen64, CHAOS_FN_FOPEN, path, path, mode) }

static FILE *reopen(FILE *(*real)(const char *, const char *, FILE *), const char *path, const char *mode, FILE *stream) {
    chaos_outcome o;
    if (!real) { errno = ENOSYS; return NULL; }
    if (path && decide_path(CHAOS_FN_FREOPEN, AT_FDCWD, path, AT_FDCWD, NULL, &o) && o.action == CHAOS_ACT_FAIL) {
        // A failed freopen has closed the stream (C11 7.21.5.4).
        int (*real_fclose)(FILE *) = REAL(fclose);
        int fd = fileno(stream);
        if (real_fclose) real_fclose(stream);
        chaos_fd_closed(fd);
        errno = o.err;
        return NULL;
    }
    FILE *made = real(path, mode, stream);
    if (made && path) open_stream(CHAOS_FN_FREOPEN, path, made);
    return made;
}

EXPORT FILE *freopen(const char *path, const char *mode, FILE *stream) { return reopen(REAL(freopen), path, mode, stream); }
EXPORT FILE *freopen64(const char *path, const char *mode, FILE *stream) { return reopen(REAL(freopen64), path, mode, stream); }

EXPORT FILE *fdopen(int fd, const char *mode) {
    chaos_outcome o;
    if (decide_fd(fd, CHAOS_FN_FDOPEN, -1, 0, &o) && o.action == CHAOS_ACT_FAIL) {
        errno = o.err;
        return NULL;
    }
    CALL_REAL(NULL, fdopen, fd, mode);
}

/// Whether a stream write must fail: sets the stream's error flag and errno. (A short
/// transfer is invisible at this level: stdio retries short writes itself.)
static int stream_fails(FILE *stream, int32_t fn) {
    if (!stream || !(chaos_fault_active_points() & FD_POINTS) || resolving) return 0;
    chaos_outcome o;
    if (decide_fd(fileno(stream), fn, -1, 0, &o) && o.action == CHAOS_ACT_FAIL) {
        stream->_flags |= _IO_ERR_SEEN;
        errno = o.err;
        return 1;
    }
    return 0;
}

EXPORT size_t fwrite(const void *data, size_t size, size_t count, FILE *stream) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return 0;
    CALL_REAL(0, fwrite, data, size, count, stream);
}
EXPORT size_t fwrite_unlocked(const void *data, size_t size, size_t count, FILE *stream) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return 0;
    CALL_REAL(0, fwrite_unlocked, data, size, count, stream);
}
EXPORT int fputs(const char *text, FILE *stream) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return EOF;
    CALL_REAL(EOF, fputs, text, stream);
}
EXPORT int fputs_unlocked(const char *text, FILE *stream) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return EOF;
    CALL_REAL(EOF, fputs_unlocked, text, stream);
}
EXPORT int fputc(int c, FILE *stream) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return EOF;
    CALL_REAL(EOF, fputc, c, stream);
}
EXPORT int fputc_unlocked(int c, FILE *stream) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return EOF;
    CALL_REAL(EOF, fputc_unlocked, c, stream);
}
EXPORT int putc(int c, FILE *stream) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return EOF;
    CALL_REAL(EOF, putc, c, stream);
}
EXPORT int putc_unlocked(int c, FILE *stream) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return EOF;
    CALL_REAL(EOF, putc_unlocked, c, stream);
}
EXPORT int puts(const char *text) {
    if (stream_fails(stdout, CHAOS_FN_FWRITE)) return EOF;
    CALL_REAL(EOF, puts, text);
}
EXPORT int putchar(int c) {
    if (stream_fails(stdout, CHAOS_FN_FWRITE)) return EOF;
    CALL_REAL(EOF, putchar, c);
}
EXPORT int vfprintf(FILE *stream, const char *format, va_list list) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return -1;
    CALL_REAL(-1, vfprintf, stream, format, list);
}
EXPORT int vprintf(const char *format, va_list list) {
    if (stream_fails(stdout, CHAOS_FN_FWRITE)) return -1;
    CALL_REAL(-1, vprintf, format, list);
}
EXPORT int fprintf(FILE *stream, const char *format, ...) {
    va_list list;
    va_start(list, format);
    int result = vfprintf(stream, format, list);
    va_end(list);
    return result;
}
EXPORT int printf(const char *format, ...) {
    va_list list;
    va_start(list, format);
    int result = vprintf(format, list);
    va_end(list);
    return result;
}

int __vfprintf_chk(FILE *stream, int flag, const char *format, va_list list);
int __vprintf_chk(int flag, const char *format, va_list list);
int __vdprintf_chk(int fd, int flag, const char *format, va_list list);

EXPORT int __vfprintf_chk(FILE *stream, int flag, const char *format, va_list list) {
    if (stream_fails(stream, CHAOS_FN_FWRITE)) return -1;
    CALL_REAL(-1, __vfprintf_chk, stream, flag, format, list);
}
EXPORT int __vprintf_chk(int flag, const char *format, va_list list) {
    if (stream_fails(stdout, CHAOS_FN_FWRITE)) return -1;
    CALL_REAL(-1, __vprintf_chk, flag, format, list);
}
int __fprintf_chk(FILE *stream, int flag, const char *format, ...);
EXPORT int __fprintf_chk(FILE *stream, int flag, const char *format, ...) {
    va_list list;
    va_start(list, format);
    int result = __vfprintf_chk(stream, flag, format, list);
    va_end(list);
    return result;
}
int __printf_chk(int flag, const char *format, ...);
EXPORT int __printf_chk(int flag, const char *format, ...) {
    va_list list;
    va_start(list, format);
    int result = __vprintf_chk(flag, format, list);
    va_end(list);
    return result;
}

static int fd_write_fails(int fd) {
    chaos_outcome o;
    if (decide_fd(fd, CHAOS_FN_FWRITE, CHAOS_POINT_SEND, CHAOS_FN_SOCKET_WRITE, &o) && o.action == CHAOS_ACT_FAIL) {
        errno = o.err;
        return 1;
    }
    return 0;
}
EXPORT int vdprintf(int fd, const char *format, va_list list) {
    if (fd_write_fails(fd)) return -1;
    CALL_REAL(-1, vdprintf, fd, format, list);
}
EXPORT int dprintf(int fd, const char *format, ...) {
    va_list list;
    va_start(list, format);
    int result = vdprintf(fd, format, list);
    va_end(list);
    return result;
}
EXPORT int __vdprintf_chk(int fd, int flag, const char *format, va_list list) {
    if (fd_write_fails(fd)) return -1;
    CALL_REAL(-1, __vdprintf_chk, fd, flag, format, list);
}
int __dprintf_chk(int fd, int flag, const char *format, ...);
EXPORT int __dprintf_chk(int fd, int flag, const char *format, ...) {
    va_list list;
    va_start(list, format);
    int result = __vdprintf_chk(fd, flag, format, list);
    va_end(list);
    return result;
}

/// fflush: with output pending, a failure drops it (as a failed write would) and reports.
static int flush(int (*real)(FILE *), FILE *stream) {
    if (!real) { errno = ENOSYS; return EOF; }
    if (stream && __fpending(stream) > 0 && stream_fails(stream, CHAOS_FN_FFLUSH)) {
        __fpurge(stream);
        return EOF;
    }
    return real(stream);
}

EXPORT int fflush(FILE *stream) { return flush(REAL(fflush), stream); }
EXPORT int fflush_unlocked(FILE *stream) { return flush(REAL(fflush_unlocked), stream); }

EXPORT int fclose(FILE *stream) {
    __typeof__(&fclose) real = REAL(fclose);
    if (!real) { errno = ENOSYS; return EOF; }
    if (!stream) return real(stream);
    int fd = fileno(stream);
    int failed = 0, code = 0;
    if ((chaos_fault_active_points() & FD_POINTS) && !resolving) {
        chaos_outcome o;
        int32_t fn = __fpending(stream) > 0 ? CHAOS_FN_FFLUSH : CHAOS_FN_FCLOSE;
        if (decide_fd(fd, fn, -1, 0, &o) && o.action == CHAOS_ACT_FAIL) {
            failed = 1;
            code = o.err;
            __fpurge(stream); // the pending output is lost, as with a failed write
        }
    }
    int result = real(stream);
    int saved = errno;
    if (fd >= 0) chaos_fd_closed(fd);
    if (failed) { errno = code; return EOF; }
    errno = saved;
    return result;
}

static int stream_read_fails(FILE *stream) {
    if (!stream || !(chaos_fault_active_points() & FD_POINTS) || resolving) return 0;
    chaos_outcome o;
    if (decide_fd(fileno(stream), CHAOS_FN_FREAD, -1, 0, &o) && o.action == CHAOS_ACT_FAIL) {
        stream->_flags |= _IO_ERR_SEEN;
        errno = o.err;
        return 1;
    }
    return 0;
}
EXPORT size_t fread(void *data, size_t size, size_t count, FILE *stream) {
    if (stream_read_fails(stream)) return 0;
    CALL_REAL(0, fread, data, size, count, stream);
}
EXPORT size_t fread_unlocked(void *data, size_t size, size_t count, FILE *stream) {
    if (stream_read_fails(stream)) return 0;
    CALL_REAL(0, fread_unlocked, data, size, count, stream);
}
EXPORT char *fgets(char *text, int size, FILE *stream) {
    if (stream_read_fails(stream)) return NULL;
    CALL_REAL(NULL, fgets, text, size, stream);
}

// MARK: - Sockets

SLOT(socket); SLOT(connect); SLOT(accept); SLOT(accept4);
SLOT(send); SLOT(sendto); SLOT(sendmsg); SLOT(recv); SLOT(recvfrom); SLOT(recvmsg);

static int family_of(int domain) {
    return domain == AF_INET ? CHAOS_FAMILY_INET : domain == AF_INET6 ? CHAOS_FAMILY_INET6
           : domain == AF_UNIX ? CHAOS_FAMILY_UNIX : CHAOS_FAMILY_OTHER;
}

EXPORT int socket(int domain, int type, int protocol) {
    __typeof__(&socket) real = REAL(socket);
    if (!real) { errno = ENOSYS; return -1; }
    int fd = real(domain, type, protocol);
    if (fd >= 0) { int saved = errno; chaos_fd_socket(fd, family_of(domain), CHAOS_ROLE_OTHER); errno = saved; }
    return fd;
}

/// Fills the address part of `call` from a sockaddr.
static void describe_address(chaos_call *call, const struct sockaddr *address, socklen_t length) {
    call->port = -1;
    if (!address) return;
    call->family = family_of(address->sa_family);
    if (address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)address;
        call->address = (const uint8_t *)&in->sin_addr;
        call->address_length = 4;
        call->port = ntohs(in->sin_port);
    } else if (address->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)address;
        call->address = (const uint8_t *)&in6->sin6_addr;
        call->address_length = 16;
        call->port = ntohs(in6->sin6_port);
    }
}

EXPORT int connect(int fd, const struct sockaddr *address, socklen_t length) {
    __typeof__(&connect) real = REAL(connect);
    if (!real) { errno = ENOSYS; return -1; }
    if (active(CHAOS_POINT_CONNECT) && !resolving && address) {
        chaos_call call = {0};
        call.point = CHAOS_POINT_CONNECT;
        call.fn = CHAOS_FN_CONNECT;
        call.fd = fd;
        describe_address(&call, address, length);
        chaos_outcome o;
        if (decide(&call, &o) && o.action == CHAOS_ACT_FAIL) {
            errno = o.err;
            return -1;
        }
    }
    int result = real(fd, address, length);
    if ((result == 0 || errno == EINPROGRESS) && chaos_fd_tracking()) {
        int saved = errno;
        chaos_fd_lookup(fd, NULL, 0, NULL, NULL, NULL);
        chaos_fd_set_role(fd, CHAOS_ROLE_CLIENT);
        errno = saved;
    }
    return result;
}

static int accept_common(int fd, struct sockaddr *address, socklen_t *length, int flags, int four) {
    int (*real4)(int, struct sockaddr *, socklen_t *, int) = four ? REAL(accept4) : NULL;
    int (*real)(int, struct sockaddr *, socklen_t *) = four ? NULL : REAL(accept);
    if (!real && !real4) { errno = ENOSYS; return -1; }
    int family = 0;
    if (active(CHAOS_POINT_ACCEPT) && !resolving) {
        int role = 0, special = 0;
        chaos_fd_lookup(fd, NULL, 0, &special, &family, &role);
        chaos_call call = {0};
        call.point = CHAOS_POINT_ACCEPT;
        call.fn = CHAOS_FN_ACCEPT;
        call.fd = fd;
        call.family = family;
        call.port = -1;
        struct sockaddr_storage local;
        socklen_t local_length = sizeof local;
        if (syscall(SYS_getsockname, fd, &local, &local_length) == 0) describe_address(&call, (struct sockaddr *)&local, local_length);
        chaos_outcome o;
        if (decide(&call, &o) && o.action == CHAOS_ACT_FAIL) {
            errno = o.err;
            return -1;
        }
    }
    int made = four ? real4(fd, address, length, flags) : real(fd, address, length);
    if (made >= 0 && chaos_fd_tracking()) {
        int saved = errno, role = 0, special = 0;
        if (!family) chaos_fd_lookup(fd, NULL, 0, &special, &family, &role);
        chaos_fd_socket(made, family ? family : CHAOS_FAMILY_OTHER, CHAOS_ROLE_SERVER);
        errno = saved;
    }
    return made;
}

EXPORT int accept(int fd, struct sockaddr *address, socklen_t *length) { return accept_common(fd, address, length, 0, 0); }
EXPORT int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) { return accept_common(fd, address, length, flags, 1); }

EXPORT ssize_t send(int fd, const void *buffer, size_t count, int flags) {
    TRANSFER(send, -1, CHAOS_POINT_SEND, CHAOS_FN_SEND, fd, count, fd, buffer, count, flags)
}
EXPORT ssize_t sendto(int fd, const void *buffer, size_t count, int flags, const struct sockaddr *address, socklen_t length) {
    TRANSFER(sendto, -1, CHAOS_POINT_SEND, CHAOS_FN_SEND, fd, count, fd, buffer, count, flags, address, length)
}
EXPORT ssize_t recv(int fd, void *buffer, size_t count, int flags) {
    TRANSFER(recv, -1, CHAOS_POINT_RECV, CHAOS_FN_RECV, fd, count, fd, buffer, count, flags)
}
EXPORT ssize_t recvfrom(int fd, void *buffer, size_t count, int flags, struct sockaddr *address, socklen_t *length) {
    TRANSFER(recvfrom, -1, CHAOS_POINT_RECV, CHAOS_FN_RECV, fd, count, fd, buffer, count, flags, address, length)
}

static ssize_t message(int fd, void *header, int flags, int send_side) {
    struct msghdr *m = header;
    chaos_outcome o;
    struct msghdr copy;
    struct iovec cut[m && m->msg_iovlen > 0 && m->msg_iovlen <= 1024 ? m->msg_iovlen : 1];
    if (m && decide_fd(fd, -1, send_side ? CHAOS_POINT_SEND : CHAOS_POINT_RECV, send_side ? CHAOS_FN_SENDMSG : CHAOS_FN_RECVMSG, &o)) {
        if (o.action == CHAOS_ACT_FAIL) { errno = o.err; return -1; }
        if (o.action == CHAOS_ACT_SHORT && m->msg_iovlen > 0 && m->msg_iovlen <= 1024) {
            copy = *m;
            int count = (int)m->msg_iovlen;
            copy.msg_iovlen = (size_t)shorten_iov(m->msg_iov, count, shortened(&o, iov_total(m->msg_iov, count)), cut);
            copy.msg_iov = cut;
            if (!send_side) {
                __typeof__(&recvmsg) real = REAL(recvmsg);
                if (!real) { errno = ENOSYS; return -1; }
                ssize_t result = real(fd, &copy, flags);
                m->msg_controllen = copy.msg_controllen;
                m->msg_namelen = copy.msg_namelen;
                m->msg_flags = copy.msg_flags;
                return result;
            }
            m = &copy;
        }
    }
    if (send_side) CALL_REAL(-1, sendmsg, fd, m, flags);
    CALL_REAL(-1, recvmsg, fd, m, flags);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags) { return message(fd, (void *)m, flags, 1); }
EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags) { return message(fd, m, flags, 0); }

// MARK: - DNS

SLOT(getaddrinfo); SLOT(gethostbyname); SLOT(gethostbyname2); SLOT(gethostbyname_r); SLOT(gethostbyname2_r);

static int decide_dns(int32_t fn, const char *name, chaos_outcome *o) {
    if (!active(CHAOS_POINT_DNS) || resolving || !name) return 0;
    chaos_call call = {0};
    call.point = CHAOS_POINT_DNS;
    call.fn = fn;
    call.fd = -1;
    call.name = name;
    return decide(&call, o) && o->action == CHAOS_ACT_FAIL;
}

static int h_errno_of(int64_t code) {
    switch (code) {
    case EAI_AGAIN: return TRY_AGAIN;
    case EAI_FAIL: return NO_RECOVERY;
    case EAI_NODATA: return NO_DATA;
    default: return HOST_NOT_FOUND;
    }
}

EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **result) {
    chaos_outcome o;
    if (decide_dns(CHAOS_FN_GETADDRINFO, node, &o)) {
        if (o.ret == EAI_SYSTEM) errno = o.err;
        return (int)o.ret;
    }
    CALL_REAL(EAI_SYSTEM, getaddrinfo, node, service, hints, result);
}

EXPORT struct hostent *gethostbyname(const char *name) {
    chaos_outcome o;
    if (decide_dns(CHAOS_FN_GETHOSTBYNAME, name, &o)) {
        h_errno = h_errno_of(o.ret);
        return NULL;
    }
    CALL_REAL(NULL, gethostbyname, name);
}

EXPORT struct hostent *gethostbyname2(const char *name, int family) {
    chaos_outcome o;
    if (decide_dns(CHAOS_FN_GETHOSTBYNAME, name, &o)) {
        h_errno = h_errno_of(o.ret);
        return NULL;
    }
    CALL_REAL(NULL, gethostbyname2, name, family);
}

// The _r forms report a lookup failure with a NULL result and *h_errnop; they return 0,
// except EAGAIN for TRY_AGAIN (as glibc does).
EXPORT int gethostbyname_r(const char *name, struct hostent *entry, char *buffer, size_t length, struct hostent **result, int *h_errnop) {
    chaos_outcome o;
    if (decide_dns(CHAOS_FN_GETHOSTBYNAME, name, &o)) {
        *result = NULL;
        *h_errnop = h_errno_of(o.ret);
        return *h_errnop == TRY_AGAIN ? EAGAIN : 0;
    }
    CALL_REAL(ENOSYS, gethostbyname_r, name, entry, buffer, length, result, h_errnop);
}

EXPORT int gethostbyname2_r(const char *name, int family, struct hostent *entry, char *buffer, size_t length,
                            struct hostent **result, int *h_errnop) {
    chaos_outcome o;
    if (decide_dns(CHAOS_FN_GETHOSTBYNAME, name, &o)) {
        *result = NULL;
        *h_errnop = h_errno_of(o.ret);
        return *h_errnop == TRY_AGAIN ? EAGAIN : 0;
    }
    CALL_REAL(ENOSYS, gethostbyname2_r, name, family, entry, buffer, length, result, h_errnop);
}

// MARK: - getenv

SLOT(getenv); SLOT(secure_getenv);

static int decide_getenv(const char *name, chaos_outcome *o) {
    if (!active(CHAOS_POINT_GETENV) || resolving || !name) return 0;
    chaos_call call = {0};
    call.point = CHAOS_POINT_GETENV;
    call.fn = CHAOS_FN_GETENV;
    call.fd = -1;
    call.name = name;
    return decide(&call, o);
}

EXPORT char *getenv(const char *name) {
    chaos_outcome o;
    if (decide_getenv(name, &o)) return o.action == CHAOS_ACT_SET ? (char *)o.value : NULL;
    CALL_REAL(NULL, getenv, name);
}

EXPORT char *secure_getenv(const char *name) {
    chaos_outcome o;
    if (decide_getenv(name, &o)) return o.action == CHAOS_ACT_SET ? (char *)o.value : NULL;
    CALL_REAL(NULL, secure_getenv, name);
}

// MARK: - Clock

SLOT(gettimeofday); SLOT(time); SLOT(timespec_get); SLOT(ftime);
SLOT(clock_nanosleep); SLOT(usleep); SLOT(sleep);

static _Atomic int clock_monotonic;   // some clock entry fakes monotonic clocks
static _Atomic int clock_stat;        // some clock entry shifts file times
static _Atomic int clock_sleeps;      // sleeps scale under speed

static int32_t source_of(clockid_t clock) {
    switch (clock) {
    case CLOCK_REALTIME: return CHAOS_CLOCKSRC_REALTIME;
    case CLOCK_REALTIME_COARSE: return CHAOS_CLOCKSRC_REALTIME_COARSE;
    case CLOCK_TAI: return CHAOS_CLOCKSRC_TAI;
    case CLOCK_REALTIME_ALARM: return CHAOS_CLOCKSRC_REALTIME_ALARM;
    case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_RAW: case CLOCK_MONOTONIC_COARSE: case CLOCK_BOOTTIME: case CLOCK_BOOTTIME_ALARM:
        return CHAOS_CLOCKSRC_MONOTONIC;
    default: return 0;
    }
}

/// The shift a clock outcome gives at the real instant `real` (for clocks with their own
/// origin: TAI, monotonic; and for file times).
static int64_t shift_at(const chaos_outcome *o, int64_t real) { return chaos_fault_apply_clock(o, real) - real; }

/// The fake reading of `clock` for its real value `value` (ns), deciding one call.
static int64_t fake_reading(int32_t fn, clockid_t clock, int64_t value) {
    int32_t source = source_of(clock);
    if (!source || resolving) return value;
    if (source == CHAOS_CLOCKSRC_MONOTONIC && !atomic_load_explicit(&clock_monotonic, memory_order_relaxed)) return value;
    chaos_call call = {0};
    call.point = CHAOS_POINT_CLOCK;
    call.fn = fn;
    call.fd = -1;
    call.clock_source = source;
    chaos_outcome o;
    if (!chaos_fault_decide(&call, &o)) return value;
    atomic_fetch_add_explicit(&chaotic_calls, 1, memory_order_relaxed);
    if (source == CHAOS_CLOCKSRC_TAI || source == CHAOS_CLOCKSRC_MONOTONIC) return value + shift_at(&o, real_ns(CLOCK_REALTIME));
    return chaos_fault_apply_clock(&o, value);
}

EXPORT int clock_gettime(clockid_t clock, struct timespec *now) {
    __typeof__(&clock_gettime) real = REAL(clock_gettime);
    int status = real ? real(clock, now) : (int)syscall(SYS_clock_gettime, clock, now);
    if (status != 0 || !active(CHAOS_POINT_CLOCK)) return status;
    int64_t ns = fake_reading(CHAOS_FN_CLOCK_GETTIME, clock, (int64_t)now->tv_sec * 1000000000 + now->tv_nsec);
    now->tv_sec = (time_t)(ns / 1000000000);
    now->tv_nsec = (long)(ns % 1000000000);
    if (now->tv_nsec < 0) { now->tv_nsec += 1000000000; now->tv_sec -= 1; }
    return status;
}

EXPORT int gettimeofday(struct timeval *restrict now, void *restrict zone) {
    int (*real)(struct timeval *, void *) = REAL_AS(int (*)(struct timeval *, void *), gettimeofday);
    if (!real) { errno = ENOSYS; return -1; }
    int status = real(now, zone);
    if (status != 0 || !active(CHAOS_POINT_CLOCK)) return status;
    int64_t ns = fake_reading(CHAOS_FN_GETTIMEOFDAY, CLOCK_REALTIME, (int64_t)now->tv_sec * 1000000000 + (int64_t)now->tv_usec * 1000);
    now->tv_sec = (time_t)(ns / 1000000000);
    now->tv_usec = (suseconds_t)((ns % 1000000000) / 1000);
    if (now->tv_usec < 0) { now->tv_usec += 1000000; now->tv_sec -= 1; }
    return status;
}

EXPORT time_t time(time_t *result) {
    if (!active(CHAOS_POINT_CLOCK)) {
        __typeof__(&time) real = REAL(time);
        if (real) return real(result);
    }
    int64_t ns = fake_reading(CHAOS_FN_TIME, CLOCK_REALTIME, real_ns(CLOCK_REALTIME));
    time_t seconds = (time_t)(ns / 1000000000 - (ns % 1000000000 < 0));
    if (result) *result = seconds;
    return seconds;
}

EXPORT int timespec_get(struct timespec *now, int base) {
    __typeof__(&timespec_get) real = REAL(timespec_get);
    if (!real) return 0;
    int result = real(now, base);
    if (result != TIME_UTC || !active(CHAOS_POINT_CLOCK)) return result;
    int64_t ns = fake_reading(CHAOS_FN_TIMESPEC_GET, CLOCK_REALTIME, (int64_t)now->tv_sec * 1000000000 + now->tv_nsec);
    now->tv_sec = (time_t)(ns / 1000000000);
    now->tv_nsec = (long)(ns % 1000000000);
    if (now->tv_nsec < 0) { now->tv_nsec += 1000000000; now->tv_sec -= 1; }
    return result;
}

int ftime(struct timeb *now);
EXPORT int ftime(struct timeb *now) {
    int (*real)(struct timeb *) = REAL_AS(int (*)(struct timeb *), ftime);
    if (!real) { errno = ENOSYS; return -1; }
    int result = real(now);
    if (result != 0 || !active(CHAOS_POINT_CLOCK)) return result;
    int64_t ns = fake_reading(CHAOS_FN_FTIME, CLOCK_REALTIME, (int64_t)now->time * 1000000000 + (int64_t)now->millitm * 1000000);
    int64_t ms = ns / 1000000 - (ns % 1000000 < 0);
    now->time = (time_t)(ms / 1000 - (ms % 1000 < 0));
    now->millitm = (unsigned short)(ms - (int64_t)now->time * 1000);
    return result;
}

// Sleeps: under `speed` a relative sleep of d (on any clock) lasts d / factor; an absolute
// sleep on a faked clock waits until that clock reads the target. Timeouts of select,
// poll, epoll and condition variables are left alone.

/// The outcome the clock gives now, when sleeps must follow it.
static int clock_now(int32_t source, chaos_outcome *o) {
    if (!active(CHAOS_POINT_CLOCK) || resolving || !atomic_load_explicit(&clock_sleeps, memory_order_relaxed)) return 0;
    if (source == CHAOS_CLOCKSRC_MONOTONIC && !atomic_load_explicit(&clock_monotonic, memory_order_relaxed)) return 0;
    return chaos_fault_peek_clock(source, o);
}

static int64_t scaled_sleep(const chaos_outcome *o, int64_t ns) {
    if (o->action != CHAOS_ACT_SPEED || o->factor <= 0) return ns;
    double real = (double)ns / o->factor;
    return real > 9.2e18 ? INT64_MAX : (int64_t)real;
}

static struct timespec to_timespec(int64_t ns) {
    if (ns < 0) ns = 0;
    struct timespec t = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    return t;
}

static int64_t ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec; }

EXPORT int nanosleep(const struct timespec *request, struct timespec *remaining) {
    __typeof__(&nanosleep) real = REAL(nanosleep);
    if (!real) { errno = ENOSYS; return -1; }
    chaos_outcome o;
    if (!request || !clock_now(CHAOS_CLOCKSRC_REALTIME, &o) || o.action != CHAOS_ACT_SPEED) return real(request, remaining);
    struct timespec scaled = to_timespec(scaled_sleep(&o, ns_of(request)));
    int result = real(&scaled, remaining);
    if (result != 0 && remaining) *remaining = to_timespec((int64_t)((double)ns_of(remaining) * o.factor));
    return result;
}

EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *remaining) {
    __typeof__(&clock_nanosleep) real = REAL(clock_nanosleep);
    if (!real) return ENOSYS;
    int32_t source = source_of(clock);
    chaos_outcome o;
    if (!request || !source) return real(clock, flags, request, remaining);
    if (flags & TIMER_ABSTIME) {
        if (!clock_now(source, &o)) return real(clock, flags, request, remaining);
        // Wait until the faked clock reads the target: the remaining fake time, scaled.
        struct timespec now;
        if (clock_gettime(clock, &now) != 0) return real(clock, flags, request, remaining);
        int64_t left = ns_of(request) - ns_of(&now);
        if (left <= 0) return 0;
        struct timespec wait = to_timespec(scaled_sleep(&o, left));
        return real(source == CHAOS_CLOCKSRC_MONOTONIC ? clock : CLOCK_MONOTONIC, 0, &wait, NULL);
    }
    // A relative sleep on any clock lasts d / factor under speed.
    if (!clock_now(CHAOS_CLOCKSRC_REALTIME, &o) || o.action != CHAOS_ACT_SPEED) return real(clock, flags, request, remaining);
    struct timespec scaled = to_timespec(scaled_sleep(&o, ns_of(request)));
    int result = real(clock, flags, &scaled, remaining);
    if (result != 0 && remaining) *remaining = to_timespec((int64_t)((double)ns_of(remaining) * o.factor));
    return result;
}

EXPORT int usleep(useconds_t microseconds) {
    __typeof__(&usleep) real = REAL(usleep);
    if (!real) { errno = ENOSYS; return -1; }
    chaos_outcome o;
    if (!clock_now(CHAOS_CLOCKSRC_REALTIME, &o) || o.action != CHAOS_ACT_SPEED) return real(microseconds);
    struct timespec scaled = to_timespec(scaled_sleep(&o, (int64_t)microseconds * 1000));
    __typeof__(&nanosleep) sleep_real = REAL(nanosleep);
    return sleep_real ? sleep_real(&scaled, NULL) : real(microseconds);
}

EXPORT unsigned int sleep(unsigned int seconds) {
    __typeof__(&sleep) real = REAL(sleep);
    if (!real) return seconds;
    chaos_outcome o;
    if (!clock_now(CHAOS_CLOCKSRC_REALTIME, &o) || o.action != CHAOS_ACT_SPEED) return real(seconds);
    struct timespec scaled = to_timespec(scaled_sleep(&o, (int64_t)seconds * 1000000000)), left = {0, 0};
    __typeof__(&nanosleep) sleep_real = REAL(nanosleep);
    if (!sleep_real) return real(seconds);
    if (sleep_real(&scaled, &left) == 0) return 0;
    return (unsigned int)(((double)ns_of(&left) * o.factor) / 1e9 + 0.999999999);
}

// MARK: - File times (the stat family), shifted like the clock

SLOT(stat); SLOT(stat64); SLOT(lstat); SLOT(lstat64); SLOT(fstat); SLOT(fstat64); SLOT(fstatat); SLOT(fstatat64);
SLOT(statx); SLOT(__xstat); SLOT(__xstat64); SLOT(__lxstat); SLOT(__lxstat64); SLOT(__fxstat); SLOT(__fxstat64);
SLOT(__fxstatat); SLOT(__fxstatat64);

/// The shift file times get now (0 when the clock is real or the entry keeps them).
static int64_t stat_shift(void) {
    if (!active(CHAOS_POINT_CLOCK) || resolving || !atomic_load_explicit(&clock_stat, memory_order_relaxed)) return 0;
    chaos_outcome o;
    if (!chaos_fault_peek_clock(CHAOS_CLOCKSRC_REALTIME, &o) || !o.stat_times) return 0;
    return shift_at(&o, real_ns(CLOCK_REALTIME));
}

static void shift_timespec(struct timespec *t, int64_t shift) {
    int64_t ns = ns_of(t) + shift;
    t->tv_sec = (time_t)(ns / 1000000000);
    t->tv_nsec = (long)(ns % 1000000000);
    if (t->tv_nsec < 0) { t->tv_nsec += 1000000000; t->tv_sec -= 1; }
}

static int shifted(int result, struct stat *s) {
    if (result != 0 || !s) return result;
    int64_t shift = stat_shift();
    if (shift) {
        shift_timespec(&s->st_atim, shift);
        shift_timespec(&s->st_mtim, shift);
        shift_timespec(&s->st_ctim, shift);
    }
    return result;
}

static int shifted64(int result, struct stat64 *s) {
    if (result != 0 || !s) return result;
    int64_t shift = stat_shift();
    if (shift) {
        shift_timespec(&s->st_atim, shift);
        shift_timespec(&s->st_mtim, shift);
        shift_timespec(&s->st_ctim, shift);
    }
    return result;
}

#define STAT_CALL(symbol, wrap, ...)                                                      \
    __typeof__(&symbol) real = REAL(symbol);                                              \
    if (!real) { errno = ENOSYS; return -1; }                                             \
    return wrap(real(__VA_ARGS__), buffer);

EXPORT int stat(const char *restrict path, struct stat *restrict buffer) { STAT_CALL(stat, shifted, path, buffer) }
EXPORT int stat64(const char *restrict path, struct stat64 *restrict buffer) { STAT_CALL(stat64, shifted64, path, buffer) }
EXPORT int lstat(const char *restrict path, struct stat *restrict buffer) { STAT_CALL(lstat, shifted, path, buffer) }
EXPORT int lstat64(const char *restrict path, struct stat64 *restrict buffer) { STAT_CALL(lstat64, shifted64, path, buffer) }
EXPORT int fstat(int fd, struct stat *buffer) { STAT_CALL(fstat, shifted, fd, buffer) }
EXPORT int fstat64(int fd, struct stat64 *buffer) { STAT_CALL(fstat64, shifted64, fd, buffer) }
EXPORT int fstatat(int dirfd, const char *restrict path, struct stat *restrict buffer, int flags) {
    STAT_CALL(fstatat, shifted, dirfd, path, buffer, flags)
}
EXPORT int fstatat64(int dirfd, const char *restrict path, struct stat64 *restrict buffer, int flags) {
    STAT_CALL(fstatat64, shifted64, dirfd, path, buffer, flags)
}

static void shift_statx_time(struct statx_timestamp *t, int64_t shift) {
    int64_t ns = (int64_t)t->tv_sec * 1000000000 + t->tv_nsec + shift;
    int64_t seconds = ns / 1000000000, rest = ns % 1000000000;
    if (rest < 0) { rest += 1000000000; seconds -= 1; }
    t->tv_sec = seconds;
    t->tv_nsec = (uint32_t)rest;
}

EXPORT int statx(int dirfd, const char *restrict path, int flags, unsigned int mask, struct statx *restrict buffer) {
    __typeof__(&statx) real = REAL(statx);
    if (!real) { errno = ENOSYS; return -1; }
    int result = real(dirfd, path, flags, mask, buffer);
    if (result != 0) return result;
    int64_t shift = stat_shift();
    if (shift) {
        if (buffer->stx_mask & STATX_ATIME) shift_statx_time(&buffer->stx_atime, shift);
        if (buffer->stx_mask & STATX_MTIME) shift_statx_time(&buffer->stx_mtime, shift);
        if (buffer->stx_mask & STATX_CTIME) shift_statx_time(&buffer->stx_ctime, shift);
        if (buffer->stx_mask & STATX_BTIME) shift_statx_time(&buffer->stx_btime, shift);
    }
    return result;
}

// glibc before 2.33 exported stat through these; programs built then still call them.
int __xstat(int version, const char *path, struct stat *buffer);
int __xstat64(int version, const char *path, struct stat64 *buffer);
int __lxstat(int version, const char *path, struct stat *buffer);
int __lxstat64(int version, const char *path, struct stat64 *buffer);
int __fxstat(int version, int fd, struct stat *buffer);
int __fxstat64(int version, int fd, struct stat64 *buffer);
int __fxstatat(int version, int dirfd, const char *path, struct stat *buffer, int flags);
int __fxstatat64(int version, int dirfd, const char *path, struct stat64 *buffer, int flags);

EXPORT int __xstat(int version, const char *path, struct stat *buffer) { STAT_CALL(__xstat, shifted, version, path, buffer) }
EXPORT int __xstat64(int version, const char *path, struct stat64 *buffer) { STAT_CALL(__xstat64, shifted64, version, path, buffer) }
EXPORT int __lxstat(int version, const char *path, struct stat *buffer) { STAT_CALL(__lxstat, shifted, version, path, buffer) }
EXPORT int __lxstat64(int version, const char *path, struct stat64 *buffer) { STAT_CALL(__lxstat64, shifted64, version, path, buffer) }
EXPORT int __fxstat(int version, int fd, struct stat *buffer) { STAT_CALL(__fxstat, shifted, version, fd, buffer) }
EXPORT int __fxstat64(int version, int fd, struct stat64 *buffer) { STAT_CALL(__fxstat64, shifted64, version, fd, buffer) }
EXPORT int __fxstatat(int version, int dirfd, const char *path, struct stat *buffer, int flags) {
    STAT_CALL(__fxstatat, shifted, version, dirfd, path, buffer, flags)
}
EXPORT int __fxstatat64(int version, int dirfd, const char *path, struct stat64 *buffer, int flags) {
    STAT_CALL(__fxstatat64, shifted64, version, dirfd, path, buffer, flags)
}

// MARK: - Loading the plan

/// Writes a line to stderr without stdio (the program's own stdio is not ready yet).
static void say(const char *a, const char *b, const char *c) {
    const char *parts[] = {"chaos preload: ", a, b, c, "\n"};
    for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i]) syscall(SYS_write, 2, parts[i], strlen(parts[i]));
}

/// Reads a plan file with raw system calls; NULL (and a message) when it cannot.
static char *read_plan_file(const char *path, size_t *length) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        say("cannot open CHAOS_PLAN ", path, strerror(errno));
        return NULL;
    }
    size_t capacity = 4096, used = 0;
    char *text = malloc(capacity);
    while (text) {
        if (used == capacity) {
            if (capacity >= CHAOS_PLAN_MAX_TEXT + 1) break;
            char *grown = realloc(text, capacity * 2);
            if (!grown) { free(text); text = NULL; break; }
            text = grown;
            capacity *= 2;
        }
        long got = syscall(SYS_read, fd, text + used, capacity - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
    }
    syscall(SYS_close, fd);
    *length = used;
    return text;
}

/// A probability as decimal text that does not depend on the locale.
static const char *chance(double probability, char *buffer) {
    if (!(probability > 0)) return "0";
    if (probability >= 1) return "1";
    snprintf(buffer, 24, "0.%09lld", (long long)(probability * 1e9 + 0.5));
    return buffer;
}

/// Builds plan text from the older CHAOS_PRELOAD_* variables (see the Swift `chaos run`
/// of before plans); NULL when none is set.
static char *legacy_plan(char *(*get)(const char *)) {
    const char *seed = get("CHAOS_PRELOAD_SEED"), *clock = get("CHAOS_PRELOAD_CLOCK"), *env = get("CHAOS_PRELOAD_GETENV");
    const char *connect_ = get("CHAOS_PRELOAD_CONNECT"), *latency = get("CHAOS_PRELOAD_CONNECT_LATENCY");
    const char *sockets = get("CHAOS_PRELOAD_SOCKETS"), *dns = get("CHAOS_PRELOAD_DNS"), *files = get("CHAOS_PRELOAD_FILES");
    if (!clock && !env && !connect_ && !latency && !sockets && !dns && !files) return NULL;
    size_t capacity = 65536, used = 0;
    char *text = malloc(capacity);
    if (!text) return NULL;
#define ADD(...) do { int n_ = snprintf(text + used, capacity - used, __VA_ARGS__); if (n_ > 0 && (size_t)n_ < capacity - used) used += (size_t)n_; } while (0)
    ADD("chaos-plan 1\nseed %llu\n", seed ? strtoull(seed, NULL, 10) : 0ull);
    // Numbers are written as integers so that the locale never matters.
    double value = 0;
    long after = 0;
    if (clock) {
        if (sscanf(clock, "offset:%lf", &value) == 1) ADD("entry clock\nnode 0 offset by=%lld\n", (long long)(value * 1e9));
        else if (sscanf(clock, "freeze:%lf", &value) == 1) ADD("entry clock\nnode 0 frozen at=%lld\n", (long long)(value * 1e9));
        else if (sscanf(clock, "speed:%lf", &value) == 1) ADD("entry clock\nnode 0 speed factor=%lld.%06lld\n", (long long)value, (long long)((value - (double)(long long)value) * 1e6));
        else if (sscanf(clock, "jump:%lf:%ld", &value, &after) == 2) {
            if (after > 0) ADD("entry clock\nnode 0 sequential children=1*%ld,2\nnode 1 original\nnode 2 offset by=%lld\n", after, (long long)(value * 1e9));
            else ADD("entry clock\nnode 0 offset by=%lld\n", (long long)(value * 1e9));
        }
    }
    if (env && *env) {
        ADD("entry getenv\nnode 0 composite\n");
        int count = 0;
        for (const char *c = env; *c && count < 64; count++) {
            const char *end = strchr(c, '\x1f');
            size_t n = end ? (size_t)(end - c) : strlen(c);
            const char *equals = memchr(c, '=', n);
            if (c[0] == '-') ADD("case %d name=\"%.*s\"\n", count + 1, (int)n - 1, c + 1);
            else if (equals) ADD("case %d name=\"%.*s\"\n", count + 1, (int)(equals - c), c);
            c += n + (end ? 1 : 0);
        }
        count = 0;
        for (const char *c = env; *c && count < 64; count++) {
            const char *end = strchr(c, '\x1f');
            size_t n = end ? (size_t)(end - c) : strlen(c);
            const char *equals = memchr(c, '=', n);
            if (c[0] == '-') ADD("node %d unset\n", count + 1);
            else if (equals) {
                ADD("node %d set value=\"", count + 1);
                for (const char *v = equals + 1; v < c + n; v++) {
                    if (*v == '"' || *v == '\\') ADD("\\%c", *v);
                    else if ((unsigned char)*v < 0x20) ADD("\\x%02x", (unsigned char)*v);
                    else ADD("%c", *v);
                }
                ADD("\"\n");
            }
            c += n + (end ? 1 : 0);
        }
    }
    int code = 0;
    double probability = 0;
    char p[24];
    long long ns = 0;
    if (latency || connect_) {
        ADD("entry connect\n");
        int next = 0;
        if (latency && (ns = strtoll(latency, NULL, 10)) > 0) { ADD("node 0 delay by=%lld child=1\n", ns); next = 1; }
        if (connect_ && sscanf(connect_, "%d:%lf", &code, &probability) == 2 && code > 0) {
            ADD("node %d probability p=%s child=%d\nnode %d fail errno=%d\n", next, chance(probability, p), next + 1, next + 1, code);
        } else if (next) {
            ADD("node 1 original\n");
        } else {
            ADD("node 0 original\n");
        }
    }
    if (sockets && sscanf(sockets, "%d:%lf:%lld", &code, &probability, &ns) == 3) {
        for (int side = 0; side < 2; side++) {
            ADD("entry %s family=any\n", side ? "recv" : "send");
            if (ns > 0) ADD("node 0 delay by=%lld child=1\n", ns);
            int at = ns > 0 ? 1 : 0;
            if (code > 0) ADD("node %d probability p=%s child=%d\nnode %d fail errno=%d\n", at, chance(probability, p), at + 1, at + 1, code);
            else ADD("node %d original\n", at);
        }
    }
    if (dns && sscanf(dns, "%d:%lf", &code, &probability) == 2 && code < 0)
        ADD("entry dns\nnode 0 probability p=%s child=1\nnode 1 fail ret=%d\n", chance(probability, p), code);
    if (files) {
        char ops[8] = {0};
        int consumed = 0;
        if (sscanf(files, "%d:%lf:%7[owrf]:%n", &code, &probability, ops, &consumed) >= 3 && consumed > 0) {
            char prefix[4096];
            if (chaos_path_resolve(AT_FDCWD, files + consumed, prefix, sizeof prefix) > 0) {
                ADD("entry files\nnode 0 composite\ncase 1 path=\"%s\" ops=", prefix);
                const char *names[] = {"open", "write", "read", "sync"};
                const char *letters = "owrf";
                int first = 1;
                for (int i = 0; i < 4; i++) if (strchr(ops, letters[i])) { ADD("%s%s", first ? "" : ",", names[i]); first = 0; }
                ADD("\nnode 1 probability p=%s child=2\n", chance(probability, p));
                if (code > 0) ADD("node 2 fail errno=%d\n", code); else ADD("node 2 short\n");
            }
        }
    }
#undef ADD
    return text;
}

SLOT(setenv);

__attribute__((constructor)) static void chaos_preload_init(void) {
    char *(*get)(const char *) = REAL(getenv);
    if (!get) return;
    chaos_fault_set_real_clock((chaos_real_clock_fn)REAL(clock_gettime));
    const char *inline_text = get("CHAOS_PLAN_TEXT"), *path = get("CHAOS_PLAN");
    char *owned = NULL;
    size_t length = 0;
    const char *text = NULL, *origin = NULL;
    if (inline_text) {
        text = inline_text;
        length = strlen(inline_text);
        origin = "CHAOS_PLAN_TEXT";
    } else if (path && *path) {
        owned = read_plan_file(path, &length);
        if (!owned) _exit(125);
        text = owned;
        origin = path;
    } else if ((owned = legacy_plan(get))) {
        text = owned;
        length = strlen(owned);
        origin = "CHAOS_PRELOAD_* variables";
    }
    if (!text) return;
    chaos_plan_error error;
    chaos_plan *plan = chaos_plan_parse(text, length, &error);
    if (!plan) {
        char where[96];
        snprintf(where, sizeof where, " line %d, column %d: ", error.line, error.column);
        say(origin, where, error.message);
        _exit(125);
    }
    if (chaos_plan_needs_start_anchor(plan)) { // speed anchor=start: one anchor for the process tree
        const char *anchor = get("CHAOS_CLOCK_ANCHOR");
        int64_t anchor_ns = anchor ? strtoll(anchor, NULL, 10) : 0;
        if (anchor_ns <= 0) {
            anchor_ns = real_ns(CLOCK_REALTIME);
            char value[32];
            snprintf(value, sizeof value, "%lld", (long long)anchor_ns);
            int (*set)(const char *, const char *, int) = REAL(setenv);
            if (set) set("CHAOS_CLOCK_ANCHOR", value, 1);
        }
        chaos_fault_set_start_anchor(anchor_ns);
    }
    chaos_plan_install(plan);
    uint32_t flags = chaos_fault_clock_flags();
    atomic_store(&clock_monotonic, (flags & CHAOS_CLOCK_FLAG_MONOTONIC) != 0);
    atomic_store(&clock_stat, (flags & CHAOS_CLOCK_FLAG_STAT) != 0);
    atomic_store(&clock_sleeps, (flags & CHAOS_CLOCK_FLAG_SLEEP) != 0);
    free(owned);
}

#else

unsigned long chaos_preload_chaotic_calls(void) { return 0; }

#endif

// SwiftPM links this library with the Swift driver, which names -lswiftCore right after
// the flags it extracts from the objects' .swift1_autolink_entries sections. Asking for
// --as-needed there keeps the runtime out of DT_NEEDED: nothing here uses it.
__attribute__((used, section(".swift1_autolink_entries"))) static const char chaos_preload_autolink[] = "-Xlinker\0--as-needed";
