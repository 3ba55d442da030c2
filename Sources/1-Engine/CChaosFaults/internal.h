// Internal structures of the fault engine (not part of the contract).
#ifndef CCHAOS_FAULTS_INTERNAL_H
#define CCHAOS_FAULTS_INTERNAL_H

#include "CChaosFaults.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/// One case of a composite node: every condition set must hold.
typedef struct cf_case {
    int32_t line, column; ///< where the case was written
    int32_t child;
    uint32_t ops;        ///< 0: any
    char *path;          ///< pattern, NULL: any (never a special target)
    uint32_t families;   ///< 0: any
    uint32_t roles;      ///< 0: any
    uint32_t clocks;     ///< 0: any
    int32_t has_address; ///< connect/accept: address + prefix
    uint8_t address[16];
    int32_t address_length;
    int32_t prefix_bits;
    char *host;                ///< dns: host glob
    int32_t port;              ///< -1: any
    char *name;                ///< getenv: variable name
    uint64_t fds;              ///< files: descriptors 0–63 named by `fd=` (bit per number; 0: any)
    uint32_t descriptor_kinds; ///< files: CHAOS_DESCRIPTOR_* of `kind=` (0: any)
    uint64_t above;            ///< memory: only allocations of more bytes than this match (0: any)
} cf_case;

typedef struct cf_node {
    int32_t kind;
    int32_t line, column; ///< where the node was written (for validation errors)
    int32_t err_column;   ///< column of `errno=` / `ret=` / `max=`
    int32_t child;        ///< probability, times, delay
    int32_t count;        ///< sequential children / composite cases
    int32_t *children;    ///< sequential
    uint64_t *weights;    ///< sequential: calls each child covers
    cf_case *cases;       ///< composite
    int32_t otherwise;    ///< composite: -1 pass
    double p;
    uint64_t salt;
    uint64_t n;
    int64_t ns; ///< delay, offset, frozen, speed anchor
    double factor;
    int32_t anchor_start;
    int32_t torn;                ///< power-loss: torn=yes
    int32_t corrupt_with;        ///< corrupt: CHAOS_CORRUPT_*
    int64_t corrupt_offset;      ///< corrupt: offset= (-1: drawn positions); its bytes= is `n`
    chaos_attributes attributes; ///< attributes: what stat answers instead
    int32_t stream_end;          ///< limit, stall: CHAOS_STREAM_END_*; pace's rate= and limit's bytes= are `n`
    int64_t variation;           ///< short: max= varies by up to this many bytes either way, drawn per call
    int64_t ret;
    int32_t err;
    int32_t has_err;
    int32_t any_errno; ///< fail: errno=any, drawn per call among those the call can return
    int32_t has_ret;
    int64_t max;
    const char *value; ///< interned at install (never freed); before, owned_value
    char *owned_value; ///< the parsed text of `value`, freed with the plan
    _Atomic uint64_t counter;
    _Atomic uint64_t *shared; ///< where the counter lives when a process tree shares it (NULL: `counter`)
} cf_node;

/// The operations that change what a file system holds: power is lost only at these.
#define CF_CHANGE_OPS \
    (CHAOS_OP_WRITE | CHAOS_OP_TRUNCATE | CHAOS_OP_RENAME | CHAOS_OP_UNLINK | CHAOS_OP_MKDIR | CHAOS_OP_CREATE)

/// The operations `call` is (its function's, and "create" for an open that creates).
static inline uint32_t cf_call_ops(const chaos_call *call, const chaos_fn_info *info) {
    return info->op | (call->creates && info->op == CHAOS_OP_OPEN ? CHAOS_OP_CREATE : 0);
}

typedef struct cf_entry {
    int32_t line;
    int32_t point;
    char *label;
    uint32_t families; ///< socket points: which families reach the entry
    int32_t monotonic;
    int32_t stat_times;
    int32_t sleeps;
    int32_t names_descriptors; ///< files: a case has `fd=` or `kind=` (set at install)
    int32_t count;
    cf_node *nodes;
    uint64_t seed;                  ///< what its probability nodes draw from
    bool seed_given;                ///< `seed=` was written (else derived from the plan's seed)
    _Atomic uint64_t calls;         ///< calls that reached it under this plan: the next call's index
    _Atomic uint64_t *shared_calls; ///< where `calls` lives when a process tree shares it (NULL: `calls`)
    chaos_counts *counts;           ///< where its calls are counted (never NULL; may outlive the plan)
} cf_entry;

/// The counter of `node` that times, sequential and probability nodes move: its own, or
/// the one a process tree shares (chaos_plan_share_counters).
static inline _Atomic uint64_t *cf_node_counter(cf_node *node) { return node->shared ? node->shared : &node->counter; }

/// The call index of `entry`: its own, or the one a process tree shares.
static inline _Atomic uint64_t *cf_entry_calls(cf_entry *entry) {
    return entry->shared_calls ? entry->shared_calls : &entry->calls;
}

