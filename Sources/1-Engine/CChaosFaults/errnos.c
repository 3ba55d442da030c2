// The function table and which errno each function can return (libfiu's rule: a fault
// only ever shows a caller an errno the real call documents). Lists follow the Linux man
// pages of each call (section ERRORS), plus the protocol errors tcp(7)/ip(7) document for
// socket calls.
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OPEN_ERRNOS \
    EACCES, EBUSY, EDQUOT, EEXIST, EFAULT, EFBIG, EINTR, EINVAL, EISDIR, ELOOP, EMFILE, ENAMETOOLONG, ENFILE, ENODEV, \
        ENOENT, ENOMEM, ENOSPC, ENOTDIR, ENXIO, EOPNOTSUPP, EOVERFLOW, EPERM, EROFS, ETXTBSY, EAGAIN
#define READ_ERRNOS EAGAIN, EBADF, EFAULT, EINTR, EINVAL, EIO, EISDIR
#define WRITE_ERRNOS EAGAIN, EBADF, EDESTADDRREQ, EDQUOT, EFAULT, EFBIG, EINTR, EINVAL, EIO, ENOSPC, EPERM, EPIPE
#define SEND_ERRNOS \
    EACCES, EAGAIN, EALREADY, EBADF, ECONNRESET, EDESTADDRREQ, EFAULT, EINTR, EINVAL, EISCONN, EMSGSIZE, ENOBUFS, \
        ENOMEM, ENOTCONN, ENOTSOCK, EOPNOTSUPP, EPIPE, ETIMEDOUT, EHOSTUNREACH, ENETDOWN, ENETUNREACH
#define RECV_ERRNOS \
    EAGAIN, EBADF, ECONNREFUSED, EFAULT, EINTR, EINVAL, ENOMEM, ENOTCONN, ENOTSOCK, ECONNRESET, ETIMEDOUT, \
        EHOSTUNREACH, ENETUNREACH

// Creating a process: what fork, vfork, clone and posix_spawn share (clone's EPERM, ENOSPC
// and the like are about its flags and namespaces, not about the system running short), so
// that `errno=any` draws alike whichever of them a delivery sees.
#define PROCESS_ERRNOS EAGAIN, ENOMEM
#define GETDENTS_ERRNOS EBADF, EFAULT, EINVAL, ENOENT, ENOTDIR

typedef struct fn_row {
    chaos_fn_info info;
    int32_t errnos[48];
} fn_row;

#define FILES(name, covers, op, transfers, ...) \
    { \
        {name, covers, CHAOS_POINT_FILES, op, transfers}, { __VA_ARGS__, 0 } \
    }
#define POINT(name, covers, point, transfers, ...) \
    { \
        {name, covers, point, 0, transfers}, { __VA_ARGS__, 0 } \
    }

