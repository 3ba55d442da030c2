// What a delivery reads of a plan before it installs it (part of CChaosFaults.h, which
// includes this): its entries, their points and labels, what they can act on, its seed.
#ifndef CCHAOS_PLAN_ENTRIES_H
#define CCHAOS_PLAN_ENTRIES_H

#include <stdint.h>

typedef struct chaos_plan chaos_plan; // CChaosFaults.h

#ifdef __cplusplus
extern "C" {
#endif

/// Number of entries of a plan, and the point of one.
int32_t chaos_plan_entry_count(const chaos_plan *plan);
int32_t chaos_plan_entry_point(const chaos_plan *plan, int32_t entry);

/// The `label=` of entry `entry` of `plan`; NULL when it has none or there is no such entry.
const char *chaos_plan_entry_label(const chaos_plan *plan, int32_t entry);

/// Whether some node of entry `entry` of `plan` is of kind `kind` (CHAOS_NODE_*): what a
/// delivery that cannot carry out every kind checks before it starts.
int chaos_plan_entry_has_kind(const chaos_plan *plan, int32_t entry, int32_t kind);

/// The file operations (CHAOS_OP_*) a files entry can act on: those its root composite's
/// cases select, or every one when the root selects none; 0 for other points.
uint32_t chaos_plan_entry_ops(const chaos_plan *plan, int32_t entry);

/// The seed of `plan` (its `seed` line; 0 for NULL): what replays its draws.
uint64_t chaos_plan_seed(const chaos_plan *plan);

/// What clock entry `entry` of `plan` asks of a delivery beyond readings, as the
/// CHAOS_CLOCK_FLAG_* bits it would add once installed: MONOTONIC when it fakes monotonic
/// clocks (monotonic=yes, or a virtual node), SLEEP when its sleeps follow it (sleep=yes,
/// the default, or a virtual node; see chaos_outcome_sleep), VIRTUAL when it has a virtual node, STAT when
/// it shifts file times (stat=yes); 0 for other points. A delivery that fixes what it
/// traps before the program starts (the seccomp filter) asks this of a plan it has not
/// installed.
uint32_t chaos_plan_entry_clock_flags(const chaos_plan *plan, int32_t entry);

#ifdef __cplusplus
}
#endif

#endif
