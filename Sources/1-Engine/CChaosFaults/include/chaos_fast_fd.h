// The descriptor calls' pass-through fast path, shared by the engine and the interceptors
// (which read it inline): a read or write on a descriptor that no entry of the active plan
// can act on — the common case under a files fault aimed elsewhere — is decided from the
// descriptor table's remembered verdict, without a call into the engine.
//
// For the C of the engine and the deliveries only: published in include/ for them, but left
// out of the module Swift imports (include/module.modulemap excludes it).
#ifndef CCHAOS_FAULTS_FAST_FD_H
#define CCHAOS_FAULTS_FAST_FD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "CChaosFaults.h"
#include "chaos_fast_clock.h"

/// The active plan's generation (0: none), which descriptor verdicts are tagged with.
extern _Atomic uint64_t cf_plan_generation __attribute__((visibility("hidden")));

// The descriptor table: chunks of slots, allocated on first use.
#define CF_FD_CHUNK 1024
#define CF_FD_CHUNKS 1024

typedef struct cf_fd_slot {
    _Atomic uint64_t generation; ///< valid while equal to cf_fd_generation
    _Atomic uint32_t info;       ///< kind | family << 8 | role << 16 | special << 24
    _Atomic(char *) path;
    _Atomic uint64_t verdict; ///< plan generation << 1 | whether a files entry may act on the path
} cf_fd_slot;

extern _Atomic(cf_fd_slot *) cf_fd_chunks[CF_FD_CHUNKS] __attribute__((visibility("hidden")));
extern _Atomic uint64_t cf_fd_generation __attribute__((visibility("hidden")));

/// 1/0 when the table remembers whether a files entry of plan `plan_generation` can act on
/// `fd`'s path, -1 when it does not know. Inline: it is the whole hot path of a write on a
/// file no entry aims at.
static inline int cf_fd_verdict(int fd, uint64_t plan_generation) {
    if ((unsigned)fd >= (unsigned)(CF_FD_CHUNK * CF_FD_CHUNKS)) return -1;
    uint64_t generation = atomic_load_explicit(&cf_fd_generation, memory_order_acquire);
    cf_fd_slot *chunk = atomic_load_explicit(&cf_fd_chunks[fd / CF_FD_CHUNK], memory_order_acquire);
    if (!generation || !chunk) return -1;
    cf_fd_slot *s = &chunk[fd % CF_FD_CHUNK];
    uint64_t verdict = atomic_load_explicit(&s->verdict, memory_order_acquire);
    if (verdict >> 1 != plan_generation || atomic_load_explicit(&s->generation, memory_order_acquire) != generation)
        return -1;
    return (int)(verdict & 1);
}
/// Whether a call on `fd` certainly goes to the real function: no active point could act
/// on it (`file_fn` < 0: not a files call; `socket_point` < 0: not a socket call), or it is
/// a file the table remembers no files entry of this plan acts on. 0: ask the engine.
static inline int cf_fast_fd_passes(int fd, int32_t file_fn, int32_t socket_point) {
    uint32_t points = atomic_load_explicit(&cf_active_points, memory_order_acquire);
    bool files = (points >> CHAOS_POINT_FILES & 1) && file_fn >= 0;
    bool sockets = socket_point >= 0 && socket_point < CHAOS_POINT_COUNT && (points >> socket_point & 1);
    if (!files && !sockets) return 1;
    return cf_fd_verdict(fd, atomic_load_explicit(&cf_plan_generation, memory_order_acquire)) == 0;
}

#endif
