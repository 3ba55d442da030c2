// `chaos run` as its program's parent: both deliveries start the program as a child, pass
// signals on to it, follow its job-control stops, report when it ends and exit as it did.
#ifndef CHAOS_PARENT_H
#define CHAOS_PARENT_H

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/types.h>

#include "CChaosFaults.h"
#include "report.h"
#include "supervise.h"

/// Blocks the signals `chaos run` passes on (and SIGCHLD) and returns a signalfd for them
/// (-1 on failure); the mask before, which the child restores, goes in `original`.
int chaos_parent_block_signals(sigset_t *original);

/// Passes a signal `chaos run` was sent on to `child`; one the terminal sent the whole
/// foreground group (the child had it too) is not sent twice. SIGCHLD is not passed on.
void chaos_parent_pass_on(const struct signalfd_siginfo *info, pid_t child);

/// The child stopped with `status` (not for a tracer): a job-control stop (a terminal's
/// Ctrl-Z) stops `chaos run` too, so the shell gets its prompt back; on `fg` both go on.
void chaos_parent_child_stopped(pid_t child, int status);

/// Becomes `argv` (execvp); when it cannot, says why on standard error and ends the process
/// as a shell would: 127 for a program not found, 126 for one that cannot run. Touches
/// nothing shared (no stdio, no allocation), so a vfork child may call it.
__attribute__((noreturn)) void chaos_parent_become(char **argv);

/// A descriptor chaos_parent_become writes one byte to when its exec fails (-1: none). The
/// parent makes it the write end of a close-on-exec pipe before it starts the child: after
/// the child has ended, a byte in the pipe says the program never started. (Not memory the
/// vfork child shares: ThreadSanitizer's vfork is a fork.)
extern int chaos_parent_exec_failure_fd;

/// After the program ended: waits for the rest of its tree as `options` ask (reaping what
/// ends, passing on nothing), until no process is left, the bound, a SIGINT or SIGTERM, or
/// `all_fired(context)` says every entry has acted (NULL: never). Then says in `run` which
/// processes still run. `except` is a process of chaos run's own, not the program's.
void chaos_parent_wait_tree(int signals, const struct chaos_report_options *options, int (*all_fired)(void *),
                            void *context, pid_t except, struct chaos_report_run *run);

/// Reports `entries` (see report.h) and returns what `chaos run` exits with: 125 when an
/// entry never acted under --require-fired, else the program's status (a signal that
/// ended the program is raised again here, so the caller sees the same end). A program
/// that never started gets no report: its 127 or 126 is the news.
int chaos_parent_finish(const struct chaos_report_run *run, struct chaos_report_entry *entries, int count,
                        const struct chaos_report_options *options);

/// The preload delivery as a parent: runs `argv` (whose environment already carries the
/// preload library and `plan_text`) as a child, with every preloaded process of its tree
/// counting into one shared file, and reports from it when the program ends.
int chaos_run_preloaded(const char *plan_text, char **argv, const struct chaos_report_options *options);

#endif