static const fn_row table[CHAOS_FN_COUNT] = {
    [CHAOS_FN_OPEN] = FILES("open", "open open64", CHAOS_OP_OPEN, 0, OPEN_ERRNOS),
    [CHAOS_FN_OPENAT] = FILES("openat", "openat openat64", CHAOS_OP_OPEN, 0, OPEN_ERRNOS, EBADF),
    [CHAOS_FN_CREAT] = FILES("creat", "creat creat64", CHAOS_OP_OPEN, 0, OPEN_ERRNOS),
    [CHAOS_FN_FOPEN] = FILES("fopen", "fopen fopen64", CHAOS_OP_OPEN, 0, OPEN_ERRNOS),
    [CHAOS_FN_FDOPEN] = FILES("fdopen", "fdopen", CHAOS_OP_OPEN, 0, EBADF, EINVAL, ENOMEM),
    [CHAOS_FN_FREOPEN] = FILES("freopen", "freopen freopen64", CHAOS_OP_OPEN, 0, OPEN_ERRNOS, EBADF),
    [CHAOS_FN_READ] = FILES("read", "read __read_chk", CHAOS_OP_READ, 1, READ_ERRNOS),
    [CHAOS_FN_PREAD] = FILES("pread", "pread pread64 __pread_chk __pread64_chk", CHAOS_OP_READ, 1, READ_ERRNOS, ESPIPE,
                             ENXIO, EOVERFLOW),
    [CHAOS_FN_READV] = FILES("readv", "readv", CHAOS_OP_READ, 1, READ_ERRNOS),
    [CHAOS_FN_PREADV] = FILES("preadv", "preadv preadv64 preadv2 preadv64v2", CHAOS_OP_READ, 1, READ_ERRNOS, ESPIPE,
                              ENXIO, EOVERFLOW, EOPNOTSUPP),
    [CHAOS_FN_FREAD] =
        FILES("fread",
              "fread fread_unlocked __fread_chk __fread_unlocked_chk fgets fgets_unlocked __fgets_chk "
              "__fgets_unlocked_chk fgetc getc _IO_getc getchar fgetc_unlocked getc_unlocked getchar_unlocked "
              "__uflow __underflow getline getdelim __getdelim fscanf vfscanf scanf vscanf __isoc99_fscanf "
              "__isoc99_vfscanf __isoc99_scanf __isoc99_vscanf",
              CHAOS_OP_READ, 0, EAGAIN, EBADF, EINTR, EIO, EOVERFLOW, ENOMEM, ENXIO),
    [CHAOS_FN_WRITE] = FILES("write", "write", CHAOS_OP_WRITE, 1, WRITE_ERRNOS),
    [CHAOS_FN_PWRITE] = FILES("pwrite", "pwrite pwrite64", CHAOS_OP_WRITE, 1, WRITE_ERRNOS, ESPIPE, ENXIO, EOVERFLOW),
    [CHAOS_FN_WRITEV] = FILES("writev", "writev", CHAOS_OP_WRITE, 1, WRITE_ERRNOS),
    [CHAOS_FN_PWRITEV] = FILES("pwritev", "pwritev pwritev64 pwritev2 pwritev64v2", CHAOS_OP_WRITE, 1, WRITE_ERRNOS,
                               ESPIPE, ENXIO, EOVERFLOW, EOPNOTSUPP),
    [CHAOS_FN_FWRITE] = FILES("fwrite",
                              "fwrite fwrite_unlocked fputs fputs_unlocked fputc fputc_unlocked putc putc_unlocked "
                              "fprintf vfprintf printf vprintf puts putchar",
                              CHAOS_OP_WRITE, 0, EAGAIN, EBADF, EDQUOT, EFBIG, EINTR, EIO, ENOMEM, ENOSPC, EPIPE),
    [CHAOS_FN_FFLUSH] = FILES("fflush", "fflush fflush_unlocked fclose (with output pending)", CHAOS_OP_WRITE, 0,
                              EAGAIN, EBADF, EDQUOT, EFBIG, EINTR, EIO, ENOMEM, ENOSPC, EPIPE),
    [CHAOS_FN_COPY_FILE_RANGE] =
        FILES("copy_file_range", "copy_file_range (write on the target; read on the source)", CHAOS_OP_WRITE, 1, EBADF,
              EFBIG, EINVAL, EIO, EISDIR, ENOMEM, ENOSPC, EOPNOTSUPP, EOVERFLOW, EPERM, ETXTBSY, EXDEV),
    [CHAOS_FN_SENDFILE] = FILES("sendfile", "sendfile sendfile64 (write on the target; read on the source)",
                                CHAOS_OP_WRITE, 1, EAGAIN, EBADF, EFAULT, EINVAL, EIO, ENOMEM, EOVERFLOW, ESPIPE),
    [CHAOS_FN_FSYNC] = FILES("fsync", "fsync", CHAOS_OP_SYNC, 0, EBADF, EDQUOT, EINTR, EINVAL, EIO, ENOSPC, EROFS),
    [CHAOS_FN_FDATASYNC] =
        FILES("fdatasync", "fdatasync", CHAOS_OP_SYNC, 0, EBADF, EDQUOT, EINTR, EINVAL, EIO, ENOSPC, EROFS),
    [CHAOS_FN_SYNC_FILE_RANGE] =
        FILES("sync_file_range", "sync_file_range", CHAOS_OP_SYNC, 0, EBADF, EINVAL, EIO, ENOMEM, ENOSPC, ESPIPE),
    [CHAOS_FN_FTRUNCATE] = FILES("ftruncate", "ftruncate ftruncate64", CHAOS_OP_TRUNCATE, 0, EBADF, EFBIG, EINTR,
                                 EINVAL, EIO, EPERM, EROFS, ETXTBSY),
    [CHAOS_FN_FALLOCATE] = FILES("fallocate", "fallocate fallocate64", CHAOS_OP_TRUNCATE, 0, EBADF, EFBIG, EINTR,
                                 EINVAL, EIO, ENODEV, ENOSPC, ENOSYS, EOPNOTSUPP, EPERM, ESPIPE, ETXTBSY),
    [CHAOS_FN_POSIX_FALLOCATE] =
        FILES("posix_fallocate", "posix_fallocate posix_fallocate64 (returns the error number)", CHAOS_OP_TRUNCATE, 0,
              EBADF, EFBIG, EINTR, EINVAL, ENODEV, ENOSPC, EOPNOTSUPP, ESPIPE),
    [CHAOS_FN_RENAME] = FILES("rename", "rename renameat renameat2", CHAOS_OP_RENAME, 0, EACCES, EBADF, EBUSY, EDQUOT,
                              EEXIST, EFAULT, EINVAL, EISDIR, ELOOP, EMLINK, ENAMETOOLONG, ENOENT, ENOMEM, ENOSPC,
                              ENOTDIR, ENOTEMPTY, EPERM, EROFS, EXDEV),
    [CHAOS_FN_UNLINK] = FILES("unlink", "unlink unlinkat", CHAOS_OP_UNLINK, 0, EACCES, EBADF, EBUSY, EFAULT, EIO,
                              EISDIR, ELOOP, ENAMETOOLONG, ENOENT, ENOMEM, ENOTDIR, EPERM, EROFS),
    [CHAOS_FN_RMDIR] = FILES("rmdir", "rmdir unlinkat(AT_REMOVEDIR)", CHAOS_OP_UNLINK, 0, EACCES, EBADF, EBUSY, EEXIST,
                             EFAULT, EINVAL, ELOOP, ENAMETOOLONG, ENOENT, ENOMEM, ENOTDIR, ENOTEMPTY, EPERM, EROFS),
    [CHAOS_FN_MKDIR] = FILES("mkdir", "mkdir mkdirat", CHAOS_OP_MKDIR, 0, EACCES, EBADF, EDQUOT, EEXIST, EFAULT, EINVAL,
                             ELOOP, EMLINK, ENAMETOOLONG, ENOENT, ENOMEM, ENOSPC, ENOTDIR, EPERM, EROFS),
    [CHAOS_FN_CLOSE] = FILES("close", "close", CHAOS_OP_CLOSE, 0, EBADF, EDQUOT, EINTR, EIO, ENOSPC),
    [CHAOS_FN_FCLOSE] =
        FILES("fclose", "fclose (nothing left to write)", CHAOS_OP_CLOSE, 0, EBADF, EDQUOT, EINTR, EIO, ENOSPC),
    [CHAOS_FN_CONNECT] =
        POINT("connect", "connect", CHAOS_POINT_CONNECT, 0, EACCES, EADDRINUSE, EADDRNOTAVAIL, EAFNOSUPPORT, EAGAIN,
              EALREADY, EBADF, ECONNREFUSED, ECONNRESET, EFAULT, EHOSTUNREACH, EINPROGRESS, EINTR, EISCONN, ENETDOWN,
              ENETUNREACH, ENOTSOCK, EPERM, EPROTOTYPE, ETIMEDOUT),
    [CHAOS_FN_ACCEPT] = POINT("accept", "accept accept4", CHAOS_POINT_ACCEPT, 0, EAGAIN, EBADF, ECONNABORTED, EFAULT,
                              EHOSTDOWN, EHOSTUNREACH, EINTR, EINVAL, EMFILE, ENETDOWN, ENETUNREACH, ENFILE, ENOBUFS,
                              ENOMEM, ENONET, ENOPROTOOPT, ENOTSOCK, EOPNOTSUPP, EPERM, EPROTO),
    [CHAOS_FN_SEND] = POINT("send", "send sendto", CHAOS_POINT_SEND, 1, SEND_ERRNOS),
    [CHAOS_FN_SENDMSG] = POINT("sendmsg", "sendmsg", CHAOS_POINT_SEND, 1, SEND_ERRNOS),
    [CHAOS_FN_SOCKET_WRITE] =
        POINT("socket-write", "write writev pwrite… on a socket", CHAOS_POINT_SEND, 1, SEND_ERRNOS),
    [CHAOS_FN_RECV] = POINT("recv", "recv recvfrom", CHAOS_POINT_RECV, 1, RECV_ERRNOS),
    [CHAOS_FN_RECVMSG] = POINT("recvmsg", "recvmsg", CHAOS_POINT_RECV, 1, RECV_ERRNOS),
    [CHAOS_FN_SOCKET_READ] = POINT("socket-read", "read readv pread… on a socket", CHAOS_POINT_RECV, 1, RECV_ERRNOS),
    [CHAOS_FN_GETADDRINFO] =
        POINT("getaddrinfo", "getaddrinfo", CHAOS_POINT_DNS, 0, EAI_ADDRFAMILY, EAI_AGAIN, EAI_BADFLAGS, EAI_FAIL,
              EAI_FAMILY, EAI_MEMORY, EAI_NODATA, EAI_NONAME, EAI_SERVICE, EAI_SOCKTYPE, EAI_SYSTEM),
    [CHAOS_FN_GETHOSTBYNAME] =
        POINT("gethostbyname", "gethostbyname gethostbyname2 gethostbyname_r gethostbyname2_r (h_errno from the code)",
              CHAOS_POINT_DNS, 0, EAI_AGAIN, EAI_FAIL, EAI_NODATA, EAI_NONAME),
    [CHAOS_FN_GETENV] = POINT("getenv", "getenv secure_getenv", CHAOS_POINT_GETENV, 0, 0),
    [CHAOS_FN_CLOCK_GETTIME] = POINT("clock_gettime", "clock_gettime", CHAOS_POINT_CLOCK, 0, 0),
    [CHAOS_FN_GETTIMEOFDAY] = POINT("gettimeofday", "gettimeofday", CHAOS_POINT_CLOCK, 0, 0),
    [CHAOS_FN_TIME] = POINT("time", "time", CHAOS_POINT_CLOCK, 0, 0),
    [CHAOS_FN_TIMESPEC_GET] = POINT("timespec_get", "timespec_get", CHAOS_POINT_CLOCK, 0, 0),
    [CHAOS_FN_FTIME] = POINT("ftime", "ftime", CHAOS_POINT_CLOCK, 0, 0),
    [CHAOS_FN_LINK] = FILES("link", "link linkat", CHAOS_OP_CREATE, 0, EACCES, EBADF, EDQUOT, EEXIST, EFAULT, EIO,
                            ELOOP, EMLINK, ENAMETOOLONG, ENOENT, ENOMEM, ENOSPC, ENOTDIR, EPERM, EROFS, EXDEV),
    [CHAOS_FN_SYMLINK] = FILES("symlink", "symlink symlinkat", CHAOS_OP_CREATE, 0, EACCES, EBADF, EDQUOT, EEXIST,
                               EFAULT, EIO, ELOOP, ENAMETOOLONG, ENOENT, ENOMEM, ENOSPC, ENOTDIR, EPERM, EROFS),
    [CHAOS_FN_TRUNCATE] = FILES("truncate", "truncate truncate64", CHAOS_OP_TRUNCATE, 0, EACCES, EFAULT, EFBIG, EINTR,
                                EINVAL, EIO, EISDIR, ELOOP, ENAMETOOLONG, ENOENT, ENOTDIR, EPERM, EROFS, ETXTBSY),
    [CHAOS_FN_STAT] = POINT("stat",
                            "stat stat64 lstat lstat64 fstat fstat64 fstatat fstatat64 statx __xstat __lxstat __fxstat "
                            "__fxstatat (and their 64 forms)",
                            CHAOS_POINT_STAT, 0, EACCES, EBADF, EFAULT, EINVAL, ELOOP, ENAMETOOLONG, ENOENT, ENOMEM,
                            ENOTDIR, EOVERFLOW),
    [CHAOS_FN_FORK] = POINT("fork", "fork", CHAOS_POINT_PROCESS, 0, PROCESS_ERRNOS),
    [CHAOS_FN_VFORK] = POINT("vfork", "vfork", CHAOS_POINT_PROCESS, 0, PROCESS_ERRNOS),
    [CHAOS_FN_CLONE] = POINT("clone", "clone clone3 (never with CLONE_THREAD)", CHAOS_POINT_PROCESS, 0, PROCESS_ERRNOS),
    [CHAOS_FN_SPAWN] =
        POINT("posix_spawn", "posix_spawn posix_spawnp system popen", CHAOS_POINT_PROCESS, 0, PROCESS_ERRNOS),
    [CHAOS_FN_OPENDIR] = POINT("opendir", "opendir fdopendir (seccomp: openat with O_DIRECTORY)", CHAOS_POINT_DIR, 0,
                               EACCES, EBADF, EMFILE, ENFILE, ENOENT, ENOMEM, ENOTDIR),
    [CHAOS_FN_READDIR] = POINT("readdir", "readdir readdir64 getdents64", CHAOS_POINT_DIR, 0, GETDENTS_ERRNOS),
    [CHAOS_FN_SOCKET_CLOSE] = POINT("socket-close", "close of a socket (only a linger node acts on it)",
                                    CHAOS_POINT_SEND, 0, EBADF, EINTR, EIO),
    // Running out of memory is the one failure an allocator reports (posix_memalign's EINVAL
    // is about its alignment argument, mmap's others about its flags and descriptor).
    [CHAOS_FN_MALLOC] = POINT("malloc", "malloc calloc realloc posix_memalign aligned_alloc memalign valloc pvalloc",
                              CHAOS_POINT_MEMORY, 0, ENOMEM),
    [CHAOS_FN_MMAP] = POINT("mmap", "mmap mmap64 (anonymous mappings only)", CHAOS_POINT_MEMORY, 0, ENOMEM),
};

