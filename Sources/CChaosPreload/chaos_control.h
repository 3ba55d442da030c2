// The control endpoint of libChaosPreload.so (Docs/Console.md, "chaos run children"):
// internal to the library, not part of its interface.
#ifndef CHAOS_CONTROL_H
#define CHAOS_CONTROL_H

#include "CChaosFaults.h"

#include <stddef.h>

/// What the control endpoint needs from the interposer: the environment as the program
/// started with it, read without being intercepted.
typedef char *(*chaos_control_getenv_fn)(const char *);

/// Whether CHAOS_CONTROL asks for an endpoint.
__attribute__((visibility("hidden"))) int chaos_control_wanted(chaos_control_getenv_fn get);

/// Takes the entries of the plan the process starts with (before it is installed), so they
/// are listed and can be reverted like applied ones. `plan` stays the caller's.
__attribute__((visibility("hidden"))) void chaos_control_adopt(const chaos_plan *plan);

/// Records that the start anchor of `speed anchor=start` was chosen (by the constructor).
__attribute__((visibility("hidden"))) void chaos_control_anchor_chosen(void);

/// Writes the endpoint file and starts the thread that serves the socket. `quiet` is called
/// first on that thread: it takes the thread out of every interceptor.
__attribute__((visibility("hidden"))) void chaos_control_start(chaos_control_getenv_fn get, void (*quiet)(void));

#endif
