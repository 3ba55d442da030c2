// The conformance probes (see include/CSystemProbes.h). Each probe prints only what both
// deliveries must agree on: return values, errno names, and times as differences from
// the real clock (read with a direct system call, which neither delivery sees) rounded to
// whole seconds. Paths and port numbers stay out of the results, so one expected line
// serves every run.
#define _GNU_SOURCE
#include "CSystemProbes.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timeb.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// MARK: - Reporting

typedef struct report {
    char *text;
    size_t capacity;
    size_t used;
} report;

static void append(report *r, const char *format, va_list list) {
    if (r->capacity == 0 || r->used + 1 >= r->capacity) return;
    int written = vsnprintf(r->text + r->used, r->capacity - r->used, format, list);
    if (written < 0) return;
    r->used += (size_t)written;
    if (r->used >= r->capacity) r->used = r->capacity - 1;
}

static void put(report *r, const char *format, ...) {
    va_list list;
    va_start(list, format);
    append(r, format, list);
    va_end(list);
}

/// ` key=value` (no space before the first item).
static void item(report *r, const char *key, const char *format, ...) {
    put(r, "%s%s=", r->used ? " " : "", key);
    va_list list;
    va_start(list, format);
    append(r, format, list);
    va_end(list);
}

static const char *errno_name(int code) {
    switch (code) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case EROFS: return "EROFS";
    case EPIPE: return "EPIPE";
    case ENOSYS: return "ENOSYS";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ENETUNREACH: return "ENETUNREACH";
    case ECONNABORTED: return "ECONNABORTED";
    case ECONNRESET: return "ECONNRESET";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case EINPROGRESS: return "EINPROGRESS";
    case EDQUOT: return "EDQUOT";
    default: {
        static __thread char number[24];
        snprintf(number, sizeof number, "errno%d", code);
        return number;
    }
    }
}

/// `key=VALUE` for a call that succeeded, `key=VALUE/ERRNO` for one that failed.
static void outcome(report *r, const char *key, long value, int failed, int code) {
    if (failed)
        item(r, key, "%ld/%s", value, errno_name(code));
    else
        item(r, key, "%ld", value);
}

/// A call returning -1 (or another negative value) and errno on failure.
#define CALL(r, key, expression) \
    do { \
        errno = 0; \
        long value_ = (long)(expression); \
        int code_ = errno; \
        outcome(r, key, value_, value_ < 0, code_); \
    } while (0)

/// `key=ok` for a descriptor, `key=-1/ERRNO` for a failed open.
static void descriptor(report *r, const char *key, int fd, int code) {
    if (fd >= 0)
        item(r, key, "ok");
    else
        item(r, key, "-1/%s", errno_name(code));
}

static int usage(report *r, const char *text) {
    r->used = 0;
    put(r, "usage: %s", text);
    return -1;
}

static const char *joined(char *buffer, size_t capacity, const char *directory, const char *name) {
    snprintf(buffer, capacity, "%s/%s", directory, name);
    return buffer;
}

/// Opens `path` (relative to `dirfd`) for writing and writes one byte: the write's result.
static void open_and_write(report *r, const char *key, int dirfd, const char *path) {
    errno = 0;
    int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        item(r, key, "open-1/%s", errno_name(errno));
        return;
    }
    CALL(r, key, write(fd, "x", 1));
    close(fd);
}

static long long file_size(const char *path) {
    struct stat info;
    return stat(path, &info) == 0 ? (long long)info.st_size : -1;
}

// MARK: - Files

