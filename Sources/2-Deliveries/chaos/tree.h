// The program's process tree, as `chaos run` (its subreaper) sees it: which of its
// processes still run, and waiting for them before the report.
#ifndef CHAOS_TREE_H
#define CHAOS_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Makes `chaos run` the subreaper of everything its program starts: a daemon that double
/// forks stays in the tree, so its end is seen and it can be waited for.
void chaos_tree_adopt_orphans(void);

/// Whether this process has children left (reaped or not): one system call.
int chaos_tree_has_children(void);

/// Lists the descendants of this process that still run, but `except`, as
/// "4102 mydaemon, 4103 sh" in `out`; returns how many there are.
int chaos_tree_running(pid_t except, char *out, size_t capacity);

/// Sends `signal_number` (not 0) to every descendant of this process still running (ended
/// ones, zombies included, are left alone); 1 when there was one, 0 when none is left.
int chaos_tree_kill(int signal_number);

/// How long `chaos run` waits for the tree after the program ended: --wait-tree's
/// DURATION, or the bound --require-fired implies.
struct chaos_tree_wait {
    int wait;         ///< --wait-tree (or --require-fired): wait for the descendants
    int64_t bound_ns; ///< at most this long (0: until they have all ended)
};

struct chaos_report_options;
struct chaos_report_run;

/// One look of the wait for the tree after the program ended, the same for both
/// deliveries: returns -2 when the wait is over (no --wait-tree, interrupted, no
/// descendants left, every entry `fired` under --require-fired, or the bound reached,
/// which sets `run->waited_out`), else how many ms until the next look (-1: until a
/// descendant ends or a signal comes). `deadline` (0 at first) keeps the bound.
int chaos_tree_wait_look(const struct chaos_report_options *options, int64_t *deadline, int interrupted, int fired,
                         struct chaos_report_run *run);

/// Notes in `run` the descendants still running (but `except`) when the report is made.
void chaos_tree_note_running(struct chaos_report_run *run, pid_t except);

/// Parses --wait-tree's value ("" for none: no bound) into `wait`; 0, or -1 when it is not a duration.
int chaos_tree_wait_parse(const char *text, struct chaos_tree_wait *wait);

#endif
