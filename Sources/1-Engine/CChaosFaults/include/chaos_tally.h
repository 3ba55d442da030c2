// Counting a process tree into one place (part of CChaosFaults.h): `chaos run` reports
// what fired across every process of its program's tree from a file they all map.
#ifndef CCHAOS_TALLY_H
#define CCHAOS_TALLY_H

#include <stddef.h>
#include <stdint.h>

typedef struct chaos_plan chaos_plan; // CChaosFaults.h

#ifdef __cplusplus
extern "C" {
#endif

/// The most entries that can count into mirrors (chaos_plan_mirror_counts).
#define CHAOS_PLAN_MAX_MIRRORS 256

/// Makes entry `entry` of `plan`, which was never installed, also count into `pair`:
/// `pair[0]` acted, `pair[1]` passed (8-byte aligned), added atomically as decisions count. The pair may be
/// memory other processes share (a MAP_SHARED file), so that a process tree counts into
/// one place: `chaos run` reports from it when its program ends. The entry's counts keep
/// the mirror when a later plan takes them over (chaos_plan_count_into). Readings the
/// clock's fast path answers reach the mirror at `chaos_fault_mirror_flush`. 0, or -1
/// when there is no such entry, the plan was installed, or more than
/// CHAOS_PLAN_MAX_MIRRORS entries ask.
int chaos_plan_mirror_counts(chaos_plan *plan, int32_t entry, uint64_t *pair);

/// Adds to the mirrors the readings this process's fast clock path answered since the
/// last flush (a forked child: since it was forked). Call it when the process ends.
void chaos_fault_mirror_flush(void);

/// How many counters entry `entry` of `plan` can share with a process tree: its call index,
/// then one per node (the counts behind times, sequential steps and probability draws).
int32_t chaos_plan_shared_counter_count(const chaos_plan *plan, int32_t entry);

/// Makes entry `entry` of `plan`, which was never installed, decide from `counters`
/// (chaos_plan_shared_counter_count of them, 8-byte aligned, usually memory a process tree
/// maps), so that "the 3rd write" means the 3rd of the tree, whichever process makes it.
/// Calls made at once reach them in whatever order they come. 0, or -1 when there is no
/// such entry or the plan was installed.
int chaos_plan_share_counters(chaos_plan *plan, int32_t entry, uint64_t *counters);

/// What an entry's last act was, for the report (`chaos explore` names the call it placed a
/// fault at): the function, and what it was aimed at (a path, a host name, a variable;
/// empty for the rest). Written and read under `busy`: an act that finds it taken leaves
/// the note to the act holding it.
typedef struct chaos_last_act {
    int32_t fn;       ///< CHAOS_FN_* + 1; 0: no act yet. Under `busy`
    int32_t busy;     ///< 1 while an act writes the note or a reader copies it (atomic)
    char target[120]; ///< NUL-terminated, cut to fit. Under `busy`
} chaos_last_act;

/// Copies the note `slot` holds: its function (CHAOS_FN_* + 1, 0 when none, or when it
/// stayed busy) and its target (`capacity` bytes at most, NUL-terminated).
void chaos_last_act_read(chaos_last_act *slot, int32_t *fn, char *target, size_t capacity);

/// Makes entry `entry` of `plan`, which was never installed, also write its last act into
/// `slot` (memory other processes may share, as for chaos_plan_mirror_counts). 0, or -1
/// when there is no such entry or the plan was installed.
int chaos_plan_mirror_last_act(chaos_plan *plan, int32_t entry, chaos_last_act *slot);

/// What a process of the tree did at an edge chaos does not cross quietly: the report names
/// each one, with the process and the program.
typedef enum chaos_tree_event_kind {
    CHAOS_TREE_EXEC_REFUSED = 1,        ///< an exec of a program chaos cannot reach was refused
    CHAOS_TREE_EXEC_UNREACHED = 2,      ///< such an exec ran without chaos (--allow-unreached)
    CHAOS_TREE_IO_URING_REFUSED = 3,    ///< io_uring_setup failed with ENOSYS (the default)
    CHAOS_TREE_IO_URING_ALLOWED = 4,    ///< io_uring_setup went through (--io-uring allow)
    CHAOS_TREE_SETUID_UNPRIVILEGED = 5, ///< a set-user-ID program ran without its privileges (no_new_privs)
    CHAOS_TREE_DEADLINE_REAL = 6,       ///< a futex wait or kernel timer kept real time under the seccomp delivery
    CHAOS_TREE_VDSO_HIDDEN = 7,         ///< its vDSO could not be patched: hidden, clock readings trapped (slow)
    CHAOS_TREE_VDSO_UNPATCHED = 8,      ///< its vDSO could not be patched while no clock entry was active
} chaos_tree_event_kind;

/// One such event: which process, and the program it ran or tried to run.
typedef struct chaos_tree_event {
    int32_t kind; ///< chaos_tree_event_kind, stored last (atomically): 0 while the slot is written
    int32_t pid;
    char program[120];
} chaos_tree_event;

/// How many events the tally keeps; later ones are counted (event_count) but not kept.
#define CHAOS_TALLY_EVENTS 16

/// The file `chaos run` shares with every preloaded process of its program's tree (named
/// by CHAOS_RUN_TALLY): this header, then one (acted, passed) pair of uint64_t per plan
/// entry, which each process's entries mirror their counts into, then each entry's shared
/// counters (chaos_plan_shared_counter_count), entry after entry, then one chaos_last_act
/// per entry (chaos_tally_last_acts finds them).
typedef struct chaos_tally_header {
    char magic[16];   ///< CHAOS_TALLY_MAGIC, NUL-padded
    uint64_t entries; ///< how many pairs follow
    /// Entries the processes' control endpoints applied while the program ran (`chaos ctl
    /// apply`), added atomically: they have no pair, so the report can only say so.
    uint64_t applied_later;
    /// Events so far, added atomically; the first CHAOS_TALLY_EVENTS are in `events`.
    uint64_t event_count;
    /// Processes that decided from the shared counters (each counts itself in, forks too).
    uint64_t processes;
    chaos_tree_event events[CHAOS_TALLY_EVENTS];
} chaos_tally_header;
#define CHAOS_TALLY_MAGIC "chaos-tally 4"

/// The size of the tally of `plan`: the header, the pairs, the shared counters and the
/// last acts.
size_t chaos_tally_size(const chaos_plan *plan);

/// Where the last acts of the tally `header` of `plan` start.
chaos_last_act *chaos_tally_last_acts(chaos_tally_header *header, const chaos_plan *plan);

/// Records an event in `events` (capacity CHAOS_TALLY_EVENTS) counted by `count`: safe
/// from any process that maps them, and from a vfork child (no allocation, no lock).
void chaos_tree_event_record(uint64_t *count, chaos_tree_event *events, chaos_tree_event_kind kind, int32_t pid,
                             const char *program);

#ifdef __cplusplus
}
#endif

#endif