/// files DIR: every write-, sync- and truncate-family call on DIR/io/file, then the same
/// on DIR/io2/file (a sibling whose name shares the prefix).
static int probe_files(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "files DIR");
    char path[PATH_MAX];
    errno = 0;
    int fd = open(joined(path, sizeof path, argv[0], "io/file"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    descriptor(r, "open", fd, errno);
    if (fd < 0) return 0;
    struct iovec parts[2] = {{(void *)"ab", 2}, {(void *)"cd", 2}};
    char buffer[8];
    CALL(r, "write", write(fd, "abc", 3));
    CALL(r, "pwrite", pwrite(fd, "abc", 3, 0));
    CALL(r, "writev", writev(fd, parts, 2));
    CALL(r, "pwritev", pwritev(fd, parts, 2, 0));
    CALL(r, "fdatasync", fdatasync(fd));
    CALL(r, "fsync", fsync(fd));
    CALL(r, "ftruncate", ftruncate(fd, 1));
    CALL(r, "fallocate", fallocate(fd, 0, 0, 4096));
    CALL(r, "pread", pread(fd, buffer, sizeof buffer, 0));
    CALL(r, "close", close(fd));

    errno = 0;
    int sibling = open(joined(path, sizeof path, argv[0], "io2/file"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    descriptor(r, "sibling-open", sibling, errno);
    if (sibling < 0) return 0;
    CALL(r, "sibling-write", write(sibling, "abc", 3));
    CALL(r, "sibling-pwritev", pwritev(sibling, parts, 2, 0));
    CALL(r, "sibling-fsync", fsync(sibling));
    CALL(r, "sibling-ftruncate", ftruncate(sibling, 1));
    CALL(r, "sibling-close", close(sibling));
    return 0;
}

/// paths DIR: files named through a directory descriptor, `..`, `.` and `//`, inside
/// DIR/io and in its sibling DIR/io2.
static int probe_paths(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "paths DIR");
    const char *dir = argv[0];
    char path[PATH_MAX];
    int base = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int io2 = open(joined(path, sizeof path, dir, "io2"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (base < 0 || io2 < 0) return usage(r, "paths DIR (with DIR/io and DIR/io2)");
    open_and_write(r, "dirfd", base, "io/a");
    open_and_write(r, "dirfd-dotdot", io2, "../io/b");
    open_and_write(r, "dot-slashes", AT_FDCWD, joined(path, sizeof path, dir, ".//io/./c"));
    open_and_write(r, "up-and-in", AT_FDCWD, joined(path, sizeof path, dir, "io2/../io/d"));
    open_and_write(r, "sibling", base, "io2/e");
    open_and_write(r, "out-of-io", AT_FDCWD, joined(path, sizeof path, dir, "io/../io2/f"));
    open_and_write(r, "sibling-dirfd", io2, "g");
    close(base);
    close(io2);
    return 0;
}

/// `key=SIZE,MODE,LINKS,MTIME` (mode: permission bits in octal) for a stat answer, or
/// `key=-1/ERRNO`.
static void attributes(report *r, const char *key, int result, int code, const struct stat *s) {
    if (result != 0)
        item(r, key, "-1/%s", errno_name(code));
    else
        item(r, key, "%lld,%o,%lu,%lld", (long long)s->st_size, (unsigned)(s->st_mode & 07777),
             (unsigned long)s->st_nlink, (long long)s->st_mtim.tv_sec);
}

/// stat DIR: DIR/io/s ("abc", mode 644, modified at 1,000,000,000 s) through stat, lstat,
/// fstat, fstatat and statx, then the sibling DIR/io2/s, made alike, through stat.
static int probe_stat(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "stat DIR");
    char path[PATH_MAX], sibling[PATH_MAX];
    joined(path, sizeof path, argv[0], "io/s");
    joined(sibling, sizeof sibling, argv[0], "io2/s");
    for (int i = 0; i < 2; i++) {
        int fd = open(i ? sibling : path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, "abc", 3) != 3) return usage(r, "stat DIR (with DIR/io and DIR/io2)");
        fchmod(fd, 0644);
        struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
        futimens(fd, times);
        close(fd);
    }
    struct stat s;
    int result;
    errno = 0;
    result = stat(path, &s);
    attributes(r, "stat", result, errno, &s);
    result = lstat(path, &s);
    attributes(r, "lstat", result, errno, &s);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    result = fd < 0 ? -1 : fstat(fd, &s);
    attributes(r, "fstat", result, errno, &s);
    if (fd >= 0) close(fd);
    int directory = open(argv[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    result = fstatat(directory, "io/s", &s, 0);
    attributes(r, "fstatat", result, errno, &s);
    if (directory >= 0) close(directory);
    struct statx x;
    result = statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &x);
    if (result == 0) {
        memset(&s, 0, sizeof s);
        s.st_size = (off_t)x.stx_size;
        s.st_mode = x.stx_mode;
        s.st_nlink = x.stx_nlink;
        s.st_mtim.tv_sec = x.stx_mtime.tv_sec;
    }
    attributes(r, "statx", result, errno, &s);
    result = stat(sibling, &s);
    attributes(r, "sibling-stat", result, errno, &s);
    return 0;
}

/// `key=HEX` of `count` bytes, or `key=-1/ERRNO`.
static void bytes_read(report *r, const char *key, long count, int code, const unsigned char *bytes) {
    if (count < 0) {
        item(r, key, "-1/%s", errno_name(code));
        return;
    }
    char hex[2 * 64 + 1] = "";
    for (long i = 0; i < count && i < 64; i++) snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
    item(r, key, "%s", hex);
}

/// corrupt DIR: "abcdefgh" written to DIR/io/c and DIR/io2/c, each read back: what each
/// read returned, in hex.
static int probe_corrupt(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "corrupt DIR");
    static const char *const names[] = {"io/c", "io2/c"};
    static const char *const keys[] = {"read", "sibling-read"};
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX];
        joined(path, sizeof path, argv[0], names[i]);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, "abcdefgh", 8) != 8) return usage(r, "corrupt DIR (with DIR/io and DIR/io2)");
        unsigned char back[8];
        errno = 0;
        long count = (long)pread(fd, back, sizeof back, 0);
        bytes_read(r, keys[i], count, errno, back);
        close(fd);
    }
    return 0;
}

/// stream: a connection to a listener of its own on 127.0.0.1: two sends of 600 bytes and a
/// third of one, then what the peer reads until the end (its byte count), and whether
/// the connection then reads as ended from the client's side.
static int probe_stream(report *r, int argc, const char *const *argv) {
    (void)argv;
    if (argc != 0) return usage(r, "stream");
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, length) != 0 || listen(listener, 1) != 0 ||
        getsockname(listener, (struct sockaddr *)&address, &length) != 0)
        return usage(r, "stream (a listener on 127.0.0.1)");
    int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (client < 0 || connect(client, (struct sockaddr *)&address, length) != 0)
        return usage(r, "stream (a connection to it)");
    int peer = accept(listener, NULL, NULL);
    if (peer < 0) return usage(r, "stream (its accept)");
    char bytes[600];
    memset(bytes, 'x', sizeof bytes);
    CALL(r, "send", send(client, bytes, sizeof bytes, 0));
    CALL(r, "send2", send(client, bytes, sizeof bytes, 0));
    CALL(r, "send3", send(client, bytes, 1, 0));
    shutdown(client, SHUT_WR);
    long total = 0, got;
    char in[4096];
    while ((got = (long)recv(peer, in, sizeof in, 0)) > 0) total += got;
    item(r, "peer", "%ld", total);
    close(peer);
    close(client);
    close(listener);
    return 0;
}

/// glob DIR: one byte written to each file that a pattern may or may not match.
static int probe_glob(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "glob DIR");
    static const char *const names[] = {"io/a.log",     "io/sub/deep/b.log", "io/a.txt",
                                        "io/x.log.txt", "io2/c.log",         "io2/sub/d.log"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        open_and_write(r, names[i], AT_FDCWD, joined(path, sizeof path, argv[0], names[i]));
    return 0;
}

