#ifndef CHAOSKIT_CRAWFFIFLOOR_H
#define CHAOSKIT_CRAWFFIFLOOR_H

/// Benchmark floor: a libffi closure of `int32_t (int32_t, int32_t)` whose C handler just
/// forwards to `original` with `ffi_call`. Returns an opaque handle (free it with
/// `chaos_bench_free_raw_forwarding_closure`) and the callable code in `code_out`.
void *chaos_bench_make_raw_forwarding_closure(void *original, void **code_out);
void chaos_bench_free_raw_forwarding_closure(void *handle);

#include <stdint.h>

/// The real CLOCK_MONOTONIC in ns, read with the system call: no hook and no virtual time
/// changes it, so benchmarks that move the process's clocks still time themselves truly.
uint64_t chaos_bench_real_monotonic_ns(void);

#endif
