#ifndef CHAOSKIT_CCHAOSELF_H
#define CHAOSKIT_CCHAOSELF_H

// Thin ELF helpers for ChaosHooks: find and write GOT slots. Policy lives in Swift.
// On non-Linux platforms every function exists but reports failure (ENOSYS / 0 results).

#include <stddef.h>
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

/// Benchmark floor: a libffi closure for `cif` (an `ffi_cif *` already prepared) whose C
/// handler just forwards to `original` with `ffi_call`. Returns an opaque handle (free it
/// with `chaos_bench_free_raw_forwarding_closure`) and the callable code in `code_out`.
void *chaos_bench_make_raw_forwarding_closure(void *cif, void *original, void **code_out);
void chaos_bench_free_raw_forwarding_closure(void *handle);


// MARK: System clock fast path (clock.c)

/// Clock configuration modes.
enum {
    CHAOS_CLOCK_REAL = 0,   ///< report the real time
    CHAOS_CLOCK_OFFSET = 1, ///< real + a seconds + b ns (0 <= b < 1e9)
    CHAOS_CLOCK_FROZEN = 2, ///< a (ns since 1970)
    CHAOS_CLOCK_SPEED = 3,  ///< b + (real - a) * factor
    CHAOS_CLOCK_ASK = 4,    ///< call the ask callback for every reading
};

/// Which function a reading comes from.
enum {
    CHAOS_CLOCK_FN_CLOCK_GETTIME = 0,
    CHAOS_CLOCK_FN_GETTIMEOFDAY = 1,
    CHAOS_CLOCK_FN_TIME = 2,
};

/// Decides a reading in CHAOS_CLOCK_ASK mode: returns the reported ns since 1970.
typedef int64_t (*chaos_clock_ask_fn)(int function, int clock, int64_t real_ns);

/// Resolves the real clock functions with dlsym; 0, or an errno value.
int chaos_clock_init(void);
/// Sets the callback of CHAOS_CLOCK_ASK mode.
void chaos_clock_set_ask(chaos_clock_ask_fn callback);
/// Publishes a new configuration (callers serialize writers).
void chaos_clock_configure(int mode, int64_t a, int64_t b, double factor);
/// The current mode.
int chaos_clock_mode(void);
/// The real CLOCK_REALTIME in ns since 1970, through the dlsym'd function.
int64_t chaos_clock_real_ns(void);
/// The replacement for CHAOS_CLOCK_FN_*: `clock_gettime`, `gettimeofday` or `time`.
void *chaos_clock_hook(int function);

/// Re-entrancy guard for hook handlers: 1 when the thread was not inside a hook (it now
/// is; call chaos_hook_leave after), 0 when it already was.
int chaos_hook_enter(void);
void chaos_hook_leave(void);

#ifdef __cplusplus
}
#endif

#endif
