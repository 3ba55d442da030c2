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

// MARK: Hook sections and grace periods (grace.c)

/// Starts a hook section on this thread: returns 1 when the thread was not inside one (it
/// now is; call chaos_hook_leave after), 0 when it already was (a hooked call made from a
/// hook's own chaos: run the original, no chaos within chaos).
///
/// A section is also a read-side critical section: objects published before it started
/// and retired (chaos_grace_start) while it runs stay valid until it ends, so the section
/// may read them without taking references. Entering and leaving are plain thread-local
/// stores; the writer side pays with a process-wide memory barrier (membarrier(2)).
static inline int chaos_hook_enter(void);
/// Ends the section chaos_hook_enter started.
static inline void chaos_hook_leave(void);
/// This thread's errno location (cheaper than __errno_location on the call path).
static inline int *chaos_errno_location(void);

/// An opaque record of the hook sections running when something was retired.
typedef struct chaos_grace chaos_grace;

/// Call after unpublishing objects that hook sections may be reading: returns NULL when
/// no section that could have seen them is still running (free them now), else a record
/// to poll with chaos_grace_elapsed. Never waits for a section. Errors (out of memory)
/// are reported as a record that elapses only once every running section has ended.
chaos_grace *chaos_grace_start(void);
/// Nonzero once every section recorded by `grace` has ended (never blocks).
int chaos_grace_elapsed(const chaos_grace *grace);
/// Frees a record from chaos_grace_start.
void chaos_grace_free(chaos_grace *grace);
/// Whether this thread is inside a hook section right now.
int chaos_hook_in_section(void);

// Entering and leaving run on every hooked call, so they are inline and touch only this
// thread's own state, a thread-local variable: one counter, odd while inside a section.
struct chaos_reader_slot;
struct chaos_thread_state {
    // Accessed only with __atomic builtins (the writer side reads it from other threads).
    uint64_t sections;              // +1 on entering and on leaving: odd inside a section
    int status;                     // 0 unregistered, 1 registered, 2 registered and must
                                    // fence (no membarrier), 3 thread exiting
    int *errno_location;            // this thread's errno
    struct chaos_reader_slot *slot; // this thread's entry in the registry
};
extern __thread struct chaos_thread_state chaos_thread;
/// chaos_hook_enter for a thread that is not in the plain registered state.
int chaos_hook_enter_slow(void);

/// chaos_hook_enter that returns the section counter it set (odd), or 0 when nested;
/// pass it to chaos_hook_leave_entered (saves re-reading the counter on the way out).
static inline uint64_t chaos_hook_enter_counted(void) {
    if (__builtin_expect(chaos_thread.status != 1, 0)) {
        return chaos_hook_enter_slow() ? __atomic_load_n(&chaos_thread.sections, __ATOMIC_RELAXED) : 0;
    }
    uint64_t sections = __atomic_load_n(&chaos_thread.sections, __ATOMIC_RELAXED);
    if (sections & 1) return 0;
    __atomic_store_n(&chaos_thread.sections, sections + 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return sections + 1;
}

static inline int chaos_hook_enter(void) {
    return chaos_hook_enter_counted() != 0;
}

/// Ends the section chaos_hook_enter_counted started, given what it returned.
static inline void chaos_hook_leave_entered(uint64_t entered) {
    __atomic_store_n(&chaos_thread.sections, entered + 1, __ATOMIC_RELEASE);
}

/// This thread's errno location: from the thread's hook state once it has one (cheaper
/// than __errno_location on every hooked call).
static inline int *chaos_errno_location(void) {
    int *location = chaos_thread.errno_location;
    return __builtin_expect(location != 0, 1) ? location : &errno;
}

static inline void chaos_hook_leave(void) {
    uint64_t sections = __atomic_load_n(&chaos_thread.sections, __ATOMIC_RELAXED);
    __atomic_store_n(&chaos_thread.sections, sections + 1, __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif

#endif
