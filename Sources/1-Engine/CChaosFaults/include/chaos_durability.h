// Power loss: what a file system would hold if the power went now, under the strict POSIX
// model (ALICE's): file data is durable once a later fsync or fdatasync of the file has
// succeeded (or it was written with O_SYNC/O_DSYNC); a create, rename, link or unlink once
// its parent directory has been synced (a rename across directories: both); sync() and
// syncfs() make everything durable. sync_file_range makes nothing durable.
//
// The log keeps, for every change not yet durable, what undoes it: the bytes a write
// overwrote and the size before it, a removed name's file (held open), a renamed-over
// file. At power loss it replays them backwards. It lives in the process that keeps it
// (the seccomp supervisor), outside the program, so the program's SIGKILL leaves it whole.
//
// Callers report each change *before* it is made, and a sync once it is asked for (a sync
// that fails on purpose is not reported). Paths are absolute. One thread at a time: the
// caller serializes (the supervisor answers calls on one thread).
#ifndef CHAOS_DURABILITY_H
#define CHAOS_DURABILITY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Whether a `power-loss` node of the active plan could act on a change to `path`: the
/// delivery then keeps what undoes each change there (chaos_durability.h).
int chaos_fault_power_watches(const char *path);

/// Whether entry `entry` of the active plan loses power at its call `call` (counted from 1)
/// by an `at` node above a `power-loss` node: `chaos explore` places power loss one call past
/// the last change a run makes, which means "when the program has ended".
int chaos_fault_power_at(int32_t entry, uint64_t call);

/// Empties the log: everything on disk now counts as durable.
void chaos_durability_reset(void);

/// A write of `length` bytes at `offset` (-1: at the end, O_APPEND) to the file that
/// `reopen` opens (a /proc/PID/fd/N link or a path), called `name`. 0, or -1 when what
/// it overwrites cannot be kept (said at power loss).
int chaos_durability_write(const char *reopen, const char *name, int64_t offset, int64_t length);

/// The log's handle on the file `reopen` opens, called `name` (opened for keeping when it is
/// new), for chaos_durability_write_to: a caller that knows which file a descriptor is
/// writes to it without naming it again. Valid until the log is emptied (reset, power
/// loss). -1 when it cannot be kept (said at power loss).
int chaos_durability_file(const char *reopen, const char *name);

/// chaos_durability_write to the file `file` (chaos_durability_file), which `reopen` opens
/// when the log must open it again. 0, or -1.
int chaos_durability_write_to(int file, const char *reopen, int64_t offset, int64_t length);

/// The file `reopen` opens becomes `size` bytes long (ftruncate, truncate, O_TRUNC).
int chaos_durability_truncate(const char *reopen, const char *name, int64_t size);

/// An fsync or fdatasync of what `reopen` opens: a file's data, or a directory's names.
void chaos_durability_synced(const char *reopen);

/// sync() or syncfs(): everything is durable.
void chaos_durability_synced_all(void);

/// A name is about to be created at `path` (an open with O_CREAT, mkdir, link, symlink):
/// recorded only when nothing has that name yet.
int chaos_durability_create(const char *path);

/// `path` is about to be removed (unlink, rmdir).
int chaos_durability_remove(const char *path);

/// `from` is about to be renamed to `to` (renameat2's `flags`: RENAME_EXCHANGE swaps).
int chaos_durability_rename(const char *from, const char *to, unsigned flags);

/// Changes to `name` were made where the caller could not see them (`why`): the log cannot
/// undo them, which power loss says as a failure.
void chaos_durability_missed(const char *name, const char *why);

/// A writable shared mapping of `name`: its pages are out of the log's sight, so they are
/// treated as durable; the report names the file. 1 the first time a name is seen.
int chaos_durability_shared_map(const char *name);

/// What a power loss rolled back.
typedef struct chaos_power_summary {
    uint64_t writes;         ///< writes and truncations undone
    uint64_t files;          ///< files whose data changed
    uint64_t creates;        ///< names created that are gone again
    uint64_t removes;        ///< names removed that are back
    uint64_t renames;        ///< renames undone
    uint64_t torn;           ///< files whose last write kept part of its sectors
    uint64_t failures;       ///< changes that could not be undone
    char first_failure[256]; ///< the first of them, said
    uint64_t shared_maps;    ///< files mapped shared and writable (treated as durable)
    char shared_names[512];  ///< them, comma separated (cut to fit)
} chaos_power_summary;

/// Power is lost: undoes every change not yet durable, newest first, and with `torn`
/// keeps a prefix of the 512-byte sectors of each file's last undone write, drawn from
/// `seed`. Fills `out`, then empties the log. Every process that could still change the
/// files must have ended first.
void chaos_durability_lose_power(int torn, uint64_t seed, chaos_power_summary *out);

/// Says `summary` as one sentence ("12 writes in 3 files and 1 rename rolled back"); the
/// length it needs.
int chaos_power_summary_sentence(const chaos_power_summary *summary, char *out, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif
