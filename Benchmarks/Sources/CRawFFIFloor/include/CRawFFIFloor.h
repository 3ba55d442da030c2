#ifndef CHAOSKIT_CRAWFFIFLOOR_H
#define CHAOSKIT_CRAWFFIFLOOR_H

/// Benchmark floor: a libffi closure of `int32_t (int32_t, int32_t)` whose C handler just
/// forwards to `original` with `ffi_call`. Returns an opaque handle (free it with
/// `chaos_bench_free_raw_forwarding_closure`) and the callable code in `code_out`.
void *chaos_bench_make_raw_forwarding_closure(void *original, void **code_out);
void chaos_bench_free_raw_forwarding_closure(void *handle);

#endif
