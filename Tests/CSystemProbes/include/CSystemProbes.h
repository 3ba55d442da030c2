// Probes of the system-fault conformance suite (Tests/SystemConformanceTests): each one
// makes a scenario's C library calls and describes what they returned in one line of
// text, such as "write=-1/ENOSPC pwrite=-1/ENOSPC sibling=3". The same source runs in the
// test process (the in-process delivery rebinds its GOT slots) and, compiled by `cc` with
// program/main.c, as a program under `chaos run` (the preload delivery), so both
// deliveries are asked the same questions and must give the same answers.
#ifndef CSYSTEMPROBES_H
#define CSYSTEMPROBES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Runs the probe `name` with `argc` arguments and writes its one-line result (no newline,
/// NUL-terminated, cut to fit) into `out`. Returns 0, or -1 when the probe is unknown or
/// its arguments are wrong (`out` then says why).
int chaos_probe_run(const char *name, int argc, const char *const *argv, char *out, size_t capacity);

/// Loads libsqlite3.so.0 and looks up the functions the sqlite probes call; 1 when it is
/// there. The in-process delivery rebinds only images loaded when an entry is applied, so
/// the test calls this before applying.
int chaos_probe_sqlite_load(void);

/// The real time in nanoseconds since 1970, read with a direct system call: what neither
/// delivery fakes, for tests that run while the in-process clock scenario may be applied.
int64_t chaos_probe_real_ns(void);

#ifdef __cplusplus
}
#endif

#endif
