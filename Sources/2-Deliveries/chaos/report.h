// The report `chaos run` gives when its program ends: every entry with the calls it saw
// and acted on, and the entries that never acted, flagged.
#ifndef CHAOS_REPORT_H
#define CHAOS_REPORT_H

#include <stdint.h>

#include "CChaosFaults.h"
#include "supervise.h"

/// One entry of the report.
struct chaos_report_entry {
    int32_t point;     ///< chaos_point
    const char *label; ///< the entry's label (NULL: none)
    uint64_t seen, acted;
    int number;            ///< set by chaos_report_write: the entry's number in the profile
    int32_t last_fn;       ///< CHAOS_FN_* of the last act + 1 (0: none noted)
    char last_target[120]; ///< what it was aimed at
};

/// How the run went.
struct chaos_report_run {
    const char *program;  ///< argv[0]
    const char *delivery; ///< "seccomp" or "preload"
    uint64_t seed;
    int status;                     ///< waitpid's status of the program
    int never_started;              ///< 1: the program could not be started (exec failed): nothing to report
    uint64_t applied_later;         ///< entries `chaos ctl` applied while it ran, which it did not count
    const chaos_tree_event *events; ///< the tree's edges crossed (execs refused or unreached, io_uring)
    uint64_t event_count;           ///< how many there were (the first CHAOS_TALLY_EVENTS are in `events`)
    int still_running;              ///< processes of the tree still running when it reported
    const char *running;            ///< them, as "4102 mydaemon, 4103 sh"
    int waited_out;                 ///< 1: it stopped waiting for them at --wait-tree's bound
    uint64_t processes;             ///< processes that decided from counters the tree shares (0: unknown)
    int places_calls;               ///< some entry places its fault by count (times, sequential, probability)
    const char *power_loss;         ///< where power was lost and what was rolled back (NULL: it was not)
    uint64_t vdso_readings;         ///< clock readings answered inside the programs (patched vDSOs)
    int vdso_processes;             ///< processes whose vDSO was patched
};

/// Writes the report (standard error unless quiet; JSON to `options->path` when given),
/// with the entries in profile order (it sorts `entries`).
/// Returns how many entries never acted. A report file that cannot be written is said on
/// standard error and counts as -1.
int chaos_report_write(const struct chaos_report_run *run, struct chaos_report_entry *entries, int count,
                       const struct chaos_report_options *options);

#endif