/// The counts of an entry (counters.c). Relaxed: statistics, so that a decision pays no
/// fence for them. Seen is not kept: it is acted + passed.
struct chaos_counts {
    _Atomic uint64_t acted, passed;
    _Atomic uint64_t *mirror; ///< also counted here (acted, passed), e.g. memory a process tree shares; NULL: not
    uint64_t mirrored_fast;   ///< fast readings already added to the mirror by this process; under tallies_lock
    _Atomic uint64_t last_fire_call; ///< the call index, in the plan that decided it
    chaos_last_act last;             ///< what the last act was (fn stored last, release)
    chaos_last_act *mirror_last;     ///< also written here (a process tree's tally); NULL: not
    _Atomic int64_t last_fire_ns;
    _Atomic int64_t references;
    uint64_t id; ///< never reused: what fast readings are tallied under
    int32_t point;
    bool published;            ///< listed for the fast path; under counters.c's tallies_lock
    uint64_t fast;             ///< fast readings moved out of tallies; under tallies_lock
    int64_t fast_last_ns;      ///< under tallies_lock
    struct chaos_counts *next; ///< in that list; under tallies_lock
};

struct chaos_plan {
    uint64_t seed;
    int32_t count;
    cf_entry *entries;
    uint32_t points;
    uint64_t generation;
};

// names.c: the one table of names (each NULL-terminated; bits parallel to names)
extern const char *const cf_point_names[],
    *const cf_point_public_names[], *const cf_op_names[], *const cf_family_names[], *const cf_role_names[],
                                                                                        *const cf_clock_names[],
                                                                                            *const cf_kind_names[];
extern const uint32_t cf_op_bits[], cf_family_bits[], cf_role_bits[], cf_clock_bits[];
typedef struct cf_errno_name {
    const char *name;
    int32_t value;
} cf_errno_name;
extern const cf_errno_name cf_errno_names[];

// errnos.c
const char *cf_errno_list(int32_t fn, char *buffer, size_t capacity, uint32_t mask_fns_of_point, uint32_t ops);
bool cf_errno_known(int32_t err);

// raw.c
int cf_raw_readlink_fd(int fd, char *out, size_t capacity);
int64_t cf_real_ns(int clock);
bool cf_special_path(const char *path);

// paths.c
bool cf_glob_component(const char *pattern, size_t plen, const char *text, size_t tlen, bool fold_case);

// fd_table.c
#include "chaos_fast_fd.h"
void cf_fd_tracking_set(bool on);
void cf_fd_set_verdict(int fd, uint64_t plan_generation, int relevant);

// sections.c
void cf_synchronize(void);
/// Read sections this thread is inside (a signal handler may interrupt one).
extern _Thread_local int cf_section_depth __attribute__((tls_model("initial-exec")));
unsigned cf_read_enter(void);
void cf_read_leave(unsigned parity);

/// A spin lock that never allocates nor sleeps in the kernel's queue: the engine's writers
/// (installs, the descriptor table's retire list) may run inside an interposed call.
static inline void cf_spin_lock(_Atomic int *l) {
    while (atomic_exchange_explicit(l, 1, memory_order_acquire)) syscall(SYS_sched_yield);
}
static inline void cf_spin_unlock(_Atomic int *l) { atomic_store_explicit(l, 0, memory_order_release); }

// intern.c
const char *cf_intern(const char *text);

// engine.c
extern _Atomic uint32_t cf_path_selectors __attribute__((visibility("hidden")));
/// Whether the active plan has a files case with `fd=` or `kind=`: then calls on descriptors
/// that are no file (pipes, ttys) are decided too.
extern _Atomic int cf_descriptor_selectors __attribute__((visibility("hidden")));
/// Whether the active plan has a send or recv case with `host=` or `port=`: then calls on
/// sockets are described with the address the case matches.
extern _Atomic int cf_stream_addresses __attribute__((visibility("hidden")));
extern const char *const cf_descriptor_kind_names[] __attribute__((visibility("hidden")));
extern const uint32_t cf_descriptor_kind_bits[] __attribute__((visibility("hidden")));
extern _Atomic(chaos_plan *) cf_active_plan __attribute__((visibility("hidden")));
int64_t cf_now_realtime(void);

// streams.c
/// A stream node's decision (pace, limit, stall) for `call` on a socket: 1 when it acts (`out`
/// filled, `*delay` grown by the wait it asks), 0 when the call passes.
int cf_stream_decide(const cf_node *node, const chaos_call *call, chaos_outcome *out, int64_t *delay);
/// Whether a node of `kind` passes a socket's close (CHAOS_FN_SOCKET_CLOSE): all but the
/// kinds that walk on to others, and linger.
bool cf_stream_close_passes(int32_t kind);
/// Whether the active plan has a linger node: then closes of sockets are decided.
extern _Atomic int cf_stream_lingers __attribute__((visibility("hidden")));

// cases.c
bool cf_case_matches(const cf_case *c, const chaos_call *call, const char *path, int special, bool *named);

// counters.c
chaos_counts *cf_counts_make(int32_t point);
void cf_counts_retain(chaos_counts *counts);
/// Lists `counts` for the fast path, which may then tally readings under their id.
void cf_counts_publish(chaos_counts *counts);

// virtual.c
void cf_vt_plan_installed(int has_virtual, int64_t wall_ns, int flow);

#endif
