// Whether the preload library can reach a program's calls, known before it starts.
#ifndef CHAOS_REACH_H
#define CHAOS_REACH_H

#include <stddef.h>

/// Why the preload library cannot reach a program, or that it can.
enum chaos_reach {
    CHAOS_REACHED = 0,       ///< a dynamically linked program the dynamic loader preloads into
    CHAOS_UNREACHED_STATIC,  ///< statically linked: no dynamic loader, so nothing is preloaded
    CHAOS_UNREACHED_GO,      ///< a Go program: it makes its own system calls and reads the vDSO clock
    CHAOS_UNREACHED_CLASS,   ///< an ELF of another class or machine than the preload library
};

/// Finds `program` as execvp would (in $PATH unless it has a slash), follows `#!` lines to
/// the interpreter, and reads its ELF headers. Returns `CHAOS_REACHED` when it is reached,
/// or cannot be read (execvp then says why); otherwise the reason, with the file it is
/// about in `file`.
enum chaos_reach chaos_reach_program(const char *program, char *file, size_t capacity);

/// One sentence saying why `reach` keeps chaos out, and what to do instead.
const char *chaos_reach_reason(enum chaos_reach reach);

#endif