/// descriptors DIR: copies of a descriptor on DIR/io/bad (dup, dup2, dup3, F_DUPFD), then
/// its numbers given to DIR/io2 files: by open after close, by a dup2 onto it, and by a
/// raw system call that neither delivery sees (only a forgotten close can make that
/// number look faulty). High numbers keep other threads of a test process off them.
static int probe_descriptors(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "descriptors DIR");
    char bad[PATH_MAX], good[PATH_MAX];
    joined(bad, sizeof bad, argv[0], "io/bad");
    joined(good, sizeof good, argv[0], "io2/good");
    int faulty = open(bad, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int outside = open(good, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (faulty < 0 || outside < 0) return usage(r, "descriptors DIR (with DIR/io and DIR/io2)");
    CALL(r, "faulty", write(faulty, "x", 1));
    CALL(r, "outside", write(outside, "x", 1));
    int copy = dup(faulty);
    CALL(r, "dup", write(copy, "x", 1));
    int copy2 = dup2(faulty, 601);
    CALL(r, "dup2", write(copy2, "x", 1));
    int copy3 = dup3(faulty, 602, O_CLOEXEC);
    CALL(r, "dup3", write(copy3, "x", 1));
    int copy4 = fcntl(faulty, F_DUPFD_CLOEXEC, 603);
    CALL(r, "fcntl-dupfd", write(copy4, "x", 1));

    // 601 closed, then made again by a system call no interceptor sees.
    close(601);
    int raw = (int)syscall(SYS_openat, AT_FDCWD, good, O_WRONLY | O_APPEND | O_CLOEXEC);
    // In a test process with hundreds of descriptors open, the open may itself have taken
    // 601 (dup3 onto itself is EINVAL); dup3 answers EBUSY while another thread is giving
    // that number out, and is asked again.
    int remade = raw == 601 ? 601 : -1;
    for (int attempt = 0; raw >= 0 && remade < 0 && attempt < 1000; attempt++) {
        remade = (int)syscall(SYS_dup3, raw, 601, O_CLOEXEC);
        if (remade < 0 && errno != EBUSY) break;
    }
    if (raw >= 0 && raw != 601) syscall(SYS_close, raw);
    CALL(r, "closed-then-raw", remade == 601 ? write(601, "x", 1) : -2);
    // 602 redirected to the outside file.
    dup2(outside, 602);
    CALL(r, "dup2-over", write(602, "x", 1));
    // The first faulty number, closed and opened again on the outside file.
    close(copy);
    close(faulty);
    int reopened = open(good, O_WRONLY | O_APPEND | O_CLOEXEC);
    CALL(r, "closed-then-open", write(reopened, "x", 1));
    // A new descriptor on the faulty file is faulty again.
    int again = open(bad, O_WRONLY | O_APPEND | O_CLOEXEC);
    CALL(r, "faulty-again", write(again, "x", 1));
    close(again);
    close(reopened);
    close(601);
    close(602);
    close(copy4);
    close(outside);
    return 0;
}

/// stdio DIR: buffered writes, flushes and closes of streams on DIR/io/s and DIR/io/t,
/// then on DIR/io2/u; the sizes the files end with.
static int probe_stdio(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "stdio DIR");
    char s[PATH_MAX], t[PATH_MAX], u[PATH_MAX];
    joined(s, sizeof s, argv[0], "io/s");
    joined(t, sizeof t, argv[0], "io/t");
    joined(u, sizeof u, argv[0], "io2/u");
    errno = 0;
    FILE *first = fopen(s, "w");
    descriptor(r, "fopen", first ? 0 : -1, errno);
    if (!first) return 0;
    errno = 0;
    size_t wrote = fwrite("abc", 1, 3, first);
    outcome(r, "fwrite", (long)wrote, wrote < 3, errno);
    errno = 0;
    int flushed = fflush(first);
    outcome(r, "fflush", flushed, flushed != 0, errno);
    item(r, "ferror", "%d", ferror(first) != 0);
    errno = 0;
    int closed = fclose(first);
    outcome(r, "fclose", closed, closed != 0, errno);

    FILE *second = fopen(t, "w");
    if (!second) return usage(r, "stdio DIR (cannot open DIR/io/t)");
    errno = 0;
    int put_result = fputs("abc", second);
    outcome(r, "fputs", put_result >= 0 ? 0 : put_result, put_result < 0, errno);
    errno = 0;
    closed = fclose(second);
    outcome(r, "fclose-pending", closed, closed != 0, errno);
    item(r, "sizes", "%lld,%lld", file_size(s), file_size(t));

    FILE *sibling = fopen(u, "w");
    if (!sibling) return usage(r, "stdio DIR (cannot open DIR/io2/u)");
    errno = 0;
    wrote = fwrite("abc", 1, 3, sibling);
    outcome(r, "sibling-fwrite", (long)wrote, wrote < 3, errno);
    errno = 0;
    closed = fclose(sibling);
    outcome(r, "sibling-fclose", closed, closed != 0, errno);
    item(r, "sibling-size", "%lld", file_size(u));
    return 0;
}

/// Character, line and formatted reads of `path` (written with "abc\n12\n" first), in
/// one stream; the error flag is cleared after each so every read starts afresh.
static void stdio_reads(report *r, const char *prefix, const char *path) {
    char key[32], line_buffer[16];
    FILE *out = fopen(path, "w");
    if (!out || fputs("abc\n12\n", out) < 0 || fclose(out) != 0) {
        snprintf(key, sizeof key, "%swrite", prefix);
        item(r, key, "failed");
        return;
    }
    FILE *f = fopen(path, "r");
    snprintf(key, sizeof key, "%sfopen", prefix);
    descriptor(r, key, f ? 0 : -1, errno);
    if (!f) return;
    errno = 0;
    int c = fgetc(f);
    snprintf(key, sizeof key, "%sfgetc", prefix);
    outcome(r, key, c, c == EOF && ferror(f), errno);
    clearerr(f);
    errno = 0;
    c = getc(f);
    snprintf(key, sizeof key, "%sgetc", prefix);
    outcome(r, key, c, c == EOF && ferror(f), errno);
    clearerr(f);
    char *line = NULL;
    size_t capacity = 0;
    errno = 0;
    ssize_t length = getline(&line, &capacity, f);
    snprintf(key, sizeof key, "%sgetline", prefix);
    outcome(r, key, (long)length, length < 0 && ferror(f), errno);
    free(line);
    clearerr(f);
    int number = 0;
    errno = 0;
    int converted = fscanf(f, "%d", &number);
    snprintf(key, sizeof key, "%sfscanf", prefix);
    outcome(r, key, converted, converted == EOF && ferror(f), errno);
    clearerr(f);
    errno = 0;
    char *got = fgets(line_buffer, sizeof line_buffer, f);
    snprintf(key, sizeof key, "%sfgets", prefix);
    outcome(r, key, got != NULL, got == NULL && ferror(f), errno);
    fclose(f);
}

/// stdio-reads DIR: stdio reads of DIR/io/r, then of DIR/io2/r.
static int probe_stdio_reads(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "stdio-reads DIR");
    char path[PATH_MAX];
    stdio_reads(r, "", joined(path, sizeof path, argv[0], "io/r"));
    stdio_reads(r, "sibling-", joined(path, sizeof path, argv[0], "io2/r"));
    return 0;
}

/// names DIR: rename, unlink, mkdir and their *at forms into, out of and beside DIR/io
/// (DIR/io/victim, DIR/io2/mover and DIR/io2/victim exist).
static int probe_names(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "names DIR");
    const char *dir = argv[0];
    char a[PATH_MAX], b[PATH_MAX];
    int base = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (base < 0) return usage(r, "names DIR");
    CALL(r, "rename-into", rename(joined(a, sizeof a, dir, "io2/mover"), joined(b, sizeof b, dir, "io/moved")));
    CALL(r, "rename-out", rename(joined(a, sizeof a, dir, "io/victim"), joined(b, sizeof b, dir, "io2/escaped")));
    CALL(r, "renameat-within", renameat(base, "io/victim", base, "io/renamed"));
    CALL(r, "unlink", unlink(joined(a, sizeof a, dir, "io/victim")));
    CALL(r, "unlinkat", unlinkat(base, "io/victim", 0));
    CALL(r, "mkdir", mkdir(joined(a, sizeof a, dir, "io/made"), 0755));
    CALL(r, "mkdirat", mkdirat(base, "io/made-at", 0755));
    CALL(r, "sibling-rename", renameat(base, "io2/mover", base, "io2/moved"));
    CALL(r, "sibling-unlink", unlink(joined(a, sizeof a, dir, "io2/victim")));
    CALL(r, "sibling-mkdir", mkdir(joined(a, sizeof a, dir, "io2/made"), 0755));
    item(r, "victim-left", "%d", access(joined(a, sizeof a, dir, "io/victim"), F_OK) == 0);
    close(base);
    return 0;
}

/// writes DIR COUNT: COUNT one-byte writes to DIR/io/seq, results comma-separated.
static int probe_writes(report *r, int argc, const char *const *argv) {
    if (argc != 2) return usage(r, "writes DIR COUNT");
    char path[PATH_MAX];
    int count = atoi(argv[1]);
    int fd = open(joined(path, sizeof path, argv[0], "io/seq"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || count < 1) return usage(r, "writes DIR COUNT (DIR/io must exist)");
    put(r, "writes=");
    for (int i = 0; i < count; i++) {
        errno = 0;
        long value = (long)write(fd, "x", 1);
        if (value < 0)
            put(r, "%s-1/%s", i ? "," : "", errno_name(errno));
        else
            put(r, "%s%ld", i ? "," : "", value);
    }
    close(fd);
    return 0;
}

/// draws DIR COUNT: COUNT one-byte writes to DIR/io/draws: how many failed with ENOSPC,
/// and which (1 written, 0 ENOSPC, ? anything else).
static int probe_draws(report *r, int argc, const char *const *argv) {
    if (argc != 2) return usage(r, "draws DIR COUNT");
    char path[PATH_MAX];
    int count = atoi(argv[1]);
    int fd = open(joined(path, sizeof path, argv[0], "io/draws"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || count < 1 || count > 4096) return usage(r, "draws DIR COUNT (DIR/io must exist, COUNT 1…4096)");
    static char bits[4097];
    int failed = 0;
    for (int i = 0; i < count; i++) {
        errno = 0;
        long value = (long)write(fd, "x", 1);
        bits[i] = value == 1 ? '1' : (value < 0 && errno == ENOSPC) ? '0' : '?';
        failed += bits[i] == '0';
    }
    bits[count] = 0;
    close(fd);
    item(r, "failed", "%d", failed);
    item(r, "bits", "%s", bits);
    return 0;
}

// MARK: - Environment

/// getenv NAME…: what getenv answers for each name in turn (`secure:NAME` asks
/// secure_getenv), `(unset)` for NULL.
static int probe_getenv(report *r, int argc, const char *const *argv) {
    if (argc < 1) return usage(r, "getenv NAME…");
    for (int i = 0; i < argc; i++) {
        const char *name = argv[i];
        const char *value;
        if (strncmp(name, "secure:", 7) == 0)
            value = secure_getenv(name + 7);
        else
            value = getenv(name);
        item(r, name, "%s", value ? value : "(unset)");
    }
    return 0;
}

// MARK: - Network

static int tcp_connect(const char *host, int port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int status = connect(fd, (struct sockaddr *)&address, sizeof address);
    int code = errno;
    close(fd);
    errno = code;
    return status;
}

static int64_t raw_ns(clockid_t clock) {
    struct timespec now = {0, 0};
    syscall(SYS_clock_gettime, clock, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int64_t chaos_probe_real_ns(void) { return raw_ns(CLOCK_REALTIME); }

/// connect HOST LABEL:PORT…: a TCP connect to each port.
static int probe_connect(report *r, int argc, const char *const *argv) {
    if (argc < 2) return usage(r, "connect HOST LABEL:PORT…");
    for (int i = 1; i < argc; i++) {
        const char *colon = strrchr(argv[i], ':');
        if (!colon) return usage(r, "connect HOST LABEL:PORT…");
        char label[64];
        snprintf(label, sizeof label, "%.*s", (int)(colon - argv[i]), argv[i]);
        CALL(r, label, tcp_connect(argv[0], atoi(colon + 1)));
    }
    return 0;
}

/// connect-wait HOST PORT MS: a TCP connect, and whether it took at least MS milliseconds
/// (measured on the real monotonic clock).
static int probe_connect_wait(report *r, int argc, const char *const *argv) {
    if (argc != 3) return usage(r, "connect-wait HOST PORT MS");
    int64_t start = raw_ns(CLOCK_MONOTONIC);
    CALL(r, "connect", tcp_connect(argv[0], atoi(argv[1])));
    int64_t waited = (raw_ns(CLOCK_MONOTONIC) - start) / 1000000;
    if (waited >= atoi(argv[2]))
        item(r, "waited", "enough");
    else
        item(r, "waited", "%lldms", (long long)waited);
    return 0;
}

static const char *eai_name(int code) {
    switch (code) {
    case 0: return "ok";
    case EAI_NONAME: return "EAI_NONAME";
    case EAI_AGAIN: return "EAI_AGAIN";
    case EAI_FAIL: return "EAI_FAIL";
    case EAI_NODATA: return "EAI_NODATA";
    case EAI_FAMILY: return "EAI_FAMILY";
    case EAI_SERVICE: return "EAI_SERVICE";
    case EAI_SYSTEM: return "EAI_SYSTEM";
    case EAI_MEMORY: return "EAI_MEMORY";
    case EAI_ADDRFAMILY: return "EAI_ADDRFAMILY";
    default: {
        static __thread char number[24];
        snprintf(number, sizeof number, "eai%d", code);
        return number;
    }
    }
}

static const char *h_errno_name(int code) {
    switch (code) {
    case HOST_NOT_FOUND: return "HOST_NOT_FOUND";
    case TRY_AGAIN: return "TRY_AGAIN";
    case NO_RECOVERY: return "NO_RECOVERY";
    case NO_DATA: return "NO_DATA";
    default: {
        static __thread char number[24];
        snprintf(number, sizeof number, "h_errno%d", code);
        return number;
    }
    }
}

/// dns NAME…: getaddrinfo (IPv4) for each name; `hostbyname:NAME` asks gethostbyname.
static int probe_dns(report *r, int argc, const char *const *argv) {
    if (argc < 1) return usage(r, "dns NAME…");
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "hostbyname:", 11) == 0) {
            h_errno = 0;
            struct hostent *found = gethostbyname(argv[i] + 11);
            if (found)
                item(r, argv[i], "ok");
            else
                item(r, argv[i], "%s", h_errno_name(h_errno));
            continue;
        }
        struct addrinfo hints, *found = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        int code = getaddrinfo(argv[i], NULL, &hints, &found);
        item(r, argv[i], "%s", eai_name(code));
        if (found) freeaddrinfo(found);
    }
    return 0;
}

// MARK: - Clock

/// Nanoseconds to whole seconds, rounded to the nearest.
static long long rounded_seconds(int64_t ns) {
    return (long long)((ns >= 0 ? ns + 500000000 : ns - 500000000) / 1000000000);
}

static int64_t ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec; }

/// How far a reading of `clock` is from the real one, in seconds.
static void clock_shift(report *r, const char *key, clockid_t clock) {
    struct timespec seen;
    int64_t before = raw_ns(clock);
    if (clock_gettime(clock, &seen) != 0) {
        item(r, key, "-1/%s", errno_name(errno));
        return;
    }
    int64_t after = raw_ns(clock);
    item(r, key, "%lld", rounded_seconds(ns_of(&seen) - before / 2 - after / 2));
}

/// clock DIR: every way of reading the wall clock, the monotonic clock, and the times of
/// a file made just now (DIR/clock-file), as seconds from the real clock (`…-age`: from
/// the faked now).
static int probe_clock(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "clock DIR");
    int64_t before = raw_ns(CLOCK_REALTIME);
    time_t seconds = time(NULL);
    int64_t after = raw_ns(CLOCK_REALTIME);
    // time() truncates: the middle of its second stands for it.
    item(r, "time", "%lld", rounded_seconds((int64_t)seconds * 1000000000 + 500000000 - before / 2 - after / 2));

    struct timeval value;
    before = raw_ns(CLOCK_REALTIME);
    gettimeofday(&value, NULL);
    after = raw_ns(CLOCK_REALTIME);
    item(r, "gettimeofday", "%lld",
         rounded_seconds((int64_t)value.tv_sec * 1000000000 + (int64_t)value.tv_usec * 1000 - before / 2 - after / 2));

    clock_shift(r, "realtime", CLOCK_REALTIME);
    clock_shift(r, "realtime-coarse", CLOCK_REALTIME_COARSE);
    clock_shift(r, "tai", CLOCK_TAI);

    struct timespec spec;
    before = raw_ns(CLOCK_REALTIME);
    timespec_get(&spec, TIME_UTC);
    after = raw_ns(CLOCK_REALTIME);
    item(r, "timespec_get", "%lld", rounded_seconds(ns_of(&spec) - before / 2 - after / 2));

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    struct timeb legacy;
    before = raw_ns(CLOCK_REALTIME);
    ftime(&legacy);
    after = raw_ns(CLOCK_REALTIME);
