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

/// How long `chaos run` waits for the tree after the program ended: --wait-tree's
/// DURATION, or the bound --require-fired implies.
struct chaos_tree_wait {
    int wait;              ///< --wait-tree (or --require-fired): wait for the descendants
    int64_t bound_ns;      ///< at most this long (0: until they have all ended)
};

/// Parses --wait-tree's value ("" for none: no bound) into `wait`; 0, or -1 when it is not a duration.
int chaos_tree_wait_parse(const char *text, struct chaos_tree_wait *wait);

#endif
