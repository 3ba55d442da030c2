#ifndef CHAOS_PRELOAD_H
#define CHAOS_PRELOAD_H

/// The preload library `chaos run` injects with LD_PRELOAD. It reads its whole
/// configuration from CHAOS_PRELOAD_* environment variables once, at load, and then
/// interposes clock_gettime/gettimeofday/time, getenv, connect/getaddrinfo and
/// open/write/fsync for the program it is loaded into. See chaos_preload.c for the format.

/// How many calls the library has answered with chaos since load (for tests and the tool).
unsigned long chaos_preload_chaotic_calls(void);

#endif
