// The control endpoint of a `chaos run` program (Docs/Console.md, "chaos run children"):
// served by libChaosPreload.so inside the program, or by chaos run's seccomp supervisor
// beside it. Internal to both, not part of their interfaces.
#ifndef CHAOS_CONTROL_H
#define CHAOS_CONTROL_H

#include "CChaosFaults.h"

#include <stddef.h>
#include <sys/types.h>

/// What the control endpoint needs from the interposer: the environment as the program
/// started with it, read without being intercepted.
typedef char *(*chaos_control_getenv_fn)(const char *);

/// Whether CHAOS_CONTROL asks for an endpoint.
__attribute__((visibility("hidden"))) int chaos_control_wanted(chaos_control_getenv_fn get);

/// Takes the entries of the plan the process starts with (before it is installed), so they
/// are listed and can be reverted like applied ones. `plan` stays the caller's.
__attribute__((visibility("hidden"))) void chaos_control_adopt(const chaos_plan *plan);

/// Makes every apply add how many entries it applied to `counter` (atomically; shared
/// memory): `chaos run` counts no calls for them, and its report says so.
__attribute__((visibility("hidden"))) void chaos_control_count_applied_into(uint64_t *counter);

/// Records that the start anchor of `speed anchor=start` was chosen (by the constructor).
__attribute__((visibility("hidden"))) void chaos_control_anchor_chosen(void);

/// Names the program the endpoint serves (default: this process's own name) and the kind of
/// endpoint ("preload" by default), for a supervisor that serves the endpoint of another
/// process (`kind` must live for ever). Before chaos_control_start.
__attribute__((visibility("hidden"))) void chaos_control_serve_for(const char *name, const char *kind);

/// Names the process a supervisor serves (the program chaos run started): its pid is the
/// endpoint's, and the supervisor's own is the runner's. Before chaos_control_start.
__attribute__((visibility("hidden"))) void chaos_control_serve_for_process(pid_t pid);

/// Whether a plan can be carried out: 0, or -1 with why not (one sentence) in `why`.
typedef int (*chaos_control_check_fn)(const chaos_plan *plan, char *why, size_t capacity);

/// Has every apply check its combined plan first (a delivery that cannot carry out every
/// plan refuses what it cannot, with a 422). Before chaos_control_start.
__attribute__((visibility("hidden"))) void chaos_control_check_plans(chaos_control_check_fn check);

/// Why nobody can advance this process's virtual time through the endpoint any more, or
/// NULL while someone can: the endpoint is not served (in this process: a forked child
/// does not keep its parent's), or the `chaos run` that started the program has ended.
__attribute__((visibility("hidden"))) const char *chaos_control_advancer_gone(void);

/// Writes the endpoint file and starts the thread that serves the socket. `quiet` is called
/// first on that thread: it takes the thread out of every interceptor.
__attribute__((visibility("hidden"))) void chaos_control_start(chaos_control_getenv_fn get, void (*quiet)(void));

#endif
