// The seccomp delivery's side of system.dir: opens of directories (openat with O_DIRECTORY)
// and getdents64, described for the engine; entries left out by a read carried out here.
#ifndef CHAOS_DIRECTORIES_H
#define CHAOS_DIRECTORIES_H

#include <linux/seccomp.h>

#include "CChaosFaults.h"
#include "syscalls.h"

/// The directory row of trapped call `n` while the plan has dir entries: getdents64, or an
/// open of a directory (O_DIRECTORY without O_PATH; openat2's flags are read when it is
/// described). NULL otherwise: the call is the files point's, or nobody's.
const struct chaos_syscall *chaos_directories_row(const struct seccomp_notif *n);

/// Describes `n` (a directory row) into `call`, its path written into `path` (4096 bytes):
/// 1 when the dir point is to decide it.
int chaos_directories_describe(const struct seccomp_notif *n, const struct chaos_syscall *sc, chaos_call *call,
                               char *path);

/// Carries out a getdents64 under an OMIT outcome: reads the directory through a copy of
/// the program's descriptor (the same open directory: its position moves for both), leaves
/// out the entries the outcome names, writes the rest into the program's buffer and
/// answers with their length.
void chaos_directories_omit(int listener, const struct seccomp_notif *n, const chaos_outcome *o);

#endif