#pragma GCC diagnostic pop
    item(r, "ftime", "%lld",
         rounded_seconds((int64_t)legacy.time * 1000000000 + (int64_t)legacy.millitm * 1000000 - before / 2 -
                         after / 2));

    clock_shift(r, "monotonic", CLOCK_MONOTONIC);

    char path[PATH_MAX];
    joined(path, sizeof path, argv[0], "clock-file");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, "x", 1) != 1) return usage(r, "clock DIR (DIR must be writable)");
    struct stat by_path, by_fd;
    struct statx extended;
    int stat_status = stat(path, &by_path), fstat_status = fstat(fd, &by_fd);
    int statx_status = statx(AT_FDCWD, path, 0, STATX_MTIME, &extended);
    close(fd);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t real = raw_ns(CLOCK_REALTIME);
    if (stat_status != 0 || fstat_status != 0 || statx_status != 0) return usage(r, "clock DIR (stat failed)");
    int64_t statx_mtime = (int64_t)extended.stx_mtime.tv_sec * 1000000000 + extended.stx_mtime.tv_nsec;
    item(r, "stat-mtime", "%lld", rounded_seconds(ns_of(&by_path.st_mtim) - real));
    item(r, "fstat-mtime", "%lld", rounded_seconds(ns_of(&by_fd.st_mtim) - real));
    item(r, "statx-mtime", "%lld", rounded_seconds(statx_mtime - real));
    item(r, "stat-age", "%lld", rounded_seconds(ns_of(&now) - ns_of(&by_path.st_mtim)));
    return 0;
}

// MARK: - SQLite (loaded at run time: the suite runs where it is missing, and skips these)

typedef struct sqlite3 sqlite3;
typedef int (*sqlite_row_fn)(void *, int, char **, char **);
static int (*sqlite_open_v2)(const char *, sqlite3 **, int, const char *);
static int (*sqlite_exec)(sqlite3 *, const char *, sqlite_row_fn, void *, char **);
static int (*sqlite_close)(sqlite3 *);
static const char *(*sqlite_errmsg)(sqlite3 *);

enum { SQLITE_OPEN_READWRITE = 0x2, SQLITE_OPEN_CREATE = 0x4 };

int chaos_probe_sqlite_load(void) {
    static void *library;
    if (!library) library = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_GLOBAL);
    if (!library) return 0;
    sqlite_open_v2 = (int (*)(const char *, sqlite3 **, int, const char *))dlsym(library, "sqlite3_open_v2");
    sqlite_exec = (int (*)(sqlite3 *, const char *, sqlite_row_fn, void *, char **))dlsym(library, "sqlite3_exec");
    sqlite_close = (int (*)(sqlite3 *))dlsym(library, "sqlite3_close");
    sqlite_errmsg = (const char *(*)(sqlite3 *))dlsym(library, "sqlite3_errmsg");
    return sqlite_open_v2 && sqlite_exec && sqlite_close && sqlite_errmsg;
}

static int sqlite_collect(void *context, int columns, char **values, char **names) {
    (void)names;
    report *r = context;
    for (int i = 0; i < columns; i++) put(r, "%s%s", i ? "," : "", values[i] ? values[i] : "NULL");
    return 0;
}

/// sqlite-setup DB MODE: a table t with the rows 1, 2, 3, in journal mode MODE (delete:
/// pages' old contents go to a rollback journal as soon as they change; wal: the changes
/// go to the write-ahead log at COMMIT).
/// sqlite-commit DB: BEGIN, INSERT 4, COMMIT: each one's result code (and error message).
/// sqlite-rows DB: the rows of t, and PRAGMA integrity_check.
static int probe_sqlite(report *r, const char *name, int argc, const char *const *argv) {
    bool setup = strcmp(name, "sqlite-setup") == 0;
    if (argc != (setup ? 2 : 1)) return usage(r, "sqlite-setup DB MODE, sqlite-commit DB or sqlite-rows DB");
    if (!chaos_probe_sqlite_load()) return usage(r, "sqlite probes need libsqlite3.so.0");
    sqlite3 *db = NULL;
    int opened = sqlite_open_v2(argv[0], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    item(r, "open", "%d", opened);
    if (opened != 0) {
        sqlite_close(db);
        return 0;
    }
    if (setup) {
        char sql[160];
        snprintf(sql, sizeof sql, "PRAGMA journal_mode=%.10s; CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3);",
                 argv[1]);
        item(r, "setup", "%d", sqlite_exec(db, sql, NULL, NULL, NULL));
    } else if (strcmp(name, "sqlite-commit") == 0) {
        static const char *const steps[][2] = {
            {"begin", "BEGIN"}, {"insert", "INSERT INTO t VALUES (4)"}, {"commit", "COMMIT"}};
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            int status = sqlite_exec(db, steps[i][1], NULL, NULL, NULL);
            item(r, steps[i][0], "%d", status);
            if (status != 0) put(r, ":\"%s\"", sqlite_errmsg(db));
        }
    } else if (strcmp(name, "sqlite-rows") == 0) {
        item(r, "rows", "");
        int status =
            sqlite_exec(db, "SELECT group_concat(x) FROM (SELECT x FROM t ORDER BY x)", sqlite_collect, r, NULL);
        if (status != 0) put(r, "error%d", status);
        item(r, "integrity", "");
        status = sqlite_exec(db, "PRAGMA integrity_check", sqlite_collect, r, NULL);
        if (status != 0) put(r, "error%d", status);
    } else {
        sqlite_close(db);
        return usage(r, "sqlite-setup DB MODE, sqlite-commit DB or sqlite-rows DB");
    }
    item(r, "close", "%d", sqlite_close(db));
    return 0;
}

// MARK: - Call scripts (the conformance matrix)

/// script DIR SLOW_MS STEP…: each STEP is `OP:NAME`, one call on the file DIR/NAME, and the
/// result is one character per step: `A` when chaos acted (the call failed with an errno a
/// fault injects — ENOSPC, EIO, EACCES — or took at least SLOW_MS milliseconds: a delay),
/// `P` when it passed (the real call, fast), `E` for any other failure. OP is `open`
/// (O_RDWR|O_CREAT|O_APPEND; the descriptor is kept for NAME), `write` (one byte),
/// `read` (pread of one byte at 0), `fsync` or `close`, the last four on NAME's descriptor.
/// A process tree's steps (the probe program only): `fork.OP:NAME` makes the call in a
/// forked child on the descriptor it inherits; `exec.OP:NAME` in a child that makes the
/// descriptor its standard output (`cmd >> NAME`) and execs this program to call there.
static int probe_script(report *r, int argc, const char *const *argv);

