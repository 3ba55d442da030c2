// CChaosFaults: the table of functions a delivery reports, a part of the engine's contract
// kept in its own header (errnos.c holds the table). Include CChaosFaults.h, which includes
// this.
#ifndef CCHAOS_FAULTS_FUNCTIONS_H
#define CCHAOS_FAULTS_FUNCTIONS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Every function a delivery may report (`chaos_call.fn`). The errno table is per
/// function: `chaos_fault_errno_allowed(fn, e)`. Values are stable.
typedef enum chaos_fn {
    CHAOS_FN_OPEN,
    CHAOS_FN_OPENAT,
    CHAOS_FN_CREAT,
    CHAOS_FN_FOPEN,
    CHAOS_FN_FDOPEN,
    CHAOS_FN_FREOPEN,
    CHAOS_FN_READ,
    CHAOS_FN_PREAD,
    CHAOS_FN_READV,
    CHAOS_FN_PREADV,
    CHAOS_FN_FREAD,
    CHAOS_FN_WRITE,
    CHAOS_FN_PWRITE,
    CHAOS_FN_WRITEV,
    CHAOS_FN_PWRITEV,
    CHAOS_FN_FWRITE,
    CHAOS_FN_FFLUSH,
    CHAOS_FN_COPY_FILE_RANGE,
    CHAOS_FN_SENDFILE,
    CHAOS_FN_FSYNC,
    CHAOS_FN_FDATASYNC,
    CHAOS_FN_SYNC_FILE_RANGE,
    CHAOS_FN_FTRUNCATE,
    CHAOS_FN_FALLOCATE,
    CHAOS_FN_POSIX_FALLOCATE,
    CHAOS_FN_RENAME,
    CHAOS_FN_UNLINK,
    CHAOS_FN_RMDIR,
    CHAOS_FN_MKDIR,
    CHAOS_FN_CLOSE,
    CHAOS_FN_FCLOSE,
    CHAOS_FN_CONNECT,
    CHAOS_FN_ACCEPT,
    CHAOS_FN_SEND,
    CHAOS_FN_SENDMSG,
    CHAOS_FN_SOCKET_WRITE,
    CHAOS_FN_RECV,
    CHAOS_FN_RECVMSG,
    CHAOS_FN_SOCKET_READ,
    CHAOS_FN_GETADDRINFO,
    CHAOS_FN_GETHOSTBYNAME,
    CHAOS_FN_GETENV,
    CHAOS_FN_CLOCK_GETTIME,
    CHAOS_FN_GETTIMEOFDAY,
    CHAOS_FN_TIME,
    CHAOS_FN_TIMESPEC_GET,
    CHAOS_FN_FTIME,
    CHAOS_FN_LINK,         ///< link, linkat
    CHAOS_FN_SYMLINK,      ///< symlink, symlinkat
    CHAOS_FN_TRUNCATE,     ///< truncate by path
    CHAOS_FN_STAT,         ///< the stat family (stat point)
    CHAOS_FN_FORK,         ///< process: fork
    CHAOS_FN_VFORK,        ///< process: vfork
    CHAOS_FN_CLONE,        ///< process: clone, clone3 without CLONE_THREAD (threads are never failed)
    CHAOS_FN_SPAWN,        ///< process: posix_spawn, posix_spawnp, system, popen (an error number, not errno)
    CHAOS_FN_OPENDIR,      ///< dir: opendir, fdopendir; under seccomp an openat with O_DIRECTORY
    CHAOS_FN_READDIR,      ///< dir: readdir, readdir64; under seccomp getdents64
    CHAOS_FN_SOCKET_CLOSE, ///< send: close of a socket, decided only while a plan has a linger node
    CHAOS_FN_MALLOC, ///< memory: malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc
    CHAOS_FN_MMAP,   ///< memory: mmap, mmap64 of an anonymous mapping (a file's mapping is never failed)
    CHAOS_FN_COUNT
} chaos_fn;

/// Description of one function of the table (for Swift validation and `chaos list`).
typedef struct chaos_fn_info {
    const char *name;   ///< e.g. "pwrite" (stands for pwrite and pwrite64)
    const char *covers; ///< every C symbol it stands for, space separated
    int32_t point;      ///< chaos_point
    uint32_t op;        ///< CHAOS_OP_* bit for files functions, 0 otherwise
    int32_t transfers;  ///< 1 when a `short` action applies (read/write-like)
} chaos_fn_info;

/// The table entry of `fn`, or NULL when out of range.
const chaos_fn_info *chaos_fault_fn_info(int32_t fn);

/// Whether `fn` can return errno `err` (libfiu's rule: only what the real call documents).
/// For CHAOS_FN_GETADDRINFO/GETHOSTBYNAME `err` is an EAI_* code (negative) instead.
int chaos_fault_errno_allowed(int32_t fn, int32_t err);

/// Fills `out` (capacity `capacity`) with the errnos `fn` can return, ascending; returns
/// how many there are (which may exceed `capacity`).
int chaos_fault_errnos(int32_t fn, int32_t *out, int capacity);

/// "ENOSPC" for ENOSPC, "EAI_NONAME" for EAI_NONAME; NULL for a value the table does not know.
const char *chaos_fault_errno_name(int32_t err);

/// The value of a name such as "ENOSPC", "enospc", "28" or "EAI_AGAIN"; 0 when unknown.
int32_t chaos_fault_errno_value(const char *name);

#ifdef __cplusplus
}
#endif

#endif
