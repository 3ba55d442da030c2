#ifndef CHAOSKIT_CCHAOSELF_H
#define CHAOSKIT_CCHAOSELF_H

// Thin ELF helpers for ChaosHooks: find and write the slots that hold an imported
// symbol's address — GOT slots, and pointers in an image's data that the dynamic linker
// set at load time — and page protections. Policy (which slots, ownership, messages)
// lives in Swift. On non-Linux platforms every function exists but reports failure
// (ENOSYS / 0 results), except writes to slots that are already writable.

#include <stddef.h>
#include <errno.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The kind of relocation that owns a slot.
enum {
    CHAOS_ELF_SLOT_JUMP = 1,     ///< R_*_JUMP_SLOT (PLT call through the GOT)
    CHAOS_ELF_SLOT_GLOB_DAT = 2, ///< R_*_GLOB_DAT in the GOT (address taken / -fno-plt call)
    /// A pointer in the image's data that the dynamic linker set to the symbol at load time:
    /// R_X86_64_64 / R_AARCH64_ABS64 with addend 0 (a table of function pointers such as
    /// SQLite's aSyscall, in .data or in read-only-after-relocation .data.rel.ro), or a
    /// GLOB_DAT outside the GOT (outside PT_GNU_RELRO and .got.plt, in an image that has
    /// RELRO; without RELRO every GLOB_DAT counts as GOT). Symbols of data objects
    /// (STT_OBJECT, STT_TLS) are not indexed as data. Programs may rewrite such a pointer at
    /// run time, so its current value is theirs to decide.
    CHAOS_ELF_SLOT_DATA = 3,
};

/// One slot found by `chaos_elf_find_slots`. `image_path` is only valid during the callback.
/// A slot is reported once per kind (tables that overlap do not repeat it).
typedef struct chaos_elf_slot_info {
    void **slot;            ///< the pointer-sized slot (in the image's GOT or data)
    const char *image_path; ///< the image's path (the main program's from /proc/self/exe)
    uintptr_t image_base;   ///< dlpi_addr of the image
    int kind;               ///< CHAOS_ELF_SLOT_*
    /// Nonzero when the slot is a JUMP_SLOT whose current value is the image's own
    /// lazy-binding PLT entry (executable code of the same image shaped like a PLT stub).
    int value_is_plt_stub;
} chaos_elf_slot_info;

/// Called once per loaded image; return nonzero to scan it for slots.
typedef int (*chaos_elf_image_fn)(void *context, const char *image_path, uintptr_t image_base);
/// Called once per matching relocation slot.
typedef void (*chaos_elf_slot_fn)(void *context, const chaos_elf_slot_info *slot);

/// Walks every loaded image and reports each JUMP_SLOT, GLOB_DAT and data (see
/// CHAOS_ELF_SLOT_DATA) relocation whose symbol name equals `symbol`, in every image
/// `on_image` accepts (NULL: all). Returns 0, EINVAL for NULL arguments, EDEADLK when called
/// from inside one of its own callbacks, or ENOSYS where unsupported.
///
/// Cost. Each image's dynamic section, symbol, string and relocation tables are parsed
/// once into an index (relocations by symbol-name hash), kept until the set of loaded
/// images changes (dl_iterate_phdr's dlpi_adds/dlpi_subs counters): a later call costs a
/// binary search per image. The walk runs inside dl_iterate_phdr, so no image can be
/// unloaded while its tables are read; callbacks run there too and must not dlopen or
/// dlclose. Thread-safe.
int chaos_elf_find_slots(const char *symbol, chaos_elf_image_fn on_image, chaos_elf_slot_fn on_slot, void *context);

/// Called once per matching slot of `chaos_elf_find_slots_many`; `symbol_index` is the
/// index in `symbols` of the name the slot's relocation names.
typedef void (*chaos_elf_slot_many_fn)(void *context, size_t symbol_index, const chaos_elf_slot_info *slot);

/// `chaos_elf_find_slots` for `count` symbols in one walk (each image is offered to
/// `on_image` once). Same results and errors.
int chaos_elf_find_slots_many(const char *const *symbols, size_t count, chaos_elf_image_fn on_image,
                              chaos_elf_slot_many_fn on_slot, void *context);

/// Atomically replaces `*slot` with `value`, making the page writable first when it is
/// not, and restoring its exact previous protection afterwards (RELRO stays read-only).
/// The previous value goes to `previous` (may be NULL). Serialized process-wide.
/// Returns 0, or an errno value (ENOENT: address not mapped); on error nothing changed.
int chaos_elf_write_slot(void **slot, void *value, void **previous);

/// One write of a batch (chaos_elf_write_slots).
typedef struct chaos_elf_write {
    void **slot;    ///< in: a pointer-aligned slot
    void *value;    ///< in: what to store in it
    void *previous; ///< out: what it held (when `result` is 0)
    int result;     ///< out: 0, or an errno value (that slot is unchanged)
} chaos_elf_write;

/// `chaos_elf_write_slot` for many slots at once: the protection of each page is looked
/// up once (PROCMAP_QUERY on /proc/self/maps since Linux 6.11; before that one read of
/// /proc/self/maps for the whole batch), and each page not writable is made writable and
/// restored once, with every slot of the batch on it written in between. Every write is
/// an atomic exchange. Writes that fail leave their slot unchanged and do not stop the
/// others. Returns how many failed (0: all written). Serialized process-wide.
int chaos_elf_write_slots(chaos_elf_write *writes, size_t count);

/// Atomically reads a pointer-sized slot.
void *chaos_elf_read_slot(void *const *slot);

/// The PROT_* bits of the mapping containing `address` (PROCMAP_QUERY, or /proc/self/maps
/// on kernels before 6.11), or -1 when it is not mapped.
int chaos_elf_protection(const void *address);

/// From now on, look page protections up in the text of /proc/self/maps (read once per
/// batch) even where PROCMAP_QUERY works (nonzero), or go back to trying it (0): what
/// kernels before 6.11 do, for tests.
void chaos_elf_use_maps_text(int always);

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