/// The mark of a call: `A` (a fault's errno, or slow), `P` (passed), `E` (another failure).
static char script_mark(long value, int code, int64_t took, int64_t slow_ns) {
    if (value < 0) return (code == ENOSPC || code == EIO || code == EACCES) ? 'A' : 'E';
    return slow_ns > 0 && took >= slow_ns ? 'A' : 'P';
}

/// Exit statuses that carry a mark out of a child.
static int mark_status(char mark) { return mark == 'P' ? 0 : mark == 'A' ? 10 : 11; }
static char status_mark(int status) {
    if (!WIFEXITED(status)) return 'E';
    return WEXITSTATUS(status) == 0 ? 'P' : WEXITSTATUS(status) == 10 ? 'A' : 'E';
}

/// One write or read (OP) on descriptor `fd`, as a script step makes it.
static long script_transfer(const char *op, size_t op_length, int fd) {
    char byte;
    if (op_length == 5 && strncmp(op, "write", 5) == 0) return (long)write(fd, "x", 1);
    if (op_length == 4 && strncmp(op, "read", 4) == 0) return (long)pread(fd, &byte, 1, 0);
    errno = EINVAL;
    return -1;
}

/// inherited OP FD SLOW_MS: the call of an `exec.` step, made by the program it execs; the
/// mark is its exit status (its standard output is the file).
static int probe_inherited(report *r, int argc, const char *const *argv) {
    if (argc < 3) return usage(r, "inherited OP FD SLOW_MS");
    int64_t start = raw_ns(CLOCK_MONOTONIC);
    errno = 0;
    long value = script_transfer(argv[0], strlen(argv[0]), atoi(argv[1]));
    int code = errno;
    char mark = script_mark(value, code, raw_ns(CLOCK_MONOTONIC) - start, (int64_t)atoi(argv[2]) * 1000000);
    put(r, "%c", mark);
    return mark_status(mark);
}

/// Runs one `fork.` or `exec.` step in a child and returns its mark.
static char script_child(int exec, const char *op, size_t op_length, int fd, int64_t slow_ns) {
    pid_t child = fork();
    if (child < 0) return 'E';
    if (child == 0) {
        if (exec) {
            char self[PATH_MAX], operation[16], slow[32];
            ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
            if (length <= 0 || dup2(fd, 1) != 1 || op_length >= sizeof operation) _exit(11);
            self[length] = 0;
            snprintf(operation, sizeof operation, "%.*s", (int)op_length, op);
            snprintf(slow, sizeof slow, "%lld", (long long)(slow_ns / 1000000));
            execl(self, "probe", "inherited", operation, "1", slow, (char *)NULL);
            _exit(11);
        }
        int64_t start = raw_ns(CLOCK_MONOTONIC);
        errno = 0;
        long value = script_transfer(op, op_length, fd);
        _exit(mark_status(script_mark(value, errno, raw_ns(CLOCK_MONOTONIC) - start, slow_ns)));
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    return status_mark(status);
}

static int probe_script(report *r, int argc, const char *const *argv) {
    if (argc < 3) return usage(r, "script DIR SLOW_MS OP:NAME…");
    enum { NAMES = 16 };
    const char *names[NAMES] = {0};
    int fds[NAMES];
    for (int i = 0; i < NAMES; i++) fds[i] = -1;
    int64_t slow_ns = (int64_t)atoi(argv[1]) * 1000000;
    char path[PATH_MAX];
    for (int step = 2; step < argc; step++) {
        const char *colon = strchr(argv[step], ':');
        if (!colon || colon == argv[step] || !colon[1])
            return usage(r, "script DIR SLOW_MS OP:NAME… (a step is OP:NAME)");
        size_t op_length = (size_t)(colon - argv[step]);
        const char *name = colon + 1;
        int slot = -1;
        for (int i = 0; i < NAMES && slot < 0; i++) {
            if (!names[i]) {
                names[i] = name;
                slot = i;
            } else if (strcmp(names[i], name) == 0)
                slot = i;
        }
        if (slot < 0) return usage(r, "script: at most 16 file names");
        int forked = strncmp(argv[step], "fork.", 5) == 0, execs = strncmp(argv[step], "exec.", 5) == 0;
        if (forked || execs) {
            put(r, "%c", fds[slot] < 0 ? 'E' : script_child(execs, argv[step] + 5, op_length - 5, fds[slot], slow_ns));
            continue;
        }
        int64_t start = raw_ns(CLOCK_MONOTONIC);
        long value = 0;
        errno = 0;
        if (op_length == 4 && strncmp(argv[step], "open", 4) == 0) {
            if (fds[slot] >= 0) close(fds[slot]);
            value = fds[slot] =
                open(joined(path, sizeof path, argv[0], name), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        } else if (op_length == 5 && strncmp(argv[step], "write", 5) == 0) {
            value = (long)write(fds[slot], "x", 1);
        } else if (op_length == 4 && strncmp(argv[step], "read", 4) == 0) {
            char byte;
            value = (long)pread(fds[slot], &byte, 1, 0);
        } else if (op_length == 5 && strncmp(argv[step], "fsync", 5) == 0) {
            value = fsync(fds[slot]);
        } else if (op_length == 5 && strncmp(argv[step], "close", 5) == 0) {
            value = close(fds[slot]);
            fds[slot] = -1;
        } else {
            return usage(r, "script: OP is open, write, read, fsync or close");
        }
        int code = errno;
        put(r, "%c", script_mark(value, code, raw_ns(CLOCK_MONOTONIC) - start, slow_ns));
    }
    for (int i = 0; i < NAMES; i++)
        if (fds[i] >= 0) close(fds[i]);
    return 0;
}

// MARK: - Processes and directories

static void *nothing(void *argument) { return argument; }

/// process: a posix_spawn, a fork, a thread, system, popen and a last posix_spawn, each
/// reported as it ended (a child that started ends at once).
static int probe_process(report *r, int argc, const char *const *argv) {
    (void)argv;
    if (argc != 0) return usage(r, "process");
    static char *const arguments[] = {"true", NULL};
    extern char **environ;
    for (int round = 0; round < 2; round++) {
        pid_t pid = 0;
        int status = posix_spawn(&pid, "/bin/true", NULL, NULL, arguments, environ);
        if (status == 0) waitpid(pid, NULL, 0);
        item(r, round ? "spawn-again" : "spawn", "%s", errno_name(status));
        if (round) break;
        errno = 0;
        pid_t child = fork();
        if (child == 0) _exit(0);
        int code = errno;
        if (child > 0) waitpid(child, NULL, 0);
        outcome(r, "fork", child > 0 ? 1 : child, child < 0, code);
        pthread_t thread;
        int made = pthread_create(&thread, NULL, nothing, NULL);
        if (made == 0) pthread_join(thread, NULL);
        item(r, "thread", "%s", errno_name(made));
        errno = 0;
        int shell = system("exit 3");
        code = errno;
        item(r, "system", "%d/%s", WIFEXITED(shell) ? WEXITSTATUS(shell) : -1, errno_name(code));
        errno = 0;
        FILE *pipe = popen("true", "r");
        code = errno;
        if (pipe)
            item(r, "popen", "ok/%d", WEXITSTATUS(pclose(pipe)));
        else
            item(r, "popen", "NULL/%s", errno_name(code));
    }
    return 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/// `key=a,b,c` for the sorted names opendir and readdir list in `path` (without . and ..),
/// `key=-1/ERRNO` for the call that failed.
static void listing(report *r, const char *key, const char *path) {
    errno = 0;
    DIR *stream = opendir(path);
    if (!stream) {
        item(r, key, "-1/%s", errno_name(errno));
        return;
    }
    char *names[64];
    int count = 0;
    struct dirent *entry;
    errno = 0;
    while (count < 64 && (entry = readdir(stream)))
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) names[count++] = strdup(entry->d_name);
    int code = errno;
    closedir(stream);
    qsort(names, (size_t)count, sizeof names[0], compare_names);
    item(r, key, "%s", count ? "" : "-");
    for (int i = 0; i < count; i++) {
        put(r, "%s%s", i ? "," : "", names[i]);
        free(names[i]);
    }
    if (code) put(r, "/%s", errno_name(code));
}

/// dirs DIR: the listings of DIR/io and of its sibling DIR/io2.
static int probe_dirs(report *r, int argc, const char *const *argv) {
    if (argc != 1) return usage(r, "dirs DIR");
    char path[PATH_MAX];
    listing(r, "io", joined(path, sizeof path, argv[0], "io"));
    listing(r, "io2", joined(path, sizeof path, argv[0], "io2"));
    return 0;
}

// MARK: - Dispatch

int chaos_probe_run(const char *name, int argc, const char *const *argv, char *out, size_t capacity) {
    if (!out || capacity == 0) return -1;
    out[0] = 0;
    report r = {out, capacity, 0};
    if (!name) return usage(&r, "a probe name");
    if (argc < 0 || (argc > 0 && !argv)) return usage(&r, "arguments");
    int saved = errno;
    int status;
    if (strcmp(name, "files") == 0)
        status = probe_files(&r, argc, argv);
    else if (strcmp(name, "paths") == 0)
        status = probe_paths(&r, argc, argv);
    else if (strcmp(name, "glob") == 0)
        status = probe_glob(&r, argc, argv);
    else if (strcmp(name, "descriptors") == 0)
        status = probe_descriptors(&r, argc, argv);
    else if (strcmp(name, "stat") == 0)
        status = probe_stat(&r, argc, argv);
    else if (strcmp(name, "corrupt") == 0)
        status = probe_corrupt(&r, argc, argv);
    else if (strcmp(name, "stream") == 0)
        status = probe_stream(&r, argc, argv);
    else if (strcmp(name, "stdio") == 0)
        status = probe_stdio(&r, argc, argv);
    else if (strcmp(name, "stdio-reads") == 0)
        status = probe_stdio_reads(&r, argc, argv);
    else if (strcmp(name, "names") == 0)
        status = probe_names(&r, argc, argv);
    else if (strcmp(name, "writes") == 0)
        status = probe_writes(&r, argc, argv);
    else if (strcmp(name, "draws") == 0)
        status = probe_draws(&r, argc, argv);
    else if (strcmp(name, "script") == 0)
        status = probe_script(&r, argc, argv);
    else if (strcmp(name, "inherited") == 0)
        status = probe_inherited(&r, argc, argv);
    else if (strcmp(name, "getenv") == 0)
        status = probe_getenv(&r, argc, argv);
    else if (strcmp(name, "connect") == 0)
        status = probe_connect(&r, argc, argv);
    else if (strcmp(name, "connect-wait") == 0)
        status = probe_connect_wait(&r, argc, argv);
    else if (strcmp(name, "dns") == 0)
        status = probe_dns(&r, argc, argv);
    else if (strcmp(name, "clock") == 0)
        status = probe_clock(&r, argc, argv);
    else if (strcmp(name, "process") == 0)
        status = probe_process(&r, argc, argv);
    else if (strcmp(name, "dirs") == 0)
        status = probe_dirs(&r, argc, argv);
    else if (strncmp(name, "sqlite-", 7) == 0)
        status = probe_sqlite(&r, name, argc, argv);
    else
        status = usage(
            &r, "files, paths, glob, descriptors, stat, corrupt, stream, stdio, stdio-reads, names, writes, draws, "
                "script, getenv, connect, connect-wait, dns, clock, process, dirs, sqlite-setup, sqlite-commit "
                "or sqlite-rows");
    errno = saved;
    return status;
}
