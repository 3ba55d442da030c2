// Paths as the engine compares them, path patterns, and the descriptor table that remembers
// what each descriptor refers to (part of CChaosFaults.h; paths.c, fd_table.c).
#ifndef CCHAOS_PATHS_H
#define CCHAOS_PATHS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Folds `path` the way the kernel would see it, lexically: relative paths are taken from
/// `dirfd` (AT_FDCWD: the cwd, read with getcwd(2); a descriptor: the path this table
/// recorded for it, else /proc/self/fd), then `.`, `..` and repeated `/` are folded.
/// Symbolic links are not followed: the fallback of chaos_path_reached (Docs/FaultPlan.md). Writes a NUL-terminated
/// absolute path into `out`; returns its length, or -1 when it does not fit or the base
/// is unknown.
int chaos_path_resolve(int dirfd, const char *path, char *out, size_t capacity);

/// The physical path of what `path` (relative to `dirfd`) reaches, as the kernel walks it:
/// symbolic links followed (the last one only with `follow`), `..` taken after them. A
/// name that does not exist yet is its directory's physical path plus its last component.
/// Returns the length written into `out`, or -1 when neither it nor its directory exists
/// (physical.c; raw system calls only, safe in signal handlers).
int chaos_path_physical(int dirfd, const char *path, int follow, char *out, size_t capacity);

/// The name the engine matches the `path` of a call of `fn` (CHAOS_FN_*) by: physical
/// (chaos_path_physical, following a final link for opens only) for an opendir, or while a `path=` condition
/// of the active plan selects the call's operation, else, or when that fails, lexical
/// (chaos_path_resolve).
int chaos_path_reached(int32_t fn, int dirfd, const char *path, char *out, size_t capacity);

/// The name to record for `fd`, just opened on `path` (relative to `dirfd`): the kernel's
/// name of the descriptor while the active plan has a `path=` condition, else the lexical
/// one. Returns the length written into `out`, or -1.
int chaos_path_opened(int fd, int dirfd, const char *path, char *out, size_t capacity);

/// Whether a pattern (as in `path=`) matches an absolute folded path. Patterns without
/// wildcards match the path and everything below it, by whole components (`/a/io` matches
/// `/a/io` and `/a/io/x`, never `/a/io2`); `*` and `?` match within one component, `**`
/// any number of components (also none). Paths under /dev, /proc and /sys (and, with
/// `special`, a descriptor inherited as 0–2) match only patterns that name them.
int chaos_path_match(const char *pattern, const char *path, int special);

/// Checks a path pattern; 0 when it can match something, else -1 with a reason in `why`.
int chaos_path_pattern_check(const char *pattern, char *why, size_t capacity);

// MARK: - Descriptor table

/// Kinds of descriptor the table records.
enum {
    CHAOS_FD_UNKNOWN = 0, ///< never seen: looked up in /proc/self/fd on first use
    CHAOS_FD_FILE = 1,    ///< opened by path (file, directory, device)
    CHAOS_FD_SOCKET = 2,  ///< socket, with family and role
    CHAOS_FD_OTHER = 3,   ///< pipe, eventfd, anonymous inode…: outside file matches
};

/// Kinds of descriptor for `kind=` conditions of files cases (bits): what a descriptor is
/// open on, so that pipes, ttys and inherited descriptors can be named without a path.
enum {
    CHAOS_DESCRIPTOR_FILE = 1,  ///< a regular file or a directory
    CHAOS_DESCRIPTOR_PIPE = 2,  ///< a pipe or FIFO
    CHAOS_DESCRIPTOR_TTY = 4,   ///< a terminal
    CHAOS_DESCRIPTOR_OTHER = 8, ///< another device, an eventfd, an anonymous inode…
    CHAOS_DESCRIPTOR_ANY = 15
};

/// The CHAOS_DESCRIPTOR_* bit of descriptor `fd` of this process (one fstat); 0 when it is
/// not open or is a socket (sockets have the send and recv points).
int32_t chaos_descriptor_kind(int fd);

/// Whether the active plan has a files case with `fd=` or `kind=` (one atomic load).
int chaos_fault_names_descriptors(void);

/// Records that `fd` was just opened on the absolute folded `path` (NULL: not a path).
void chaos_fd_opened(int fd, int kind, const char *path);

/// Records a socket: its family (CHAOS_FAMILY_*) and role (CHAOS_ROLE_*).
void chaos_fd_socket(int fd, int family, int role);

/// Sets the role of a recorded socket (after a successful connect: CHAOS_ROLE_CLIENT).
void chaos_fd_set_role(int fd, int role);

/// Records that `fd` is closed (its number may be reused by anything).
void chaos_fd_closed(int fd);

/// Records dup/dup2/dup3/F_DUPFD: `newfd` now refers to what `oldfd` does.
void chaos_fd_duplicated(int oldfd, int newfd);

/// What the table knows of `fd`: kind, family, role; copies the path (if any) into
/// `path` and sets `*special` when the path is outside default matches (under /dev,
/// /proc, /sys, or a descriptor 0–2 the process inherited). Unknown descriptors are looked
/// up in /proc/self/fd once. Returns the kind.
int chaos_fd_lookup(int fd, char *path, size_t capacity, int *special, int *family, int *role);

/// Names the files descriptors 0–2 were when `chaos run` started its program (device and
/// inode; a device of 0 for one that was not open), so that only those stay outside every
/// entry that does not name them exactly: a descriptor a process of the tree opened and
/// handed down (`cmd >> log/f` in a shell) is matched by its path like any other. Without
/// a call, every inherited 0–2 stays outside.
void chaos_fd_handed_down(int fd, uint64_t device, uint64_t inode);

/// Whether the table follows descriptors at all (it does while the active plan has a
/// files, send, recv, connect or accept entry; descriptors seen while it did not are
/// looked up again).
int chaos_fd_tracking(void);

#ifdef __cplusplus
}
#endif

#endif
