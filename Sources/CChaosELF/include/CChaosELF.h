#ifndef CHAOSKIT_CCHAOSELF_H
#define CHAOSKIT_CCHAOSELF_H

// Thin ELF helpers for ChaosHooks: find and write GOT slots. Policy lives in Swift.
// On non-Linux platforms every function exists but reports failure (ENOSYS / 0 results).

#include <stddef.h>
#include <errno.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The kind of relocation that owns a slot.
enum {
    CHAOS_ELF_SLOT_JUMP = 1,     ///< R_*_JUMP_SLOT (PLT call through the GOT)
    CHAOS_ELF_SLOT_GLOB_DAT = 2, ///< R_*_GLOB_DAT (address taken / -fno-plt call)
};

/// One slot found by `chaos_elf_find_slots`. `image_path` is only valid during the callback.
typedef struct chaos_elf_slot_info {
    void **slot;
    const char *image_path;
    uintptr_t image_base;
    int kind;
    /// Nonzero when the slot is a JUMP_SLOT whose current value is the image's own
    /// lazy-binding PLT entry (executable code of the same image shaped like a PLT stub).
    int value_is_plt_stub;
} chaos_elf_slot_info;

/// Called once per loaded image; return nonzero to scan it for slots.
typedef int (*chaos_elf_image_fn)(void *context, const char *image_path, uintptr_t image_base);
/// Called once per matching relocation slot.
typedef void (*chaos_elf_slot_fn)(void *context, const chaos_elf_slot_info *slot);

/// Walks every loaded image (dl_iterate_phdr) and reports each JUMP_SLOT / GLOB_DAT
/// relocation whose symbol name equals `symbol`. Returns 0, or ENOSYS where unsupported.
int chaos_elf_find_slots(const char *symbol, chaos_elf_image_fn on_image,
                         chaos_elf_slot_fn on_slot, void *context);

/// Atomically replaces `*slot` with `value`, making the page writable first when it is
/// not, and restoring its exact previous protection afterwards (RELRO stays read-only).
/// The previous value goes to `previous` (may be NULL). Serialized process-wide.
/// Returns 0, or an errno value (ENOENT: address not mapped); on error nothing changed.
int chaos_elf_write_slot(void **slot, void *value, void **previous);

/// Atomically reads a pointer-sized slot.
void *chaos_elf_read_slot(void *const *slot);

/// The PROT_* bits of the mapping containing `address` (from /proc/self/maps), or -1.
int chaos_elf_protection(const void *address);

/// dlsym(RTLD_DEFAULT, name): the definition the dynamic linker binds first.
void *chaos_elf_dlsym_default(const char *name);

/// dladdr: the name of the symbol that starts exactly at `address` (else NULL), and the
/// path of the image containing it in `image_path` (NULL when none). Strings are owned
/// by the dynamic linker.
const char *chaos_elf_describe_address(const void *address, const char **image_path);

#ifdef __cplusplus
}
#endif

#endif
