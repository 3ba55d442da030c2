// Paths as the kernel reaches them, for matching path selectors.
//
// A selector names a file or directory; a call reaches one. Comparing the names the two
// sides happened to use misses links (`/var/run` is `/run` on Debian), and folding `..`
// by hand is wrong after a link (`lnk/..` is the link target's parent). So the engine asks
// the kernel: it opens the name with O_PATH (which neither opens devices nor blocks on
// FIFOs) and reads back the descriptor's name from /proc/self/fd, which is the object's
// one physical path. A name that does not exist yet is its physical directory plus its
// last component. The plan compiler resolves patterns the same way (realpath(3) of the
// longest existing prefix), so both sides are compared as physical paths: the same file
// or directory reached by any name compares equal.
//
// Only raw system calls and stack buffers: interceptors run in signal handlers, in forked
// children and inside malloc's own calls.
#define _GNU_SOURCE
#include "internal.h"

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/// The physical path of an O_PATH descriptor opened on `name` (relative to `dirfd`).
static int reached(int dirfd, const char *name, int flags, char *out, size_t capacity) {
    long fd = syscall(SYS_openat, dirfd, name, O_PATH | O_CLOEXEC | flags);
    if (fd < 0) return -1;
    int length = cf_raw_readlink_fd((int)fd, out, capacity);
    syscall(SYS_close, (int)fd);
    // Magic links (/dev/stdout to a pipe) read back as `pipe:[…]`: not a path.
    return length > 0 && out[0] == '/' ? length : -1;
}

int chaos_path_physical(int dirfd, const char *path, int follow, char *out, size_t capacity) {
    if (!path || !*path || !out || capacity < 2) return -1;
    int length = reached(dirfd, path, follow ? 0 : O_NOFOLLOW, out, capacity);
    if (length >= 0) return length;
    // Not there (yet): its directory, which must exist, and the last component.
    char directory[4096];
    size_t n = strlen(path);
    if (n >= sizeof directory) return -1;
    memcpy(directory, path, n + 1);
    while (n > 1 && directory[n - 1] == '/') directory[--n] = 0;
    char *slash = strrchr(directory, '/');
    const char *last = slash ? slash + 1 : directory;
    size_t last_length = strlen(last);
    if (last_length == 0 || (last[0] == '.' && (last_length == 1 || (last_length == 2 && last[1] == '.')))) return -1;
    const char *parent = !slash ? "." : slash == directory ? "/" : (*slash = 0, directory);
    length = reached(dirfd, parent, O_DIRECTORY, out, capacity);
    if (length < 0) return -1;
    size_t used = (size_t)length == 1 ? 0 : (size_t)length; // the root: no second slash
    if (used + 1 + last_length + 1 > capacity) return -1;
    out[used] = '/';
    memcpy(out + used + 1, last, last_length + 1);
    return (int)(used + 1 + last_length);
}

int chaos_path_reached(int32_t fn, int dirfd, const char *path, char *out, size_t capacity) {
    // Without a path selector for this call's operation a name only matters for /dev,
    // /proc and /sys, which are named lexically: the kernel's names there are links to
    // processes and descriptors.
    const chaos_fn_info *info = chaos_fault_fn_info(fn);
    uint32_t op = info ? info->op : UINT32_MAX;
    // A directory is named as the kernel names it when it is read (its descriptor's link).
    if (fn == CHAOS_FN_OPENDIR || (atomic_load_explicit(&cf_path_selectors, memory_order_acquire) & op)) {
        // Opens reach through a final link; rename, unlink, rmdir and mkdir act on the name.
        int follow = fn != CHAOS_FN_RENAME && fn != CHAOS_FN_UNLINK && fn != CHAOS_FN_RMDIR && fn != CHAOS_FN_MKDIR;
        int length = chaos_path_physical(dirfd, path, follow, out, capacity);
        if (length >= 0) return length;
    }
    return chaos_path_resolve(dirfd, path, out, capacity);
}

/// The kernel's name of `fd`, without the " (deleted)" of an unlinked file; -1 when it is
/// not a path.
static int descriptor_path(int fd, char *out, size_t capacity) {
    int length = cf_raw_readlink_fd(fd, out, capacity);
    if (length <= 0 || out[0] != '/') return -1;
    static const char deleted[] = " (deleted)";
    size_t suffix = sizeof deleted - 1;
    if ((size_t)length > suffix && strcmp(out + length - suffix, deleted) == 0) {
        length -= (int)suffix;
        out[length] = 0;
    }
    return length;
}

int chaos_path_opened(int fd, int dirfd, const char *path, char *out, size_t capacity) {
    // One readlink: what was opened, whichever name reached it. Reads and writes then
    // decide from the table without touching the file system.
    if (atomic_load_explicit(&cf_path_selectors, memory_order_acquire)) {
        int length = descriptor_path(fd, out, capacity);
        if (length >= 0) return length;
    }
    return chaos_path_resolve(dirfd, path, out, capacity);
}
