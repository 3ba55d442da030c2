// Whether the preload library can reach a program's calls, known before it starts (part of
// CChaosFaults.h): `chaos run` asks about its program, and the preload library asks again
// at every exec in the program's tree.
#ifndef CCHAOS_REACH_H
#define CCHAOS_REACH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Why the preload library cannot reach a program, or that it can.
enum chaos_reach {
    CHAOS_REACHED = 0,      ///< a dynamically linked program the dynamic loader preloads into
    CHAOS_UNREACHED_STATIC, ///< statically linked: no dynamic loader, so nothing is preloaded
    CHAOS_UNREACHED_GO,     ///< a Go program: it makes its own system calls and reads the vDSO clock
    CHAOS_UNREACHED_CLASS,  ///< an ELF of another class or machine than the preload library
    CHAOS_UNREACHED_SETUID, ///< set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it
};

/// Finds `program` as execvp would (in `search`, a PATH list, unless it has a slash; NULL:
/// as execve would, the path itself), follows `#!` lines to the interpreter, and reads its ELF headers. Returns
/// `CHAOS_REACHED` when it is reached, or cannot be read (the exec then says why);
/// otherwise the reason, with the file it is about in `file`. Allocates nothing and calls
/// only open, pread, stat, access and close, so a vfork child may call it.
enum chaos_reach chaos_reach_program(const char *program, const char *search, char *file, size_t capacity);

/// One sentence saying why `reach` keeps chaos out.
const char *chaos_reach_reason(enum chaos_reach reach);

#ifdef __cplusplus
}
#endif

#endif