const chaos_fn_info *chaos_fault_fn_info(int32_t fn) {
    if (fn < 0 || fn >= CHAOS_FN_COUNT) return NULL;
    return &table[fn].info;
}

int chaos_fault_errno_allowed(int32_t fn, int32_t err) {
    if (fn < 0 || fn >= CHAOS_FN_COUNT || err == 0) return 0;
    for (const int32_t *e = table[fn].errnos; *e; e++)
        if (*e == err) return 1;
    return 0;
}

static int compare_int(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int chaos_fault_errnos(int32_t fn, int32_t *out, int capacity) {
    if (fn < 0 || fn >= CHAOS_FN_COUNT) return 0;
    int32_t sorted[48];
    int count = 0;
    for (const int32_t *e = table[fn].errnos; *e; e++) sorted[count++] = *e;
    qsort(sorted, (size_t)count, sizeof sorted[0], compare_int);
    for (int i = 0; i < count && i < capacity && out; i++) out[i] = sorted[i];
    return count;
}

const char *chaos_fault_errno_name(int32_t err) {
    for (const cf_errno_name *e = cf_errno_names; e->name; e++)
        if (e->value == err) return e->name;
    return NULL;
}

bool cf_errno_known(int32_t err) { return chaos_fault_errno_name(err) != NULL; }

int32_t chaos_fault_errno_value(const char *name) {
    if (!name || !*name) return 0;
    for (const cf_errno_name *e = cf_errno_names; e->name; e++)
        if (strcasecmp(e->name, name) == 0) return e->value;
    char *end = NULL;
    long value = strtol(name, &end, 10);
    if (end && *end == 0 && value != 0 && value > -100 && value < 200 && cf_errno_known((int32_t)value))
        return (int32_t)value;
    return 0;
}

const char *chaos_fault_point_name(int32_t point) {
    return point >= 0 && point < CHAOS_POINT_COUNT ? cf_point_names[point] : NULL;
}

const char *chaos_fault_point_public_name(int32_t point) {
    return point >= 0 && point < CHAOS_POINT_COUNT ? cf_point_public_names[point] : NULL;
}

const char *chaos_fault_op_name(uint32_t op) {
    for (unsigned i = 0; cf_op_names[i]; i++)
        if (op == cf_op_bits[i]) return cf_op_names[i];
    return NULL;
}

/// The errnos the functions of `point` (files: those of `ops`) can return, as "EIO, ENOSPC…".
const char *cf_errno_list(int32_t point, char *buffer, size_t capacity, uint32_t unused, uint32_t ops) {
    (void)unused;
    bool seen[256] = {false};
    size_t used = 0;
    buffer[0] = 0;
    for (const cf_errno_name *e = cf_errno_names; e->name; e++) {
        int32_t value = e->value;
        if (value == EWOULDBLOCK && strcmp(e->name, "EWOULDBLOCK") == 0) continue;
        bool allowed = false;
        for (int fn = 0; fn < CHAOS_FN_COUNT && !allowed; fn++) {
            if (table[fn].info.point != point) continue;
            if (point == CHAOS_POINT_FILES && !(table[fn].info.op & ops)) continue;
            allowed = chaos_fault_errno_allowed(fn, value);
        }
        if (!allowed || seen[(uint8_t)value]) continue;
        seen[(uint8_t)value] = true;
        int wrote = snprintf(buffer + used, capacity - used, "%s%s", used ? " " : "", e->name);
        if (wrote < 0 || (size_t)wrote >= capacity - used) break;
        used += (size_t)wrote;
    }
    return buffer;
}
