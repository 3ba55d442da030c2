// Reading a vDSO's ELF image (x86_64): where its clock functions are and which symbol
// table words name them.
#ifndef CHAOS_VDSO_ELF_H
#define CHAOS_VDSO_ELF_H

#include <stddef.h>
#include <stdint.h>

/// Which wrapper a symbol is redirected to.
enum chaos_vdso_function { CHAOS_VDSO_CLOCK_GETTIME = 0, CHAOS_VDSO_GETTIMEOFDAY = 1, CHAOS_VDSO_TIME = 2 };

#define CHAOS_VDSO_MOST_SLOTS 8

/// What a vDSO image says, as addresses in the process it is mapped into.
struct chaos_vdso_image {
    uint64_t load_offset; ///< what programs add to a symbol's value (base + p_offset - p_vaddr)
    uint64_t instruction; ///< a `syscall` instruction in its code
    uint64_t function[3]; ///< by chaos_vdso_function: the function's address (0: it has none)
    int slot_count;       ///< symbols to redirect
    struct {
        uint64_t address; ///< of the symbol's st_value
        int function;     ///< chaos_vdso_function
    } slots[CHAOS_VDSO_MOST_SLOTS];
};

/// Reads the vDSO image `image` (`length` bytes, mapped at `base`). 0, or -1 with what it
/// does not know in `*why`.
int chaos_vdso_parse(const unsigned char *image, size_t length, uint64_t base, struct chaos_vdso_image *out,
                     const char **why);

#endif
